//! Policy invariants of a placement: team ceilings (parents and quotas), priority
//! order (no higher-priority gang left out while lower-priority classes hold capacity
//! that fits it) and the summary totals.

use super::{EPS, Invariant, Kind, Walk, gang_shape, kind};
use crate::model::PoolMode;
use crate::model::{NodeIdx, Tier, Workload};
use crate::placement::Placement;
use std::collections::{BTreeMap, BTreeSet};

/// GPU-equivalents charged per team (its whole subtree) and per (team, quota index).
struct Usage {
    team: BTreeMap<String, f64>,
    quota: BTreeMap<(String, usize), f64>,
}

/// Usage by classes of priority `at_least` or above (all: `i64::MIN`).
fn usage(k: &Walk, at_least: i64) -> Usage {
    let c = k.c;
    let mut team: BTreeMap<String, f64> = BTreeMap::new();
    let mut quota: BTreeMap<(String, usize), f64> = BTreeMap::new();
    for (t0, model, pool, amount, prio) in &k.charges {
        if *prio < at_least {
            continue;
        }
        for t in c.team_chain(t0) {
            *team.entry(t.name.clone()).or_default() += amount;
            for (qi, q) in t.quotas.iter().enumerate() {
                if q.covers(model, pool.as_deref()) {
                    *quota.entry((t.name.clone(), qi)).or_default() += amount;
                }
            }
        }
    }
    Usage { team, quota }
}

pub(super) fn check_teams(k: &mut Walk) {
    let c = k.c;
    let Usage { team, quota } = usage(k, i64::MIN);
    for t in c.teams.values() {
        k.subject = Some(t.span);
        let used = team.get(&t.name).copied().unwrap_or(0.0);
        if used > t.ceiling() as f64 + EPS {
            k.fail(
                Invariant::Team,
                format!(
                    "team `{}` holds {used:.2} GPUs, above its ceiling of {}",
                    t.name,
                    t.ceiling()
                ),
            );
        }
        for (qi, q) in t.quotas.iter().enumerate() {
            let used = quota.get(&(t.name.clone(), qi)).copied().unwrap_or(0.0);
            if used > q.ceiling() as f64 + EPS {
                let what = q.model.as_deref().or(q.pool.as_deref()).unwrap_or("-");
                k.fail(
                    Invariant::Team,
                    format!(
                        "team `{}` holds {used:.2} GPUs of `{what}`, above its quota ceiling of {}",
                        t.name,
                        q.ceiling()
                    ),
                );
            }
        }
    }
}

