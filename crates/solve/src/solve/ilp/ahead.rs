//! The compaction solved ahead, on a second core, while the last admission stage solves.
//!
//! The last admission stage starts from the current solution; where that start is
//! already the best admission, the stage returns it unchanged, and the compaction then
//! starts from it. So, beside the stage, the compaction is solved as it would be were the
//! stage to return its start: the lock of the stage's admission and the compaction's
//! fixing applied to a copy of the master, then the compaction stage itself. Every
//! re-plan of the 100,000-GPU superpod (same input, a class added or grown, nodes
//! drained) and the last admission stage of its plan from scratch return their start.
//!
//! Decision: the work ahead is used only when the compaction about to run has exactly
//! its inputs (the same program up to the objective, the same start, the same
//! relaxation pool); otherwise it is stopped (HiGHS's interrupt callbacks) and the
//! compaction runs after the stage as it always did. The plan is therefore the one
//! solved without the work ahead, byte for byte; only the compaction's time budget
//! differs (it starts earlier, with the plan's whole remaining time), which matters only
//! when the time limit ends it.

use super::lp::Lp;
use super::master::{Master, Objective};
use super::stage::{self, StageOut};
use super::{fix_admission, lock_usage, relax, remaining, usage_value};
use crate::solve::Options;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A compaction solved ahead: the inputs it had, and what it gave.
pub(super) struct Ahead<'a> {
    /// The program, start and pool the compaction stage began with.
    lp: Lp,
    x: Vec<f64>,
    pool: relax::Pool,
    /// The master and pool after the stage, and the stage's result.
    m: Master<'a>,
    pool_after: relax::Pool,
    out: Result<StageOut, String>,
    /// Seconds from the start of the work ahead to its end.
    pub secs: f64,
}

/// What the compaction needs besides the master: the stage's workloads (to lock what
/// the start admits), the options and the run's start (its time budget), whether each
/// group is complete.
pub(super) struct Inputs<'o> {
    pub ws: Vec<usize>,
    pub opts: &'o Options,
    pub start: Instant,
    pub complete: Vec<bool>,
}

/// Whether work ahead may help: a second core (with one, the work ahead would take the
/// stage's core).
pub(super) fn worthwhile() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// The compaction of `m` (a copy of the master before the last admission stage) as it
/// would follow a stage returning `x`; stops early once `stop` is raised.
pub(super) fn compaction<'a>(
    mut m: Master<'a>,
    x: Vec<f64>,
    mut pool: relax::Pool,
    inputs: &Inputs,
    stop: Arc<AtomicBool>,
) -> Ahead<'a> {
    let t = Instant::now();
    m.lp.stop = Some(stop);
    let achieved = usage_value(&m, &inputs.ws, &x);
    lock_usage(&mut m, &inputs.ws, achieved);
    fix_admission(&mut m, Some(&x), inputs.opts.previous.is_some());
    let (lp, pool_in) = (m.lp.clone(), pool.clone());
    let out = stage::run(
        &mut m,
        &Objective::Compact,
        Some(&x),
        remaining(inputs.opts, inputs.start),
        (inputs.opts.gap, inputs.opts.admission_gap),
        &inputs.complete,
        &mut pool,
    );
    m.lp.stop = None;
    Ahead {
        lp,
        x,
        pool: pool_in,
        m,
        pool_after: pool,
        out,
        secs: t.elapsed().as_secs_f64(),
    }
}

impl<'a> Ahead<'a> {
    /// The compaction's master, pool and result, when `m`, `x` and `pool` are exactly
    /// the inputs it had.
    pub(super) fn take_if_same(
        self,
        m: &Master,
        x: Option<&[f64]>,
        pool: &relax::Pool,
    ) -> Option<(Master<'a>, relax::Pool, Result<StageOut, String>)> {
        let same =
            x == Some(self.x.as_slice()) && self.lp.same_program(&m.lp) && self.pool == *pool;
        same.then_some((self.m, self.pool_after, self.out))
    }
}

