//! Keeping the previous placement: rewards of the compaction objective.
//!
//! Per node group, the previous placement put some nodes on each pattern (a node that
//! gets the same pattern again keeps its GPUs: the extraction gives it the same
//! instances), held some units of each node item (gang shares and node-local gangs of a
//! shape in a mode, packed replicas of a class), some
//! MIG and shared replicas per class and GPU model, and some nodes in each pool mode. A
//! continuous keep variable per such pair is bounded by both what was held and what the
//! plan now puts there; the compaction stage rewards it ([`KEEP_GPU`] per GPU,
//! [`KEEP_NODE`] per node). Admission is decided before, so keeping never costs a
//! higher-priority replica. Which node of a group gets what is the extraction's choice,
//! and it prefers the previous nodes and GPUs.

use super::master::{KeepKey, Master};
use super::pattern::Item;
use crate::model::PoolMode;
use crate::model::{NodeIdx, Tier};
use crate::solve::previous::{KEEP_GPU, KEEP_NODE, Previous};
use std::collections::{BTreeMap, BTreeSet};

/// Weight of keeping an item somewhere in its group, next to keeping a node's whole
/// previous pattern (which keeps the item's GPUs too).
const ITEM_SHARE: f64 = 0.5;

/// Adds the keep variables of `prev` to the master.
pub(crate) fn add(m: &mut Master, prev: &Previous) {
    let group_of = m.p.group_of();
    let shape_of = m.p.shape_of();
    let per_node = node_items(m, prev, &group_of, &shape_of);
    add_pattern_keeps(m, &per_node, &group_of);
    add_item_keeps(m, prev, &group_of, &shape_of);
    add_replica_keeps(m, prev);
    add_mode_keeps(m, prev, &group_of);
}

/// What each node of a group held before, as item counts: the node items of previous
/// gangs (see [`item_of`]) and packed replicas (one per whole-GPU entry).
fn node_items(
    m: &Master,
    prev: &Previous,
    group_of: &BTreeMap<NodeIdx, usize>,
    shape_of: &BTreeMap<usize, usize>,
) -> BTreeMap<NodeIdx, BTreeMap<Item, u32>> {
    let mut per_node: BTreeMap<NodeIdx, BTreeMap<Item, u32>> = BTreeMap::new();
    for (w, gangs) in &prev.gangs {
        let Some(&si) = shape_of.get(w) else { continue };
        for g in gangs {
            for (n, gpus) in g {
                let Some(&gi) = group_of.get(n) else { continue };
                if let Some(item) = item_of(m, group_of, gi, si, g, gpus) {
                    *per_node.entry(*n).or_default().entry(item).or_default() += 1;
                }
            }
        }
    }
    for (w, entries) in &prev.packed {
        for (n, gpus, k) in entries {
            if !group_of.contains_key(n) {
                continue;
            }
            let reps = if gpus.len() > 1 { 1 } else { *k };
            *per_node
                .entry(*n)
                .or_default()
                .entry(Item::Packed { w: *w as u32 })
                .or_default() += reps;
        }
    }
    per_node
}

/// Whole previous patterns: a node that keeps exactly what it held keeps its GPUs.
/// Records each node's previous pattern, and per (group, pattern) a keep variable for
/// the nodes that held it.
fn add_pattern_keeps(
    m: &mut Master,
    per_node: &BTreeMap<NodeIdx, BTreeMap<Item, u32>>,
    group_of: &BTreeMap<NodeIdx, usize>,
) {
    let mut patterns: BTreeMap<(usize, Vec<(Item, u32)>), f64> = BTreeMap::new();
    for (n, items) in per_node {
        let gi = group_of[n];
        let q: Vec<(Item, u32)> = items.iter().map(|(i, k)| (*i, *k)).collect();
        m.prev_pattern.insert(*n, q.clone());
        *patterns.entry((gi, q)).or_default() += 1.0;
    }
    for ((gi, q), k) in patterns {
        if q.iter().any(|(i, _)| !m.items[gi].contains(i)) {
            continue;
        }
        let gpus: f64 = q
            .iter()
            .map(|(i, k)| {
                let need = m.need(*i);
                (need.gpus as f64 + need.milli as f64 / 1000.0) * *k as f64
            })
            .sum();
        m.add_pattern_keep(gi, &q, k, KEEP_GPU * gpus.max(0.1));
    }
}

