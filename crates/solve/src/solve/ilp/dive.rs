//! A placement read off the per-GPU relaxation ([`super::relax`]): the dive.
//!
//! The relaxation says, per group, how many GPUs take each *fill* (the fractional
//! replicas of one GPU) and how many whole-GPU replicas the group holds, with the
//! group's CPU and memory pooled. The dive lays those units on the group's real nodes:
//! rounded down, whole-GPU units largest first (fewest free GPUs that hold them), then
//! fills heaviest first (CPU and memory per GPU), each on the node with the most CPU and
//! memory left per free GPU, so that no node runs out of CPU or memory while GPUs are
//! left; pattern groups outside the relaxation keep their rounded-down patterns. What
//! does not fit, and what rounding left out, is then placed replica by replica on the
//! free capacity (highest priority and largest first, best-aligned node), within team
//! ceilings and quotas, and a local search places more of what is still left out where
//! one move, or emptying a node and placing its replicas again, makes room
//! ([`super::improve`]). Every node's layout is checked as the seed's is
//! ([`super::seed::solution_of`]), so the result is a solution of the master: a starting
//! point close to the relaxation's value, which bounds every placement.
//!
//! Decision: only for stages whose demand is all packed (no gangs, MIG or shared GPUs,
//! which the relaxation keeps as the master's own columns): there the relaxation holds
//! every unit of the answer. Otherwise the stage starts from the packed seed as before.

use super::improve;
use super::master::Master;
use super::pattern::{self, Item, Slots};
use super::relax::Solved;
use super::seed::{self, Replicas};
use crate::model::NodeIdx;
use crate::model::ledger::Ledger;
use crate::solve::pack::{self, Bins};
use std::collections::BTreeMap;

/// Whether the dive applies to the master (its demand is all packed).
pub(crate) fn applies(m: &Master) -> bool {
    // DRA nodes keep one class's fractions per GPU, which the relaxation's fills ignore.
    m.p.groups.iter().all(|g| !g.shape.dra)
        && m.p.shapes.is_empty()
        && m.p.mig.is_empty()
        && m.p.shared.is_empty()
        && !m.p.packed.is_empty()
}

/// One unit the relaxation puts on a group: a fill (fractional replicas of one GPU) or
/// one whole-GPU replica.
struct Unit {
    items: Vec<(Item, u32)>,
    gpus: u32,
    cpu: u64,
    mem: u64,
}

/// What is left of one node while units are assigned to it, and its units.
struct Left {
    free: u32,
    cpu: Option<u64>,
    mem: Option<u64>,
    units: Vec<usize>,
}

impl Left {
    fn fits(&self, u: &Unit) -> bool {
        self.free >= u.gpus
            && self.cpu.is_none_or(|c| c >= u.cpu)
            && self.mem.is_none_or(|x| x >= u.mem)
    }

    fn add(&mut self, k: usize, u: &Unit) {
        self.free -= u.gpus;
        self.cpu = self.cpu.map(|c| c - u.cpu);
        self.mem = self.mem.map(|x| x - u.mem);
        self.units.push(k);
    }

    fn remove(&mut self, k: usize, u: &Unit) {
        self.free += u.gpus;
        self.cpu = self.cpu.map(|c| c + u.cpu);
        self.mem = self.mem.map(|x| x + u.mem);
        self.units.retain(|x| *x != k);
    }
}

