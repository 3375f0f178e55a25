//! Groups packed by volume: item counts and a volume row instead of pattern columns
//! (see [`Master::volume_exact`]).

use super::super::lp::{ColId, RowId};
use super::super::pattern::Item;
use super::{INF, Master, VolumeCols};
use std::collections::BTreeMap;

impl Master<'_> {
    /// Whether a whole-GPU node of group `g` is packed exactly by volume: its usable GPU
    /// count is a power of two, every item takes a power of two of whole GPUs (an
    /// NVLink-bound gang only when one domain holds every GPU), no item asks for a GPU
    /// fraction or for CPU or memory the node limits, and no node can hold two shares of
    /// one gang shape. Then any item counts whose GPUs add up to at most the nodes' GPUs
    /// fit the nodes (largest first, buddy style), as the old aggregated model assumed,
    /// and counts per group replace patterns.
    pub(crate) fn volume_exact(&self, g: usize) -> bool {
        let shape = &self.p.groups[g].shape;
        let total = shape.gpus();
        if total == 0 || !total.is_power_of_two() || self.items[g].is_empty() {
            return false;
        }
        self.items[g].iter().all(|i| {
            let n = self.need(*i);
            n.gpus > 0
                && n.gpus.is_power_of_two()
                && n.gpus <= total
                && n.milli == 0
                && !shape.cpu_binds(&n)
                && (n.mem == 0 || shape.mem.is_none())
                && (!n.nvlink || shape.domains.len() == 1)
                && match i {
                    Item::Share { .. } => n.gpus * 2 > total,
                    _ => true,
                }
        })
    }

    /// Per-model quota coefficients of the volume count columns (created before the
    /// quota rows).
    pub(super) fn volume_quota_entries(&mut self) {
        let mut add: Vec<(RowId, ColId, f64)> = Vec::new();
        for (g, vc) in &self.volume {
            let model = &self.p.groups[*g].model;
            for (i, col) in &vc.count {
                if let Item::Share { s, .. } | Item::Local { s, .. } = i {
                    if let Some(rows) = self.gang_quota_rows.get(&(*s as usize, model.clone())) {
                        let gpus = self.need(*i).gpus as f64;
                        add.extend(rows.iter().map(|r| (*r, *col, gpus)));
                    }
                }
            }
        }
        for (r, c, v) in add {
            self.lp.set(r, c, v);
        }
    }

    /// Count columns and the volume row of every volume-exact group.
    pub(super) fn volume_groups(&mut self) {
        for g in 0..self.p.groups.len() {
            let Some(conv) = self.conv[g] else { continue };
            if !self.volume_exact(g) {
                continue;
            }
            let size = self.p.groups[g].nodes.len() as f64;
            let total = self.p.groups[g].shape.gpus() as f64;
            let nodes = self.lp.col(0.0, 0.0, size, true);
            self.lp.set(conv, nodes, 1.0);
            let vol = self.lp.row(-INF, 0.0);
            self.lp.set(vol, nodes, -total);
            let mut count = BTreeMap::new();
            for &i in &self.items[g].clone() {
                let gpus = self.need(i).gpus as f64;
                let v = self.lp.col(0.0, 0.0, size * (total / gpus).floor(), true);
                self.lp.set(vol, v, gpus);
                for (r, coef) in self.item_rows(g, i) {
                    self.lp.set(r, v, coef);
                }
                count.insert(i, v);
            }
            self.volume.insert(g, VolumeCols { nodes, count });
        }
    }
}
