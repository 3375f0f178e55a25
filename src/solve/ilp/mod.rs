//! The ILP solver: identical nodes form groups ([`problem`]); a master problem over node
//! patterns ([`master`], [`pattern`]) is solved stage by stage, each stage's LP by column
//! generation ([`pricing`]) and then as an integer program over the generated columns;
//! the integer solution is already a placement, which [`extract`] writes out.
//!
//! Stages are lexicographic: one per priority level, highest first, each maximising the
//! GPU-equivalents admitted at that level (plus a small weight on lower levels and on
//! guaranteed team usage) and then locking what it admitted for the next stages, so a
//! higher class is never left out for a lower one; a last stage minimises topology
//! spread, MIG/shared GPU count and price, and rewards what a previous placement kept.
//!
//! Bounds: each stage's LP over *all* patterns bounds every placement (pricing is exact,
//! or bounded by its own dual bound, so the LP value plus the best reduced costs is a
//! valid bound even when generation stops early). Small groups have every pattern
//! enumerated up front, so their integer program is exact.

mod extract;
mod keep;
pub(crate) mod lp;
pub(crate) mod master;
pub(crate) mod pattern;
pub(crate) mod pricing;
pub mod problem;
mod relax;
mod seed;

use super::{Assignment, LevelBound, Options, SolveInfo, SolveStatus};
use crate::model::Cluster;
use lp::{Live, Status};
use master::{Master, Objective};
use pattern::Pattern;
use problem::Problem;
use std::time::Instant;

/// Patterns enumerated up front per group (more: column generation only).
const ENUMERATE_PER_GROUP: usize = 2_000;
/// Patterns enumerated up front in all.
const ENUMERATE_TOTAL: usize = 5_000;
/// Column-generation rounds per stage.
const MAX_ROUNDS: usize = 400;
/// Rounds of column enrichment after a stage's integer program.
const ENRICH_ROUNDS: usize = 3;
/// A column improves when its reduced cost is below this.
const RC_TOL: f64 = 1e-7;

/// What one stage gives.
struct StageOut {
    x: Vec<f64>,
    /// Seconds of the per-GPU relaxation's bound (0 when no group needs it).
    relax_s: f64,
    /// Objective of `x` (minimisation form).
    objective: f64,
    /// A valid lower bound on the stage's optimum over all patterns.
    bound: f64,
    status: Status,
    rounds: usize,
    lp_s: f64,
    mip_s: f64,
}