/// Raises `stop` unless `returned` is `start` (the work ahead is then of no use).
pub(super) fn settle(stop: &AtomicBool, start: &[f64], returned: Option<&[f64]>) {
    if returned != Some(start) {
        stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::master::Master;
    use super::super::problem::Problem;
    use super::super::relax::Pool;
    use super::super::solve_with;
    use super::super::testing::{cluster, master};
    use super::*;
    use crate::model::Cluster;
    use crate::solve::{Assignment, SolveInfo};

    /// The test cluster (two nodes of two GPUs, priority `p`) with a gang of two at a
    /// higher priority and `low` (KDL classes at `p`) asking for more than the rest: the
    /// last admission stage solves.
    fn oversubscribed(low: &str) -> Cluster {
        cluster(&format!(
            r#"
priority "high" value=100
training "g" team="t" priority="high" {{
    gang gpus=2 gpus-per-node=2
    topology required="node"
}}
{low}
"#
        ))
    }

    /// What a solve gives, less its seconds and phases.
    fn timeless(r: (Assignment, SolveInfo)) -> (Assignment, SolveInfo) {
        let (a, mut info) = r;
        info.seconds = 0.0;
        info.phases.clear();
        (a, info)
    }

    fn went_ahead(info: &SolveInfo, used: bool) -> bool {
        let name = if used {
            "compaction solved ahead, used"
        } else {
            "compaction solved ahead, not used"
        };
        info.phases.iter().any(|(n, _)| n == name)
    }

    #[test]
    fn the_compaction_solved_ahead_is_the_compaction_solved_after() {
        // Each cluster planned from scratch and re-planned from that plan: the same
        // assignment, status, objective and bounds with the work ahead as without it.
        let lows = [
            "inference \"i\" team=\"t\" priority=\"p\" replicas=5 {\n    isolation \"whole-gpu\"\n    gpus 1\n    requests cpu=1 memory=\"1GiB\"\n}",
            "training \"h\" team=\"t\" priority=\"p\" replicas=3 {\n    gang gpus=2 gpus-per-node=1\n}\ninference \"i\" team=\"t\" priority=\"p\" replicas=2 {\n    isolation \"whole-gpu\"\n    gpus 1\n    requests cpu=1 memory=\"1GiB\"\n}",
            "dev \"nb\" team=\"t\" priority=\"p\" replicas=12 {\n    share \"time-slice\" per-gpu=4\n    memory \"2GiB\"\n}",
        ];
        let (mut used, mut stopped) = (0, 0);
        for low in lows {
            let c = oversubscribed(low);
            let mut opts = Options {
                time_limit: 120.0,
                ..Options::default()
            };
            for replan in [false, true] {
                let ahead = solve_with(&c, &opts, true).expect("solved");
                assert!(went_ahead(&ahead.1, true) || went_ahead(&ahead.1, false));
                used += usize::from(went_ahead(&ahead.1, true));
                stopped += usize::from(went_ahead(&ahead.1, false));
                let after = solve_with(&c, &opts, false).expect("solved");
                assert!(!went_ahead(&after.1, true) && !went_ahead(&after.1, false));
                let after = timeless(after);
                assert_eq!(timeless(ahead), after, "{low}, re-plan: {replan}");
                let built = crate::placement::build(&c, &after.0, &after.1);
                opts.previous = Some(crate::placement::previous::resolve(&c, &built));
            }
        }
        // Both paths ran: the work ahead used where the last stage returned its start
        // (each plan from scratch here), stopped where it did not (re-plans whose start,
        // the previous placement and the fill, the stage improved on). A guard that never
        // matches, or never stops, fails here.
        assert!(used >= lows.len(), "the work ahead was used {used} times");
        assert!(stopped >= 1, "the work ahead was never stopped");
    }

    /// Work ahead that had `m` and `x` as its inputs (its result aside).
    fn ahead_of<'a>(m: &Master<'a>, x: &[f64]) -> Ahead<'a> {
        Ahead {
            lp: m.lp.clone(),
            x: x.to_vec(),
            pool: Pool::default(),
            m: m.clone(),
            pool_after: Pool::default(),
            out: Err("not solved".into()),
            secs: 0.0,
        }
    }

    #[test]
    fn work_ahead_is_used_only_on_exactly_its_inputs() {
        let c = cluster(
            "inference \"i\" team=\"t\" priority=\"p\" replicas=3 {\n    isolation \"whole-gpu\"\n    gpus 1\n    requests cpu=1 memory=\"1GiB\"\n}\n",
        );
        let p = Problem::build(&c, &Default::default());
        let m = master(&c, &p);
        let x = vec![0.0; m.lp.cols()];
        let pool = Pool::default();
        let used = |now: &Master, start: Option<&[f64]>, pool: &Pool| {
            ahead_of(&m, &x).take_if_same(now, start, pool).is_some()
        };
        assert!(used(&m, Some(&x), &pool));
        // Another start, none, another program, another pool: not used.
        let mut y = x.clone();
        y[0] = 1.0;
        assert!(!used(&m, Some(&y), &pool));
        assert!(!used(&m, None, &pool));
        let mut other = m.clone();
        other.lp.hi[0] = 0.0;
        assert!(!used(&other, Some(&x), &pool));
        let mut other = m.clone();
        other.lp.row(0.0, 1.0);
        assert!(!used(&other, Some(&x), &pool));
        let mut fuller = Pool::default();
        fuller.fills.insert(0, vec![Vec::new()]);
        assert!(!used(&m, Some(&x), &fuller));
        // The objective is each stage's own: it does not count.
        let mut costed = m.clone();
        costed.lp.cost[0] = 5.0;
        assert!(used(&costed, Some(&x), &pool));
    }

    #[test]
    fn the_work_ahead_stops_unless_the_stage_returned_its_start() {
        let flag = AtomicBool::new(false);
        settle(&flag, &[1.0, 2.0], Some(&[1.0, 2.0]));
        assert!(!flag.load(Ordering::Relaxed));
        settle(&flag, &[1.0, 2.0], Some(&[1.0, 3.0]));
        assert!(flag.load(Ordering::Relaxed));
        let flag = AtomicBool::new(false);
        settle(&flag, &[1.0, 2.0], None);
        assert!(flag.load(Ordering::Relaxed));
    }
}
