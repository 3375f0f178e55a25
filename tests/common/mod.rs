//! Helpers shared by the integration tests: a scratch folder that runs the real
//! `gpuplan` binary, a snapshot of a folder tree, and the property-test configuration.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary gave: exit code, stdout, stderr.
pub type Run = (i32, String, String);

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
        let o = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
            .args(args)
            .current_dir(&self.0)
            .env("NO_COLOR", "1")
            .env_remove("CI")
            .env_remove("GPUPLAN_TEST_FAIL_AFTER")
            .output()
            .expect("run gpuplan");
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
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