/// Solves the placement; `Err` when HiGHS fails (the caller falls back to greedy).
pub fn solve(c: &Cluster, opts: &Options) -> Result<(Assignment, SolveInfo), String> {
    let start = Instant::now();
    let no_layouts = std::collections::BTreeMap::new();
    let previous_layouts = opts
        .previous
        .as_ref()
        .map_or(&no_layouts, |pv| &pv.mig_layouts);
    let p = Problem::build(c, previous_layouts);
    let mut phases = vec![("aggregate".to_string(), start.elapsed().as_secs_f64())];
    let t = Instant::now();
    let mut m = Master::new(c, &p);
    m.lp.highs = opts.highs.clone();
    let seed_obj = Objective::Compact;
    let mut complete = vec![false; p.groups.len()];
    let mut budget = ENUMERATE_TOTAL;
    for (g, done) in complete.iter_mut().enumerate() {
        if m.items[g].is_empty() && m.conv_row(g).is_none() {
            continue;
        }
        let cap = if opts.enumerate {
            ENUMERATE_PER_GROUP.min(budget)
        } else {
            0
        };
        *done = m.seed_patterns(g, &seed_obj, cap);
        budget = budget.saturating_sub(m.patterns[g].len());
    }
    let seeded = seed::packed(&mut m);
    let mut pool = relax::Pool::default();
    if let Some(pv) = &opts.previous {
        keep::add(&mut m, pv);
    }
    phases.push(("master".to_string(), t.elapsed().as_secs_f64()));

    let mut levels: Vec<i64> = c.workloads.iter().map(|w| priority_value(c, w)).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    let stages_total = levels.len() + 1;
    let mut x: Option<Vec<f64>> = seeded;
    let mut level_bounds: Vec<LevelBound> = Vec::new();
    let mut solved_stages = 0;
    let mut worst = SolveStatus::Optimal;
    for (i, level) in levels.iter().enumerate() {
        let ws: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) == *level)
            .collect();
        let demand: f64 = ws.iter().map(|w| demand_of(&m, *w)).sum();
        // A level the current solution admits in full is at its optimum.
        if let Some(v) = &x {
            if ws.iter().all(|w| fully_admitted(&m, *w, v)) {
                phases.push((format!("stage {} (priority {level}) skipped", i + 1), 0.0));
                lock_admitted(&mut m, &ws);
                level_bounds.push(LevelBound {
                    priority: *level,
                    bound: demand,
                });
                continue;
            }
        }
        let lower: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) < *level)
            .collect();
        let obj = admit_objective(&m, &ws, lower);
        let budget = remaining(opts, start) / (stages_total - i) as f64;
        let st = stage(
            &mut m,
            &obj,
            x.as_deref(),
            budget,
            opts.gap,
            &complete,
            &mut pool,
        )?;
        solved_stages += 1;
        phases.push((
            format!("stage {} (priority {level}) relaxation bound", i + 1),
            st.relax_s,
        ));
        phases.push((
            format!(
                "stage {} (priority {level}) lp, {} rounds",
                i + 1,
                st.rounds
            ),
            st.lp_s - st.relax_s,
        ));
        phases.push((format!("stage {} (priority {level}) mip", i + 1), st.mip_s));
        let achieved = usage_value(&m, &ws, &st.x);
        // The stage maximised admission plus small non-negative terms: minus its bound
        // bounds admission. No level admits more than it asks for.
        let bound = (-st.bound).min(demand).max(achieved);
        if st.status != Status::Optimal || bound > achieved + step_of(&m, &ws) * 0.5 {
            worst = SolveStatus::Feasible;
        }
        level_bounds.push(LevelBound {
            priority: *level,
            bound,
        });
        lock_usage(&mut m, &ws, achieved);
        x = Some(st.x);
    }
    let budget = remaining(opts, start);
    let obj = Objective::Compact;
    // Decision: without a previous placement the compaction stage keeps the admitted
    // replicas of every class as the admission stages left them (it moves work, it does
    // not trade one class's replica for another's of the same level): a smaller program,
    // and its bound is stated for that admission. With a previous placement it may trade
    // within a level, so that the replicas a class loses are those whose nodes new work
    // needs (fewer moves). CPU-only classes (no level admits them) stay free.
    if let Some(v) = x.as_ref().filter(|_| opts.previous.is_none()) {
        for (&w, &a) in &m.a {
            let cpu_only = m.p.packed.contains_key(&w) && c.workloads[w].packed_gpu_milli() == 0;
            if !cpu_only {
                let k = v.get(a).copied().unwrap_or(0.0).round();
                m.lp.lo[a] = k;
                m.lp.hi[a] = k;
            }
        }
    }
    let st = stage(
        &mut m,
        &obj,
        x.as_deref(),
        budget,
        opts.gap,
        &complete,
        &mut pool,
    )?;
    solved_stages += 1;
    phases.push((format!("compaction lp, {} rounds", st.rounds), st.lp_s));
    phases.push(("compaction mip".to_string(), st.mip_s));
    let gap = relative_gap(st.objective, st.bound);
    if st.status != Status::Optimal && gap > opts.gap {
        worst = SolveStatus::Feasible;
    }
    let t = Instant::now();
    let assignment = extract::assignment(&m, &st.x, opts.previous.as_ref());
    phases.push(("extract".to_string(), t.elapsed().as_secs_f64()));
    let info = SolveInfo {
        name: "ilp",
        status: worst,
        objective: st.objective,
        bound: st.bound,
        gap,
        seconds: start.elapsed().as_secs_f64(),
        stages: solved_stages,
        variables: m.lp.cols(),
        constraints: m.lp.rows(),
        phases,
        levels: level_bounds,
        note: None,
        requested_gap: opts.gap,
    };
    Ok((assignment, info))
}

fn relative_gap(objective: f64, bound: f64) -> f64 {
    if !bound.is_finite() {
        return 1.0;
    }
    let diff = (objective - bound).max(0.0);
    if diff <= 1e-9 {
        0.0
    } else {
        (diff / objective.abs().max(bound.abs()).max(1e-9)).min(1.0)
    }
}

