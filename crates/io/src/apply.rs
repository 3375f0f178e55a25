//! Applying a plan: the stale-plan check, the state lock, atomic writes of the output
//! folder and of the state, and recovery from an apply that was killed. The only module
//! besides `commands/` that writes files.
//!
//! Order of an apply, and what an interruption at each step leaves behind:
//!
//! 1. take the lock ([`lock`]: `<state>.lock` with host, PID, start time, age; a lock of
//!    a dead process of this host is taken over, GP929); created only once the cheap,
//!    state-free refusals passed, and with it the state's folder, removed again when
//!    the apply is refused and the folder is still empty;
//! 2. read the state and check the saved plan against it and against the inputs;
//! 3. clean up after a killed apply ([`recover_staging`]), then write every file into a
//!    staging folder next to the output folder (each file fsynced), then swap it in by
//!    rename: an interruption before the swap leaves the old folder untouched, and the
//!    staging folder is removed (by the signal handler, [`interrupt`], or after SIGKILL by
//!    the next apply);
//! 4. write the new state to a temporary sibling, fsync, rename, fsync the folder: an
//!    interruption before the rename leaves the previous state intact and valid (the
//!    next plan then shows the same changes again, and applying them is idempotent).

// An apply fails once, with the one `Diagnostic` that explains it; boxing buys nothing.
#![allow(clippy::result_large_err)]

pub mod interrupt;
pub mod lock;

use crate::diag::Diagnostic;
use crate::plan::{self, Plan};
use crate::state::{self, Loaded, State};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// GP921: the state is locked by another gpuplan (or a stale lock file).
pub(crate) const GP921: &str = "GP921";
/// GP922: the saved plan is stale: the inputs or the state changed since it was made.
pub(crate) const GP922: &str = "GP922";
/// GP924: the output folder or the state cannot be written.
pub const GP924: &str = "GP924";

/// The marker file that says gpuplan wrote a folder (and may replace it); shared with
/// `gpuplan render`, so either command may take over a folder the other wrote.
pub const MARKER: &str = ".gpuplan-render";

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::error(GP924, format!("cannot {what} `{}`: {e}", path.display()))
        .with_help("check the path, its permissions and the free space, then apply again")
}

/// The lock file of a state path.
pub(crate) fn lock_path(state: &Path) -> PathBuf {
    let mut s = state.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// `<pid>-<n>` (both plain decimal numbers, nothing else): the PID of a staging name.
fn pid_and_number(rest: &str) -> Option<u32> {
    let (pid, n) = rest.split_once('-')?;
    let digits = |x: &str| !x.is_empty() && x.len() <= 10 && x.bytes().all(|b| b.is_ascii_digit());
    if digits(pid) && digits(n) {
        pid.parse().ok().filter(|p| *p > 0)
    } else {
        None
    }
}

/// Reads the state; `None` when there is none yet.
pub fn read_state(path: &Path) -> Result<Option<Loaded>, Diagnostic> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| {
                Diagnostic::error(
                    state::GP920,
                    format!(
                        "`{}` is not a valid gpuplan state: not UTF-8",
                        path.display()
                    ),
                )
                .with_help("restore the file from a backup, or move it away to start over")
            })?;
            state::parse(&path.display().to_string(), text).map(Some)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Diagnostic::error(
            state::GP920,
            format!("cannot read the state `{}`: {e}", path.display()),
        )
        .with_help("check the path and its permissions; `--state PATH` picks another file")),
    }
}

/// GP922 when the state is not the one the plan was made against.
pub(crate) fn stale_state(p: &Plan, current: Option<&Loaded>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let now = current.map(|l| (&l.state.lineage, l.state.serial, &l.digest));
    let then = p
        .prior_state
        .as_ref()
        .map(|s| (&s.lineage, s.serial, &s.digest));
    if now != then {
        let what = match (then, now) {
            (None, Some((_, serial, _))) => {
                format!("the plan was made with no state, and the state is now at serial {serial}")
            }
            (Some(_), None) => "the state the plan was made against no longer exists".to_string(),
            (Some((l1, _, _)), Some((l2, _, _))) if l1 != l2 => {
                format!("the state belongs to another lineage (`{l2}`, the plan has `{l1}`)")
            }
            (Some((_, s1, _)), Some((_, s2, _))) => {
                format!("the state changed since the plan was made (serial {s1} then, {s2} now)")
            }
            (None, None) => unreachable!("equal"),
        };
        out.push(
            Diagnostic::error(GP922, format!("saved plan is stale: {what}")).with_help(
                "make a new plan with `gpuplan plan ... -o PLAN`, review it, then apply it",
            ),
        );
    }
    out
}

