//! `plan` / `apply` / `drift` acceptance: the state, the diff and the disruption section,
//! `--detailed-exitcode`, stale saved plans, `--dry-run`, an interrupted apply, drift
//! from recorded observations, and byte-identical plan JSON. Every command runs in a
//! temporary folder holding a copy of `tests/fixtures/apply/v1` (then `v2`), so the
//! output shows relative paths only; snapshots hold exit code, stdout and stderr.

mod common;

use common::Scratch;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/apply")
        .join(name)
}

/// A scratch folder with the configuration `v1` copied to `cluster/`.
fn scratch(tag: &str) -> Scratch {
    let s = Scratch::new(&format!("apply-{tag}"));
    use_config(&s, "v1");
    s
}

/// Puts the configuration `v` (`v1`, `v2`) in `cluster/`.
fn use_config(s: &Scratch, v: &str) {
    s.copy_in(
        &format!("tests/fixtures/apply/{v}/cluster.kdl"),
        "cluster/cluster.kdl",
    );
}

/// Exit code, stdout and stderr as one snapshot text.
fn transcript(r: &(i32, String, String)) -> String {
    format!("exit code: {}\n--- stdout\n{}--- stderr\n{}", r.0, r.1, r.2)
}

fn snapshot(name: &str, text: &str) {
    let mut settings = common::snapshot_settings();
    settings.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[lineage]",
    );
    settings.add_filter(r"\d+\.\d\ds\n", "[secs]\n");
    settings.add_filter(r"process \d+", "process [pid]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

const GREEDY: [&str; 2] = ["--solver", "greedy"];

fn apply_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["apply", "cluster", "--out-dir", "out"];
    v.extend(GREEDY);
    v.extend(extra);
    v
}

fn plan_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["plan", "cluster", "--detailed-exitcode"];
    v.extend(GREEDY);
    v.extend(extra);
    v
}

fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(root: &Path, d: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn first_apply_into_an_empty_state() {
    let s = scratch("first");
    let r = s.run(&apply_args(&["--auto-approve"]));
    snapshot("first_apply", &transcript(&r));
    assert_eq!(r.0, 0);
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path(".gpuplan/state.json")).unwrap())
            .unwrap();
    assert_eq!(state["serial"], 1);
    assert_eq!(state["format_version"], 1);
    assert!(s.path("out/mig/h100-2.sh").is_file());
    assert!(s.path("out/.gpuplan-render").is_file());
    assert!(
        !s.path(".gpuplan/state.json.lock").exists(),
        "lock released"
    );
    // Every artifact on disk is the one the state records, digest included.
    for (p, a) in state["artifacts"].as_object().unwrap() {
        let text = std::fs::read_to_string(s.path("out").join(p)).unwrap();
        assert_eq!(text, a["text"].as_str().unwrap(), "{p}");
        assert_eq!(gpuplan::state::sha256(text.as_bytes()), a["sha256"], "{p}");
    }
}

#[test]
fn no_op_plan_exits_0_with_detailed_exitcode() {
    let s = scratch("noop");
    assert_eq!(s.run(&apply_args(&["--auto-approve"])).0, 0);
    let r = s.run(&plan_args(&[]));
    assert_eq!(r.0, 0, "{}", r.2);
    let changes = &r.1[r.1.find("\nchanges\n").expect("changes section")..];
    snapshot(
        "noop_plan",
        &transcript(&(r.0, changes.to_string(), r.2.clone())),
    );
    // A second apply changes nothing, and says so.
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 0);
    assert!(r.2.contains("0 added, 0 changed, 0 destroyed"), "{}", r.2);
}

#[test]
fn change_exits_2_with_diff_and_disruption() {
    let s = scratch("change");
    assert_eq!(s.run(&apply_args(&["--auto-approve"])).0, 0);
    use_config(&s, "v2");
    let r = s.run(&plan_args(&[]));
    assert_eq!(r.0, 2, "{}", r.2);
    let changes = &r.1[r.1.find("\nchanges\n").expect("changes section")..];
    snapshot(
        "change_plan",
        &transcript(&(r.0, changes.to_string(), r.2.clone())),
    );
    assert!(
        changes.contains("Plan: 1 to add, 13 to change, 0 to destroy."),
        "{changes}"
    );
    assert!(changes.contains("h100-2 GPU 1 (h100-sxm5-80gb): 1g.10gb*7 -> 3g.40gb*2"));
    // JSON: the same plan, versioned.
    let (code, json, _) = s.run(&plan_args(&["--format", "json"]));
    assert_eq!(code, 2);
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(j["format_version"], "1");
    assert_eq!(j["prior_state"]["serial"], 1);
    assert!(j["summary"]["change"].as_u64().unwrap() > 0);
    assert_eq!(j["disruption"]["rollout"].as_array().unwrap().len(), 2);
    // Colour only when asked: the diff lines are green and red with --color always.
    let (_, coloured, _) = s.run(&plan_args(&["--color", "always"]));
    assert!(coloured.contains("\x1b[32m+") && coloured.contains("\x1b[31m-"));
    assert!(!changes.contains('\x1b'), "plain without a terminal");
}

