//! Neighbourhoods of a stage's integer program: the master with most of its pattern
//! columns fixed, small enough to solve in a fraction of the whole program's time. Every
//! solution of a neighbourhood is a solution of the master, so it is a start for the
//! whole program, or the stage's answer when it is as good as the bound allows.

use super::lp::{Live, Status};
use super::master::Master;

/// Branch-and-bound nodes the support neighbourhood may open. A count, not a clock, so
/// the plan does not depend on the machine. Decision: 10, since on the openb stragglers
/// (docs/benchmarks.md) the root's cuts and heuristics find what 100 or 1,000 nodes find.
pub(super) const SUPPORT_NODES: i32 = 10;

/// The pattern columns (the node placements) of the master.
fn pattern_cols<'a>(m: &'a Master<'_>) -> impl Iterator<Item = usize> + 'a {
    m.patterns
        .iter()
        .flatten()
        .filter(|pc| !pc.pattern.items.is_empty())
        .map(|pc| pc.col)
}

/// Solves `lp`'s integer program as `configure` sets it (from `start`, if any) and
/// returns its solution when it satisfies the master.
fn solve(
    m: &Master,
    lp: &super::lp::Lp,
    start: Option<&[f64]>,
    configure: impl FnOnce(&mut Live),
) -> Option<Vec<f64>> {
    let mut live = Live::new(lp, true);
    configure(&mut live);
    if let Some(s) = start {
        live.start(s);
    }
    let sol = live.run(true);
    if !matches!(sol.status, Status::Optimal | Status::Limit) {
        return None;
    }
    let x = m.lp.round_integers(&sol.x);
    m.lp.feasible(&x, 1e-5).then_some(x)
}

/// The integer program with every pattern column that is integral in the LP solution
/// `x_lp` fixed there (the other columns free): a small problem whose solutions are
/// solutions of the master.
pub(super) fn fixed(m: &Master, x_lp: &[f64], time_limit: f64) -> Option<Vec<f64>> {
    let mut lp = m.lp.clone();
    let mut free = 0;
    for j in pattern_cols(m) {
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
    solve(m, &lp, None, |live| {
        live.option_f64("time_limit", time_limit.max(0.05));
        live.option_f64("mip_rel_gap", 1e-6);
    })
}

/// The support neighbourhood of a start: the integer program over the pattern columns
/// that the master's LP optimum or `start` uses (every other pattern column fixed at 0),
/// from `start`, with the limits `configure` sets. Like RINS, it searches where the
/// relaxation and the start point; unlike it, it keeps every column either of them uses
/// free, so it can move nodes between the patterns the LP prefers. On the openb
/// stragglers (a dive 1.5-17 GPUs short of the admission gap) it lands inside the gap in
/// 0.2-0.4 s, where the whole program took 2-3 s of root cuts and sub-MIPs.
///
/// `None` when the LP does not solve or nothing satisfying the master is found; the
/// result may equal `start`.
pub(super) fn support(
    m: &Master,
    start: &[f64],
    configure: impl FnOnce(&mut Live),
) -> Option<Vec<f64>> {
    let relaxed = Live::new(&m.lp, false).run(false);
    if relaxed.status != Status::Optimal {
        return None;
    }
    let mut lp = m.lp.clone();
    for j in pattern_cols(m) {
        if relaxed.x[j].abs() < 1e-9 && start.get(j).is_none_or(|v| v.abs() < 1e-9) {
            lp.hi[j] = 0.0;
        }
    }
    solve(m, &lp, Some(start), configure)
}

#[cfg(test)]
mod tests {
    use super::super::lp::{Live, Status};
    use super::super::master::Objective;
    use super::super::testing::with_empty_start;
    use super::{pattern_cols, support};

    /// Fractional replicas of two sizes that CPU keeps from filling the GPUs: the LP
    /// optimum splits nodes between patterns.
    const MIX: &str = r#"
inference "part" team="t" priority="p" replicas=9 {
    fraction "30%"
    requests cpu=3 memory="1GiB"
}
inference "half" team="t" priority="p" replicas=5 {
    fraction "50%"
    requests cpu=5 memory="1GiB"
}
"#;

    #[test]
    fn the_support_neighbourhood_searches_what_the_lp_or_the_start_uses() {
        with_empty_start(MIX, |m, empty| {
            let ws: Vec<usize> = (0..m.c.workloads.len()).collect();
            m.lp.cost = m.costs(&Objective::Admit {
                ws,
                lower: Vec::new(),
                weight: 0.0,
                guarantee: 0.0,
            });
            let exact = |live: &mut Live| live.option_f64("mip_rel_gap", 0.0);
            let relaxed = Live::new(&m.lp, false).run(false);
            assert_eq!(relaxed.status, Status::Optimal);
            // From the empty placement: what it finds places replicas, satisfies the
            // master and uses no pattern column outside the LP's support.
            let found = support(m, empty, exact).expect("a solution");
            assert!(m.lp.feasible(&found, 1e-6));
            assert!(m.lp.objective(&found) < m.lp.objective(empty) - 0.5);
            for j in pattern_cols(m) {
                if relaxed.x[j].abs() < 1e-9 {
                    assert_eq!(found[j], 0.0, "column {j} is outside the support");
                }
            }
            // Here the support holds an optimum of the whole program.
            let whole = Live::new(&m.lp, true).run(true);
            assert_eq!(whole.status, Status::Optimal);
            assert!((m.lp.objective(&found) - whole.objective).abs() < 1e-6);
            // From a start, never worse than it: its columns stay free.
            let start = m.lp.round_integers(&whole.x);
            let again = support(m, &start, exact).expect("a solution");
            assert!(m.lp.objective(&again) <= m.lp.objective(&start) + 1e-9);
        });
    }
}