/// GP922 when the input files are not those the plan was made from.
pub(crate) fn stale_inputs(p: &Plan, inputs: &[plan::InputFile]) -> Option<Diagnostic> {
    // The list too, not only its digest: a plan whose list was edited (an entry added
    // for a file that is not there) is as stale as one whose files changed.
    if plan::inputs_digest(inputs) == p.inputs_digest && p.inputs == inputs {
        return None;
    }
    let old: std::collections::BTreeMap<&str, &str> = p
        .inputs
        .iter()
        .map(|i| (i.path.as_str(), i.sha256.as_str()))
        .collect();
    let new: std::collections::BTreeMap<&str, &str> = inputs
        .iter()
        .map(|i| (i.path.as_str(), i.sha256.as_str()))
        .collect();
    let mut changed: Vec<String> = Vec::new();
    // One wording whether a file is gone or changed: a tampered plan naming a path
    // must not learn whether a file exists there (or whether a digest guess is right).
    for (path, d) in &old {
        if new.get(path) != Some(d) {
            changed.push(format!("{} is not as planned", crate::diag::quoted(path)));
        }
    }
    for path in new.keys().filter(|p| !old.contains_key(*p)) {
        changed.push(format!("{} is new", crate::diag::quoted(path)));
    }
    Some(
        Diagnostic::error(
            GP922,
            format!(
                "saved plan is stale: the input files changed since it was made ({})",
                changed.join(", ")
            ),
        )
        .with_help("make a new plan with `gpuplan plan ... -o PLAN`, review it, then apply it"),
    )
}

/// The state after applying `p` over `prior`.
pub fn next_state(p: &Plan, prior: Option<&Loaded>, out_dir: &str, lineage_seed: &str) -> State {
    State {
        format_version: state::FORMAT_VERSION,
        lineage: prior.map_or_else(
            || state::lineage_from_seed(lineage_seed),
            |l| l.state.lineage.clone(),
        ),
        serial: prior.map_or(1, |l| l.state.serial + 1),
        gpuplan_version: env!("CARGO_PKG_VERSION").to_string(),
        inputs_digest: p.inputs_digest.clone(),
        plan_digest: state::sha256(plan::view::json(p).as_bytes()),
        out_dir: out_dir.to_string(),
        artifacts: p.artifacts.clone(),
        placement: p.placement.clone(),
    }
}

/// Writes `text` to `path` atomically: temporary sibling, fsync, rename, fsync of the
/// folder (created when missing). The one writer of single files: the state, saved
/// plans (`plan -o`), imports and generated files (`-o FILE`).
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "gpuplan".into());
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    // A leftover of a crashed run with the same pid goes; the file is then created new
    // (never through a link someone put there).
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(&parent);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// [`write_atomically`], failing with apply's I/O diagnostic.
pub fn write_file_atomically(path: &Path, text: &str) -> Result<(), Diagnostic> {
    write_atomically(path, text).map_err(|e| io_error("write", path, e))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Options of [`write_dir`].
#[derive(Default)]
pub struct WriteOptions<'a> {
    /// Fail after this many files (tests: `GPUPLAN_TEST_FAIL_AFTER`), as a crash would.
    pub fail_after: Option<usize>,
    /// Called after each file.
    pub progress: Option<&'a dyn Fn()>,
    /// Called at named points (tests: `GPUPLAN_TEST_PAUSE`, to stop the process there):
    /// `staged` (every file in the staging folder, before the swap) and `swapping`
    /// (between the two renames of the swap; a signal waits until the swap is done, so
    /// only SIGKILL stops a process paused there).
    pub pause: Option<&'a dyn Fn(&str)>,
    /// Called once every file is staged, before the swap: a refusal here (the state
    /// backend cannot record the new state, say) removes the staging folder and leaves
    /// the output folder untouched.
    pub before_swap: Option<&'a dyn Fn() -> Result<(), Diagnostic>>,
}

