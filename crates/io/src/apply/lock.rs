//! The state lock: one interface ([`Backend`]: `acquire` gives a [`Guard`] that releases
//! on drop) and its local implementation, [`FileLock`], a file `<state>.lock` beside the
//! state. A shared backend (a database) is another implementation of the same trait.
//!
//! The lock file is a few `key value` lines (unknown keys are ignored, so a later
//! gpuplan may add some; an old lock holding only `pid N` is still read):
//!
//! ```text
//! gpuplan-lock 1
//! host build-7
//! pid 4242
//! start 1234567
//! since 1760000000
//! operation apply
//! id 3f9c2a7d41e0b865
//! plan sha256:...
//! ```
//!
//! `id` names this lock for `gpuplan force-unlock ID`, `plan` is the digest of the saved
//! plan being applied (when there is one). `host` is the kernel's host name, `pid` the holder's process, `start` its start time
//! (field 22 of `/proc/PID/stat`, clock ticks since boot: a recycled PID has another),
//! `since` when the lock was taken (seconds since the Unix epoch), `operation` what holds
//! it. The file is published whole: written to a temporary sibling, then hard-linked to
//! the lock's name, which fails when a lock exists (`O_EXCL` where links do not work).
//!
//! **Takeover.** A lock whose holder is on this host and is gone (no `/proc/PID`, a
//! zombie, or a process with another start time) is stale: it is renamed aside to a name
//! only this attempt uses, read again there, and removed only when it is still the
//! stale lock that was judged; then the lock is created anew, with `O_EXCL`. Of two
//! applies that find one stale lock, one renames it and the other finds nothing to
//! rename; both then race on the exclusive create, which one wins. (An apply that moved
//! a fresh lock aside by mistake links it back without replacing anything.) A lock held
//! by a live process, on another host, without a host (an older gpuplan), or where this
//! system cannot tell (no `/proc`), is never taken over: GP921 names the holder.

// An apply fails once, with the one `Diagnostic` that explains it; boxing buys nothing.
#![allow(clippy::result_large_err)]

use super::interrupt;
use super::{GP921, io_error, lock_path, sync_dir};
use crate::diag::{Diagnostic, quoted};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// GP929: an interrupted apply was recovered from (a stale lock taken over, staging
/// folders removed or restored).
pub(crate) const GP929: &str = "GP929";

/// A state lock: [`FileLock`] here; a shared backend later.
pub(crate) trait Backend {
    /// Takes the lock for `operation` (`"apply"`), or says who holds it (GP921).
    fn acquire(&self, operation: &str) -> Result<Acquired, Diagnostic>;
}

/// A lock taken: the guard, and warnings to show (a stale lock taken over, GP929).
pub(crate) struct Acquired {
    pub guard: Guard,
    pub warnings: Vec<Diagnostic>,
}

/// Holds a lock; releases it when dropped.
pub(crate) struct Guard {
    release: Option<Box<dyn FnOnce() + Send>>,
}

impl Guard {
    /// A guard that runs `release` once, when dropped.
    pub(crate) fn new(release: impl FnOnce() + Send + 'static) -> Self {
        Guard {
            release: Some(Box::new(release)),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(r) = self.release.take() {
            r();
        }
    }
}

/// What a lock file says about its holder; every field optional (read leniently).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// The holder's start time: field 22 of `/proc/PID/stat`.
    pub start: Option<u64>,
    /// When the lock was taken, in seconds since the Unix epoch.
    pub since: Option<u64>,
    pub operation: Option<String>,
    /// The lock's ID (`gpuplan force-unlock ID`); random, fixed when it is taken.
    pub id: Option<String>,
    /// The digest of the saved plan being applied, when there is one.
    pub plan: Option<String>,
}

