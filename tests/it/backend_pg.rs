//! The `pg` state backend against a real PostgreSQL server (tests/it/common/pg.rs: Debian's
//! package, a cluster in a temporary folder on a Unix socket, run unprivileged): several
//! runners applying concurrently (exactly one apply per serial, nothing lost or mixed,
//! every loser told why), `kill -9` in the middle of recording the state, the server
//! stopped in the middle of an apply, a saved plan made on one machine refused after
//! another machine's apply (GP922), `state list/show/pull/push`, `force-unlock`, and the
//! backend declared in the configuration. Every command is the real binary.

use crate::common;

use crate::common::Scratch;
use crate::common::pg::PgServer;
use std::path::Path;
use std::process::{Child, Stdio};

/// The apply fixture with `replicas` replicas of `embed` (a different plan per value).
fn config(replicas: u32) -> String {
    let v1 = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apply/v1/cluster.kdl"),
    )
    .unwrap();
    v1.replace("replicas=14", &format!("replicas={replicas}"))
}

/// A runner's working folder with its own copy of the configuration.
fn runner(tag: &str, replicas: u32) -> Scratch {
    let s = Scratch::new(&format!("pg-{tag}"));
    s.write("cluster/cluster.kdl", config(replicas));
    s
}

/// `gpuplan ARGS` in `dir` with the server's environment (and `extra`).
fn run(pg: &PgServer, dir: &Path, args: &[&str], extra: &[(&str, &str)]) -> common::Run {
    let mut c = common::command();
    c.args(args).current_dir(dir);
    for (k, v) in pg.env() {
        c.env(k, v);
    }
    for (k, v) in extra {
        c.env(k, v);
    }
    common::run_of(&c.output().expect("run gpuplan"))
}

fn spawn(pg: &PgServer, dir: &Path, args: &[&str], extra: &[(&str, &str)]) -> Child {
    let mut c = common::command();
    c.args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in pg.env() {
        c.env(k, v);
    }
    for (k, v) in extra {
        c.env(k, v);
    }
    c.spawn().expect("spawn gpuplan")
}

fn plan_to(pg: &PgServer, s: &Scratch, file: &str) {
    let r = run(
        pg,
        &s.0,
        &[
            "plan",
            "cluster",
            "--solver",
            "greedy",
            "--backend",
            "pg",
            "-o",
            file,
        ],
        &[],
    );
    assert_eq!(r.0, 0, "plan: {}", r.2);
}

/// The state versions the backend keeps (`state list --format json`).
fn versions(pg: &PgServer, dir: &Path) -> Vec<serde_json::Value> {
    let r = run(
        pg,
        dir,
        &["state", "list", "--backend", "pg", "--format", "json"],
        &[],
    );
    assert_eq!(r.0, 0, "state list: {}", r.2);
    let doc: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    doc["versions"].as_array().unwrap().clone()
}

/// One version's state JSON (`state pull SERIAL`).
fn pull(pg: &PgServer, dir: &Path, serial: u64) -> serde_json::Value {
    let r = run(
        pg,
        dir,
        &["state", "pull", &serial.to_string(), "--backend", "pg"],
        &[],
    );
    assert_eq!(r.0, 0, "state pull: {}", r.2);
    serde_json::from_str(&r.1).unwrap()
}

/// The files under `dir` (marker left out) as path -> text.
fn files(dir: &Path) -> std::collections::BTreeMap<String, String> {
    common::tree(dir)
        .into_iter()
        .filter(|(p, _)| p != ".gpuplan-render" && !p.ends_with('/'))
        .map(|(p, b)| (p, String::from_utf8(b).unwrap()))
        .collect()
}

fn artifacts(v: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    v["artifacts"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, a)| (p.clone(), a["text"].as_str().unwrap().to_string()))
        .collect()
}

