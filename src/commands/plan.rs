//! `gpuplan plan PATH...`: load and validate, solve, build the placement, verify it
//! with the independent checker, render every target, compare the artifacts and the
//! placement with the state ([`crate::plan`]), then show the placement report followed
//! by the changes, `Plan: N to add, ...` and the disruption section (or the plan as
//! JSON), and optionally save the plan (`-o PLAN`, written atomically). A plan that
//! fails its own checker is an error. `--detailed-exitcode`: 0 no changes, 1 error,
//! 2 changes.

use super::Output;
use crate::cli::{Format, SolverChoice};
use crate::diag::Diagnostic;
use crate::solve::previous::{self, Previous};
use crate::solve::{Options, SolverKind};
use crate::{load, placement, plan, render, solve, units, validate};
use std::path::{Path, PathBuf};

/// GP901: the solver produced a plan that violates an invariant (a bug, never valid).
pub const GP901: &str = "GP901";

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
    pub solver: SolverChoice,
    /// Seconds.
    pub time_limit: f64,
    /// Relative gap (a fraction).
    pub gap: f64,
    pub out: Option<PathBuf>,
    pub state: PathBuf,
    pub detailed_exitcode: bool,
    pub previous: PreviousSource,
}

/// `30s`, `2m`, `1h30m`, or plain seconds (`45`, `2.5`).
pub fn parse_time_limit(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("`{s}`: the time limit must be a positive duration"))
        };
    }
    let d = units::parse_duration(s)?;
    if d.0 == 0 {
        return Err(format!("`{s}`: the time limit must be a positive duration"));
    }
    Ok(d.0 as f64)
}

/// `1%` (a percentage) or `0.01` (a fraction).
pub fn parse_gap(s: &str) -> Result<f64, String> {
    if s.trim().ends_with('%') {
        return units::parse_percent(s);
    }
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=10.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a gap (write e.g. `1%` or `0.01`)")),
    }
}

fn write_error(out: &Output, message: String) -> u8 {
    let d = Diagnostic::error(GP902, message);
    out.diagnostics(&crate::source::SourceMap::new(), &[d], Format::Human);
    1
}

pub fn run(s: &Settings, out: &Output) -> u8 {
    let planned = match make_plan(
        &s.paths,
        s.solver,
        s.time_limit,
        s.gap,
        &s.state,
        &s.previous,
        out,
    ) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut clock = Clock::new(std::env::var_os("GPUPLAN_TIMINGS").is_some());
    let json = plan::view::json(&planned.plan);
    clock.lap("plan json");
    if let Some(path) = &s.out {
        if let Err(e) = write_atomically(path, &json) {
            return write_error(out, format!("cannot write `{}`: {e}", path.display()));
        }
        out.status(&format!("plan saved to {}", path.display()));
    }
    match s.format {
        Format::Json => out.data(&json),
        Format::Human => out.data(&format!(
            "{}\n{}",
            placement::view::human(&planned.placement, &planned.model),
            plan::view::human(&planned.plan, out.color_stdout)
        )),
    }
    clock.lap("output");
    if s.detailed_exitcode && planned.plan.has_changes() {
        2
    } else {
        0
    }
}

/// What [`make_plan`] produces.
pub(super) struct Planned {
    pub model: crate::model::Cluster,
    /// With the solver's wall time (the plan's copy has none).
    pub placement: placement::Placement,
    pub plan: plan::Plan,
    pub prior: Option<crate::state::Loaded>,
}

/// The input files as the plan records them.
pub(super) fn inputs_of(sources: &crate::source::SourceMap) -> Vec<plan::InputFile> {
    sources
        .files()
        .iter()
        .map(|f| plan::InputFile {
            path: f.path.clone(),
            sha256: crate::state::sha256(f.text.as_bytes()),
        })
        .collect()
}

/// The pipeline `plan`, `apply PATH...` share: read the state, solve and check, render
/// every target, compare with the state.
pub(super) fn make_plan(
    paths: &[PathBuf],
    solver: SolverChoice,
    time_limit: f64,
    gap: f64,
    state_path: &Path,
    previous: &PreviousSource,
    out: &Output,
) -> Result<Planned, u8> {
    let prior = crate::apply::read_state(state_path).map_err(|d| {
        out.diagnostics(&crate::source::SourceMap::new(), &[d], Format::Human);
        1u8
    })?;
    let from_file;
    let previous = match previous {
        PreviousSource::State => prior.as_ref().map(|l| &l.state.placement),
        PreviousSource::Ignore => None,
        PreviousSource::File(f) => {
            from_file = read_previous(f).map_err(|d| {
                out.diagnostics(&crate::source::SourceMap::new(), &[d], Format::Human);
                1u8
            })?;
            Some(&from_file)
        }
    };
    let (sources, model, placement) = solve_checked(paths, solver, time_limit, gap, previous, out)?;
    let mut clock = Clock::new(std::env::var_os("GPUPLAN_TIMINGS").is_some());
    let spinner = out.spinner("rendering");
    let rendered = render::render(
        &model,
        &placement,
        &render::Target::ALL,
        &render::Options::default(),
    );
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    let rendered = match rendered {
        Ok(r) => r,
        Err(diags) => {
            out.diagnostics(&sources, &diags, Format::Human);
            out.status("no plan: the placement cannot be rendered");
            return Err(1);
        }
    };
    clock.lap("render");
    out.diagnostics(&sources, &rendered.warnings, Format::Human);
    let plan = plan::build(
        plan::Desired {
            model: &model,
            placement: &placement,
            files: &rendered.files,
            arguments: paths
                .iter()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .collect(),
            inputs: inputs_of(&sources),
        },
        prior.as_ref(),
    );
    clock.lap("compare with state");
    Ok(Planned {
        model,
        placement,
        plan,
        prior,
    })
}

