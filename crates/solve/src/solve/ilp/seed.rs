//! A starting placement for packed classes: every replica, highest priority and largest
//! first, on the node whose free CPU, memory and GPU share align best with its request
//! (best-fit GPU for a fraction), within team ceilings and quotas. Its node contents
//! become pattern columns and it is the first stage's starting solution, so the
//! integer program never returns less than this heuristic, and column generation
//! starts from a good basis instead of single-item patterns.

use super::master::{Master, Objective};
use super::pattern::{self, Item, Pattern};
use crate::model::NodeIdx;
use crate::model::ledger::{Charge, Ledger};
use crate::solve::pack::{self, Bins};
use std::collections::BTreeMap;
use std::time::Instant;

/// Adds the seed's patterns; returns a solution of the master holding it (`None` when
/// there are no packed classes or it does not satisfy the master's rows).
pub(crate) fn packed(m: &mut Master, deadline: Instant) -> Option<Vec<f64>> {
    if m.p.packed.is_empty() {
        return None;
    }
    let group_of = packed_nodes(m);
    let on = place(m, &group_of, deadline);
    solution_of(m, &on, &group_of)
}

/// Packed replicas on nodes: (workload, node, GPU indexes), one entry per replica.
pub(crate) type Replicas = Vec<(usize, NodeIdx, Vec<u32>)>;

/// Whole-GPU nodes of groups that hold packed items (and are not packed by volume),
/// with their group.
pub(crate) fn packed_nodes(m: &Master) -> BTreeMap<NodeIdx, usize> {
    let mut group_of: BTreeMap<NodeIdx, usize> = BTreeMap::new();
    for (g, items) in m.items.iter().enumerate() {
        if items.iter().any(|i| matches!(i, Item::Packed { .. })) && !m.volume.contains_key(&g) {
            for &n in &m.p.groups[g].nodes {
                group_of.insert(n, g);
            }
        }
    }
    group_of
}

/// Every packed replica, highest priority and largest first, on the best-aligned node
/// whose group can hold it, while the team's ceilings and quotas allow, and until
/// `deadline` (the seed is a starting point: a partial one is still feasible, and the
/// time limit bounds every phase).
fn place(m: &Master, group_of: &BTreeMap<NodeIdx, usize>, deadline: Instant) -> Replicas {
    let (c, p) = (m.c, m.p);
    let nodes: Vec<NodeIdx> = group_of.keys().copied().collect();
    let mut bins = Bins::new(c, &Default::default(), nodes.iter().copied());
    let mut on = Replicas::new();
    let mut ledger = Ledger::default();
    for w in pack::largest_first(c, p.packed.keys().copied()) {
        let wl = &c.workloads[w];
        let candidates = candidates(m, group_of, w);
        for r in 0..wl.replicas {
            if r % 64 == 0 && Instant::now() > deadline {
                return on;
            }
            let Some((n, gpus)) = bins.place(c, w, &candidates) else {
                break;
            };
            let model = p.groups[group_of[&n]].model.clone();
            if !admits(&ledger, m, w, &model) {
                bins.give_back(c, w, n, &gpus);
                break;
            }
            add(&mut ledger, m, w, &model);
            on.push((w, n, gpus));
        }
    }
    on
}

/// The pattern one node holds: its replicas' items laid out on exactly the GPUs they
/// were given (checked: whole GPUs free, fractions within a GPU and the node's sharing,
/// CPU and memory). `None` when the layout does not hold.
fn node_pattern(m: &Master, g: usize, n: NodeIdx, on: &[(usize, &[u32])]) -> Option<Pattern> {
    let positions = pattern::positions(m.c, n);
    let position = |gpu: &u32| positions.iter().position(|x| x == gpu).map(|p| p as u16);
    let mut by_item: BTreeMap<Item, Vec<Vec<u16>>> = BTreeMap::new();
    for (w, gpus) in on {
        let places: Option<Vec<u16>> = gpus.iter().map(position).collect();
        let mut places = places?;
        places.sort_unstable();
        by_item
            .entry(Item::Packed { w: *w as u32 })
            .or_default()
            .push(places);
    }
    let shape = &m.p.groups[g].shape;
    let (mut cpu, mut mem) = (0u64, 0u64);
    let mut slots = pattern::Slots::all(shape);
    // Whole GPUs first, then fractions (the node's sharing is decided by them).
    for whole in [true, false] {
        for (item, places) in &by_item {
            let need = m.need(*item);
            if (need.milli == 0) != whole {
                continue;
            }
            for at in places {
                cpu += need.cpu;
                mem += need.mem;
                let ok = if whole {
                    at.len() == need.gpus as usize && slots.take(at)
                } else {
                    at.len() == 1 && slots.add_fraction(at[0], &need)
                };
                if !ok {
                    return None;
                }
            }
        }
    }
    if shape.cpu.is_some_and(|c| cpu > c) || shape.mem.is_some_and(|x| mem > x) {
        return None;
    }
    let items: Vec<(Item, u32)> = by_item.iter().map(|(i, p)| (*i, p.len() as u32)).collect();
    let places: Vec<Vec<u16>> = by_item.into_values().flatten().collect();
    Some(Pattern { items, places })
}