/// Packed classes (`requests`) are not judged here: CPU and host memory, not only GPUs,
/// decide where they fit.
///
/// A whole-GPU gang class left out for capacity must not fit into free GPUs plus GPUs
/// held by strictly lower-priority gangs, in some domain of its required tier. "Fits"
/// is judged conservatively: a gang needs `ceil(size / per-node)` distinct nodes, each
/// with at least `per-node` such GPUs of a model the class accepts.
pub(super) fn check_priority(k: &mut Walk, p: &Placement) {
    let c = k.c;
    let value = |prio: &str| c.priority(prio).map(|x| x.value).unwrap_or(0);
    let classes = left_out_for_capacity(c, p);
    if classes.is_empty() {
        return;
    }
    let whole: BTreeSet<NodeIdx> = p
        .pools
        .iter()
        .filter(|x| x.mode == PoolMode::WholeGpu)
        .filter_map(|x| c.node_index.get(&x.node).copied())
        .collect();
    // GPUs held by gangs, with the holder's priority value.
    let mut held: Vec<(i64, NodeIdx, u32)> = Vec::new();
    for other in &p.workloads {
        let v = value(&other.priority);
        for ng in other.gangs.iter().flat_map(|g| &g.nodes) {
            if let Some(&ni) = c.node_index.get(&ng.node) {
                held.extend(ng.gpus.iter().map(|&gi| (v, ni, gi)));
            }
        }
    }
    // Nodes the device plugin shares for fractions (`model::sharing`): no whole GPU
    // there while fractions of that priority or above hold it, with the highest.
    let mut shared: BTreeMap<NodeIdx, i64> = BTreeMap::new();
    for other in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == other.name) else {
            continue;
        };
        if !(1..1000).contains(&w.packed_gpu_milli()) || c.fraction_slots(w).is_none() {
            continue;
        }
        let v = value(&other.priority);
        for e in &other.packed {
            if let Some(&ni) = c.node_index.get(&e.node) {
                let top = shared.entry(ni).or_insert(v);
                *top = (*top).max(v);
            }
        }
    }
    let levels: BTreeSet<i64> = classes.iter().map(|w| value(&w.priority)).collect();
    for mine in levels {
        // Lower-priority classes could give their share of a ceiling or quota back.
        let usage = usage(k, mine);
        let open: BTreeSet<NodeIdx> = whole
            .iter()
            .copied()
            .filter(|n| shared.get(n).is_none_or(|v| *v < mine))
            .collect();
        let avail = available(k, &open, &held, mine);
        let cpu = cpu_used(c, p, mine);
        for w in classes.iter().filter(|w| value(&w.priority) == mine) {
            k.subject = Some(w.span);
            // A Slurm job takes a CPU: a node needs one free for each pod.
            let slurm = c.authority_of(w) == Some(crate::model::Authority::Slurm);
            let cpu_free = |ni: NodeIdx| {
                !slurm
                    || c.node_cpu_milli(ni)
                        .is_none_or(|cap| cap >= cpu.get(&ni).copied().unwrap_or(0) + 1000)
            };
            if let Some(domain) = fits_in(c, w, &usage, &avail, &cpu_free) {
                k.fail(Invariant::Priority, format!(
                    "higher-priority `{}` left out while lower-priority classes hold capacity (it fits in `{domain}`)",
                    w.name
                ));
            }
        }
    }
}

/// CPU (1/1000 cores) per node that work of priority `mine` or above holds: packed
/// replicas' requests and a CPU per pod of Slurm gangs.
fn cpu_used(c: &crate::model::Cluster, p: &Placement, mine: i64) -> BTreeMap<NodeIdx, u64> {
    let mut out: BTreeMap<NodeIdx, u64> = BTreeMap::new();
    for wp in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        if c.priority(&w.priority).map(|x| x.value).unwrap_or(0) < mine {
            continue;
        }
        for e in &wp.packed {
            if let Some(&ni) = c.node_index.get(&e.node) {
                *out.entry(ni).or_default() += w.cpu_milli * e.replicas as u64;
            }
        }
        if c.authority_of(w) == Some(crate::model::Authority::Slurm) {
            for ng in wp.gangs.iter().flat_map(|g| &g.nodes) {
                if let Some(&ni) = c.node_index.get(&ng.node) {
                    *out.entry(ni).or_default() += 1000;
                }
            }
        }
    }
    out
}

/// Whole-GPU gang classes with replicas left out for capacity.
fn left_out_for_capacity<'c>(c: &'c crate::model::Cluster, p: &Placement) -> Vec<&'c Workload> {
    p.workloads
        .iter()
        .filter(|wp| {
            wp.unplaced
                .iter()
                .any(|u| u.reason == crate::placement::UnplacedReason::Capacity)
        })
        .filter_map(|wp| c.workloads.iter().find(|w| w.name == wp.name))
        .filter(|w| kind(w) == Kind::Gang && !w.packed())
        .collect()
}

/// GPUs available to priority `mine` per (node, model): free on whole-GPU nodes, or
/// held by lower-priority gangs on nodes that are not cordoned.
fn available<'c>(
    k: &Walk<'c>,
    whole: &BTreeSet<NodeIdx>,
    held: &[(i64, NodeIdx, u32)],
    mine: i64,
) -> BTreeMap<(NodeIdx, &'c str), u32> {
    let c = k.c;
    let mut avail: BTreeMap<(NodeIdx, &str), u32> = BTreeMap::new();
    for &ni in whole {
        for g in c.nodes[ni].usable_gpus() {
            if !k.owner.contains_key(&(ni, g.index)) {
                if let Some(m) = c.model_of(g) {
                    *avail.entry((ni, m.name.as_str())).or_default() += 1;
                }
            }
        }
    }
    for &(v, ni, gi) in held {
        if v < mine && !c.nodes[ni].cordon {
            let model = c.nodes[ni]
                .gpus
                .iter()
                .find(|g| g.index == gi)
                .and_then(|g| c.model_of(g));
            if let Some(m) = model {
                *avail.entry((ni, m.name.as_str())).or_default() += 1;
            }
        }
    }
    avail
}

