//! A bound for groups with fractional packed classes, where node patterns are hard to
//! price exactly (a knapsack over GPUs, CPU and memory per node).
//!
//! The relaxation keeps each GPU exact and the node's CPU and memory per group: a
//! group's whole-GPU nodes hold item counts (whole-GPU items) and *GPU fills* (the
//! fractional replicas of one GPU, at most 100%), with the group's GPUs, CPU and memory
//! as capacities. Every node placement gives such a solution, so this LP (with every
//! fill) bounds every placement; fills are priced exactly by a one-dimensional knapsack,
//! so column generation converges fast. Everything else is the master as it is (rows,
//! locks, stage costs); the master's node patterns of these groups are switched off.

use super::lp::{ColId, Live, Lp, RowId, Status};
use super::master::{Master, Objective};
use super::pattern::Item;
use std::collections::BTreeMap;

const INF: f64 = f64::INFINITY;

/// The fills found so far, per group (kept between stages).
#[derive(Clone, Debug, Default)]
pub struct Pool {
    pub fills: BTreeMap<usize, Vec<Vec<(Item, u32)>>>,
}

/// The groups the relaxation replaces: pattern groups holding fractional items.
pub fn groups(m: &Master) -> Vec<usize> {
    (0..m.p.groups.len())
        .filter(|g| {
            !m.volume.contains_key(g)
                && !m.patterns[*g].is_empty()
                && m.items[*g].iter().any(|i| m.need(*i).milli > 0)
        })
        .collect()
}

/// Rows of one relaxed group.
struct Caps {
    gpu: RowId,
    cpu: Option<RowId>,
    mem: Option<RowId>,
}

/// A valid lower bound (minimisation) on the stage's optimum: the relaxed LP solved by
/// column generation over fills; `NEG_INFINITY` when it cannot be solved in time.
pub fn bound(m: &Master, obj: &Objective, pool: &mut Pool, deadline: std::time::Instant) -> f64 {
    let gs = groups(m);
    if gs.is_empty() {
        return f64::NEG_INFINITY;
    }
    let mut lp: Lp = m.lp.clone();
    // Rows tied to a single pattern column (kept previous patterns) are relaxed.
    for (g, row) in &m.pattern_keep_rows {
        if gs.contains(g) {
            lp.row_hi[*row] = INF;
        }
    }
    let mut caps: BTreeMap<usize, Caps> = BTreeMap::new();
    for &g in &gs {
        let cp = relax_group(&mut lp, m, g, obj, pool);
        caps.insert(g, cp);
    }
    generate(lp, m, obj, pool, &caps, deadline)
}

/// Replaces group `g`'s pattern columns in `lp`: its whole-GPU nodes, their GPU, CPU and
/// memory rows, a column per whole-GPU item and one per fill in the pool (the fills of
/// the group's patterns added first).
fn relax_group(lp: &mut Lp, m: &Master, g: usize, obj: &Objective, pool: &mut Pool) -> Caps {
    for pc in &m.patterns[g] {
        lp.hi[pc.col] = 0.0;
    }
    let shape = &m.p.groups[g].shape;
    let size = m.p.groups[g].nodes.len() as f64;
    let w = lp.col(0.0, 0.0, size, false);
    if let Some(r) = m.conv_row(g) {
        lp.set(r, w, 1.0);
    }
    if let Some(r) = m.whole_keep_row(g) {
        lp.set(r, w, -1.0);
    }
    let gpu = lp.row(-INF, 0.0);
    lp.set(gpu, w, -(shape.gpus() as f64));
    let cpu = shape.cpu.map(|c| {
        let r = lp.row(-INF, 0.0);
        lp.set(r, w, -(c as f64));
        r
    });
    let mem = shape.mem.map(|c| {
        let r = lp.row(-INF, 0.0);
        lp.set(r, w, -(c as f64));
        r
    });
    let cp = Caps { gpu, cpu, mem };
    for &i in &m.items[g] {
        if m.need(i).milli == 0 {
            let entries = entries(m, g, &cp, &[(i, 1)]);
            let col = lp.col(m.item_cost(g, i, obj), 0.0, INF, false);
            for (r, v) in entries {
                lp.set(r, col, v);
            }
        }
    }
    seed_fills(m, g, pool);
    for f in pool.fills.get(&g).cloned().unwrap_or_default() {
        add_fill(lp, m, g, &cp, &f, obj);
    }
    cp
}

/// Column generation over fills on the relaxed `lp` of the groups in `caps`, until no
/// fill improves or the deadline passes; the LP value plus the Lasdon term.
fn generate(
    mut lp: Lp,
    m: &Master,
    obj: &Objective,
    pool: &mut Pool,
    caps: &BTreeMap<usize, Caps>,
    deadline: std::time::Instant,
) -> f64 {
    let mut live = Live::new(&lp, false);
    loop {
        let sol = live.run(false);
        if sol.status != Status::Optimal {
            return f64::NEG_INFINITY;
        }
        let out_of_time = std::time::Instant::now() > deadline;
        let mut added = 0;
        // Lasdon: a group's fills use at most its GPUs, so no column can improve the
        // objective by more than (GPUs) x (its reduced cost): a valid bound at any round.
        let mut lasdon = 0.0;
        for (&g, cp) in caps {
            let (value, fill) = best_fill(m, g, cp, &sol.duals, obj);
            // rc = -value - dual(gpu row).
            let rc = -value - sol.duals[cp.gpu];
            let gpus = (m.p.groups[g].nodes.len() * m.p.groups[g].shape.gpus() as usize) as f64;
            lasdon += gpus * rc.min(0.0);
            if rc < -1e-7 && !out_of_time {
                let col = add_fill(&mut lp, m, g, cp, &fill, obj);
                live.add_col(lp.cost[col], lp.lo[col], lp.hi[col], &lp.entries[col]);
                pool.fills.entry(g).or_default().push(fill);
                added += 1;
            }
        }
        if added == 0 {
            return sol.objective + lasdon;
        }
    }
}

