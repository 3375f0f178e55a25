//! The ILP solver: identical nodes form groups (`problem`); a master problem over node
//! patterns (`master`, `pattern`) is solved stage by stage (`stage`), each stage's
//! LP by column generation (`pricing`) and then as an integer program over the
//! generated columns; the integer solution is already a placement, which `extract`
//! writes out.
//!
//! Stages are lexicographic: one per priority level, highest first, each maximising the
//! GPU-equivalents admitted at that level (plus a small weight on lower levels and on
//! guaranteed team usage) and then locking what it admitted for the next stages, so a
//! higher class is never left out for a lower one; a last stage minimises topology
//! spread, MIG/shared GPU count and price, and rewards what a previous placement kept.
//!
//! While the last admission stage solves from a start, the compaction that would follow
//! it were it to return that start is solved on a second core (`ahead`), and used only
//! when the compaction's inputs turn out to be exactly those.
//!
//! Bounds: each stage's LP over *all* patterns bounds every placement (pricing is exact,
//! or bounded by its own dual bound, so the LP value plus the best reduced costs is a
//! valid bound even when generation stops early). Small groups have every pattern
//! enumerated up front, so their integer program is exact.

mod ahead;
mod dive;
mod extract;
mod improve;
mod keep;
mod lp;
mod master;
mod neighbourhood;
mod pattern;
mod pricing;
mod prior;
mod problem;
mod relax;
mod seed;
mod small;
mod stage;
#[cfg(test)]
mod testing;

use super::{Assignment, LevelBound, Options, SolveInfo, SolveStatus};
use crate::model::Cluster;
use lp::Status;
use master::{Master, Objective};
use problem::Problem;
use stage::StageOut;
use std::time::Instant;

/// Patterns enumerated up front per group (more: column generation only).
const ENUMERATE_PER_GROUP: usize = 2_000;
/// Patterns enumerated up front in all.
const ENUMERATE_TOTAL: usize = 5_000;

/// Solves the placement; `Err` when HiGHS fails (the caller falls back to greedy).
pub(crate) fn solve(c: &Cluster, opts: &Options) -> Result<(Assignment, SolveInfo), String> {
    solve_with(c, opts, ahead::worthwhile())
}

/// [`solve`], with the compaction solved ahead beside the last admission stage when
/// `go_ahead` (see [`ahead`]).
fn solve_with(
    c: &Cluster,
    opts: &Options,
    go_ahead: bool,
) -> Result<(Assignment, SolveInfo), String> {
    let start = Instant::now();
    let no_layouts = std::collections::BTreeMap::new();
    let previous_layouts = opts
        .previous
        .as_ref()
        .map_or(&no_layouts, |pv| &pv.mig_layouts);
    let p = Problem::build(c, previous_layouts);
    let mut phases = vec![("aggregate".to_string(), start.elapsed().as_secs_f64())];
    let (m, complete, seeded, built) = build_master(c, &p, opts, start);
    phases.extend(built);
    let mut run = Run {
        m,
        opts,
        start,
        complete,
        pool: relax::Pool::default(),
        x: seeded,
        phases,
        levels: Vec::new(),
        stages: 0,
        status: SolveStatus::Optimal,
        go_ahead,
        ahead: None,
    };
    let levels = priority_levels(c);
    let stages_total = levels.len() + 1;
    for (i, level) in levels.iter().enumerate() {
        run.admit_level(i, *level, stages_total)?;
    }
    run.compact()
}

