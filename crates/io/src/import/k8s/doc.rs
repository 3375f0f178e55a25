//! An [`Import`] as a [`Document`]: what the Node objects say, and comments where they
//! say nothing (wiring inside a node, models outside the catalog, missing topology).

use super::fabric::{Fabric, Switch};
use super::{Class, DeclaredModel, Import};
use crate::import::doc::{
    self, Cpu, Document, GpuModel, Gpus, Item, Layout, Memory, NodeClass, NodeDomain, Nodes, Pool,
    Taint,
};

/// The whole document.
pub(crate) fn document(imp: &Import, header: &str) -> Document {
    let mut d = Document::default();
    d.comments(header);
    d.comment("");
    d.comments(
        "A Node object does not say how GPUs, NICs and CPUs are wired: NUMA nodes, PCIe
switches, compute NICs and NVLink inside a node are left out. `gpuplan import
nvidia-smi-topo` (or `gpuplan discover` on one node of each class) fills them in.
These nodes are Kubernetes': unless another file says so, declare
`cluster \"NAME\" { scheduler \"kubernetes\" }` (or kueue, volcano).",
    );
    if !imp.without_gpus.is_empty() {
        d.comment(format!(
            "{} node(s) without NVIDIA GPUs are CPU-only classes: {}",
            imp.without_gpus.len(),
            crate::units::compress_names(&imp.without_gpus).join(", ")
        ));
    }
    d.blank();
    for m in &imp.models {
        d.push(Item::GpuModel(model(m)));
        d.blank();
    }
    for c in &imp.classes {
        d.push(Item::NodeClass(class(c)));
        d.blank();
    }
    ranges(imp, &mut d);
    pools(imp, &mut d);
    fabric(&imp.fabric, &mut d);
    mig(imp, &mut d);
    d
}

/// The KDL text ([`doc::kdl::write`]).
pub fn render(imp: &Import, header: &str) -> String {
    doc::kdl::write(&document(imp, header))
}

/// The placeholder comment of a model whose memory is unknown.
const MEMORY_UNKNOWN: &str = "memory unknown: set memory=\"...\" (or base=\"...\")";

/// A declared `gpu-model`: with its memory from `nvidia.com/gpu.memory`, or without it
/// and a comment saying what to fill in (`validate` refuses it until then: GP006).
fn model(m: &DeclaredModel) -> GpuModel {
    let lines = |t: &str| t.lines().map(String::from).collect::<Vec<_>>();
    match m.memory_mib {
        Some(mib) => GpuModel {
            notes: lines(
                "Not in the catalog: memory from nvidia.com/gpu.memory; add nvlink-gen, price-per-hour.",
            ),
            name: m.name.clone(),
            memory: Some(format!("{mib}MiB")),
            product_name: Some(m.product.clone()),
            ..GpuModel::default()
        },
        None if m.product.is_empty() => GpuModel {
            notes: lines(
                "GPUs of nodes without a nvidia.com/gpu.product label (GPU Feature Discovery not\ndeployed): the model is unknown. `gpuplan validate` refuses it (GP006) until its memory\nis filled in, or import again with `--model unknown-gpu=ID`.",
            ),
            name: m.name.clone(),
            comment: Some(MEMORY_UNKNOWN.into()),
            ..GpuModel::default()
        },
        None => GpuModel {
            notes: lines(
                "Not in the catalog, and no nvidia.com/gpu.memory label: `gpuplan validate` refuses\nthis model (GP006) until its memory is filled in.",
            ),
            name: m.name.clone(),
            product_name: Some(m.product.clone()),
            comment: Some(MEMORY_UNKNOWN.into()),
            ..GpuModel::default()
        },
    }
}

