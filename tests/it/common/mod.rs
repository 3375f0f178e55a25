//! Helpers shared by the integration tests: the one runner of the real `gpuplan` binary
//! ([`command`], [`gpuplan`], [`gpuplan_in`], [`Scratch`]), the bundled examples and
//! planning in-process ([`examples`], [`load_dir`], [`plan`]), a snapshot of a folder
//! tree, insta's filters, the property-test configuration and the random-cluster
//! generators ([`arb`]).
#![allow(dead_code)] // each test binary uses its own subset

pub mod arb;
pub mod nccl_grammar;
pub mod pg;
pub mod schema_check;

use gpuplan::model::Cluster;
use gpuplan::pipeline::{self, Settings};
use gpuplan::placement::{self, Placement};
use gpuplan::solve::{self, Options, SolveStatus, SolverKind};
use gpuplan::source::SourceMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tool or input a test needs is missing: under `CI=true` the test fails (CI must run
/// every check, issue 32); elsewhere it says why it skips and the caller returns.
pub fn missing(what: &str) {
    assert!(
        std::env::var("CI").ok().as_deref() != Some("true"),
        "{what} (CI=true: a missing tool fails the test instead of skipping it)"
    );
    eprintln!("skipped: {what}");
}

// ------------------------------------------------------------------ the binary

/// The real `gpuplan` binary, ready to run: no colours (`NO_COLOR=1`), no CI detection
/// (`CI` removed) and no test hooks (`GPUPLAN_TEST_FAIL_AFTER`, `GPUPLAN_TEST_PAUSE`,
/// `GPUPLAN_TEST_READY` removed). Every test that runs the binary starts here; add
/// arguments, a working folder or more environment.
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpuplan"));
    c.env("NO_COLOR", "1")
        .env_remove("CI")
        .env_remove("GPUPLAN_TEST_FAIL_AFTER")
        .env_remove("GPUPLAN_TEST_PAUSE")
        .env_remove("GPUPLAN_TEST_READY")
        .env_remove("GPUPLAN_TEST_RESUME");
    // A developer's database settings never reach a test (tests/it/common/pg.rs sets them).
    for k in [
        "GPUPLAN_PG_DSN",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
        "PGSERVICE",
    ] {
        c.env_remove(k);
    }
    c
}

/// Runs `gpuplan ARGS` in the current folder (the repository root).
pub fn gpuplan<S: AsRef<OsStr>>(args: &[S]) -> Output {
    command().args(args).output().expect("run gpuplan")
}

/// Runs `gpuplan ARGS` with `dir` as working folder.
pub fn gpuplan_in<S: AsRef<OsStr>>(dir: impl AsRef<Path>, args: &[S]) -> Output {
    command()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run gpuplan")
}

/// What one run of the binary gave: exit code, stdout, stderr.
pub type Run = (i32, String, String);

