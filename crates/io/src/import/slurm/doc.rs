//! What the Slurm files say as a [`Document`]: the cluster, declared models, classes
//! of identical hardware with their node ranges, pools from partitions, the fabric of
//! topology.conf and the MIG layouts gres.conf lists.

use super::describe::{Described, Hardware};
use super::models::Declared;
use super::partitions::Pools;
use super::topology::Fabric;
use crate::catalog;
use crate::import::doc::{
    self, Cluster, Cpu, Document, GpuModel, Gpus, Item, Layout, Memory, NodeClass, NodeDomain,
    NodeDown, Nodes, Numa, Pool,
};
use crate::import::names::one_pattern;
use crate::units::format_index_set;
use std::collections::{BTreeMap, BTreeSet};

/// The document.
pub(super) fn document(
    header: &str,
    cluster: Option<&str>,
    declared: &[Declared],
    nodes: &[Described],
    pools: &Pools,
    f: &Fabric,
) -> Document {
    let mut d = Document::default();
    d.comments(header);
    d.comment("");
    d.comments(
        "slurm.conf does not say how GPUs, NICs and CPUs are wired: PCIe switches, compute
NICs and NVLink inside a node are left out. `gpuplan import nvidia-smi-topo` (or
`gpuplan discover` on one node of each class) fills them in.",
    );
    d.blank();
    d.push(Item::Cluster(Cluster {
        name: cluster.unwrap_or("slurm-cluster").to_string(),
        scheduler: Some("slurm".into()),
    }));
    d.blank();
    declarations(&mut d, declared);
    classes(&mut d, nodes);
    pools_section(&mut d, nodes, pools);
    d.push(Item::Fabric(fabric(f)));
    mig_section(&mut d, nodes);
    d
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

/// The one `fabric` block: NVLink blocks, the switch tree, the nodes under no leaf.
fn fabric(f: &Fabric) -> doc::Fabric {
    let mut out = doc::Fabric::default();
    if f.no_topology {
        out.notes.push(
            "No topology.conf: one leaf holds every node. Describe the real switches.".into(),
        );
    }
    for (name, members) in &f.nvlink {
        out.nvlink.push(NodeDomain {
            name: name.clone(),
            nodes: one_pattern(members),
            comment: Some("topology.conf block".into()),
        });
    }
    let is_child: BTreeSet<&String> = f.switches.values().flat_map(|(_, c, _)| c).collect();
    out.switches = f
        .switches
        .keys()
        .filter(|k| !is_child.contains(k))
        .filter_map(|r| switch(f, r))
        .collect();
    if !f.orphans.is_empty() {
        let name = if f.no_topology {
            "all-nodes"
        } else {
            "unlisted"
        };
        out.switches.push(leaf(name, &f.orphans));
    }
    out
}

fn leaf(name: &str, members: &[String]) -> doc::Switch {
    doc::Switch {
        tier: "leaf".into(),
        name: name.to_string(),
        nodes: Some(one_pattern(members)),
        ..doc::Switch::default()
    }
}

/// A switch and those under it; `None` for a leaf without nodes and a spine (or core)
/// with nothing under it.
fn switch(f: &Fabric, name: &str) -> Option<doc::Switch> {
    let (tier, children, members) = f.switches.get(name)?;
    match tier {
        0 => (!members.is_empty()).then(|| leaf(name, members)),
        t => {
            if children.iter().all(|c| !f.switches.contains_key(c)) {
                return None;
            }
            Some(doc::Switch {
                tier: if *t == 1 { "spine" } else { "core" }.into(),
                name: name.to_string(),
                children: children.iter().filter_map(|c| switch(f, c)).collect(),
                ..doc::Switch::default()
            })
        }
    }
}

/// `gpu-model` declarations for GRES types outside the catalog: memory when the type
/// names it, else a placeholder comment (`validate` refuses the model, GP006, until
/// memory= or base= is set).
fn declarations(d: &mut Document, declared: &[Declared]) {
    for m in declared {
        let (memory, comment) = match m.memory_gib {
            Some(g) => (Some(format!("{g}GiB")), "from the type's name: check it"),
            None => (None, "memory unknown: set memory=\"...\" (or base=\"...\")"),
        };
        d.push(Item::GpuModel(GpuModel {
            notes: vec![format!(
                "Not in the catalog: GRES type `{}` of slurm.conf. Add nvlink-gen, price-per-hour.",
                m.slurm_type
            )],
            name: m.name.clone(),
            memory,
            comment: Some(comment.into()),
            ..GpuModel::default()
        }));
        d.blank();
    }
}

/// Node classes from identical hardware, named after the models' short names and
/// counts, and the `nodes` ranges of each.
fn classes(d: &mut Document, nodes: &[Described]) {
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
        d.push(Item::NodeClass(class(name, hw)));
        d.blank();
        ranges(d, name, members);
        d.blank();
    }
}

