//! One stage of the lexicographic solve: the per-GPU relaxation's bound ([`relax`]),
//! column generation on the master's LP relaxation ([`generate`], pricing each group by
//! [`price`]), then the integer program over the generated columns, started from the
//! better of the previous stage's solution and the LP's fixed neighbourhood (after a
//! dive, first the support neighbourhood, which is often the answer: [`neighbourhood`]),
//! and enriched with columns while it falls short of the bound ([`enrich`]).

use super::lp::{Live, Solution, Status};
use super::master::{Master, Objective};
use super::pattern::Pattern;
use super::{dive, neighbourhood, pricing, relative_gap, relax, step_of};
use std::time::Instant;

/// Column-generation rounds per stage.
const MAX_ROUNDS: usize = 400;
/// Rounds of column enrichment after a stage's integer program.
const ENRICH_ROUNDS: usize = 3;
/// A column improves when its reduced cost is below this.
const RC_TOL: f64 = 1e-7;

/// What one stage gives.
pub(super) struct StageOut {
    pub x: Vec<f64>,
    /// Seconds of the per-GPU relaxation's bound (0 when no group needs it).
    pub relax_s: f64,
    /// Objective of `x` (minimisation form).
    pub objective: f64,
    /// A valid lower bound on the stage's optimum over all patterns.
    pub bound: f64,
    pub status: Status,
    pub rounds: usize,
    pub lp_s: f64,
    pub mip_s: f64,
    /// The dive's solution (see [`dive`]) and its seconds, when it ran.
    pub dive: Option<(Vec<f64>, f64)>,
    /// The support neighbourhood's solution ([`neighbourhood::support`]) and its seconds
    /// (part of `mip_s`), when it ran and found one.
    pub support: Option<(Vec<f64>, f64)>,
}

/// One stage: column generation on the LP relaxation, then the integer program over
/// the generated columns.
pub(super) fn run(
    m: &mut Master,
    obj: &Objective,
    warm: Option<&[f64]>,
    budget: f64,
    gaps: (f64, f64),
    complete: &[bool],
    pool: &mut relax::Pool,
) -> Result<StageOut, String> {
    let t = Instant::now();
    m.lp.cost = m.costs(obj);
    if let Some(out) = at_box_bound(m, warm) {
        return Ok(out);
    }
    let lp = lp_phase(m, obj, budget, complete, pool, t);
    let mip = Mip::new(m, obj, gaps, &lp, budget);
    // The dive's placement, when it is as good as the bound allows: done.
    if let Some(x) = lp.dived.as_ref().filter(|x| mip.close(m.lp.objective(x))) {
        let objective = m.lp.objective(x);
        return Ok(StageOut {
            relax_s: lp.relax_s,
            x: x.clone(),
            objective,
            bound: lp.bound.min(objective),
            status: Status::Optimal,
            rounds: lp.rounds,
            lp_s: lp.lp_s,
            mip_s: 0.0,
            dive: lp.dive_out(),
            support: None,
        });
    }
    let mut warm = better(m, warm, lp.dived.as_deref());
    // A dive's stage: first the program restricted to the support of its LP optimum and
    // of the start, stopped within the admission gap; often the answer.
    let mut support = None;
    if let (Some(_), Some(w)) = (lp.dived.as_ref(), warm.as_deref()) {
        let t_support = Instant::now();
        let found = neighbourhood::support(m, w, |live| mip.configure_neighbourhood(live));
        if let Some(x) = found {
            warm = better(m, warm.as_deref(), Some(&x));
            support = Some((x, t_support.elapsed().as_secs_f64()));
        }
    }
    // Then the integer program around the LP optimum: integer columns the LP holds at
    // an integer value stay there. Often as good as the bound allows, and then done.
    let start = starting_point(m, warm.as_deref(), &lp.x, (budget - lp.lp_s) * 0.5);
    let mut live = Live::new(&m.lp, true);
    mip.configure(&mut live);
    if let Some(sx) = &start {
        if mip.close(m.lp.objective(sx)) {
            let objective = m.lp.objective(sx);
            return Ok(StageOut {
                relax_s: lp.relax_s,
                x: sx.clone(),
                objective,
                bound: lp.bound.min(objective),
                status: Status::Optimal,
                rounds: lp.rounds,
                lp_s: lp.lp_s,
                mip_s: mip.t.elapsed().as_secs_f64(),
                dive: lp.dive_out(),
                support,
            });
        }
        live.start(sx);
    }
    let sol = live.run(true);
    if !matches!(sol.status, Status::Optimal | Status::Limit) {
        return Err(format!(
            "HiGHS ended the stage with status {:?}",
            sol.status
        ));
    }
    let x = m.lp.round_integers(&sol.x);
    if !m.lp.feasible(&x, 1e-5) {
        return Err("the rounded integer solution violates the master".into());
    }
    let (mut x, sol) = enrich(m, &mip, x, sol);
    if x.len() < m.lp.cols() {
        x.resize(m.lp.cols(), 0.0);
    }
    let objective = m.lp.objective(&x);
    // The MIP's own bound holds for all placements only when every group's patterns are
    // all present.
    let bound = if all_complete(m, complete) && sol.bound.is_finite() {
        lp.bound.max(sol.bound)
    } else {
        lp.bound
    }
    .min(objective);
    Ok(StageOut {
        relax_s: lp.relax_s,
        x,
        objective,
        bound,
        status: sol.status,
        rounds: lp.rounds,
        lp_s: lp.lp_s,
        mip_s: mip.t.elapsed().as_secs_f64(),
        dive: lp.dive_out(),
        support,
    })
}

