//! A previous placement (the last applied plan, or `plan --previous FILE`) read back
//! into the solver's terms ([`resolve`]), and what moved between two placements
//! ([`moves`], the report in `placement.moves`). The solver's side of it (what keeping
//! is worth, how the ILP uses it) is [`crate::solve::previous`].

use super::{Moves, Placement};
use crate::model::{Cluster, NodeIdx};
use crate::solve::GangNodes;
use crate::solve::previous::Previous;
use std::collections::{BTreeMap, BTreeSet};

/// Names of a placement resolved against the current model: unknown nodes, GPUs that
/// are down or on cordoned nodes resolve to nothing.
struct Names<'c> {
    c: &'c Cluster,
}

impl Names<'_> {
    fn node(&self, name: &str) -> Option<NodeIdx> {
        self.c.node_index.get(name).copied()
    }

    fn usable(&self, n: NodeIdx, g: u32) -> bool {
        self.c.nodes[n].usable_gpus().any(|x| x.index == g)
    }

    /// A node whose GPUs `gpus` are all usable.
    fn node_with(&self, name: &str, gpus: &[u32]) -> Option<NodeIdx> {
        self.node(name)
            .filter(|n| gpus.iter().all(|g| self.usable(*n, *g)))
    }

    /// The gangs whose every node and GPU still exists and is usable.
    fn gangs(&self, w: &super::WorkloadPlacement) -> Vec<GangNodes> {
        w.gangs
            .iter()
            .filter_map(|g| {
                let nodes: Option<GangNodes> = g
                    .nodes
                    .iter()
                    .map(|ng| {
                        self.node_with(&ng.node, &ng.gpus)
                            .filter(|_| !ng.gpus.is_empty())
                            .map(|n| (n, ng.gpus.clone()))
                    })
                    .collect();
                nodes.filter(|v| !v.is_empty())
            })
            .collect()
    }
}

/// Inserts `v` under `key` unless it is empty.
fn insert_some<T>(m: &mut BTreeMap<usize, Vec<T>>, key: usize, v: Vec<T>) {
    if !v.is_empty() {
        m.insert(key, v);
    }
}

/// Resolves `p` against `c`.
pub fn resolve(c: &Cluster, p: &Placement) -> Previous {
    let names = Names { c };
    let workload: BTreeMap<&str, usize> = c
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| (w.name.as_str(), i))
        .collect();
    let mut out = Previous {
        node_mode: vec![None; c.nodes.len()],
        ..Default::default()
    };
    for np in &p.pools {
        if let Some(n) = names.node(&np.node) {
            out.node_mode[n] = Some(np.mode);
        }
    }
    for l in &p.mig_layouts {
        if let Some(n) = names.node_with(&l.node, &[l.gpu]) {
            out.mig_layouts.insert((n, l.gpu), l.profiles.clone());
        }
    }
    for w in &p.workloads {
        let Some(&wi) = workload.get(w.name.as_str()) else {
            continue;
        };
        insert_some(&mut out.gangs, wi, names.gangs(w));
        let mig = w.mig_instances.iter().filter_map(|i| {
            names
                .node_with(&i.node, &[i.gpu])
                .map(|n| (n, i.gpu, i.profile.clone()))
        });
        insert_some(&mut out.mig_instances, wi, mig.collect());
        let shares = w.shares.iter().filter_map(|s| {
            names
                .node_with(&s.node, &[s.gpu])
                .map(|n| (n, s.gpu, s.replicas))
        });
        insert_some(&mut out.shares, wi, shares.collect());
        let packed = w.packed.iter().filter_map(|s| {
            names
                .node_with(&s.node, &s.gpus)
                .map(|n| (n, s.gpus.clone(), s.replicas))
        });
        insert_some(&mut out.packed, wi, packed.collect());
    }
    out
}

