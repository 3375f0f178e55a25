//! Time-slice and MPS: replicas `r(w, model)` and shared GPUs `t(w, model)` per class,
//! within the GPUs of the groups' shared nodes.

use super::super::lp::ColId;
use super::{INF, Master};
use crate::model::PoolMode;
use std::collections::BTreeMap;

impl Master<'_> {
    pub(super) fn shared(&mut self) {
        let (c, p) = (self.c, self.p);
        let mut capacity: BTreeMap<(String, PoolMode), Vec<ColId>> = BTreeMap::new();
        for (&w, (mps, per_gpu, models)) in &p.shared {
            let mode = PoolMode::shared(*mps);
            for m in models {
                let reps = c.workloads[w].replicas as f64;
                let r = self.lp.col(0.0, 0.0, reps, true);
                let t = self.lp.col(0.0, 0.0, reps, true);
                let row = self.lp.row(-INF, 0.0);
                self.lp.set(row, r, 1.0);
                self.lp.set(row, t, -(*per_gpu as f64));
                capacity.entry((m.clone(), mode)).or_default().push(t);
                self.r.insert((w, m.clone()), r);
                self.t.insert((w, m.clone()), t);
            }
        }
        for ((m, mode), ts) in capacity {
            let row = self.lp.row(-INF, 0.0);
            for t in ts {
                self.lp.set(row, t, 1.0);
            }
            for (gi, g) in p.groups.iter().enumerate() {
                if g.model == m {
                    if let Some(&n) = self.n.get(&(gi, mode)) {
                        self.lp.set(row, n, -(g.gpus as f64));
                    }
                }
            }
        }
        for &w in p.shared.keys() {
            self.admit_sum(w);
        }
    }
}
