//! The stage objectives as column costs.

use super::super::pattern::{Item, Pattern};
use super::{Master, Objective};

/// Cost of reconfiguring one GPU whose current MIG layout is known, in GPUs.
///
/// Decision: a kept GPU costs nothing (it is no change; its instances serve replicas of
/// the same profile), a new layout costs 1 per GPU as before, and a configured GPU that
/// gets another layout (or leaves MIG) costs 0.45 more. So the packer fills free GPUs
/// before it touches configured ones, and among configured GPUs changes the fewest; 0.45
/// is below the 0.5 price ceiling and far above the 0.01 node-mode term, so keeping never
/// buys a worse topology and a configured node stays MIG unless admission needs it.
pub(crate) const RECONFIGURE: f64 = 0.45;

impl Master<'_> {
    /// The stage cost of one unit of `item` on group `g`.
    pub(crate) fn item_cost(&self, g: usize, item: Item, obj: &Objective) -> f64 {
        let Objective::Compact = obj else {
            return 0.0;
        };
        let rel = self.price_rel(&self.p.groups[g].model);
        match item {
            Item::Local { s, m } => {
                let sh = &self.p.shapes[s as usize];
                sh.modes[m as usize].penalty + rel * sh.gpus as f64
            }
            Item::Share { .. } => rel * self.need(item).gpus as f64,
            Item::Packed { .. } => 0.0,
        }
    }

    pub(crate) fn pattern_cost(&self, g: usize, pat: &Pattern, obj: &Objective) -> f64 {
        let items: f64 = pat
            .items
            .iter()
            .map(|(i, k)| self.item_cost(g, *i, obj) * *k as f64)
            .sum();
        items + self.shared_node_cost(g, pat, obj)
    }

    /// Compaction: a node holding fractions the device plugin carries is shared whole
    /// (`model::sharing`): its GPUs no fraction uses are lost to whole-GPU work, 1 each
    /// (as a shared GPU costs), plus the node-mode term; so fractions gather on few
    /// nodes.
    fn shared_node_cost(&self, g: usize, pat: &Pattern, obj: &Objective) -> f64 {
        let Objective::Compact = obj else {
            return 0.0;
        };
        let slotted = pat.items.iter().any(|(i, _)| match i {
            Item::Packed { w } => self.p.slots.contains_key(&(*w as usize)),
            _ => false,
        });
        if !slotted {
            return 0.0;
        }
        let used: std::collections::BTreeSet<u16> = pat.places.iter().flatten().copied().collect();
        let gpus = self.p.groups[g].shape.gpus() as usize;
        gpus.saturating_sub(used.len()) as f64 + 0.01
    }

    /// A model's price relative to the dearest model, times 0.5 (0 without prices).
    pub(crate) fn price_rel(&self, model: &str) -> f64 {
        let max_price = self
            .c
            .models
            .values()
            .filter_map(|m| m.price_per_hour)
            .fold(0.0_f64, f64::max);
        if max_price <= 0.0 {
            return 0.0;
        }
        0.5 * self
            .c
            .models
            .get(model)
            .and_then(|m| m.price_per_hour)
            .unwrap_or(0.0)
            / max_price
    }

    /// Column costs of the current columns under `obj` (minimisation).
    pub(crate) fn costs(&self, obj: &Objective) -> Vec<f64> {
        let mut cost = vec![0.0; self.lp.cols()];
        match obj {
            Objective::Admit {
                ws,
                lower,
                weight,
                guarantee,
            } => {
                for w in ws {
                    for (coef, v) in self.usage(*w, None) {
                        cost[v] -= coef;
                    }
                }
                for w in lower {
                    for (coef, v) in self.usage(*w, None) {
                        cost[v] -= coef * weight;
                    }
                }
                for u in self.u.values() {
                    cost[*u] -= guarantee;
                }
            }
            Objective::Compact => {
                for ((s, m, _), y) in &self.y {
                    cost[*y] += self.p.shapes[*s].modes[*m].penalty;
                }
                for ((model, _), z) in &self.z {
                    cost[*z] += 1.0 + self.price_rel(model);
                }
                for k in self.k.values() {
                    cost[*k] -= RECONFIGURE;
                }
                for ((_, model), t) in &self.t {
                    cost[*t] += 1.0 + self.price_rel(model);
                }
                let groups = self.p.groups.len().max(1) as f64;
                for ((gi, _), n) in &self.n {
                    cost[*n] += 0.01 + 0.001 * self.p.groups[*gi].ord as f64 / groups;
                }
                for (v, reward) in &self.keep {
                    cost[*v] -= reward;
                }
            }
        }
        for (g, pats) in self.patterns.iter().enumerate() {
            for pc in pats {
                cost[pc.col] = self.pattern_cost(g, &pc.pattern, obj);
            }
        }
        for (g, vc) in &self.volume {
            for (i, col) in &vc.count {
                cost[*col] = self.item_cost(*g, *i, obj);
            }
        }
        cost
    }
}