/// The dive's solution of the master, when it applies and holds.
pub(crate) fn dive(m: &mut Master, s: &Solved) -> Option<Vec<f64>> {
    if !applies(m) {
        return None;
    }
    let mut on = Replicas::new();
    let mut ledger = Ledger::default();
    let mut all_units = rounded(m, s);
    for &g in s.fills.keys() {
        let units = all_units.remove(&g).unwrap_or_default();
        lay(m, g, units, &mut on, &mut ledger);
    }
    patterns(m, s, &mut on, &mut ledger);
    // What is left: the aligned first fit and the best fit both, the one that places
    // more GPU shares kept (measured on openb: neither wins on every list).
    let (mut on2, mut ledger2) = (on.clone(), ledger.clone());
    rest(m, &mut on, &mut ledger, false);
    rest(m, &mut on2, &mut ledger2, true);
    let share = |r: &Replicas| -> u64 {
        r.iter()
            .map(|(w, _, _)| m.c.workloads[*w].packed_gpu_milli())
            .sum()
    };
    if share(&on2) > share(&on) {
        (on, ledger) = (on2, ledger2);
    }
    let on = improve::improve(m, on, ledger);
    let group_of = seed::packed_nodes(m);
    seed::solution_of(m, &on, &group_of)
}

/// The relaxation's units of every relaxed group: rounded down, then (largest
/// fractional part first) one more of a unit while its group's GPUs, CPU and memory
/// and its replicas allow.
fn rounded(m: &Master, s: &Solved) -> BTreeMap<usize, Vec<Unit>> {
    let mut out: BTreeMap<usize, Vec<Unit>> = BTreeMap::new();
    // Replicas each workload has left once the floors are taken.
    let mut left: BTreeMap<usize, i64> =
        m.p.packed
            .keys()
            .map(|w| (*w, m.c.workloads[*w].replicas as i64))
            .collect();
    let mut fractions: Vec<(f64, usize, super::relax::FillItems, u32)> = Vec::new();
    for (&g, fills) in &s.fills {
        let whole = s.whole.get(&g).map(Vec::as_slice).unwrap_or(&[]);
        let units = units(m, fills, whole);
        for u in &units {
            for (i, k) in &u.items {
                if let Some(w) = workload(*i) {
                    *left.entry(w).or_default() -= *k as i64;
                }
            }
        }
        out.insert(g, units);
        for (item, v) in whole {
            let f = v - floor(*v) as f64;
            if f > 1e-6 {
                fractions.push((f, g, vec![(*item, 1)], m.need(*item).gpus));
            }
        }
        for (fill, v) in fills {
            let f = v - floor(*v) as f64;
            if f > 1e-6 {
                fractions.push((f, g, fill.clone(), 1));
            }
        }
    }
    fractions.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for (_, g, items, gpus) in fractions {
        let shape = &m.p.groups[g].shape;
        let size = m.p.groups[g].nodes.len() as u64;
        let units = out.entry(g).or_default();
        let used_gpus: u64 = units.iter().map(|u| u.gpus as u64).sum();
        let used_cpu: u64 = units.iter().map(|u| u.cpu).sum();
        let used_mem: u64 = units.iter().map(|u| u.mem).sum();
        let u = unit_of(m, items, gpus);
        let fits = used_gpus + gpus as u64 <= size * shape.gpus() as u64
            && shape.cpu.is_none_or(|c| used_cpu + u.cpu <= c * size)
            && shape.mem.is_none_or(|x| used_mem + u.mem <= x * size)
            && u.items.iter().all(|(i, k)| {
                workload(*i).is_some_and(|w| left.get(&w).copied().unwrap_or(0) >= *k as i64)
            });
        if fits {
            for (i, k) in &u.items {
                if let Some(w) = workload(*i) {
                    *left.entry(w).or_default() -= *k as i64;
                }
            }
            units.push(u);
        }
    }
    out
}

/// The unit holding `items` on `gpus` GPUs.
fn unit_of(m: &Master, items: Vec<(Item, u32)>, gpus: u32) -> Unit {
    let (mut cpu, mut mem) = (0, 0);
    for (i, k) in &items {
        let n = m.need(*i);
        cpu += n.cpu * *k as u64;
        mem += n.mem * *k as u64;
    }
    Unit {
        items,
        gpus,
        cpu,
        mem,
    }
}

