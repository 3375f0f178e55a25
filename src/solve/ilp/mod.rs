//! The ILP solver: aggregate ([`problem`]), formulate ([`formulation`]), solve in stages
//! with HiGHS, then turn counts into concrete nodes and GPUs ([`extract`]).
//!
//! Stages are lexicographic: one per priority level, highest first, each maximising the
//! GPU-equivalents admitted at that level (plus guaranteed team usage) and then locking
//! that amount for the next stages, so a higher class is never left out for a lower
//! one; a last stage minimises topology spread, MIG/shared GPU count and fragmentation.
//! Each stage starts from the previous stage's solution (always feasible there).

mod extract;
pub mod formulation;
mod keep;
pub mod problem;

use super::{Assignment, Options, SolveInfo};
use crate::model::Cluster;
use formulation::{Formulation, Objective};
use good_lp::{Expression, SolverModel};
use problem::Problem;
use std::time::Instant;

struct Stage {
    values: Vec<f64>,
    objective: f64,
    bound: f64,
    gap: f64,
    status: &'static str,
    variables: usize,
    constraints: usize,
    build_s: f64,
    solve_s: f64,
}

/// Solves the placement; `Err` when HiGHS fails (the caller falls back to greedy).
pub fn solve(c: &Cluster, opts: &Options) -> Result<(Assignment, SolveInfo), String> {
    let start = Instant::now();
    let p = Problem::build(c);
    let mut phases = vec![("aggregate".to_string(), start.elapsed().as_secs_f64())];
    let mut levels: Vec<i64> = c.workloads.iter().map(|w| priority_value(c, w)).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    let mut locks: Vec<Lock> = Vec::new();
    let mut warm: Option<Vec<f64>> = None;
    let mut last: Option<Stage> = None;
    let stages_total = levels.len() + 1;
    let mut solved_stages = 1;
    let mut worst = "optimal";
    let f = Formulation::new(c, &p);
    for (i, level) in levels.iter().enumerate() {
        let ws: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) == *level)
            .collect();
        // A level the current solution already admits in full is at its optimum: lock
        // it as admitted and skip its solve.
        if let Some(values) = &warm {
            if ws.iter().all(|w| fully_admitted(c, &f, *w, values)) {
                phases.push((format!("stage {} (priority {level}) skipped", i + 1), 0.0));
                locks.push(Lock::Admitted(ws));
                continue;
            }
        }
        let lower: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) < *level)
            .collect();
        let weight = lookahead_weight(c, &p, &f, &ws, &lower);
        let budget = remaining(opts, start) / (stages_total - i) as f64;
        let st = stage(
            c,
            &p,
            Objective::Admit(ws.clone(), lower, weight),
            &locks,
            warm.as_deref(),
            budget,
            opts.gap,
            None,
        )?;
        solved_stages += 1;
        phases.push((
            format!("stage {} (priority {level}) build", i + 1),
            st.build_s,
        ));
        phases.push((
            format!("stage {} (priority {level}) solve", i + 1),
            st.solve_s,
        ));
        if st.status != "optimal" {
            worst = "feasible";
        }
        let achieved: f64 = ws
            .iter()
            .map(|w| formulation::value(&f.usage(c, &p, *w, None), &st.values))
            .sum();
        locks.push(Lock::Usage(ws, achieved));
        warm = Some(st.values.clone());
        last = Some(st);
    }
    let budget = remaining(opts, start);
    let st = stage(
        c,
        &p,
        Objective::Compact,
        &locks,
        warm.as_deref(),
        budget,
        opts.gap,
        opts.previous.as_ref(),
    )?;
    phases.push(("compaction build".to_string(), st.build_s));
    phases.push(("compaction solve".to_string(), st.solve_s));
    if st.status != "optimal" {
        worst = "feasible";
    }
    let values = st.values.clone();
    let t = Instant::now();
    let assignment = extract::assignment(c, &p, &f, &values, opts.previous.as_ref());
    phases.push(("extract".to_string(), t.elapsed().as_secs_f64()));
    let (variables, constraints) = (st.variables, st.constraints);
    let info = SolveInfo {
        name: "ilp",
        status: worst.to_string(),
        objective: st.objective,
        bound: st.bound,
        gap: st.gap,
        seconds: start.elapsed().as_secs_f64(),
        stages: solved_stages,
        variables: variables.max(last.as_ref().map(|l| l.variables).unwrap_or(0)),
        constraints: constraints.max(last.as_ref().map(|l| l.constraints).unwrap_or(0)),
        phases,
    };
    Ok((assignment, info))
}