/// Adds to the pool the fills of every GPU of the group's node patterns: then every
/// solution of the master is one of this relaxation too, so it is feasible whenever the
/// master is (replica counts locked by earlier stages included).
fn seed_fills(m: &Master, g: usize, pool: &mut Pool) {
    let fills = pool.fills.entry(g).or_default();
    let mut seen: std::collections::BTreeSet<Vec<(Item, u32)>> = fills.iter().cloned().collect();
    for pc in &m.patterns[g] {
        let mut per_gpu: BTreeMap<u16, BTreeMap<Item, u32>> = BTreeMap::new();
        let mut places = pc.pattern.places.iter();
        for (item, k) in &pc.pattern.items {
            for _ in 0..*k {
                let Some(at) = places.next() else { break };
                if m.need(*item).milli > 0 {
                    if let Some(gpu) = at.first() {
                        *per_gpu.entry(*gpu).or_default().entry(*item).or_default() += 1;
                    }
                }
            }
        }
        for fill in per_gpu.into_values() {
            let fill: Vec<(Item, u32)> = fill.into_iter().collect();
            if seen.insert(fill.clone()) {
                fills.push(fill);
            }
        }
    }
}

/// Coefficients of a column holding `items` (counts) on group `g`: the items' own rows
/// and the group's CPU and memory rows.
fn entries(m: &Master, g: usize, cp: &Caps, items: &[(Item, u32)]) -> Vec<(RowId, f64)> {
    let mut out: BTreeMap<RowId, f64> = BTreeMap::new();
    for (i, k) in items {
        let n = m.need(*i);
        let k = *k as f64;
        for (r, v) in m.item_rows(g, *i) {
            *out.entry(r).or_default() += v * k;
        }
        if n.gpus > 0 {
            *out.entry(cp.gpu).or_default() += n.gpus as f64 * k;
        }
        if let Some(r) = cp.cpu {
            *out.entry(r).or_default() += n.cpu as f64 * k;
        }
        if let Some(r) = cp.mem {
            *out.entry(r).or_default() += n.mem as f64 * k;
        }
    }
    out.into_iter().filter(|(_, v)| *v != 0.0).collect()
}

fn add_fill(
    lp: &mut Lp,
    m: &Master,
    g: usize,
    cp: &Caps,
    fill: &[(Item, u32)],
    obj: &Objective,
) -> ColId {
    let cost: f64 = fill
        .iter()
        .map(|(i, k)| m.item_cost(g, *i, obj) * *k as f64)
        .sum();
    let mut e = entries(m, g, cp, fill);
    e.push((cp.gpu, 1.0));
    let col = lp.col(cost, 0.0, INF, false);
    for (r, v) in e {
        lp.set(r, col, v);
    }
    col
}

/// The most valuable fill of one GPU of group `g` under `duals` (an unbounded knapsack
/// over 1/1000 of a GPU), and its value (without the GPU row's dual).
fn best_fill(
    m: &Master,
    g: usize,
    cp: &Caps,
    duals: &[f64],
    obj: &Objective,
) -> (f64, Vec<(Item, u32)>) {
    let frac: Vec<(Item, u32, f64)> = m.items[g]
        .iter()
        .filter(|i| m.need(**i).milli > 0)
        .map(|i| {
            let n = m.need(*i);
            let mut v: f64 = m
                .item_rows(g, *i)
                .iter()
                .map(|(r, coef)| duals[*r] * coef)
                .sum();
            if let Some(r) = cp.cpu {
                v += duals[r] * n.cpu as f64;
            }
            if let Some(r) = cp.mem {
                v += duals[r] * n.mem as f64;
            }
            (*i, n.milli, v - m.item_cost(g, *i, obj))
        })
        .filter(|(_, _, v)| *v > 0.0)
        .collect();
    let unit = frac.iter().fold(1000u32, |a, (_, s, _)| gcd(a, *s)) as usize;
    let cap = 1000 / unit.max(1);
    let mut best: Vec<(f64, Option<usize>)> = vec![(0.0, None); cap + 1];
    for c in 1..=cap {
        best[c] = (best[c - 1].0, None);
        for (k, (_, s, v)) in frac.iter().enumerate() {
            let s = *s as usize / unit;
            if s <= c && best[c - s].0 + v > best[c].0 + 1e-12 {
                best[c] = (best[c - s].0 + v, Some(k));
            }
        }
    }
    let mut counts: BTreeMap<Item, u32> = BTreeMap::new();
    let mut c = cap;
    while c > 0 {
        match best[c].1 {
            Some(k) => {
                *counts.entry(frac[k].0).or_default() += 1;
                c -= frac[k].1 as usize / unit;
            }
            None => c -= 1,
        }
    }
    (best[cap].0, counts.into_iter().collect())
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}
