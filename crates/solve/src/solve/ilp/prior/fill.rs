//! Replicas the previous placement does not hold (a class added or grown, a gang left
//! out of the start), added to the start where its free capacity takes them: highest
//! priority first, larger replicas first within a priority (the classic largest-first
//! rule: small ones fill the gaps large ones leave), a packed replica or node-local gang
//! on the fullest node of a group that still fits it, a multi-node gang on the first
//! nodes of one domain that fit a share each, a MIG or shared replica on a free instance
//! or shared slot, else on one more GPU of a layout with the most instances of its
//! profile (or one more shared GPU), else with an empty node of its model turned to that
//! mode. Every addition is checked against the rows it touches (quotas, ceilings, gang,
//! packing, MIG and sharing rows) and undone when one does not hold.
//!
//! Decision: gangs with a smaller last share are not added (their stage places them); the
//! work is bounded by a number of pattern fits, not a clock, so the start does not depend
//! on the machine.

use super::super::lp::ColId;
use super::super::master::{Master, Objective, partial_size};
use super::super::pattern::{self, Item};
use super::super::priority_value;
use crate::model::PoolMode;
use std::collections::{BTreeMap, BTreeSet};

/// Pattern fits the filling may try in all.
const FITS: usize = 20_000;

/// A change of the start: (column, amount) pairs.
type Delta = Vec<(ColId, f64)>;

/// The start being filled: the solution, its row activities, the fits so far and each
/// gang class's shape.
struct Start<'x> {
    x: &'x mut Vec<f64>,
    act: Vec<f64>,
    fits: usize,
    shape_of: BTreeMap<usize, usize>,
}

/// Adds the replicas `x` does not admit where they fit (see the module docs).
pub(super) fn fill(m: &mut Master, x: &mut Vec<f64>) {
    let c = m.c;
    x.resize(m.lp.cols(), 0.0);
    let mut short: Vec<(i64, i64, usize)> =
        m.a.iter()
            .filter(|(w, a)| x[**a].round() < c.workloads[**w].replicas as f64)
            .map(|(w, _)| {
                let size = super::super::demand_of(m, *w) / c.workloads[*w].replicas.max(1) as f64;
                (
                    -priority_value(c, &c.workloads[*w]),
                    -(size * 1000.0).round() as i64,
                    *w,
                )
            })
            .collect();
    if short.is_empty() {
        return;
    }
    short.sort_unstable();
    let act = m.lp.activity(x);
    let mut st = Start {
        x,
        act,
        fits: 0,
        shape_of: m.p.shape_of(),
    };
    for (_, _, w) in short {
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
    let Some(&si) = st.shape_of.get(&w) else {
        return pooled(m, st, w, a);
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

/// One MIG or shared replica of `w` on a GPU model it may use: on an instance or shared
/// GPU already there, else on one more GPU of a layout holding its profile (MIG) or one
/// more shared GPU, else with one more node of the model in that mode (an empty node of
/// its group).
fn pooled(m: &Master, st: &mut Start, w: usize, a: ColId) -> bool {
    let models: Vec<(String, ColId)> =
        m.r.range((w, String::new())..(w + 1, String::new()))
            .map(|((_, md), c)| (md.clone(), *c))
            .collect();
    for (md, r) in models {
        let base: Delta = vec![(r, 1.0), (a, 1.0)];
        if st.apply(m, &base) {
            return true;
        }
        let (mode, factor, more): (PoolMode, Option<u32>, Vec<ColId>) =
            if let Some((mps, per_gpu, _)) = m.p.shared.get(&w) {
                let t = m.t.get(&(w, md.clone())).copied();
                (
                    PoolMode::shared(*mps),
                    Some(*per_gpu),
                    t.into_iter().collect(),
                )
            } else if let Some(q) = m.p.mig.get(&w).and_then(|per| per.get(&md)) {
                let layouts = m.layouts.get(&md).map(Vec::as_slice).unwrap_or(&[]);
                // Layouts with the most instances of the profile first.
                let mut z: Vec<(usize, usize)> = layouts
                    .iter()
                    .enumerate()
                    .map(|(li, l)| (l.iter().filter(|x| x.name == q.name).count(), li))
                    .filter(|(k, _)| *k > 0)
                    .collect();
                z.sort_by_key(|(k, li)| (std::cmp::Reverse(*k), *li));
                let z = z
                    .into_iter()
                    .filter_map(|(_, li)| m.z.get(&(md.clone(), li)).copied())
                    .collect();
                (PoolMode::Mig, None, z)
            } else {
                continue;
            };
        for col in more {
            let mut d = base.clone();
            d.push((col, 1.0));
            if st.apply(m, &d) {
                return true;
            }
            for (gi, g) in m.p.groups.iter().enumerate() {
                let Some(&n) = m.n.get(&(gi, mode)).filter(|_| g.model == md) else {
                    continue;
                };
                let Some(empty) = m.pattern_col(gi, &[]).filter(|e| st.x[*e] >= 1.0 - 1e-9) else {
                    continue;
                };
                let mut d2 = d.clone();
                d2.extend([(n, 1.0), (empty, -1.0)]);
                if let Some(&nf) = factor.and_then(|f| m.nf.get(&(gi, mode, f))) {
                    d2.push((nf, 1.0));
                }
                if st.apply(m, &d2) {
                    return true;
                }
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
