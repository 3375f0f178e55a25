//! `gpuplan report chargeback` (issue 17): numbers on a hand-checkable cluster (whole
//! GPUs on on-demand and spot, MIG at its compute share, a time-sliced share, a
//! guarantee smaller than use, a parent team, idle GPUs), determinism of every format,
//! the JSON against `schemas/chargeback.schema.json`, a saved plan giving the same
//! report as its KDL, and a snapshot of the table for examples/mixed-authority.

use crate::common;

use crate::common::schema_check::validate;
use gpuplan::report::chargeback::{self, Kind};
use gpuplan::solve::SolverKind;
use serde_json::Value;

const KDL: &str = r#"
cluster "cb" { scheduler "kueue"; }
gpu-model "h100-sxm5-80gb" price-per-hour=2.90
node-class "dgx" {
    gpus 8 model="h100-sxm5-80gb"
    nics 8 speed="400Gbps" kind="infiniband"
}
node-class "dgx-spot" capacity="spot" price-per-hour=1.10 interruptions="3/day" {
    gpus 8 model="h100-sxm5-80gb"
    nics 8 speed="400Gbps" kind="infiniband"
}
nodes "od-[01-02]" class="dgx"
nodes "sp-[01-02]" class="dgx-spot"
nodes "sv-[01-02]" class="dgx"
fabric {
    leaf "l1" nodes="od-[01-02]"
    leaf "l2" nodes="sp-[01-02]"
    leaf "l3" nodes="sv-[01-02]"
}
pool "serving" mode="mig" nodes="sv-01"
pool "notebooks" mode="time-slice" nodes="sv-02"
mig { allow "3g.40gb"; }
team "org" guarantee=48
team "ml" guarantee=20 burst=40 parent="org"
team "dev" guarantee=2 parent="org"
priority "high" value=1000
priority "low" value=10
training "pre" team="ml" priority="high" {
    gang gpus=16 gpus-per-node=8
}
training "sweep" team="ml" priority="low" {
    gang gpus=16 gpus-per-node=8
    preemptible
    checkpoint every="30m"
}
inference "chat" team="ml" priority="high" replicas=2 {
    memory "30GiB"
    isolation "mig"
}
dev "nb" team="dev" priority="low" replicas=3 {
    share "time-slice" per-gpu=4
}
"#;

fn report() -> chargeback::Chargeback {
    let c = common::load_text(KDL);
    let p = common::plan(&c, SolverKind::Ilp);
    chargeback::compute(&c, &p, 10.0)
}

#[test]
fn hand_checked_numbers() {
    let r = report();
    let ml = r.teams.iter().find(|t| t.team == "ml").unwrap();
    type Line<'a> = (Kind, &'a str, f64, f64, f64, Option<f64>);
    let rows: Vec<Line> = ml
        .rows
        .iter()
        .map(|x| {
            (
                x.kind,
                x.capacity.as_str(),
                x.gpu_hours,
                x.guaranteed_gpu_hours,
                x.burst_gpu_hours,
                x.cost,
            )
        })
        .collect();
    // Over 10 hours, in guarantee order (priority high first: `chat` then `pre`, then
    // `sweep`): chat 2 x 3g.40gb = 2 x 3/7 GPU (8.57 GPU-hours, guaranteed); pre 16
    // on-demand GPUs (160 h, guaranteed: 16.86 of the 20-GPU guarantee used); sweep 16
    // spot GPUs, the guarantee's last 3.14 GPUs (31.43 h) and 12.86 burst (128.57 h).
    assert_eq!(
        rows,
        vec![
            (Kind::Whole, "on-demand", 160.0, 160.0, 0.0, Some(464.0)),
            (Kind::Whole, "spot", 160.0, 31.43, 128.57, Some(176.0)),
            (Kind::Mig, "on-demand", 8.57, 8.57, 0.0, Some(24.86)),
        ]
    );
    assert_eq!(ml.rows[2].profile.as_deref(), Some("3g.40gb"));
    assert_eq!(ml.cost, Some(664.86));
    // dev: 3 sessions at 4 per GPU = 0.75 GPU on one time-sliced GPU, within 2 guaranteed.
    let dev = r.teams.iter().find(|t| t.team == "dev").unwrap();
    assert_eq!(dev.rows.len(), 1);
    assert_eq!(dev.rows[0].kind, Kind::Shared);
    assert_eq!(dev.rows[0].gpus, 0.75);
    assert_eq!(dev.rows[0].gpu_hours, 7.5);
    assert_eq!(dev.rows[0].burst_gpu_hours, 0.0);
    // The parent charges its sub-teams: 328.57 + 7.5.
    let org = r.teams.iter().find(|t| t.team == "org").unwrap();
    assert!(org.rows.is_empty());
    assert_eq!(org.subtree_gpu_hours, 336.07);
    assert_eq!(org.subtree_cost, Some(686.61));
    // Idle: 48 GPUs, 32 + 2 x 3/7 + 0.75 held.
    let idle: f64 = r.idle.iter().map(|i| i.gpus).sum();
    assert!(
        (idle - (48.0 - 32.0 - 6.0 / 7.0 - 0.75)).abs() < 1e-3,
        "{idle}"
    );
    assert!(r.idle.iter().all(|i| i.capacity.as_str() == "on-demand"));
    assert_eq!(r.charged_gpu_hours, 336.07);
}