fn admit_objective(m: &Master, ws: &[usize], lower: Vec<usize>) -> Objective {
    let c = m.c;
    let step = step_of(m, ws);
    let lower_total: f64 = lower.iter().map(|w| demand_of(m, *w)).sum();
    let weight = if lower.is_empty() {
        0.0
    } else {
        step / (4.0 * (1.0 + lower_total))
    };
    // Guaranteed usage breaks ties: worth less, in total, than a quarter of this level's
    // admission resolution (it counts every level's usage, so a larger weight would trade
    // this level's replicas for lower levels' guarantees).
    let guarantees: f64 = c.teams.values().map(|t| t.guarantee as f64).sum();
    Objective::Admit {
        ws: ws.to_vec(),
        lower,
        weight,
        guarantee: step / (4.0 * (1.0 + guarantees)),
    }
}

/// The resolution of this level's admission: every admitted total is a multiple of it.
///
/// Decision (found by the random sweep: 3 x 0.3 GPUs admitted where one 1-GPU gang fits):
/// the smallest replica is not enough, since totals of unlike replicas (0.3 and 1.0) can
/// differ by less than either (0.1). The resolution is the greatest common divisor of the
/// per-replica GPU-equivalents, as fractions with denominators up to 1000 (MIG sevenths
/// and eighths, percentages, memory fractions); a coefficient with no such fraction
/// gives a resolution of 1e-6, i.e. an exact stage.
fn step_of(m: &Master, ws: &[usize]) -> f64 {
    let coefs: Vec<f64> = ws
        .iter()
        .flat_map(|w| m.usage(*w, None))
        .map(|(coef, _)| coef)
        .filter(|x| *x > 0.0)
        .collect();
    resolution(&coefs)
}

/// The greatest common divisor of `coefs` (and 1), see [`step_of`].
fn resolution(coefs: &[f64]) -> f64 {
    const FINEST: f64 = 1e-6;
    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    // A running fraction num/den, starting at 1.
    let (mut num, mut den): (u128, u128) = (1, 1);
    for &c in coefs {
        let Some((n, d)) = (1..=1000u128).find_map(|d| {
            let n = c * d as f64;
            let r = n.round();
            ((n - r).abs() <= 1e-9 * d as f64 && r >= 1.0).then_some((r as u128, d))
        }) else {
            return FINEST;
        };
        // gcd(num/den, n/d) = gcd(num*d, n*den) / (den*d)
        let l = den * d;
        let g = gcd(num * d, n * den);
        let k = gcd(g, l);
        num = g / k;
        den = l / k;
        if den > 1_000_000 {
            return FINEST;
        }
    }
    (num as f64 / den as f64).max(FINEST)
}

/// GPU-equivalents a workload asks for (its largest per-replica usage times replicas).
fn demand_of(m: &Master, w: usize) -> f64 {
    let per = m
        .usage(w, None)
        .iter()
        .map(|(coef, _)| *coef)
        .fold(0.0_f64, f64::max);
    per * m.c.workloads[w].replicas as f64
}

fn usage_value(m: &Master, ws: &[usize], x: &[f64]) -> f64 {
    ws.iter()
        .flat_map(|w| m.usage(*w, None))
        .map(|(coef, col)| coef * x.get(col).copied().unwrap_or(0.0))
        .sum()
}

fn fully_admitted(m: &Master, w: usize, x: &[f64]) -> bool {
    match m.a.get(&w) {
        Some(a) => x.get(*a).copied().unwrap_or(0.0).round() >= m.c.workloads[w].replicas as f64,
        // Not in the model (nothing can hold it): admitting more is impossible.
        None => true,
    }
}

fn lock_usage(m: &mut Master, ws: &[usize], achieved: f64) {
    let terms: Vec<(f64, usize)> = ws.iter().flat_map(|w| m.usage(*w, None)).collect();
    if terms.is_empty() {
        return;
    }
    let row =
        m.lp.row(achieved - 1e-6 * (1.0 + achieved.abs()), f64::INFINITY);
    for (coef, col) in terms {
        m.lp.set(row, col, coef);
    }
}