/// Writes `files` as the whole contents of `dir`, all or nothing: files go into a
/// staging folder beside `dir`, which then replaces `dir` by rename. A `dir` that
/// gpuplan did not write (no marker) and that is not empty is never replaced.
///
/// Every path is checked before anything is touched ([`state::check_artifact_paths`]:
/// plain relative paths only, GP927), and every file is created new inside the staging
/// folder, whose real path is checked again before each write, so nothing is written
/// outside `dir` whatever the paths say. The staging folder and the old folder are
/// siblings of `dir` with names nobody else uses (`.<dir>.tmp-<pid>-<n>`,
/// `.<dir>.old-<pid>-<n>`); they are created by this call and gone when it returns.
pub fn write_dir(
    dir: &Path,
    files: &crate::render::Files,
    opts: &WriteOptions<'_>,
) -> Result<(), Diagnostic> {
    state::check_artifact_paths(files.keys(), "the output")?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            Diagnostic::error(GP924, format!("`{}` is not a folder name", dir.display()))
                .with_help("give --out-dir a folder name, e.g. `out/`")
        })?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let exists = std::fs::symlink_metadata(dir).is_ok();
    if exists {
        let owned = dir.join(MARKER).is_file();
        let empty = std::fs::read_dir(dir)
            .map_err(|e| io_error("read", dir, e))?
            .next()
            .is_none();
        if !owned && !empty {
            return Err(Diagnostic::error(
                GP924,
                format!(
                    "`{}` exists and was not written by gpuplan; refusing to replace it",
                    dir.display()
                ),
            )
            .with_help("choose an empty or new folder for --out-dir"));
        }
    }
    std::fs::create_dir_all(&parent).map_err(|e| io_error("create", &parent, e))?;
    let tmp = fresh_dir(&parent, &format!(".{name}.tmp-{}", std::process::id()))?;
    let cleanup = |e: Diagnostic| {
        interrupt::guarded(|reg| {
            let _ = std::fs::remove_dir_all(&tmp);
            reg.forget(&tmp);
        });
        e
    };
    fill(&tmp, files, opts).map_err(cleanup)?;
    if let Some(pause) = opts.pause {
        pause("staged");
    }
    if let Some(check) = opts.before_swap {
        check().map_err(cleanup)?;
    }
    // The swap and the registry's update are one step for a signal's handler: it never
    // sees the staging folder registered after it became `dir`.
    let swapped = interrupt::guarded(|reg| {
        let old = if exists {
            let old = unused_name(&parent, &format!(".{name}.old-{}", std::process::id()))?;
            std::fs::rename(dir, &old).map_err(|e| io_error("move aside", dir, e))?;
            Some(old)
        } else {
            None
        };
        if let Some(pause) = opts.pause {
            pause("swapping");
        }
        if let Err(e) = std::fs::rename(&tmp, dir) {
            if let Some(old) = &old {
                let _ = std::fs::rename(old, dir);
            }
            return Err(io_error("replace", dir, e));
        }
        reg.forget(&tmp);
        if let Some(old) = &old {
            reg.dir(old);
        }
        Ok(old)
    });
    let old = swapped.map_err(cleanup)?;
    sync_dir(&parent);
    if let Some(old) = old {
        interrupt::guarded(|reg| {
            let _ = std::fs::remove_dir_all(&old);
            reg.forget(&old);
        });
    }
    Ok(())
}

