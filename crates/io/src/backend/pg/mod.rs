//! The PostgreSQL backend: every state version as a row, and the lock as a row.
//!
//! Two tables, created on first use (under a transaction-scoped advisory lock, so that
//! two first runs do not race on the DDL) in the connection's `search_path`:
//!
//! - `gpuplan_states (workspace, serial, lineage, digest, plan_digest, gpuplan_version,
//!   written_at, written_by, body)`, primary key `(workspace, serial)`: the state's JSON
//!   text exactly as a local state file holds it (`body`, whose SHA-256 is `digest`, the
//!   digest a saved plan records). The primary key makes "exactly one state per serial"
//!   a property of the database, whatever happens to the lock (a `force-unlock` while an
//!   apply runs included);
//! - `gpuplan_locks (workspace, id, host, pid, start_time, since, operation, plan_digest,
//!   gpuplan_version, session_pid, session_start)`, primary key `workspace`: the lock.
//!
//! Decision: a lock **row**, not an advisory lock. A session advisory lock goes away
//! with the connection, so a crashed apply would leave no trace of who held the state
//! and what it was doing; Terraform's S3 lock file and the issue ask for the opposite: a
//! crashed apply's lock names its holder until `gpuplan force-unlock ID`. The row records
//! the holder's database session too (`pg_backend_pid()` and its start), so GP921 says
//! whether that session is still open or gone (crashed, or lost its network).
//!
//! An apply writes its state in one transaction: the lock is checked to be still its
//! own, the newest serial to be the one it read, and the new row is inserted (and the
//! versions past `keep` deleted) **before** the output folder is swapped; the `COMMIT`
//! after. A process killed in between leaves the transaction to the server, which rolls
//! it back: the state is the old one or the new one, never a mix.
//!
//! The connection comes from the environment only (never the KDL): `GPUPLAN_PG_DSN`
//! (a libpq connection string or URL), else libpq's `PGHOST`, `PGPORT`, `PGUSER`,
//! `PGPASSWORD`, `PGDATABASE`, `PGCONNECT_TIMEOUT`. No TLS: a socket or a trusted
//! network (`sslmode=require` is refused, GP961).

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

use super::{Attempt, GP960, GP966, Held, Store, Version};
use crate::apply::interrupt;
use crate::apply::lock::Record;
use crate::diag::{Diagnostic, quoted};
use crate::state::{self, GP920, Loaded, State};
use postgres::{Client, NoTls};
use std::time::Duration;

mod connect;
pub use connect::Connect;

/// GP960 for a failed operation on the backend.
fn failed(what: &str, e: &postgres::Error) -> Diagnostic {
    let mut msg = e.to_string();
    if let Some(src) = std::error::Error::source(e) {
        let s = src.to_string();
        if !msg.contains(&s) {
            msg = format!("{msg}: {s}");
        }
    }
    Diagnostic::error(GP960, format!("the pg backend failed to {what}: {msg}")).with_help(
        "check that the server runs and is reachable with the environment's settings \
         (GPUPLAN_PG_DSN or PGHOST...); nothing was recorded",
    )
}

const SCHEMA: &str = "
BEGIN;
SELECT pg_advisory_xact_lock(7162254443318330187);
CREATE TABLE IF NOT EXISTS gpuplan_states (
    workspace text NOT NULL,
    serial bigint NOT NULL,
    lineage text NOT NULL,
    digest text NOT NULL,
    plan_digest text NOT NULL,
    gpuplan_version text NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    written_by text NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (workspace, serial)
);
CREATE TABLE IF NOT EXISTS gpuplan_locks (
    workspace text PRIMARY KEY,
    id text NOT NULL,
    host text,
    pid bigint,
    start_time bigint,
    since bigint,
    operation text,
    plan_digest text,
    gpuplan_version text NOT NULL,
    session_pid integer NOT NULL,
    session_start text
);
COMMIT;";

/// The PostgreSQL store of one workspace.
pub(crate) struct Pg {
    config: postgres::Config,
    workspace: String,
    keep: Option<u64>,
}

impl Pg {
    pub(crate) fn new(
        connect: Connect,
        workspace: &str,
        keep: Option<u64>,
    ) -> Result<Pg, Diagnostic> {
        Ok(Pg {
            config: connect.config()?,
            workspace: workspace.to_string(),
            keep,
        })
    }

    /// A connection, with the tables created when missing.
    fn client(&self) -> Result<Client, Diagnostic> {
        let mut c = self
            .config
            .connect(NoTls)
            .map_err(|e| failed("connect", &e))?;
        let present = c
            .query_one(
                "SELECT to_regclass('gpuplan_states') IS NOT NULL AND to_regclass('gpuplan_locks') IS NOT NULL",
                &[],
            )
            .map_err(|e| failed("read its tables", &e))?;
        if !present.get::<_, bool>(0) {
            if let Err(e) = c.batch_execute(SCHEMA) {
                let _ = c.batch_execute("ROLLBACK");
                return Err(failed("create its tables", &e));
            }
        }
        Ok(c)
    }
}