fn lock_admitted(m: &mut Master, ws: &[usize]) {
    for w in ws {
        if let Some(&a) = m.a.get(w) {
            m.lp.lo[a] = m.c.workloads[*w].replicas as f64;
        }
    }
}

fn priority_value(c: &Cluster, w: &crate::model::Workload) -> i64 {
    c.priority(&w.priority).map(|p| p.value).unwrap_or(i64::MIN)
}

fn remaining(opts: &Options, start: Instant) -> f64 {
    (opts.time_limit - start.elapsed().as_secs_f64()).max(0.05)
}

/// One stage: column generation on the LP relaxation, then the integer program over
/// the generated columns.
fn stage(
    m: &mut Master,
    obj: &Objective,
    warm: Option<&[f64]>,
    budget: f64,
    gap: f64,
    complete: &[bool],
    pool: &mut relax::Pool,
) -> Result<StageOut, String> {
    let t = Instant::now();
    m.lp.cost = m.costs(obj);
    // With every pattern present there is nothing to generate: the integer program's own
    // bound is the bound.
    let all_complete = (0..m.patterns.len()).all(|g| complete[g] || m.patterns[g].is_empty());
    // Groups with fractional classes: the per-GPU relaxation's bound, often far tighter
    // than what node-pattern pricing can prove in time. First, so that node pricing
    // cannot starve it.
    let deadline = t + std::time::Duration::from_secs_f64(budget * 0.2);
    let relaxed = relax::bound(m, obj, pool, deadline);
    let relax_s = t.elapsed().as_secs_f64();
    let (mut bound, rounds, x_lp) = if all_complete {
        (f64::NEG_INFINITY, 0, Vec::new())
    } else {
        generate(m, obj, complete, Instant::now(), budget * 0.4)
    };
    bound = bound.max(relaxed);
    let lp_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let step = match obj {
        Objective::Admit { ws, .. } => Some(step_of(m, ws)),
        Objective::Compact => None,
    };
    let close = move |objective: f64| {
        bound.is_finite()
            && match step {
                Some(step) => objective <= bound + step * 0.5,
                None => relative_gap(objective, bound) <= gap.max(0.0),
            }
    };
    // First the integer program around the LP optimum: integer columns the LP holds at
    // an integer value stay there. Often as good as the bound allows, and then done.
    let mut start: Option<Vec<f64>> = warm.map(|w| {
        let mut v = w.to_vec();
        v.resize(m.lp.cols(), 0.0);
        v
    });
    start = start.filter(|v| m.lp.feasible(v, 1e-6));
    if !x_lp.is_empty() {
        if let Some(xh) = fixed_neighbourhood(m, &x_lp, (budget - lp_s) * 0.5) {
            let better = start
                .as_ref()
                .is_none_or(|s| m.lp.objective(&xh) < m.lp.objective(s) - 1e-9);
            if better {
                start = Some(xh);
            }
        }
    }
    let mut live = Live::new(&m.lp, true);
    live.option_f64(
        "time_limit",
        (budget - lp_s - t.elapsed().as_secs_f64()).max(0.05),
    );
    live.option_f64("mip_rel_gap", gap.max(0.0));
    if let Objective::Admit { ws, .. } = obj {
        // Admission is exact to half its resolution (see `step_of`), whatever the relative
        // gap: a higher-priority replica is never left out within "the gap".
        live.option_f64("mip_rel_gap", 0.0);
        live.option_f64("mip_abs_gap", step_of(m, ws) * 0.5);
    }
    if let Some(sx) = &start {
        if close(m.lp.objective(sx)) {
            let objective = m.lp.objective(sx);
            return Ok(StageOut {
                relax_s,
                x: sx.clone(),
                objective,
                bound: bound.min(objective),
                status: Status::Optimal,
                rounds,
                lp_s,
                mip_s: t.elapsed().as_secs_f64(),
            });
        }
        live.start(sx);
    }
    let mut sol = live.run(true);
    if !matches!(sol.status, Status::Optimal | Status::Limit) {
        return Err(format!(
            "HiGHS ended the stage with status {:?}",
            sol.status
        ));
    }
    let mut x = round_integers(&m.lp, &sol.x);
    if !m.lp.feasible(&x, 1e-5) {
        return Err("the rounded integer solution violates the master".into());
    }
    // Price-and-branch can miss integer solutions the generated columns do not hold:
    // extend the used patterns with what is not admitted yet and solve again, from
    // the solution found (so it never gets worse).
    for _ in 0..ENRICH_ROUNDS {
        let before = m.lp.objective(&x);
        if close(before) || t.elapsed().as_secs_f64() > budget {
            break;
        }
        if m.enrich(&x, obj) == 0 {
            break;
        }
        let mut again = Live::new(&m.lp, true);
        again.option_f64(
            "time_limit",
            (budget - lp_s - t.elapsed().as_secs_f64()).max(0.05),
        );
        again.option_f64("mip_rel_gap", gap.max(0.0));
        if let Objective::Admit { ws, .. } = obj {
            again.option_f64("mip_rel_gap", 0.0);
            again.option_f64("mip_abs_gap", step_of(m, ws) * 0.5);
        }
        let mut init = x.clone();
        init.resize(m.lp.cols(), 0.0);
        again.start(&init);
        let next = again.run(true);
        if !matches!(next.status, Status::Optimal | Status::Limit) {
            break;
        }
        let nx = round_integers(&m.lp, &next.x);
        if !m.lp.feasible(&nx, 1e-5) || m.lp.objective(&nx) > before - 1e-9 {
            x = init;
            break;
        }
        x = nx;
        sol = next;
    }
    if x.len() < m.lp.cols() {
        x.resize(m.lp.cols(), 0.0);
    }
    let objective = m.lp.objective(&x);
    // The MIP's own bound holds for all placements only when every group's patterns are
    // all present.
    let all = (0..m.patterns.len()).all(|g| complete[g] || m.patterns[g].is_empty());
    let bound = if all && sol.bound.is_finite() {
        bound.max(sol.bound)
    } else {
        bound
    }
    .min(objective);
    Ok(StageOut {
        relax_s,
        x,
        objective,
        bound,
        status: sol.status,
        rounds,
        lp_s,
        mip_s: t.elapsed().as_secs_f64(),
    })
}