/// The relaxation's units of one group, rounded down.
fn units(m: &Master, fills: &[(Vec<(Item, u32)>, f64)], whole: &[(Item, f64)]) -> Vec<Unit> {
    let mut out = Vec::new();
    let unit = |items: Vec<(Item, u32)>, gpus: u32| unit_of(m, items, gpus);
    for (item, v) in whole {
        let gpus = m.need(*item).gpus;
        for _ in 0..floor(*v) {
            out.push(unit(vec![(*item, 1)], gpus));
        }
    }
    for (fill, v) in fills {
        for _ in 0..floor(*v) {
            out.push(unit(fill.clone(), 1));
        }
    }
    out
}

/// An LP value rounded down (within the solver's tolerance).
fn floor(v: f64) -> u64 {
    (v + 1e-6).floor().max(0.0) as u64
}

/// Lays `units` on the nodes of group `g` (see the module docs); appends the replicas
/// placed to `on`.
fn lay(m: &Master, g: usize, mut units: Vec<Unit>, on: &mut Replicas, ledger: &mut Ledger) {
    let group = &m.p.groups[g];
    let shape = &group.shape;
    let caps = (
        shape.cpu.unwrap_or(0).max(1) as f64,
        shape.mem.unwrap_or(0).max(1) as f64,
    );
    let weight = |u: &Unit| (u.cpu as f64 / caps.0 + u.mem as f64 / caps.1) / u.gpus.max(1) as f64;
    // Whole-GPU units largest first, then the heaviest per GPU; ties in list order.
    units.sort_by(|a, b| b.gpus.cmp(&a.gpus).then(weight(b).total_cmp(&weight(a))));
    let model = group.model.clone();
    // Units the team's ceilings and quotas admit, in that order.
    let units: Vec<Unit> = units
        .into_iter()
        .filter(|u| {
            let ok = u
                .items
                .iter()
                .all(|(i, k)| admits(m, ledger, *i, *k, &model));
            if ok {
                for (i, k) in &u.items {
                    for _ in 0..*k {
                        if let Some(w) = workload(*i) {
                            seed::add(ledger, m, w, &model);
                        }
                    }
                }
            }
            ok
        })
        .collect();
    let mut nodes: Vec<Left> = group
        .nodes
        .iter()
        .map(|_| Left {
            free: shape.gpus(),
            cpu: shape.cpu,
            mem: shape.mem,
            units: Vec::new(),
        })
        .collect();
    let mut failed = assign(&mut nodes, &units, caps);
    failed.retain(|&k| !repair(&mut nodes, &units, k));
    for (j, l) in nodes.iter().enumerate() {
        let n = group.nodes[j];
        match realize(m, g, n, l, &units) {
            Some(placed) => on.extend(placed),
            None => failed.extend(l.units.iter().copied()),
        }
    }
    // What was not laid goes back to the ledger: `rest` places it replica by replica.
    for k in failed {
        for (i, c) in &units[k].items {
            for _ in 0..*c {
                if let Some(w) = workload(*i) {
                    seed::remove(ledger, m, w, &model);
                }
            }
        }
    }
}