/// The newest state of `workspace`, checked: its text parses and its digest matches.
fn newest(c: &mut Client, place: &str, workspace: &str) -> Result<Option<Loaded>, Diagnostic> {
    let row = c
        .query_opt(
            "SELECT body, digest FROM gpuplan_states WHERE workspace = $1 ORDER BY serial DESC LIMIT 1",
            &[&workspace],
        )
        .map_err(|e| failed("read the state", &e))?;
    row.map(|r| loaded(place, r.get(0), r.get(1))).transpose()
}

fn loaded(place: &str, body: String, digest: String) -> Result<Loaded, Diagnostic> {
    let l = state::parse(place, body)?;
    if l.digest != digest {
        return Err(Diagnostic::error(
            GP920,
            format!("the state in {place} is corrupt: its digest does not match its text"),
        )
        .with_help("restore a good version with `gpuplan state push`"));
    }
    Ok(l)
}

/// The lock row of `workspace` as a [`Record`], and whether its session is open.
fn lock_row(c: &mut Client, workspace: &str) -> Result<Option<(Record, bool)>, Diagnostic> {
    let row = c
        .query_opt(
            "SELECT l.id, l.host, l.pid, l.start_time, l.since, l.operation, l.plan_digest,
                    EXISTS (SELECT 1 FROM pg_stat_activity a
                            WHERE a.pid = l.session_pid AND a.backend_start::text = l.session_start)
             FROM gpuplan_locks l WHERE l.workspace = $1",
            &[&workspace],
        )
        .map_err(|e| failed("read the lock", &e))?;
    Ok(row.map(|r| {
        let n = |i: usize| {
            r.get::<_, Option<i64>>(i)
                .and_then(|v| u64::try_from(v).ok())
        };
        (
            Record {
                id: Some(r.get(0)),
                host: r.get(1),
                pid: n(2).and_then(|p| u32::try_from(p).ok()),
                start: n(3),
                since: n(4),
                operation: r.get(5),
                plan: r.get(6),
            },
            r.get(7),
        )
    }))
}

fn opt_i64(v: Option<u64>) -> Option<i64> {
    v.and_then(|x| i64::try_from(x).ok())
}

impl Store for Pg {
    fn name(&self) -> String {
        format!("pg workspace {}", quoted(&self.workspace))
    }

    fn read(&self) -> Result<Option<Loaded>, Diagnostic> {
        newest(&mut self.client()?, &self.name(), &self.workspace)
    }