/// The master with its initial columns: the first patterns of every group (all of them
/// for small groups, within [`ENUMERATE_PER_GROUP`] and [`ENUMERATE_TOTAL`]), the packed
/// seed's patterns and the previous placement's keep variables. Also returns, per group,
/// whether every pattern is a column, and the seed's solution.
fn build_master<'a>(
    c: &'a Cluster,
    p: &'a Problem,
    opts: &Options,
    start: Instant,
) -> (Master<'a>, Vec<bool>, Option<Vec<f64>>, Phases) {
    let t = Instant::now();
    let mut m = Master::new(c, p);
    m.lp.highs = opts.highs.clone();
    let seed_obj = Objective::Compact;
    let mut complete = vec![false; p.groups.len()];
    let mut budget = ENUMERATE_TOTAL;
    for (g, done) in complete.iter_mut().enumerate() {
        if m.items[g].is_empty() && m.conv_row(g).is_none() {
            continue;
        }
        // Enumeration stops at a quarter of the time limit (the groups left are priced
        // by column generation instead): found by the bounded-work test (issue 28) once
        // `import openb` lists planned (issue 31), 1.5 s of enumeration under
        // `--time-limit 0.5` on a 720-node list of mixed GPU counts.
        let late = start.elapsed().as_secs_f64() > opts.time_limit.max(0.0) / 4.0;
        let cap = if opts.enumerate && !late {
            ENUMERATE_PER_GROUP.min(budget)
        } else {
            0
        };
        *done = m.seed_patterns(g, &seed_obj, cap);
        budget = budget.saturating_sub(m.patterns[g].len());
    }
    let mut phases = vec![("master".to_string(), t.elapsed().as_secs_f64())];
    // The packed seed may take at most half the time limit: the solve needs the rest.
    let t = Instant::now();
    let deadline = start + std::time::Duration::from_secs_f64(opts.time_limit.max(0.0) / 2.0);
    // Where the dive applies, its placement (read off the relaxation) is the start.
    let mut seeded = if dive::applies(&m) {
        None
    } else {
        seed::packed(&mut m, deadline)
    };
    if let Some(x) = &seeded {
        let all: Vec<usize> = (0..c.workloads.len()).collect();
        phases.push((
            format!("packed seed, {:.2} admitted", usage_value(&m, &all, x)),
            t.elapsed().as_secs_f64(),
        ));
    }
    if let Some(pv) = &opts.previous {
        keep::add(&mut m, pv);
        let t = Instant::now();
        if let Some(x) = prior::start(&mut m, pv) {
            phases.push((
                "previous placement as start".to_string(),
                t.elapsed().as_secs_f64(),
            ));
            seeded = Some(match seeded {
                Some(s) if admits_more(&m, &s, &x) => s,
                _ => x,
            });
        }
    }
    if let Some(x) = &mut seeded {
        x.resize(m.lp.cols(), 0.0);
    }
    (m, complete, seeded, phases)
}

/// Whether `a` admits more than `b` at the first priority level where they differ
/// (by more than a tolerance), highest level first.
fn admits_more(m: &Master, a: &[f64], b: &[f64]) -> bool {
    let c = m.c;
    for level in priority_levels(c) {
        let ws: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) == level)
            .collect();
        let (ua, ub) = (usage_value(m, &ws, a), usage_value(m, &ws, b));
        if (ua - ub).abs() > 1e-6 {
            return ua > ub;
        }
    }
    false
}

/// Wall-clock seconds per named phase, in order.
type Phases = Vec<(String, f64)>;

/// The priority values of the cluster's workloads, highest first, once each.
fn priority_levels(c: &Cluster) -> Vec<i64> {
    let mut levels: Vec<i64> = c.workloads.iter().map(|w| priority_value(c, w)).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    levels
}

/// The lexicographic solve in progress: the master with the locks of the stages so far,
/// the best solution and what the stages report.
struct Run<'a, 'o> {
    m: Master<'a>,
    opts: &'o Options,
    start: Instant,
    /// Per group: every pattern is a column.
    complete: Vec<bool>,
    /// The per-GPU relaxation's fills, kept between stages.
    pool: relax::Pool,
    /// The current solution (the packed seed, then each stage's).
    x: Option<Vec<f64>>,
    phases: Vec<(String, f64)>,
    levels: Vec<LevelBound>,
    stages: u32,
    status: SolveStatus,
    /// Whether the compaction goes ahead beside the last admission stage, and what it
    /// gave (see [`ahead`]).
    go_ahead: bool,
    ahead: Option<ahead::Ahead<'a>>,
}