/// Items per (group, shape or packed class), by the workload that held them: a keep
/// variable per workload, together at most the items the group's patterns hold.
fn add_item_keeps(
    m: &mut Master,
    prev: &Previous,
    group_of: &BTreeMap<NodeIdx, usize>,
    shape_of: &BTreeMap<usize, usize>,
) {
    let held = held_items(m, prev, group_of, shape_of);
    for ((gi, key), by_w) in held {
        if m.whole_nodes(gi).is_empty() {
            continue;
        }
        let per_replica = match key {
            KeepKey::Shape(s) => m.p.shapes[s as usize].shares.max(1) as f64,
            KeepKey::Packed(_) => 1.0,
        };
        let list: Vec<(usize, f64, f64)> = by_w
            .into_iter()
            .map(|(w, (k, gpus))| (w, k, ITEM_SHARE * KEEP_GPU * gpus))
            .collect();
        m.add_item_keep(gi, key, &list, per_replica);
    }
}

/// Per (group, keep key) and workload: the items it held there and the GPUs of one.
fn held_items(
    m: &Master,
    prev: &Previous,
    group_of: &BTreeMap<NodeIdx, usize>,
    shape_of: &BTreeMap<usize, usize>,
) -> BTreeMap<(usize, KeepKey), BTreeMap<usize, (f64, f64)>> {
    let mut held: BTreeMap<(usize, KeepKey), BTreeMap<usize, (f64, f64)>> = BTreeMap::new();
    for (w, gangs) in &prev.gangs {
        let Some(&si) = shape_of.get(w) else { continue };
        for g in gangs {
            for (n, gpus) in g {
                let Some(&gi) = group_of.get(n) else { continue };
                if item_of(m, group_of, gi, si, g, gpus).is_some() {
                    let e = held
                        .entry((gi, KeepKey::Shape(si as u32)))
                        .or_default()
                        .entry(*w)
                        .or_default();
                    e.0 += 1.0;
                    e.1 = gpus.len() as f64;
                }
            }
        }
    }
    for (w, entries) in &prev.packed {
        let need = m.need(Item::Packed { w: *w as u32 });
        let weight = (need.gpus as f64 + need.milli as f64 / 1000.0).max(0.1);
        for (n, gpus, k) in entries {
            let Some(&gi) = group_of.get(n) else { continue };
            let reps = if gpus.len() > 1 { 1 } else { *k };
            let e = held
                .entry((gi, KeepKey::Packed(*w as u32)))
                .or_default()
                .entry(*w)
                .or_default();
            e.0 += reps as f64;
            e.1 = weight;
        }
    }
    held
}

/// MIG and shared replicas per (class, GPU model), weighted by their GPU-equivalent.
fn add_replica_keeps(m: &mut Master, prev: &Previous) {
    let (c, p) = (m.c, m.p);
    let model_at = |n: NodeIdx, g: u32| c.gpu_model_name(n, g).map(str::to_string);
    let mut held: BTreeMap<(usize, String), f64> = BTreeMap::new();
    for (w, v) in &prev.mig_instances {
        for (n, g, _) in v {
            if let Some(md) = model_at(*n, *g) {
                *held.entry((*w, md)).or_default() += 1.0;
            }
        }
    }
    for (w, v) in &prev.shares {
        for (n, g, k) in v {
            if let Some(md) = model_at(*n, *g) {
                *held.entry((*w, md)).or_default() += *k as f64;
            }
        }
    }
    for (key, k) in held {
        let Some(&v) = m.r.get(&key) else { continue };
        let weight = p.equiv.get(&key).copied().unwrap_or(0.0).max(0.01);
        m.add_keep(k, KEEP_GPU * weight, &[(1.0, v)]);
    }
}

