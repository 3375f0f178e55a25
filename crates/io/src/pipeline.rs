//! The planning pipeline as one library operation: validate -> solve -> build the
//! placement -> check it -> render every target -> compare with the state.
//!
//! Commands, tests and benches call the same two functions: [`check()`] (through the
//! checked placement: `render`, `drift`) and [`plan()`] (`plan`, `apply PATH...`). Settings
//! come in as values, phase timings and diagnostics go out as data; nothing here reads
//! the environment or prints. Progress ([`Event`]) is reported to a callback, so a
//! command can show warnings and a spinner while the solver runs.

use crate::diag::Diagnostic;
use crate::model::Cluster;
use crate::par::joined;
use crate::placement::{self, Placement};
use crate::solve::{self, Highs, Options, SolverKind};
use crate::source::SourceMap;
use crate::{plan, render, state, validate};
use std::collections::BTreeMap;
use std::time::Instant;

/// GP901: the solver produced a plan that violates an invariant (a bug, never valid).
pub(crate) const GP901: &str = "GP901";
/// GP905: the time limit ran out before the plan was made.
pub(crate) const GP905: &str = "GP905";

/// Stack of a thread reading the state beside validation: the main thread's.
const WORKER_STACK: usize = 8 * 1024 * 1024;

/// Returns the heap memory a concurrent step freed to the system: glibc keeps what each
/// thread frees in that thread's arena, which made the peak RSS of a 100,000-GPU re-plan
/// 60-90 MB larger with the state read beside validation and the render beside the
/// checker (and 90 MB of the plan from scratch).
fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it only hands free heap pages back.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Frees `value` on another thread (here when no thread starts).
fn free_beside<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("free".into())
        .spawn(move || drop(value));
}

/// A value freed on another thread when it goes out of scope ([`free_beside`]): at
/// 100,000 GPUs the solver's view of the model, the resolved previous placement and the
/// like are millions of small allocations, 10-40 ms each to free on the command's path
/// (perf), while the other core waits.
struct FreeBeside<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> FreeBeside<T> {
    fn new(value: T) -> Self {
        FreeBeside(Some(value))
    }
}

impl<T: Send + 'static> std::ops::Deref for FreeBeside<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("taken only when dropped")
    }
}

impl<T: Send + 'static> Drop for FreeBeside<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            free_beside(value);
        }
    }
}

/// The share of what is left of the time limit after validation that the solver gets;
/// the rest is kept for building, checking and rendering its placement.
const SOLVE_SHARE: f64 = 0.9;

/// GP905 when `start` is more than `limit` seconds ago, naming the phase that ran out.
fn out_of_time(start: Instant, limit: f64, phase: &str) -> Option<Diagnostic> {
    let spent = start.elapsed().as_secs_f64();
    (spent > limit).then(|| {
        Diagnostic::error(
            GP905,
            format!("the time limit of {limit:.2} s ran out during {phase} ({spent:.2} s spent)"),
        )
        .with_help(
            "raise `--time-limit` (it bounds the whole plan: validation, solve, checks and \
             rendering), or plan a smaller configuration",
        )
    })
}

/// How to plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub solver: SolverKind,
    /// Wall-clock budget of the whole plan, in seconds: validation, solve, building and
    /// checking the placement, rendering. The solver gets what validation leaves, less a
    /// tenth kept for the phases after it; a phase that ends past the limit stops the
    /// plan (GP905).
    pub time_limit: f64,
    /// Relative gap at which the compaction stage stops (a fraction).
    pub gap: f64,
    /// Relative gap at which an admission stage of packed replicas only stops (see
    /// [`Options::admission_gap`]).
    pub admission_gap: f64,
    pub highs: Highs,
}

impl Default for Settings {
    fn default() -> Self {
        let o = Options::default();
        Settings {
            solver: o.solver,
            time_limit: o.time_limit,
            gap: o.gap,
            admission_gap: o.admission_gap,
            highs: o.highs,
        }
    }
}

/// Seconds per phase, in order; nested phases (the solver's) are indented by two spaces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings(pub Vec<(String, f64)>);

impl Timings {
    /// Records the time since `since` as `name` and restarts the clock.
    fn lap(&mut self, name: &str, since: &mut Instant) {
        self.0
            .push((name.to_string(), since.elapsed().as_secs_f64()));
        *since = Instant::now();
    }

