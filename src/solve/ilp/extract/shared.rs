//! Time-slice and MPS: shared replicas onto the GPUs of shared nodes.

use super::{Ctx, order};
use crate::model::NodeIdx;
use crate::model::PoolMode;
use crate::solve::Assignment;
use std::collections::{BTreeMap, BTreeSet};

/// GPUs per (model, shared mode), in reverse name order (`pop()` takes the first).
type Gpus = BTreeMap<(String, PoolMode), Vec<(NodeIdx, u32)>>;

/// Shared replicas onto the GPUs of time-slice and MPS nodes, each class first on the
/// GPUs it had.
pub fn place(cx: &Ctx, a: &mut Assignment) {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut gpus = shared_gpus(cx);
    // With a previous placement, each class first takes back the GPUs it shared
    // (admission order); `taken` GPUs are skipped when popping.
    let mut reps: BTreeMap<(usize, String), u32> = BTreeMap::new();
    for (&w, (_, _, models)) in &p.shared {
        for m in models {
            let k = cx.m.r.get(&(w, m.clone())).map(|v| cx.val(*v)).unwrap_or(0) as u32;
            reps.insert((w, m.clone()), k);
        }
    }
    let taken = reclaim(cx, &gpus, &mut reps, a);
    for w in order(c, p.shared.keys().copied()) {
        let (mps, per_gpu, models) = &p.shared[&w];
        let mode = PoolMode::shared(*mps);
        for m in models {
            let mut left = reps[&(w, m.clone())];
            let list = gpus.entry((m.clone(), mode)).or_default();
            while left > 0 {
                let Some((n, g)) = list.pop() else { break };
                if taken.contains(&(n, g)) {
                    continue;
                }
                let k = left.min(*per_gpu);
                a.shares.push((w, n, g, k));
                a.node_mode[n] = Some(mode);
                left -= k;
            }
        }
    }
    a.shares.sort();
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
                for x in c.nodes[n].usable_gpus() {
                    gpus.entry((g.model.clone(), mode))
                        .or_default()
                        .push((n, x.index));
                }
            }
        }
    }
    for v in gpus.values_mut() {
        v.sort_by(|x, y| (&c.nodes[x.0].name, x.1).cmp(&(&c.nodes[y.0].name, y.1)));
        v.reverse(); // pop() takes the first
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
    a: &mut Assignment,
) -> BTreeSet<(NodeIdx, u32)> {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut taken: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
    let Some(pv) = cx.prev.filter(|pv| !pv.shares.is_empty()) else {
        return taken;
    };
    let mut avail: BTreeMap<(NodeIdx, u32), (String, PoolMode)> = BTreeMap::new();
    for ((m, mode), list) in gpus {
        for x in list {
            avail.insert(*x, (m.clone(), *mode));
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
            if !taken.insert((*n, *g)) {
                continue;
            }
            let k = (*left).min(*per_gpu);
            a.shares.push((w, *n, *g, k));
            a.node_mode[*n] = Some(mode);
            *left -= k;
        }
    }
    taken
}