/// The first domain of the class's required tier where one more gang fits into
/// `avail`, within its team's ceilings and quotas (no room there keeps it out, not
/// capacity).
fn fits_in(
    c: &crate::model::Cluster,
    w: &Workload,
    usage: &Usage,
    avail: &BTreeMap<(NodeIdx, &str), u32>,
    cpu_free: &dyn Fn(NodeIdx) -> bool,
) -> Option<String> {
    let tier = w.required_tier.unwrap_or(Tier::Cluster);
    let (size, per) = gang_shape(c, w);
    let per = per.clamp(1, size.max(1));
    let accepts = |m: &str| {
        c.models.get(m).is_some_and(|gm| {
            w.accepts(m)
                && w.memory
                    .is_none_or(|mem| mem.0 <= gm.memory.0 * w.gpus_per_replica.max(1) as u64)
        })
    };
    let room = |ni: NodeIdx, m: &str| {
        let pool = c.pool_of(ni).map(|p| p.name.as_str());
        c.team_chain(&w.team).iter().all(|t| {
            let used = usage.team.get(&t.name).copied().unwrap_or(0.0);
            used + size as f64 <= t.ceiling() as f64 + EPS
                && t.quotas.iter().enumerate().all(|(qi, q)| {
                    let used = usage.quota.get(&(t.name.clone(), qi)).copied();
                    !q.covers(m, pool)
                        || used.unwrap_or(0.0) + size as f64 <= q.ceiling() as f64 + EPS
                })
        })
    };
    for d in c.topology.domains_ref(tier) {
        let mut per_node: BTreeMap<NodeIdx, u32> = BTreeMap::new();
        for (ni, m, _) in &d.per_node {
            // Spot nodes only for a class that may be interrupted.
            let usable = !c.node_spot(*ni) || c.may_use_spot(w);
            if usable && accepts(m) && room(*ni, m) {
                let n = avail.get(&(*ni, m.as_str())).copied().unwrap_or(0);
                *per_node.entry(*ni).or_default() += n;
            }
        }
        // Nodes that can take one share (the class's GPUs per node), per side of spot
        // capacity when a gang may not straddle it.
        let mut sides: BTreeMap<Option<bool>, u32> = BTreeMap::new();
        for (ni, n) in &per_node {
            if *n >= per && cpu_free(*ni) {
                *sides.entry(c.gang_side(w, *ni)).or_default() += 1;
            }
        }
        let nodes = sides.values().copied().max().unwrap_or(0);
        if nodes > 0 && nodes >= size.max(1).div_ceil(per) {
            return Some(d.name.clone());
        }
    }
    None
}

pub(super) fn check_summary(k: &mut Walk, p: &Placement) {
    let c = k.c;
    k.subject = None;
    let total = c.usable_gpu_count() as u32;
    if p.summary.gpus_total != total {
        k.fail(
            Invariant::Summary,
            format!(
                "summary: gpus_total is {}, the cluster has {total} usable GPUs",
                p.summary.gpus_total
            ),
        );
    }
    let alloc: f64 = k.allocated.values().map(|v| v.min(1.0)).sum();
    if (alloc - p.summary.gpus_allocated).abs() > 1e-3 {
        k.fail(
            Invariant::Summary,
            format!(
                "summary: gpus_allocated is {}, the placement holds {alloc:.4}",
                p.summary.gpus_allocated
            ),
        );
    }
    for wp in &p.workloads {
        let held = k.placed.get(&wp.name).copied().unwrap_or(0.0);
        if (held - wp.gpus_placed).abs() > 1e-3 {
            k.fail(
                Invariant::Summary,
                format!(
                    "`{}`: gpus_placed is {}, its GPUs add up to {held:.4}",
                    wp.name, wp.gpus_placed
                ),
            );
        }
    }
}
