//! Node-level sharing (see [`crate::model::sharing`]): the device plugin shares every
//! GPU of a node with one replica count and one strategy, so a shared node serves one
//! sharing factor, and a node holding fractions carried by device-plugin replicas holds
//! no whole-GPU work, at most as many replicas on a GPU as every fraction on it allows,
//! and no share of another kind. On a node that hands out GPUs through DRA a shared GPU
//! belongs to one ResourceClaim, so its fractions and shared slots are one class's.

use super::{Invariant, Kind, Walk, kind};
use crate::model::sharing::Slots;
use crate::model::{Cluster, NodeIdx};
use crate::placement::Placement;
use std::collections::{BTreeMap, BTreeSet};

/// What one node holds, as far as sharing goes.
#[derive(Default)]
struct NodeUse {
    /// Sharing factors of the shared classes on it.
    factors: BTreeSet<u32>,
    /// Fractional replicas per GPU carried by device-plugin replicas, their rules.
    slotted: BTreeMap<u32, u32>,
    rules: BTreeSet<Slots>,
    /// Fractional replicas with per-GPU shares (Slurm, no authority).
    per_gpu_shares: bool,
    /// Whole-GPU work (gangs, whole-GPU replicas).
    whole: bool,
    /// The classes whose fractions or shared slots each GPU holds.
    classes: BTreeMap<u32, BTreeSet<String>>,
}

pub(super) fn check_sharing(k: &mut Walk, p: &Placement) {
    let c = k.c;
    let uses = node_uses(c, p);
    for (ni, u) in uses {
        let name = &c.nodes[ni].name;
        one_claim_per_gpu(k, ni, &u);
        if u.factors.len() > 1 {
            let fs: Vec<String> = u.factors.iter().map(u32::to_string).collect();
            k.fail_node(
                Invariant::Sharing,
                ni,
                format!(
                    "node `{name}` shares its GPUs with per-gpu {}: the device plugin gives every GPU of a node one replica count",
                    fs.join(" and ")
                ),
            );
        }
        if u.rules.is_empty() {
            continue;
        }
        let cap = u.rules.iter().map(|r| r.per_gpu).min().unwrap_or(u32::MAX);
        let why = if u.whole {
            Some("whole-GPU work beside GPUs the device plugin shares".to_string())
        } else if u.per_gpu_shares {
            Some("fractions of two kinds of sharing".to_string())
        } else if u.rules.iter().map(|r| r.mps).collect::<BTreeSet<_>>().len() > 1 {
            Some("fractions by time-slicing and by MPS".to_string())
        } else {
            u.slotted.iter().find(|(_, n)| **n > cap).map(|(g, n)| {
                format!("{n} fractional replicas on GPU {g}, its fractions allow {cap} per GPU")
            })
        };
        if let Some(why) = why {
            k.fail_node(Invariant::Sharing, ni, format!("node `{name}` holds {why}"));
        }
    }
}

/// On a DRA node, a GPU shared by the replicas of two classes: a device belongs to one
/// ResourceClaim, which one class's object references (the render could only warn,
/// GP944).
fn one_claim_per_gpu(k: &mut Walk, ni: NodeIdx, u: &NodeUse) {
    let c = k.c;
    if c.node_allocation(ni) != crate::model::Allocation::Dra {
        return;
    }
    for (g, classes) in u.classes.iter().filter(|(_, cs)| cs.len() > 1) {
        let names: Vec<String> = classes.iter().map(|n| format!("`{n}`")).collect();
        k.fail_node(
            Invariant::Sharing,
            ni,
            format!(
                "GPU {g} of node `{}`, which hands out GPUs through DRA, is shared by {}: a GPU belongs to one ResourceClaim, one class's",
                c.nodes[ni].name,
                names.join(" and ")
            ),
        );
    }
}

/// Per node: what its shared, packed and gang work needs of the device plugin.
fn node_uses(c: &Cluster, p: &Placement) -> BTreeMap<NodeIdx, NodeUse> {
    let mut out: BTreeMap<NodeIdx, NodeUse> = BTreeMap::new();
    let idx = |n: &str| c.node_index.get(n).copied();
    for wp in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        for g in &wp.gangs {
            for ng in &g.nodes {
                if let Some(ni) = idx(&ng.node) {
                    out.entry(ni).or_default().whole = true;
                }
            }
        }
        if let Kind::Shared(_, per_gpu) = kind(w) {
            for s in &wp.shares {
                if let Some(ni) = idx(&s.node) {
                    let u = out.entry(ni).or_default();
                    u.factors.insert(per_gpu);
                    u.classes.entry(s.gpu).or_default().insert(w.name.clone());
                }
            }
        }
        let milli = w.packed_gpu_milli();
        for e in &wp.packed {
            let Some(ni) = idx(&e.node) else { continue };
            let u = out.entry(ni).or_default();
            if milli >= 1000 {
                u.whole = true;
            } else if milli > 0 {
                for g in &e.gpus {
                    u.classes.entry(*g).or_default().insert(w.name.clone());
                }
                match c.fraction_slots(w) {
                    Some(s) => {
                        u.rules.insert(s);
                        for g in &e.gpus {
                            *u.slotted.entry(*g).or_insert(0) += e.replicas;
                        }
                    }
                    None => u.per_gpu_shares = true,
                }
            }
        }
    }
    out
}