    fn nested(&mut self, phases: &[(String, f64)]) {
        self.0
            .extend(phases.iter().map(|(n, s)| (format!("  {n}"), *s)));
    }
}

/// What the pipeline reports while it runs.
#[derive(Debug)]
pub enum Event<'a> {
    /// The configuration is valid; its warnings (also in [`Checked::warnings`]).
    Validated {
        sources: &'a SourceMap,
        warnings: &'a [Diagnostic],
    },
    /// The solver starts.
    Solving { nodes: usize, classes: usize },
    /// The solver is done.
    Solved,
    /// The ILP placement failed the checker; the greedy placement is used instead.
    FellBack,
    /// Rendering starts.
    Rendering,
    /// Rendering is done.
    Rendered,
}

/// What the caller gives the pipeline to read.
pub struct Inputs<'a> {
    /// The configuration files.
    pub sources: SourceMap,
    /// Diagnostics from loading them (unreadable files, empty folders).
    pub load_diagnostics: Vec<Diagnostic>,
    /// The placement to move as little as possible from (a saved plan's, the state's).
    pub previous: Option<&'a Placement>,
    /// `sources` already validated ([`Inputs::validate_beside`]); else [`check()`]
    /// validates them.
    pub validated: Option<Validated>,
}

/// The validation of an [`Inputs`]' sources, done ahead of [`check()`], and when it began
/// (the time limit counts from there).
pub struct Validated {
    outcome: validate::Outcome,
    started: Instant,
    secs: f64,
}

impl Inputs<'_> {
    /// The `*.kdl` files under `paths` ([`crate::load`]), with no previous placement.
    pub fn load(paths: &[std::path::PathBuf]) -> Inputs<'static> {
        let (sources, load_diagnostics) = crate::load::load_paths(paths);
        Inputs {
            sources,
            load_diagnostics,
            previous: None,
            validated: None,
        }
    }

    /// Validates the sources on this thread while `work` (reading the state, which the
    /// sources may name the backend of) runs on another core: at 100k GPUs validation
    /// and reading the state take 0.35 and 0.2 s, one after the other before. [`check()`]
    /// then uses this validation.
    pub fn validate_beside<T: Send>(&mut self, work: impl FnOnce(&SourceMap) -> T + Send) -> T {
        let sources = &self.sources;
        // Taken by the worker thread, or here when no thread can start.
        let work = std::sync::Mutex::new(Some(work));
        let run = || {
            let f = work.lock().ok().and_then(|mut w| w.take());
            f.map(|f| f(sources))
        };
        let (validated, out) = std::thread::scope(|scope| {
            // The main thread's stack (a state of deep JSON is read there too).
            let worker = std::thread::Builder::new()
                .stack_size(WORKER_STACK)
                .spawn_scoped(scope, run)
                .ok();
            let started = Instant::now();
            let outcome = validate::validate(sources);
            let secs = started.elapsed().as_secs_f64();
            let out = worker
                .and_then(joined)
                .or_else(run)
                .expect("the work runs once, on the worker or here");
            (
                Validated {
                    outcome,
                    started,
                    secs,
                },
                out,
            )
        });
        self.validated = Some(validated);
        release_freed();
        out
    }
}

/// A valid configuration and a placement that passed the independent checker.
#[derive(Debug)]
pub struct Checked {
    pub sources: SourceMap,
    pub model: Cluster,
    /// With the solver's wall time.
    pub placement: Placement,
    /// Warnings of loading and validation.
    pub warnings: Vec<Diagnostic>,
    pub timings: Timings,
}

/// Why there is no plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The configuration has errors.
    Validate,
    /// The placement fails its own check (GP901, a bug).
    Check,
    /// The placement cannot be rendered.
    Render,
    /// The time limit ran out (GP905).
    Time,
}

impl Stage {
    /// The one-line status a command prints after the diagnostics.
    pub fn message(self) -> &'static str {
        match self {
            Stage::Validate => "no plan: the configuration has errors",
            Stage::Check => "no plan: the placement fails its own check",
            Stage::Render => "no plan: the placement cannot be rendered",
            Stage::Time => "no plan: the time limit ran out",
        }
    }
}