/// Assigns units to nodes; returns the units that fit none. Whole-GPU units of more
/// than one GPU first, each on the node with the fewest free GPUs that holds it; then
/// node by node, the set of units that fills the node best ([`best_set`]: most GPUs,
/// then most of its CPU and memory), a minimum-bin-slack rule that keeps heavy units
/// from being spread until none fits anywhere.
fn assign(nodes: &mut [Left], units: &[Unit], caps: (f64, f64)) -> Vec<usize> {
    let mut failed = Vec::new();
    let mut left: Vec<usize> = Vec::new();
    for (k, u) in units.iter().enumerate() {
        if u.gpus > 1 {
            match choose(nodes, u, caps) {
                Some(j) => nodes[j].add(k, u),
                None => failed.push(k),
            }
        } else {
            left.push(k);
        }
    }
    // Identical units as one kind with a count, heaviest first.
    let mut kinds: Vec<(Vec<usize>, &Unit)> = Vec::new();
    for k in left {
        match kinds.iter_mut().find(|(_, u)| same(u, &units[k])) {
            Some((ks, _)) => ks.push(k),
            None => kinds.push((vec![k], &units[k])),
        }
    }
    for l in nodes.iter_mut() {
        if l.free == 0 || kinds.iter().all(|(ks, _)| ks.is_empty()) {
            continue;
        }
        let counts: Vec<u32> = kinds.iter().map(|(ks, _)| ks.len() as u32).collect();
        let types: Vec<&Unit> = kinds.iter().map(|(_, u)| *u).collect();
        let take = best_set(l, &types, &counts, caps);
        for (t, n) in take.iter().enumerate() {
            for _ in 0..*n {
                if let Some(k) = kinds[t].0.pop() {
                    l.add(k, &units[k]);
                }
            }
        }
    }
    failed.extend(kinds.into_iter().flat_map(|(ks, _)| ks));
    failed
}

/// Whether two units hold the same items on the same GPUs.
fn same(a: &Unit, b: &Unit) -> bool {
    a.gpus == b.gpus && a.items == b.items
}

/// How many of each unit kind (at most `counts`) node `l` should take: the most GPUs,
/// then the most CPU and memory used (shares of the node's), by a depth-first search
/// over the kinds (heaviest first) within [`SET_BUDGET`] steps.
fn best_set(l: &Left, types: &[&Unit], counts: &[u32], (cap_c, cap_m): (f64, f64)) -> Vec<u32> {
    struct S<'a> {
        types: &'a [&'a Unit],
        counts: &'a [u32],
        order: Vec<usize>,
        cur: Vec<u32>,
        best: (u32, f64),
        best_take: Vec<u32>,
        budget: u32,
        caps: (f64, f64),
    }
    impl S<'_> {
        fn util(&self, u: &Unit) -> f64 {
            u.cpu as f64 / self.caps.0 + u.mem as f64 / self.caps.1
        }
        fn go(&mut self, i: usize, free: u32, cpu: Option<u64>, mem: Option<u64>, got: (u32, f64)) {
            if got.0 > self.best.0 || (got.0 == self.best.0 && got.1 > self.best.1 + 1e-12) {
                self.best = got;
                self.best_take = self.cur.clone();
            }
            if i == self.order.len() || free == 0 || self.budget == 0 {
                return;
            }
            // Every free GPU used, and at most all the CPU and memory left.
            let room = cpu.map_or(1.0, |c| c as f64 / self.caps.0)
                + mem.map_or(1.0, |x| x as f64 / self.caps.1);
            let reach = (got.0 + free, got.1 + room);
            if reach.0 < self.best.0 || (reach.0 == self.best.0 && reach.1 <= self.best.1 + 1e-12) {
                return;
            }
            self.budget -= 1;
            let t = self.order[i];
            let u = self.types[t];
            let most = self.counts[t]
                .min(free / u.gpus.max(1))
                .min(cpu.map_or(u32::MAX, |c| {
                    c.checked_div(u.cpu).map_or(u32::MAX, |k| k as u32)
                }))
                .min(mem.map_or(u32::MAX, |x| {
                    x.checked_div(u.mem).map_or(u32::MAX, |k| k as u32)
                }));
            let util = self.util(u);
            for k in (0..=most).rev() {
                self.cur[t] = k;
                self.go(
                    i + 1,
                    free - k * u.gpus,
                    cpu.map(|c| c - k as u64 * u.cpu),
                    mem.map(|x| x - k as u64 * u.mem),
                    (got.0 + k * u.gpus, got.1 + k as f64 * util),
                );
            }
            self.cur[t] = 0;
        }
    }
    let mut order: Vec<usize> = (0..types.len()).filter(|&t| counts[t] > 0).collect();
    let util = |u: &Unit| u.cpu as f64 / cap_c + u.mem as f64 / cap_m;
    order.sort_by(|&a, &b| util(types[b]).total_cmp(&util(types[a])).then(a.cmp(&b)));
    let mut s = S {
        types,
        counts,
        order,
        cur: vec![0; types.len()],
        best: (0, 0.0),
        best_take: vec![0; types.len()],
        budget: SET_BUDGET,
        caps: (cap_c, cap_m),
    };
    s.go(0, l.free, l.cpu, l.mem, (0, 0.0));
    s.best_take
}