#[test]
fn saved_plan_applies_exactly_and_stale_plans_are_refused() {
    let s = scratch("stale");
    // A saved plan applies without a prompt, and records serial 1.
    let (code, _, err) = s.run(&plan_args(&["-o", "p1.json"]));
    assert_eq!(code, 2, "{err}");
    let r = s.run(&["apply", "p1.json", "--out-dir", "out"]);
    assert_eq!(r.0, 0, "{}", r.2);
    // `show PLAN`: the saved plan as text, and as its own JSON.
    let (code, text, _) = s.run(&["show", "p1.json"]);
    assert_eq!(code, 0);
    assert!(
        text.contains("saved plan for cluster `apply-test`") && text.contains("Plan: 37 to add")
    );
    let (code, json, _) = s.run(&["show", "p1.json", "--format", "json"]);
    assert_eq!(code, 0);
    assert_eq!(json, std::fs::read_to_string(s.path("p1.json")).unwrap());
    // The same plan again: the state moved on (serial 1 now).
    let r = s.run(&["apply", "p1.json", "--out-dir", "out"]);
    assert_eq!(r.0, 1);
    snapshot("stale_state", &transcript(&r));
    // A plan whose inputs changed afterwards.
    assert_eq!(s.run(&plan_args(&["-o", "p2.json"])).0, 0);
    use_config(&s, "v2");
    let before = std::fs::read(s.path(".gpuplan/state.json")).unwrap();
    let r = s.run(&["apply", "p2.json", "--out-dir", "out"]);
    assert_eq!(r.0, 1);
    snapshot("stale_inputs", &transcript(&r));
    assert_eq!(
        std::fs::read(s.path(".gpuplan/state.json")).unwrap(),
        before
    );
    // Not a plan at all.
    std::fs::write(s.path("bad.json"), "{\"format_version\": \"9\"}").unwrap();
    let r = s.run(&["apply", "bad.json", "--out-dir", "out"]);
    assert_eq!(r.0, 1);
    assert!(
        r.2.contains("GP923") && r.2.contains("format_version `9`"),
        "{}",
        r.2
    );
}

