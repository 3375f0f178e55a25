//! Keeping the previous placement: stage-only terms of the compaction objective.
//!
//! Per node group, the previous placement held some GPUs of each gang shape, some
//! replicas of each packed class and some nodes in each pool mode. A continuous keep
//! variable per such pair is bounded by both what was held and what the plan now puts
//! there; the objective rewards it ([`KEEP_GPU`] per GPU, [`KEEP_NODE`] per node). The
//! counts stay aggregated (variables grow with groups, not GPUs); which node of a group
//! gets what is the post-pass's choice, and it prefers the previous nodes.

use super::formulation::{Col, Formulation};
use super::problem::Problem;
use crate::model::{Cluster, NodeIdx};
use crate::solve::previous::{KEEP_GPU, KEEP_NODE, Previous};
use good_lp::Expression;
use std::collections::BTreeMap;

/// Adds the keep variables and their bounds to `f`; returns the reward to subtract
/// from the compaction cost.
pub fn terms(c: &Cluster, p: &Problem, f: &mut Formulation, prev: &Previous) -> Expression {
    let mut group_of: BTreeMap<NodeIdx, usize> = BTreeMap::new();
    for (gi, g) in p.groups.iter().enumerate() {
        for &n in &g.nodes {
            group_of.insert(n, gi);
        }
    }
    let mut reward = Expression::from(0.0);

    // Gang GPUs per (shape, group).
    let shape_of = p.shape_of();
    let mut held: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for ((w, n), gpus) in prev.gang_gpus_by_node() {
        if let (Some(&si), Some(&gi)) = (shape_of.get(&w), group_of.get(&n)) {
            *held.entry((si, gi)).or_default() += gpus as f64;
        }
    }
    let mut now: BTreeMap<(usize, usize), Vec<(f64, Col)>> = BTreeMap::new();
    for (&(si, _, gi), y) in &f.y_local {
        now.entry((si, gi))
            .or_default()
            .push((p.shapes[si].gpus as f64, *y));
    }
    for (&(si, _, gi), x) in &f.x {
        now.entry((si, gi))
            .or_default()
            .push((p.shapes[si].per_node as f64, *x));
    }
    for (key, gpus) in held {
        let Some(terms) = now.get(&key) else { continue };
        reward += KEEP_GPU * bounded(f, gpus, terms);
    }

    // Packed replicas per (class, group), weighted by their GPU share (a CPU-only
    // replica counts as a tenth of a GPU).
    let mut held: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for ((w, n), k) in prev.packed_by_node() {
        if let Some(&gi) = group_of.get(&n) {
            *held.entry((w, gi)).or_default() += k as f64;
        }
    }
    for ((w, gi), k) in held {
        let Some(v) = f.pk.get(&(w, gi)).copied() else {
            continue;
        };
        let weight = (c.workloads[w].packed_gpu_milli() as f64 / 1000.0).max(0.1);
        reward += KEEP_GPU * weight * bounded(f, k, &[(1.0, v)]);
    }

    // MIG and shared replicas per (class, GPU model): the ILP splits them by model only
    // (where on that model is the post-pass's choice), weighted by their GPU-equivalent.
    let mut held: BTreeMap<(usize, String), f64> = BTreeMap::new();
    let model_at = |n: NodeIdx, g: u32| {
        c.nodes[n]
            .gpus
            .iter()
            .find(|x| x.index == g)
            .and_then(|x| x.model.clone())
    };
    for (w, v) in &prev.mig_instances {
        for (n, g, _) in v {
            if let Some(m) = model_at(*n, *g) {
                *held.entry((*w, m)).or_default() += 1.0;
            }
        }
    }
    for (w, v) in &prev.shares {
        for (n, g, k) in v {
            if let Some(m) = model_at(*n, *g) {
                *held.entry((*w, m)).or_default() += *k as f64;
            }
        }
    }
    for (key, k) in held {
        let Some(v) = f.r.get(&key).copied() else {
            continue;
        };
        let weight = p.equiv.get(&key).copied().unwrap_or(0.0).max(0.01);
        reward += KEEP_GPU * weight * bounded(f, k, &[(1.0, v)]);
    }

    // Nodes per (group, pool mode).
    let mut held: BTreeMap<(usize, crate::placement::PoolMode), f64> = BTreeMap::new();
    for (n, mode) in prev.node_mode.iter().enumerate() {
        if let (Some(mode), Some(&gi)) = (mode, group_of.get(&n)) {
            *held.entry((gi, *mode)).or_default() += 1.0;
        }
    }
    for (key, k) in held {
        let Some(v) = f.n.get(&key).copied() else {
            continue;
        };
        reward += KEEP_NODE * bounded(f, k, &[(1.0, v)]);
    }
    reward
}

/// A new variable `s` with `0 <= s <= held` and `s <= sum(terms)`.
fn bounded(f: &mut Formulation, held: f64, terms: &[(f64, Col)]) -> Expression {
    let s = f.add_continuous(0.0, held);
    let now = super::formulation::expr(terms.iter().copied());
    f.constraints.push(Expression::from(s.0).leq(now));
    Expression::from(s.0)
}
