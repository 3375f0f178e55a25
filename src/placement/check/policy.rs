//! Policy invariants of a placement: team ceilings (parents and quotas), priority
//! order (no higher-priority gang left out while lower-priority classes hold capacity
//! that fits it) and the summary totals.

use super::{EPS, Kind, Walk, gang_shape, kind};
use crate::model::{NodeIdx, Tier};
use crate::placement::{Placement, PoolMode};
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn check_teams(k: &mut Walk) {
    let c = k.c;
    let mut team: BTreeMap<String, f64> = BTreeMap::new();
    let mut quota: BTreeMap<(String, usize), f64> = BTreeMap::new();
    for (t0, model, pool, amount) in &k.charges {
        for t in c.team_chain(t0) {
            *team.entry(t.name.clone()).or_default() += amount;
            for (qi, q) in t.quotas.iter().enumerate() {
                if q.covers(model, pool.as_deref()) {
                    *quota.entry((t.name.clone(), qi)).or_default() += amount;
                }
            }
        }
    }
    for t in c.teams.values() {
        let used = team.get(&t.name).copied().unwrap_or(0.0);
        if used > t.ceiling() as f64 + EPS {
            k.errors.push(format!(
                "team `{}` holds {used:.2} GPUs, above its ceiling of {}",
                t.name,
                t.ceiling()
            ));
        }
        for (qi, q) in t.quotas.iter().enumerate() {
            let used = quota.get(&(t.name.clone(), qi)).copied().unwrap_or(0.0);
            if used > q.ceiling() as f64 + EPS {
                let what = q.model.as_deref().or(q.pool.as_deref()).unwrap_or("-");
                k.errors.push(format!(
                    "team `{}` holds {used:.2} GPUs of `{what}`, above its quota ceiling of {}",
                    t.name,
                    q.ceiling()
                ));
            }
        }
    }
}

/// A whole-GPU gang class left out for capacity must not fit into free GPUs plus GPUs
/// held by strictly lower-priority gangs, per domain of its required tier.
pub(super) fn check_priority(k: &mut Walk, p: &Placement) {
    let c = k.c;
    let value = |prio: &str| c.priority(prio).map(|x| x.value).unwrap_or(0);
    let whole: BTreeSet<NodeIdx> = p
        .pools
        .iter()
        .filter(|x| x.mode == PoolMode::WholeGpu)
        .filter_map(|x| c.node_index.get(&x.node).copied())
        .collect();
    for wp in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        if kind(w) != Kind::Gang || !wp.unplaced.iter().any(|u| u.reason == "capacity") {
            continue;
        }
        let mine = value(&w.priority);
        let mut lower: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
        for other in p.workloads.iter().filter(|o| value(&o.priority) < mine) {
            for g in &other.gangs {
                for ng in &g.nodes {
                    if let Some(&ni) = c.node_index.get(&ng.node) {
                        lower.extend(ng.gpus.iter().map(|&gi| (ni, gi)));
                    }
                }
            }
        }
        let available = |ni: NodeIdx, gi: u32| {
            lower.contains(&(ni, gi)) || (whole.contains(&ni) && !k.owner.contains_key(&(ni, gi)))
        };
        let tier = w.required_tier.unwrap_or(Tier::Cluster);
        let (size, _) = gang_shape(w, 8);
        for d in c.topology.domains_ref(tier) {
            let mut per_node: BTreeMap<NodeIdx, u32> = BTreeMap::new();
            for &(ni, gi) in &d.gpus {
                let ok_model = c.nodes[ni]
                    .gpus
                    .iter()
                    .find(|g| g.index == gi)
                    .and_then(|g| c.model_of(g))
                    .is_some_and(|m| {
                        w.accepts(&m.name)
                            && w.memory.is_none_or(|mem| {
                                mem.0 <= m.memory.0 * w.gpus_per_replica.max(1) as u64
                            })
                    });
                if ok_model && available(ni, gi) {
                    *per_node.entry(ni).or_default() += 1;
                }
            }
            let fit: u32 = per_node
                .iter()
                .map(|(ni, n)| {
                    let per = gang_shape(w, c.nodes[*ni].gpus.len() as u32).1.max(1);
                    n / per * per
                })
                .sum();
            if fit >= size {
                k.errors.push(format!(
                    "higher-priority `{}` left out while lower-priority classes hold capacity (it fits in `{}`)",
                    w.name, d.name
                ));
                break;
            }
        }
    }
}

pub(super) fn check_summary(k: &mut Walk, p: &Placement) {
    let c = k.c;
    let total = c.usable_gpu_count() as u32;
    if p.summary.gpus_total != total {
        k.errors.push(format!(
            "summary: gpus_total is {}, the cluster has {total} usable GPUs",
            p.summary.gpus_total
        ));
    }
    let alloc: f64 = k.allocated.values().map(|v| v.min(1.0)).sum();
    if (alloc - p.summary.gpus_allocated).abs() > 1e-3 {
        k.errors.push(format!(
            "summary: gpus_allocated is {}, the placement holds {alloc:.4}",
            p.summary.gpus_allocated
        ));
    }
    for wp in &p.workloads {
        let held = k.placed.get(&wp.name).copied().unwrap_or(0.0);
        if (held - wp.gpus_placed).abs() > 1e-3 {
            k.errors.push(format!(
                "`{}`: gpus_placed is {}, its GPUs add up to {held:.4}",
                wp.name, wp.gpus_placed
            ));
        }
    }
}
