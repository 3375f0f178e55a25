//! Replicas the previous placement does not hold (a class added or grown, a gang left
//! out of the start), added to the start where its free capacity takes them: highest
//! priority first, a packed replica or node-local gang on the fullest node of a group
//! that still fits it, a multi-node gang on the first nodes of one domain that fit a
//! share each. Every addition is checked against the rows it touches (quotas, ceilings,
//! gang and packing rows) and undone when one does not hold.
//!
//! Decision: MIG and shared replicas and gangs with a smaller last share are not added
//! (their stages place them); the work is bounded by a number of pattern fits, not a
//! clock, so the start does not depend on the machine.

use super::super::lp::ColId;
use super::super::master::{Master, Objective, partial_size};
use super::super::pattern::{self, Item};
use super::super::priority_value;
use std::collections::BTreeSet;

/// Pattern fits the filling may try in all.
const FITS: usize = 20_000;

/// A change of the start: (column, amount) pairs.
type Delta = Vec<(ColId, f64)>;

/// The start being filled: the solution, its row activities and the fits so far.
struct Start<'x> {
    x: &'x mut Vec<f64>,
    act: Vec<f64>,
    fits: usize,
}

/// Adds the replicas `x` does not admit where they fit (see the module docs).
pub(super) fn fill(m: &mut Master, x: &mut Vec<f64>) {
    let c = m.c;
    let mut short: Vec<(i64, usize)> =
        m.a.iter()
            .filter(|(w, a)| x[**a].round() < c.workloads[**w].replicas as f64)
            .map(|(w, _)| (-priority_value(c, &c.workloads[*w]), *w))
            .collect();
    if short.is_empty() {
        return;
    }
    short.sort_unstable();
    let act = m.lp.activity(x);
    let mut st = Start { x, act, fits: 0 };
    for (_, w) in short {
        let missing = c.workloads[w].replicas as f64 - st.x[m.a[&w]].round();
        for _ in 0..missing as u32 {
            if st.fits >= FITS || !add_one(m, &mut st, w) {
                break;
            }
        }
    }
}

/// Adds one replica of `w`; whether it found room.
fn add_one(m: &mut Master, st: &mut Start, w: usize) -> bool {
    let a = m.a[&w];
    if m.p.packed.contains_key(&w) {
        return on_node(m, st, Item::Packed { w: w as u32 }, a);
    }
    let Some(si) = m.p.shapes.iter().position(|s| s.workloads.contains(&w)) else {
        return false;
    };
    for mi in 0..m.p.shapes[si].modes.len() {
        let local = Item::Local {
            s: si as u32,
            m: mi as u32,
        };
        if on_node(m, st, local, a) {
            return true;
        }
        let domains: Vec<String> =
            m.y.keys()
                .filter(|(s, x, _)| *s == si && *x == mi)
                .map(|(_, _, d)| d.clone())
                .collect();
        for d in domains {
            if gang(m, st, (si, mi, d), a) {
                return true;
            }
        }
    }
    false
}

/// One unit of `item` (a packed replica or a node-local gang) on one node of a group
/// that may hold it, admitted by `a`.
fn on_node(m: &mut Master, st: &mut Start, item: Item, a: ColId) -> bool {
    for gi in 0..m.p.groups.len() {
        if !m.items[gi].contains(&item) {
            continue;
        }
        let mut extra: Delta = vec![(a, 1.0)];
        if let Item::Packed { w } = item {
            let Some(&pk) = m.pk.get(&(w as usize, m.p.groups[gi].model.clone())) else {
                continue;
            };
            extra.push((pk, 1.0));
        }
        if let Some(v) = m.volume.get(&gi) {
            let Some(&col) = v.count.get(&item) else {
                continue;
            };
            extra.push((col, 1.0));
            if st.apply(m, &extra) {
                return true;
            }
            continue;
        }
        for (from, to) in moves(m, st, gi, item) {
            let mut d = vec![(from, -1.0), (to, 1.0)];
            d.extend(extra.iter().copied());
            if st.apply(m, &d) {
                return true;
            }
        }
    }
    false
}