/// A new lock ID: 16 hex digits of a digest of the host, the process, the time and a
/// counter (unique enough to tell locks apart; not a secret).
pub(crate) fn new_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{:?} {} {now} {}",
        this_host(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let d = crate::state::sha256(seed.as_bytes());
    d["sha256:".len().."sha256:".len() + 16].to_string()
}

impl Record {
    /// The record of this process taking a lock for `operation` now.
    pub fn current(operation: &str) -> Record {
        let pid = std::process::id();
        Record {
            host: this_host(),
            pid: Some(pid),
            start: match process_start(pid) {
                Probe::Running(t) => t,
                _ => None,
            },
            since: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs()),
            operation: Some(operation.to_string()),
            id: Some(new_id()),
            plan: None,
        }
    }

    /// The lock file's text.
    pub(crate) fn to_text(&self) -> String {
        let mut s = String::from("gpuplan-lock 1\n");
        if let Some(h) = &self.host {
            s.push_str(&format!("host {h}\n"));
        }
        if let Some(p) = self.pid {
            s.push_str(&format!("pid {p}\n"));
        }
        if let Some(t) = self.start {
            s.push_str(&format!("start {t}\n"));
        }
        if let Some(t) = self.since {
            s.push_str(&format!("since {t}\n"));
        }
        if let Some(o) = &self.operation {
            s.push_str(&format!("operation {o}\n"));
        }
        if let Some(i) = &self.id {
            s.push_str(&format!("id {i}\n"));
        }
        if let Some(p) = &self.plan {
            s.push_str(&format!("plan {p}\n"));
        }
        s
    }

    /// Reads a lock file's text; what cannot be read is left out (never an error).
    pub(crate) fn parse(text: &str) -> Record {
        let mut r = Record::default();
        for line in text.lines() {
            let (key, value) = line
                .trim()
                .split_once(char::is_whitespace)
                .unwrap_or((line, ""));
            let value = value.trim();
            let word = || {
                Some(value.to_string()).filter(|v| {
                    !v.is_empty()
                        && v.len() <= 255
                        && !v.chars().any(|c| c.is_control() || c.is_whitespace())
                })
            };
            match key {
                "host" => r.host = word(),
                "pid" => r.pid = value.parse().ok().filter(|p| *p > 0),
                "start" => r.start = value.parse().ok(),
                "since" => r.since = value.parse().ok(),
                "operation" => r.operation = word(),
                "id" => r.id = word(),
                "plan" => r.plan = word(),
                _ => {}
            }
        }
        r
    }

    /// "process 4242 on host `build-7` (start 1234567), taken 5m 2s ago for `apply`".
    pub fn describe(&self) -> String {
        let mut s = match self.pid {
            Some(p) => format!("process {p}"),
            None => "an unknown process".to_string(),
        };
        match &self.host {
            Some(h) => s.push_str(&format!(" on host {}", quoted(h))),
            None => s.push_str(" on an unnamed host"),
        }
        if let Some(t) = self.start {
            s.push_str(&format!(" (start {t})"));
        }
        if let Some(since) = self.since {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(since, |d| d.as_secs());
            s.push_str(&format!(", taken {} ago", age(now.saturating_sub(since))));
        }
        if let Some(o) = &self.operation {
            s.push_str(&format!(" for {}", quoted(o)));
        }
        if let Some(p) = &self.plan {
            s.push_str(&format!(" of the plan {}", quoted(p)));
        }
        if let Some(i) = &self.id {
            s.push_str(&format!(" (lock ID {})", quoted(i)));
        }
        s
    }
}

/// A duration for people: `42s`, `5m 2s`, `3h 10m`, `2d 4h`.
fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        3600..86400 => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {}h", secs / 86400, secs % 86400 / 3600),
    }
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `/etc/hostname`).
pub(crate) fn this_host() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty() && !s.chars().any(|c| c.is_control() || c.is_whitespace()))
}

/// Whether a process runs, as `/proc` tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// No such process (or a zombie: it has exited).
    Gone,
    /// It runs; its start time when `/proc/PID/stat` could be read.
    Running(Option<u64>),
    /// This system has no `/proc` to ask.
    Unknown,
}

