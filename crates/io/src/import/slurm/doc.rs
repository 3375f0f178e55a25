//! The KDL document written for an import.

use super::describe::{Described, Hardware};
use super::models::Declared;
use super::partitions::Pools;
use super::topology::Fabric;
use crate::catalog;
use crate::fmt::quote;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The KDL document.
pub(super) fn render(
    header: &str,
    cluster: Option<&str>,
    declared: &[Declared],
    nodes: &[Described],
    pools: &Pools,
    f: &Fabric,
) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "// {}", crate::fmt::comment(line));
    }
    s.push_str("//\n// slurm.conf does not say how GPUs, NICs and CPUs are wired: PCIe switches, compute\n");
    s.push_str(
        "// NICs and NVLink inside a node are left out. `gpuplan import nvidia-smi-topo` (or\n",
    );
    s.push_str("// `gpuplan discover` on one node of each class) fills them in.\n\n");
    let _ = writeln!(
        s,
        "cluster {} {{\n    scheduler \"slurm\"\n}}\n",
        quote(cluster.unwrap_or("slurm-cluster"))
    );
    declarations(&mut s, declared);
    classes(&mut s, nodes);
    pools_section(&mut s, nodes, pools);
    render_fabric(&mut s, f);
    mig_section(&mut s, nodes);
    s
}

fn memory(mib: u64) -> String {
    if mib % (1024 * 1024) == 0 {
        format!("{}TiB", mib / (1024 * 1024))
    } else if mib % 1024 == 0 {
        format!("{}GiB", mib / 1024)
    } else {
        format!("{mib}MiB")
    }
}

fn render_fabric(s: &mut String, f: &Fabric) {
    s.push_str("fabric {\n");
    if f.no_topology {
        s.push_str(
            "    // No topology.conf: one leaf holds every node. Describe the real switches.\n",
        );
    }
    for (name, members) in &f.nvlink {
        let _ = writeln!(
            s,
            "    nvlink-domain {} nodes={}  // topology.conf block",
            quote(name),
            quote(&crate::import::names::one_pattern(members))
        );
    }
    let is_child: BTreeSet<&String> = f.switches.values().flat_map(|(_, c, _)| c).collect();
    let roots: Vec<&String> = f
        .switches
        .keys()
        .filter(|k| !is_child.contains(k))
        .collect();
    for r in roots {
        switch(s, f, r, 1);
    }
    if !f.orphans.is_empty() {
        let name = if f.no_topology {
            "all-nodes"
        } else {
            "unlisted"
        };
        let _ = writeln!(
            s,
            "    leaf {} nodes={}",
            quote(name),
            quote(&crate::import::names::one_pattern(&f.orphans))
        );
    }
    s.push_str("}\n");
}

fn switch(s: &mut String, f: &Fabric, name: &str, depth: usize) {
    let Some((tier, children, members)) = f.switches.get(name) else {
        return;
    };
    let pad = "    ".repeat(depth);
    match tier {
        0 => {
            if !members.is_empty() {
                let _ = writeln!(
                    s,
                    "{pad}leaf {} nodes={}",
                    quote(name),
                    quote(&crate::import::names::one_pattern(members))
                );
            }
        }
        t => {
            let word = if *t == 1 { "spine" } else { "core" };
            // A spine (or core) with nothing under it is left out.
            if children.iter().all(|c| !f.switches.contains_key(c)) {
                return;
            }
            let _ = writeln!(s, "{pad}{word} {} {{", quote(name));
            for c in children {
                switch(s, f, c, depth + 1);
            }
            let _ = writeln!(s, "{pad}}}");
        }
    }
}

/// `gpu-model` declarations for GRES types outside the catalog: memory when the type
/// names it, else a placeholder comment (`validate` refuses the model, GP006, until
/// memory= or base= is set).
fn declarations(s: &mut String, declared: &[Declared]) {
    for m in declared {
        let _ = writeln!(
            s,
            "// Not in the catalog: GRES type `{}` of slurm.conf. Add nvlink-gen, price-per-hour.",
            crate::fmt::comment(&m.slurm_type)
        );
        match m.memory_gib {
            Some(g) => {
                let _ = writeln!(
                    s,
                    "gpu-model {} memory={}  // from the type's name: check it\n",
                    quote(&m.name),
                    quote(&format!("{g}GiB"))
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "gpu-model {}  // memory unknown: set memory=\"...\" (or base=\"...\")\n",
                    quote(&m.name)
                );
            }
        }
    }
}