/// The integer program with every pattern column that is integral in the LP solution
/// `x_lp` fixed there (the other columns free): a small problem whose solutions are
/// solutions of the master.
fn fixed_neighbourhood(m: &Master, x_lp: &[f64], time_limit: f64) -> Option<Vec<f64>> {
    let mut lp = m.lp.clone();
    let mut free = 0;
    for j in m
        .patterns
        .iter()
        .flatten()
        .filter(|pc| !pc.pattern.items.is_empty())
        .map(|pc| pc.col)
    {
        let v = x_lp[j];
        if (v - v.round()).abs() < 1e-6 {
            lp.lo[j] = v.round();
            lp.hi[j] = v.round();
        } else {
            free += 1;
        }
    }
    if free == 0 {
        return None; // nothing to search: the full program is as small
    }
    let mut live = Live::new(&lp, true);
    live.option_f64("time_limit", time_limit.max(0.05));
    live.option_f64("mip_rel_gap", 1e-6);
    let sol = live.run(true);
    if !matches!(sol.status, Status::Optimal | Status::Limit) {
        return None;
    }
    let x = round_integers(&m.lp, &sol.x);
    m.lp.feasible(&x, 1e-5).then_some(x)
}

/// Integer columns rounded (HiGHS returns them within its tolerance), the others as
/// they are.
fn round_integers(lp: &lp::Lp, x: &[f64]) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(j, v)| {
            if lp.integer.get(j).copied().unwrap_or(false) {
                v.round()
            } else {
                *v
            }
        })
        .collect()
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
fn price(
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
    use super::resolution;

    #[test]
    fn resolution_is_the_gcd_of_unlike_replicas() {
        assert!((resolution(&[0.3, 1.0]) - 0.1).abs() < 1e-12);
        assert!((resolution(&[2.0 / 7.0, 0.3]) - 1.0 / 70.0).abs() < 1e-12);
        assert!((resolution(&[1.0, 2.0]) - 1.0).abs() < 1e-12);
        assert!((resolution(&[]) - 1.0).abs() < 1e-12);
        assert!((resolution(&[0.25, 0.5]) - 0.25).abs() < 1e-12);
        assert!((resolution(&[std::f64::consts::PI / 10.0]) - 1e-6).abs() < 1e-12);
    }
}
