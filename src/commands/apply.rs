//! `gpuplan apply PLAN --out-dir DIR` applies exactly a saved plan, refusing a stale one;
//! `gpuplan apply PATH... --out-dir DIR` plans and applies in one step, asking for
//! confirmation on a terminal unless `--auto-approve`. `--dry-run` takes the same path
//! and skips only the writes (and the lock, which is a write too). See [`crate::apply`]
//! for the order of writes and what an interruption leaves behind.

// An apply fails once, with the one `Diagnostic` that explains it; boxing buys nothing.
#![allow(clippy::result_large_err)]

use super::Output;
use super::support::planning::plan_with;
use crate::apply::lock::Record;
use crate::apply::{self as ops, WriteOptions};
use crate::backend::{self, Choice, Held};
use crate::cli::Format;
use crate::diag::Diagnostic;
use crate::pipeline::Inputs;
use crate::plan::{self, Plan};
use crate::source::SourceMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// GP925: apply was not confirmed (declined, or no terminal to ask on).
pub(crate) const GP925: &str = "GP925";

/// The command line's arguments, as they are.
pub(crate) type Settings = crate::cli::ApplyArgs;

/// A saved plan read and checked for its version: its path, the configuration given
/// after it, the plan and its text.
type Saved<'a> = (&'a Path, &'a [PathBuf], Plan, String);

pub(crate) fn run(s: &Settings, out: &Output) -> u8 {
    if !s.dry_run {
        // SIGINT, SIGTERM, SIGHUP from here on remove the lock and the staging folders
        // this process created (crate::apply::interrupt).
        ops::interrupt::install();
    }
    // Refusals that do not depend on the state come first, before anything is created:
    // a saved plan that cannot be read, or that another gpuplan version made.
    let saved = match read_saved(&s.paths) {
        Ok(x) => x,
        Err(d) => return out.fail(&[d]),
    };
    let (loaded, store, place) = match open_store(s, saved.as_ref()) {
        Ok(x) => x,
        Err(d) => return out.fail(&d),
    };
    // The lock is taken before the state is read, so nothing changes it in between. A
    // refusal after this point releases it (and the local lock removes the state
    // folder if this run created it and it is still empty): a refused apply leaves
    // nothing behind.
    let mut held = if s.dry_run {
        None
    } else {
        let digest = saved.as_ref().map(|x| crate::state::sha256(x.3.as_bytes()));
        match take_lock(s, store.as_ref(), digest, out) {
            Ok(h) => Some(h),
            Err(d) => return out.fail(&[d]),
        }
    };
    let prior = match held.as_mut().map_or_else(|| store.read(), |h| h.read()) {
        Ok(p) => p,
        Err(d) => return out.fail(&[d]),
    };
    let plan = match saved {
        Some((path, config, plan, text)) => {
            match crate::saved::reopen_read(path, plan, &text, config, prior.as_ref()) {
                Ok(r) => r.plan,
                Err(diags) => return out.fail(&diags),
            }
        }
        None => match plan_here(s, loaded, prior.clone(), out) {
            Ok(plan) => plan,
            Err(code) => return code,
        },
    };
    if let Some(h) = held.as_mut() {
        h.note_plan(&crate::state::sha256(plan::view::json(&plan).as_bytes()));
    }
    let code = apply_plan(s, &plan, prior.as_ref(), held.as_deref_mut(), &place, out);
    if let Some(h) = held {
        if let Err(d) = h.release() {
            out.diagnostics(&SourceMap::new(), &[d], Format::Human);
            return 1;
        }
    }
    code
}

/// The saved plan, when the first path is one (not KDL): read, and made by this
/// gpuplan version.
fn read_saved(paths: &[PathBuf]) -> Result<Option<Saved<'_>>, Diagnostic> {
    let Some((path, config)) = crate::saved::split(paths) else {
        return Ok(None);
    };
    let (p, text) = crate::saved::read(path)?;
    crate::saved::check_version(&path.display().to_string(), &p)?;
    Ok(Some((path, config, p, text)))
}

