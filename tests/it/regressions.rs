//! Regression cases: failing inputs found by the property tests (`tests/it/ilp_props.rs`,
//! `tests/it/plan_props.rs`) are kept here for good. Each one is saved as a KDL file under
//! `tests/regressions/`, named `<issue or solver>_<symptom>.kdl`, with a comment saying
//! what failed, and gets its own test here: planned in-process and judged against the
//! oracle (`tests/it/oracle`) and the checker ([`plans_like_the_oracle`]), or, when the
//! symptom was in a command, by running the real binary. A case stays `#[ignore]`d
//! (with the reason) until its fix lands.
//!
//! Every saved file is also checked as a whole: it validates, and the oracle's witness
//! passes the checker.

use crate::common;
use crate::oracle;

use crate::common::Scratch;
use gpuplan::model::Cluster;
use gpuplan::placement;
use gpuplan::solve::SolverKind;
use gpuplan::source::SourceMap;
use oracle::{lex_geq, per_level};
use std::path::{Path, PathBuf};

const DIR: &str = "tests/regressions";

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(DIR).join(name)
}

/// Every saved case, sorted.
fn saved() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(path(""))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
        .collect();
    v.sort();
    v
}

fn load(path: &Path) -> Result<Cluster, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut sources = SourceMap::new();
    sources.add(path.display().to_string(), text);
    common::try_load(&sources).map_err(|errors| format!("invalid: {errors:#?}"))
}

/// The oracle's optimum per priority level, once its witness passed the checker.
fn optimum(c: &Cluster) -> Result<Vec<f64>, String> {
    let o = oracle::solve(c);
    let errors = oracle::check(c, &oracle::placement(c, &o));
    if errors.is_empty() {
        Ok(o.levels)
    } else {
        Err(format!(
            "the oracle's witness fails the checker: {errors:#?}"
        ))
    }
}

/// Plans the saved case `name` with `solver`: the plan must pass the checker and admit
/// exactly the oracle's optimum per priority level (`exact`), or at most it.
pub fn plans_like_the_oracle(name: &str, solver: SolverKind, exact: bool) -> Result<(), String> {
    let c = load(&path(name))?;
    let want = optimum(&c)?;
    // Unchecked: the checker's violations are reported, and `pipeline::place` would hide
    // an ILP placement that fails the checker behind greedy's.
    let p = common::unchecked(&c, solver);
    let errors = oracle::check(&c, &p);
    if !errors.is_empty() {
        return Err(format!("{solver:?}'s plan fails the checker: {errors:#?}"));
    }
    let got = per_level(&c, &p);
    let ok = if exact {
        oracle::same(&got, &want)
    } else {
        lex_geq(&want, &got)
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{solver:?} admits {got:?}, the oracle {want:?}"))
    }
}

#[test]
fn every_saved_case_validates_and_the_oracle_passes_the_checker() {
    let files = saved();
    assert!(!files.is_empty(), "no saved cases under {DIR}");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let r = load(p).and_then(|c| optimum(&c));
            r.err().map(|e| format!("{}: {e}", p.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

// ------------------------------------------------------------------ issue 14

const ISSUE14: &str = "issue14_gp901_gpu_down.kdl";

/// `plan` failed its own check (GP901) with a GPU down; every class fits (the oracle
/// admits all 20 GPUs).
#[test]
fn issue14_gp901_gpu_down_plan_places_everything() {
    let s = Scratch::new("regress-issue14");
    s.copy_in(&format!("{DIR}/{ISSUE14}"), "cluster.kdl");
    let (code, out, err) = s.run(&["plan", "cluster.kdl", "--format", "json", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON plan");
    for w in doc["placement"]["workloads"].as_array().unwrap() {
        assert_eq!(
            w["replicas_placed"], w["replicas_requested"],
            "{} left out: {}",
            w["name"], w["unplaced"]
        );
    }
}

#[test]
fn issue14_gp901_gpu_down_ilp_matches_the_oracle() {
    plans_like_the_oracle(ISSUE14, SolverKind::Ilp, true).unwrap();
}

#[test]
fn issue14_gp901_gpu_down_greedy_is_at_most_the_oracle() {
    plans_like_the_oracle(ISSUE14, SolverKind::Greedy, false).unwrap();
}

// ------------------------------------------------------------------ greedy and quotas

const GREEDY_QUOTA: &str = "greedy_quota_first_fit.kdl";

#[test]
fn greedy_quota_first_fit_greedy_matches_the_oracle() {
    plans_like_the_oracle(GREEDY_QUOTA, SolverKind::Greedy, true).unwrap();
}

#[test]
fn greedy_quota_first_fit_ilp_matches_the_oracle() {
    plans_like_the_oracle(GREEDY_QUOTA, SolverKind::Ilp, true).unwrap();
}

// ------------------------------------------------------------------ the checker and quotas

const CHECKER_QUOTA: &str = "checker_priority_ignores_quota.kdl";

/// The optimal plan passes the whole checker, its priority rule included.
#[test]

fn checker_priority_ignores_quota_optimum_passes_the_checker() {
    let c = load(&path(CHECKER_QUOTA)).unwrap();
    let o = oracle::solve(&c);
    assert_eq!(o.levels, vec![3.0]);
    let errors = placement::check(&c, &oracle::placement(&c, &o));
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn checker_priority_ignores_quota_ilp_matches_the_oracle() {
    plans_like_the_oracle(CHECKER_QUOTA, SolverKind::Ilp, true).unwrap();
}

// ------------------------------------------------------------------ unlike replica steps

/// The admission stage stopped within half the smallest replica (0.15 GPUs) although
/// totals of 0.3- and 1-GPU replicas differ by 0.1.
#[test]
fn ilp_unlike_steps_fraction_vs_gang_ilp_matches_the_oracle() {
    plans_like_the_oracle(
        "ilp_unlike_steps_fraction_vs_gang.kdl",
        SolverKind::Ilp,
        true,
    )
    .unwrap();
}

#[test]
fn ilp_unlike_steps_mig_vs_fraction_ilp_matches_the_oracle() {
    plans_like_the_oracle(
        "ilp_unlike_steps_mig_vs_fraction.kdl",
        SolverKind::Ilp,
        true,
    )
    .unwrap();
}

// ------------------------------------------------------------------ fixed MIG layouts

/// Not an oracle case (the oracle has no fixed layouts): kept under tests/fixtures.
const FIXED_LAYOUT: &str = "tests/fixtures/fixed-layout/cluster.kdl";

/// The ILP keeps a fixed layout on its GPUs even when no class uses MIG on that model
/// (the extraction only walked models with chosen layouts): its placement passes the
/// checker, and the plan is the ILP's, not the greedy fallback.
#[test]
fn ilp_keeps_a_fixed_layout_without_a_mig_class() {
    let c = load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXED_LAYOUT)).unwrap();
    let p = common::unchecked(&c, SolverKind::Ilp);
    let errors = oracle::check(&c, &p);
    assert!(errors.is_empty(), "{errors:#?}");
    let s = Scratch::new("regress-fixed-layout");
    s.copy_in(FIXED_LAYOUT, "cluster.kdl");
    let (code, out, err) = s.run(&["plan", "cluster.kdl", "--format", "json", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON plan");
    assert_eq!(
        doc["placement"]["solver"]["status"], "optimal",
        "{}",
        doc["placement"]["solver"]
    );
}