/// Waits (bounded) for the file a paused apply creates.
fn wait_for(path: &Path, child: &mut Child) {
    for _ in 0..3000 {
        if path.exists() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("apply exited ({status}) before pausing: {err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("apply did not pause");
}

/// Rounds of runners applying concurrently to one pg workspace and one shared output
/// folder, with the same and with different plans (each made against the same state):
/// exactly one apply per serial; every loser is refused, told who holds the lock
/// (GP921, holder and lock ID) or that the state moved on (GP922); each version holds
/// exactly its winner's plan's files; the shared folder holds exactly the last one's.
#[test]
fn concurrent_applies_record_exactly_one_state_per_serial() {
    let Some(pg) = PgServer::start("race") else {
        return;
    };
    let shared = Scratch::new("pg-race-shared");
    let out_dir = shared.path("out");
    let out_dir = out_dir.to_str().unwrap();
    const RUNNERS: u32 = 4;
    const ROUNDS: u64 = 3;
    let mut winners = Vec::new();
    for round in 0..ROUNDS {
        // Runners 0 and 2 make the same plan, 1 and 3 others.
        let runners: Vec<Scratch> = (0..RUNNERS)
            .map(|i| runner(&format!("race-{round}-{i}"), 2 + round as u32 * 3 + i % 3))
            .collect();
        for r in &runners {
            plan_to(&pg, r, "plan.json");
        }
        let children: Vec<Child> = runners
            .iter()
            .map(|r| {
                spawn(
                    &pg,
                    &r.0,
                    &[
                        "apply",
                        "plan.json",
                        "--out-dir",
                        out_dir,
                        "--backend",
                        "pg",
                    ],
                    &[],
                )
            })
            .collect();
        let results: Vec<common::Run> = children
            .into_iter()
            .map(|c| common::run_of(&c.wait_with_output().unwrap()))
            .collect();
        let won: Vec<usize> = (0..results.len()).filter(|i| results[*i].0 == 0).collect();
        assert_eq!(
            won.len(),
            1,
            "round {round}: exactly one apply wins: {results:#?}"
        );
        for (i, r) in results.iter().enumerate().filter(|(i, _)| *i != won[0]) {
            assert_eq!(r.0, 1, "round {round} runner {i}: {}", r.2);
            let told = (r.2.contains("GP921")
                && r.2.contains("locked by process")
                && r.2.contains("lock ID"))
                || (r.2.contains("GP922") && r.2.contains("serial"));
            assert!(told, "round {round} runner {i} not told why: {}", r.2);
            assert!(!common::panicked(r), "{}", r.2);
        }
        winners.push(runners[won[0]].read("plan.json"));
    }
    let kept = versions(&pg, &shared.0);
    let serials: Vec<u64> = kept.iter().map(|v| v["serial"].as_u64().unwrap()).collect();
    assert_eq!(
        serials,
        (1..=ROUNDS).rev().collect::<Vec<_>>(),
        "one state per serial"
    );
    for (n, plan) in winners.iter().enumerate() {
        let serial = n as u64 + 1;
        let state = pull(&pg, &shared.0, serial);
        let plan: serde_json::Value = serde_json::from_str(plan).unwrap();
        assert_eq!(
            state["plan_digest"].as_str().unwrap(),
            gpuplan::state::sha256(winners[n].as_bytes()),
            "serial {serial} records its winner's plan"
        );
        assert_eq!(
            artifacts(&state),
            artifacts(&plan),
            "serial {serial}: the plan's files"
        );
    }
    let last = pull(&pg, &shared.0, ROUNDS);
    assert_eq!(
        files(&shared.path("out")),
        artifacts(&last),
        "the folder holds the last state's files"
    );
    let left: Vec<String> = common::tree(&shared.0)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| !p.starts_with("out/"))
        .collect();
    assert!(left.is_empty(), "no staging folder left: {left:?}");
}

/// `kill -9` of an apply after its output folder was swapped and while its state is
/// staged in an open transaction: the state is the old one (the server rolls back), the
/// lock names the dead holder until `force-unlock`, and then an apply goes through.
#[test]
fn kill_9_while_recording_leaves_the_old_state_and_a_named_lock() {
    let Some(pg) = PgServer::start("kill") else {
        return;
    };
    let s = runner("kill", 14);
    let apply = [
        "apply",
        "cluster",
        "--solver",
        "greedy",
        "--out-dir",
        "out",
        "--auto-approve",
        "--backend",
        "pg",
    ];
    let r = run(&pg, &s.0, &apply, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    let before = pull(&pg, &s.0, 1);
    s.write("cluster/cluster.kdl", config(7));
    let ready = s.path("ready");
    let mut child = spawn(
        &pg,
        &s.0,
        &apply,
        &[
            ("GPUPLAN_TEST_PAUSE", "committing"),
            ("GPUPLAN_TEST_READY", ready.to_str().unwrap()),
        ],
    );
    wait_for(&ready, &mut child);
    let pid = child.id();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let kept = versions(&pg, &s.0);
    assert_eq!(kept.len(), 1, "the staged state was rolled back: {kept:?}");
    assert_eq!(pull(&pg, &s.0, 1), before, "the old state, whole");
    // The lock names the dead holder.
    let r = run(&pg, &s.0, &apply, &[]);
    assert_eq!(r.0, 1);
    assert!(
        r.2.contains("GP921") && r.2.contains(&format!("process {pid}")),
        "{}",
        r.2
    );
    assert!(r.2.contains("database session is gone"), "{}", r.2);
    let id = lock_id(&pg, &s.0);
    let r = run(&pg, &s.0, &["force-unlock", &id, "--backend", "pg"], &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains(&format!("process {pid}")),
        "force-unlock names the holder: {}",
        r.2
    );
    let r = run(&pg, &s.0, &["force-unlock", &id, "--backend", "pg"], &[]);
    assert!(r.0 == 1 && r.2.contains("GP964"), "{}", r.2);
    let r = run(&pg, &s.0, &apply, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert_eq!(versions(&pg, &s.0).len(), 2);
    assert_eq!(files(&s.path("out")), artifacts(&pull(&pg, &s.0, 2)));
}

/// The ID of the workspace's lock (`state list --format json`).
fn lock_id(pg: &PgServer, dir: &Path) -> String {
    let r = run(
        pg,
        dir,
        &["state", "list", "--backend", "pg", "--format", "json"],
        &[],
    );
    let doc: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    doc["lock"]["id"].as_str().expect("a lock").to_string()
}

/// The server stops while an apply has staged its files: the apply fails with a code
/// (GP960), the output folder is untouched and no staging folder is left; once the
/// server is back the state is the old one and the lock names the apply that lost it.
#[test]
fn server_lost_mid_apply_is_coded_and_writes_nothing_locally() {
    let Some(pg) = PgServer::start("lost") else {
        return;
    };
    let s = runner("lost", 14);
    let apply = [
        "apply",
        "cluster",
        "--solver",
        "greedy",
        "--out-dir",
        "out",
        "--auto-approve",
        "--backend",
        "pg",
    ];
    assert_eq!(run(&pg, &s.0, &apply, &[]).0, 0);
    let before = s.tree();
    s.write("cluster/cluster.kdl", config(7));
    let before_cfg = s.tree();
    let (ready, resume) = (s.path("ready"), s.path("resume"));
    let mut child = spawn(
        &pg,
        &s.0,
        &apply,
        &[
            ("GPUPLAN_TEST_PAUSE", "staged"),
            ("GPUPLAN_TEST_READY", ready.to_str().unwrap()),
            ("GPUPLAN_TEST_RESUME", resume.to_str().unwrap()),
        ],
    );
    wait_for(&ready, &mut child);
    pg.ctl_stop();
    std::fs::write(&resume, "go").unwrap();
    let r = common::run_of(&child.wait_with_output().unwrap());
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.2.contains("GP960"), "{}", r.2);
    assert!(!common::panicked(&r), "{}", r.2);
    std::fs::remove_file(&ready).unwrap();
    std::fs::remove_file(&resume).unwrap();
    assert_eq!(
        s.tree(),
        before_cfg,
        "nothing written locally (before: {} entries)",
        before.len()
    );
    pg.ctl_start();
    assert_eq!(versions(&pg, &s.0).len(), 1, "the old state");
    let r = run(&pg, &s.0, &apply, &[]);
    assert!(
        r.0 == 1 && r.2.contains("GP921"),
        "the lock names the apply that lost the server: {}",
        r.2
    );
}

/// Two runners (two working folders, one pg workspace) plan against the same state;
/// one applies; the other's saved plan is refused as stale (GP922), across machines.
#[test]
fn a_saved_plan_is_stale_after_another_runners_apply() {
    let Some(pg) = PgServer::start("stale") else {
        return;
    };
    let (a, b) = (runner("stale-a", 7), runner("stale-b", 7));
    plan_to(&pg, &a, "plan.json");
    plan_to(&pg, &b, "plan.json");
    let r = run(
        &pg,
        &b.0,
        &["apply", "plan.json", "--out-dir", "out", "--backend", "pg"],
        &[],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    let r = run(
        &pg,
        &a.0,
        &["apply", "plan.json", "--out-dir", "out", "--backend", "pg"],
        &[],
    );
    assert_eq!(r.0, 1);
    assert!(
        r.2.contains("GP922") && r.2.contains("state is now at serial 1"),
        "{}",
        r.2
    );
    assert!(!a.path("out").exists(), "nothing written");
    // A's next plan, against serial 1, applies.
    a.write("cluster/cluster.kdl", config(9));
    plan_to(&pg, &a, "plan.json");
    let r = run(
        &pg,
        &a.0,
        &["apply", "plan.json", "--out-dir", "out", "--backend", "pg"],
        &[],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert_eq!(versions(&pg, &a.0).len(), 2);
}

/// Migration: a local state pushed into pg (lineage and serial kept), pulled back byte
/// for byte, listed and shown; pushing the same again is a no-op, another lineage
/// (GP962) or an older serial (GP963) is refused; the backend and workspace come from
/// the configuration's `backend` node; `--lock-timeout` waits and then names the holder.
#[test]
fn state_push_pull_list_and_the_declared_backend() {
    let Some(pg) = PgServer::start("push") else {
        return;
    };
    let s = runner("push", 14);
    let apply = [
        "apply",
        "cluster",
        "--solver",
        "greedy",
        "--out-dir",
        "out",
        "--auto-approve",
    ];
    assert_eq!(run(&pg, &s.0, &apply, &[]).0, 0);
    push_and_pull(&pg, &s);
    // The configuration names the backend and workspace.
    let declared = format!("backend \"pg\" workspace=\"prod\"\n{}", config(14));
    declared_backend(&pg, &s, &apply, &declared);
    lock_timeout(&pg, &s, &apply, &declared);
}

/// `state push` and `pull` byte for byte; the pushed state is what plans compare with;
/// another lineage is refused (GP962).
fn push_and_pull(pg: &PgServer, s: &Scratch) {
    let local = s.read(".gpuplan/state.json");
    let r = run(
        pg,
        &s.0,
        &["state", "push", ".gpuplan/state.json", "--backend", "pg"],
        &[],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    let r = run(pg, &s.0, &["state", "pull", "--backend", "pg"], &[]);
    assert_eq!(r.1, local, "pulled byte for byte");
    let r = run(
        pg,
        &s.0,
        &["state", "push", ".gpuplan/state.json", "--backend", "pg"],
        &[],
    );
    assert!(r.0 == 0 && r.2.contains("already holds"), "{}", r.2);
    // The pg state is now what plans compare with: no changes.
    let r = run(
        pg,
        &s.0,
        &[
            "plan",
            "cluster",
            "--solver",
            "greedy",
            "--backend",
            "pg",
            "--detailed-exitcode",
        ],
        &[],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    // Another lineage, an older serial.
    let other = local.replacen("\"lineage\": \"", "\"lineage\": \"0", 1);
    s.write("other.json", &other);
    let r = run(
        pg,
        &s.0,
        &["state", "push", "other.json", "--backend", "pg"],
        &[],
    );
    assert!(r.0 == 1 && r.2.contains("GP962"), "{}", r.2);
}

/// The backend and workspace from the configuration: push, apply, `show PLAN` against
/// its state, an older serial refused (GP963), `state list` and `state show`.
fn declared_backend(pg: &PgServer, s: &Scratch, apply: &[&str], declared: &str) {
    s.write("cluster/cluster.kdl", declared);
    let r = run(
        pg,
        &s.0,
        &[
            "state",
            "push",
            ".gpuplan/state.json",
            "--config",
            "cluster",
        ],
        &[],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    s.write(
        "cluster/cluster.kdl",
        declared.replace("replicas=14", "replicas=7"),
    );
    let r = run(pg, &s.0, apply, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains("state serial 2 in pg workspace `prod`"),
        "{}",
        r.2
    );
    // `show PLAN` checks a saved plan against the declared backend's state.
    let r = run(
        pg,
        &s.0,
        &["plan", "cluster", "--solver", "greedy", "-o", "p.json"],
        &[],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    let r = run(pg, &s.0, &["show", "p.json"], &[]);
    assert!(r.0 == 0 && !r.2.contains("GP922"), "{}", r.2);
    let r = run(
        pg,
        &s.0,
        &[
            "state",
            "push",
            ".gpuplan/state.json",
            "--config",
            "cluster",
        ],
        &[],
    );
    assert!(r.0 == 1 && r.2.contains("GP963"), "{}", r.2);
    let r = run(pg, &s.0, &["state", "list", "--config", "cluster"], &[]);
    assert!(
        r.1.contains("serial    2") && r.1.contains("serial    1"),
        "{}",
        r.1
    );
    let r = run(
        pg,
        &s.0,
        &["state", "show", "1", "--config", "cluster"],
        &[],
    );
    assert!(r.0 == 0 && r.1.contains("serial 1\n"), "{}", r.1);
}

/// `--lock-timeout`: waits, then names the holder.
fn lock_timeout(pg: &PgServer, s: &Scratch, apply: &[&str], declared: &str) {
    let (ready, resume) = (s.path("ready"), s.path("resume"));
    s.write(
        "cluster/cluster.kdl",
        declared.replace("replicas=14", "replicas=5"),
    );
    let mut held = spawn(
        pg,
        &s.0,
        apply,
        &[
            ("GPUPLAN_TEST_PAUSE", "staged"),
            ("GPUPLAN_TEST_READY", ready.to_str().unwrap()),
            ("GPUPLAN_TEST_RESUME", resume.to_str().unwrap()),
        ],
    );
    wait_for(&ready, &mut held);
    let r = run(
        pg,
        &s.0,
        &[
            "state",
            "push",
            ".gpuplan/state.json",
            "--config",
            "cluster",
            "--lock-timeout",
            "1s",
        ],
        &[],
    );
    assert!(
        r.0 == 1 && r.2.contains("GP921") && r.2.contains(&format!("process {}", held.id())),
        "{}",
        r.2
    );
    std::fs::write(&resume, "go").unwrap();
    let r = common::run_of(&held.wait_with_output().unwrap());
    assert_eq!(r.0, 0, "{}", r.2);
}

/// Without a connection in the environment the pg backend is a coded error (GP961),
/// and a connection string in the KDL is refused (GP065) before anything is opened.
#[test]
fn missing_connection_and_credentials_in_the_configuration_are_coded() {
    let s = runner("noenv", 14);
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "--backend", "pg"]);
    assert!(r.0 == 1 && r.2.contains("GP961"), "{}", r.2);
    s.write(
        "cluster/cluster.kdl",
        format!(
            "backend \"pg\" dsn=\"postgresql://ci:hunter2@db/gpuplan\"\n{}",
            config(14)
        ),
    );
    let r = s.run(&[
        "apply",
        "cluster",
        "--solver",
        "greedy",
        "--out-dir",
        "out",
        "--auto-approve",
    ]);
    assert!(r.0 == 1 && r.2.contains("GP065"), "{}", r.2);
    assert!(!r.2.contains("GP003"), "{}", r.2);
    assert!(!s.path(".gpuplan").exists() && !s.path("out").exists());
}

/// SIGTERM during a pg apply removes its staging folder and releases its lock row (a
/// fresh connection deletes it), as for the local lock: the next apply needs no
/// force-unlock, and the state is the old one.
#[test]
fn sigterm_releases_the_pg_lock() {
    let Some(pg) = PgServer::start("sigterm") else {
        return;
    };
    let s = runner("sigterm", 14);
    let apply = [
        "apply",
        "cluster",
        "--solver",
        "greedy",
        "--out-dir",
        "out",
        "--auto-approve",
        "--backend",
        "pg",
    ];
    assert_eq!(run(&pg, &s.0, &apply, &[]).0, 0);
    s.write("cluster/cluster.kdl", config(7));
    let ready = s.path("ready");
    let mut child = spawn(
        &pg,
        &s.0,
        &apply,
        &[
            ("GPUPLAN_TEST_PAUSE", "staged"),
            ("GPUPLAN_TEST_READY", ready.to_str().unwrap()),
        ],
    );
    wait_for(&ready, &mut child);
    // SAFETY: a plain signal to the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let r = common::run_of(&child.wait_with_output().unwrap());
    assert_eq!(r.0, 143, "{}", r.2);
    let r = run(
        &pg,
        &s.0,
        &["state", "list", "--backend", "pg", "--format", "json"],
        &[],
    );
    let doc: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    assert!(doc["lock"].is_null(), "lock released: {}", r.1);
    assert_eq!(
        doc["versions"].as_array().unwrap().len(),
        1,
        "the old state"
    );
    std::fs::remove_file(&ready).unwrap();
    let staging: Vec<String> = common::tree(&s.0)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.contains(".tmp-"))
        .collect();
    assert!(staging.is_empty(), "{staging:?}");
    assert_eq!(run(&pg, &s.0, &apply, &[]).0, 0);
}
