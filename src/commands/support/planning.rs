//! The plan a command works on: made from the configuration (with the state and the
//! placement to move little from), or a saved plan reopened through the library's one
//! check ([`crate::saved`]).

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

use super::super::Output;
use super::super::output::Progress;
use crate::cli::{Format, SolveArgs};
use crate::diag::Diagnostic;
use crate::model::Cluster;
use crate::pipeline::{self, Inputs};
use crate::placement::{self, Placement};
use std::path::{Path, PathBuf};

/// GP903: the previous placement (`--previous FILE`) cannot be read.
pub(crate) const GP903: &str = "GP903";

/// Where the placement to move as little as possible from comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PreviousSource {
    /// The state's placement (what the last apply wrote), when there is a state.
    State,
    /// A saved plan, a state file or a placement JSON.
    File(PathBuf),
    /// None: plan from scratch.
    Ignore,
}

/// `report html PATH...`'s plan ([`pipeline::plan`]): the state from the backend the
/// configuration declares (else the local file at `state_path`), the previous
/// placement, the plan, the warnings printed; on failure the exit code.
pub(crate) fn make_plan(
    paths: &[PathBuf],
    solve: &SolveArgs,
    state_path: &Path,
    previous: &PreviousSource,
    out: &Output,
) -> Result<(pipeline::Planned, Option<crate::state::Loaded>), u8> {
    // The state from the backend the configuration declares, else the local file.
    let mut inputs = Inputs::load(paths);
    let prior = inputs
        .validate_beside(|sources| {
            super::backend::store(&Default::default(), state_path, Some(sources))
                .and_then(|store| store.read().map_err(|d| vec![d]))
        })
        .map_err(|d| out.fail(&d))?;
    plan_with(paths, solve, inputs, prior, previous, out)
}

/// [`make_plan`] on inputs already loaded and a state already read (from any backend).
pub(crate) fn plan_with(
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
        &super::super::settings(solve),
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
pub(crate) fn read_previous(path: &Path) -> Result<placement::Placement, Diagnostic> {
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

/// A saved plan reopened to display ([`crate::saved::reopen_to_display`]): refused when
/// its inputs changed since it was made (GP922), when it names an input outside its
/// folder (GP935) or when it is not what its inputs give (GP928); a warning when the
/// state moved on since, so that its changes cannot be rebuilt.
pub(crate) fn from_saved(
    saved: (&Path, &[PathBuf]),
    state: &Path,
    out: &Output,
) -> Result<crate::saved::Reopened, Vec<Diagnostic>> {
    saved_and_state(saved, &Default::default(), state, out).map(|(r, _)| r)
}

/// [`from_saved`] with the state it was checked against: from the backend `backend`
/// chooses or the plan's configuration declares, else the local file at `state`.
pub(crate) fn saved_and_state(
    (path, config): (&Path, &[PathBuf]),
    backend: &crate::cli::BackendArgs,
    state: &Path,
    out: &Output,
) -> Result<(crate::saved::Reopened, Option<crate::state::Loaded>), Vec<Diagnostic>> {
    let (plan, _) = crate::saved::read(path).map_err(|d| vec![d])?;
    let sources = crate::saved::inputs(path, &plan, config)?;
    let store = super::backend::store(backend, state, Some(&sources))?;
    let prior = store.read().map_err(|d| vec![d])?;
    let (r, note) = crate::saved::reopen_to_display(path, config, prior.as_ref())?;
    if let Some(n) = note {
        out.diagnostics(
            &crate::source::SourceMap::new(),
            &[n],
            crate::cli::Format::Human,
        );
    }
    Ok((r, prior))
}

/// The model and placement of a saved plan, or the ones `plan` would make from KDL.
pub(crate) fn model_and_placement(
    paths: &[PathBuf],
    solve: &crate::cli::SolveArgs,
    state: &Path,
    out: &Output,
) -> Result<(Cluster, Placement), u8> {
    match crate::saved::split(paths) {
        Some(path) => from_saved(path, state, out)
            .map(|r| (r.model, r.plan.placement))
            .map_err(|d| out.fail(&d)),
        None => {
            let mut progress = Progress::new(out);
            pipeline::check(
                Inputs::load(paths),
                &super::super::settings(solve),
                &mut |e| progress.event(e),
            )
            .map(|c| (c.model, c.placement))
            .map_err(|f| out.failed(&f))
        }
    }
}
