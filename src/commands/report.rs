//! `gpuplan report chargeback PLAN|PATH... [--period 30d] [--format table|csv|json]`:
//! GPU-hours and cost per team ([`crate::report::chargeback`]). From a saved plan, its
//! placement as reviewed (its inputs must be unchanged and must still accept it); from
//! KDL, the placement `plan` would make.

use super::support::planning::{from_saved, model_and_placement};
use super::{GP900, Output};
use crate::cli::{ChargebackArgs, GraphArgs, HtmlArgs, ReportFormat};
use crate::diag::Diagnostic;
use crate::report::{chargeback, graph};

/// `gpuplan graph PLAN|PATH... [--placement] [--gpus] [-o FILE]`: the topology as DOT
/// ([`crate::report::graph`]); the model alone unless `--placement`.
pub(crate) fn graph(a: &GraphArgs, out: &Output) -> u8 {
    let options = graph::Options { gpus: a.gpus };
    let text = if a.placement || crate::saved::split(&a.paths).is_some() {
        match model_and_placement(&a.paths, &a.solve, &a.state, out) {
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
    super::support::emit(out, a.out.as_deref(), &text)
}

/// `gpuplan report html PLAN|PATH... -o FILE` ([`crate::report::html`]): from a saved
/// plan, the plan as reviewed (refused when stale); from KDL, the plan `plan` would make
/// against the state.
pub(crate) fn html(a: &HtmlArgs, out: &Output) -> u8 {
    let text = match crate::saved::split(&a.paths) {
        Some(path) => {
            let r = match from_saved(path, &a.state, out) {
                Ok(x) => x,
                Err(d) => return out.fail(&d),
            };
            crate::report::html::page(&r.model, &r.plan.placement, Some(&r.plan))
        }
        None => {
            let previous = super::support::planning::PreviousSource::State;
            match super::support::planning::make_plan(&a.paths, &a.solve, &a.state, &previous, out)
            {
                Ok((planned, _)) => crate::report::html::page(
                    &planned.checked.model,
                    &planned.checked.placement,
                    Some(&planned.plan),
                ),
                Err(code) => return code,
            }
        }
    };
    super::support::emit(out, Some(&a.out), &text)
}

pub(crate) fn chargeback(s: &ChargebackArgs, out: &Output) -> u8 {
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
    let (model, placement) = match model_and_placement(&s.paths, &s.solve, &s.state, out) {
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