/// What an earlier stage fixed for the later ones.
enum Lock {
    /// These workloads keep at least this many GPU-equivalents.
    Usage(Vec<usize>, f64),
    /// These workloads keep every replica admitted.
    Admitted(Vec<usize>),
}

/// Whether every replica of workload `w` is admitted in `values`.
fn fully_admitted(c: &Cluster, f: &Formulation, w: usize, values: &[f64]) -> bool {
    match f.a.get(&w) {
        Some(a) => {
            values.get(a.1).copied().unwrap_or(0.0).round() >= c.workloads[w].replicas as f64
        }
        // Not in the model (nothing can hold it): admitting more is impossible.
        None => true,
    }
}

/// The smallest GPU-equivalent of one replica among these workloads (at most 1).
fn admit_step(c: &Cluster, p: &Problem, ws: &[usize]) -> f64 {
    let f = Formulation::new(c, p);
    ws.iter()
        .flat_map(|w| f.usage(c, p, *w, None))
        .map(|(coef, _)| coef)
        .filter(|x| *x > 0.0)
        .fold(1.0_f64, f64::min)
}

/// Weight of the lower levels in a level's objective: small enough that all of their
/// GPU-equivalents together are worth less than a quarter of the smallest step of this level (so
/// the level's own optimum is never traded), large enough to steer the solution.
fn lookahead_weight(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    ws: &[usize],
    lower: &[usize],
) -> f64 {
    if lower.is_empty() {
        return 0.0;
    }
    let step = ws
        .iter()
        .flat_map(|w| f.usage(c, p, *w, None))
        .map(|(coef, _)| coef)
        .filter(|x| *x > 0.0)
        .fold(1.0_f64, f64::min);
    let lower_total: f64 = lower
        .iter()
        .flat_map(|w| {
            let reps = c.workloads[*w].replicas as f64;
            f.usage(c, p, *w, None)
                .into_iter()
                .map(move |(coef, _)| coef * reps)
        })
        .sum();
    step / (4.0 * (1.0 + lower_total))
}

fn priority_value(c: &Cluster, w: &crate::model::Workload) -> i64 {
    c.priority(&w.priority).map(|p| p.value).unwrap_or(i64::MIN)
}

fn remaining(opts: &Options, start: Instant) -> f64 {
    (opts.time_limit - start.elapsed().as_secs_f64()).max(0.05)
}