    fn try_lock(&self, who: &Record) -> Result<Box<dyn Held>, Attempt> {
        let mut c = self.client().map_err(Attempt::Failed)?;
        let id = who.id.clone().unwrap_or_else(crate::apply::lock::new_id);
        let inserted = c
            .execute(
                "INSERT INTO gpuplan_locks (workspace, id, host, pid, start_time, since, operation,
                     plan_digest, gpuplan_version, session_pid, session_start)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, pg_backend_pid(),
                     (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())
                 ON CONFLICT (workspace) DO NOTHING",
                &[
                    &self.workspace,
                    &id,
                    &who.host,
                    &who.pid.map(i64::from),
                    &opt_i64(who.start),
                    &opt_i64(who.since),
                    &who.operation,
                    &who.plan,
                    &env!("CARGO_PKG_VERSION"),
                ],
            )
            .map_err(|e| Attempt::Failed(failed("take the lock", &e)))?;
        if inserted == 1 {
            let hook = release_on_signal(self.config.clone(), &self.workspace, &id);
            return Ok(Box::new(PgHeld {
                client: Some(c),
                workspace: self.workspace.clone(),
                place: self.name(),
                id,
                keep: self.keep,
                in_txn: false,
                hook,
                written_by: format!(
                    "{} {}",
                    who.host.as_deref().unwrap_or("?"),
                    who.pid.unwrap_or(0)
                ),
            }));
        }
        match lock_row(&mut c, &self.workspace).map_err(Attempt::Failed)? {
            Some((r, open)) => {
                let why = if open {
                    "its database session is open (it is running)"
                } else {
                    "its database session is gone: the holder crashed or lost its connection"
                };
                Err(Attempt::Busy(super::locked(&self.name(), &r, why)))
            }
            // Released between the insert and the read: another try.
            None => Err(Attempt::Busy(super::locked(
                &self.name(),
                &Record::default(),
                "the lock changed hands while it was read",
            ))),
        }
    }

    fn holder(&self) -> Result<Option<Record>, Diagnostic> {
        Ok(lock_row(&mut self.client()?, &self.workspace)?.map(|(r, _)| r))
    }

    fn force_unlock(&self, id: &str) -> Result<Record, Diagnostic> {
        let mut c = self.client()?;
        let held = lock_row(&mut c, &self.workspace)?;
        match held {
            Some((r, _)) if r.id.as_deref() == Some(id) => {
                let n = c
                    .execute(
                        "DELETE FROM gpuplan_locks WHERE workspace = $1 AND id = $2",
                        &[&self.workspace, &id],
                    )
                    .map_err(|e| failed("remove the lock", &e))?;
                if n == 1 {
                    Ok(r)
                } else {
                    Err(super::no_such_lock(&self.name(), id, None))
                }
            }
            other => Err(super::no_such_lock(
                &self.name(),
                id,
                other.as_ref().map(|(r, _)| r),
            )),
        }
    }

    fn versions(&self) -> Result<Vec<Version>, Diagnostic> {
        let rows = self
            .client()?
            .query(
                "SELECT serial, lineage, digest, plan_digest, gpuplan_version,
                        to_char(written_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), written_by
                 FROM gpuplan_states WHERE workspace = $1 ORDER BY serial DESC",
                &[&self.workspace],
            )
            .map_err(|e| failed("list the versions", &e))?;
        Ok(rows
            .iter()
            .map(|r| Version {
                serial: u64::try_from(r.get::<_, i64>(0)).unwrap_or(0),
                lineage: r.get(1),
                digest: r.get(2),
                plan_digest: r.get(3),
                gpuplan_version: r.get(4),
                written_at: r.get(5),
                written_by: r.get(6),
            })
            .collect())
    }

    fn version(&self, serial: u64) -> Result<Option<Loaded>, Diagnostic> {
        let Ok(s) = i64::try_from(serial) else {
            return Ok(None);
        };
        let row = self
            .client()?
            .query_opt(
                "SELECT body, digest FROM gpuplan_states WHERE workspace = $1 AND serial = $2",
                &[&self.workspace, &s],
            )
            .map_err(|e| failed("read the state", &e))?;
        row.map(|r| loaded(&self.name(), r.get(0), r.get(1)))
            .transpose()
    }
}

/// Registers with the signal handler ([`interrupt`]) the release of this lock: on
/// SIGINT, SIGTERM or SIGHUP a fresh connection deletes the lock row (5 s at most), so
/// an interrupted apply leaves no lock, as the local lock does. Returns the hook's ID.
fn release_on_signal(mut config: postgres::Config, workspace: &str, id: &str) -> u64 {
    let (workspace, id) = (workspace.to_string(), id.to_string());
    config.connect_timeout(Duration::from_secs(5));
    interrupt::guarded(|reg| {
        reg.hook(Box::new(move || {
            if let Ok(mut c) = config.connect(NoTls) {
                let _ = c.batch_execute("SET statement_timeout = 5000");
                let _ = c.execute(
                    "DELETE FROM gpuplan_locks WHERE workspace = $1 AND id = $2",
                    &[&workspace, &id],
                );
            }
        }))
    })
}

/// The lock row held, with its connection.
struct PgHeld {
    client: Option<Client>,
    workspace: String,
    place: String,
    id: String,
    keep: Option<u64>,
    in_txn: bool,
    hook: u64,
    written_by: String,
}

impl PgHeld {
    fn c(&mut self) -> Result<&mut Client, Diagnostic> {
        self.client.as_mut().ok_or_else(|| {
            Diagnostic::error(GP960, "the pg backend's connection is closed")
                .with_help("apply again")
        })
    }

