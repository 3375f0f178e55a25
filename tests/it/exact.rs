//! Issue 14: the plan the user gets is the plan the solver proved.
//!
//! - what the solver reports (status, bound, gap, per level) is true of the final
//!   placement: a bound the search could not close is reported as a gap, and a
//!   placement that admits less than the solver's model is reported as such;
//! - a feasible instance is never refused: a placement failing the checker gives way to
//!   the greedy one, with status `fallback` and a note;
//! - small clusters with non-power-of-two nodes, GPUs down and gangs sharing nodes are
//!   solved exactly (the brute-force oracle properties live in tests/it/ilp_props.rs).

use crate::common;

use crate::common::{Scratch, codes, load_text, plan};
use gpuplan::model::Cluster;
use gpuplan::placement::{self, Placement};
use gpuplan::solve::{self, Options, SolverKind};

/// Plans with special solver options (`pipeline::place` takes the command's settings
/// only): solve, build, and the checker must accept the placement.
fn plan_with(c: &Cluster, opts: &Options) -> Placement {
    let (a, info) = solve::run(c, opts);
    let p = placement::build(c, &a, &info);
    let errors = placement::check(c, &p);
    assert!(errors.is_empty(), "{errors:#?}");
    p
}

/// Two nodes of one leaf, each with a GPU down (7 usable: node patterns, not volume
/// packing). A class of 6-GPU gangs (3 GPUs on each of two nodes) and a 7-GPU replica
/// compete: any placement holds one of them (the gang leaves 4 GPUs on each node), but
/// the LP relaxation puts both of the gang's shares on one node (half a "two shares of
/// one shape need two gangs" constraint each) and the replica on the other: 13 GPUs
/// against the true 7.
const LOOSE: &str = r#"
cluster "loose"
node-class "hgx" {
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
}
nodes "n-[1-2]" class="hgx" {
    node "n-1" gpus-down="7"
    node "n-2" gpus-down="7"
}
fabric {
    leaf "l1" nodes="n-[1-2]"
}
team "ml" guarantee=0 burst=64
priority "p" value=10
training "pair" team="ml" priority="p" {
    gang gpus=6 gpus-per-node=3
    topology required="leaf"
}
inference "big" team="ml" priority="p" {
    isolation "whole-gpu"
    gpus 7
}
"#;

#[test]
fn a_loose_relaxation_the_search_cannot_close_is_reported_as_a_gap() {
    let c = load_text(LOOSE);
    // Column generation only: the integer program over generated patterns proves
    // nothing about patterns it does not hold, so only the LP bound counts.
    let p = plan_with(
        &c,
        &Options {
            enumerate: false,
            ..Options::default()
        },
    );
    let s = &p.solver;
    assert_eq!(s.objective, 7.0, "{s:?}");
    let bound = s.bound.expect("the ILP reports a bound");
    assert!(bound > 7.0 + 1e-6 && bound <= 13.0 + 1e-6, "{s:?}");
    let gap = s.gap.expect("and a gap");
    assert!(gap > 0.0, "{s:?}");
    assert_eq!(s.status, gpuplan::solve::SolveStatus::Feasible);
    assert_eq!(s.levels.len(), 1);
    assert_eq!(s.levels[0].admitted, 7.0);
    assert!(s.levels[0].gap > 0.0);
    // With every pattern enumerated the same instance is proven optimal: gap 0 is
    // then true of the placement.
    let p = plan(&c, SolverKind::Ilp);
    assert_eq!(p.solver.objective, 7.0);
    assert_eq!(p.solver.gap, Some(0.0), "{:?}", p.solver);
    assert_eq!(p.solver.status, gpuplan::solve::SolveStatus::Optimal);
}

/// The summary is computed from the placement the user gets: a placement that admits
/// less than the solver's model said (as if a gang were lost on the way) reports the
/// difference as a gap and is not `optimal`.
#[test]
fn the_gap_compares_the_bound_with_the_final_placement() {
    let c = load_text(LOOSE);
    // The raw assignment, tampered with before the placement is built.
    let (a, info) = solve::run(&c, &Options::default());
    let mut lost = a.clone();
    lost.gangs.clear();
    let p = placement::build(&c, &lost, &info);
    // The 7-GPU replica is a one-node gang: gone with the gangs.
    assert_eq!(p.solver.objective, 0.0);
    assert_eq!(p.solver.bound, Some(7.0));
    assert_eq!(p.solver.gap, Some(1.0));
    assert_eq!(p.solver.status, gpuplan::solve::SolveStatus::Feasible);
    // Greedy proves nothing: no bound, no gap.
    let g = plan(&c, SolverKind::Greedy);
    assert_eq!((g.solver.bound, g.solver.gap), (None, None));
    assert_eq!(g.solver.status, gpuplan::solve::SolveStatus::Heuristic);
}

/// The reported case: one GPU down on one node; every class fits. `plan` exits 0 and
/// places everything (it used to exit 1 with GP901).
#[test]
fn issue14_one_gpu_down_is_planned_in_full() {
    let s = Scratch::new("exact-gp901");
    s.copy_in("tests/regressions/issue14_gp901_gpu_down.kdl", "c.kdl");
    let r = s.run(&["plan", "c.kdl", "--format", "json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(!codes(&r).contains(&"GP901".to_string()), "{}", r.2);
    let doc: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    for w in doc["placement"]["workloads"].as_array().unwrap() {
        assert_eq!(w["replicas_placed"], w["replicas_requested"], "{w}");
    }
    assert_eq!(doc["placement"]["solver"]["status"], "optimal");
}

/// Each level's bound is valid: on the examples no placement admits more than it (the
/// ILP's own placement reaches it where it says `optimal`).
#[test]
fn every_example_reports_bounds_its_placement_respects() {
    for dir in common::examples() {
        let c = common::load_dir(&dir);
        let dir = dir.display();
        let p = plan(&c, SolverKind::Ilp);
        let g = plan(&c, SolverKind::Greedy);
        let s = &p.solver;
        for (l, gl) in s.levels.iter().zip(&g.solver.levels) {
            assert!(l.bound + 1e-6 >= l.admitted, "{dir}: {l:?}");
            assert!(
                l.bound + 1e-6 >= gl.admitted || s.levels.first() != Some(l),
                "{dir}: greedy beats the first level's bound"
            );
        }
        if s.status == gpuplan::solve::SolveStatus::Optimal {
            assert_eq!(s.gap, Some(0.0), "{dir}");
        }
    }
}