/// No plan: the diagnostics say why, in the user's files.
#[derive(Debug)]
pub struct Failed {
    pub sources: SourceMap,
    pub stage: Stage,
    /// What explains the failure: every diagnostic of loading and validation for
    /// [`Stage::Validate`]; the checker's or the renderer's errors otherwise (the
    /// warnings were given in [`Event::Validated`] and are not repeated).
    pub diagnostics: Vec<Diagnostic>,
    pub timings: Timings,
}

/// Validates, solves, builds the placement and verifies it with the independent
/// checker. A placement of the ILP that fails the checker (a bug) gives way to the
/// greedy one (`status: fallback`, with a note); GP901 only when that fails too.
pub fn check(
    inputs: Inputs<'_>,
    s: &Settings,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Checked, Box<Failed>> {
    check_beside(inputs, s, on, None).map(|(c, _)| c)
}

/// [`check()`] with `beside` run while the checker runs ([`place_beside`]); also says
/// whether `beside` saw the placement returned.
fn check_beside(
    inputs: Inputs<'_>,
    s: &Settings,
    on: &mut dyn FnMut(Event<'_>),
    beside: Option<Work<'_>>,
) -> Result<(Checked, bool), Box<Failed>> {
    let mut timings = Timings::default();
    let Inputs {
        sources,
        load_diagnostics: mut diags,
        previous,
        validated,
    } = inputs;
    let Validated {
        outcome,
        started: start,
        secs,
    } = validated.unwrap_or_else(|| {
        let started = Instant::now();
        let outcome = validate::validate(&sources);
        Validated {
            outcome,
            started,
            secs: started.elapsed().as_secs_f64(),
        }
    });
    timings.0.push(("validate".to_string(), secs));
    if let Some(d) = out_of_time(start, s.time_limit, "validation") {
        return Err(Box::new(Failed {
            sources,
            stage: Stage::Time,
            diagnostics: vec![d],
            timings,
        }));
    }
    let validate::Outcome {
        spec,
        model,
        diagnostics,
    } = outcome;
    diags.extend(diagnostics);
    let Some(model) = model.filter(|_| !diags.iter().any(|d| d.is_error())) else {
        return Err(Box::new(Failed {
            sources,
            stage: Stage::Validate,
            diagnostics: diags,
            timings,
        }));
    };
    // The previous placement in this configuration's names (`moved`), and a warning
    // for each rename with nothing to rename (GP967).
    diags.extend(placement::moved::unused(&spec, &model.moves, previous));
    free_beside(spec);
    let renamed = FreeBeside::new(previous.map(|p| placement::moved::renamed(p, &model.moves)));
    let previous = renamed.as_ref();
    on(Event::Validated {
        sources: &sources,
        warnings: &diags,
    });
    let left = s.time_limit - start.elapsed().as_secs_f64();
    let budget = Settings {
        time_limit: (left * SOLVE_SHARE).max(0.05),
        ..s.clone()
    };
    let deadline = start + std::time::Duration::from_secs_f64(s.time_limit.max(0.0));
    let beside = beside.map(|work| (work, deadline));
    match place_beside(&model, previous, &budget, on, beside) {
        Ok((placement, t, seen)) => {
            timings.0.extend(t.0);
            let phase = if seen {
                "solving, checking and rendering"
            } else {
                "solving and checking"
            };
            if let Some(d) = out_of_time(start, s.time_limit, phase) {
                return Err(Box::new(Failed {
                    sources,
                    stage: Stage::Time,
                    diagnostics: vec![d],
                    timings,
                }));
            }
            Ok((
                Checked {
                    sources,
                    model,
                    placement,
                    warnings: diags,
                    timings,
                },
                seen,
            ))
        }
        Err((diagnostics, t)) => {
            timings.0.extend(t.0);
            let stage = if diagnostics.iter().any(|d| d.code == GP905) {
                Stage::Time
            } else {
                Stage::Check
            };
            Err(Box::new(Failed {
                sources,
                stage,
                diagnostics,
                timings,
            }))
        }
    }
}

/// The part of [`check`] after validation, on a valid model: solves, builds the
/// placement (with its moves when `previous` is given) and verifies it with the
/// independent checker. A placement of the ILP that fails the checker (a bug) gives way
/// to the greedy one; GP901 diagnostics when that fails too.
#[allow(clippy::type_complexity)]
pub fn place(
    model: &Cluster,
    previous: Option<&Placement>,
    s: &Settings,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<(Placement, Timings), (Vec<Diagnostic>, Timings)> {
    place_beside(model, previous, s, on, None).map(|(p, t, _)| (p, t))
}

/// Work done beside the independent checker (rendering, for [`plan()`]): given the user's
/// model and the placement as the user gets it should it pass the checker; not begun
/// past its deadline (the plan's time limit, which then stops it after the check).
type Beside<'b> = (Work<'b>, Instant);

/// What [`Beside`] runs.
type Work<'b> = &'b mut dyn FnMut(&Cluster, &Placement);

/// [`place`], with `beside` run on this thread while the checker runs on another (they
/// only read the placement). Also says whether `beside` saw the placement returned:
/// not when it fails the checker or the greedy floor replaces it (then the caller
/// redoes that work on the placement returned).
fn place_beside(
    model: &Cluster,
    previous: Option<&Placement>,
    s: &Settings,
    on: &mut dyn FnMut(Event<'_>),
    beside: Option<Beside<'_>>,
) -> Result<(Placement, Timings, bool), (Vec<Diagnostic>, Timings)> {
    let started = Instant::now();
    let mut clock = started;
    let mut timings = Timings::default();
    // With scheduling authorities or CUDA requirements, plan on the view that keeps
    // every class on the nodes that can run it (its scheduler's, a driver its CUDA runs
    // on); the placement gets the user's model names back at the end.
    // Nodes with GPUs of several models are planned as one node per model (a gang
    // member or replica uses GPUs of one model); the placement gets the nodes back.
    let mixed = FreeBeside::new(crate::model::mixed::split(model));
    let user = model;
    let model = mixed.as_ref().map_or(model, |(v, _)| v);
    let view = FreeBeside::new(
        model
            .needs_view()
            .then(|| crate::model::authority::solver_view(model)),
    );
    let model = view.as_ref().unwrap_or(model);
    // Names back, and the spot and checkpoint figures of the placement the user gets.
    let restore = |mut p: Placement| {
        if view.is_some() {
            p.restore_model_names();
        }
        if let Some((_, parts)) = &*mixed {
            p.merge_parts(parts, user);
        }
        p.economics = placement::economics::compute(user, &p);
        p
    };
    let opts = FreeBeside::new(Options {
        solver: s.solver,
        time_limit: s.time_limit,
        gap: s.gap,
        admission_gap: s.admission_gap,
        previous: previous.map(|pl| match &*mixed {
            Some((_, parts)) => placement::previous::resolve(model, &pl.split_parts(parts)),
            None => placement::previous::resolve(model, pl),
        }),
        enumerate: true,
        highs: s.highs.clone(),
    });
    on(Event::Solving {
        nodes: model.nodes.len(),
        classes: model.workloads.len(),
    });
    let (assignment, info) = solve::run(model, &opts);
    on(Event::Solved);
    timings.lap("solve", &mut clock);
    timings.nested(&info.phases);
    let mut built = placement::build(model, &assignment, &info);
    free_beside(assignment);
    if let Some(before) = &opts.previous {
        let now = placement::previous::resolve(model, &built);
        built.moves = Some(placement::previous::moves(before, &now));
    }
    timings.lap("build placement", &mut clock);
    // `beside` sees the placement as the user gets it should it pass: the solver's own
    // when only its economics differ (no view, no split node: no copy, 100 MB at 100k
    // GPUs), else a restored copy.
    let plain = view.is_none() && mixed.is_none();
    let mut restored = None;
    let mut beside_ran = false;
    // The greedy floor (one more greedy solve, build and check) applies to an ILP
    // placement not proven optimal, within the first half of the time limit (found by
    // the bounded-work test: 1 s of greedy on a 5,461-node cluster under
    // `--time-limit 0.5`).
    let floor_applies = |built: &Placement| {
        opts.solver == SolverKind::Ilp
            && built.solver.status != solve::SolveStatus::Optimal
            && started.elapsed().as_secs_f64() < s.time_limit / 2.0
    };
    let mut floor = None;
    let problems = match beside.filter(|(_, deadline)| Instant::now() <= *deadline) {
        None => {
            let problems = placement::check(model, &built);
            timings.lap("check", &mut clock);
            problems
        }
        Some((work, _)) => {
            if plain {
                built.economics = placement::economics::compute(user, &built);
            } else {
                restored = Some(restore(built.clone()));
            }
            let seen = restored.as_ref().unwrap_or(&built);
            // Decision: where the floor applies, it is computed beside the checker and
            // the work too (on openb lists the greedy is 0.17 s, the render's facts 0.18 s
            // on one core); it is used only when the placement passes, as after them.
            let (problems, secs, found) = check_and_floor_beside(
                model,
                &built,
                floor_applies(&built),
                opts.previous.as_ref(),
                || work(user, seen),
            );
            floor = found;
            release_freed();
            // The checker's own seconds (the rest is `beside`'s).
            timings.0.push(("check".to_string(), secs));
            clock = Instant::now();
            beside_ran = true;
            problems
        }
    };
    if problems.is_empty() {
        let found = match floor {
            Some((found, secs)) => {
                timings
                    .0
                    .push(("greedy floor (beside the check)".to_string(), secs));
                found
            }
            None if !beside_ran && floor_applies(&built) => {
                let found = greedy_floor(model, &built, opts.previous.as_ref());
                timings.lap("greedy floor", &mut clock);
                found
            }
            None => None,
        };
        if let Some(better) = found {
            return Ok((restore(better), timings, false));
        }
        return Ok(match (beside_ran, restored) {
            (true, Some(r)) => (r, timings, true),
            (true, None) => (built, timings, true),
            (false, _) => (restore(built), timings, false),
        });
    }
    // The greedy fallback is one more phase: only with time left for it.
    let spent = started.elapsed().as_secs_f64();
    if opts.solver == SolverKind::Ilp && spent >= s.time_limit {
        return Err((vec![no_time_for_fallback(&problems)], timings));
    }
    if opts.solver == SolverKind::Ilp {
        if let Some(fallback) = greedy_fallback(model, &problems) {
            on(Event::FellBack);
            timings.lap("greedy fallback", &mut clock);
            return Ok((restore(fallback), timings, false));
        }
    }
    Err((fails_its_check(&problems), timings))
}

/// The independent checker's problems with `built` and its seconds, computed on another
/// thread while `work` runs on this one; with `floor`, also the greedy floor of `built`
/// (moves counted from `previous`) and its seconds, on a third.
#[allow(clippy::type_complexity)]
fn check_and_floor_beside(
    model: &Cluster,
    built: &Placement,
    floor: bool,
    previous: Option<&solve::previous::Previous>,
    work: impl FnOnce(),
) -> (
    Vec<placement::Violation>,
    f64,
    Option<(Option<Placement>, f64)>,
) {
    std::thread::scope(|scope| {
        let checker = scope.spawn(|| {
            let t = Instant::now();
            (placement::check(model, built), t.elapsed().as_secs_f64())
        });
        let floor = floor.then(|| {
            scope.spawn(|| {
                let t = Instant::now();
                (
                    greedy_floor(model, built, previous),
                    t.elapsed().as_secs_f64(),
                )
            })
        });
        work();
        let (problems, secs) = joined(checker);
        (problems, secs, floor.map(joined))
    })
}

/// GP905: the solver's placement fails the checker and no time is left for greedy.
fn no_time_for_fallback(problems: &[placement::Violation]) -> Diagnostic {
    Diagnostic::error(
        GP905,
        format!(
            "the time limit ran out: the solver's placement fails its own check ({} problem(s), first: {}) and no time is left for the greedy fallback",
            problems.len(),
            problems[0]
        ),
    )
    .with_help("raise `--time-limit`, or plan with `--solver greedy`")
}

/// GP901, one per problem: no placement passes the checker (a bug).
fn fails_its_check(problems: &[placement::Violation]) -> Vec<Diagnostic> {
    problems
        .iter()
        .map(|p| {
            let d = Diagnostic::error(GP901, format!("the plan fails its own check: {p}")).with_help(
                "this is a bug in gpuplan; please report it with the input files (`--solver greedy` may still plan)",
            );
            match p.span {
                Some(span) => d.at(span, "the plan breaks an invariant here"),
                None => d,
            }
        })
        .collect()
}

/// GPU-equivalents placed per priority level, highest level first.
fn admitted_by_level(model: &Cluster, p: &Placement) -> Vec<(i64, f64)> {
    let mut by: BTreeMap<i64, f64> = BTreeMap::new();
    for w in &p.workloads {
        let level = model.priority(&w.priority).map(|x| x.value).unwrap_or(0);
        *by.entry(level).or_default() += w.gpus_placed;
    }
    by.into_iter().rev().collect()
}

/// The ILP never admits less than the greedy baseline: when its placement (not proven
/// optimal: a time limit, a tail of columns not generated) admits fewer GPU-equivalents
/// than the greedy one at the first priority level where they differ, the greedy
/// placement, if it passes the checker, with status `fallback` and a note. Decision: the
/// comparison is by priority level, highest first, as the ILP's stages admit; moves and
/// cost come after admission in the ILP's order too.
fn greedy_floor(
    model: &Cluster,
    ilp: &Placement,
    previous: Option<&solve::previous::Previous>,
) -> Option<Placement> {
    let (a, mut info) = solve::greedy::solve(model);
    let candidate = placement::build(model, &a, &info);
    let (mine, theirs) = (
        admitted_by_level(model, ilp),
        admitted_by_level(model, &candidate),
    );
    let (level, ours, greedy) = mine
        .iter()
        .zip(&theirs)
        .find(|(x, y)| (x.1 - y.1).abs() > 1e-6)
        .map(|(x, y)| (x.0, x.1, y.1))?;
    if greedy < ours {
        return None;
    }
    info.status = solve::SolveStatus::Fallback;
    info.note = Some(format!(
        "the ILP's placement (not proven optimal) admits {ours:.2} GPU-equivalents at priority {level}, the greedy placement {greedy:.2}; the greedy placement is used"
    ));
    let mut fallback = placement::build(model, &a, &info);
    if let Some(before) = previous {
        let now = placement::previous::resolve(model, &fallback);
        fallback.moves = Some(placement::previous::moves(before, &now));
    }
    placement::check(model, &fallback)
        .is_empty()
        .then_some(fallback)
}

/// Never refuse a feasible instance: when the ILP's placement fails the checker (a bug),
/// the greedy placement, if it passes, with a note saying why.
fn greedy_fallback(model: &Cluster, problems: &[placement::Violation]) -> Option<Placement> {
    let (a, mut info) = solve::greedy::solve(model);
    info.status = solve::SolveStatus::Fallback;
    info.note = Some(format!(
        "the ILP placement failed the checker ({} problem(s), first: {}); the greedy placement is used",
        problems.len(),
        problems[0]
    ));
    let fallback = placement::build(model, &a, &info);
    placement::check(model, &fallback)
        .is_empty()
        .then_some(fallback)
}

/// A plan: the checked placement, every target rendered, the comparison with the state.
#[derive(Debug)]
pub struct Planned {
    pub checked: Checked,
    /// Warnings about the placement's spot and checkpoint figures (GP930, GP931), then
    /// of rendering (after [`Checked::warnings`]).
    pub render_warnings: Vec<Diagnostic>,
    pub plan: plan::Plan,
    /// The whole run's phases ([`Checked::timings`] included).
    pub timings: Timings,
}

/// [`check`], then renders every target and compares the artifacts and the placement
/// with `prior` (the state the last apply wrote). `arguments`: the paths as the user gave
/// them, recorded in the plan.
pub fn plan(
    inputs: Inputs<'_>,
    arguments: Vec<String>,
    prior: Option<&state::Loaded>,
    s: &Settings,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Planned, Box<Failed>> {
    // The time limit counts from validation, done ahead or in `check_beside`.
    let start = inputs
        .validated
        .as_ref()
        .map_or_else(Instant::now, |v| v.started);
    let all = |model: &Cluster, placement: &Placement| {
        let t = Instant::now();
        let r = render::render(
            model,
            placement,
            &render::Target::ALL,
            &render::Options::default(),
        );
        (r, t.elapsed().as_secs_f64())
    };
    // Rendering runs beside the checker (both only read the placement); it is redone
    // only when the placement returned is not the one it rendered (a fallback).
    let mut early = None;
    let (checked, seen) = check_beside(
        inputs,
        s,
        on,
        Some(&mut |model, placement| early = Some(all(model, placement))),
    )?;
    let mut warnings = placement::economics::warnings(&checked.model, &checked.placement);
    let mut timings = checked.timings.clone();
    on(Event::Rendering);
    let (rendered, secs) = match early.filter(|_| seen) {
        Some(done) => done,
        None => all(&checked.model, &checked.placement),
    };
    on(Event::Rendered);
    let mut clock = Instant::now();
    let rendered = match rendered {
        Ok(r) => r,
        Err(errors) => {
            return Err(Box::new(Failed {
                sources: checked.sources,
                stage: Stage::Render,
                diagnostics: errors,
                timings,
            }));
        }
    };
    timings.0.push(("render".to_string(), secs));
    timings.nested(&rendered.timings);
    if let Some(d) = out_of_time(start, s.time_limit, "rendering") {
        return Err(Box::new(Failed {
            sources: checked.sources,
            stage: Stage::Time,
            diagnostics: vec![d],
            timings,
        }));
    }
    let plan = plan::build(
        plan::Desired {
            model: &checked.model,
            placement: &checked.placement,
            files: &rendered.files,
            arguments,
            inputs: plan::inputs_of(&checked.sources),
        },
        prior,
    );
    timings.lap("compare with state", &mut clock);
    warnings.extend(rendered.warnings);
    free_beside(rendered.files);
    Ok(Planned {
        checked,
        render_warnings: warnings,
        plan,
        timings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Cluster {
        let out = validate::validate(&sources());
        assert!(out.diagnostics.iter().all(|d| !d.is_error()));
        out.model.expect("model")
    }

    fn sources() -> SourceMap {
        let mut sources = SourceMap::new();
        sources.add(
            "t.kdl",
            r#"
cluster "c"
node-class "n" {
    cpu sockets=1 cores-per-socket=32
    memory "256GiB"
    gpus 4 model="l40s-48gb"
}
nodes "n-[1-2]" class="n"
team "t" guarantee=8 burst=8
priority "high" value=100
priority "low" value=10
inference "a" team="t" priority="high" replicas=3 {
    fraction "50%"
    requests cpu=1 memory="1GiB"
}
inference "b" team="t" priority="low" replicas=4 {
    gpus 1
    requests cpu=1 memory="1GiB"
}
"#
            .to_string(),
        );
        sources
    }

    fn inputs() -> Inputs<'static> {
        Inputs {
            sources: sources(),
            load_diagnostics: Vec::new(),
            previous: None,
            validated: None,
        }
    }

    /// `p` without the solver's wall time (the one field two solves differ in).
    fn timeless(p: &Placement) -> Placement {
        let mut p = p.clone();
        p.solver.seconds = 0.0;
        p
    }

    /// Rendering beside the checker renders the placement `check()` returns, as
    /// rendering after it does; past the deadline it does not begin.
    #[test]
    fn rendering_beside_the_checker_is_rendering_after_it() {
        let s = Settings::default();
        let all = |c: &Cluster, p: &Placement| {
            render::render(c, p, &render::Target::ALL, &render::Options::default())
                .expect("renders")
                .files
        };
        let after = check(inputs(), &s, &mut |_| {}).expect("plans");
        let mut early = None;
        let (beside, seen) = check_beside(
            inputs(),
            &s,
            &mut |_| {},
            Some(&mut |c, p| early = Some((all(c, p), p.clone()))),
        )
        .expect("plans");
        assert!(seen);
        let (files, rendered) = early.expect("rendered beside the checker");
        assert_eq!(rendered, beside.placement);
        assert_eq!(timeless(&rendered), timeless(&after.placement));
        assert_eq!(files, all(&after.model, &after.placement));
        // The checker's own seconds are reported once, as before.
        let names = |t: &Timings| t.0.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&beside.timings), names(&after.timings));
        // Past its deadline the work does not begin.
        let c = model();
        let mut ran = false;
        let mut work = |_: &Cluster, _: &Placement| ran = true;
        let (_, _, seen) =
            place_beside(&c, None, &s, &mut |_| {}, Some((&mut work, Instant::now())))
                .expect("places");
        assert!(!seen && !ran);
    }

    /// Sources validated ahead ([`Inputs::validate_beside`]) give what `check()`'s own
    /// validation gives; the work beside it runs once and its value comes back.
    #[test]
    fn validation_ahead_is_the_validation_check_does() {
        let s = Settings::default();
        let plain = check(inputs(), &s, &mut |_| {}).expect("plans");
        let mut ahead = inputs();
        let files = ahead.validate_beside(|sources| sources.files().len());
        assert_eq!(files, 1);
        assert!(ahead.validated.is_some());
        let checked = check(ahead, &s, &mut |_| {}).expect("plans");
        assert_eq!(timeless(&checked.placement), timeless(&plain.placement));
        assert_eq!(
            checked
                .timings
                .0
                .iter()
                .filter(|(n, _)| n == "validate")
                .count(),
            1
        );
        // The time limit counts from the validation's start, not from the plan's.
        let mut late = inputs();
        late.validate_beside(|_| ());
        let v = late.validated.as_mut().expect("validated");
        v.started = Instant::now()
            .checked_sub(std::time::Duration::from_secs(10))
            .expect("a clock older than 10 s");
        let limited = Settings {
            time_limit: 5.0,
            ..Settings::default()
        };
        let failed = plan(late, Vec::new(), None, &limited, &mut |_| {}).expect_err("out of time");
        assert_eq!(failed.stage, Stage::Time);
        assert!(failed.diagnostics[0].message.contains("during validation"));
    }

    #[test]
    fn the_floor_beside_the_check_is_the_floor_after_it() {
        // An ILP placement that admits nothing and is not proven optimal: the greedy
        // floor computed beside the checker and the work is the one computed after them.
        let c = model();
        let empty = solve::Assignment {
            node_mode: vec![None; c.nodes.len()],
            ..solve::Assignment::default()
        };
        let info = solve::SolveInfo {
            status: solve::SolveStatus::Feasible,
            ..solve::SolveInfo::default()
        };
        let nothing = placement::build(&c, &empty, &info);
        let mut worked = false;
        let (problems, _, floor) =
            check_and_floor_beside(&c, &nothing, true, None, || worked = true);
        assert!(worked && problems.is_empty());
        let (beside, _) = floor.expect("the floor ran");
        let after = greedy_floor(&c, &nothing, None);
        assert!(after.is_some());
        assert_eq!(
            timeless(&beside.expect("greedy admits more")),
            timeless(&after.unwrap())
        );
        // Without the floor, none is computed.
        let (_, _, floor) = check_and_floor_beside(&c, &nothing, false, None, || {});
        assert!(floor.is_none());
    }

    #[test]
    fn what_is_freed_beside_is_freed_on_another_thread() {
        /// Says which thread dropped it.
        struct Told(std::sync::mpsc::Sender<std::thread::ThreadId>);
        impl Drop for Told {
            fn drop(&mut self) {
                let _ = self.0.send(std::thread::current().id());
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let held = FreeBeside::new(Told(tx.clone()));
        assert!(rx.try_recv().is_err(), "not dropped while held");
        drop(held);
        free_beside(Told(tx));
        for _ in 0..2 {
            let by = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("dropped");
            assert_ne!(by, std::thread::current().id());
        }
    }

    /// An ILP placement that admits less than greedy's (here: nothing) gives way to it,
    /// with status `fallback` and a note; one that admits as much stays. The floor
    /// compares the highest priority level first.
    #[test]
    fn the_ilp_never_admits_less_than_greedy() {
        let c = model();
        let (empty, info) = (solve::Assignment::default(), solve::SolveInfo::default());
        let mut empty = empty;
        empty.node_mode = vec![None; c.nodes.len()];
        let nothing = placement::build(&c, &empty, &info);
        let floor = greedy_floor(&c, &nothing, None).expect("greedy admits more");
        assert_eq!(floor.solver.status, solve::SolveStatus::Fallback);
        assert!(
            floor
                .solver
                .note
                .as_deref()
                .unwrap_or("")
                .contains("priority 100")
        );
        let levels = admitted_by_level(&c, &floor);
        assert_eq!(levels, vec![(100, 1.5), (10, 4.0)]);
        // Greedy's own placement is not beaten by itself.
        assert!(greedy_floor(&c, &floor, None).is_none());
    }
}