#[allow(clippy::too_many_arguments)] // one call per stage kind; a struct would only rename them
fn stage(
    c: &Cluster,
    p: &Problem,
    objective: Objective,
    locks: &[Lock],
    warm: Option<&[f64]>,
    time_limit: f64,
    gap: f64,
    previous: Option<&crate::solve::previous::Previous>,
) -> Result<Stage, String> {
    let t = Instant::now();
    let mut f = Formulation::new(c, p);
    let columns = f.columns();
    // Stage-only columns (keep variables) come after the shared ones: the warm start
    // leaves them at 0, which is always feasible.
    let keep = match (&objective, previous) {
        (Objective::Compact, Some(pv)) => Some(keep::terms(c, p, &mut f, pv)),
        _ => None,
    };
    let all_columns = f.columns();
    let (obj, maximise) = match &objective {
        Objective::Admit(ws, lower, weight) => {
            let mut e = formulation::expr(ws.iter().flat_map(|w| f.usage(c, p, *w, None)));
            if *weight > 0.0 {
                e += formulation::expr(
                    lower
                        .iter()
                        .flat_map(|w| f.usage(c, p, *w, None))
                        .map(|(coef, col)| (coef * weight, col)),
                );
            }
            // Guaranteed usage breaks ties: worth less, in total, than a quarter of this
            // level's smallest replica (it counts every level's usage, so a larger weight
            // would trade this level's replicas for lower levels' guarantees).
            let step = admit_step(c, p, ws);
            let guarantees: f64 = c.teams.values().map(|t| t.guarantee as f64).sum();
            for u in f.u.values() {
                e += step / (4.0 * (1.0 + guarantees)) * u.0;
            }
            (e, true)
        }
        Objective::Compact => {
            let mut e = compaction(c, p, &f);
            if let Some(k) = keep {
                e -= k;
            }
            (e, false)
        }
    };
    let mut lock_rows = Vec::new();
    for lock in locks {
        match lock {
            Lock::Usage(ws, achieved) => {
                let e = formulation::expr(ws.iter().flat_map(|w| f.usage(c, p, *w, None)));
                lock_rows.push(e.geq(achieved - 1e-6 * (1.0 + achieved.abs())));
            }
            Lock::Admitted(ws) => {
                for w in ws {
                    if let Some(a) = f.a.get(w) {
                        lock_rows.push(Expression::from(a.0).geq(c.workloads[*w].replicas as f64));
                    }
                }
            }
        }
    }
    let Formulation {
        vars, constraints, ..
    } = f;
    let ncons = constraints.len() + lock_rows.len();
    let mut prob = if maximise {
        vars.maximise(obj)
    } else {
        vars.minimise(obj)
    }
    .using(good_lp::highs);
    for ct in constraints.into_iter().chain(lock_rows) {
        prob.add_constraint(ct);
    }
    let mut model = prob.try_into_inner().map_err(|e| e.to_string())?;
    // `GPUPLAN_HIGHS_LOG` shows HiGHS's own log on stderr (for tuning benchmarks).
    let log = std::env::var_os("GPUPLAN_HIGHS_LOG").is_some();
    model.set_option("output_flag", log);
    model.set_option("log_to_console", log);
    model.set_option("time_limit", time_limit.max(0.05));
    model.set_option("mip_rel_gap", gap.max(0.0));
    if let Objective::Admit(ws, ..) = &objective {
        // Admission is exact to half the smallest replica step, whatever the relative
        // gap: a higher-priority replica is never left out within "the gap".
        let step = admit_step(c, p, ws);
        model.set_option("mip_rel_gap", 0.0);
        model.set_option("mip_abs_gap", step * 0.5);
    }
    model.set_option("threads", 1);
    // `GPUPLAN_HIGHS_OPTIONS="name=value,..."`: extra HiGHS options, for tuning runs.
    if let Ok(extra) = std::env::var("GPUPLAN_HIGHS_OPTIONS") {
        for kv in extra.split(',').filter(|x| !x.trim().is_empty()) {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            if let Ok(i) = v.parse::<i32>() {
                model.set_option(k, i);
            } else if let Ok(f) = v.parse::<f64>() {
                model.set_option(k, f);
            } else if let Ok(b) = v.parse::<bool>() {
                model.set_option(k, b);
            } else {
                model.set_option(k, v);
            }
        }
    }
    let init: Vec<f64> = match warm {
        Some(w) if w.len() == columns => {
            let mut v = w.to_vec();
            v.resize(all_columns, 0.0);
            v
        }
        _ => Vec::new(),
    };
    if !init.is_empty() {
        model.set_solution(Some(&init), None, None, None);
    }
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let solved = model
        .try_solve()
        .map_err(|e| format!("HiGHS failed: {e:?}"))?;
    use highs::HighsModelStatus as S;
    let status = match solved.status() {
        S::Optimal => "optimal",
        S::ReachedTimeLimit
        | S::ReachedSolutionLimit
        | S::ReachedIterationLimit
        | S::ReachedInterrupt
        | S::ReachedMemoryLimit => "feasible",
        other => return Err(format!("HiGHS ended with status {other:?}")),
    };
    if solved.primal_solution_status() != highs::HighsSolutionStatus::Feasible {
        return Err("HiGHS found no feasible solution within the time limit".into());
    }
    let values: Vec<f64> = solved
        .get_solution()
        .columns()
        .iter()
        .map(|v| v.round())
        .collect();
    let objective = solved.objective_value();
    let bound = solved
        .double_info_value(c"mip_dual_bound")
        .unwrap_or(objective);
    let gap = if status == "optimal" {
        solved
            .mip_gap()
            .clamp(0.0, 1.0)
            .min(if objective == bound { 0.0 } else { 1.0 })
    } else {
        solved.mip_gap()
    };
    let gap = if gap.is_finite() { gap.max(0.0) } else { 0.0 };
    Ok(Stage {
        values,
        objective,
        bound,
        gap,
        status,
        variables: all_columns,
        constraints: ncons,
        build_s,
        solve_s: t.elapsed().as_secs_f64(),
    })
}

