//! Pattern columns `λ(g, p)`: their coefficients and values under the duals, adding
//! them (seeded, priced or enriched), and finding them again.

use super::super::lp::{ColId, RowId};
use super::super::pattern::{self, Item, Pattern};
use super::super::pricing;
use super::{KeepKey, Master, Objective, PatternCol, domain, need};
use std::collections::{BTreeMap, BTreeSet};

impl Master<'_> {
    /// Rows (other than the group's convexity row and the "at least j gangs" rows) one
    /// unit of `item` adds to on a node of group `g`, with their coefficients.
    pub(crate) fn item_rows(&self, g: usize, item: Item) -> Vec<(RowId, f64)> {
        let mut out = Vec::with_capacity(2);
        match item {
            Item::Share { s, m, partial } => {
                if let Some(d) = domain(self.p, g, s as usize, m as usize) {
                    if let Some(r) = self.share_row.get(&(s as usize, m as usize, d, partial)) {
                        out.push((*r, 1.0));
                    }
                }
            }
            Item::Local { s, .. } => {
                if let Some(r) = self.gang_row.get(&(s as usize)) {
                    out.push((*r, 1.0));
                }
            }
            Item::Packed { w } => {
                let model = &self.p.groups[g].model;
                if let Some(r) = self.packed_row.get(&(w as usize, model.clone())) {
                    out.push((*r, 1.0));
                }
            }
        }
        if let Item::Share { s, .. } | Item::Local { s, .. } = item {
            let model = &self.p.groups[g].model;
            if let Some(rows) = self.gang_quota_rows.get(&(s as usize, model.clone())) {
                let gpus = self.need(item).gpus as f64;
                out.extend(rows.iter().map(|r| (*r, gpus)));
            }
        }
        if let Some(r) = self.keep_row.get(&(g, KeepKey::of(item))) {
            out.push((*r, -1.0));
        }
        out
    }

    /// The part of a pattern column's reduced cost that does not depend on its items:
    /// `rc(p) = constant - value(p)` with [`pricing::Values::of`].
    pub(crate) fn pattern_constant(&self, g: usize, duals: &[f64]) -> f64 {
        let mut c0 = 0.0;
        if let Some(r) = self.conv[g] {
            c0 -= duals[r];
        }
        if let Some(r) = self.whole_keep_row.get(&g) {
            c0 += duals[*r];
        }
        c0
    }

    /// Item values on group `g` under `duals` (row duals minus the stage cost).
    pub(crate) fn values(&self, g: usize, duals: &[f64], obj: &Objective) -> pricing::Values {
        let mut v = pricing::Values::default();
        for &i in &self.items[g] {
            let dual: f64 = self
                .item_rows(g, i)
                .iter()
                .map(|(r, coef)| duals[*r] * coef)
                .sum();
            v.net.insert(i, dual - self.item_cost(g, i, obj));
            if let Item::Share { s, m, .. } = i {
                v.gr.entry((s, m)).or_insert_with(|| {
                    self.gr_rows(g, s, m)
                        .into_iter()
                        .map(|(j, r)| (j, duals[r]))
                        .collect()
                });
            }
        }
        v
    }

    /// The "at least j gangs" rows of the shares of (shape, mode) on group `g`, by `j`.
    pub(crate) fn gr_rows(&self, g: usize, s: u32, m: u32) -> Vec<(u32, RowId)> {
        let Some(d) = domain(self.p, g, s as usize, m as usize) else {
            return Vec::new();
        };
        self.gr_row
            .range((s as usize, m as usize, d.clone(), 0)..=(s as usize, m as usize, d, u32::MAX))
            .map(|((_, _, _, j), r)| (*j, *r))
            .collect()
    }

    /// Every coefficient of a pattern column of group `g`.
    pub(crate) fn pattern_entries(&self, g: usize, pat: &Pattern) -> Vec<(RowId, f64)> {
        let mut e: Vec<(RowId, f64)> = Vec::new();
        if let Some(r) = self.conv[g] {
            e.push((r, 1.0));
        }
        if let Some(r) = self.whole_keep_row.get(&g) {
            e.push((*r, -1.0));
        }
        let mut shares: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        for (item, k) in &pat.items {
            for (r, v) in self.item_rows(g, *item) {
                e.push((r, v * *k as f64));
            }
            if let Item::Share { s, m, .. } = item {
                *shares.entry((*s, *m)).or_default() += k;
            }
        }
        for ((s, m), k) in shares {
            for (j, r) in self.gr_rows(g, s, m) {
                if k >= j {
                    e.push((r, 1.0));
                }
            }
        }
        e
    }

    /// Adds a pattern column to group `g` unless the same item counts exist; returns
    /// whether it was new.
    pub(crate) fn add_pattern(&mut self, g: usize, pat: Pattern, obj: &Objective) -> Option<ColId> {
        if self.seen[g].contains_key(&pat.items) {
            return None;
        }
        let size = self.p.groups[g].nodes.len() as f64;
        let cost = self.pattern_cost(g, &pat, obj);
        let col = self.lp.col(cost, 0.0, size, true);
        for (r, v) in self.pattern_entries(g, &pat) {
            self.lp.set(r, col, v);
        }
        self.seen[g].insert(pat.items.clone(), self.patterns[g].len());
        self.patterns[g].push(PatternCol { pattern: pat, col });
        Some(col)
    }

    /// The column of group `g`'s pattern with these item counts, if it exists.
    pub(crate) fn pattern_col(&self, g: usize, items: &[(Item, u32)]) -> Option<ColId> {
        self.seen[g].get(items).map(|&i| self.patterns[g][i].col)
    }

    /// Columns that extend the patterns a solution uses with items of workloads it does
    /// not fully admit (one more, two more, ... while they fit), and those items alone:
    /// the integer program over generated columns can then admit what the LP's columns
    /// could only admit fractionally. Returns how many were added.
    pub(crate) fn enrich(&mut self, x: &[f64], obj: &Objective) -> usize {
        let (c, p) = (self.c, self.p);
        let short: BTreeSet<usize> = self
            .a
            .iter()
            .filter(|(w, a)| {
                x.get(**a).copied().unwrap_or(0.0).round() < c.workloads[**w].replicas as f64
            })
            .map(|(w, _)| *w)
            .collect();
        if short.is_empty() {
            return 0;
        }
        let mut added = 0;
        for g in 0..self.patterns.len() {
            let wanted: Vec<Item> = self.items[g]
                .iter()
                .copied()
                .filter(|i| self.item_workloads(*i).iter().any(|w| short.contains(w)))
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let used: Vec<Vec<(Item, u32)>> = self.patterns[g]
                .iter()
                .filter(|pc| x.get(pc.col).copied().unwrap_or(0.0) > 0.5)
                .map(|pc| pc.pattern.items.clone())
                .collect();
            let shape = p.groups[g].shape.clone();
            let need = |i: Item| need(c, p, i);
            let mut fresh: Vec<Pattern> = Vec::new();
            for base in used {
                for &i in &wanted {
                    let mut counts = base.clone();
                    for _ in 0..64 {
                        match counts.iter_mut().find(|(j, _)| *j == i) {
                            Some(e) => e.1 += 1,
                            None => counts.push((i, 1)),
                        }
                        match pattern::fit(&shape, &counts, &need) {
                            Some(pat) => fresh.push(pat),
                            None => break,
                        }
                    }
                }
            }
            for pat in fresh {
                if self.add_pattern(g, pat, obj).is_some() {
                    added += 1;
                }
            }
        }
        added
    }

    /// Initial patterns of group `g`: empty, then each item alone at its largest count,
    /// then (when few) every feasible pattern, so small clusters are solved exactly.
    /// Returns whether every pattern of the group is now a column.
    pub(crate) fn seed_patterns(
        &mut self,
        g: usize,
        obj: &Objective,
        enumerate_up_to: usize,
    ) -> bool {
        if self.conv[g].is_none() || self.volume.contains_key(&g) {
            return true;
        }
        let shape = self.p.groups[g].shape.clone();
        self.add_pattern(g, Pattern::empty(), obj);
        let items = self.items[g].clone();
        let (c, p) = (self.c, self.p);
        let need = |i: Item| need(c, p, i);
        // Each item alone, at the largest count that fits.
        for &i in &items {
            let mut k = 1;
            let mut best = None;
            while let Some(pat) = pattern::fit(&shape, &[(i, k)], &need) {
                best = Some(pat);
                k += 1;
                if k > 4096 {
                    break;
                }
            }
            if let Some(pat) = best {
                self.add_pattern(g, pat, obj);
            }
        }
        if enumerate_up_to > 0 {
            if let Some(all) = pricing::enumerate(&shape, &items, &need, enumerate_up_to) {
                for pat in all {
                    self.add_pattern(g, pat, obj);
                }
                return true;
            }
        }
        items.is_empty()
    }
}
