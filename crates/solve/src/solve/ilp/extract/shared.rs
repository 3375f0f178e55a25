//! Time-slice and MPS: shared replicas onto the GPUs of shared nodes.
//!
//! The device plugin shares every GPU of a node with one replica count, so a node
//! serves classes of one sharing factor (`per-gpu`): a class takes GPUs of nodes that
//! serve its factor or serve none yet, in node order.

use super::{Ctx, order};
use crate::model::NodeIdx;
use crate::model::PoolMode;
use crate::solve::Assignment;
use std::collections::{BTreeMap, BTreeSet};

/// Free GPUs per (model, shared mode): nodes in name order, each with its GPU indexes
/// ascending.
type Gpus = BTreeMap<(String, PoolMode), Vec<(NodeIdx, Vec<u32>)>>;

/// Shared replicas onto the GPUs of time-slice and MPS nodes, each class first on the
/// GPUs it had, every node serving one sharing factor.
pub(crate) fn place(cx: &Ctx, a: &mut Assignment) {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut gpus = shared_gpus(cx);
    // With a previous placement, each class first takes back the GPUs it shared
    // (admission order); `taken` GPUs are skipped.
    let mut reps: BTreeMap<(usize, String), u32> = BTreeMap::new();
    for (&w, (_, _, models)) in &p.shared {
        for m in models {
            let k = cx.m.r.get(&(w, m.clone())).map(|v| cx.val(*v)).unwrap_or(0) as u32;
            reps.insert((w, m.clone()), k);
        }
    }
    let mut factor = factors(cx);
    let taken = reclaim(cx, &gpus, &mut reps, &mut factor, a);
    for w in order(c, p.shared.keys().copied()) {
        let (mps, per_gpu, models) = &p.shared[&w];
        let mode = PoolMode::shared(*mps);
        for m in models {
            let mut left = reps[&(w, m.clone())];
            let list = gpus.entry((m.clone(), mode)).or_default();
            for (n, gs) in list.iter_mut() {
                if left == 0 {
                    break;
                }
                if factor.get(n).is_some_and(|f| f != per_gpu) {
                    continue;
                }
                while left > 0 && !gs.is_empty() {
                    let g = gs.remove(0);
                    if taken.contains(&(*n, g)) {
                        continue;
                    }
                    let k = left.min(*per_gpu);
                    a.shares.push((w, *n, g, k));
                    a.node_mode[*n] = Some(mode);
                    factor.insert(*n, *per_gpu);
                    left -= k;
                }
            }
        }
    }
    a.shares.sort();
}

/// The sharing factor of the shared nodes where a model and mode serve several: as many
/// nodes of each group as the solution gives each factor (`nf`), the nodes that served
/// it before first, then in the order of the group's nodes in the mode.
fn factors(cx: &Ctx) -> BTreeMap<NodeIdx, u32> {
    let m = cx.m;
    let mut before: BTreeMap<NodeIdx, u32> = BTreeMap::new();
    if let Some(pv) = cx.prev {
        for (&w, shares) in &pv.shares {
            let Some((_, per_gpu, _)) = m.p.shared.get(&w) else {
                continue;
            };
            for (n, _, _) in shares {
                before.insert(*n, *per_gpu);
            }
        }
    }
    let mut out: BTreeMap<NodeIdx, u32> = BTreeMap::new();
    for (&(gi, mode, f), &col) in &m.nf {
        let nodes = cx
            .by_mode
            .get(&(gi, mode))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut want = cx.val(col) as usize;
        let free = |n: &NodeIdx, out: &BTreeMap<NodeIdx, u32>| !out.contains_key(n);
        let first: Vec<NodeIdx> = nodes
            .iter()
            .filter(|n| before.get(n) == Some(&f))
            .chain(nodes.iter().filter(|n| before.get(n) != Some(&f)))
            .copied()
            .collect();
        for n in first {
            if want == 0 {
                break;
            }
            if free(&n, &out) {
                out.insert(n, f);
                want -= 1;
            }
        }
    }
    out
}

/// The usable GPUs of every time-slice and MPS node.
fn shared_gpus(cx: &Ctx) -> Gpus {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut gpus = Gpus::new();
    for (gi, g) in p.groups.iter().enumerate() {
        for mode in [PoolMode::TimeSlice, PoolMode::Mps] {
            for &n in cx
                .by_mode
                .get(&(gi, mode))
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                let mut idx: Vec<u32> = c.nodes[n].usable_gpus().map(|x| x.index).collect();
                idx.sort_unstable();
                gpus.entry((g.model.clone(), mode))
                    .or_default()
                    .push((n, idx));
            }
        }
    }
    for v in gpus.values_mut() {
        v.sort_by(|x, y| c.nodes[x.0].name.cmp(&c.nodes[y.0].name));
    }
    gpus
}

/// With a previous placement, each class (admission order) takes back the GPUs it
/// shared that are still shared in its mode, within its replicas `reps` per model;
/// returns the GPUs so taken.
fn reclaim(
    cx: &Ctx,
    gpus: &Gpus,
    reps: &mut BTreeMap<(usize, String), u32>,
    factor: &mut BTreeMap<NodeIdx, u32>,
    a: &mut Assignment,
) -> BTreeSet<(NodeIdx, u32)> {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut taken: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
    let Some(pv) = cx.prev.filter(|pv| !pv.shares.is_empty()) else {
        return taken;
    };
    let mut avail: BTreeMap<(NodeIdx, u32), (String, PoolMode)> = BTreeMap::new();
    for ((m, mode), list) in gpus {
        for (n, gs) in list {
            for g in gs {
                avail.insert((*n, *g), (m.clone(), *mode));
            }
        }
    }
    for w in order(c, p.shared.keys().copied()) {
        let (mps, per_gpu, _) = &p.shared[&w];
        let mode = PoolMode::shared(*mps);
        for (n, g, _) in pv.shares.get(&w).map(Vec::as_slice).unwrap_or(&[]) {
            let Some((m, gm)) = avail.get(&(*n, *g)) else {
                continue;
            };
            let left = reps.get_mut(&(w, m.clone()));
            let Some(left) = left.filter(|l| **l > 0 && *gm == mode) else {
                continue;
            };
            if factor.get(n).is_some_and(|f| f != per_gpu) || !taken.insert((*n, *g)) {
                continue;
            }
            let k = (*left).min(*per_gpu);
            a.shares.push((w, *n, *g, k));
            a.node_mode[*n] = Some(mode);
            factor.insert(*n, *per_gpu);
            *left -= k;
        }
    }
    taken
}
