//! Where the state lives and how it is locked: one interface, [`Store`], for the local
//! file ([`local`], the default) and for a database shared by every runner ([`pg`]).
//!
//! The locking semantics are the same for every backend (docs/apply.md, "Backends"):
//!
//! - `plan` (and `drift`, `show`, ...) reads the state without locking ([`Store::read`]);
//! - `apply` takes the lock ([`lock`], waiting up to `--lock-timeout`), re-reads the state
//!   under it ([`Held::read`]), refuses a saved plan whose state moved (GP922), writes the
//!   artifacts, stages the new state ([`Held::prepare`]: every check that can fail, before
//!   the output folder is swapped), swaps the output folder, commits the state
//!   ([`Held::commit`]) and releases the lock ([`Held::release`]);
//! - a lock names its holder ([`Record`]: host, process, start, time, operation, the plan's
//!   digest, an ID); a holder that died leaves it, and `gpuplan force-unlock ID`
//!   ([`Store::force_unlock`]) removes it. Only the local lock can tell that a holder on
//!   this host is gone and takes its lock over (GP929); a shared backend cannot see the
//!   holder's machine and never does.
//! - every state version is kept by the shared backend ([`Store::versions`], the last
//!   `keep` of them when the declaration says so); `state push` writes a state only over
//!   one of its lineage and an older serial.
//!
//! The backend comes from `--backend` or the configuration's `backend` node
//! ([`Choice`]); credentials only from the environment, which the commands read and pass
//! in ([`pg::Connect`]).

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

pub mod local;
pub mod pg;

use crate::apply::lock::Record;
use crate::diag::{Diagnostic, quoted};
use crate::state::{Loaded, State};
use std::time::{Duration, Instant};

/// GP960: the state backend cannot be reached, or an operation on it failed.
pub(crate) const GP960: &str = "GP960";
/// GP961: the backend settings are invalid (an unknown kind, a missing connection).
pub const GP961: &str = "GP961";
/// GP962: `state push` refused: the state belongs to another lineage.
pub const GP962: &str = "GP962";
/// GP963: `state push` refused: the state is not newer than the backend's.
pub const GP963: &str = "GP963";
/// GP964: `force-unlock ID`: no lock with that ID.
pub(crate) const GP964: &str = "GP964";
/// GP965: `state show SERIAL`: no such version.
pub const GP965: &str = "GP965";
/// GP966: the lock was lost, or the serial taken, while applying: nothing recorded.
pub(crate) const GP966: &str = "GP966";

/// One state version a backend keeps.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Version {
    pub serial: u64,
    pub lineage: String,
    /// Digest of the state's bytes (what a plan's `prior_state.digest` records).
    pub digest: String,
    pub plan_digest: String,
    pub gpuplan_version: String,
    /// When it was written (the backend's clock, RFC 3339), when the backend records it.
    pub written_at: Option<String>,
    /// Who wrote it (`host pid`), when the backend records it.
    pub written_by: Option<String>,
}

impl Version {
    /// The version a state describes.
    pub(crate) fn of(l: &Loaded) -> Version {
        Version {
            serial: l.state.serial,
            lineage: l.state.lineage.clone(),
            digest: l.digest.clone(),
            plan_digest: l.state.plan_digest.clone(),
            gpuplan_version: l.state.gpuplan_version.clone(),
            written_at: None,
            written_by: None,
        }
    }
}

/// Why a lock was not taken.
pub enum Attempt {
    /// Another holder has it (GP921, naming it): worth another try until the timeout.
    Busy(Diagnostic),
    /// Anything else (the backend cannot be reached, ...): final.
    Failed(Diagnostic),
}

/// Where the state is, and its lock.
pub trait Store {
    /// The state's place, for messages: `` `.gpuplan/state.json` ``, `` pg workspace `prod` ``.
    fn name(&self) -> String;
    /// The current state, without locking; `None` before the first apply.
    fn read(&self) -> Result<Option<Loaded>, Diagnostic>;
    /// One attempt at the lock, for `who`.
    fn try_lock(&self, who: &Record) -> Result<Box<dyn Held>, Attempt>;
    /// The lock's holder, if the state is locked.
    fn holder(&self) -> Result<Option<Record>, Diagnostic>;
    /// Removes the lock whose ID is `id`; returns its holder.
    fn force_unlock(&self, id: &str) -> Result<Record, Diagnostic>;
    /// Every version kept, newest first.
    fn versions(&self) -> Result<Vec<Version>, Diagnostic>;
    /// The version with serial `serial`, if kept.
    fn version(&self, serial: u64) -> Result<Option<Loaded>, Diagnostic>;
}