/// An [`Output`] as a [`Run`] (exit code -1 when killed by a signal).
pub fn run_of(o: &Output) -> Run {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A temporary folder, removed on drop; commands run with it as working directory.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// An empty scratch folder named after `tag` and the process.
    pub fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("gpuplan-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// Copies a file or folder of the repository (path relative to its root) to `to`.
    pub fn copy_in(&self, from: &str, to: &str) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(from);
        copy(&src, &self.0.join(to));
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }

    pub fn read(&self, p: &str) -> String {
        std::fs::read_to_string(self.path(p)).unwrap()
    }

    pub fn write(&self, p: &str, text: impl AsRef<[u8]>) {
        let path = self.path(p);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    /// Runs `gpuplan ARGS` here, without colours, CI detection or test hooks.
    pub fn run(&self, args: &[&str]) -> Run {
        run_of(&gpuplan_in(&self.0, args))
    }

    /// [`Scratch::run`] with more environment (a test hook such as
    /// `GPUPLAN_TEST_FAIL_AFTER`).
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = command();
        c.args(args).current_dir(&self.0);
        for (k, v) in env {
            c.env(k, v);
        }
        run_of(&c.output().expect("run gpuplan"))
    }

    /// Every file under the scratch folder (path, bytes), sorted; links as `-> target`.
    pub fn tree(&self) -> Vec<(String, Vec<u8>)> {
        tree(&self.0)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy(src: &Path, dst: &Path) {
    if src.is_dir() {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap().flatten() {
            copy(&e.path(), &dst.join(e.file_name()));
        }
    } else {
        if let Some(d) = dst.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::copy(src, dst).unwrap();
    }
}

/// Every entry under `dir` (files with their bytes, folders and links as markers),
/// sorted by path: two equal trees mean nothing was written, removed or renamed.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.push((rel, format!("-> {}", target.display()).into_bytes()));
            } else if meta.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                walk(root, &p, out);
            } else {
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Whether a run ended in a Rust panic (exit code 101 or a panic message).
pub fn panicked(r: &Run) -> bool {
    r.0 == 101 || r.2.contains("panicked at")
}

/// The diagnostic codes (`GPnnn`) a run printed on stderr.
pub fn codes(r: &Run) -> Vec<String> {
    let mut out = Vec::new();
    let b = r.2.as_bytes();
    for i in 0..b.len().saturating_sub(4) {
        if &b[i..i + 2] == b"GP"
            && b[i + 2..i + 5].iter().all(u8::is_ascii_digit)
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
        {
            out.push(r.2[i..i + 5].to_string());
        }
    }
    out
}

/// Imported KDL made usable: each `gpu-model` an importer declared without memory (under
/// its `// memory unknown` comment) gets `memory`, as the user is told to do; the rest of
/// the text is kept.
pub fn complete_placeholders(kdl: &str, memory: &str) -> String {
    kdl.lines()
        .map(|l| match l.split_once("  // memory unknown") {
            Some((decl, _)) if l.starts_with("gpu-model ") => format!("{decl} memory=\"{memory}\""),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Property-test configuration: a fixed seed, so CI runs the same cases every time
/// (a failure found once becomes a regression test). `PROPTEST_CASES=N` changes the
/// number of cases; `GPUPLAN_PROPTEST_SEED=N` another fixed seed, `=random` a new
/// random one per run (long sweeps on demand, outside CI).
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let seed = match std::env::var("GPUPLAN_PROPTEST_SEED").ok().as_deref() {
        Some("random") => RngSeed::Random,
        Some(s) => RngSeed::Fixed(
            s.parse()
                .expect("GPUPLAN_PROPTEST_SEED: a number or `random`"),
        ),
        None => RngSeed::Fixed(0x0067_7075_706c_616e), // "gpuplan"
    };
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        rng_seed: seed,
        ..Config::default()
    }
}

// ------------------------------------------------------------------ models and plans

/// The bundled examples (`examples/*/`, relative to the repository root), sorted.
pub fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("examples")
        .expect("run from the repository root")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// The files (name, text) as one configuration.
pub fn sources(files: &[(String, String)]) -> SourceMap {
    let mut s = SourceMap::new();
    for (name, text) in files {
        s.add(name.clone(), text.as_str());
    }
    s
}

/// Validates `sources`: the model, or the messages of its errors (a generated cluster
/// may be invalid; the caller decides what that means).
pub fn try_load(sources: &SourceMap) -> Result<Cluster, Vec<String>> {
    let outcome = gpuplan::validate::validate(sources);
    let errors: Vec<String> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect();
    if errors.is_empty() {
        Ok(outcome.model.expect("model"))
    } else {
        Err(errors)
    }
}

/// Validates `sources`; panics with every error unless there are none (warnings are
/// allowed).
pub fn load(sources: &SourceMap) -> Cluster {
    let outcome = gpuplan::validate::validate(sources);
    let errors: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    outcome.model.expect("model")
}

/// The `*.kdl` files under `dir` (an example folder), loaded and validated without
/// errors.
pub fn load_dir(dir: impl AsRef<Path>) -> Cluster {
    let (sources, diags) = gpuplan::load::load_paths(&[dir.as_ref().to_path_buf()]);
    assert!(diags.is_empty(), "{}: {diags:#?}", dir.as_ref().display());
    load(&sources)
}

/// One configuration file (`test.kdl`), validated without errors.
pub fn load_text(text: &str) -> Cluster {
    let mut sources = SourceMap::new();
    sources.add("test.kdl", text.to_string());
    load(&sources)
}

/// Plans a valid model as `gpuplan plan` does after validation ([`pipeline::place`]:
/// solve, build the placement, verify it with the independent checker), with the
/// default settings and `solver`. Panics when the placement fails the checker: GP901,
/// or the ILP's placement giving way to greedy's (`status: fallback`), which a test
/// must not mistake for the ILP's.
pub fn plan(c: &Cluster, solver: SolverKind) -> Placement {
    plan_from(c, None, solver)
}

/// [`plan`] moving as little as possible from `previous` (its moves reported).
pub fn plan_from(c: &Cluster, previous: Option<&Placement>, solver: SolverKind) -> Placement {
    let settings = Settings {
        solver,
        ..Settings::default()
    };
    match pipeline::place(c, previous, &settings, &mut |_| {}) {
        Ok((p, _)) => {
            assert_ne!(
                p.solver.status,
                SolveStatus::Fallback,
                "{solver:?}: the placement failed the checker: {}",
                p.solver.note.as_deref().unwrap_or("")
            );
            p
        }
        Err((d, _)) => panic!("{solver:?}: the placement fails the checker: {d:#?}"),
    }
}

/// The solver's placement as built, with the default options and `solver`, and NOT
/// verified: no checker, so no fall back to greedy either. For tests that judge the raw
/// output themselves (the checker's violations in the failure message, the oracle's
/// levels, a placement broken by hand) or plan models no checker would accept; every
/// other test uses [`plan`].
pub fn unchecked(c: &Cluster, solver: SolverKind) -> Placement {
    let opts = Options {
        solver,
        ..Options::default()
    };
    // As `pipeline::place` does: on the planner's view when the cluster needs one
    // (authorities, CUDA, spot capacity), names restored.
    let view = c
        .needs_view()
        .then(|| gpuplan::model::authority::solver_view(c));
    let m = view.as_ref().unwrap_or(c);
    let (a, info) = solve::run(m, &opts);
    let mut p = placement::build(m, &a, &info);
    if view.is_some() {
        p.restore_model_names();
    }
    p
}

// ------------------------------------------------------------------ snapshots

/// insta's filter for gpuplan's version (`gpuplan 0.1.0` in the headers of generated
/// files): snapshots say `gpuplan [version]`, so a version bump rewrites none of them.
pub const VERSION_FILTER: (&str, &str) = (r#"gpuplan \d+\.\d+\.\d+[^\s"]*"#, "gpuplan [version]");

/// The current insta settings with [`VERSION_FILTER`]: bind them (`bind`,
/// `bind_to_scope`) around every snapshot of rendered files.
pub fn snapshot_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(VERSION_FILTER.0, VERSION_FILTER.1);
    s
}