/// Cost of reconfiguring one GPU whose current MIG layout is known, in GPUs.
///
/// Decision: a kept GPU costs nothing (it is no change; its instances serve replicas of
/// the same profile), a new layout costs 1 per GPU as before, and a configured GPU that
/// gets another layout (or leaves MIG) costs 0.45 more. So the packer fills free GPUs
/// before it touches configured ones, and among configured GPUs changes the fewest; 0.45
/// is below the 0.5 price ceiling and far above the 0.01 node-mode term, so keeping never
/// buys a worse topology and a configured node stays MIG unless admission needs it.
pub const RECONFIGURE: f64 = 0.45;

/// The last stage's cost: spread gangs, MIG/shared GPUs, and non-whole-GPU nodes (late
/// groups cost slightly more, so that free capacity stays together in whole nodes).
///
/// Decision: no per-share term on group order. It made HiGHS's root loop crawl (tiny,
/// all-distinct costs; 68 s of 83 s at 100k GPUs) for a headroom gain measured at under
/// 1% on the generated superpods.
fn compaction(c: &Cluster, p: &Problem, f: &Formulation) -> Expression {
    let mut e = Expression::from(0.0);
    for ((si, mi, _), y) in f.y_dom.iter() {
        e += p.shapes[*si].modes[*mi].penalty * y.0;
    }
    for ((si, mi, _), y) in f.y_local.iter() {
        e += p.shapes[*si].modes[*mi].penalty * y.0;
    }
    for z in f.z.values() {
        e += 1.0 * z.0;
    }
    // Keeping a configured GPU is free; every configured GPU not kept is reconfigured
    // and costs RECONFIGURE (the constant part, all configured GPUs, is left out).
    for k in f.k.values() {
        e -= RECONFIGURE * k.0;
    }
    for t in f.t.values() {
        e += 1.0 * t.0;
    }
    // Right-sizing by price: when prices are given, every GPU used costs its model's
    // price relative to the dearest model (at most 0.5 per GPU: below a gang's spread
    // penalty, so cost never buys a worse topology; the cheapest acceptable model wins
    // among placements that are otherwise equal).
    let max_price = c
        .models
        .values()
        .filter_map(|m| m.price_per_hour)
        .fold(0.0_f64, f64::max);
    if max_price > 0.0 {
        let rel = |model: &str| {
            0.5 * c
                .models
                .get(model)
                .and_then(|m| m.price_per_hour)
                .unwrap_or(0.0)
                / max_price
        };
        for ((si, _, gi), y) in f.y_local.iter() {
            e += rel(&p.groups[*gi].model) * p.shapes[*si].gpus as f64 * y.0;
        }
        for ((si, _, gi), x) in f.x.iter() {
            e += rel(&p.groups[*gi].model) * p.shapes[*si].per_node as f64 * x.0;
        }
        for ((model, _), z) in f.z.iter() {
            e += rel(model) * z.0;
        }
        for ((_, model), t) in f.t.iter() {
            e += rel(model) * t.0;
        }
    }
    let groups = p.groups.len().max(1) as f64;
    for ((gi, mode), n) in &f.n {
        if *mode != crate::placement::PoolMode::WholeGpu {
            e += (0.01 + 0.001 * p.groups[*gi].ord as f64 / groups) * n.0;
        }
    }

    e
}
