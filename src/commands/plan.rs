//! `gpuplan plan PATH...`: load and validate, solve, build the placement, verify it
//! with the independent checker, render every target, compare the artifacts and the
//! placement with the state ([`crate::plan`]), then show the placement report followed
//! by the changes, `Plan: N to add, ...` and the disruption section (or the plan as
//! JSON), and optionally save the plan (`-o PLAN`, written atomically). A plan that
//! fails its own checker is an error. `--detailed-exitcode`: 0 no changes, 1 error,
//! 2 changes.

use super::Output;
use super::output::{Progress, timings};
use crate::cli::{Format, SolveArgs};
use crate::diag::Diagnostic;
use crate::pipeline::{self, Inputs};
use crate::{placement, plan};
use std::path::{Path, PathBuf};

/// GP902: the plan could not be saved (`-o PLAN`).
pub const GP902: &str = "GP902";

/// GP903: the previous placement (`--previous FILE`) cannot be read.
pub const GP903: &str = "GP903";

/// Where the placement to move as little as possible from comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreviousSource {
    /// The state's placement (what the last apply wrote), when there is a state.
    State,
    /// A saved plan, a state file or a placement JSON.
    File(PathBuf),
    /// None: plan from scratch.
    Ignore,
}

/// Resolved `plan` settings.
pub struct Settings {
    pub paths: Vec<PathBuf>,
    pub format: Format,
    pub solve: SolveArgs,
    pub out: Option<PathBuf>,
    pub state: PathBuf,
    pub backend: crate::cli::BackendArgs,
    pub detailed_exitcode: bool,
    pub previous: PreviousSource,
}

impl From<crate::cli::PlanArgs> for Settings {
    fn from(a: crate::cli::PlanArgs) -> Self {
        Settings {
            paths: a.paths,
            format: a.format,
            solve: a.solve,
            out: a.out,
            state: a.state,
            backend: a.backend,
            detailed_exitcode: a.detailed_exitcode,
            previous: match (a.previous, a.no_previous) {
                (Some(f), _) => PreviousSource::File(f),
                (None, true) => PreviousSource::Ignore,
                (None, false) => PreviousSource::State,
            },
        }
    }
}

pub fn run(s: &Settings, out: &Output) -> u8 {
    // The state without locking, from the backend the command line or the
    // configuration names.
    let inputs = Inputs::load(&s.paths);
    let prior = match super::backend::store(&s.backend, &s.state, Some(&inputs.sources))
        .and_then(|store| store.read().map_err(|d| vec![d]))
    {
        Ok(p) => p,
        Err(d) => return out.fail(&d),
    };
    let planned = match plan_with(&s.paths, &s.solve, inputs, prior, &s.previous, out) {
        Ok((planned, _)) => planned,
        Err(code) => return code,
    };
    let mut t = planned.timings.clone();
    let mut clock = std::time::Instant::now();
    let json = plan::view::json(&planned.plan);
    t.0.push(("plan json".into(), clock.elapsed().as_secs_f64()));
    clock = std::time::Instant::now();
    if let Some(path) = &s.out {
        if let Err(e) = crate::apply::write_atomically(path, &json) {
            return out.fail(&[Diagnostic::error(
                GP902,
                format!("cannot write `{}`: {e}", path.display()),
            )]);
        }
        out.status(&format!("plan saved to {}", path.display()));
    }
    let checked = &planned.checked;
    match s.format {
        Format::Json => out.data(&json),
        Format::Human => out.data(&format!(
            "{}\n{}",
            placement::view::human_detail(&checked.placement, &checked.model, out.verbose),
            plan::view::human_detail(&planned.plan, out.color_stdout, out.verbose)
        )),
    }
    t.0.push(("output".into(), clock.elapsed().as_secs_f64()));
    timings(&t);
    if s.detailed_exitcode && planned.plan.has_changes() {
        2
    } else {
        0
    }
}

/// `report html PATH...`'s plan ([`pipeline::plan`]): the state from the backend the
/// configuration declares (else the local file at `state_path`), the previous
/// placement, the plan, the warnings printed; on failure the exit code.
pub(super) fn make_plan(
    paths: &[PathBuf],
    solve: &SolveArgs,
    state_path: &Path,
    previous: &PreviousSource,
    out: &Output,
) -> Result<(pipeline::Planned, Option<crate::state::Loaded>), u8> {
    // The state from the backend the configuration declares, else the local file.
    let inputs = Inputs::load(paths);
    let prior = super::backend::store(&Default::default(), state_path, Some(&inputs.sources))
        .and_then(|store| store.read().map_err(|d| vec![d]))
        .map_err(|d| out.fail(&d))?;
    plan_with(paths, solve, inputs, prior, previous, out)
}

/// [`make_plan`] on inputs already loaded and a state already read (from any backend).
pub(super) fn plan_with(
    paths: &[PathBuf],
    solve: &SolveArgs,
    loaded: Inputs<'static>,
    prior: Option<crate::state::Loaded>,
    previous: &PreviousSource,
    out: &Output,
) -> Result<(pipeline::Planned, Option<crate::state::Loaded>), u8> {
    let from_file;
    let previous = match previous {
        PreviousSource::State => prior.as_ref().map(|l| &l.state.placement),
        PreviousSource::Ignore => None,
        PreviousSource::File(f) => {
            from_file = read_previous(f).map_err(|d| out.fail(&[d]))?;
            Some(&from_file)
        }
    };
    let inputs = Inputs { previous, ..loaded };
    let arguments = paths
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    let mut progress = Progress::new(out);
    let planned = pipeline::plan(
        inputs,
        arguments,
        prior.as_ref(),
        &super::settings(solve),
        &mut |e| progress.event(e),
    )
    .map_err(|f| out.failed(&f))?;
    out.diagnostics(
        &planned.checked.sources,
        &planned.render_warnings,
        Format::Human,
    );
    Ok((planned, prior))
}

/// Reads `--previous FILE`: a saved plan or a state (both carry `placement`), or a
/// placement as `plan --format json` wrote it before plans wrapped it.
#[allow(clippy::result_large_err)] // one diagnostic, once per command
pub fn read_previous(path: &Path) -> Result<placement::Placement, Diagnostic> {
    let fail = |why: String| {
        Diagnostic::error(GP903, format!("cannot read the previous placement `{}`: {why}", path.display()))
            .with_help("give a plan saved with `gpuplan plan -o PLAN`, a state file (`.gpuplan/state.json`), or leave `--previous` out")
    };
    let mut budget = crate::saved::MAX_PLAN_BYTES;
    let text = crate::load::read_file(path, crate::load::Links::Follow, &mut budget)
        .map_err(|d| fail(d.message))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("not JSON ({e})")))?;
    let inner = value.get("placement").cloned().unwrap_or(value);
    serde_json::from_value(inner).map_err(|e| fail(format!("not a gpuplan placement ({e})")))
}
