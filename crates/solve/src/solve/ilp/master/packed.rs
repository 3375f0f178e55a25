//! Packed classes: `a(w)`, `pk(w, model)` and the packed items of the groups whose
//! nodes can hold a replica.

use super::super::pattern::Item;
use super::Master;

impl Master<'_> {
    /// Packed items per group, per-model counts and admission. CPU-only classes are not
    /// in the master: they admit no GPU, and the extraction places them on the CPU and
    /// memory the GPU work leaves.
    pub(super) fn packed_items(&mut self) {
        let (c, p) = (self.c, self.p);
        for (&w, models) in &p.packed {
            let wl = &c.workloads[w];
            let milli = wl.packed_gpu_milli();
            if milli == 0 {
                continue;
            }
            let a = self.lp.col(0.0, 0.0, wl.replicas as f64, true);
            let sum = self.lp.row(0.0, 0.0);
            self.lp.set(sum, a, -1.0);
            self.a.insert(w, a);
            for (gi, g) in p.groups.iter().enumerate() {
                if self.conv[gi].is_none()
                    || (milli > 0 && !models.contains(&g.model))
                    || !c.packed_fits_node(wl, g.nodes[0])
                {
                    continue;
                }
                self.items[gi].push(Item::Packed { w: w as u32 });
                if !self.packed_row.contains_key(&(w, g.model.clone())) {
                    let pk = self.lp.col(0.0, 0.0, wl.replicas as f64, false);
                    self.lp.set(sum, pk, 1.0);
                    let row = self.lp.row(0.0, 0.0);
                    self.lp.set(row, pk, -1.0);
                    self.packed_row.insert((w, g.model.clone()), row);
                    self.pk.insert((w, g.model.clone()), pk);
                }
            }
        }
        for items in &mut self.items {
            items.sort();
            items.dedup();
        }
    }
}