/// Probes process `pid` through `/proc/PID/stat`.
pub(crate) fn process_start(pid: u32) -> Probe {
    if pid == 0 || std::fs::metadata("/proc/self/stat").is_err() {
        return Probe::Unknown;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => {
            // `pid (comm) state ...`: comm may hold spaces and parentheses, so the
            // fields are counted from the last `)`; `state` is field 3, `starttime` 22.
            let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            match fields.first() {
                Some(&("Z" | "X" | "x")) => Probe::Gone,
                _ => Probe::Running(fields.get(19).and_then(|t| t.parse().ok())),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Probe::Gone,
        // It exists but cannot be read: count it as running.
        Err(_) => Probe::Running(None),
    }
}

/// Whether a process of this host that started staging folders is gone.
pub(crate) fn is_gone(pid: u32) -> bool {
    process_start(pid) == Probe::Gone
}

/// What a lock file's holder is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Holder {
    /// On this host and gone: the lock may be taken over. Says why.
    Dead(String),
    /// Running on this host.
    Alive,
    /// Cannot be told (another host, no host, no `/proc`). Says why.
    Unknown(String),
}

/// Judges a lock's holder, seen from `host` (this one).
pub(crate) fn judge(r: &Record, host: Option<&str>) -> Holder {
    let Some(pid) = r.pid else {
        return Holder::Unknown("the lock file names no process".into());
    };
    let Some(theirs) = &r.host else {
        return Holder::Unknown(
            "the lock file names no host (an older gpuplan wrote it), so whether its process runs cannot be told"
                .into(),
        );
    };
    match host {
        Some(mine) if mine == theirs => {}
        Some(mine) => {
            return Holder::Unknown(format!(
                "it is held from another host ({} is not this host, {})",
                quoted(theirs),
                quoted(mine)
            ));
        }
        None => return Holder::Unknown("this host's name cannot be read".into()),
    }
    match (process_start(pid), r.start) {
        (Probe::Gone, _) => Holder::Dead(format!("process {pid} is gone")),
        (Probe::Running(Some(now)), Some(then)) if now != then => Holder::Dead(format!(
            "process {pid} is another process now (start {now}, the holder's was {then})"
        )),
        (Probe::Running(_), _) => Holder::Alive,
        (Probe::Unknown, _) => {
            Holder::Unknown("this system has no /proc to tell whether it runs".into())
        }
    }
}

/// The local lock: `<state>.lock`, beside the state.
pub(crate) struct FileLock {
    state: PathBuf,
    /// The holder's record when set ([`FileLock::holder`]); else [`Record::current`].
    holder: Option<Record>,
}

impl FileLock {
    pub(crate) fn new(state: &Path) -> Self {
        FileLock {
            state: state.to_path_buf(),
            holder: None,
        }
    }

    /// The record the lock file is written with (its ID, the plan's digest).
    pub(crate) fn holder(mut self, r: Record) -> Self {
        self.holder = Some(r);
        self
    }
}

impl Backend for FileLock {
    /// Creates the state's folder when missing; when the lock is released (or not
    /// taken), every folder this call created is removed again if it is still empty, so
    /// an apply that is refused leaves nothing behind.
    fn acquire(&self, operation: &str) -> Result<Acquired, Diagnostic> {
        let path = lock_path(&self.state);
        let record = self
            .holder
            .clone()
            .unwrap_or_else(|| Record::current(operation));
        let created = create_parents(&path)?;
        // Removes what this call created, if still empty (innermost first).
        let cleanup = move |created: &[PathBuf]| {
            for d in created.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        };
        match take(&self.state, &path, &record) {
            Ok(warnings) => {
                let held = path.clone();
                interrupt::guarded(|reg| {
                    for d in created.iter().rev() {
                        reg.empty_dir(d);
                    }
                });
                let guard = Guard::new(move || {
                    interrupt::guarded(|reg| {
                        let _ = std::fs::remove_file(&held);
                        reg.forget(&held);
                        for d in &created {
                            reg.forget(d);
                        }
                    });
                    cleanup(&created);
                });
                Ok(Acquired { guard, warnings })
            }
            Err(d) => {
                cleanup(&created);
                Err(d)
            }
        }
    }
}

/// Creates the folders above `path` that are missing; returns them, outermost first.
fn create_parents(path: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(Vec::new());
    };
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| std::fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
    Ok(missing)
}