/// The configuration (the saved plan's inputs, or the paths given), which names the
/// backend (`backend`; read again, and checked, once the lock is held), the backend
/// opened, and how messages name the state.
fn open_store(
    s: &Settings,
    saved: Option<&Saved<'_>>,
) -> Result<(Inputs<'static>, Box<dyn backend::Store>, String), Vec<Diagnostic>> {
    let loaded = match saved {
        Some((path, config, plan, _)) => Inputs {
            sources: crate::saved::inputs(path, plan, config)?,
            load_diagnostics: Vec::new(),
            previous: None,
            validated: None,
        },
        None => Inputs::load(&s.paths),
    };
    let choice = super::support::backend::choose(&s.backend, &s.state, Some(&loaded.sources))?;
    let store = super::support::backend::open(&choice)?;
    let place = match &choice {
        Choice::Local(p) => p.display().to_string(),
        Choice::Pg { .. } => store.name(),
    };
    Ok((loaded, store, place))
}

/// Takes the state's lock for this apply (waiting up to `--lock-timeout`), recording
/// the saved plan's digest; prints the warnings of taking it (GP929).
fn take_lock(
    s: &Settings,
    store: &dyn backend::Store,
    plan: Option<String>,
    out: &Output,
) -> Result<Box<dyn Held>, Diagnostic> {
    let mut who = Record::current("apply");
    who.plan = plan;
    let timeout = std::time::Duration::from_secs_f64(s.lock_timeout);
    let mut h = backend::lock(store, &who, timeout)?;
    let warnings = h.take_warnings();
    if !warnings.is_empty() {
        out.diagnostics(&SourceMap::new(), &warnings, Format::Human);
    }
    Ok(h)
}

/// `apply PATH...`: plans against `prior`, prints the plan and asks for confirmation.
fn plan_here(
    s: &Settings,
    loaded: Inputs<'static>,
    prior: Option<crate::state::Loaded>,
    out: &Output,
) -> Result<Plan, u8> {
    let (planned, _) = plan_with(
        &s.paths,
        &s.solve,
        loaded,
        prior,
        &super::support::planning::PreviousSource::State,
        out,
    )?;
    let (checked, plan) = (&planned.checked, planned.plan);
    out.data(&format!(
        "{}\n{}",
        crate::placement::view::human_detail(&checked.placement, &checked.model, out.verbose),
        plan::view::human_detail(&plan, out.color_stdout, out.verbose)
    ));
    confirm(s, &plan).map_err(|d| out.fail(&[d]))?;
    Ok(plan)
}

/// Asks on a terminal, unless `--auto-approve`, a dry run, or nothing to do.
fn confirm(s: &Settings, plan: &Plan) -> Result<(), Diagnostic> {
    if s.auto_approve || s.dry_run || !plan.has_changes() {
        return Ok(());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Diagnostic::error(
            GP925,
            "not applied: no terminal to confirm on",
        )
        .with_help(
            "pass --auto-approve, or save the plan with `gpuplan plan ... -o PLAN` and apply that",
        ));
    }
    {
        // Released before waiting: a signal's handler prints on stderr too.
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\nDo you want to apply these changes?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: "
        );
        let _ = err.flush();
    }
    let mut line = String::new();
    let _ = stdin.lock().read_line(&mut line);
    if line.trim() == "yes" {
        Ok(())
    } else {
        Err(Diagnostic::error(GP925, "apply cancelled")
            .with_help("nothing was written; answer `yes` to apply"))
    }
}

