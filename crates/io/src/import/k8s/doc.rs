//! Renders an [`Import`] as gpuplan KDL.

use super::fabric::{Fabric, Switch};
use super::{Class, DeclaredModel, Import};
use crate::fmt::{comment, quote};
use std::fmt::Write;

/// The whole KDL document.
pub fn render(imp: &Import, header: &str) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "// {}", comment(line));
    }
    s.push_str("//\n");
    s.push_str(
        "// A Node object does not say how GPUs, NICs and CPUs are wired: NUMA nodes, PCIe\n",
    );
    s.push_str(
        "// switches, compute NICs and NVLink inside a node are left out. `gpuplan import\n",
    );
    s.push_str(
        "// nvidia-smi-topo` (or `gpuplan discover` on one node of each class) fills them in.\n",
    );
    s.push_str("// These nodes are Kubernetes': unless another file says so, declare\n");
    s.push_str("// `cluster \"NAME\" { scheduler \"kubernetes\" }` (or kueue, volcano).\n");
    if !imp.without_gpus.is_empty() {
        let _ = writeln!(
            s,
            "// {} node(s) without NVIDIA GPUs are CPU-only classes: {}",
            imp.without_gpus.len(),
            comment(&crate::units::compress_names(&imp.without_gpus).join(", "))
        );
    }
    s.push('\n');
    for m in &imp.models {
        model(m, &mut s);
    }
    for c in &imp.classes {
        class(c, &mut s);
    }
    ranges(imp, &mut s);
    pools(imp, &mut s);
    fabric(&imp.fabric, &mut s);
    mig(imp, &mut s);
    s
}

/// A declared `gpu-model`: with its memory from `nvidia.com/gpu.memory`, or without it
/// and a comment saying what to fill in (`validate` refuses it until then: GP006).
fn model(m: &DeclaredModel, s: &mut String) {
    match m.memory_mib {
        Some(mib) => {
            let _ = writeln!(
                s,
                "// Not in the catalog: memory from nvidia.com/gpu.memory; add nvlink-gen, price-per-hour.\ngpu-model {} memory={} product-name={}\n",
                quote(&m.name),
                quote(&format!("{mib}MiB")),
                quote(&m.product)
            );
        }
        None if m.product.is_empty() => {
            let _ = writeln!(
                s,
                "// GPUs of nodes without a nvidia.com/gpu.product label (GPU Feature Discovery not\n// deployed): the model is unknown. `gpuplan validate` refuses it (GP006) until its memory\n// is filled in, or import again with `--model unknown-gpu=ID`.\ngpu-model {}   // memory unknown: set memory=\"...\" (or base=\"...\")\n",
                quote(&m.name)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "// Not in the catalog, and no nvidia.com/gpu.memory label: `gpuplan validate` refuses\n// this model (GP006) until its memory is filled in.\ngpu-model {} product-name={}   // memory unknown: set memory=\"...\" (or base=\"...\")\n",
                quote(&m.name),
                quote(&m.product)
            );
        }
    }
}

fn class(c: &Class, s: &mut String) {
    let hw = &c.hardware;
    let products: Vec<&str> = c.products.iter().map(String::as_str).collect();
    let _ = writeln!(s, "node-class {} {{", quote(&c.name));
    let family = c
        .family
        .as_deref()
        .map(|f| format!(" ({f})"))
        .unwrap_or_default();
    let cuda = c
        .cuda
        .as_deref()
        .map(|v| format!(", CUDA {v}"))
        .unwrap_or_default();
    let what = if hw.gpus == 0 {
        "no NVIDIA GPUs".to_string()
    } else if products.is_empty() {
        "no nvidia.com/gpu.product label, GPU model unknown".to_string()
    } else {
        format!("{}{family}{cuda}", products.join(", "))
    };
    let _ = writeln!(s, "    // {} node(s): {}", c.nodes, comment(&what));
    if let Some(cpus) = hw.cpus {
        let _ = writeln!(
            s,
            "    cpu sockets=1 cores-per-socket={cpus} threads-per-core=1   // {cpus} CPUs (status.capacity.cpu); sockets and SMT are not in a Node object"
        );
    }
    if let Some(gib) = hw.memory_gib {
        let _ = writeln!(
            s,
            "    memory {}   // status.capacity.memory",
            quote(&format!("{gib}GiB"))
        );
    }
    let driver = hw
        .driver
        .as_deref()
        .map(|d| format!(" driver={}", quote(d)))
        .unwrap_or_default();
    if hw.gpus > 0 {
        let _ = writeln!(s, "    gpus {} model={}{driver}", hw.gpus, quote(&hw.model));
    }
    s.push_str("}\n\n");
}

