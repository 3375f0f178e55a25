//! A previous placement (the last applied plan, or `plan --previous FILE`) read back
//! into the solver's terms ([`resolve`]), and what moved between two placements
//! ([`moves`], the report in `placement.moves`). The solver's side of it (what keeping
//! is worth, how the ILP uses it) is [`crate::solve::previous`].

use super::{Moves, Placement};
use crate::model::{Cluster, NodeIdx};
use crate::solve::GangNodes;
use crate::solve::previous::Previous;
use std::collections::BTreeMap;

/// Resolves `p` against `c`.
pub fn resolve(c: &Cluster, p: &Placement) -> Previous {
    let usable = |n: NodeIdx, g: u32| c.nodes[n].usable_gpus().any(|x| x.index == g);
    let node = |name: &str| c.node_index.get(name).copied();
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
        if let Some(n) = node(&np.node) {
            out.node_mode[n] = Some(np.mode);
        }
    }
    for l in &p.mig_layouts {
        if let Some(n) = node(&l.node).filter(|n| usable(*n, l.gpu)) {
            out.mig_layouts.insert((n, l.gpu), l.profiles.clone());
        }
    }
    for w in &p.workloads {
        let Some(&wi) = workload.get(w.name.as_str()) else {
            continue;
        };
        let mut gangs = Vec::new();
        'gang: for g in &w.gangs {
            let mut nodes: GangNodes = Vec::new();
            for ng in &g.nodes {
                let Some(n) = node(&ng.node) else {
                    continue 'gang;
                };
                if ng.gpus.is_empty() || !ng.gpus.iter().all(|x| usable(n, *x)) {
                    continue 'gang;
                }
                nodes.push((n, ng.gpus.clone()));
            }
            if !nodes.is_empty() {
                gangs.push(nodes);
            }
        }
        if !gangs.is_empty() {
            out.gangs.insert(wi, gangs);
        }
        let mig: Vec<(NodeIdx, u32, String)> = w
            .mig_instances
            .iter()
            .filter_map(|i| {
                node(&i.node)
                    .filter(|n| usable(*n, i.gpu))
                    .map(|n| (n, i.gpu, i.profile.clone()))
            })
            .collect();
        if !mig.is_empty() {
            out.mig_instances.insert(wi, mig);
        }
        let shares: Vec<(NodeIdx, u32, u32)> = w
            .shares
            .iter()
            .filter_map(|s| {
                node(&s.node)
                    .filter(|n| usable(*n, s.gpu))
                    .map(|n| (n, s.gpu, s.replicas))
            })
            .collect();
        if !shares.is_empty() {
            out.shares.insert(wi, shares);
        }
        let packed: Vec<(NodeIdx, Vec<u32>, u32)> = w
            .packed
            .iter()
            .filter_map(|s| {
                node(&s.node)
                    .filter(|n| s.gpus.iter().all(|g| usable(*n, *g)))
                    .map(|n| (n, s.gpus.clone(), s.replicas))
            })
            .collect();
        if !packed.is_empty() {
            out.packed.insert(wi, packed);
        }
    }
    out
}

/// Compares `now` with `before` (both resolved against the same model).
pub fn moves(before: &Previous, now: &Previous) -> Moves {
    let mut m = Moves::default();
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
        // A gang that did not exist before (more replicas) is not a move.
        m.gangs_moved += unmatched.min(old.len() as u32);
    }
    let keyed = |entries: &[(NodeIdx, Vec<u32>, u32)]| {
        let mut b: BTreeMap<(NodeIdx, Vec<u32>), u32> = BTreeMap::new();
        for (n, g, k) in entries {
            *b.entry((*n, g.clone())).or_default() += k;
        }
        b
    };
    let mut compare = |a: BTreeMap<(NodeIdx, Vec<u32>), u32>,
                       b: BTreeMap<(NodeIdx, Vec<u32>), u32>| {
        let total_a: u32 = a.values().sum();
        let total_b: u32 = b.values().sum();
        let kept: u32 = b
            .iter()
            .map(|(k, v)| (*v).min(a.get(k).copied().unwrap_or(0)))
            .sum();
        m.replicas_kept += kept;
        m.replicas_moved += total_a.min(total_b) - kept;
    };
    let workloads: std::collections::BTreeSet<usize> = before
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
    m.nodes_changed = before
        .node_mode
        .iter()
        .zip(&now.node_mode)
        .filter(|(a, b)| a.is_some() && b.is_some() && a != b)
        .count() as u32;
    let gpus: std::collections::BTreeSet<&(NodeIdx, u32)> = before
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

fn sorted(mut g: GangNodes) -> GangNodes {
    for (_, gpus) in g.iter_mut() {
        gpus.sort_unstable();
    }
    g.sort();
    g
}
