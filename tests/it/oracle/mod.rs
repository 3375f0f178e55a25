//! A brute-force oracle for tiny clusters: the lexicographic optimum of admitted
//! GPU-equivalents per priority level (highest level first), found by exhaustive search
//! and independent of `crates/solve/src/solve` (it reads `gpuplan::model` and `gpuplan::catalog`,
//! takes each MIG class's right-sized profile from `solve::sizing`, the model's
//! vocabulary, and reports a `solve::Assignment` so that `placement::build` and
//! `placement::check` can judge its witness).
//!
//! # What it searches
//!
//! Exactly the placements `placement::check` accepts (`crates/solve/src/placement/check`), each
//! replica all-or-nothing:
//! - gangs (training, whole-GPU inference): `gpus-per-node` GPUs (default: the node's
//!   GPUs, down ones included, or the gang if smaller; a whole-GPU replica: all of it)
//!   on distinct nodes inside one domain of the required tier, at most one node holding
//!   fewer, on nodes of an accepted model;
//! - one pool mode per node (whole-GPU for gangs and packed replicas, MIG, time-slice,
//!   MPS), and a declared pool's mode where one is declared;
//! - MIG: one instance of the class's right-sized profile per replica, each GPU's
//!   instances forming a layout `catalog::fits_profiles` accepts;
//! - time-slice / MPS: GPUs holding one class, at most `per-gpu` replicas;
//! - packed classes: CPU and host memory per node, whole-GPU replicas on GPUs of their
//!   own, fractional replicas on GPUs holding nothing else, at most 100% each;
//! - team ceilings (the whole parent chain) and per-model/pool quotas, in
//!   GPU-equivalents: a GPU of a gang or whole-GPU replica counts 1, a MIG instance its
//!   memory slices over the GPU's, a shared replica `1 / per-gpu`, a packed replica its
//!   fraction (`gpus` for a whole-GPU one).
//!
//! All amounts are integers in units of `1 / unit` GPU (`unit` a multiple of 1000, of
//! every `per-gpu` and of the MIG memory slices), so ceilings are compared exactly.
//!
//! # Why it is exact
//!
//! Phase 1 enumerates, class by class and replica by replica, every shape of every gang
//! (or leaves the rest of the class out); phase 2 then enumerates, node by node, every
//! combination of single-node replicas the node can hold beside them. Within a node,
//! GPUs are interchangeable (only counts matter; down GPUs are not counted), so
//! configurations are enumerated by replica counts per class, with exhaustive
//! feasibility checks (MIG layouts by the catalog's placement rules, bin packing for
//! fractional shares). Values per level are compared lexicographically, an order
//! compatible with addition, so memoising the best completion of each state (classes
//! and replicas left, free GPUs, node modes, ledger) loses nothing; states are keyed up
//! to permutations of interchangeable nodes, which have equal completions.
//!
//! Not supported (the search panics): fixed `mig layout`s, `required="nvlink"`, nodes
//! mixing GPU models. CPU-only packed classes are never placed (they admit nothing).
//! The checker's priority-order rule is not a constraint here: a lexicographic optimum
//! never leaves a higher-priority gang out while lower-priority gangs hold room for it
//! that its team's ceilings and quotas allow (the rule's own condition).
//!
//! Two more checker facts the search deliberately does not exploit: it accepts any MIG
//! profile whose memory holds the footprint (the oracle uses the right-sized one, so
//! that admission is not inflated by oversized instances), and it lets two whole-GPU
//! replicas of one packed class claim the same GPU (their claims carry no replica
//! number); the oracle gives each its own GPUs.
//!
//! [`climb`] attacks the search's completeness: random walks over placements the
//! checker accepts must never admit more.

#![allow(dead_code)] // each test binary uses its own subset

pub mod climb;
mod node;
mod problem;
mod search;
mod witness;

use gpuplan::model::Cluster;
use gpuplan::placement::{self, Placement};
use gpuplan::solve::{Assignment, SolveInfo};
use std::collections::BTreeMap;

pub use problem::priority_levels;

/// The oracle's answer.
#[derive(Clone, Debug)]
pub struct Optimum {
    /// Admitted GPU-equivalents per priority level, highest first (as [`per_level`]).
    pub levels: Vec<f64>,
    /// One placement reaching it.
    pub assignment: Assignment,
    /// Memoised states: the size of the search.
    pub states: usize,
}

/// The lexicographic optimum of admitted GPU-equivalents per priority level.
pub fn solve(c: &Cluster) -> Optimum {
    let p = problem::Problem::new(c);
    let mut s = search::Search::new(&p);
    let (best, choice) = s.run();
    Optimum {
        levels: best.iter().map(|&u| u as f64 / p.unit as f64).collect(),
        assignment: witness::assignment(&p, &choice),
        states: s.states(),
    }
}

/// The oracle's witness as a placement (`placement::build`).
pub fn placement(c: &Cluster, o: &Optimum) -> Placement {
    let info = SolveInfo {
        name: "oracle",
        status: gpuplan::solve::SolveStatus::Optimal,
        ..SolveInfo::default()
    };
    placement::build(c, &o.assignment, &info)
}

/// The independent checker's verdict on a plan (every rule, the priority rule included).
pub fn check(c: &Cluster, p: &Placement) -> Vec<gpuplan::placement::Violation> {
    placement::check(c, p)
}

/// Admitted GPU-equivalents of a placement per priority level, highest first (every
/// level a workload of the model uses).
pub fn per_level(c: &Cluster, p: &Placement) -> Vec<f64> {
    let levels = priority_levels(c);
    let value = |prio: &str| c.priority(prio).map(|x| x.value).unwrap_or(i64::MIN);
    let of: BTreeMap<&str, i64> = c
        .workloads
        .iter()
        .map(|w| (w.name.as_str(), value(&w.priority)))
        .collect();
    let mut out = vec![0.0; levels.len()];
    for w in &p.workloads {
        let v = of[w.name.as_str()];
        let i = levels.iter().position(|x| *x == v).unwrap();
        out[i] += w.gpus_placed;
    }
    out
}

/// `a` is lexicographically at least `b` (with a small tolerance per level).
pub fn lex_geq(a: &[f64], b: &[f64]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if *x > *y + 1e-6 {
            return true;
        }
        if *x < *y - 1e-6 {
            return false;
        }
    }
    true
}

/// Equal per level within 1e-6.
pub fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
}