impl Run<'_, '_> {
    /// The admission stage of priority `level` (the `i`th of `stages_total`): skipped
    /// when the current solution admits the whole level, else solved within its share of
    /// the remaining time; either way what it admits is locked for the stages below.
    fn admit_level(&mut self, i: usize, level: i64, stages_total: usize) -> Result<(), String> {
        let c = self.m.c;
        let ws: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) == level)
            .collect();
        let demand: f64 = ws.iter().map(|w| demand_of(&self.m, *w)).sum();
        // A level the current solution admits in full is at its optimum.
        if let Some(v) = &self.x {
            if ws.iter().all(|w| fully_admitted(&self.m, *w, v)) {
                self.phases
                    .push((format!("stage {} (priority {level}) skipped", i + 1), 0.0));
                lock_admitted(&mut self.m, &ws);
                self.levels.push(LevelBound {
                    priority: level,
                    bound: demand,
                });
                return Ok(());
            }
        }
        let lower: Vec<usize> = (0..c.workloads.len())
            .filter(|w| priority_value(c, &c.workloads[*w]) < level)
            .collect();
        let obj = admit_objective(&self.m, &ws, lower);
        let budget = remaining(self.opts, self.start) / (stages_total - i) as f64;
        // The last admission stage, from a start: the compaction goes ahead beside it.
        let ahead_from = (i + 2 == stages_total && self.go_ahead)
            .then(|| self.x.clone())
            .flatten();
        let st = match ahead_from {
            Some(x) => self.stage_beside_compaction(&obj, budget, x, &ws)?,
            None => self.stage(&obj, budget)?,
        };
        self.record_admission(i, level, &ws, demand, st);
        Ok(())
    }

    /// Solves the admission stage under `obj` from `x` while the compaction that would
    /// follow it, were it to return `x`, is solved on another thread (see [`ahead`]).
    fn stage_beside_compaction(
        &mut self,
        obj: &Objective,
        budget: f64,
        x: Vec<f64>,
        ws: &[usize],
    ) -> Result<StageOut, String> {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let inputs = ahead::Inputs {
            ws: ws.to_vec(),
            opts: self.opts,
            start: self.start,
            complete: self.complete.clone(),
        };
        let (m, pool) = (self.m.clone(), self.pool.clone());
        let (st, done) = std::thread::scope(|s| {
            let (inputs, stop_ahead) = (&inputs, stop.clone());
            let x0 = x.clone();
            let worker = std::thread::Builder::new()
                .name("compaction ahead".into())
                .spawn_scoped(s, move || {
                    ahead::compaction(m, x0, pool, inputs, stop_ahead)
                });
            let st = self.stage(obj, budget);
            let returned = st.as_ref().ok().map(|o| o.x.as_slice());
            ahead::settle(&stop, &x, returned);
            // A worker that did not start, or that panicked, is work not done ahead.
            let done = worker.ok().and_then(|h| h.join().ok());
            (st, done)
        });
        self.ahead = done;
        st
    }

    /// Reports an admission stage (phases, the level's bound, whether it is proven) and
    /// locks what it admitted.
    fn record_admission(&mut self, i: usize, level: i64, ws: &[usize], demand: f64, st: StageOut) {
        let m = &mut self.m;
        let stage = format!("stage {} (priority {level})", i + 1);
        self.phases
            .push((format!("{stage} relaxation bound"), st.relax_s));
        self.phases.push((
            format!("{stage} lp, {} rounds", st.rounds),
            st.lp_s - st.relax_s,
        ));
        // The placements found before the integer program, with what each admits.
        for (name, found) in [("dive", &st.dive), ("support neighbourhood", &st.support)] {
            if let Some((x, secs)) = found {
                let admitted = usage_value(m, ws, x);
                self.phases
                    .push((format!("{stage} {name}, {admitted:.2} admitted"), *secs));
            }
        }
        // The neighbourhood's seconds are part of the integer program's; shown apart.
        let support_s = st.support.as_ref().map_or(0.0, |(_, secs)| *secs);
        self.phases
            .push((format!("{stage} mip"), (st.mip_s - support_s).max(0.0)));
        let achieved = usage_value(m, ws, &st.x);
        // The stage maximised admission plus small non-negative terms: minus its bound
        // bounds admission. No level admits more than it asks for.
        let mut bound = (-st.bound).min(demand).max(achieved);
        // Every admitted total is a multiple of an exact resolution, the best one too:
        // the bound rounds down to that lattice (0.25-GPU steps and a bound of 321.2497
        // prove 321.0). The bound is valid whatever HiGHS' status.
        if let Some(r) = lattice(m, ws) {
            bound = (r * (bound / r + 1e-9).floor()).max(achieved);
        }
        if bound > achieved + step_of(m, ws) * 0.5 {
            self.status = SolveStatus::Feasible;
        }
        self.levels.push(LevelBound {
            priority: level,
            bound,
        });
        lock_usage(m, ws, achieved);
        self.x = Some(st.x);
    }

    /// The last stage, compaction, then the extraction of its solution.
    fn compact(mut self) -> Result<(Assignment, SolveInfo), String> {
        let budget = remaining(self.opts, self.start);
        let obj = Objective::Compact;
        fix_admission(&mut self.m, self.x.as_deref(), self.opts.previous.is_some());
        let ahead = self.ahead.take().map(|a| {
            let secs = a.secs;
            (a.take_if_same(&self.m, self.x.as_deref(), &self.pool), secs)
        });
        let st = match ahead {
            Some((Some((m, pool, out)), secs)) => {
                self.phases
                    .push(("compaction solved ahead, used".to_string(), secs));
                self.m = m;
                self.pool = pool;
                self.stages += 1;
                out?
            }
            other => {
                if let Some((_, secs)) = other {
                    self.phases
                        .push(("compaction solved ahead, not used".to_string(), secs));
                }
                self.stage(&obj, budget)?
            }
        };
        self.phases
            .push((format!("compaction lp, {} rounds", st.rounds), st.lp_s));
        self.phases.push(("compaction mip".to_string(), st.mip_s));
        let gap = relative_gap(st.objective, st.bound);
        if st.status != Status::Optimal && gap > self.opts.gap {
            self.status = SolveStatus::Feasible;
        }
        let t = Instant::now();
        let assignment = extract::assignment(&self.m, &st.x, self.opts.previous.as_ref());
        self.phases
            .push(("extract".to_string(), t.elapsed().as_secs_f64()));
        let info = SolveInfo {
            name: "ilp",
            status: self.status,
            objective: st.objective,
            bound: st.bound,
            gap,
            seconds: self.start.elapsed().as_secs_f64(),
            stages: self.stages,
            variables: self.m.lp.cols(),
            constraints: self.m.lp.rows(),
            phases: self.phases,
            levels: self.levels,
            note: None,
            requested_gap: self.opts.gap,
        };
        Ok((assignment, info))
    }

    /// Solves one stage under `obj` within `budget` seconds, from the current solution,
    /// and counts it.
    fn stage(&mut self, obj: &Objective, budget: f64) -> Result<StageOut, String> {
        let st = stage::run(
            &mut self.m,
            obj,
            self.x.as_deref(),
            budget,
            (self.opts.gap, self.opts.admission_gap),
            &self.complete,
            &mut self.pool,
        )?;
        self.stages += 1;
        Ok(st)
    }
}