/// Node classes from identical hardware, named after the models' short names and
/// counts, and the `nodes` ranges of each.
fn classes(s: &mut String, nodes: &[Described]) {
    // Classes from identical hardware, named after the model's short name and count.
    let mut classes: BTreeMap<&Hardware, Vec<&Described>> = BTreeMap::new();
    for n in nodes {
        classes.entry(&n.hardware).or_default().push(n);
    }
    let mut used = BTreeSet::new();
    let mut names: Vec<(String, &Hardware, Vec<&Described>)> = Vec::new();
    for (hw, members) in classes {
        let base = if hw.gpus == 0 {
            format!(
                "no-gres-{}cpu",
                u64::from(hw.sockets) * u64::from(hw.cores) * u64::from(hw.threads)
            )
        } else {
            let parts: Vec<String> = hw
                .lines
                .iter()
                .map(|(m, c)| {
                    let short = catalog::lookup(m).map_or(m.as_str(), |g| g.short_name);
                    format!("{short}-x{c}")
                })
                .collect();
            parts.join("-")
        };
        let base = crate::import::names::sanitize(&base, 63);
        names.push((crate::import::names::unique(&base, &mut used), hw, members));
    }
    for (name, hw, members) in &names {
        let _ = writeln!(s, "node-class {} {{", quote(name));
        let _ = writeln!(
            s,
            "    cpu sockets={} cores-per-socket={} threads-per-core={}",
            hw.sockets, hw.cores, hw.threads
        );
        if let Some(m) = hw.memory_mib {
            let _ = writeln!(
                s,
                "    memory {}  // RealMemory, rounded down (docs/import.md)",
                quote(&memory(m))
            );
        }
        if hw.gpus == 0 {
            s.push_str("    // GPU count unknown: no Gres=gpu in slurm.conf, no GPU in gres.conf. If these\n    // nodes have GPUs, add `gpus N model=\"...\"`.\n");
        } else {
            for (model, count) in &hw.lines {
                let _ = writeln!(s, "    gpus {count} model={}", quote(model));
            }
        }
        for (i, (gpus, cores)) in hw.numa.iter().enumerate() {
            let _ = writeln!(
                s,
                "    numa {i} gpus={} cores={}  // gres.conf Cores/CPUs",
                quote(&crate::units::format_index_set(gpus)),
                quote(cores)
            );
        }
        s.push_str("}\n\n");
        let list: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
        let down: Vec<&&Described> = members.iter().filter(|m| !m.down.is_empty()).collect();
        for pattern in crate::units::compress_names(&list) {
            // Expanded once per pattern: not once per down node.
            let names: std::collections::BTreeSet<String> = crate::units::expand_pattern(&pattern)
                .unwrap_or_default()
                .into_iter()
                .collect();
            let inside: Vec<&&&Described> =
                down.iter().filter(|m| names.contains(&m.name)).collect();
            if inside.is_empty() {
                let _ = writeln!(s, "nodes {} class={}", quote(&pattern), quote(name));
                continue;
            }
            let _ = writeln!(s, "nodes {} class={} {{", quote(&pattern), quote(name));
            for m in inside {
                let _ = writeln!(
                    s,
                    "    node {} gpus-down={}  // no device file in gres.conf",
                    quote(&m.name),
                    quote(&crate::units::format_index_set(&m.down))
                );
            }
            s.push_str("}\n");
        }
        s.push('\n');
    }
}

/// Pools from partitions, with the notes on partitions that overlap.
fn pools_section(s: &mut String, nodes: &[Described], pools: &Pools) {
    let mut pool_names = BTreeSet::new();
    for note in pools.notes.values() {
        let _ = writeln!(s, "// {}", crate::fmt::comment(note));
    }
    for (part, members) in &pools.pools {
        let pool = crate::import::names::unique(
            &crate::import::names::sanitize(part, 63),
            &mut pool_names,
        );
        let mode = match part.as_str() {
            "mig" | "time-slice" | "mps" | "training" | "whole-gpu" => part.as_str(),
            _ => {
                let of = |m: &String| nodes.iter().find(|n| &n.name == m);
                let members: Vec<&Described> = members.iter().filter_map(of).collect();
                if members.iter().any(|n| !n.mig.is_empty()) {
                    "mig"
                } else {
                    members
                        .iter()
                        .find_map(|n| n.sharing)
                        .unwrap_or("whole-gpu")
                }
            }
        };
        let _ = writeln!(
            s,
            "pool {} mode={} nodes={}  // partition {}",
            quote(&pool),
            quote(mode),
            quote(&crate::import::names::one_pattern(members)),
            crate::fmt::comment(part)
        );
    }
    if !pools.pools.is_empty() {
        s.push('\n');
    }
}

/// The current MIG layouts gres.conf lists.
fn mig_section(s: &mut String, nodes: &[Described]) {
    let mig: Vec<&Described> = nodes.iter().filter(|n| !n.mig.is_empty()).collect();
    if !mig.is_empty() {
        s.push_str("\n// MIG as gres.conf lists it now: kept where it serves the plan.\nmig {\n");
        let mut lines: BTreeMap<(Vec<String>, Vec<u32>), Vec<String>> = BTreeMap::new();
        for n in mig {
            let mut by_layout: BTreeMap<&Vec<String>, Vec<u32>> = BTreeMap::new();
            for (g, l) in &n.mig {
                by_layout.entry(l).or_default().push(*g);
            }
            for (l, gpus) in by_layout {
                lines
                    .entry((l.clone(), gpus))
                    .or_default()
                    .push(n.name.clone());
            }
        }
        for ((layout, gpus), nodes) in lines {
            let profiles: Vec<String> = layout.iter().map(|p| quote(p)).collect();
            let _ = writeln!(
                s,
                "    layout {} nodes={} gpus={} current=#true",
                profiles.join(" "),
                quote(&crate::import::names::one_pattern(&nodes)),
                quote(&crate::units::format_index_set(&gpus))
            );
        }
        s.push_str("}\n");
    }
}
