//! `gpuplan drift PATH... --observed DIR`: plans the configuration (for the declared MIG
//! layouts), reads the state (the applied ones) and every observation in DIR, and
//! reports each difference. Exit 0 no drift, 1 error, 2 drift.

use super::Output;
use super::output::Progress;
use super::support::planning::saved_and_state;
use crate::cli::Format;
use crate::diag::Diagnostic;
use crate::drift::{self, GP926, ObservedNode};
use crate::pipeline::{self, Inputs};
use crate::state::Loaded;
use std::path::{Path, PathBuf};

/// The command line's arguments, as they are.
pub(crate) type Settings = crate::cli::DriftArgs;

/// Reads every `*.json` and `*.lgi.txt` file of `dir` (sorted by name).
fn read_observed(dir: &Path) -> Result<Vec<ObservedNode>, Vec<Diagnostic>> {
    let help = "save one file per node: `gpuplan discover --format json -o NODE.json`, or \
                `nvidia-smi mig -lgi > NODE.lgi.txt`";
    let rd = std::fs::read_dir(dir).map_err(|e| {
        vec![
            Diagnostic::error(
                GP926,
                format!(
                    "cannot read the observations folder `{}`: {e}",
                    dir.display()
                ),
            )
            .with_help(help),
        ]
    })?;
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let mut nodes = Vec::new();
    let mut errors = Vec::new();
    // Every observation together within the run's `input-bytes` limit, regular files
    // only (a FIFO or `/dev/zero` named `x.json` is refused before it is read).
    let mut budget = crate::limits::current().input_bytes;
    let mut read = |f: &Path| {
        crate::load::read_file(f, crate::load::Links::Follow, &mut budget).map_err(|d| d.message)
    };
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let shown = f.display().to_string();
        let parsed = if name.ends_with(".json") {
            read(&f).and_then(|t| drift::parse_json(&shown, &t))
        } else if let Some(node) = name.strip_suffix(".lgi.txt") {
            read(&f).and_then(|t| drift::parse_lgi(node, &shown, &t))
        } else {
            continue;
        };
        match parsed {
            Ok(n) => nodes.push(n),
            Err(e) => errors.push(
                Diagnostic::error(GP926, format!("cannot read observation `{shown}`: {e}"))
                    .with_help(help),
            ),
        }
    }
    if nodes.is_empty() && errors.is_empty() {
        errors.push(
            Diagnostic::error(
                GP926,
                format!(
                    "no observations (`*.json`, `*.lgi.txt`) in `{}`",
                    dir.display()
                ),
            )
            .with_help(help),
        );
    }
    if errors.is_empty() {
        Ok(nodes)
    } else {
        Err(errors)
    }
}

/// The planned model and placement (a saved plan, reopened through the library's one
/// check, or a plan of the configuration) and the applied state; on failure the exit code.
fn planned(s: &Settings, out: &Output) -> Result<(Planned, Option<Loaded>), u8> {
    if let Some(saved) = crate::saved::split(&s.paths) {
        return saved_and_state(saved, &s.backend, &s.state, out)
            .map(|(r, prior)| ((r.model, r.plan.placement), prior))
            .map_err(|d| out.fail(&d));
    }
    let mut loaded = Inputs::load(&s.paths);
    let prior = loaded
        .validate_beside(|sources| {
            super::support::backend::store(&s.backend, &s.state, Some(sources))
                .and_then(|store| store.read().map_err(|d| vec![d]))
        })
        .map_err(|d| out.fail(&d))?;
    let inputs = Inputs {
        previous: prior.as_ref().map(|l| &l.state.placement),
        ..loaded
    };
    let mut progress = Progress::new(out);
    let checked = pipeline::check(inputs, &super::settings(&s.solve), &mut |e| {
        progress.event(e)
    })
    .map_err(|f| out.failed(&f))?;
    Ok(((checked.model, checked.placement), prior))
}

type Planned = (crate::model::Cluster, crate::placement::Placement);

pub(crate) fn run(s: &Settings, out: &Output) -> u8 {
    let observed = match read_observed(&s.observed) {
        Ok(o) => o,
        Err(d) => return out.fail(&d),
    };
    let (checked, prior) = match planned(s, out) {
        Ok(x) => x,
        Err(code) => return code,
    };
    // The last applied layouts under this configuration's names (`moved`).
    let applied = prior
        .as_ref()
        .map(|l| crate::placement::moved::renamed(&l.state.placement, &checked.0.moves));
    let report = drift::compare(
        &checked.0,
        &checked.1.mig_layouts,
        applied.as_ref().map(|p| p.mig_layouts.as_slice()),
        &observed,
    );
    match s.format {
        Format::Json => out.data(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )),
        Format::Human => out.data(&drift::human(&report)),
    }
    if report.drift { 2 } else { 0 }
}
