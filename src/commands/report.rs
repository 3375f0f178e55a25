//! `gpuplan report chargeback PLAN|PATH... [--period 30d] [--format table|csv|json]`:
//! GPU-hours and cost per team ([`crate::report::chargeback`]). From a saved plan, its
//! placement as reviewed (its inputs must be unchanged and must still accept it); from
//! KDL, the placement `plan` would make.

use super::output::Progress;
use super::{GP900, Output};
use crate::cli::{ChargebackArgs, GraphArgs, HtmlArgs, ReportFormat};
use crate::diag::Diagnostic;
use crate::model::Cluster;
use crate::pipeline::{self, Inputs};
use crate::placement::Placement;
use crate::report::{chargeback, graph};
use std::path::{Path, PathBuf};

/// The model and placement of a saved plan, refused when its inputs changed since it
/// was made (GP922) or no longer accept its placement (GP928).
fn from_saved(path: &Path) -> Result<(Cluster, Placement), Vec<Diagnostic>> {
    let (plan, _) = super::apply::read_plan_text(path).map_err(|d| vec![d])?;
    let shown = path.display();
    let args: Vec<PathBuf> = plan.arguments.iter().map(PathBuf::from).collect();
    let (sources, _) = crate::load::load_paths(&args);
    if crate::plan::inputs_of(&sources) != plan.inputs {
        return Err(vec![
            Diagnostic::error(
                crate::apply::GP922,
                format!("the saved plan `{shown}` is stale: its input files changed since it was made"),
            )
            .with_help("make the plan again (`gpuplan plan PATH... -o PLAN`), or report from the KDL files"),
        ]);
    }
    let outcome = crate::validate::validate(&sources);
    let valid = !outcome.has_errors();
    let Some(model) = outcome.model.filter(|_| valid) else {
        return Err(outcome.diagnostics);
    };
    if let Some(v) = crate::placement::check(&model, &plan.placement).first() {
        return Err(vec![
            Diagnostic::error(
                "GP928",
                format!("the saved plan `{shown}` is not what its own inputs give: {v}"),
            )
            .with_help("make the plan again with this gpuplan"),
        ]);
    }
    Ok((model, plan.placement))
}

/// The model and placement of a saved plan, or the ones `plan` would make from KDL.
fn model_and_placement(
    paths: &[PathBuf],
    solve: &crate::cli::SolveArgs,
    out: &Output,
) -> Result<(Cluster, Placement), u8> {
    match super::apply::saved_plan_path(paths) {
        Some(path) => from_saved(path).map_err(|d| out.fail(&d)),
        None => {
            let mut progress = Progress::new(out);
            pipeline::check(Inputs::load(paths), &super::settings(solve), &mut |e| {
                progress.event(e)
            })
            .map(|c| (c.model, c.placement))
            .map_err(|f| out.failed(&f))
        }
    }
}

/// `gpuplan graph PLAN|PATH... [--placement] [--gpus] [-o FILE]`: the topology as DOT
/// ([`crate::report::graph`]); the model alone unless `--placement`.
pub fn graph(a: &GraphArgs, out: &Output) -> u8 {
    let options = graph::Options { gpus: a.gpus };
    let text = if a.placement || super::apply::saved_plan_path(&a.paths).is_some() {
        match model_and_placement(&a.paths, &a.solve, out) {
            Ok((m, p)) => graph::dot(&m, a.placement.then_some(&p), options),
            Err(code) => return code,
        }
    } else {
        let (sources, mut diags) = crate::load::load_paths(&a.paths);
        let outcome = crate::validate::validate(&sources);
        let valid = diags.is_empty() && !outcome.has_errors();
        diags.extend(outcome.diagnostics);
        match outcome.model.filter(|_| valid) {
            Some(m) => graph::dot(&m, None, options),
            None => {
                out.diagnostics(&sources, &diags, crate::cli::Format::Human);
                return 1;
            }
        }
    };
    super::import::emit(out, a.out.as_deref(), &text)
}

/// `gpuplan report html PLAN|PATH... -o FILE` ([`crate::report::html`]): from a saved
/// plan, the plan as reviewed (refused when stale); from KDL, the plan `plan` would make
/// against the state.
pub fn html(a: &HtmlArgs, out: &Output) -> u8 {
    let text = match super::apply::saved_plan_path(&a.paths) {
        Some(path) => {
            let (model, _) = match from_saved(path) {
                Ok(x) => x,
                Err(d) => return out.fail(&d),
            };
            let plan = match super::apply::read_plan_text(path) {
                Ok((p, _)) => p,
                Err(d) => return out.fail(&[d]),
            };
            crate::report::html::page(&model, &plan.placement, Some(&plan))
        }
        None => {
            let previous = super::plan::PreviousSource::State;
            match super::plan::make_plan(&a.paths, &a.solve, &a.state, &previous, out) {
                Ok((planned, _)) => crate::report::html::page(
                    &planned.checked.model,
                    &planned.checked.placement,
                    Some(&planned.plan),
                ),
                Err(code) => return code,
            }
        }
    };
    super::import::emit(out, Some(&a.out), &text)
}

pub fn chargeback(s: &ChargebackArgs, out: &Output) -> u8 {
    let hours = match crate::units::parse_duration(&s.period) {
        Ok(d) if d.0 > 0 => d.0 as f64 / 3600.0,
        _ => {
            return out.fail(&[Diagnostic::error(
                GP900,
                format!("`--period {}` is not a duration", s.period),
            )
            .with_help("write it as 30d, 7d or 720h")]);
        }
    };
    let (model, placement) = match model_and_placement(&s.paths, &s.solve, out) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let r = chargeback::compute(&model, &placement, hours);
    match s.format {
        ReportFormat::Table => out.data(&chargeback::table(&r)),
        ReportFormat::Csv => out.data(&chargeback::csv(&r)),
        ReportFormat::Json => out.data(&format!(
            "{}\n",
            serde_json::to_string_pretty(&r).unwrap_or_default()
        )),
    }
    0
}