/// Reads `--previous FILE`: a saved plan or a state (both carry `placement`), or a
/// placement as `plan --format json` wrote it before plans wrapped it.
#[allow(clippy::result_large_err)] // one diagnostic, once per command
pub fn read_previous(path: &Path) -> Result<placement::Placement, Diagnostic> {
    let fail = |why: String| {
        Diagnostic::error(GP903, format!("cannot read the previous placement `{}`: {why}", path.display()))
            .with_help("give a plan saved with `gpuplan plan -o PLAN`, a state file (`.gpuplan/state.json`), or leave `--previous` out")
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("not JSON ({e})")))?;
    let inner = value.get("placement").cloned().unwrap_or(value);
    serde_json::from_value(inner).map_err(|e| fail(format!("not a gpuplan placement ({e})")))
}

/// Writes `text` to a temporary file next to `path`, then renames it into place.
pub(super) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan.json".to_string());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The pipeline `plan` and `render` share: load, validate, solve, build the placement
/// and verify it with the independent checker. Diagnostics are printed; on failure the
/// exit code is returned.
pub(super) fn solve_checked(
    paths: &[PathBuf],
    solver: SolverChoice,
    time_limit: f64,
    gap: f64,
    previous: Option<&placement::Placement>,
    out: &Output,
) -> Result<
    (
        crate::source::SourceMap,
        crate::model::Cluster,
        placement::Placement,
    ),
    u8,
> {
    let mut clock = Clock::new(std::env::var_os("GPUPLAN_TIMINGS").is_some());
    let (sources, mut diags) = load::load_paths(paths);
    clock.lap("load");
    let outcome = validate::validate(&sources);
    clock.lap("validate");
    diags.extend(outcome.diagnostics.iter().cloned());
    out.diagnostics(&sources, &diags, Format::Human);
    let Some(mut model) = outcome
        .model
        .filter(|_| !diags.iter().any(|d| d.is_error()))
    else {
        out.status("no plan: the configuration has errors");
        return Err(1);
    };
    // The previous placement, resolved against this model; its MIG layouts become
    // current layouts (what the GPUs have after the last apply).
    let previous = previous.map(|pl| {
        let pv = Previous::resolve(&model, pl);
        if solver == SolverChoice::Ilp {
            pv.current_layouts(&mut model);
        }
        pv
    });
    let opts = Options {
        solver: match solver {
            SolverChoice::Ilp => SolverKind::Ilp,
            SolverChoice::Greedy => SolverKind::Greedy,
        },
        time_limit,
        gap,
        previous,
        enumerate: true,
    };
    out.status(&format!(
        "planning {} nodes, {} workload classes",
        model.nodes.len(),
        model.workloads.len()
    ));
    let spinner = out.spinner("solving");
    let (assignment, info) = solve::run(&model, &opts);
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    clock.lap("solve");
    for (name, secs) in &info.phases {
        clock.report(&format!("  {name}"), *secs);
    }
    let mut plan = placement::build(&model, &assignment, &info);
    if let Some(before) = &opts.previous {
        plan.moves = Some(previous::moves(before, &Previous::resolve(&model, &plan)));
    }
    clock.lap("build placement");
    let problems = placement::check(&model, &plan);
    clock.lap("check");
    if problems.is_empty() {
        return Ok((sources, model, plan));
    }
    // Never refuse a feasible instance: an ILP placement that fails the checker (a bug)
    // gives way to the greedy one, and the plan says so. GP901 only when that fails too.
    if opts.solver == SolverKind::Ilp {
        let (a, mut info) = solve::greedy::solve(&model);
        info.status = "fallback".to_string();
        info.note = Some(format!(
            "the ILP placement failed the checker ({} problem(s), first: {}); the greedy placement is used",
            problems.len(),
            problems[0]
        ));
        let fallback = placement::build(&model, &a, &info);
        if placement::check(&model, &fallback).is_empty() {
            out.status("the ILP placement failed its check; using the greedy placement");
            return Ok((sources, model, fallback));
        }
    }
    let d: Vec<Diagnostic> = problems
        .iter()
        .map(|p| {
            Diagnostic::error(GP901, format!("the plan fails its own check: {p}")).with_help(
                "this is a bug in gpuplan; please report it with the input files (`--solver greedy` may still plan)",
            )
        })
        .collect();
    out.diagnostics(&sources, &d, Format::Human);
    Err(1)
}

/// Phase timings on stderr, only when `GPUPLAN_TIMINGS` is set (for benchmarks; never
/// part of the plan, which must stay byte-identical between runs).
struct Clock {
    on: bool,
    last: std::time::Instant,
}

impl Clock {
    fn new(on: bool) -> Self {
        Clock {
            on,
            last: std::time::Instant::now(),
        }
    }
    fn lap(&mut self, name: &str) {
        let secs = self.last.elapsed().as_secs_f64();
        self.report(name, secs);
        self.last = std::time::Instant::now();
    }
    fn report(&self, name: &str, secs: f64) {
        if self.on {
            eprintln!("timing {name:<32} {secs:>9.3} s");
        }
    }
}