/// Writes the plan: the output folder (all or nothing), then the state through the
/// lock `held` (`None` only for a dry run). `place` names the state in messages.
fn apply_plan(
    s: &Settings,
    plan: &Plan,
    prior: Option<&crate::state::Loaded>,
    held: Option<&mut (dyn Held + '_)>,
    place: &str,
    out: &Output,
) -> u8 {
    let out_dir = s.out_dir.to_string_lossy().replace('\\', "/");
    let files: crate::render::Files = plan
        .artifacts
        .iter()
        .map(|(p, a)| (p.clone(), a.text.clone()))
        .collect();
    // The lineage seed is the one place a clock is read: it only names a new state.
    let seed = format!(
        "{:?} {} {}",
        std::time::SystemTime::now(),
        std::process::id(),
        plan.inputs_digest
    );
    let next = ops::next_state(plan, prior, &out_dir, &seed);
    let sm = &plan.summary;
    let counts = format!(
        "{} added, {} changed, {} destroyed",
        sm.add, sm.change, sm.destroy
    );
    let Some(held) = held.filter(|_| !s.dry_run) else {
        out.status(&format!(
            "dry run: would write {} files to {} and state serial {} to {place}; nothing written",
            files.len(),
            s.out_dir.display(),
            next.serial,
        ));
        out.status(&format!("Resources: {counts} (dry run)."));
        return 0;
    };
    // Leftovers of a killed apply (this one holds the lock now): before the check below,
    // which a restored output folder may satisfy.
    let recovered = ops::recover_staging(&s.out_dir, prior.map(|l| &l.state));
    if !recovered.is_empty() {
        out.diagnostics(&SourceMap::new(), &recovered, Format::Human);
    }
    let unchanged = !plan.has_changes()
        && prior.is_some_and(|l| l.state.out_dir == out_dir)
        && s.out_dir.join(ops::MARKER).is_file();
    if unchanged {
        out.status("Apply complete! Resources: 0 added, 0 changed, 0 destroyed.");
        return 0;
    }
    // The new state is staged (every check that can refuse it) once the files are, and
    // before they replace the output folder: a backend that refuses or is gone leaves
    // the folder and the state as they were.
    let text = crate::state::to_text(&next);
    let held = std::cell::RefCell::new(held);
    let stage = || held.borrow_mut().prepare(prior, &next, &text);
    if let Err(d) = write_files(&s.out_dir, &files, &stage, out) {
        return out.fail(&[d]);
    }
    test_pause("committing");
    if let Err(d) = held.borrow_mut().commit() {
        out.status(&format!(
            "the files in {} are new but the state was not updated; apply again",
            s.out_dir.display()
        ));
        return out.fail(&[d]);
    }
    out.status(&format!("Apply complete! Resources: {counts}."));
    out.status(&format!(
        "wrote {} files to {}; state serial {} in {place}",
        files.len(),
        s.out_dir.display(),
        next.serial,
    ));
    0
}

/// A test hook: at the point GPUPLAN_TEST_PAUSE names (`staged`, `swapping`,
/// `committing`), create the file GPUPLAN_TEST_READY names, then wait until the file
/// GPUPLAN_TEST_RESUME names exists (without it: until killed). tests/it/apply.rs and
/// tests/it/backend_pg.rs stop, kill or cut the server there.
fn test_pause(point: &str) {
    if std::env::var("GPUPLAN_TEST_PAUSE").ok().as_deref() != Some(point) {
        return;
    }
    if let Some(r) = std::env::var_os("GPUPLAN_TEST_READY") {
        let _ = std::fs::write(r, point);
    }
    let resume = std::env::var_os("GPUPLAN_TEST_RESUME");
    loop {
        match &resume {
            Some(f) if std::path::Path::new(f).exists() => return,
            Some(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            None => std::thread::sleep(std::time::Duration::from_secs(60)),
        }
    }
}

/// The output folder, all or nothing, with a progress bar on a terminal; `stage` runs
/// once every file is staged, before the swap.
fn write_files(
    dir: &Path,
    files: &crate::render::Files,
    stage: &dyn Fn() -> Result<(), Diagnostic>,
    out: &Output,
) -> Result<(), Diagnostic> {
    // A test hook: fail after N files, as a crash would (see tests/it/apply.rs).
    let fail_after = std::env::var("GPUPLAN_TEST_FAIL_AFTER")
        .ok()
        .and_then(|v| v.parse().ok());
    let bar = out.bar(files.len() as u64, "writing");
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let written = ops::write_dir(
        dir,
        files,
        &WriteOptions {
            fail_after,
            progress: Some(&tick),
            pause: Some(&test_pause),
            before_swap: Some(stage),
        },
    );
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if written.is_err() {
        out.status("apply failed: the output folder and the state are unchanged");
    }
    written
}
