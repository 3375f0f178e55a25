//! What a signal undoes: a small registry of the paths this process created and must
//! remove if it is stopped by SIGINT, SIGTERM or SIGHUP (the state lock, the lock's
//! temporary file, staging folders), and the handler that removes them.
//!
//! [`install`] starts one handler thread (`signal-hook`); on a signal it takes the
//! registry's mutex, removes every registered path (folders first, the lock last), prints
//! one line and exits with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM,
//! 129 for SIGHUP). It never releases the mutex, so the main thread cannot start another
//! write once cleanup began.
//!
//! Every write whose interruption would leave the registry wrong runs inside
//! [`guarded`], under the same mutex: creating the lock and registering it, creating a
//! staging folder and registering it, each file written into it, the swap of the output
//! folder (two renames and the registry update), the state's rename, removing the lock.
//! So the handler sees either before or after each of them, never half of one: it never
//! removes a staging folder that has just become the output folder, nor the lock while
//! the state is being renamed. SIGKILL cannot be handled; the next apply recovers from it
//! ([`super::lock`]'s takeover, [`super::recover_staging`]).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Something to remove on a signal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A file (the lock, its temporary file): removed last.
    File(PathBuf),
    /// A folder and everything in it (a staging folder): removed first.
    Dir(PathBuf),
    /// A folder this process created for the lock: removed last, only when empty.
    EmptyDir(PathBuf),
}

/// Something to run on a signal (a shared backend's lock release), with its ID.
struct Hook(u64, Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hook({})", self.0)
    }
}

/// The paths this process removes on a signal, and the hooks it runs.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    entries: Vec<Entry>,
    hooks: Vec<Hook>,
    next_hook: u64,
}

impl Registry {
    /// Adds a file to remove on a signal.
    pub(crate) fn file(&mut self, p: &Path) {
        self.entries.push(Entry::File(p.to_path_buf()));
    }

    /// Adds a folder to remove (with its contents) on a signal.
    pub(crate) fn dir(&mut self, p: &Path) {
        self.entries.push(Entry::Dir(p.to_path_buf()));
    }

    /// Adds a folder to remove on a signal if it is empty then (after everything else,
    /// in the order added: add the innermost first).
    pub(crate) fn empty_dir(&mut self, p: &Path) {
        self.entries.push(Entry::EmptyDir(p.to_path_buf()));
    }

    /// Forgets `p` (it was removed, or it became something to keep).
    pub(crate) fn forget(&mut self, p: &Path) {
        self.entries.retain(|e| match e {
            Entry::File(x) | Entry::Dir(x) | Entry::EmptyDir(x) => x != p,
        });
    }

    /// Adds something to run on a signal, after the paths are removed (a shared
    /// backend's lock release); returns its ID for [`Registry::forget_hook`].
    pub(crate) fn hook(&mut self, f: Box<dyn FnOnce() + Send>) -> u64 {
        self.next_hook += 1;
        self.hooks.push(Hook(self.next_hook, f));
        self.next_hook
    }

    /// Forgets the hook `id` (the lock it releases was released).
    pub(crate) fn forget_hook(&mut self, id: u64) {
        self.hooks.retain(|h| h.0 != id);
    }

    /// Whether `p` is registered (a staging folder of this process).
    pub(crate) fn has(&self, p: &Path) -> bool {
        self.entries.iter().any(|e| match e {
            Entry::File(x) | Entry::Dir(x) | Entry::EmptyDir(x) => x == p,
        })
    }

    /// Removes everything registered: folders first, then files. Never follows a link:
    /// a registered folder that is now a link is unlinked, not walked.
    fn remove_all(&mut self) -> usize {
        let mut n = 0;
        for e in &self.entries {
            if let Entry::Dir(p) = e {
                if remove_dir_tree(p) {
                    n += 1;
                }
            }
        }
        for e in &self.entries {
            if let Entry::File(p) = e {
                if std::fs::remove_file(p).is_ok() {
                    n += 1;
                }
            }
        }
        for e in &self.entries {
            if let Entry::EmptyDir(p) = e {
                let _ = std::fs::remove_dir(p);
            }
        }
        self.entries.clear();
        for Hook(_, f) in std::mem::take(&mut self.hooks) {
            f();
            n += 1;
        }
        n
    }
}

/// Removes a folder tree without following links; `true` when something was removed.
pub(crate) fn remove_dir_tree(p: &Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).is_ok(),
        Ok(_) => std::fs::remove_file(p).is_ok(),
        Err(_) => false,
    }
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Mutex::new(Registry::default()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with the registry locked: a signal's cleanup waits until `f` returns.
pub(crate) fn guarded<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    f(&mut registry())
}

/// The exit code for a signal: 128 + its number.
pub(crate) fn exit_code(signal: i32) -> i32 {
    128 + signal
}

fn name(signal: i32) -> &'static str {
    match signal {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        signal_hook::consts::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Installs the handler of SIGINT, SIGTERM and SIGHUP (once per process; later calls do
/// nothing). Returns `false` when it cannot be installed: then a signal kills the
/// process as before, and the next apply recovers as after SIGKILL.
pub fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return false;
        };
        std::thread::Builder::new()
            .name("gpuplan-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let mut reg = registry();
                    let removed = reg.remove_all();
                    let what = if removed > 0 {
                        "; removed the lock and the staging folders of this run"
                    } else {
                        ""
                    };
                    eprintln!("gpuplan: interrupted by {}{what}", name(sig));
                    // The registry stays locked: no write starts after the cleanup.
                    std::process::exit(exit_code(sig));
                }
            })
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_removes_folders_then_files_and_never_follows_links() {
        let d = std::env::temp_dir().join(format!("gpuplan-interrupt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("stage/sub")).unwrap();
        std::fs::create_dir_all(d.join("outside")).unwrap();
        std::fs::write(d.join("outside/keep"), "x").unwrap();
        std::fs::write(d.join("stage/sub/f"), "x").unwrap();
        std::fs::write(d.join("lock"), "x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("outside"), d.join("link")).unwrap();
        let mut r = Registry::default();
        r.dir(&d.join("stage"));
        r.file(&d.join("lock"));
        r.dir(&d.join("link"));
        std::fs::create_dir_all(d.join("made/inner")).unwrap();
        r.empty_dir(&d.join("made/inner"));
        r.empty_dir(&d.join("made"));
        r.empty_dir(&d.join("outside"));
        assert!(r.has(&d.join("lock")));
        r.remove_all();
        assert!(!d.join("stage").exists() && !d.join("lock").exists());
        assert!(
            !d.join("made").exists(),
            "empty folders removed, innermost first"
        );
        assert!(d.join("outside/keep").is_file(), "a link is not followed");
        let _ = std::fs::remove_dir_all(&d);
    }
}
