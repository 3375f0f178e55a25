//! Time-slice and MPS: replicas `r(w, model)` and shared GPUs `t(w, model)` per class,
//! within the GPUs of the groups' shared nodes.
//!
//! The device plugin gives every GPU of a node one replica count, so a shared node
//! serves classes of one sharing factor (`per-gpu`). Where a model and mode serve
//! several factors, `nf(g, mode, factor)` splits the group's shared nodes between them
//! and each factor's GPUs bound its classes' shared GPUs; otherwise the group's shared
//! nodes bound them directly.

use super::super::lp::ColId;
use super::{INF, Master};
use crate::model::PoolMode;
use std::collections::BTreeMap;

impl Master<'_> {
    pub(super) fn shared(&mut self) {
        let (c, p) = (self.c, self.p);
        let mut capacity: BTreeMap<(String, PoolMode), BTreeMap<u32, Vec<ColId>>> = BTreeMap::new();
        for (&w, (mps, per_gpu, models)) in &p.shared {
            let mode = PoolMode::shared(*mps);
            for m in models {
                let reps = c.workloads[w].replicas as f64;
                let r = self.lp.col(0.0, 0.0, reps, true);
                let t = self.lp.col(0.0, 0.0, reps, true);
                let row = self.lp.row(-INF, 0.0);
                self.lp.set(row, r, 1.0);
                self.lp.set(row, t, -(*per_gpu as f64));
                capacity
                    .entry((m.clone(), mode))
                    .or_default()
                    .entry(*per_gpu)
                    .or_default()
                    .push(t);
                self.r.insert((w, m.clone()), r);
                self.t.insert((w, m.clone()), t);
            }
        }
        for ((m, mode), factors) in capacity {
            let groups: Vec<(usize, ColId, f64)> = p
                .groups
                .iter()
                .enumerate()
                .filter(|(_, g)| g.model == m)
                .filter_map(|(gi, g)| {
                    let n = *self.n.get(&(gi, mode))?;
                    Some((gi, n, g.gpus as f64))
                })
                .collect();
            let one = factors.len() == 1;
            for (f, ts) in factors {
                let row = self.lp.row(-INF, 0.0);
                for t in ts {
                    self.lp.set(row, t, 1.0);
                }
                for &(gi, n, gpus) in &groups {
                    let nodes = if one {
                        n
                    } else {
                        self.factor_nodes(gi, mode, f, n)
                    };
                    self.lp.set(row, nodes, -gpus);
                }
            }
        }
        for &w in p.shared.keys() {
            self.admit_sum(w);
        }
    }

    /// `nf(g, mode, factor)`: nodes of group `g` in `mode` serving `factor`; with the
    /// group's other factors they add up to at most its nodes in the mode (`n`).
    fn factor_nodes(&mut self, gi: usize, mode: PoolMode, factor: u32, n: ColId) -> ColId {
        let size = self.p.groups[gi].nodes.len() as f64;
        let col = self.lp.col(0.0, 0.0, size, true);
        let row = match self.factor_row.get(&(gi, mode)) {
            Some(&row) => row,
            None => {
                let row = self.lp.row(-INF, 0.0);
                self.lp.set(row, n, -1.0);
                self.factor_row.insert((gi, mode), row);
                row
            }
        };
        self.lp.set(row, col, 1.0);
        self.nf.insert((gi, mode, factor), col);
        col
    }
}