fn class(name: &str, hw: &Hardware) -> NodeClass {
    let mut c = NodeClass {
        name: name.to_string(),
        cpu: Some(Cpu {
            sockets: u64::from(hw.sockets),
            cores_per_socket: u64::from(hw.cores),
            threads_per_core: Some(u64::from(hw.threads)),
            comment: None,
        }),
        memory: hw.memory_mib.map(|m| Memory {
            size: memory(m),
            comment: Some("RealMemory, rounded down (docs/import.md)".into()),
        }),
        numa: hw
            .numa
            .iter()
            .enumerate()
            .map(|(i, (gpus, cores))| Numa {
                id: i as u32,
                gpus: Some(format_index_set(gpus)),
                cores: Some(cores.clone()),
                comment: Some("gres.conf Cores/CPUs".into()),
                ..Numa::default()
            })
            .collect(),
        ..NodeClass::default()
    };
    if hw.gpus == 0 {
        c.gpu_notes = vec![
            "GPU count unknown: no Gres=gpu in slurm.conf, no GPU in gres.conf. If these".into(),
            "nodes have GPUs, add `gpus N model=\"...\"`.".into(),
        ];
    } else {
        c.gpus = hw
            .lines
            .iter()
            .map(|(model, count)| Gpus {
                count: u64::from(*count),
                model: model.clone(),
                ..Gpus::default()
            })
            .collect();
    }
    c
}

/// The `nodes` lines of a class, with the GPUs gres.conf has no device file for.
fn ranges(d: &mut Document, class: &str, members: &[&Described]) {
    let list: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
    let down: Vec<&&Described> = members.iter().filter(|m| !m.down.is_empty()).collect();
    for pattern in crate::units::compress_names(&list) {
        // Expanded once per pattern: not once per down node.
        let names: BTreeSet<String> = crate::units::expand_pattern(&pattern)
            .unwrap_or_default()
            .into_iter()
            .collect();
        d.push(Item::Nodes(Nodes {
            down: down
                .iter()
                .filter(|m| names.contains(&m.name))
                .map(|m| NodeDown {
                    name: m.name.clone(),
                    gpus: format_index_set(&m.down),
                    comment: Some("no device file in gres.conf".into()),
                })
                .collect(),
            pattern,
            class: class.to_string(),
            ..Nodes::default()
        }));
    }
}

/// Pools from partitions, with the notes on partitions that overlap.
fn pools_section(d: &mut Document, nodes: &[Described], pools: &Pools) {
    let mut pool_names = BTreeSet::new();
    for note in pools.notes.values() {
        d.comment(note.clone());
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
        d.push(Item::Pool(Pool {
            name: pool,
            mode: mode.to_string(),
            nodes: one_pattern(members),
            comment: Some(format!("partition {part}")),
        }));
    }
    if !pools.pools.is_empty() {
        d.blank();
    }
}

/// The current MIG layouts gres.conf lists.
fn mig_section(d: &mut Document, nodes: &[Described]) {
    let mig: Vec<&Described> = nodes.iter().filter(|n| !n.mig.is_empty()).collect();
    if mig.is_empty() {
        return;
    }
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
    d.blank();
    d.comment("MIG as gres.conf lists it now: kept where it serves the plan.");
    d.push(Item::Mig(
        lines
            .into_iter()
            .map(|((profiles, gpus), nodes)| Layout {
                profiles,
                nodes: one_pattern(&nodes),
                gpus: Some(format_index_set(&gpus)),
                comment: None,
            })
            .collect(),
    ));
}