/// Compares `now` with `before` (both resolved against the same model).
pub fn moves(before: &Previous, now: &Previous) -> Moves {
    let mut m = Moves::default();
    gang_moves(before, now, &mut m);
    replica_moves(before, now, &mut m);
    m.nodes_changed = before
        .node_mode
        .iter()
        .zip(&now.node_mode)
        .filter(|(a, b)| a.is_some() && b.is_some() && a != b)
        .count() as u32;
    let gpus: BTreeSet<&(NodeIdx, u32)> = before
        .mig_layouts
        .keys()
        .chain(now.mig_layouts.keys())
        .collect();
    m.mig_gpus_changed = gpus
        .into_iter()
        .filter(|k| {
            let mut a = before.mig_layouts.get(k).cloned().unwrap_or_default();
            let mut b = now.mig_layouts.get(k).cloned().unwrap_or_default();
            a.sort();
            b.sort();
            a != b
        })
        .count() as u32;
    m
}

/// Gangs on exactly the same GPUs are kept; a gang that did not exist before (more
/// replicas) is not a move.
fn gang_moves(before: &Previous, now: &Previous, m: &mut Moves) {
    for (w, gangs) in &now.gangs {
        let old = before.gangs.get(w).cloned().unwrap_or_default();
        let mut old: Vec<GangNodes> = old.into_iter().map(sorted).collect();
        let mut unmatched = 0u32;
        for g in gangs {
            let g = sorted(g.clone());
            if let Some(i) = old.iter().position(|o| *o == g) {
                old.swap_remove(i);
                m.gangs_kept += 1;
            } else {
                unmatched += 1;
            }
        }
        m.gangs_moved += unmatched.min(old.len() as u32);
    }
}

/// Replicas per (node, GPUs).
type Keyed = BTreeMap<(NodeIdx, Vec<u32>), u32>;

fn keyed(entries: &[(NodeIdx, Vec<u32>, u32)]) -> Keyed {
    let mut b = Keyed::new();
    for (n, g, k) in entries {
        *b.entry((*n, g.clone())).or_default() += k;
    }
    b
}

/// MIG instances, shared-GPU and packed replicas: kept where they are on the same
/// GPUs, moved up to the smaller of the two counts.
fn replica_moves(before: &Previous, now: &Previous, m: &mut Moves) {
    let mut compare = |a: Keyed, b: Keyed| {
        let total_a: u32 = a.values().sum();
        let total_b: u32 = b.values().sum();
        let kept: u32 = b
            .iter()
            .map(|(k, v)| (*v).min(a.get(k).copied().unwrap_or(0)))
            .sum();
        m.replicas_kept += kept;
        m.replicas_moved += total_a.min(total_b) - kept;
    };
    let workloads: BTreeSet<usize> = before
        .mig_instances
        .keys()
        .chain(now.mig_instances.keys())
        .chain(before.shares.keys())
        .chain(now.shares.keys())
        .chain(before.packed.keys())
        .chain(now.packed.keys())
        .copied()
        .collect();
    for w in workloads {
        let mig = |p: &Previous| {
            let v: Vec<(NodeIdx, Vec<u32>, u32)> = p
                .mig_instances
                .get(&w)
                .map(|v| v.iter().map(|(n, g, _)| (*n, vec![*g], 1)).collect())
                .unwrap_or_default();
            keyed(&v)
        };
        compare(mig(before), mig(now));
        let shares = |p: &Previous| {
            let v: Vec<(NodeIdx, Vec<u32>, u32)> = p
                .shares
                .get(&w)
                .map(|v| v.iter().map(|(n, g, k)| (*n, vec![*g], *k)).collect())
                .unwrap_or_default();
            keyed(&v)
        };
        compare(shares(before), shares(now));
        let packed = |p: &Previous| keyed(p.packed.get(&w).map(Vec::as_slice).unwrap_or(&[]));
        compare(packed(before), packed(now));
    }
}

fn sorted(mut g: GangNodes) -> GangNodes {
    for (_, gpus) in g.iter_mut() {
        gpus.sort_unstable();
    }
    g.sort();
    g
}