/// Steps the search of one node's best set may take.
const SET_BUDGET: u32 = 20_000;

/// Makes room for unit `k` that fits no node, within [`REPAIR_BUDGET`] checks: moves
/// one laid unit `v` from a node `j` to a node `t` it fits, when `k` then fits `j`; or
/// swaps a unit `v` of a node `j` that has free GPUs with a lighter unit `x` of another
/// node `t` (same GPUs), when both nodes then hold what they get and `k` fits `j`.
/// Returns whether `k` was laid.
fn repair(nodes: &mut [Left], units: &[Unit], k: usize) -> bool {
    let u = &units[k];
    let open: Vec<usize> = (0..nodes.len()).filter(|&t| nodes[t].free > 0).collect();
    let mut budget = REPAIR_BUDGET;
    for j in 0..nodes.len() {
        for vi in 0..nodes[j].units.len() {
            let v = nodes[j].units[vi];
            let vu = &units[v];
            // `k` fits `j` once `v` is gone?
            if !fits_after(&nodes[j], &[vu], &[], u) {
                continue;
            }
            let Some(&t) = open.iter().find(|&&t| t != j && nodes[t].fits(vu)) else {
                continue;
            };
            nodes[j].remove(v, vu);
            nodes[t].add(v, vu);
            nodes[j].add(k, u);
            return true;
        }
    }
    for &j in &open {
        if nodes[j].free < u.gpus {
            continue;
        }
        for vi in 0..nodes[j].units.len() {
            let v = nodes[j].units[vi];
            let vu = &units[v];
            for t in (0..nodes.len()).filter(|&t| t != j) {
                for xi in 0..nodes[t].units.len() {
                    if budget == 0 {
                        return false;
                    }
                    budget -= 1;
                    let x = nodes[t].units[xi];
                    let xu = &units[x];
                    if xu.gpus != vu.gpus
                        || !fits_after(&nodes[j], &[vu], &[xu], u)
                        || !fits_after(&nodes[t], &[xu], &[], vu)
                    {
                        continue;
                    }
                    nodes[j].remove(v, vu);
                    nodes[t].remove(x, xu);
                    nodes[j].add(x, xu);
                    nodes[t].add(v, vu);
                    nodes[j].add(k, u);
                    return true;
                }
            }
        }
    }
    false
}

/// Checks one failed unit's repair may make (a bound on its work).
const REPAIR_BUDGET: u32 = 200_000;

/// Whether `u` fits node `l` once the units `out` left it and `into` joined it.
fn fits_after(l: &Left, out: &[&Unit], into: &[&Unit], u: &Unit) -> bool {
    let sum = |xs: &[&Unit], f: fn(&Unit) -> u64| xs.iter().map(|x| f(x)).sum::<u64>();
    let gpus = |x: &Unit| x.gpus as u64;
    let free = l.free as u64 + sum(out, gpus);
    let ok = |left: Option<u64>, f: fn(&Unit) -> u64| {
        left.is_none_or(|c| c + sum(out, f) >= sum(into, f) + f(u))
    };
    free >= sum(into, gpus) + u.gpus as u64 && ok(l.cpu, |x| x.cpu) && ok(l.mem, |x| x.mem)
}