/// A lock held. Dropping it releases the lock too (best effort); [`Held::release`] says
/// whether that worked.
pub trait Held {
    /// The lock's ID.
    fn id(&self) -> String;
    /// Warnings of taking it (a stale local lock taken over, GP929).
    fn take_warnings(&mut self) -> Vec<Diagnostic>;
    /// The current state, read under the lock.
    fn read(&mut self) -> Result<Option<Loaded>, Diagnostic>;
    /// Records the digest of the plan being applied (once it is known).
    fn note_plan(&mut self, digest: &str);
    /// Stages `next` (its text `text`) as the state following `prior`: everything that
    /// can refuse it (the lock lost, the serial taken, the backend gone) happens here,
    /// before the output folder is swapped.
    fn prepare(
        &mut self,
        prior: Option<&Loaded>,
        next: &State,
        text: &str,
    ) -> Result<(), Diagnostic>;
    /// Makes the staged state the current one.
    fn commit(&mut self) -> Result<(), Diagnostic>;
    /// Releases the lock.
    fn release(self: Box<Self>) -> Result<(), Diagnostic>;
}

/// Takes the lock of `store` for `who`, trying again every 250 ms (up to 1 s apart)
/// while another holder has it, until `timeout` has passed (0: one attempt, as
/// Terraform's default `-lock-timeout=0s`).
pub fn lock(
    store: &dyn Store,
    who: &Record,
    timeout: Duration,
) -> Result<Box<dyn Held>, Diagnostic> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        match store.try_lock(who) {
            Ok(h) => return Ok(h),
            Err(Attempt::Failed(d)) => return Err(d),
            Err(Attempt::Busy(d)) => {
                let left = timeout.saturating_sub(start.elapsed());
                if left.is_zero() {
                    return Err(d);
                }
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// Which backend a command uses: `--backend` wins over the configuration's `backend`
/// node; neither: the local file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The state file at this path (`--state`).
    Local(std::path::PathBuf),
    /// PostgreSQL: the workspace (one state and one lock per workspace) and how many
    /// versions to keep (`None`: all).
    Pg {
        workspace: String,
        keep: Option<u64>,
    },
}

/// The default workspace of a shared backend.
pub const DEFAULT_WORKSPACE: &str = "default";

impl Choice {
    /// Opens the store; `connect` says how to reach PostgreSQL (from the environment).
    pub fn open(&self, connect: &pg::Connect) -> Result<Box<dyn Store>, Diagnostic> {
        match self {
            Choice::Local(p) => Ok(Box::new(local::Local::new(p))),
            Choice::Pg { workspace, keep } => {
                Ok(Box::new(pg::Pg::new(connect.clone(), workspace, *keep)?))
            }
        }
    }
}

/// A workspace name ([`crate::names::workspace`]).
pub use crate::names::workspace as check_workspace;

/// GP921 for a lock `who` holds on `place`: names the holder, its state and the
/// `force-unlock` that removes it.
pub(crate) fn locked(place: &str, who: &Record, why: &str) -> Diagnostic {
    let unlock = match &who.id {
        Some(id) => format!(
            "once you know no gpuplan holds it (a crashed apply leaves its lock), `gpuplan \
             force-unlock {id}` removes it"
        ),
        None => "the lock has no ID: remove it by hand once you know no gpuplan holds it".into(),
    };
    Diagnostic::error(
        crate::apply::GP921,
        format!("the state ({place}) is locked by {}: {why}", who.describe()),
    )
    .with_help(format!(
        "wait for it to finish (`--lock-timeout 5m` waits); {unlock}"
    ))
}

/// GP964: no lock with the ID `id` (`holder` is the lock there is, if any).
pub(crate) fn no_such_lock(place: &str, id: &str, holder: Option<&Record>) -> Diagnostic {
    let what = match holder {
        Some(r) => format!("it is locked by {}", r.describe()),
        None => "it is not locked".into(),
    };
    Diagnostic::error(
        GP964,
        format!("no lock {} on the state ({place}): {what}", quoted(id)),
    )
    .with_help("give the ID that GP921 or `gpuplan state list` shows; nothing was removed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_are_checked() {
        assert!(check_workspace("prod").is_ok());
        assert!(check_workspace("").is_err());
        assert!(check_workspace("a\nb").is_err());
        assert!(check_workspace(&"x".repeat(201)).is_err());
    }
}