/// Decision: without a previous placement the compaction stage keeps the admitted
/// replicas of every class as the admission stages left them in `x` (it moves work, it
/// does not trade one class's replica for another's of the same level): a smaller
/// program, and its bound is stated for that admission. With a previous placement it may
/// trade within a level, so that the replicas a class loses are those whose nodes new
/// work needs (fewer moves). CPU-only classes (no level admits them) stay free.
fn fix_admission(m: &mut Master, x: Option<&[f64]>, previous: bool) {
    let c = m.c;
    if let Some(v) = x.filter(|_| !previous) {
        for (&w, &a) in &m.a {
            let cpu_only = m.p.packed.contains_key(&w) && c.workloads[w].packed_gpu_milli() == 0;
            if !cpu_only {
                let k = v.get(a).copied().unwrap_or(0.0).round();
                m.lp.lo[a] = k;
                m.lp.hi[a] = k;
            }
        }
        shared_rounding(m, v);
    }
}

/// With a shared class's admitted replicas fixed at `k` (compaction without a previous
/// placement), its shared GPUs over all models are at least `ceil(k / per_gpu)`: every
/// model's replicas fit `per_gpu` to a GPU, and GPUs are whole. The LP relaxation
/// spreads fractional GPUs instead (on the 100,000-GPU superpod 45 of the compaction's
/// 0.08% gap, which HiGHS closed with 443 cuts in 2.3 s). A valid inequality: it
/// removes no integer solution.
fn shared_rounding(m: &mut Master, v: &[f64]) {
    let p = m.p;
    for (&w, (_, per_gpu, models)) in &p.shared {
        let Some(&a) = m.a.get(&w) else { continue };
        let k = v.get(a).copied().unwrap_or(0.0).round();
        let need = (k / (*per_gpu).max(1) as f64).ceil();
        if need <= 0.0 {
            continue;
        }
        let ts: Vec<usize> = models
            .iter()
            .filter_map(|model| m.t.get(&(w, model.clone())).copied())
            .collect();
        let row = m.lp.row(need, f64::INFINITY);
        for t in ts {
            m.lp.set(row, t, 1.0);
        }
    }
}

/// The relative gap between an objective and its bound (1 without a bound).
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

/// The objective of the admission stage of workloads `ws` (one priority level), with
/// `lower` the workloads of the levels below it.
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
    lattice(m, ws).unwrap_or(FINEST)
}

/// The resolution of an admission stage when it is exact (`None`: a size is no fraction
/// with a small denominator, and admitted totals need not lie on any lattice).
fn lattice(m: &Master, ws: &[usize]) -> Option<f64> {
    let coefs: Vec<f64> = ws
        .iter()
        .flat_map(|w| m.usage(*w, None))
        .map(|(coef, _)| coef)
        .filter(|x| *x > 0.0)
        .collect();
    resolution(&coefs)
}

/// The finest resolution a stage works to.
const FINEST: f64 = 1e-6;