/// A name beside `lock` that only this attempt uses: `<lock>.<what>-<pid>-<n>`.
fn sibling(lock: &Path, what: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let mut s = lock.as_os_str().to_owned();
    s.push(format!(
        ".{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    PathBuf::from(s)
}

/// Takes the lock at `path`, taking over a stale one; returns the warnings.
fn take(state: &Path, path: &Path, me: &Record) -> Result<Vec<Diagnostic>, Diagnostic> {
    let host = this_host();
    let text = me.to_text();
    let mut warnings = Vec::new();
    let mut busy = 0;
    for _ in 0..100 {
        match publish(path, &text) {
            Ok(true) => {
                remove_dead_leftovers(path);
                return Ok(warnings);
            }
            Ok(false) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A refused apply removed the (empty) state folder meanwhile.
                create_parents(path)?;
                continue;
            }
            Err(e) => return Err(io_error("create the lock file", path, e)),
        }
        let held = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_error("read the lock file", path, e)),
        };
        let record = Record::parse(&String::from_utf8_lossy(&held));
        match judge(&record, host.as_deref()) {
            Holder::Dead(why) => match take_aside(path, &held) {
                Ok(Aside::Removed) => warnings.push(
                    Diagnostic::warning(
                        GP929,
                        format!(
                            "took over the lock `{}` of {}: {why}",
                            path.display(),
                            record.describe()
                        ),
                    )
                    .with_help(
                        "an earlier apply was killed; the state it left is valid (the next \
                         plan shows what it did not record), and its staging folders are removed",
                    ),
                ),
                Ok(Aside::Changed) => {}
                Ok(Aside::Busy(claim)) => {
                    // Another apply is taking it over: a matter of microseconds. A claim
                    // that stays is the leftover of one killed in between.
                    busy += 1;
                    if busy > 20 {
                        let _ = std::fs::remove_file(&claim);
                        busy = 0;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(io_error("move aside the stale lock", path, e)),
            },
            Holder::Alive => {
                return Err(locked(
                    state,
                    path,
                    &record,
                    "it is still running",
                    "wait for that `gpuplan apply` to finish",
                ));
            }
            Holder::Unknown(why) => {
                return Err(locked(
                    state,
                    path,
                    &record,
                    &why,
                    "wait for the other `gpuplan apply` to finish",
                ));
            }
        }
    }
    Err(locked(
        state,
        path,
        &Record::default(),
        "the lock file kept changing",
        "another gpuplan is taking the lock; try again",
    ))
}

fn locked(state: &Path, path: &Path, r: &Record, why: &str, first: &str) -> Diagnostic {
    let help = match &r.id {
        Some(id) => format!(
            "{first}; once you know no gpuplan holds it, `gpuplan force-unlock {id}` removes \
             it (a local lock cannot see processes on other machines)"
        ),
        None => format!(
            "{first}; remove `{}` by hand only when no gpuplan holds it (a local lock cannot \
             see processes on other machines)",
            path.display()
        ),
    };
    Diagnostic::error(
        GP921,
        format!(
            "the state `{}` is locked by {}: {why}",
            state.display(),
            r.describe()
        ),
    )
    .with_help(help)
}

/// Publishes the lock with its whole text: a temporary sibling, hard-linked to `path`
/// (fails when `path` exists). `Ok(false)`: a lock exists. Where links do not work, the
/// lock is created with `O_EXCL` and then written.
fn publish(path: &Path, text: &str) -> std::io::Result<bool> {
    let tmp = sibling(path, "new");
    interrupt::guarded(|reg| {
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            reg.file(&tmp);
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })();
        let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
        let _ = std::fs::remove_file(&tmp);
        reg.forget(&tmp);
        match linked {
            Ok(()) => {
                reg.file(path);
                sync_dir(path.parent().unwrap_or(Path::new(".")));
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(e),
            Err(_) => match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(mut f) => {
                    reg.file(path);
                    f.write_all(text.as_bytes())?;
                    f.sync_all()?;
                    Ok(true)
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            },
        }
    })
}

