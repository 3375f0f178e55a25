//! `plan` / `apply` / `drift` acceptance: the state, the diff and the disruption section,
//! `--detailed-exitcode`, stale saved plans, `--dry-run`, an interrupted apply, drift
//! from recorded observations, and byte-identical plan JSON. Every command runs in a
//! temporary folder holding a copy of `tests/fixtures/apply/v1` (then `v2`), so the
//! output shows relative paths only; snapshots hold exit code, stdout and stderr.

use crate::common;

use crate::common::Scratch;
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
        changes.contains("Plan: 1 to add, 17 to change, 0 to destroy."),
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
        text.contains("saved plan for cluster `apply-test`") && text.contains("Plan: 42 to add")
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
    // A saved plan is reopened through the library's one check and compared alike.
    let mut save = plan_args(&["-o", "saved.json", "--quiet"]);
    save.retain(|a| *a != "--detailed-exitcode");
    assert_eq!(s.run(&save).0, 0);
    let from_saved = s.run(&["drift", "saved.json", "--observed", obs]);
    assert_eq!((from_saved.0, &from_saved.1), (2, &r.1), "{}", from_saved.2);
    // ... and refused once its inputs changed since it was made (GP922).
    use_config(&s, "v2");
    let stale = s.run(&["drift", "saved.json", "--observed", obs]);
    assert_eq!(stale.0, 1, "{}", stale.2);
    assert!(stale.2.contains("GP922"), "{}", stale.2);
    use_config(&s, "v1");
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

/// A whole state (every field a `State` has) of another format version is named as
/// such, and the same fields as an array are no state.
#[test]
fn a_whole_state_of_another_version_or_shape_is_refused() {
    let s = scratch("version");
    assert_eq!(s.run(&apply_args(&["--auto-approve"])).0, 0);
    let path = s.path(".gpuplan/state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(s.run(&plan_args(&[])).0, 0, "the state as written reads");
    state["format_version"] = 2.into();
    std::fs::write(&path, state.to_string()).unwrap();
    let r = s.run(&plan_args(&[]));
    assert_eq!(r.0, 1);
    assert!(
        r.2.contains("GP920") && r.2.contains("format_version 2"),
        "{}",
        r.2
    );
    state["format_version"] = 1.into();
    // In the order of `State`'s fields, which serde would read as one.
    let fields: Vec<serde_json::Value> = [
        "format_version",
        "lineage",
        "serial",
        "gpuplan_version",
        "inputs_digest",
        "plan_digest",
        "out_dir",
        "artifacts",
        "placement",
    ]
    .iter()
    .map(|k| state[*k].clone())
    .collect();
    assert_eq!(
        fields.len(),
        state.as_object().unwrap().len(),
        "every field"
    );
    std::fs::write(&path, serde_json::Value::Array(fields).to_string()).unwrap();
    let r = s.run(&plan_args(&[]));
    assert_eq!(r.0, 1);
    assert!(r.2.contains("no `format_version`"), "{}", r.2);
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

// ------------------------------------------------------------ locks that recover

/// The staging folders (`.out.tmp-*`, `.out.old-*`) beside `out/`.
fn staging_leftovers(s: &Scratch) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(&s.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".out.tmp-") || n.starts_with(".out.old-"))
        .collect();
    v.sort();
    v
}

/// Starts `gpuplan apply` (v2 over an applied v1) that stops at `point`
/// (`GPUPLAN_TEST_PAUSE`), and returns it once it is there: it creates the file
/// `GPUPLAN_TEST_READY` names, which this waits for (no timed sleep decides anything).
#[cfg(target_os = "linux")]
fn paused_apply(s: &Scratch, point: &str) -> std::process::Child {
    assert_eq!(s.run(&apply_args(&["--auto-approve"])).0, 0);
    use_config(s, "v2");
    let child = spawn_paused(s, &apply_args(&["--auto-approve", "--quiet"]), point);
    assert!(s.path(".gpuplan/state.json.lock").is_file(), "lock held");
    child
}

