//! The master's integer solution -> concrete nodes, GPUs, layouts and instances.
//!
//! Nothing here decides what fits: the solution already is a placement. Each group's
//! nodes take their pool mode and whole-GPU pattern ([`whole`]), the shares of each
//! domain are dealt to its gangs on distinct nodes, MIG layouts go onto the MIG nodes'
//! GPUs ([`mig`]) and shared replicas onto the time-slice/MPS GPUs ([`shared`]). With a
//! previous placement every step prefers what was there: nodes keep their mode and
//! contents, gangs their GPUs, instances and shares their GPUs.
//!
//! Deterministic: groups, nodes and GPUs are walked in name/index order, workloads in
//! priority order then name.

mod cpu_only;
mod mig;
mod shared;
mod whole;

use super::master::Master;
use crate::model::PoolMode;
use crate::model::{Cluster, NodeIdx};
use crate::solve::Assignment;
use crate::solve::previous::Previous;
use std::collections::{BTreeMap, BTreeSet};

/// Nodes of each (group, pool mode).
pub(crate) type ByMode = BTreeMap<(usize, PoolMode), Vec<NodeIdx>>;

/// A solution value as a count.
fn val(x: &[f64], col: usize) -> u64 {
    x.get(col).copied().unwrap_or(0.0).round().max(0.0) as u64
}

/// What every extraction step reads: the master, its solution, the nodes of each
/// (group, pool mode) and the previous placement.
struct Ctx<'a> {
    m: &'a Master<'a>,
    x: &'a [f64],
    by_mode: &'a ByMode,
    prev: Option<&'a Previous>,
}

impl Ctx<'_> {
    /// The solution's value of column `col`, as a count.
    fn val(&self, col: usize) -> u64 {
        val(self.x, col)
    }
}

/// Workloads in admission order: higher priority first, then name.
pub(crate) fn order(c: &Cluster, ws: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = ws.into_iter().collect();
    v.sort_by_key(|w| {
        (
            std::cmp::Reverse(
                c.priority(&c.workloads[*w].priority)
                    .map(|p| p.value)
                    .unwrap_or(i64::MIN),
            ),
            c.workloads[*w].name.clone(),
        )
    });
    v.dedup();
    v
}

/// The concrete assignment of the master's solution `x`.
pub(crate) fn assignment(m: &Master, x: &[f64], prev: Option<&Previous>) -> Assignment {
    let c = m.c;
    let mut a = Assignment {
        node_mode: vec![None; c.nodes.len()],
        ..Default::default()
    };
    let by_mode = node_modes(m, x, prev);
    for ((gi, mode), nodes) in &by_mode {
        if *mode != PoolMode::WholeGpu || m.p.groups[*gi].pinned.is_some() {
            for &n in nodes {
                a.node_mode[n] = Some(*mode);
            }
        }
    }
    let cx = Ctx {
        m,
        x,
        by_mode: &by_mode,
        prev,
    };
    whole::place(&cx, &mut a);
    mig::place(&cx, &mut a);
    shared::place(&cx, &mut a);
    cpu_only::place(&cx, &mut a);
    a
}

/// Which nodes of each group take each pool mode: as many as the solution says, first
/// the nodes that had the mode before, then the rest in name order (whole-GPU nodes
/// first).
fn node_modes(m: &Master, x: &[f64], prev: Option<&Previous>) -> ByMode {
    let mut out = ByMode::new();
    for (gi, g) in m.p.groups.iter().enumerate() {
        let mut want: Vec<(PoolMode, usize)> = Vec::new();
        let whole: u64 = m.whole_nodes(gi).iter().map(|(_, col)| val(x, *col)).sum();
        if !m.whole_nodes(gi).is_empty() {
            want.push((PoolMode::WholeGpu, whole as usize));
        }
        for mode in PoolMode::ALL {
            if let Some(&v) = m.n.get(&(gi, mode)) {
                want.push((mode, val(x, v) as usize));
            }
        }
        let mut lists: Vec<Vec<NodeIdx>> = vec![Vec::new(); want.len()];
        let mut taken: BTreeSet<NodeIdx> = BTreeSet::new();
        if let Some(pv) = prev {
            for (i, (mode, k)) in want.iter().enumerate() {
                for &n in &g.nodes {
                    if lists[i].len() >= *k {
                        break;
                    }
                    if pv.node_mode.get(n).copied().flatten() == Some(*mode) && taken.insert(n) {
                        lists[i].push(n);
                    }
                }
            }
        }
        let mut rest = g.nodes.iter().copied().filter(|n| !taken.contains(n));
        let pos: BTreeMap<NodeIdx, usize> =
            g.nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        for (i, (_, k)) in want.iter().enumerate() {
            while lists[i].len() < *k {
                let Some(n) = rest.next() else { break };
                lists[i].push(n);
            }
            lists[i].sort_by_key(|n| pos[n]);
        }
        for ((mode, _), nodes) in want.into_iter().zip(lists) {
            out.insert((gi, mode), nodes);
        }
    }
    out
}