/// Cleans up after applies that were killed (SIGKILL, a crash, a power cut) while
/// writing `dir`; call it while holding the state lock, before writing `dir`. Returns
/// warnings (GP929) saying what it did.
///
/// Only siblings of `dir` named exactly `.<dir>.tmp-<pid>-<n>` or `.<dir>.old-<pid>-<n>`
/// that are real folders (never links) are looked at, and only those whose process is
/// gone (this host's `/proc`; a folder of this process is one [`write_dir`] has not
/// registered). Nothing outside `dir`'s parent is touched.
///
/// - `.tmp-*` (a staging folder: new files never swapped in) is removed.
/// - `.old-*` (the previous output, moved aside by the swap) is the only copy of it when
///   the process died between the swap's two renames: then `dir` is missing. An `.old-*`
///   folder that holds exactly the marker and the files `state` records (the output the
///   state describes, whose texts the state also holds) is renamed back to `dir` when
///   `dir` is missing, and removed otherwise (the swap had finished). One that does not
///   match the state (a `gpuplan render` killed mid-swap, a half-removed folder) is never
///   removed: a warning names it on every apply until someone moves it back or away.
pub fn recover_staging(dir: &Path, state: Option<&State>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let (Some(name), parent) = (
        dir.file_name().map(|n| n.to_string_lossy().into_owned()),
        match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        },
    ) else {
        return out;
    };
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return out;
    };
    let (dead_tmp, mut dead_old) = dead_staging(dir, &name, entries);
    dead_old.sort();
    let (mut known, unknown): (Vec<PathBuf>, Vec<PathBuf>) = dead_old
        .into_iter()
        .partition(|o| state.is_some_and(|s| holds_exactly(o, s)));
    if std::fs::symlink_metadata(dir).is_err() && !known.is_empty() {
        let o = known.remove(0);
        if std::fs::rename(&o, dir).is_ok() {
            sync_dir(&parent);
            out.push(
                Diagnostic::warning(
                    lock::GP929,
                    format!(
                        "restored `{}` from `{}`: an earlier apply was killed while replacing it",
                        dir.display(),
                        o.display()
                    ),
                )
                .with_help("it holds the files the state records; the apply goes on"),
            );
        }
    }
    let mut removed = Vec::new();
    for p in dead_tmp.iter().chain(&known) {
        if std::fs::remove_dir_all(p).is_ok() {
            removed.push(format!("`{}`", p.display()));
        }
    }
    if !removed.is_empty() {
        out.push(
            Diagnostic::warning(
                lock::GP929,
                format!(
                    "removed the staging folder(s) of a killed apply: {}",
                    removed.join(", ")
                ),
            )
            .with_help("nothing to do: they held no file that is not elsewhere"),
        );
    }
    for o in &unknown {
        out.push(
            Diagnostic::warning(
                lock::GP929,
                format!(
                    "kept `{}`: an earlier gpuplan was killed while replacing `{}`, and this \
                     folder, which is not what the state records, may be the only copy of \
                     what `{}` held before",
                    o.display(),
                    dir.display(),
                    dir.display()
                ),
            )
            .with_help("move it back or remove it once you know what it holds"),
        );
    }
    out
}

/// The staging (`.NAME.tmp-*`) and moved-aside (`.NAME.old-*`) folders beside `dir`
/// whose process is gone: (staging, moved aside).
fn dead_staging(dir: &Path, name: &str, entries: std::fs::ReadDir) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (tmp, old) = (format!(".{name}.tmp-"), format!(".{name}.old-"));
    let mut dead_tmp = Vec::new();
    let mut dead_old = Vec::new();
    for e in entries.flatten() {
        let f = e.file_name();
        let Some(f) = f.to_str() else { continue };
        let (is_old, rest) = match (f.strip_prefix(&tmp), f.strip_prefix(&old)) {
            (Some(r), _) => (false, r),
            (_, Some(r)) => (true, r),
            _ => continue,
        };
        let Some(pid) = pid_and_number(rest) else {
            continue;
        };
        // Never a link: `file_type` does not follow it.
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = dir.with_file_name(f);
        let gone = if pid == std::process::id() {
            !interrupt::guarded(|reg| reg.has(&path))
        } else {
            lock::is_gone(pid)
        };
        if gone {
            if is_old {
                dead_old.push(path);
            } else {
                dead_tmp.push(path);
            }
        }
    }
    (dead_tmp, dead_old)
}

