//! `gpuplan state list|show|pull|push` and `gpuplan force-unlock ID`: the state in its
//! backend ([`crate::backend`]). `push` takes the lock like an apply and writes a state
//! file only over a state of the same lineage with an older serial (or into an empty
//! backend: the migration from a local state keeps its lineage and serial).

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

use super::Output;
use crate::apply::lock::Record;
use crate::backend::{self, GP962, GP963, GP965, Store};
use crate::cli::{ForceUnlockArgs, Format, StateKind, StoreArgs};
use crate::diag::{Diagnostic, quoted};
use crate::state::Loaded;
use std::path::Path;

fn open(a: &StoreArgs) -> Result<Box<dyn Store>, Vec<Diagnostic>> {
    let sources = (!a.config.is_empty()).then(|| crate::load::load_paths(&a.config).0);
    super::support::backend::store(&a.backend, &a.state, sources.as_ref())
}

pub(crate) fn run(what: &StateKind, out: &Output) -> u8 {
    let r = match what {
        StateKind::List { store, format } => list(store, *format, out),
        StateKind::Show {
            serial,
            store,
            format,
        } => show(store, *serial, *format, out),
        StateKind::Pull {
            serial,
            store,
            out: file,
        } => pull(store, *serial, file.as_deref(), out),
        StateKind::Push {
            file,
            store,
            lock_timeout,
        } => push(store, file, *lock_timeout, out),
    };
    r.unwrap_or_else(|d| out.fail(&d))
}

/// `sha256:0123456789ab` of a full digest.
fn short(digest: &str) -> &str {
    &digest[..digest.len().min("sha256:".len() + 12)]
}

fn list(a: &StoreArgs, format: Format, out: &Output) -> Result<u8, Vec<Diagnostic>> {
    let store = open(a)?;
    let versions = store.versions().map_err(|d| vec![d])?;
    let holder = store.holder().map_err(|d| vec![d])?;
    if format == Format::Json {
        let lock = holder.as_ref().map(|r| {
            serde_json::json!({
                "id": r.id, "host": r.host, "pid": r.pid, "since": r.since,
                "operation": r.operation, "plan": r.plan,
            })
        });
        let doc = serde_json::json!({
            "backend": store.name(), "lock": lock, "versions": versions,
        });
        out.data(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ));
        return Ok(0);
    }
    let mut text = format!("state: {}\n", store.name());
    match &holder {
        Some(r) => text.push_str(&format!("locked by {}\n", r.describe())),
        None => text.push_str("not locked\n"),
    }
    if versions.is_empty() {
        text.push_str("no state yet (nothing applied)\n");
    }
    for v in &versions {
        text.push_str(&format!(
            "serial {:>4}  {}  plan {}  lineage {}{}{}\n",
            v.serial,
            short(&v.digest),
            short(&v.plan_digest),
            v.lineage,
            v.written_at
                .as_ref()
                .map_or(String::new(), |t| format!("  at {t}")),
            v.written_by
                .as_ref()
                .map_or(String::new(), |b| format!("  by {}", quoted(b))),
        ));
    }
    out.data(&text);
    Ok(0)
}

/// The version `serial` (the current one when `None`), or GP965.
fn version(store: &dyn Store, serial: Option<u64>) -> Result<Loaded, Vec<Diagnostic>> {
    let found = match serial {
        Some(n) => store.version(n),
        None => store.read(),
    }
    .map_err(|d| vec![d])?;
    found.ok_or_else(|| {
        let what = serial.map_or("no state yet (nothing applied)".into(), |n| {
            format!("no version with serial {n}")
        });
        vec![
            Diagnostic::error(GP965, format!("{}: {what}", store.name()))
                .with_help("`gpuplan state list` shows the versions kept"),
        ]
    })
}

fn show(
    a: &StoreArgs,
    serial: Option<u64>,
    format: Format,
    out: &Output,
) -> Result<u8, Vec<Diagnostic>> {
    let store = open(a)?;
    let l = version(store.as_ref(), serial)?;
    if format == Format::Json {
        out.data(&l.text);
        return Ok(0);
    }
    let s = &l.state;
    let mut text = format!(
        "state: {}\nserial {}\nlineage {}\ndigest {}\nwritten by gpuplan {}\ninputs {}\nplan {}\nout-dir {}\n",
        store.name(),
        s.serial,
        s.lineage,
        l.digest,
        s.gpuplan_version,
        s.inputs_digest,
        s.plan_digest,
        quoted(&s.out_dir)
    );
    let classes: Vec<&str> = s
        .placement
        .workloads
        .iter()
        .map(|w| w.name.as_str())
        .collect();
    text.push_str(&format!(
        "placement: {} nodes, {} classes ({}), {} MIG GPUs\n",
        s.placement.pools.len(),
        classes.len(),
        classes.join(", "),
        s.placement.mig_layouts.len()
    ));
    text.push_str(&format!("{} files:\n", s.artifacts.len()));
    for (p, a) in &s.artifacts {
        text.push_str(&format!("  {}  {p}\n", short(&a.sha256)));
    }
    out.data(&text);
    Ok(0)
}

