//! `schemas/plan.schema.json` describes the plan JSON (`plan --format json`, `plan -o`)
//! and, as `$defs/placement`, the placement inside it: every example's plan (and
//! placements with unplaced classes, MIG instances and shares) validates against it with a
//! small structural validator (type, const, enum, required, properties,
//! additionalProperties, items, minimum, local `$ref`). `additionalProperties: false`
//! everywhere means a new field in `Placement` fails here until the schema has it.

use crate::common;

use crate::common::schema_check::validate;
use crate::common::{load_text, unchecked};
use gpuplan::placement;
use gpuplan::solve::SolverKind;
use serde_json::Value;
use std::path::PathBuf;

fn schema() -> Value {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/plan.schema.json"),
    )
    .expect("schemas/plan.schema.json");
    serde_json::from_str(&text).expect("schema is JSON")
}

fn assert_valid(what: &str, v: &Value) {
    let root = schema();
    let mut errors = Vec::new();
    validate(&root, &root, v, "$", &mut errors);
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

/// A placement value against `$defs/placement`.
fn assert_valid_placement(what: &str, v: &Value) {
    let root = schema();
    let mut errors = Vec::new();
    let s = serde_json::json!({"$ref": "#/$defs/placement"});
    validate(&root, &s, v, "$", &mut errors);
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

#[test]
fn every_example_plan_matches_the_schema() {
    let dirs = common::examples();
    assert!(dirs.len() >= 4);
    for d in dirs {
        let out = common::command()
            .args(["plan", "--format", "json", "--solver", "greedy", "--quiet"])
            .arg(&d)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", d.display());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_valid(&d.display().to_string(), &v);
    }
}

#[test]
fn plans_with_unplaced_classes_match_the_schema() {
    let text = r#"
cluster "tiny"
node-class "box" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 2 model="h100-sxm5-80gb"
}
nodes "n-[1-2]" class="box"
team "t" guarantee=2
priority "p" value=1
training "big" team="t" priority="p" replicas=3 { gang gpus=2 gpus-per-node=2; }
inference "small" team="t" priority="p" replicas=2 { memory "5GiB"; isolation "mig"; }
"#;
    // Raw placements ([`common::unchecked`]): the schema covers whatever is built.
    let c = load_text(text);
    let p = unchecked(&c, SolverKind::Greedy);
    assert!(p.workloads.iter().any(|w| !w.unplaced.is_empty()));
    assert_valid_placement("tiny", &serde_json::to_value(&p).unwrap());
    // With current MIG layouts the plan lists what survives and what is destroyed.
    let current = "mig { layout \"1g.10gb*7\" nodes=\"n-1\" current=#true; }\n";
    let c = load_text(&format!("{text}{current}"));
    let p = unchecked(&c, SolverKind::Ilp);
    assert!(!p.mig_changes.is_empty());
    assert_valid_placement(
        "tiny with current layouts",
        &serde_json::to_value(&p).unwrap(),
    );
}

#[test]
fn the_validator_rejects_drift() {
    let mut v = serde_json::to_value(placement::Placement {
        format_version: placement::FORMAT_VERSION.into(),
        cluster: "x".into(),
        solver: placement::SolverSummary {
            name: "greedy".into(),
            status: placement::SolveStatus::Heuristic,
            note: None,
            objective: 0.0,
            bound: None,
            gap: None,
            levels: vec![],
            compaction: None,
            seconds: 0.0,
            stages: 1,
            variables: 0,
            constraints: 0,
        },
        summary: placement::Summary {
            gpus_total: 0,
            gpus_allocated: 0.0,
            allocation_pct: 0.0,
            cost_per_hour: None,
        },
        pools: vec![],
        workloads: vec![],
        mig_layouts: vec![],
        mig_changes: vec![],
        teams: vec![],
        headroom: vec![],
        authorities: vec![],
        moves: Some(placement::Moves::default()),
        economics: Some(placement::economics::Economics {
            spot: vec![placement::economics::SpotClass {
                class: "sweep".into(),
                gpus_on_spot: 16.0,
                interruptions_per_day: 6.0,
                checkpoint_every_s: Some(1800),
                restart_s: 600,
                lost_gpu_hours_per_day: 40.0,
                lost_cost_per_day: Some(44.0),
                savings_per_day: Some(691.2),
                optimal_checkpoint_s: Some(588),
            }],
            checkpoints: vec![placement::economics::CheckpointClass {
                class: "sweep".into(),
                gangs: 1,
                size_bytes: 1_200_000_000_000,
                every_s: 1800,
                storage: Some("lustre".into()),
                nodes_writing: 2,
                write_s: 12.0,
                limit: placement::economics::WriteLimit::Storage,
                idle_pct: 0.6623,
                max_idle_pct: 5.0,
            }],
        }),
    })
    .unwrap();
    assert_valid_placement("minimal", &v);
    v["new_field"] = Value::Bool(true);
    let root = schema();
    let mut errors = Vec::new();
    let s = serde_json::json!({"$ref": "#/$defs/placement"});
    validate(&root, &s, &v, "$", &mut errors);
    assert_eq!(errors, ["$.new_field: not in the schema"]);
}

/// A plan with a prior state, changes, diffs and a disruption section (the apply
/// fixture: v1 applied, then v2 planned) matches the schema too.
#[test]
fn a_plan_with_changes_and_disruption_matches_the_schema() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apply");
    let dir = std::env::temp_dir().join(format!("gpuplan-schema-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let run = |v: &str, args: &[&str]| {
        common::command()
            .arg(args[0])
            .arg(root.join(v))
            .args(&args[1..])
            .args(["--solver", "greedy", "--quiet"])
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let a = run("v1", &["apply", "--out-dir", "out", "--auto-approve"]);
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    let p = run("v2", &["plan", "--format", "json"]);
    assert_eq!(p.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&p.stdout).unwrap();
    assert!(!v["prior_state"].is_null());
    assert!(!v["disruption"]["mig"].as_array().unwrap().is_empty());
    // The state's placement is the previous one: the plan says what moved.
    assert!(v["placement"]["moves"].is_object());
    assert_valid("v2 over v1", &v);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_with_packed_classes_matches_the_schema() {
    let text = r#"
cluster "pk"
gpu-model "t4x" memory="16GiB"
node-class "small" {
    cpu sockets=1 cores-per-socket=16
    memory "64GiB"
    gpus 2 model="t4x"
}
nodes "n-[1-2]" class="small"
team "t" burst=4
priority "p" value=10
inference "half" team="t" priority="p" replicas=3 {
    fraction "50%"
    requests cpu=4 memory="8GiB"
}
inference "cpu" team="t" priority="p" replicas=1 {
    gpus 0
    requests cpu=2 memory="4GiB"
}
"#;
    let c = load_text(text);
    let p = unchecked(&c, SolverKind::Ilp);
    assert!(p.workloads.iter().all(|w| !w.packed.is_empty()));
    assert_valid_placement("packed", &serde_json::to_value(&p).unwrap());
}