/// Whether `dir` holds exactly the marker and the artifacts `state` records, with the
/// same text (no link, no other file).
fn holds_exactly(dir: &Path, state: &State) -> bool {
    fn walk(root: &Path, d: &Path, out: &mut Vec<(String, PathBuf)>) -> bool {
        let Ok(rd) = std::fs::read_dir(d) else {
            return false;
        };
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { return false };
            let p = e.path();
            if t.is_dir() {
                if !walk(root, &p, out) {
                    return false;
                }
            } else if t.is_file() {
                let Ok(rel) = p.strip_prefix(root) else {
                    return false;
                };
                out.push((rel.to_string_lossy().replace('\\', "/"), p));
            } else {
                return false;
            }
        }
        true
    }
    let mut files = Vec::new();
    if !walk(dir, dir, &mut files) {
        return false;
    }
    files.len() == state.artifacts.len() + 1
        && files.iter().all(|(rel, p)| {
            rel == MARKER
                || state
                    .artifacts
                    .get(rel.as_str())
                    .is_some_and(|a| std::fs::read(p).is_ok_and(|b| b == a.text.as_bytes()))
        })
}

/// Creates a new, empty folder `<base>-<n>` in `parent` (the first `n` not taken) and
/// returns it: never reuses or removes something that exists.
fn fresh_dir(parent: &Path, base: &str) -> Result<PathBuf, Diagnostic> {
    for n in 0..1000 {
        let p = parent.join(format!("{base}-{n}"));
        let created = interrupt::guarded(|reg| {
            let r = std::fs::create_dir(&p);
            if r.is_ok() {
                reg.dir(&p);
            }
            r
        });
        match created {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error("create", &p, e)),
        }
    }
    Err(Diagnostic::error(
        GP924,
        format!(
            "no free staging folder name `{base}-N` in `{}`",
            parent.display()
        ),
    )
    .with_help("remove the leftover `.NAME.tmp-*` folders of interrupted runs"))
}

/// A name `<base>-<n>` in `parent` that nothing uses (not even a dangling link).
fn unused_name(parent: &Path, base: &str) -> Result<PathBuf, Diagnostic> {
    (0..1000)
        .map(|n| parent.join(format!("{base}-{n}")))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .ok_or_else(|| {
            Diagnostic::error(
                GP924,
                format!("no free name `{base}-N` in `{}`", parent.display()),
            )
            .with_help("remove the leftover `.NAME.old-*` folders of interrupted runs")
        })
}

fn fill(
    root: &Path,
    files: &crate::render::Files,
    opts: &WriteOptions<'_>,
) -> Result<(), Diagnostic> {
    let real_root = root
        .canonicalize()
        .map_err(|e| io_error("resolve", root, e))?;
    write_synced(
        &root.join(MARKER),
        "written by gpuplan (`render` or `apply`); the whole folder is replaced on the next one\n",
    )?;
    for (n, (rel, text)) in files.iter().enumerate() {
        if opts.fail_after == Some(n) {
            return Err(Diagnostic::error(
                GP924,
                format!("simulated failure after {n} files (GPUPLAN_TEST_FAIL_AFTER)"),
            )
            .with_help("the output folder and the state are unchanged; apply again"));
        }
        let path = root.join(rel);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| io_error("create", p, e))?;
            // The folder the file goes into, as the OS resolves it, must be inside the
            // staging folder (nothing else can have put a link there, but check).
            let real = p.canonicalize().map_err(|e| io_error("resolve", p, e))?;
            if !real.starts_with(&real_root) {
                return Err(Diagnostic::error(
                    state::GP927,
                    format!(
                        "`{rel}` would be written to `{}`, outside the output folder",
                        real.display()
                    ),
                )
                .with_help("nothing was written; a link in the staging folder points outside it"));
            }
        }
        // One file at a time under the registry's lock: a signal's cleanup never races
        // a write into the folder it removes.
        interrupt::guarded(|_| write_synced(&path, text))?;
        #[cfg(unix)]
        if rel.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
        }
        if let Some(p) = opts.progress {
            p();
        }
    }
    Ok(())
}

/// Creates a new file (never follows or replaces an existing one, link or not) with
/// `text`, and fsyncs it.
fn write_synced(path: &Path, text: &str) -> Result<(), Diagnostic> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io_error("write", path, e))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_error("write", path, e))
}
