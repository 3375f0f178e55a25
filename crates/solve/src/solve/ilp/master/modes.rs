//! Pool modes: each group's nodes split between whole-GPU patterns (the group's
//! convexity row) and `n(g, mode)` columns for MIG, time-slice and MPS.

use super::Master;
use crate::model::PoolMode;
use std::collections::BTreeSet;

impl Master<'_> {
    fn modes_needed(&self, model: &str) -> BTreeSet<PoolMode> {
        let (c, p) = (self.c, self.p);
        let mut s = BTreeSet::from([PoolMode::WholeGpu]);
        if p.mig.values().any(|m| m.contains_key(model))
            && c.models.get(model).is_some_and(|m| m.mig.is_some())
        {
            s.insert(PoolMode::Mig);
        }
        for (mps, _, models) in p.shared.values() {
            if models.iter().any(|m| m == model) {
                s.insert(PoolMode::shared(*mps));
            }
        }
        s
    }

    /// Splits each group's nodes between whole-GPU patterns and the other modes.
    pub(super) fn pools(&mut self) {
        for (gi, g) in self.p.groups.iter().enumerate() {
            let modes: Vec<PoolMode> = match g.pinned {
                Some(m) => vec![m],
                None => self.modes_needed(&g.model).into_iter().collect(),
            };
            let size = g.nodes.len() as f64;
            let row = self.lp.row(size, size);
            for mode in modes {
                if mode == PoolMode::WholeGpu {
                    self.conv[gi] = Some(row);
                } else {
                    let v = self.lp.col(0.0, 0.0, size, true);
                    self.lp.set(row, v, 1.0);
                    self.n.insert((gi, mode), v);
                }
            }
        }
    }
}