/// Starts `gpuplan ARGS` with `GPUPLAN_TEST_PAUSE=point` and returns once it is there.
#[cfg(target_os = "linux")]
fn spawn_paused(s: &Scratch, args: &[&str], point: &str) -> std::process::Child {
    let ready = s.path("ready");
    let _ = std::fs::remove_file(&ready);
    let mut child = common::command()
        .args(args)
        .current_dir(&s.0)
        .env("GPUPLAN_TEST_PAUSE", point)
        .env("GPUPLAN_TEST_READY", &ready)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run gpuplan");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !ready.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let o = child.wait_with_output().unwrap();
            panic!(
                "apply ended ({status}) before pausing at `{point}`: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert!(std::time::Instant::now() < deadline, "never paused");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// kill -9 while the staging folder is full: the next apply takes the stale lock over
/// (GP929, naming the dead process), removes the staging folder and applies.
#[cfg(target_os = "linux")]
#[test]
fn killed_apply_is_recovered_by_the_next_one() {
    let s = scratch("kill9");
    let mut child = paused_apply(&s, "staged");
    let pid = child.id();
    assert_eq!(
        staging_leftovers(&s).len(),
        1,
        "{:?}",
        staging_leftovers(&s)
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        s.path(".gpuplan/state.json.lock").is_file(),
        "kill -9 leaves it"
    );
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains("GP929") && r.2.contains(&format!("process {pid} is gone")),
        "{}",
        r.2
    );
    assert!(r.2.contains("removed the staging folder"), "{}", r.2);
    assert_eq!(staging_leftovers(&s), Vec::<String>::new());
    assert!(!s.path(".gpuplan/state.json.lock").exists());
    assert_eq!(s.run(&plan_args(&[])).0, 0, "v2 applied");
}

/// kill -9 between the swap's two renames: `out/` is gone and `.out.old-*` is the only
/// copy of it; the next apply puts it back (it is what the state records), then applies.
#[cfg(target_os = "linux")]
#[test]
fn killed_swap_is_restored_by_the_next_apply() {
    let s = scratch("kill9swap");
    let mut child = paused_apply(&s, "swapping");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!s.path("out").exists());
    let old = staging_leftovers(&s)
        .into_iter()
        .find(|n| n.starts_with(".out.old-"))
        .expect("the old output aside");
    assert!(s.path(&old).join(".gpuplan-render").is_file());
    // An apply refused before writing (a path that does not exist) leaves it there.
    let r = s.run(&["apply", "missing", "--out-dir", "out", "--auto-approve"]);
    assert_eq!(r.0, 1);
    assert!(s.path(&old).is_dir());
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.2.contains("restored `out` from"), "{}", r.2);
    assert_eq!(staging_leftovers(&s), Vec::<String>::new());
    assert!(s.path("out/.gpuplan-render").is_file());
    assert_eq!(s.run(&plan_args(&[])).0, 0, "v2 applied");
}

/// SIGTERM, SIGINT and SIGHUP while applying remove the lock and the staging folder;
/// the exit code is 128 + the signal; the output folder and the state are unchanged.
#[cfg(target_os = "linux")]
#[test]
fn signals_release_the_lock_and_the_staging_folder() {
    for (sig, code) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        let s = scratch(&format!("sig{sig}"));
        let child = paused_apply(&s, "staged");
        let state = std::fs::read(s.path(".gpuplan/state.json")).unwrap();
        let files = tree(&s.path("out"));
        let killed = std::process::Command::new("kill")
            .args(["-s", sig, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "SIG{sig}: {stderr}");
        assert!(
            stderr.contains(&format!("interrupted by SIG{sig}")),
            "{stderr}"
        );
        assert!(!s.path(".gpuplan/state.json.lock").exists(), "SIG{sig}");
        assert_eq!(staging_leftovers(&s), Vec::<String>::new(), "SIG{sig}");
        assert_eq!(std::fs::read(s.path(".gpuplan/state.json")).unwrap(), state);
        assert_eq!(tree(&s.path("out")), files);
    }
    // A first apply into a new state folder: the folder the lock created goes too.
    let s = scratch("sigfirst");
    let args = apply_args(&["--auto-approve", "--quiet", "--state", "new/st/state.json"]);
    let child = spawn_paused(&s, &args, "staged");
    assert!(s.path("new/st/state.json.lock").is_file());
    std::process::Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(!s.path("new").exists());
    assert!(!s.path("out").exists());
    assert_eq!(staging_leftovers(&s), Vec::<String>::new());
}

/// A lock file in the documented format (docs/apply.md, "The lock"), written by hand so
/// that the test does not trust gpuplan's own writer.
#[cfg(target_os = "linux")]
fn lock_text(host: &str, pid: u32, start: Option<&str>) -> String {
    let mut s = format!("gpuplan-lock 1\nhost {host}\npid {pid}\n");
    if let Some(t) = start {
        s.push_str(&format!("start {t}\n"));
    }
    s.push_str("since 1700000000\noperation apply\n");
    s
}