/// Per group of the master: whether it holds packed class `w` (its item is one of the
/// group's).
pub(crate) fn holding(m: &Master, w: usize) -> Vec<bool> {
    let item = Item::Packed { w: w as u32 };
    m.items.iter().map(|items| items.contains(&item)).collect()
}

/// The nodes of `group_of`, in node order, whose group holds packed class `w`.
pub(crate) fn candidates(
    m: &Master,
    group_of: &BTreeMap<NodeIdx, usize>,
    w: usize,
) -> Vec<NodeIdx> {
    let holds = holding(m, w);
    group_of
        .iter()
        .filter(|(_, g)| holds[**g])
        .map(|(n, _)| *n)
        .collect()
}

/// The master's solution holding `on`: each node's pattern column (added when new),
/// the rest of every group on the empty pattern (or another mode), and the packed and
/// admitted replicas. A node whose layout does not hold is left empty. `None` when the
/// result does not satisfy the master's rows.
pub(crate) fn solution_of(
    m: &mut Master,
    on: &[(usize, NodeIdx, Vec<u32>)],
    group_of: &BTreeMap<NodeIdx, usize>,
) -> Option<Vec<f64>> {
    let mut per_node: BTreeMap<NodeIdx, Vec<(usize, &[u32])>> = BTreeMap::new();
    for (w, n, gpus) in on {
        per_node.entry(*n).or_default().push((*w, gpus));
    }
    let mut cols: Vec<(usize, usize)> = Vec::new();
    let mut held: BTreeMap<(usize, String), f64> = BTreeMap::new();
    for (n, list) in &per_node {
        let Some(&g) = group_of.get(n) else { continue };
        let Some(pat) = node_pattern(m, g, *n, list) else {
            continue;
        };
        for (i, k) in &pat.items {
            if let Item::Packed { w } = i {
                let model = m.p.groups[g].model.clone();
                *held.entry((*w as usize, model)).or_default() += *k as f64;
            }
        }
        let col = match m.pattern_col(g, &pat.items) {
            Some(col) => col,
            None => m.add_pattern(g, pat, &Objective::Compact)?,
        };
        cols.push((g, col));
    }
    let mut x = vec![0.0; m.lp.cols()];
    let mut used: BTreeMap<usize, f64> = BTreeMap::new();
    for (g, col) in cols {
        x[col] += 1.0;
        *used.entry(g).or_default() += 1.0;
    }
    // The rest of every group: the empty pattern (or another mode).
    for g in 0..m.p.groups.len() {
        let size = m.p.groups[g].nodes.len() as f64;
        let left = size - used.get(&g).copied().unwrap_or(0.0);
        if let Some(col) = m.pattern_col(g, &[]) {
            x[col] += left;
        } else if let Some(v) = m.volume.get(&g) {
            x[v.nodes] += left;
        } else if let Some((_, v)) = m.n.iter().find(|((gi, _), _)| *gi == g) {
            x[*v] += left;
        }
    }
    for (&(w, ref model), &pk) in &m.pk {
        let k = held.get(&(w, model.clone())).copied().unwrap_or(0.0);
        x[pk] = k;
        if let Some(&a) = m.a.get(&w) {
            x[a] += k;
        }
    }
    m.lp.feasible(&x, 1e-6).then_some(x)
}

/// One replica of packed class `w` on GPU model `model`, as the quota ledger counts it:
/// its GPU-equivalents on the model, outside any pool (the MIP's quota rows count models,
/// not pools: `master/quotas.rs`; the checker counts pools).
fn charge<'a>(m: &Master, w: usize, model: &'a str) -> [Charge<'a>; 1] {
    [Charge {
        model,
        pool: None,
        amount: m.c.workloads[w].packed_gpu_milli() as f64 / 1000.0,
    }]
}

/// Whether the team's ceilings and quotas admit one more replica of `w` on `model`.
pub(crate) fn admits(ledger: &Ledger, m: &Master, w: usize, model: &str) -> bool {
    ledger.admits(m.c, &m.c.workloads[w].team, &charge(m, w, model))
}

/// Counts one replica of `w` on `model`.
pub(crate) fn add(ledger: &mut Ledger, m: &Master, w: usize, model: &str) {
    ledger.add(m.c, &m.c.workloads[w].team, &charge(m, w, model));
}

/// Takes back one replica of `w` on `model` that [`add`] counted.
pub(crate) fn remove(ledger: &mut Ledger, m: &Master, w: usize, model: &str) {
    ledger.remove(m.c, &m.c.workloads[w].team, &charge(m, w, model));
}