/// The stage already solved: the warm start satisfies the master and its objective is
/// the least any point within the columns' bounds can have (every cost is 0 or more, so
/// each column at its lower bound), a valid bound over all patterns too, since a new
/// pattern column costs at least 0 then. Compaction of packed replicas with nothing to
/// weigh (no sharing or price, as on openb) ends here instead of solving a relaxation of
/// a program whose every solution scores 0 (0.3-0.5 s on every openb list).
fn at_box_bound(m: &Master, warm: Option<&[f64]>) -> Option<StageOut> {
    let lp = &m.lp;
    // Only where the demand is all packed: elsewhere the integer program breaks ties
    // between placements of equal cost (gangs on the first nodes by name, the snapshots
    // of every example), and a stage that ends at its start would break them otherwise.
    if !dive::applies(m) || lp.cost.iter().any(|c| *c < 0.0) {
        return None;
    }
    let mut x = warm?.to_vec();
    x.resize(lp.cols(), 0.0);
    let bound: f64 = (0..lp.cols())
        .filter(|&j| lp.cost[j] > 0.0)
        .map(|j| lp.cost[j] * lp.lo[j])
        .sum();
    let objective = lp.objective(&x);
    (objective <= bound + 1e-9 && lp.feasible(&x, 1e-6)).then_some(StageOut {
        x,
        relax_s: 0.0,
        objective,
        bound,
        status: Status::Optimal,
        rounds: 0,
        lp_s: 0.0,
        mip_s: 0.0,
        dive: None,
        support: None,
    })
}

/// Whether every group that has patterns has all of them as columns.
fn all_complete(m: &Master, complete: &[bool]) -> bool {
    (0..m.patterns.len()).all(|g| complete[g] || m.patterns[g].is_empty())
}

