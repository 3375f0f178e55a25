//! Keep variables (minimal moves): bounded by what a previous placement held and by what
//! the plan puts there now, rewarded by the compaction stage (see [`super::super::keep`]).

use super::super::lp::{ColId, RowId};
use super::super::pattern::{self, Item};
use super::{INF, KeepKey, Master, Objective, need};

impl Master<'_> {
    /// A keep variable `0 <= v <= held`, `v <= sum(terms)`, rewarded `reward` per unit in
    /// the compaction stage.
    pub(crate) fn add_keep(&mut self, held: f64, reward: f64, terms: &[(f64, ColId)]) -> RowId {
        let v = self.lp.col(0.0, 0.0, held, false);
        let row = self.lp.row(-INF, 0.0);
        self.lp.set(row, v, 1.0);
        for (coef, c) in terms {
            self.lp.set(row, *c, -coef);
        }
        self.keep.push((v, reward));
        row
    }

    /// Keep variables for the node items of `key` on group `g`, one per workload that
    /// held some there: each at most what it held, together at most the items the
    /// group's patterns hold (now and when generated later), and per workload at most
    /// `per_replica` units per admitted replica. So a class that loses replicas loses
    /// them where its keep is cheapest, and the nodes of the replicas it keeps stay.
    pub(crate) fn add_item_keep(
        &mut self,
        g: usize,
        key: KeepKey,
        held: &[(usize, f64, f64)],
        per_replica: f64,
    ) {
        let row = self.lp.row(-INF, 0.0);
        for pc in &self.patterns[g] {
            let k: u32 = pc
                .pattern
                .items
                .iter()
                .filter(|(i, _)| KeepKey::of(*i) == key)
                .map(|(_, k)| *k)
                .sum();
            if k > 0 {
                self.lp.set(row, pc.col, -(k as f64));
            }
        }
        if let Some(vc) = self.volume.get(&g) {
            for (i, col) in &vc.count {
                if KeepKey::of(*i) == key {
                    self.lp.set(row, *col, -1.0);
                }
            }
        }
        self.keep_row.insert((g, key), row);
        for &(w, h, reward) in held {
            let Some(&a) = self.a.get(&w) else { continue };
            let v = self.lp.col(0.0, 0.0, h, false);
            self.lp.set(row, v, 1.0);
            let admit = match self.keep_admit_row.get(&w) {
                Some(r) => *r,
                None => {
                    let r = self.lp.row(-INF, 0.0);
                    self.lp.set(r, a, -per_replica);
                    self.keep_admit_row.insert(w, r);
                    r
                }
            };
            self.lp.set(admit, v, 1.0);
            self.keep.push((v, reward));
        }
    }

    /// A keep variable for the whole-GPU nodes of group `g`: at most `held`, at most the
    /// nodes on pattern columns (those generated later enter the row too).
    pub(crate) fn add_whole_keep(&mut self, g: usize, held: f64, reward: f64) {
        let v = self.lp.col(0.0, 0.0, held, false);
        let row = self.lp.row(-INF, 0.0);
        self.lp.set(row, v, 1.0);
        for pc in &self.patterns[g] {
            self.lp.set(row, pc.col, -1.0);
        }
        if let Some(vc) = self.volume.get(&g) {
            self.lp.set(row, vc.nodes, -1.0);
        }
        self.whole_keep_row.insert(g, row);
        self.keep.push((v, reward));
    }

    /// A keep variable for `held` nodes of group `g` that held pattern `q`: at most the
    /// nodes on `q`'s column (added when it fits, as the previous placement shows).
    pub(crate) fn add_pattern_keep(&mut self, g: usize, q: &[(Item, u32)], held: f64, reward: f64) {
        if self.volume.contains_key(&g) {
            return; // no patterns: the item keep rows and the extraction keep nodes
        }
        let (c, p) = (self.c, self.p);
        let Some(pat) = pattern::fit(&p.groups[g].shape, q, &|i| need(c, p, i)) else {
            return;
        };
        let col = match self.seen[g].get(&pat.items) {
            Some(&i) => self.patterns[g][i].col,
            None => match self.add_pattern(g, pat, &Objective::Compact) {
                Some(col) => col,
                None => return,
            },
        };
        let row = self.add_keep(held, reward, &[(1.0, col)]);
        self.pattern_keep_rows.push((g, row));
    }
}
