//! The local backend: the state file (`.gpuplan/state.json` or `--state PATH`) and its
//! lock file beside it ([`crate::apply::lock::FileLock`], with the takeover of a dead
//! holder of this host). It keeps the current version only, as before backends existed:
//! keep it in version control or a versioned bucket for history.

use super::{Attempt, Held, Store, Version};
use crate::apply::lock::{Backend, FileLock, Guard, Record};
use crate::apply::{self, GP921, lock_path};
use crate::diag::Diagnostic;
use crate::state::{Loaded, State};
use std::path::{Path, PathBuf};

/// The state file at a path.
pub(crate) struct Local {
    path: PathBuf,
}

impl Local {
    pub(crate) fn new(path: &Path) -> Self {
        Local {
            path: path.to_path_buf(),
        }
    }

    fn lock_record(&self) -> Option<Record> {
        std::fs::read(lock_path(&self.path))
            .ok()
            .map(|b| Record::parse(&String::from_utf8_lossy(&b)))
    }
}

impl Store for Local {
    fn name(&self) -> String {
        format!("`{}`", self.path.display())
    }

    fn read(&self) -> Result<Option<Loaded>, Diagnostic> {
        apply::read_state(&self.path)
    }

    fn try_lock(&self, who: &Record) -> Result<Box<dyn Held>, Attempt> {
        let op = who.operation.clone().unwrap_or_else(|| "apply".into());
        match FileLock::new(&self.path).holder(who.clone()).acquire(&op) {
            Ok(a) => Ok(Box::new(LocalHeld {
                path: self.path.clone(),
                id: who.id.clone().unwrap_or_default(),
                guard: Some(a.guard),
                warnings: a.warnings,
                staged: None,
            })),
            Err(d) if d.code == GP921 => Err(Attempt::Busy(d)),
            Err(d) => Err(Attempt::Failed(d)),
        }
    }

    fn holder(&self) -> Result<Option<Record>, Diagnostic> {
        Ok(self.lock_record())
    }

    fn force_unlock(&self, id: &str) -> Result<Record, Diagnostic> {
        let held = self.lock_record();
        match held {
            Some(r) if r.id.as_deref() == Some(id) => {
                let path = lock_path(&self.path);
                std::fs::remove_file(&path).map_err(|e| {
                    Diagnostic::error(
                        apply::GP924,
                        format!("cannot remove the lock `{}`: {e}", path.display()),
                    )
                    .with_help("check the folder's permissions")
                })?;
                Ok(r)
            }
            other => Err(super::no_such_lock(&self.name(), id, other.as_ref())),
        }
    }

    fn versions(&self) -> Result<Vec<Version>, Diagnostic> {
        Ok(self.read()?.iter().map(Version::of).collect())
    }

    fn version(&self, serial: u64) -> Result<Option<Loaded>, Diagnostic> {
        Ok(self.read()?.filter(|l| l.state.serial == serial))
    }
}

/// The local lock held.
struct LocalHeld {
    path: PathBuf,
    id: String,
    guard: Option<Guard>,
    warnings: Vec<Diagnostic>,
    staged: Option<String>,
}

impl Held for LocalHeld {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn take_warnings(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.warnings)
    }

    fn read(&mut self) -> Result<Option<Loaded>, Diagnostic> {
        apply::read_state(&self.path)
    }

    fn note_plan(&mut self, _digest: &str) {
        // The lock file is published whole once; the plan's digest is written when it
        // is known at the lock (a saved plan).
    }

    fn prepare(
        &mut self,
        _prior: Option<&Loaded>,
        _next: &State,
        text: &str,
    ) -> Result<(), Diagnostic> {
        self.staged = Some(text.to_string());
        Ok(())
    }

    /// Written to a temporary sibling, fsynced and renamed over the state, under the
    /// signal registry's lock: a signal's handler waits until the state is renamed, so
    /// the lock is never removed while the state is written.
    fn commit(&mut self) -> Result<(), Diagnostic> {
        let text = self.staged.take().unwrap_or_default();
        apply::interrupt::guarded(|_| apply::write_file_atomically(&self.path, &text))
    }

    fn release(mut self: Box<Self>) -> Result<(), Diagnostic> {
        drop(self.guard.take());
        Ok(())
    }
}
