//! CPU-only packed replicas (`gpus 0`): not in the master (they admit no GPU), placed
//! last on the CPU and memory the GPU work leaves on whole-GPU nodes: first where they
//! were, then on the node whose free resources align best with their request.

use super::Ctx;
use crate::model::NodeIdx;
use crate::model::PoolMode;
use crate::solve::Assignment;
use crate::solve::pack::{self, Bins};

/// The CPU-only packed classes (largest first) onto the whole-GPU nodes, each replica
/// first where it was.
pub(crate) fn place(cx: &Ctx, a: &mut Assignment) {
    let (c, p, prev) = (cx.m.c, cx.m.p, cx.prev);
    let classes: Vec<usize> = pack::largest_first(
        c,
        p.packed
            .keys()
            .copied()
            .filter(|w| c.workloads[*w].packed_gpu_milli() == 0),
    );
    if classes.is_empty() {
        return;
    }
    let mut whole: Vec<NodeIdx> = cx
        .by_mode
        .iter()
        .filter(|((_, mode), _)| *mode == PoolMode::WholeGpu)
        .flat_map(|(_, nodes)| nodes.iter().copied())
        .collect();
    whole.sort_by(|x, y| c.nodes[*x].name.cmp(&c.nodes[*y].name));
    let mut bins = Bins::new(c, a, whole.iter().copied());
    for w in classes {
        let wl = &c.workloads[w];
        let mut placed = 0;
        if let Some(before) = prev.and_then(|pv| pv.packed.get(&w)) {
            for (n, gs, k) in before {
                for _ in 0..*k {
                    if placed >= wl.replicas
                        || !whole.contains(n)
                        || !bins.place_exact(c, w, *n, gs)
                    {
                        break;
                    }
                    pack::record(a, w, *n, gs.clone(), false);
                    placed += 1;
                }
            }
        }
        while placed < wl.replicas {
            let Some((n, gs)) = bins.place(c, w, &whole) else {
                break;
            };
            pack::record(a, w, n, gs, false);
            placed += 1;
        }
    }
    a.packed.sort();
}