/// Nodes per (group, pool mode).
fn add_mode_keeps(m: &mut Master, prev: &Previous, group_of: &BTreeMap<NodeIdx, usize>) {
    let mut held: BTreeMap<(usize, PoolMode), f64> = BTreeMap::new();
    for (n, mode) in prev.node_mode.iter().enumerate() {
        if let (Some(mode), Some(&gi)) = (mode, group_of.get(&n)) {
            *held.entry((gi, *mode)).or_default() += 1.0;
        }
    }
    for ((gi, mode), k) in held {
        let terms: Vec<(f64, usize)> = if mode == PoolMode::WholeGpu {
            m.whole_nodes(gi)
        } else {
            m.n.get(&(gi, mode))
                .map(|v| vec![(1.0, *v)])
                .unwrap_or_default()
        };
        if terms.is_empty() {
            continue;
        }
        if mode == PoolMode::WholeGpu {
            // Whole-GPU nodes are the pattern columns, now and later: a keep row per
            // group on all of them.
            m.add_whole_keep(gi, k, KEEP_NODE);
        } else {
            // A MIG, time-slice or MPS node that changes mode evicts every replica on it
            // (the master counts those replicas per GPU model, not per node): keeping
            // the mode is worth keeping all its GPUs.
            let gpus = m.p.groups[gi].gpus as f64;
            m.add_keep(k, KEEP_NODE.max(KEEP_GPU * gpus), &terms);
        }
    }
}

/// The node item a previous gang's share on group `gi` was: a node-local gang in the
/// first mode its GPUs satisfy, or a share in the first mode whose domain holds all its
/// nodes.
pub(super) fn item_of(
    m: &Master,
    group_of: &BTreeMap<NodeIdx, usize>,
    gi: usize,
    si: usize,
    gang: &[(NodeIdx, Vec<u32>)],
    gpus: &[u32],
) -> Option<Item> {
    let p = m.p;
    let s = &p.shapes[si];
    let candidates: Vec<Item> = m.items[gi]
        .iter()
        .copied()
        .filter(|i| match i {
            Item::Local { s: x, .. } | Item::Share { s: x, .. } => *x as usize == si,
            Item::Packed { .. } => false,
        })
        .collect();
    if gang.len() == 1 {
        return candidates.into_iter().find(|i| match i {
            Item::Local { m: mi, .. } => {
                let mode = &s.modes[*mi as usize];
                gpus.len() as u32 == s.gpus
                    && (!(mode.node_local && mode.tier == Tier::Nvlink)
                        || one_nvlink_domain(m, gang[0].0, gpus))
            }
            _ => false,
        });
    }
    let groups: BTreeSet<usize> = gang
        .iter()
        .filter_map(|(n, _)| group_of.get(n).copied())
        .collect();
    candidates.into_iter().find(|i| match i {
        Item::Share { m: mi, partial, .. } => {
            let mode = &s.modes[*mi as usize];
            let d = p.domain_of(&p.groups[gi], mode);
            d.is_some()
                && groups.iter().all(|g| p.domain_of(&p.groups[*g], mode) == d)
                && m.need(*i).gpus as usize == gpus.len()
                && (*partial || gpus.len() as u32 == s.per_node.min(s.gpus))
        }
        _ => false,
    })
}

fn one_nvlink_domain(m: &Master, n: NodeIdx, gpus: &[u32]) -> bool {
    let node = &m.c.nodes[n];
    let doms: BTreeSet<Option<usize>> = node
        .gpus
        .iter()
        .filter(|g| gpus.contains(&g.index))
        .map(|g| g.nvlink_domain)
        .collect();
    doms.len() == 1 && !doms.contains(&None)
}