/// Whether the ledger admits `k` more replicas of `item` on `model`.
fn admits(m: &Master, ledger: &Ledger, item: Item, k: u32, model: &str) -> bool {
    match item {
        Item::Packed { w } => {
            let mut trial = ledger.clone();
            (0..k).all(|_| {
                let ok = seed::admits(&trial, m, w as usize, model);
                seed::add(&mut trial, m, w as usize, model);
                ok
            })
        }
        _ => false,
    }
}

/// The node a unit goes to: for a whole-GPU unit the one with the fewest free GPUs that
/// hold it, for a fill the one with the most CPU and memory left per free GPU after it;
/// ties to the first.
fn choose(nodes: &[Left], u: &Unit, (cap_c, cap_m): (f64, f64)) -> Option<usize> {
    let slack = |l: &Left| {
        let c = l.cpu.map_or(1.0, |c| (c - u.cpu) as f64 / cap_c);
        let x = l.mem.map_or(1.0, |x| (x - u.mem) as f64 / cap_m);
        c.min(x) / (l.free - u.gpus).max(1) as f64
    };
    let mut best: Option<(usize, f64)> = None;
    for (k, l) in nodes.iter().enumerate().filter(|(_, l)| l.fits(u)) {
        let score = if u.gpus > 1 {
            -(l.free as f64) + slack(l) * 1e-3
        } else {
            slack(l)
        };
        if best.is_none_or(|(_, s)| score > s + 1e-12) {
            best = Some((k, score));
        }
    }
    best.map(|(k, _)| k)
}

/// The replicas of node `n`'s units, laid on its GPUs: whole-GPU units on the first
/// free positions of the fullest domain that holds them, each fill on a free position
/// of its own. `None` when the node's layout refuses them (its sharing).
fn realize(m: &Master, g: usize, n: NodeIdx, l: &Left, units: &[Unit]) -> Option<Replicas> {
    let positions = pattern::positions(m.c, n);
    let mut slots = Slots::all(&m.p.groups[g].shape);
    let mut out = Replicas::new();
    let mut order = l.units.clone();
    order.sort_by_key(|&k| std::cmp::Reverse((units[k].gpus, units[k].items.len() == 1)));
    for k in order {
        let u = &units[k];
        if u.items.len() == 1 && m.need(u.items[0].0).milli == 0 {
            let (item, _) = u.items[0];
            let want = u.gpus as usize;
            let d = (0..slots.free.len())
                .filter(|&d| slots.free[d].len() >= want)
                .min_by_key(|&d| (slots.free[d].len(), d));
            let at: Vec<u16> = match d {
                Some(d) => slots.free[d][..want].to_vec(),
                None => slots.free.iter().flatten().copied().take(want).collect(),
            };
            if at.len() != want || !slots.take(&at) {
                return None;
            }
            out.push((workload(item)?, n, gpu_indexes(&positions, &at)));
        } else {
            let at = slots
                .free
                .iter()
                .filter(|d| !d.is_empty())
                .min_by_key(|d| d.len())?
                .first()
                .copied()?;
            for (item, c) in &u.items {
                let need = m.need(*item);
                for _ in 0..*c {
                    if !slots.add_fraction(at, &need) {
                        return None;
                    }
                    out.push((workload(*item)?, n, gpu_indexes(&positions, &[at])));
                }
            }
        }
    }
    Some(out)
}

fn workload(item: Item) -> Option<usize> {
    match item {
        Item::Packed { w } => Some(w as usize),
        _ => None,
    }
}

/// The GPU indexes of positions `at` on a node whose positions are `positions`.
fn gpu_indexes(positions: &[u32], at: &[u16]) -> Vec<u32> {
    at.iter()
        .filter_map(|p| positions.get(*p as usize).copied())
        .collect()
}