/// The better (lower objective) of two solutions of the master, either absent, each
/// padded to the master's columns; a warm start that no longer satisfies the master's
/// rows does not count.
fn better(m: &Master, a: Option<&[f64]>, b: Option<&[f64]>) -> Option<Vec<f64>> {
    let pad = |x: &[f64]| {
        let mut v = x.to_vec();
        v.resize(m.lp.cols(), 0.0);
        v
    };
    let a = a.map(pad).filter(|v| m.lp.feasible(v, 1e-6));
    let b = b.map(pad).filter(|v| m.lp.feasible(v, 1e-6));
    match (a, b) {
        (Some(a), Some(b)) => Some(if m.lp.objective(&b) < m.lp.objective(&a) - 1e-9 {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// What a stage's LP phase gives.
struct LpPhase {
    /// A valid lower bound on the stage's optimum (`NEG_INFINITY`: none).
    bound: f64,
    /// Column-generation rounds.
    rounds: usize,
    /// The last LP solution (empty when no column generation ran).
    x: Vec<f64>,
    /// Seconds of the per-GPU relaxation's bound.
    relax_s: f64,
    /// Seconds of the whole LP phase, the relaxation's included.
    lp_s: f64,
    /// The dive's placement read off the relaxation, when it applies.
    dived: Option<Vec<f64>>,
    /// Seconds of the dive.
    dive_s: f64,
}

impl LpPhase {
    fn dive_out(&self) -> Option<(Vec<f64>, f64)> {
        self.dived.clone().map(|x| (x, self.dive_s))
    }
}

/// The LP phase of a stage begun at `t`: the per-GPU relaxation's bound, then column
/// generation unless every pattern is a column.
fn lp_phase(
    m: &mut Master,
    obj: &Objective,
    budget: f64,
    complete: &[bool],
    pool: &mut relax::Pool,
    t: Instant,
) -> LpPhase {
    // With every pattern present there is nothing to generate: the integer program's own
    // bound is the bound.
    let all_complete = all_complete(m, complete);
    // Groups with fractional classes: the per-GPU relaxation's bound, often far tighter
    // than what node-pattern pricing can prove in time. First, so that node pricing
    // cannot starve it.
    // The relaxation converges well within this on every benchmark (docs/benchmarks.md);
    // the deadline only bounds pathological inputs.
    let deadline = t + std::time::Duration::from_secs_f64(budget * 0.4);
    let relaxed = relax::relax(m, obj, pool, complete, deadline);
    let t_dive = Instant::now();
    let dived = relaxed.solved.as_ref().and_then(|s| dive::dive(m, s));
    let dive_s = t_dive.elapsed().as_secs_f64();
    let relax_s = t.elapsed().as_secs_f64();
    // With the dive's placement, the relaxation's bound and columns stand in for node
    // patterns priced one by one (far slower where replicas are fractional).
    let (mut bound, rounds, x) = if all_complete || dived.is_some() {
        (f64::NEG_INFINITY, 0, Vec::new())
    } else {
        generate(m, obj, complete, Instant::now(), budget * 0.4)
    };
    bound = bound.max(relaxed.bound);
    LpPhase {
        bound,
        rounds,
        x,
        relax_s,
        lp_s: t.elapsed().as_secs_f64(),
        dived,
        dive_s,
    }
}

/// What a stage's integer programs share: the objective, when to stop, and the clock.
struct Mip<'o> {
    obj: &'o Objective,
    /// The relative gap asked for.
    gap: f64,
    /// An admission stage's tolerance beyond its resolution: the admission gap times
    /// the bound for a stage of packed replicas only ([`dive::applies`]), else 0.
    slack: f64,
    /// The LP phase's bound.
    bound: f64,
    /// An admission stage's resolution (see [`step_of`]); `None` for compaction.
    step: Option<f64>,
    /// The stage's seconds, and those its LP phase took.
    budget: f64,
    lp_s: f64,
    /// When the integer phase began.
    t: Instant,
}

impl<'o> Mip<'o> {
    fn new(
        m: &Master,
        obj: &'o Objective,
        (gap, admission_gap): (f64, f64),
        lp: &LpPhase,
        budget: f64,
    ) -> Mip<'o> {
        let t = Instant::now();
        let step = match obj {
            Objective::Admit { ws, .. } => Some(step_of(m, ws)),
            Objective::Compact => None,
        };
        let slack = if step.is_some() && dive::applies(m) && lp.bound.is_finite() {
            admission_gap.max(0.0) * lp.bound.abs()
        } else {
            0.0
        };
        Mip {
            obj,
            gap,
            slack,
            bound: lp.bound,
            step,
            budget,
            lp_s: lp.lp_s,
            t,
        }
    }

    /// Whether `objective` is as good as the bound allows: within half the admission
    /// resolution, or within the relative gap for compaction.
    fn close(&self, objective: f64) -> bool {
        self.bound.is_finite()
            && match self.step {
                Some(step) => objective <= self.bound + (step * 0.5).max(self.slack),
                None => relative_gap(objective, self.bound) <= self.gap.max(0.0),
            }
    }

    /// The time limit (what is left of the stage's budget) and gaps of an integer
    /// program.
    fn configure(&self, live: &mut Live) {
        live.option_f64(
            "time_limit",
            (self.budget - self.lp_s - self.t.elapsed().as_secs_f64()).max(0.05),
        );
        live.option_f64("mip_rel_gap", self.gap.max(0.0));
        if let Some(step) = self.step {
            // Admission is exact to half its resolution (see `step_of`), whatever the
            // relative gap: a higher-priority replica is never left out within "the gap";
            // a stage of packed replicas only stops within its slack.
            live.option_f64("mip_rel_gap", 0.0);
            live.option_f64("mip_abs_gap", (step * 0.5).max(self.slack));
        }
    }

    /// The limits of a neighbourhood's integer program ([`neighbourhood::support`]):
    /// half the time left, exact to half the admission resolution within the
    /// neighbourhood, stopped as soon as a solution is within the stage's tolerance of
    /// the LP phase's bound (HiGHS's objective target, the same test as [`Mip::close`])
    /// or after [`neighbourhood::SUPPORT_NODES`] nodes.
    fn configure_neighbourhood(&self, live: &mut Live) {
        self.configure(live);
        live.option_f64(
            "time_limit",
            ((self.budget - self.lp_s - self.t.elapsed().as_secs_f64()) * 0.5).max(0.05),
        );
        live.option_int("mip_max_nodes", neighbourhood::SUPPORT_NODES);
        if let Some(step) = self.step {
            live.option_f64("mip_abs_gap", step * 0.5);
            if self.bound.is_finite() {
                // HiGHS stops once an objective is below the target: `close` is `<=`.
                let target = self.bound + (step * 0.5).max(self.slack);
                live.option_f64("objective_target", target + 1e-7 * target.abs().max(1.0));
            }
        }
    }
}

/// The integer program's starting solution: the previous stage's (`warm`) when it
/// satisfies the master's rows now, or the LP's fixed neighbourhood's when that is better
/// (searched within `time_limit` seconds).
fn starting_point(
    m: &Master,
    warm: Option<&[f64]>,
    x_lp: &[f64],
    time_limit: f64,
) -> Option<Vec<f64>> {
    let mut start: Option<Vec<f64>> = warm.map(|w| {
        let mut v = w.to_vec();
        v.resize(m.lp.cols(), 0.0);
        v
    });
    start = start.filter(|v| m.lp.feasible(v, 1e-6));
    if !x_lp.is_empty() {
        if let Some(xh) = neighbourhood::fixed(m, x_lp, time_limit) {
            let better = start
                .as_ref()
                .is_none_or(|s| m.lp.objective(&xh) < m.lp.objective(s) - 1e-9);
            if better {
                start = Some(xh);
            }
        }
    }
    start
}

/// Price-and-branch can miss integer solutions the generated columns do not hold:
/// extends the used patterns with what is not admitted yet and solves again, from the
/// solution found (so it never gets worse), for at most [`ENRICH_ROUNDS`] rounds, until
/// the solution is close to the bound or the stage's time is up.
fn enrich(m: &mut Master, mip: &Mip, mut x: Vec<f64>, mut sol: Solution) -> (Vec<f64>, Solution) {
    for _ in 0..ENRICH_ROUNDS {
        let before = m.lp.objective(&x);
        if mip.close(before) || mip.t.elapsed().as_secs_f64() > mip.budget {
            break;
        }
        if m.enrich(&x, mip.obj) == 0 {
            break;
        }
        let mut again = Live::new(&m.lp, true);
        mip.configure(&mut again);
        let mut init = x.clone();
        init.resize(m.lp.cols(), 0.0);
        again.start(&init);
        let next = again.run(true);
        if !matches!(next.status, Status::Optimal | Status::Limit) {
            break;
        }
        let nx = m.lp.round_integers(&next.x);
        if !m.lp.feasible(&nx, 1e-5) || m.lp.objective(&nx) > before - 1e-9 {
            x = init;
            break;
        }
        x = nx;
        sol = next;
    }
    (x, sol)
}

/// Column generation: solves the LP, prices every incomplete group, adds improving
/// patterns, until none improves or the time is up. Returns a valid lower bound on the
/// LP over all patterns and the rounds run.
fn generate(
    m: &mut Master,
    obj: &Objective,
    complete: &[bool],
    start: Instant,
    budget: f64,
) -> (f64, usize, Vec<f64>) {
    let mut live = Live::new(&m.lp, false);
    let mut rounds = 0;
    loop {
        let sol = live.run(false);
        if sol.status != Status::Optimal {
            return (f64::NEG_INFINITY, rounds, Vec::new());
        }
        rounds += 1;
        let out_of_time = start.elapsed().as_secs_f64() > budget || rounds >= MAX_ROUNDS;
        let mut added = 0;
        let mut lasdon = 0.0;
        let mut exact = true;
        let open: Vec<usize> = (0..m.patterns.len())
            .filter(|g| !complete[*g] && !m.patterns[*g].is_empty())
            .collect();
        for g in open {
            let priced = price(m, g, &sol.duals, obj, out_of_time);
            let c0 = m.pattern_constant(g, &sol.duals);
            // rc(p) = -value(p) + c0; the best rc is at least -bound + c0.
            if !priced.bound.is_finite() {
                exact = false;
            } else {
                let size = m.p.groups[g].nodes.len() as f64;
                lasdon += size * (-priced.bound + c0).min(0.0);
            }
            if out_of_time {
                continue;
            }
            if let Some(pat) = priced.pattern.filter(|_| -priced.value + c0 < -RC_TOL) {
                if let Some(col) = m.add_pattern(g, pat, obj) {
                    live.add_col(
                        m.lp.cost[col],
                        m.lp.lo[col],
                        m.lp.hi[col],
                        &m.lp.entries[col],
                    );
                    added += 1;
                }
            }
        }
        if added == 0 || out_of_time {
            let bound = if exact {
                sol.objective + lasdon
            } else {
                f64::NEG_INFINITY
            };
            let mut x = sol.x;
            x.resize(m.lp.cols(), 0.0);
            return (bound, rounds, x);
        }
    }
}

/// The best pattern of group `g` under `duals`: exact dynamic programming for whole-GPU
/// items; else a greedy fill and, when that does not improve, a small MIP, with the
/// Lagrangian bound ([`pricing::lagrangian`]) keeping the bound valid and tight.
/// `bound_only`: no column wanted, only the bound.
pub(super) fn price(
    m: &Master,
    g: usize,
    duals: &[f64],
    obj: &Objective,
    bound_only: bool,
) -> pricing::Priced {
    let vals = m.values(g, duals, obj);
    let shape = m.group_shape(g).clone();
    let items = &m.items[g];
    let need = |i| m.need(i);
    if pricing::dp_exact(&shape, items, &need) {
        return pricing::dp(&shape, items, &vals, &need);
    }
    let (lagrangian, column) = pricing::lagrangian(&shape, items, &vals, &need);
    let c0 = m.pattern_constant(g, duals);
    if bound_only || -lagrangian + c0 >= -RC_TOL {
        // Nothing can improve (or only the bound is wanted).
        return pricing::Priced {
            pattern: None,
            value: 0.0,
            bound: lagrangian,
        };
    }
    // Candidates: the greedy fill and the Lagrangian packing; the better one if it
    // improves, else an exact small MIP.
    let greedy = pricing::greedy(&shape, items, &vals, &need);
    let from_bound = column.map(|p| {
        let v = vals.of(&p.items);
        (p, v)
    });
    let mut best: Option<(Pattern, f64)> = greedy.pattern.map(|p| (p, greedy.value));
    if let Some((p, v)) = from_bound {
        if best.as_ref().is_none_or(|b| v > b.1) {
            best = Some((p, v));
        }
    }
    if let Some((p, v)) = best.filter(|(_, v)| -v + c0 < -RC_TOL) {
        return pricing::Priced {
            pattern: Some(p),
            value: v,
            bound: lagrangian.max(v),
        };
    }
    let mut exact = pricing::mip(&shape, items, &vals, &need, 3.0);
    exact.bound = exact.bound.min(lagrangian).max(exact.value);
    exact
}

#[cfg(test)]
mod tests {
    use super::super::master::Objective;
    use super::super::testing::with_empty_start;
    use super::at_box_bound;

    const PART: &str = r#"
inference "part" team="t" priority="p" replicas=4 {
    fraction "30%"
    requests cpu=1 memory="1GiB"
}
"#;

    #[test]
    fn a_start_at_the_box_bound_ends_the_stage_and_nothing_else_does() {
        with_empty_start(PART, |m, x| {
            // Compaction of packed replicas with nothing to weigh: every cost is 0.
            m.lp.cost = m.costs(&Objective::Compact);
            let out = at_box_bound(m, Some(x)).expect("ends at its start");
            assert_eq!((out.objective, out.bound), (0.0, 0.0));
            // No start, or one that breaks the master's rows: the stage runs.
            assert!(at_box_bound(m, None).is_none());
            let broken: Vec<f64> = x.iter().map(|v| v + 1.0).collect();
            assert!(at_box_bound(m, Some(&broken)).is_none());
            // Admission rewards what is placed (negative costs): the empty start is no
            // optimum.
            let part = m.c.workloads.iter().position(|w| w.name == "part").unwrap();
            m.lp.cost = m.costs(&Objective::Admit {
                ws: vec![part],
                lower: Vec::new(),
                weight: 0.0,
                guarantee: 0.0,
            });
            assert!(at_box_bound(m, Some(x)).is_none());
        });
    }

    #[test]
    fn gangs_keep_their_integer_program() {
        // A gang: the integer program breaks ties between placements of equal cost.
        let gang = "training \"gang\" team=\"t\" priority=\"p\" replicas=1 {\n    gang gpus=2\n}\n";
        with_empty_start(&format!("{gang}{PART}"), |m, x| {
            m.lp.cost = m.costs(&Objective::Compact);
            assert!(at_box_bound(m, Some(x)).is_none());
        });
    }
}
