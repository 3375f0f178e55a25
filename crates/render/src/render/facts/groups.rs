//! Placement groups: the plan's units of a class (gangs, replicas, MIG instances,
//! shared and packed replicas), grouped by where they landed and what they ask; and the
//! names of the objects that carry them.

use super::{Ask, ClassFacts};
use crate::model::{Workload, WorkloadKind};
use crate::placement::WorkloadPlacement;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// One planned unit of a class: a gang (its nodes and GPUs per node), or `count`
/// replicas on one node asking the same.
pub(super) struct Unit {
    pub nodes: Vec<(String, Vec<u32>)>,
    pub ask: Ask,
    pub count: u32,
    /// A gang's replica index (gangs only).
    pub gang: Option<u32>,
}

/// What makes two units one group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub pools: BTreeSet<String>,
    pub models: BTreeSet<String>,
    pub ask: Ask,
    pub pods: u32,
    pub pin: Option<super::Pin>,
    /// Whether its nodes hand out GPUs through DRA.
    pub dra: bool,
    /// What makes a unit an object of its own under DRA: a shared GPU (its node and
    /// index: one ResourceClaim each) or a gang with a ComputeDomain (its replica).
    pub split: Option<(String, u32)>,
}

/// A group being collected: its units and nodes.
#[derive(Default)]
pub(super) struct Acc {
    pub count: u32,
    pub nodes: BTreeSet<String>,
}

/// Every planned unit of class `m` as placed in `w`.
pub(super) fn units(w: &WorkloadPlacement, m: &Workload) -> Vec<Unit> {
    let mut out = Vec::new();
    for g in &w.gangs {
        let nodes: Vec<(String, Vec<u32>)> = g
            .nodes
            .iter()
            .map(|n| (n.node.clone(), n.gpus.clone()))
            .collect();
        let gpus = nodes.first().map(|n| n.1.len() as u32).unwrap_or(0);
        out.push(Unit {
            nodes,
            ask: Ask::Whole { gpus },
            count: 1,
            gang: Some(g.replica),
        });
    }
    for i in &w.mig_instances {
        out.push(Unit {
            nodes: vec![(i.node.clone(), vec![i.gpu])],
            ask: Ask::Mig {
                profile: i.profile.clone(),
            },
            count: 1,
            gang: None,
        });
    }
    let per_gpu = m.per_gpu.unwrap_or(1).max(1);
    let mps = m.isolation.or(m.share) == Some(crate::model::Isolation::Mps);
    // One replica per GPU shares nothing (the device plugin shares a GPU with two
    // replicas or more): it asks for a whole GPU.
    let share = if per_gpu == 1 {
        Ask::Whole { gpus: 1 }
    } else {
        Ask::Shared {
            thousandths: 1000 / per_gpu,
            mps,
        }
    };
    for s in &w.shares {
        out.push(Unit {
            nodes: vec![(s.node.clone(), vec![s.gpu])],
            ask: share.clone(),
            count: s.replicas,
            gang: None,
        });
    }
    for p in &w.packed {
        out.push(Unit {
            nodes: vec![(p.node.clone(), p.gpus.clone())],
            ask: packed_ask(m),
            count: p.replicas,
            gang: None,
        });
    }
    out
}

/// What one packed replica of `m` asks: a shared GPU for a fraction, whole GPUs, or
/// none (CPU-only).
fn packed_ask(m: &Workload) -> Ask {
    let milli = m.packed_gpu_milli();
    if milli == 0 {
        Ask::Cpu
    } else if milli < 1000 {
        Ask::Shared {
            thousandths: milli as u32,
            mps: m.isolation == Some(crate::model::Isolation::Mps),
        }
    } else {
        Ask::Whole {
            gpus: milli.div_ceil(1000) as u32,
        }
    }
}

/// The longest object name a class's groups may have: a DNS label (63), less, for a
/// training class, `-worker-` and the digits of its last pod index (Volcano names pods
/// `NAME-worker-N`; an indexed Job's pod hostname is `NAME-N`).
fn limit(c: &ClassFacts) -> usize {
    if c.kind != WorkloadKind::Training.as_str() {
        return 63;
    }
    let pods = c.groups.iter().map(|g| g.pods).max().unwrap_or(1).max(1);
    63 - "-worker-".len() - (pods - 1).to_string().len()
}

/// Names every group: the class's name when it has one group, else `<class>-<i>`
/// (1-based, in group order); a name past the class's limit keeps a readable prefix and
/// a short hash of the class; a name taken by another object gets a hash of its group.
pub(super) fn name_all(classes: &mut [ClassFacts]) {
    let mut taken: BTreeSet<String> = classes.iter().map(|c| c.name.clone()).collect();
    for c in classes.iter_mut() {
        let limit = limit(c);
        let many = c.groups.len() > 1;
        let class = c.name.clone();
        for (i, g) in c.groups.iter_mut().enumerate() {
            if !many {
                g.name = class.clone();
                continue;
            }
            let suffix = format!("-{}", i + 1);
            let mut name = fit(&class, &suffix, limit);
            if taken.contains(&name) {
                name = fit(
                    &class,
                    &format!("-{}{suffix}", short_hash(&format!("{class}/{i}"))),
                    limit,
                );
            }
            taken.insert(name.clone());
            g.name = name;
        }
    }
}

/// `<base><suffix>` within `limit` characters: when too long, the base is cut and a
/// 6-character hash of the whole base keeps it unique.
fn fit(base: &str, suffix: &str, limit: usize) -> String {
    if base.len() + suffix.len() <= limit {
        return format!("{base}{suffix}");
    }
    let h = short_hash(base);
    let keep = limit.saturating_sub(suffix.len() + h.len() + 1);
    let cut = base[..keep.min(base.len())].trim_end_matches('-');
    format!("{cut}-{h}{suffix}")
}

/// Six hex digits of SHA-256: stable across runs and platforms.
pub(crate) fn short_hash(s: &str) -> String {
    let d = Sha256::digest(s.as_bytes());
    d.iter().take(3).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_limit_and_stay_unique() {
        let long = "a".repeat(60);
        let n = fit(&long, "-12", 63);
        assert!(n.len() <= 63, "{n}");
        assert!(n.ends_with("-12"));
        assert_ne!(fit(&long, "-1", 40), fit(&format!("{long}b"), "-1", 40));
        assert_eq!(fit("chat", "-2", 63), "chat-2");
    }
}