#[test]
fn every_format_is_deterministic() {
    let (a, b) = (report(), report());
    assert_eq!(chargeback::table(&a), chargeback::table(&b));
    assert_eq!(chargeback::csv(&a), chargeback::csv(&b));
    assert_eq!(
        serde_json::to_string_pretty(&a).unwrap(),
        serde_json::to_string_pretty(&b).unwrap()
    );
    let csv = chargeback::csv(&a);
    let cols = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == cols), "{csv}");
}

#[test]
fn the_json_matches_its_schema() {
    let text = std::fs::read_to_string("schemas/chargeback.schema.json").unwrap();
    let root: Value = serde_json::from_str(&text).unwrap();
    let mut v = serde_json::to_value(report()).unwrap();
    let mut errors = Vec::new();
    validate(&root, &root, &v, "$", &mut errors);
    assert!(errors.is_empty(), "{errors:#?}");
    // A field the schema lacks fails it.
    v["teams"][0]["new_field"] = Value::Bool(true);
    validate(&root, &root, &v, "$", &mut errors);
    assert!(!errors.is_empty());
}

#[test]
fn a_saved_plan_reports_what_its_kdl_does() {
    let w = common::Scratch::new("chargeback-saved");
    w.write("c.kdl", KDL);
    let kdl = w.run(&[
        "report",
        "chargeback",
        "c.kdl",
        "--format",
        "json",
        "--period",
        "10h",
    ]);
    assert_eq!(kdl.0, 0, "{}", kdl.2);
    let saved = w.run(&["plan", "c.kdl", "-o", "plan.json"]);
    assert!(saved.0 == 0 || saved.0 == 2, "{}", saved.2);
    let from_plan = w.run(&[
        "report",
        "chargeback",
        "plan.json",
        "--format",
        "json",
        "--period",
        "10h",
    ]);
    assert_eq!(from_plan.0, 0, "{}", from_plan.2);
    assert_eq!(kdl.1, from_plan.1);
    // An input changed since the plan was saved: refused as stale.
    w.write("c.kdl", format!("{KDL}\n// edited\n"));
    let stale = w.run(&["report", "chargeback", "plan.json"]);
    assert_eq!(stale.0, 1);
    assert!(
        common::codes(&stale).contains(&"GP922".to_string()),
        "{}",
        stale.2
    );
    let bad = w.run(&["report", "chargeback", "c.kdl", "--period", "soon"]);
    assert_eq!(bad.0, 1);
    assert!(
        common::codes(&bad).contains(&"GP900".to_string()),
        "{}",
        bad.2
    );
}

#[test]
fn the_mixed_authority_table() {
    let c = common::load_dir("examples/mixed-authority");
    let p = common::plan(&c, SolverKind::Ilp);
    let r = chargeback::compute(&c, &p, 720.0);
    insta::assert_snapshot!("chargeback-mixed-authority", chargeback::table(&r));
    insta::assert_snapshot!("chargeback-mixed-authority-csv", chargeback::csv(&r));
}