/// The nodes of group `gi` that could take one more `item`: (pattern column they are
/// on, column of that pattern with the item), fullest pattern first (best fit).
fn moves(m: &mut Master, st: &mut Start, gi: usize, item: Item) -> Vec<(ColId, ColId)> {
    let mut used: Vec<(u32, usize)> = m.patterns[gi]
        .iter()
        .enumerate()
        .filter(|(_, pc)| st.x[pc.col] >= 1.0 - 1e-9)
        .map(|(i, pc)| {
            let gpus: u32 = pc
                .pattern
                .items
                .iter()
                .map(|(i, k)| m.need(*i).gpus * k)
                .sum();
            (u32::MAX - gpus, i)
        })
        .collect();
    used.sort_unstable();
    let mut out = Vec::new();
    for (_, i) in used {
        if st.fits >= FITS {
            break;
        }
        let mut items = m.patterns[gi][i].pattern.items.clone();
        match items.iter_mut().find(|(j, _)| *j == item) {
            Some(e) => e.1 += 1,
            None => {
                items.push((item, 1));
                items.sort();
            }
        }
        let from = m.patterns[gi][i].col;
        let to = match m.pattern_col(gi, &items) {
            Some(col) => Some(col),
            None => {
                st.fits += 1;
                let (c, p) = (m.c, m.p);
                let need = |i: Item| super::super::master::need(c, p, i);
                pattern::fit(&p.groups[gi].shape, &items, &need).and_then(|pat| {
                    match m.pattern_col(gi, &pat.items) {
                        Some(col) => Some(col),
                        None => m.add_pattern(gi, pat, &Objective::Compact),
                    }
                })
            }
        };
        if let Some(to) = to {
            st.x.resize(m.lp.cols(), 0.0);
            out.push((from, to));
            // One candidate node per pattern is enough: the first that holds wins.
            if out.len() >= 8 {
                break;
            }
        }
    }
    out
}

/// One multi-node gang of shape `si` in mode `mi` inside domain `d`: a full share on
/// each of `shares` nodes of the domain (distinct nodes, first fit in group order).
fn gang(m: &mut Master, st: &mut Start, (si, mi, d): (usize, usize, String), a: ColId) -> bool {
    let s = &m.p.shapes[si];
    if partial_size(s).is_some() {
        return false;
    }
    let shares = s.shares;
    let mode = s.modes[mi].clone();
    let item = Item::Share {
        s: si as u32,
        m: mi as u32,
        partial: false,
    };
    let mut delta: Delta = Vec::new();
    let mut taken = 0u32;
    let mut seen: BTreeSet<ColId> = BTreeSet::new();
    for gi in 0..m.p.groups.len() {
        if taken >= shares {
            break;
        }
        if !m.items[gi].contains(&item) || m.p.domain_of(&m.p.groups[gi], &mode) != Some(d.clone())
        {
            continue;
        }
        if let Some(v) = m.volume.get(&gi) {
            let Some(&col) = v.count.get(&item) else {
                continue;
            };
            let k = (shares - taken).min(m.p.groups[gi].nodes.len() as u32);
            delta.push((col, k as f64));
            taken += k;
            continue;
        }
        for (from, to) in moves(m, st, gi, item) {
            if taken >= shares || !seen.insert(from) {
                continue;
            }
            let k = (shares - taken).min(st.x[from].floor() as u32);
            delta.push((from, -(k as f64)));
            delta.push((to, k as f64));
            taken += k;
        }
    }
    if taken < shares {
        return false;
    }
    let key = (si, mi, d);
    let y = m.y[&key];
    let after = st.x[y] + 1.0;
    delta.push((y, 1.0));
    delta.push((a, 1.0));
    for ((_, _, _, j), &b) in
        m.b.range((key.0, key.1, key.2.clone(), 0)..=(key.0, key.1, key.2.clone(), u32::MAX))
    {
        if *j as f64 <= after && st.x[b] < 0.5 {
            delta.push((b, 1.0));
        }
    }
    st.apply(m, &delta)
}

impl Start<'_> {
    /// Applies `delta` when every column stays within its bounds and every row it
    /// touches holds; else leaves the start as it was. Whether it applied.
    fn apply(&mut self, m: &Master, delta: &[(ColId, f64)]) -> bool {
        let lp = &m.lp;
        self.x.resize(lp.cols(), 0.0);
        let tol = 1e-6;
        let mut rows: BTreeSet<usize> = BTreeSet::new();
        for &(j, dv) in delta {
            self.x[j] += dv;
            for &(r, a) in &lp.entries[j] {
                self.act[r] += a * dv;
                rows.insert(r);
            }
        }
        let cols: BTreeSet<ColId> = delta.iter().map(|(j, _)| *j).collect();
        let ok = cols
            .iter()
            .all(|&j| self.x[j] >= lp.lo[j] - tol && self.x[j] <= lp.hi[j] + tol)
            && rows
                .iter()
                .all(|&r| self.act[r] >= lp.row_lo[r] - tol && self.act[r] <= lp.row_hi[r] + tol);
        if !ok {
            for &(j, dv) in delta {
                self.x[j] -= dv;
                for &(r, a) in &lp.entries[j] {
                    self.act[r] -= a * dv;
                }
            }
        }
        ok
    }
}