    /// Inside the open transaction: the lock is still ours, the newest state is `prior`,
    /// then the new row (and the pruning of old versions).
    fn stage(
        &mut self,
        prior: Option<&Loaded>,
        next: &State,
        text: &str,
    ) -> Result<(), Diagnostic> {
        self.still_ours(prior)?;
        let (ws, place, keep, by) = (
            self.workspace.clone(),
            self.place.clone(),
            self.keep,
            self.written_by.clone(),
        );
        let c = self.c()?;
        let serial = i64::try_from(next.serial).unwrap_or(i64::MAX);
        let digest = state::sha256(text.as_bytes());
        let inserted = c.execute(
            "INSERT INTO gpuplan_states (workspace, serial, lineage, digest, plan_digest,
                 gpuplan_version, written_by, body)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &ws,
                &serial,
                &next.lineage,
                &digest,
                &next.plan_digest,
                &next.gpuplan_version,
                &by,
                &text,
            ],
        );
        if let Err(e) = inserted {
            if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) {
                return Err(lost(
                    &place,
                    &format!("serial {serial} was recorded by another apply"),
                ));
            }
            return Err(failed("record the state", &e));
        }
        if let Some(k) = keep.and_then(|k| i64::try_from(k).ok()) {
            c.execute(
                "DELETE FROM gpuplan_states WHERE workspace = $1 AND serial <= $2",
                &[&ws, &(serial - k)],
            )
            .map_err(|e| failed("prune old versions", &e))?;
        }
        Ok(())
    }

    /// GP966 unless the lock is still this apply's and the newest state still `prior`.
    fn still_ours(&mut self, prior: Option<&Loaded>) -> Result<(), Diagnostic> {
        let (ws, id, place) = (self.workspace.clone(), self.id.clone(), self.place.clone());
        let c = self.c()?;
        let holder: Option<String> = c
            .query_opt("SELECT id FROM gpuplan_locks WHERE workspace = $1", &[&ws])
            .map_err(|e| failed("check the lock", &e))?
            .map(|r| r.get(0));
        if holder.as_deref() != Some(id.as_str()) {
            return Err(lost(
                &place,
                "the lock was removed (`gpuplan force-unlock`) while this apply ran",
            ));
        }
        let now = c
            .query_opt(
                "SELECT serial, digest FROM gpuplan_states WHERE workspace = $1 ORDER BY serial DESC LIMIT 1",
                &[&ws],
            )
            .map_err(|e| failed("read the state", &e))?
            .map(|r| (r.get::<_, i64>(0), r.get::<_, String>(1)));
        let then = prior.map(|l| {
            (
                i64::try_from(l.state.serial).unwrap_or(-1),
                l.digest.clone(),
            )
        });
        if now != then {
            return Err(lost(
                &place,
                "another apply recorded a state while this one ran",
            ));
        }
        Ok(())
    }
}

/// GP966: the state cannot be recorded because the lock or the serial was lost.
fn lost(place: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        GP966,
        format!("the state ({place}) was not recorded: {why}"),
    )
    .with_help(
        "nothing was recorded and the output folder is unchanged; make a new plan and apply it",
    )
}

impl Held for PgHeld {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn take_warnings(&mut self) -> Vec<Diagnostic> {
        Vec::new()
    }

    fn read(&mut self) -> Result<Option<Loaded>, Diagnostic> {
        let (place, ws) = (self.place.clone(), self.workspace.clone());
        newest(self.c()?, &place, &ws)
    }

    fn note_plan(&mut self, digest: &str) {
        let (ws, id) = (self.workspace.clone(), self.id.clone());
        if let Ok(c) = self.c() {
            let _ = c.execute(
                "UPDATE gpuplan_locks SET plan_digest = $3 WHERE workspace = $1 AND id = $2",
                &[&ws, &id, &digest],
            );
        }
    }

    fn prepare(
        &mut self,
        prior: Option<&Loaded>,
        next: &State,
        text: &str,
    ) -> Result<(), Diagnostic> {
        self.c()?
            .batch_execute("BEGIN")
            .map_err(|e| failed("start a transaction", &e))?;
        self.in_txn = true;
        let staged = self.stage(prior, next, text);
        if staged.is_err() {
            if let Some(c) = self.client.as_mut() {
                let _ = c.batch_execute("ROLLBACK");
            }
            self.in_txn = false;
        }
        staged
    }

    /// Under the signal registry's lock: a signal waits until the commit is done.
    fn commit(&mut self) -> Result<(), Diagnostic> {
        self.in_txn = false;
        let c = self.c()?;
        interrupt::guarded(|_| c.batch_execute("COMMIT"))
            .map_err(|e| failed("commit the state (it was not recorded)", &e))
    }

    fn release(mut self: Box<Self>) -> Result<(), Diagnostic> {
        self.unlock()
    }
}

impl PgHeld {
    fn unlock(&mut self) -> Result<(), Diagnostic> {
        let Some(mut c) = self.client.take() else {
            return Ok(());
        };
        if self.in_txn {
            let _ = c.batch_execute("ROLLBACK");
        }
        let hook = self.hook;
        let r = interrupt::guarded(|reg| {
            let r = c.execute(
                "DELETE FROM gpuplan_locks WHERE workspace = $1 AND id = $2",
                &[&self.workspace, &self.id],
            );
            reg.forget_hook(hook);
            r
        });
        r.map(|_| ()).map_err(|e| {
            let mut d = failed("release the lock", &e);
            d.help = Some(format!(
                "the lock stays and names this apply; once the server is back, `gpuplan \
                 force-unlock {}` removes it",
                self.id
            ));
            d
        })
    }
}

impl Drop for PgHeld {
    fn drop(&mut self) {
        let _ = self.unlock();
    }
}