fn pull(
    a: &StoreArgs,
    serial: Option<u64>,
    file: Option<&Path>,
    out: &Output,
) -> Result<u8, Vec<Diagnostic>> {
    let store = open(a)?;
    let l = version(store.as_ref(), serial)?;
    match file {
        Some(f) => {
            crate::apply::write_file_atomically(f, &l.text).map_err(|d| vec![d])?;
            out.status(&format!(
                "state serial {} of {} written to {}",
                l.state.serial,
                store.name(),
                f.display()
            ));
        }
        None => out.data(&l.text),
    }
    Ok(0)
}

/// Why `pushed` may not replace `current`: another lineage (GP962), or a serial not
/// newer (GP963). `None`: it may (an empty backend takes any state).
pub(crate) fn push_conflict(
    place: &str,
    pushed: (&str, u64),
    current: Option<(&str, u64)>,
) -> Option<Diagnostic> {
    let c = current?;
    let (p_lineage, p_serial) = pushed;
    let (c_lineage, c_serial) = c;
    if p_lineage != c_lineage {
        return Some(
            Diagnostic::error(
                GP962,
                format!(
                    "not pushed: the state in {place} has lineage {}, the file {}",
                    quoted(c_lineage),
                    quoted(p_lineage)
                ),
            )
            .with_help(
                "the file is the state of another cluster (or of a fresh start): push it to \
                 another workspace, or pull the backend's state and apply from there",
            ),
        );
    }
    if p_serial <= c_serial {
        return Some(
            Diagnostic::error(
                GP963,
                format!(
                    "not pushed: the state in {place} is at serial {}, the file at {} (not newer)",
                    c_serial, p_serial
                ),
            )
            .with_help(
                "an apply recorded a newer state since this file was taken: `gpuplan state \
                 pull` it instead of pushing an older one",
            ),
        );
    }
    None
}

fn push(a: &StoreArgs, file: &Path, timeout: f64, out: &Output) -> Result<u8, Vec<Diagnostic>> {
    let pushed = crate::apply::read_state(file)
        .map_err(|d| vec![d])?
        .ok_or_else(|| {
            vec![
                Diagnostic::error(
                    crate::state::GP920,
                    format!("cannot read the state `{}`: no such file", file.display()),
                )
                .with_help("give the state file to push (`.gpuplan/state.json`)"),
            ]
        })?;
    let store = open(a)?;
    let who = Record::current("state push");
    let timeout = std::time::Duration::from_secs_f64(timeout);
    let mut held = backend::lock(store.as_ref(), &who, timeout).map_err(|d| vec![d])?;
    let current = held.read().map_err(|d| vec![d])?;
    if current.as_ref().is_some_and(|c| c.digest == pushed.digest) {
        out.status(&format!(
            "{} already holds this state (serial {})",
            store.name(),
            pushed.state.serial
        ));
        held.release().map_err(|d| vec![d])?;
        return Ok(0);
    }
    let key = |l: &Loaded| (l.state.lineage.clone(), l.state.serial);
    let (p, c) = (key(&pushed), current.as_ref().map(key));
    if let Some(d) = push_conflict(
        &store.name(),
        (&p.0, p.1),
        c.as_ref().map(|c| (c.0.as_str(), c.1)),
    ) {
        return Err(vec![d]);
    }
    held.prepare(current.as_ref(), &pushed.state, &pushed.text)
        .and_then(|()| held.commit())
        .map_err(|d| vec![d])?;
    held.release().map_err(|d| vec![d])?;
    out.status(&format!(
        "pushed state serial {} (lineage {}) to {}",
        pushed.state.serial,
        pushed.state.lineage,
        store.name()
    ));
    Ok(0)
}

pub(crate) fn force_unlock(a: &ForceUnlockArgs, out: &Output) -> u8 {
    let removed = open(&a.store).and_then(|s| {
        let r = s.force_unlock(&a.id).map_err(|d| vec![d])?;
        Ok((s.name(), r))
    });
    match removed {
        Ok((name, r)) => {
            out.status(&format!(
                "removed the lock {} of {name}, held by {}",
                quoted(&a.id),
                r.describe()
            ));
            0
        }
        Err(d) => out.fail(&d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_refuses_another_lineage_and_an_older_serial() {
        let cur = Some(("a", 3));
        assert!(push_conflict("x", ("a", 4), None).is_none());
        assert!(push_conflict("x", ("a", 4), cur).is_none());
        assert_eq!(push_conflict("x", ("b", 9), cur).unwrap().code, GP962);
        assert_eq!(push_conflict("x", ("a", 3), cur).unwrap().code, GP963);
        assert_eq!(push_conflict("x", ("a", 1), cur).unwrap().code, GP963);
    }
}