#[test]
fn dry_run_writes_nothing() {
    let s = scratch("dry");
    let r = s.run(&apply_args(&["--dry-run"]));
    assert_eq!(r.0, 0, "{}", r.2);
    let stderr_tail: String =
        r.2.lines()
            .filter(|l| l.contains("dry run"))
            .collect::<Vec<_>>()
            .join("\n");
    snapshot("dry_run", &stderr_tail);
    assert!(!s.path("out").exists());
    assert!(!s.path(".gpuplan").exists());
    // With a saved plan too.
    assert_eq!(s.run(&plan_args(&["-o", "p.json"])).0, 2);
    let r = s.run(&["apply", "p.json", "--out-dir", "out", "--dry-run"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(!s.path("out").exists());
    assert!(!s.path(".gpuplan").exists());
}

#[test]
fn interrupted_apply_leaves_old_state_and_files_intact() {
    let s = scratch("interrupt");
    assert_eq!(s.run(&apply_args(&["--auto-approve"])).0, 0);
    let state_before = std::fs::read(s.path(".gpuplan/state.json")).unwrap();
    let files_before = tree(&s.path("out"));
    use_config(&s, "v2");
    let r = s.run_env(
        &apply_args(&["--auto-approve", "--quiet"]),
        &[("GPUPLAN_TEST_FAIL_AFTER", "5")],
    );
    assert_eq!(r.0, 1);
    snapshot(
        "interrupted_apply",
        &format!("exit code: {}\n--- stderr\n{}", r.0, r.2),
    );
    assert_eq!(
        std::fs::read(s.path(".gpuplan/state.json")).unwrap(),
        state_before
    );
    assert_eq!(tree(&s.path("out")), files_before);
    let leftovers: Vec<String> = std::fs::read_dir(&s.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-") || n.contains(".old-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(!s.path(".gpuplan/state.json.lock").exists());
    // The state is still valid: the next plan shows the same changes.
    assert_eq!(s.run(&plan_args(&[])).0, 2);
}

#[test]
fn drift_from_recorded_observations() {
    let s = scratch("drift");
    assert_eq!(s.run(&apply_args(&["--auto-approve"])).0, 0);
    let observed = fixture("observed");
    let obs = observed.to_str().unwrap();
    let mut args = vec!["drift", "cluster", "--observed", obs];
    args.extend(GREEDY);
    let r = s.run(&args);
    assert_eq!(r.0, 2, "{}", r.2);
    snapshot("drift", &transcript(&(r.0, r.1.clone(), String::new())));
    args.extend(["--format", "json"]);
    let (code, json, _) = s.run(&args);
    assert_eq!(code, 2);
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(j["drift"], true);
    assert_eq!(j["differences"][0]["gpu"], 1);
    // An unreadable observation is a diagnostic, not a panic.
    std::fs::create_dir_all(s.path("obs")).unwrap();
    std::fs::write(s.path("obs/x.json"), "{").unwrap();
    let mut args = vec!["drift", "cluster", "--observed", "obs"];
    args.extend(GREEDY);
    let r = s.run(&args);
    assert_eq!(r.0, 1);
    assert!(
        r.2.contains("GP926") && r.2.contains("obs/x.json"),
        "{}",
        r.2
    );
}

#[test]
fn plan_json_is_byte_identical_across_runs_and_file_order() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/mixed-inference");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let s = scratch("bytes");
    let run = |files: &[String], solver: &str| {
        let mut args = vec!["plan", "--format", "json", "--quiet", "--solver", solver];
        args.extend(files.iter().map(String::as_str));
        let r = s.run(&args);
        assert_eq!(r.0, 0, "{}", r.2);
        r.1
    };
    for solver in ["greedy", "ilp"] {
        let a = run(&files, solver);
        let mut rev = files.clone();
        rev.reverse();
        let b = run(&rev, solver);
        let c = run(&files, solver);
        assert!(
            a == b && b == c,
            "{solver}: plan JSON differs between runs or file orders"
        );
    }
}

#[test]
fn bad_state_and_held_lock_are_diagnostics() {
    let s = scratch("lock");
    std::fs::create_dir_all(s.path(".gpuplan")).unwrap();
    std::fs::write(s.path(".gpuplan/state.json"), "{ not json").unwrap();
    let r = s.run(&plan_args(&[]));
    assert_eq!(r.0, 1);
    snapshot("corrupt_state", &transcript(&r));
    std::fs::remove_file(s.path(".gpuplan/state.json")).unwrap();
    std::fs::write(s.path(".gpuplan/state.json.lock"), "pid 4242\n").unwrap();
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 1);
    snapshot("locked_state", &transcript(&r));
    std::fs::remove_file(s.path(".gpuplan/state.json.lock")).unwrap();
    // Without a terminal and without --auto-approve, nothing is applied.
    let r = s.run(&apply_args(&[]));
    assert_eq!(r.0, 1);
    assert!(r.2.contains("GP925"), "{}", r.2);
    assert!(!s.path("out").exists());
}

/// The disruption section from the library: moving the training pool to another node
/// moves the gang, flips pool modes (drain) and switches MIG off where it was on (reset).
#[test]
fn disruption_lists_moved_gangs_and_pool_mode_changes() {
    let text = std::fs::read_to_string(fixture("v1").join("cluster.kdl")).unwrap();
    // Greedy's placements as built ([`common::unchecked`]): the disruption is computed
    // from two placements, not from the checker's verdict on them.
    let plan_of = |text: &str| {
        let c = common::load_text(text);
        let p = common::unchecked(&c, gpuplan::solve::SolverKind::Greedy);
        (c, p)
    };
    let (_, before) = plan_of(&text);
    let moved = text
        .replace(
            r#"pool "train" mode="training" nodes="h100-1""#,
            r#"pool "train" mode="training" nodes="h100-3""#,
        )
        .replace(
            r#"pool "mig" mode="mig" nodes="h100-[2-3]" max-disrupted=1"#,
            r#"pool "mig" mode="mig" nodes="h100-[1-2]" max-disrupted=1"#,
        );
    let (c, after) = plan_of(&moved);
    let d = gpuplan::plan::disruption::compute(&c, Some(&before), &after);
    assert_eq!(d.gangs_moved.len(), 1, "{d:#?}");
    let g = &d.gangs_moved[0];
    assert_eq!(
        (g.workload.as_str(), g.priority.as_str()),
        ("pretrain", "batch")
    );
    assert_eq!(g.from[0].node, "h100-1");
    assert_eq!(g.to[0].node, "h100-3");
    let h1 = d.nodes.iter().find(|n| n.node == "h100-1").expect("h100-1");
    assert!(h1.drain, "{h1:?}");
    assert!(
        h1.reasons
            .iter()
            .any(|r| r.contains("pool mode whole-gpu -> mig")),
        "{h1:?}"
    );
    assert!(
        h1.reasons
            .iter()
            .any(|r| r.contains("gang pretrain replica 0 moves away"))
    );
    // At most one node of pool `mig` per batch.
    for b in &d.rollout {
        let mig = b
            .nodes
            .iter()
            .filter(|n| ["h100-1", "h100-2"].contains(&n.as_str()));
        assert!(mig.count() <= 1, "{:?}", d.rollout);
    }
}