/// What [`take_aside`] did.
#[derive(Debug, PartialEq, Eq)]
enum Aside {
    /// The stale lock is gone: create the lock now.
    Removed,
    /// The lock is no longer the stale one (taken over, released): look again.
    Changed,
    /// Another apply is taking this stale lock over right now (it holds the claim).
    Busy(PathBuf),
}

/// The claim on one stale lock: `<lock>.stale-<digest of its bytes>`, the same name for
/// every apply that judged the same bytes stale.
fn claim_path(lock: &Path, held: &[u8]) -> PathBuf {
    let digest = crate::state::sha256(held);
    let mut s = lock.as_os_str().to_owned();
    s.push(format!(
        ".stale-{}",
        &digest[digest.len().saturating_sub(16)..]
    ));
    PathBuf::from(s)
}

/// Removes the stale lock whose bytes were `held`, so that at most one apply does.
///
/// The lock is hard-linked to the claim name (fails when another apply holds the
/// claim); the claim's bytes are read: when they are `held`, the lock file was still the
/// stale one at the link, and since only the claim's holder removes it, it still is: it
/// is removed, then the claim. Otherwise the claim is dropped and nothing is touched.
/// Where hard links do not work, the lock is renamed to a name of this attempt instead,
/// checked there, and linked back (never over a lock) when it was a fresh one.
fn take_aside(path: &Path, held: &[u8]) -> std::io::Result<Aside> {
    let claim = claim_path(path, held);
    match std::fs::hard_link(path, &claim) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Aside::Changed),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(Aside::Busy(claim)),
        Err(_) => return rename_aside(path, held),
    }
    let claimed = std::fs::read(&claim).unwrap_or_default();
    if claimed != held {
        let _ = std::fs::remove_file(&claim);
        return Ok(Aside::Changed);
    }
    let removed = std::fs::remove_file(path);
    let _ = std::fs::remove_file(&claim);
    match removed {
        Ok(()) => Ok(Aside::Removed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Aside::Changed),
        Err(e) => Err(e),
    }
}

/// [`take_aside`] without hard links.
fn rename_aside(path: &Path, held: &[u8]) -> std::io::Result<Aside> {
    let aside = sibling(path, "stale");
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Aside::Changed),
        Err(e) => return Err(e),
    }
    if std::fs::read(&aside).unwrap_or_default() == held {
        std::fs::remove_file(&aside)?;
        return Ok(Aside::Removed);
    }
    // Another apply took the lock between the read and the rename: put its lock back,
    // never over a lock that exists now.
    if std::fs::hard_link(&aside, path).is_ok()
        || std::fs::symlink_metadata(path).is_ok()
        || std::fs::rename(&aside, path).is_err()
    {
        let _ = std::fs::remove_file(&aside);
    }
    Ok(Aside::Changed)
}