/// Groups the relaxation keeps as node patterns: each pattern on as many nodes as its
/// value rounded down (then, largest fractional part first, one more while nodes are
/// left), in node order.
fn patterns(m: &Master, s: &Solved, on: &mut Replicas, ledger: &mut Ledger) {
    let mut left: BTreeMap<usize, u32> =
        m.p.packed
            .keys()
            .map(|w| (*w, m.c.workloads[*w].replicas))
            .collect();
    for (w, _, _) in on.iter() {
        if let Some(x) = left.get_mut(w) {
            *x = x.saturating_sub(1);
        }
    }
    for (&g, used) in &s.nodes {
        let model = m.p.groups[g].model.clone();
        let size = m.p.groups[g].nodes.len() as u64;
        let mut count: Vec<(u64, usize)> = used
            .iter()
            .enumerate()
            .map(|(k, (_, v))| (floor(*v), k))
            .collect();
        let mut taken: u64 = count.iter().map(|(c, _)| c).sum();
        let mut by_part: Vec<usize> = (0..used.len()).collect();
        by_part.sort_by(|&a, &b| {
            let part = |k: usize| used[k].1 - floor(used[k].1) as f64;
            part(b).total_cmp(&part(a)).then(a.cmp(&b))
        });
        for k in by_part {
            let part = used[k].1 - floor(used[k].1) as f64;
            if taken < size && part > 1e-6 {
                count[k].0 += 1;
                taken += 1;
            }
        }
        let mut nodes = m.p.groups[g].nodes.iter();
        for (c, k) in count {
            let pat = &used[k].0;
            if pat.items.is_empty() {
                continue;
            }
            for _ in 0..c {
                let ok = pat.items.iter().all(|(i, n)| {
                    workload(*i).is_some_and(|w| left.get(&w).copied().unwrap_or(0) >= *n)
                        && admits(m, ledger, *i, *n, &model)
                });
                if !ok {
                    break;
                }
                for (i, n) in &pat.items {
                    if let Some(x) = workload(*i).and_then(|w| left.get_mut(&w)) {
                        *x -= n;
                    }
                }
                let Some(&n) = nodes.next() else { break };
                let positions = pattern::positions(m.c, n);
                let mut places = pat.places.iter();
                for (i, k) in &pat.items {
                    for _ in 0..*k {
                        let (Some(w), Some(at)) = (workload(*i), places.next()) else {
                            continue;
                        };
                        seed::add(ledger, m, w, &model);
                        on.push((w, n, gpu_indexes(&positions, at)));
                    }
                }
            }
        }
    }
}

/// The replicas the units left out, placed one by one on the free capacity (highest
/// priority and largest first, best-aligned node), within the ledger; a replica that
/// fits nowhere ends its class.
fn rest(m: &Master, on: &mut Replicas, ledger: &mut Ledger, best_fit: bool) {
    let c = m.c;
    let group_of = seed::packed_nodes(m);
    let nodes: Vec<NodeIdx> = group_of.keys().copied().collect();
    let mut a = crate::solve::Assignment::default();
    let mut placed: BTreeMap<usize, u32> = BTreeMap::new();
    for (w, n, gpus) in on.iter() {
        a.packed.push((*w, *n, gpus.clone(), 1));
        *placed.entry(*w).or_default() += 1;
    }
    let mut bins = Bins::new(c, &a, nodes.iter().copied());
    for w in pack::largest_first(c, m.p.packed.keys().copied()) {
        if !m.a.contains_key(&w) {
            continue;
        }
        let candidates = seed::candidates(m, &group_of, w);
        let left = c.workloads[w].replicas - placed.get(&w).copied().unwrap_or(0);
        for _ in 0..left {
            let placed = if best_fit {
                bins.place_best_fit_in(c, w, |n| candidates.binary_search(&n).is_ok())
            } else {
                bins.place(c, w, &candidates)
            };
            let Some((n, gpus)) = placed else {
                break;
            };
            let model = m.p.groups[group_of[&n]].model.clone();
            if !seed::admits(ledger, m, w, &model) {
                bins.give_back(c, w, n, &gpus);
                break;
            }
            seed::add(ledger, m, w, &model);
            on.push((w, n, gpus));
        }
    }
}