#[cfg(target_os = "linux")]
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// A lock held by a live process of this host (the test itself, with its start time),
/// or from another host, is never taken over: GP921 names the holder.
#[cfg(target_os = "linux")]
#[test]
fn live_and_foreign_locks_are_refused() {
    let s = scratch("held");
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_comm = stat.rsplit_once(')').unwrap().1;
    let start = after_comm.split_whitespace().nth(19).unwrap();
    let host = this_host();
    let me = lock_text(&host, std::process::id(), Some(start));
    s.write(".gpuplan/state.json.lock", &me);
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 1);
    let r2 = r.2.replace("\n  │ ", " ");
    assert!(
        r2.contains("GP921")
            && r2.contains(&format!("process {} on host `{host}`", std::process::id()))
            && r2.contains(&format!("(start {start})"))
            && r2.contains("still running"),
        "{}",
        r.2
    );
    assert!(!s.path("out").exists());
    assert_eq!(s.read(".gpuplan/state.json.lock"), me, "left alone");
    // Another host: its process cannot be seen from here, whatever its PID.
    let elsewhere = lock_text("build-elsewhere-9", 999_999_999, Some("5"));
    s.write(".gpuplan/state.json.lock", &elsewhere);
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 1);
    let r2 = r.2.replace("\n  │ ", " ");
    assert!(
        r2.contains("GP921")
            && r2.contains("process 999999999 on host `build-elsewhere-9`")
            && r2.contains("another host"),
        "{}",
        r.2
    );
    assert_eq!(s.read(".gpuplan/state.json.lock"), elsewhere, "left alone");
}

/// Only folders named exactly `.out.tmp-<pid>-<n>` / `.out.old-<pid>-<n>` of a gone
/// process are cleaned; links are never followed, other names never touched.
#[cfg(target_os = "linux")]
#[test]
fn staging_cleanup_touches_only_dead_staging_folders() {
    let s = scratch("cleanup");
    let dead = 999_999_999;
    s.write("outside/keep", "x");
    s.write(&format!(".out.tmp-{dead}-1/f"), "x");
    s.write(&format!(".out.tmp-{dead}-1x/f"), "x");
    s.write(&format!(".other.tmp-{dead}-0/f"), "x");
    s.write(&format!(".out.tmp-{}-0/f", std::process::id()), "x");
    std::os::unix::fs::symlink(s.path("outside"), s.path(&format!(".out.tmp-{dead}-2"))).unwrap();
    let r = s.run(&apply_args(&["--auto-approve"]));
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.2.contains("GP929"), "{}", r.2);
    assert!(!s.path(&format!(".out.tmp-{dead}-1")).exists());
    assert!(s.path("outside/keep").is_file());
    assert!(s.path(&format!(".out.tmp-{dead}-2")).is_symlink());
    assert!(s.path(&format!(".out.tmp-{dead}-1x/f")).is_file());
    assert!(s.path(&format!(".other.tmp-{dead}-0/f")).is_file());
    assert!(
        s.path(&format!(".out.tmp-{}-0/f", std::process::id()))
            .is_file(),
        "a live process's staging folder"
    );
}

/// An apply that is refused creates nothing: no `.gpuplan/` folder, no lock.
#[test]
fn refused_applies_create_nothing() {
    let s = scratch("refused");
    // A saved plan that cannot be read.
    s.write("bad.json", "{\"format_version\": \"9\"}");
    let r = s.run(&["apply", "bad.json", "--out-dir", "out"]);
    assert!(r.0 == 1 && r.2.contains("GP923"), "{}", r.2);
    assert!(!s.path(".gpuplan").exists());
    // A stale saved plan: its inputs changed.
    assert_eq!(s.run(&plan_args(&["-o", "p.json"])).0, 2);
    use_config(&s, "v2");
    let r = s.run(&["apply", "p.json", "--out-dir", "out"]);
    assert!(r.0 == 1 && r.2.contains("GP922"), "{}", r.2);
    assert!(!s.path(".gpuplan").exists());
    // Not confirmed (no terminal).
    let r = s.run(&apply_args(&[]));
    assert!(r.0 == 1 && r.2.contains("GP925"), "{}", r.2);
    assert!(!s.path(".gpuplan").exists());
    assert!(!s.path("out").exists());
    // With --state in a new folder tree: every folder created is removed again.
    let r = s.run(&apply_args(&["--state", "a/b/state.json"]));
    assert_eq!(r.0, 1);
    assert!(!s.path("a").exists());
}