fn class(c: &Class) -> NodeClass {
    let hw = &c.hardware;
    let products: Vec<&str> = c.products.iter().map(String::as_str).collect();
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
    NodeClass {
        name: c.name.clone(),
        notes: vec![format!("{} node(s): {what}", c.nodes)],
        cpu: hw.cpus.map(|cpus| Cpu {
            sockets: 1,
            cores_per_socket: u64::from(cpus),
            threads_per_core: Some(1),
            comment: Some(format!(
                "{cpus} CPUs (status.capacity.cpu); sockets and SMT are not in a Node object"
            )),
        }),
        memory: hw.memory_gib.map(|gib| Memory {
            size: format!("{gib}GiB"),
            comment: Some("status.capacity.memory".into()),
        }),
        gpus: (hw.gpus > 0)
            .then(|| Gpus {
                count: u64::from(hw.gpus),
                model: hw.model.clone(),
                driver: hw.driver.clone(),
                bus_ids: None,
            })
            .into_iter()
            .collect(),
        ..NodeClass::default()
    }
}

fn ranges(imp: &Import, d: &mut Document) {
    for r in &imp.ranges {
        d.push(Item::Nodes(Nodes {
            pattern: r.pattern.clone(),
            class: r.class.clone(),
            labels: r.labels.clone(),
            taints: r
                .taints
                .iter()
                .map(|t| Taint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                })
                .collect(),
            down: Vec::new(),
        }));
    }
    if !imp.ranges.is_empty() {
        d.blank();
    }
}

fn pools(imp: &Import, d: &mut Document) {
    if imp.pools.is_empty() {
        return;
    }
    d.comment("Node pools as the cluster has them (mode: how their GPUs are used now).");
    for p in &imp.pools {
        d.push(Item::Pool(Pool {
            name: p.name.clone(),
            mode: p.mode.to_string(),
            nodes: p.nodes.clone(),
            comment: Some(p.label.clone()),
        }));
    }
    d.blank();
}

fn fabric(f: &Fabric, d: &mut Document) {
    if f.nvlink.is_empty() && f.switches.is_empty() {
        d.comment("No topology labels: the fabric is left out (`--tier leaf=KEY` names one).");
        d.blank();
        return;
    }
    let mut notes = Vec::new();
    if !f.tiers.is_empty() {
        let keys: Vec<String> = f.tiers.iter().map(|(t, k)| format!("{t}={k}")).collect();
        let from = f
            .family
            .map(|fam| format!(" ({fam} labels)"))
            .unwrap_or_default();
        notes.push(format!(
            "Switch tiers{from}: {}; link speeds are not in a Node object.",
            keys.join(", ")
        ));
    }
    if !f.outside.is_empty() {
        notes.push(format!(
            "Without a leaf label, under a leaf of their own: {}",
            crate::units::compress_names(&f.outside).join(", ")
        ));
    }
    d.push(Item::Fabric(doc::Fabric {
        notes: Vec::new(),
        nvlink: f
            .nvlink
            .iter()
            .map(|n| NodeDomain {
                name: n.name.clone(),
                nodes: n.nodes.clone(),
                comment: Some(n.label.clone()),
            })
            .collect(),
        switch_notes: notes,
        switches: f.switches.iter().map(switch).collect(),
    }));
    d.blank();
}

fn switch(sw: &Switch) -> doc::Switch {
    doc::Switch {
        tier: sw.tier.to_string(),
        name: sw.name.clone(),
        nodes: sw.nodes.clone(),
        comment: Some(sw.label.clone()),
        children: sw.children.iter().map(switch).collect(),
    }
}

fn mig(imp: &Import, d: &mut Document) {
    if imp.mig.is_empty() {
        return;
    }
    d.comment("MIG layouts the GPUs have now (nvidia.com/mig.config and the MIG device counts):");
    d.push(Item::Mig(
        imp.mig
            .iter()
            .map(|m| Layout {
                profiles: m.layout.clone(),
                nodes: m.nodes.clone(),
                gpus: None,
                comment: m.config.clone(),
            })
            .collect(),
    ));
}
