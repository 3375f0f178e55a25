//! MIG: per GPU model, layouts `z(model, layout)` over the GPUs of its MIG nodes, kept
//! current layouts `k(g, layout)`, replicas `r(w, model)` within the instances the
//! layouts supply, and admission `a(w)` as the sum of a class's replicas.

use super::super::lp::{ColId, RowId};
use super::super::problem::maximal_layouts;
use super::{INF, Master};
use crate::model::PoolMode;
use std::collections::{BTreeMap, BTreeSet};

/// Columns that supply instances of each profile, with their instances per unit.
type Supply = BTreeMap<&'static str, Vec<(ColId, f64)>>;

impl Master<'_> {
    /// The MIG columns and rows of every model some class can use in MIG mode.
    pub(super) fn mig(&mut self) {
        let (c, p) = (self.c, self.p);
        let models: BTreeSet<String> = p.mig.values().flat_map(|m| m.keys().cloned()).collect();
        for m in &models {
            let layouts = maximal_layouts(c, &c.models[m]);
            let gpus_row = self.mig_gpus_row(m);
            let model_gpus: f64 = p
                .groups
                .iter()
                .filter(|g| &g.model == m && !g.fixed_mig)
                .map(|g| (g.nodes.len() as u32 * g.gpus) as f64)
                .sum();
            // Supply per profile: fixed layouts (constants), chosen and kept layouts.
            let fixed_supply = self.fixed_supply(m);
            let mut supply_cols = Supply::new();
            for (li, l) in layouts.iter().enumerate() {
                let v = self.lp.col(0.0, 0.0, model_gpus, true);
                self.lp.set(gpus_row, v, 1.0);
                for q in l {
                    supply_cols.entry(q.name).or_default().push((v, 1.0));
                }
                self.z.insert((m.clone(), li), v);
            }
            self.kept_layouts(m, gpus_row, &mut supply_cols);
            self.mig_replicas(m, &fixed_supply, &supply_cols);
            self.layouts.insert(m.clone(), layouts);
        }
        for &w in p.mig.keys() {
            self.admit_sum(w);
        }
    }

    /// The row of model `m`'s GPUs: the layouts and kept layouts fit on the GPUs of its
    /// MIG nodes and the free GPUs of nodes with fixed layouts.
    fn mig_gpus_row(&mut self, m: &str) -> RowId {
        let (c, p) = (self.c, self.p);
        let mut free_fixed = 0.0;
        let gpus_row = self.lp.row(-INF, 0.0);
        for (gi, g) in p.groups.iter().enumerate() {
            if g.model != m {
                continue;
            }
            if g.fixed_mig {
                free_fixed += g
                    .nodes
                    .iter()
                    .map(|n| {
                        c.nodes[*n]
                            .usable_gpus()
                            .filter(|x| !p.fixed_layouts.contains_key(&(*n, x.index)))
                            .count()
                    })
                    .sum::<usize>() as f64;
            } else if let Some(n) = self.n.get(&(gi, PoolMode::Mig)) {
                self.lp.set(gpus_row, *n, -(g.gpus as f64));
            }
        }
        self.lp.row_hi[gpus_row] = free_fixed;
        gpus_row
    }

    /// Instances of each profile that the fixed layouts on usable GPUs of model `m` hold.
    fn fixed_supply(&self, m: &str) -> BTreeMap<&'static str, f64> {
        let (c, p) = (self.c, self.p);
        let mut fixed_supply: BTreeMap<&'static str, f64> = BTreeMap::new();
        for ((n, gpu), ls) in &p.fixed_layouts {
            if c.nodes[*n]
                .gpus
                .iter()
                .any(|x| x.index == *gpu && x.model.as_deref() == Some(m) && !x.down)
            {
                for q in ls {
                    *fixed_supply.entry(q.name).or_default() += 1.0;
                }
            }
        }
        fixed_supply
    }

    /// Kept current layouts of model `m`'s groups: at most the GPUs that have them on the
    /// group's MIG nodes.
    fn kept_layouts(&mut self, m: &str, gpus_row: RowId, supply_cols: &mut Supply) {
        let p = self.p;
        for (gi, g) in p.groups.iter().enumerate() {
            if g.model != m || g.current.is_empty() {
                continue;
            }
            let Some(&n) = self.n.get(&(gi, PoolMode::Mig)) else {
                continue;
            };
            for (ci, (layout, per_node)) in g.current.iter().enumerate() {
                let per = *per_node as f64;
                let v = self.lp.col(0.0, 0.0, per * g.nodes.len() as f64, true);
                let row = self.lp.row(-INF, 0.0);
                self.lp.set(row, v, 1.0);
                self.lp.set(row, n, -per);
                self.lp.set(gpus_row, v, 1.0);
                for q in layout {
                    supply_cols.entry(q.name).or_default().push((v, 1.0));
                }
                self.k.insert((gi, ci), v);
            }
        }
    }

    /// MIG replicas of model `m` per class, and per profile a row: replicas at most the
    /// instances the fixed, chosen and kept layouts supply.
    fn mig_replicas(
        &mut self,
        m: &str,
        fixed_supply: &BTreeMap<&'static str, f64>,
        supply_cols: &Supply,
    ) {
        let (c, p) = (self.c, self.p);
        let mut demand: BTreeMap<&str, Vec<ColId>> = BTreeMap::new();
        for (&w, per) in &p.mig {
            if let Some(q) = per.get(m) {
                let v = self.lp.col(0.0, 0.0, c.workloads[w].replicas as f64, true);
                demand.entry(q.name).or_default().push(v);
                self.r.insert((w, m.to_string()), v);
            }
        }
        for (q, cols) in demand {
            let row = self
                .lp
                .row(-INF, fixed_supply.get(q).copied().unwrap_or(0.0));
            for v in cols {
                self.lp.set(row, v, 1.0);
            }
            for (v, k) in supply_cols.get(q).map(Vec::as_slice).unwrap_or(&[]) {
                self.lp.set(row, *v, -k);
            }
        }
    }

    /// `a(w) = sum of r(w, model)`.
    pub(super) fn admit_sum(&mut self, w: usize) {
        let a = self
            .lp
            .col(0.0, 0.0, self.c.workloads[w].replicas as f64, true);
        let row = self.lp.row(0.0, 0.0);
        self.lp.set(row, a, -1.0);
        let cols: Vec<ColId> = self
            .r
            .iter()
            .filter(|((rw, _), _)| *rw == w)
            .map(|(_, v)| *v)
            .collect();
        for v in cols {
            self.lp.set(row, v, 1.0);
        }
        self.a.insert(w, a);
    }
}
