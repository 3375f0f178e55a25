//! `cargo bench --bench plan`: the planner's benchmark (issue #3), not a timed test.
//!
//! For every bundled example and generated superpods (1,024 GPUs of each mix; 100,000
//! GPUs with `GPUPLAN_BENCH_LARGE=1`), runs the whole in-process pipeline (validate,
//! solve, build the placement, check it) with the ILP and with the greedy baseline, and
//! prints one Markdown row per (scenario, solver): median wall seconds over
//! `GPUPLAN_BENCH_RUNS` runs (default 5; 1 for the 100k scenario), solver status and gap,
//! GPUs allocated, GPU-equivalents admitted per priority level (highest first), and the
//! mean leaf switches spanned per multi-node gang. The ILP's admission must be
//! lexicographically >= greedy's; the bench exits 1 when it is not.

use gpuplan::generate::superpod::{Mix, SuperpodOptions, superpod};
use gpuplan::model::Cluster;
use gpuplan::pipeline::{self, Inputs, Settings};
use gpuplan::placement::Placement;
use gpuplan::solve::{SolveStatus, SolverKind};
use gpuplan::source::SourceMap;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// (name, KDL files, runs).
type Scenario = (String, Vec<(String, String)>, usize);

struct Row {
    wall: f64,
    plan: Placement,
}

fn load_dir(dir: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("example folder")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).expect("readable"),
            )
        })
        .collect();
    files.sort();
    files
}

/// One run of the pipeline as `gpuplan plan` runs it ([`pipeline::check`]: validate,
/// solve, build the placement, check it), timed from the configuration's text to the
/// checked placement.
fn run_once(files: &[(String, String)], kind: SolverKind) -> (Row, Cluster) {
    let t = Instant::now();
    let mut sources = SourceMap::new();
    for (name, text) in files {
        sources.add(name.clone(), text.clone());
    }
    let inputs = Inputs {
        sources,
        load_diagnostics: Vec::new(),
        previous: None,
        validated: None,
    };
    let settings = Settings {
        solver: kind,
        time_limit: 300.0,
        ..Settings::default()
    };
    let checked = match pipeline::check(inputs, &settings, &mut |_| {}) {
        Ok(c) => c,
        Err(f) => panic!("{}: {:#?}", f.stage.message(), f.diagnostics),
    };
    let wall = t.elapsed().as_secs_f64();
    // The ILP's placement failing the checker is a bug, not a result to compare.
    assert_ne!(
        checked.placement.solver.status,
        SolveStatus::Fallback,
        "checker: {:?}",
        checked.placement.solver.note
    );
    (
        Row {
            wall,
            plan: checked.placement,
        },
        checked.model,
    )
}

/// GPU-equivalents admitted per priority value, highest first.
fn by_level(c: &Cluster, p: &Placement) -> Vec<(i64, f64)> {
    let mut m: BTreeMap<i64, f64> = BTreeMap::new();
    for w in &p.workloads {
        let v = c.priority(&w.priority).map(|x| x.value).unwrap_or(0);
        *m.entry(v).or_default() += w.gpus_placed;
    }
    m.into_iter().rev().collect()
}

fn leaves_per_gang(p: &Placement) -> Option<f64> {
    let spans: Vec<u32> = p
        .workloads
        .iter()
        .flat_map(|w| &w.gangs)
        .filter(|g| g.nodes.len() > 1)
        .map(|g| g.span.leaves)
        .collect();
    (!spans.is_empty()).then(|| spans.iter().sum::<u32>() as f64 / spans.len() as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The scenarios: every example, the 1,024-GPU superpods and (`GPUPLAN_BENCH_LARGE`)
/// the 100,000-GPU one.
fn scenarios() -> Vec<Scenario> {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let runs: usize = std::env::var("GPUPLAN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let mut scenarios: Vec<Scenario> = Vec::new();
    let mut examples: Vec<String> = std::fs::read_dir("examples")
        .expect("run from the repository root")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.path().display().to_string())
        .collect();
    examples.sort();
    for e in examples {
        let files = load_dir(&e);
        scenarios.push((e, files, runs));
    }
    for (mix, name) in [
        (Mix::Training, "training"),
        (Mix::Inference, "inference"),
        (Mix::Mixed, "mixed"),
    ] {
        let files = superpod(&SuperpodOptions {
            gpus: 1024,
            mix,
            ..SuperpodOptions::default()
        })
        .expect("generator");
        scenarios.push((format!("superpod 1,024 GPUs, {name}"), files, runs));
    }
    if std::env::var_os("GPUPLAN_BENCH_LARGE").is_some() {
        let files = superpod(&SuperpodOptions {
            gpus: 100_000,
            mix: Mix::Mixed,
            ..SuperpodOptions::default()
        })
        .expect("generator");
        scenarios.push(("superpod 100,000 GPUs, mixed".into(), files, 1));
    }
    scenarios
}

/// Lexicographic comparison of admission per priority level: the first level that
/// differs decides; true (and a message) when the ILP admits less than greedy.
fn ilp_admits_less(name: &str, levels: &BTreeMap<&str, Vec<(i64, f64)>>) -> bool {
    let ilp = &levels["ilp"];
    let greedy = &levels["greedy"];
    let keys: BTreeSet<i64> = ilp.iter().chain(greedy).map(|x| x.0).collect();
    for k in keys.iter().rev() {
        let a = ilp.iter().find(|x| x.0 == *k).map(|x| x.1).unwrap_or(0.0);
        let b = greedy
            .iter()
            .find(|x| x.0 == *k)
            .map(|x| x.1)
            .unwrap_or(0.0);
        if (a - b).abs() > 1e-6 {
            if a < b {
                eprintln!("{name}: the ILP admits less than greedy at priority {k}");
                return true;
            }
            break;
        }
    }
    false
}

fn main() {
    // The 100,000-GPU scenario is past the default limits (a CI job's bounds on
    // untrusted input): raised as `--limit gpus=150000 --limit nodes=20000` would.
    gpuplan::limits::set(gpuplan::limits::Limits {
        gpus: 150_000,
        nodes: 20_000,
        ..Default::default()
    });
    let scenarios = scenarios();
    println!(
        "| scenario | solver | runs | median wall s | status | gap | GPUs allocated | admitted per priority level (high to low) | leaves per multi-node gang |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut failed = false;
    for (name, files, n) in &scenarios {
        let mut levels: BTreeMap<&str, Vec<(i64, f64)>> = BTreeMap::new();
        for (kind, label) in [(SolverKind::Ilp, "ilp"), (SolverKind::Greedy, "greedy")] {
            let mut walls = Vec::new();
            let mut last = None;
            for _ in 0..*n {
                let (row, c) = run_once(files, kind);
                walls.push(row.wall);
                last = Some((row, c));
            }
            let (row, c) = last.expect("one run");
            let p = &row.plan;
            let lv = by_level(&c, p);
            let lv_text: Vec<String> = lv.iter().map(|(_, g)| format!("{g:.1}")).collect();
            let leaves = leaves_per_gang(p)
                .map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "-".into());
            println!(
                "| {name} | {label} | {n} | {:.3} | {} | {} | {:.1}% | {} | {leaves} |",
                median(walls),
                p.solver.status,
                p.solver
                    .gap
                    .map(|g| format!("{:.2}%", g * 100.0))
                    .unwrap_or_else(|| "-".into()),
                p.summary.allocation_pct,
                lv_text.join(" / ")
            );
            levels.insert(label, lv);
        }
        failed |= ilp_admits_less(name, &levels);
    }
    if failed {
        std::process::exit(1);
    }
}
