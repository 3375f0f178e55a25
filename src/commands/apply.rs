//! `gpuplan apply PLAN --out-dir DIR` applies exactly a saved plan, refusing a stale one;
//! `gpuplan apply PATH... --out-dir DIR` plans and applies in one step, asking for
//! confirmation on a terminal unless `--auto-approve`. `--dry-run` takes the same path
//! and skips only the writes (and the lock, which is a write too). See [`crate::apply`]
//! for the order of writes and what an interruption leaves behind.

// An apply fails once, with the one `Diagnostic` that explains it; boxing buys nothing.
#![allow(clippy::result_large_err)]

use super::Output;
use super::plan::make_plan;
use crate::apply::lock::{Backend, FileLock};
use crate::apply::{self as ops, WriteOptions};
use crate::cli::Format;
use crate::diag::Diagnostic;
use crate::plan::{self, Plan};
use crate::source::SourceMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// GP925: apply was not confirmed (declined, or no terminal to ask on).
pub const GP925: &str = "GP925";

/// The command line's arguments, as they are.
pub type Settings = crate::cli::ApplyArgs;

/// A saved plan as the first argument (a file that is not KDL), and the configuration
/// to check it against (the other arguments; none: the plan's own inputs).
pub(super) fn split_saved(paths: &[PathBuf]) -> Option<(&Path, &[PathBuf])> {
    match paths {
        [p, rest @ ..] if p.is_file() && p.extension().is_none_or(|e| e != "kdl") => {
            Some((p.as_path(), rest))
        }
        _ => None,
    }
}

pub fn run(s: &Settings, out: &Output) -> u8 {
    if !s.dry_run {
        // SIGINT, SIGTERM, SIGHUP from here on remove the lock and the staging folders
        // this process created (crate::apply::interrupt).
        ops::interrupt::install();
    }
    // Refusals that do not depend on the state come first, before anything is created:
    // a saved plan that cannot be read, or that another gpuplan version made.
    let saved = match split_saved(&s.paths) {
        Some((path, config)) => match crate::saved::read(path).and_then(|(p, text)| {
            crate::saved::check_version(&path.display().to_string(), &p)?;
            Ok((path, config, p, text))
        }) {
            Ok(x) => Some(x),
            Err(d) => return out.fail(&[d]),
        },
        None => None,
    };
    // The lock is taken before the state is read, so nothing changes it in between. A
    // refusal after this point releases it and removes the state folder if this run
    // created it (and it is still empty): a refused apply leaves nothing behind.
    let _lock = if s.dry_run {
        None
    } else {
        match FileLock::new(&s.state).acquire("apply") {
            Ok(a) => {
                if !a.warnings.is_empty() {
                    out.diagnostics(&SourceMap::new(), &a.warnings, Format::Human);
                }
                Some(a.guard)
            }
            Err(d) => return out.fail(&[d]),
        }
    };
    let (plan, prior) = match saved {
        Some((path, config, plan, text)) => {
            match checked_saved_plan(path, config, plan, &text, &s.state) {
                Ok(x) => x,
                Err(diags) => return out.fail(&diags),
            }
        }
        None => {
            let (planned, prior) = match make_plan(
                &s.paths,
                &s.solve,
                &s.state,
                &super::plan::PreviousSource::State,
                out,
            ) {
                Ok(p) => p,
                Err(code) => return code,
            };
            let (checked, plan) = (&planned.checked, planned.plan);
            out.data(&format!(
                "{}\n{}",
                crate::placement::view::human_detail(
                    &checked.placement,
                    &checked.model,
                    out.verbose
                ),
                plan::view::human_detail(&plan, out.color_stdout, out.verbose)
            ));
            if let Err(d) = confirm(s, &plan) {
                return out.fail(&[d]);
            }
            (plan, prior)
        }
    };
    apply_plan(s, &plan, prior.as_ref(), out)
}

/// Checks a saved plan (read from `path`, its text `text`) against the state and the
/// inputs (`config`, or its own), then checks that it is exactly the plan its inputs and
/// placement give ([`crate::saved::reopen_read`]).
fn checked_saved_plan(
    path: &Path,
    config: &[PathBuf],
    plan: Plan,
    text: &str,
    state: &Path,
) -> Result<(Plan, Option<crate::state::Loaded>), Vec<Diagnostic>> {
    let prior = ops::read_state(state).map_err(|d| vec![d])?;
    let reopened = crate::saved::reopen_read(path, plan, text, config, prior.as_ref())?;
    Ok((reopened.plan, prior))
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

fn apply_plan(s: &Settings, plan: &Plan, prior: Option<&crate::state::Loaded>, out: &Output) -> u8 {
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
    if s.dry_run {
        out.status(&format!(
            "dry run: would write {} files to {} and state serial {} to {}; nothing written",
            files.len(),
            s.out_dir.display(),
            next.serial,
            s.state.display()
        ));
        out.status(&format!("Resources: {counts} (dry run)."));
        return 0;
    }
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
    if let Err(d) = write_files(&s.out_dir, &files, out) {
        return out.fail(&[d]);
    }
    // Under the signal registry's lock: a signal's handler waits until the state is
    // renamed, so the lock is never removed while the state is written.
    let text = crate::state::to_text(&next);
    let saved = ops::interrupt::guarded(|_| ops::write_file_atomically(&s.state, &text));
    if let Err(d) = saved {
        out.status(&format!(
            "the files in {} are new but the state was not updated; apply again",
            s.out_dir.display()
        ));
        return out.fail(&[d]);
    }
    out.status(&format!("Apply complete! Resources: {counts}."));
    out.status(&format!(
        "wrote {} files to {}; state serial {} in {}",
        files.len(),
        s.out_dir.display(),
        next.serial,
        s.state.display()
    ));
    0
}

/// The output folder, all or nothing, with a progress bar on a terminal.
fn write_files(dir: &Path, files: &crate::render::Files, out: &Output) -> Result<(), Diagnostic> {
    // A test hook: fail after N files, as a crash would (see tests/apply.rs).
    let fail_after = std::env::var("GPUPLAN_TEST_FAIL_AFTER")
        .ok()
        .and_then(|v| v.parse().ok());
    // A test hook: at the point named by GPUPLAN_TEST_PAUSE (`staged`, `swapping`),
    // create the file GPUPLAN_TEST_READY names and wait to be killed (tests/apply.rs).
    let pause_at = std::env::var("GPUPLAN_TEST_PAUSE").ok();
    let ready = std::env::var_os("GPUPLAN_TEST_READY");
    let pause = |point: &str| {
        if pause_at.as_deref() == Some(point) {
            if let Some(r) = &ready {
                let _ = std::fs::write(r, point);
            }
            loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
        }
    };
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
            pause: Some(&pause),
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