/// The lock's own temporary files left by killed processes: `<lock>.new-<pid>-<n>` and
/// `<lock>.stale-<pid>-<n>` of a process of this host that is gone, and every claim
/// `<lock>.stale-<digest>` (while the lock is held, no takeover is under way). Removed
/// once the lock is taken; only plain files with exactly these names.
fn remove_dead_leftovers(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let name = name.to_string_lossy();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let f = e.file_name();
        let f = f.to_string_lossy();
        let dead = |rest: &str| {
            super::pid_and_number(rest).is_some_and(|p| p != std::process::id() && is_gone(p))
        };
        let leftover = if let Some(rest) = f.strip_prefix(&format!("{name}.new-")) {
            dead(rest)
        } else if let Some(rest) = f.strip_prefix(&format!("{name}.stale-")) {
            dead(rest) || (rest.len() == 16 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
        } else {
            false
        };
        if leftover {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PID above every `pid_max` (2^22): no such process.
    const DEAD: u32 = 999_999_999;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gpuplan-lock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn records_round_trip_and_parse_leniently() {
        let r = Record::current("apply");
        assert_eq!(Record::parse(&r.to_text()), r);
        assert_eq!(r.pid, Some(std::process::id()));
        let old = Record::parse("pid 4242\n");
        assert_eq!(old.pid, Some(4242));
        assert_eq!(old.host, None);
        let junk = Record::parse("host \u{1b}[31m\npid x\nstart -1\n\0\0");
        assert_eq!(junk, Record::default());
        assert!(matches!(
            judge(&old, this_host().as_deref()),
            Holder::Unknown(_)
        ));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn judges_holders() {
        let host = this_host();
        let me = Record::current("apply");
        assert_eq!(judge(&me, host.as_deref()), Holder::Alive);
        let dead = Record {
            pid: Some(DEAD),
            ..me.clone()
        };
        assert!(matches!(judge(&dead, host.as_deref()), Holder::Dead(_)));
        let recycled = Record {
            start: me.start.map(|s| s + 1),
            ..me.clone()
        };
        assert!(matches!(judge(&recycled, host.as_deref()), Holder::Dead(_)));
        let elsewhere = Record {
            host: Some("another-host".into()),
            pid: Some(DEAD),
            ..me
        };
        assert!(matches!(
            judge(&elsewhere, host.as_deref()),
            Holder::Unknown(_)
        ));
    }

    /// Two (here eight) applies find one stale lock: exactly one takes it over, the
    /// others are refused with GP921 naming the winner.
    #[cfg(target_os = "linux")]
    #[test]
    fn concurrent_takeovers_of_one_stale_lock_have_one_winner() {
        for round in 0..20 {
            let d = scratch(&format!("race{round}"));
            let state = d.join("state.json");
            let stale = Record {
                pid: Some(DEAD),
                ..Record::current("apply")
            };
            std::fs::write(lock_path(&state), stale.to_text()).unwrap();
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (state, barrier) = (state.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        FileLock::new(&state).acquire("apply")
                    })
                })
                .collect();
            let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let won: Vec<&Acquired> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
            assert_eq!(won.len(), 1, "round {round}: exactly one winner");
            for r in &results {
                if let Err(d) = r {
                    assert_eq!(d.code, GP921, "{}", d.message);
                }
            }
            let on_disk = Record::parse(&std::fs::read_to_string(lock_path(&state)).unwrap());
            assert_eq!(on_disk.pid, Some(std::process::id()));
            drop(results);
            assert!(!lock_path(&state).exists(), "released");
            let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
            assert!(left.is_empty(), "{left:?}");
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    #[test]
    fn a_refused_lock_removes_the_folders_it_created() {
        let d = scratch("folders");
        let state = d.join("a/b/state.json");
        let held = FileLock::new(&state).acquire("apply").unwrap();
        assert!(lock_path(&state).is_file());
        drop(held);
        assert!(!d.join("a").exists(), "created folders removed when empty");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn ages_read_well() {
        assert_eq!(age(5), "5s");
        assert_eq!(age(302), "5m 2s");
        assert_eq!(age(3 * 3600 + 600), "3h 10m");
        assert_eq!(age(2 * 86400 + 4 * 3600), "2d 4h");
    }
}