/// The greatest common divisor of `coefs` (and 1), see [`step_of`]; `None` when a
/// coefficient is no fraction with a denominator up to 1,000.
fn resolution(coefs: &[f64]) -> Option<f64> {
    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    // A running fraction num/den, starting at 1.
    let (mut num, mut den): (u128, u128) = (1, 1);
    for &c in coefs {
        let (n, d) = (1..=1000u128).find_map(|d| {
            let n = c * d as f64;
            let r = n.round();
            ((n - r).abs() <= 1e-9 * d as f64 && r >= 1.0).then_some((r as u128, d))
        })?;
        // gcd(num/den, n/d) = gcd(num*d, n*den) / (den*d)
        let l = den * d;
        let g = gcd(num * d, n * den);
        let k = gcd(g, l);
        num = g / k;
        den = l / k;
        if den > 1_000_000 {
            return None;
        }
    }
    Some((num as f64 / den as f64).max(FINEST))
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

/// GPU-equivalents that `x` admits for workloads `ws`.
fn usage_value(m: &Master, ws: &[usize], x: &[f64]) -> f64 {
    ws.iter()
        .flat_map(|w| m.usage(*w, None))
        .map(|(coef, col)| coef * x.get(col).copied().unwrap_or(0.0))
        .sum()
}

/// Whether `x` admits every replica of workload `w`.
fn fully_admitted(m: &Master, w: usize, x: &[f64]) -> bool {
    match m.a.get(&w) {
        Some(a) => x.get(*a).copied().unwrap_or(0.0).round() >= m.c.workloads[w].replicas as f64,
        // Not in the model (nothing can hold it): admitting more is impossible.
        None => true,
    }
}

/// Locks an admission stage's result: the GPU-equivalents of `ws` stay at least
/// `achieved` (less a tolerance) in the stages below.
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

/// Locks a level admitted in full: every replica of `ws` stays admitted.
fn lock_admitted(m: &mut Master, ws: &[usize]) {
    for w in ws {
        if let Some(&a) = m.a.get(w) {
            m.lp.lo[a] = m.c.workloads[*w].replicas as f64;
        }
    }
}

/// A workload's priority value (the lowest when its priority class is unknown).
fn priority_value(c: &Cluster, w: &crate::model::Workload) -> i64 {
    c.priority(&w.priority).map(|p| p.value).unwrap_or(i64::MIN)
}

/// Seconds left of the time limit (at least 0.05).
fn remaining(opts: &Options, start: Instant) -> f64 {
    (opts.time_limit - start.elapsed().as_secs_f64()).max(0.05)
}

#[cfg(test)]
mod tests {
    use super::master::{Master, Objective};
    use super::problem::Problem;
    use super::testing::{cluster, master};
    use super::{lp, resolution, shared_rounding};

    #[test]
    fn shared_gpus_round_up_once_admission_is_fixed() {
        // 10 sessions, 4 to a GPU: 3 GPUs, where the LP relaxation alone takes 2.5.
        let c = cluster(
            "dev \"nb\" team=\"t\" priority=\"p\" replicas=10 {\n    share \"time-slice\" per-gpu=4\n    memory \"1GiB\"\n}\n",
        );
        let p = Problem::build(&c, &Default::default());
        let mut m = master(&c, &p);
        let a = *m.a.values().next().expect("the class's admission column");
        let t = *m.t.values().next().expect("its shared GPUs");
        m.lp.lo[a] = 10.0;
        m.lp.hi[a] = 10.0;
        let gpus = |m: &Master| {
            let mut relaxed = m.lp.clone();
            relaxed.cost = m.costs(&Objective::Compact);
            let sol = lp::Live::new(&relaxed, false).run(false);
            assert_eq!(sol.status, lp::Status::Optimal);
            sol.x[t]
        };
        assert!((gpus(&m) - 2.5).abs() < 1e-6);
        let mut v = vec![0.0; m.lp.cols()];
        v[a] = 10.0;
        shared_rounding(&mut m, &v);
        assert!((gpus(&m) - 3.0).abs() < 1e-6);
    }

    #[test]
    fn resolution_is_the_gcd_of_unlike_replicas() {
        let r = |c: &[f64]| resolution(c).unwrap();
        assert!((r(&[0.3, 1.0]) - 0.1).abs() < 1e-12);
        assert!((r(&[2.0 / 7.0, 0.3]) - 1.0 / 70.0).abs() < 1e-12);
        assert!((r(&[1.0, 2.0]) - 1.0).abs() < 1e-12);
        assert!((r(&[]) - 1.0).abs() < 1e-12);
        assert!((r(&[0.25, 0.5]) - 0.25).abs() < 1e-12);
        assert_eq!(resolution(&[std::f64::consts::PI / 10.0]), None);
    }
}