fn ranges(imp: &Import, s: &mut String) {
    for r in &imp.ranges {
        let _ = write!(s, "nodes {} class={}", quote(&r.pattern), quote(&r.class));
        if r.taints.is_empty() && r.labels.is_empty() {
            s.push('\n');
            continue;
        }
        s.push_str(" {\n");
        for (k, v) in &r.labels {
            let _ = writeln!(s, "    label {} {}", quote(k), quote(v));
        }
        for t in &r.taints {
            let value = t
                .value
                .as_deref()
                .map(|v| format!(" {}", quote(v)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "    taint {}{value} effect={}",
                quote(&t.key),
                quote(&t.effect)
            );
        }
        s.push_str("}\n");
    }
    if !imp.ranges.is_empty() {
        s.push('\n');
    }
}

fn pools(imp: &Import, s: &mut String) {
    if imp.pools.is_empty() {
        return;
    }
    s.push_str("// Node pools as the cluster has them (mode: how their GPUs are used now).\n");
    for p in &imp.pools {
        let _ = writeln!(
            s,
            "pool {} mode={} nodes={}   // {}",
            quote(&p.name),
            quote(p.mode),
            quote(&p.nodes),
            comment(&p.label)
        );
    }
    s.push('\n');
}

fn fabric(f: &Fabric, s: &mut String) {
    if f.nvlink.is_empty() && f.switches.is_empty() {
        s.push_str(
            "// No topology labels: the fabric is left out (`--tier leaf=KEY` names one).\n\n",
        );
        return;
    }
    s.push_str("fabric {\n");
    for d in &f.nvlink {
        let _ = writeln!(
            s,
            "    nvlink-domain {} nodes={}   // {}",
            quote(&d.name),
            quote(&d.nodes),
            comment(&d.label)
        );
    }
    if !f.tiers.is_empty() {
        let keys: Vec<String> = f.tiers.iter().map(|(t, k)| format!("{t}={k}")).collect();
        let from = f
            .family
            .map(|fam| format!(" ({fam} labels)"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "    // Switch tiers{}: {}; link speeds are not in a Node object.",
            comment(&from),
            comment(&keys.join(", "))
        );
    }
    if !f.outside.is_empty() {
        let _ = writeln!(
            s,
            "    // Without a leaf label, under a leaf of their own: {}",
            comment(&crate::units::compress_names(&f.outside).join(", "))
        );
    }
    for sw in &f.switches {
        switch(sw, 1, s);
    }
    s.push_str("}\n\n");
}

fn switch(sw: &Switch, depth: usize, s: &mut String) {
    let pad = "    ".repeat(depth);
    let _ = write!(s, "{pad}{} {}", sw.tier, quote(&sw.name));
    if let Some(n) = &sw.nodes {
        let _ = write!(s, " nodes={}", quote(n));
    }
    if sw.children.is_empty() {
        let _ = writeln!(s, "   // {}", comment(&sw.label));
        return;
    }
    let _ = writeln!(s, " {{   // {}", comment(&sw.label));
    for c in &sw.children {
        switch(c, depth + 1, s);
    }
    let _ = writeln!(s, "{pad}}}");
}

fn mig(imp: &Import, s: &mut String) {
    if imp.mig.is_empty() {
        return;
    }
    s.push_str(
        "// MIG layouts the GPUs have now (nvidia.com/mig.config and the MIG device counts):\n",
    );
    s.push_str("mig {\n");
    for m in &imp.mig {
        let args: Vec<String> = m.layout.iter().map(|a| quote(a)).collect();
        let config = m
            .config
            .as_deref()
            .map(|c| format!("   // {}", comment(c)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "    layout {} nodes={} current=#true{config}",
            args.join(" "),
            quote(&m.nodes)
        );
    }
    s.push_str("}\n");
}
