//! A starting placement for packed classes: every replica, highest priority and largest
//! first, on the node whose free CPU, memory and GPU share align best with its request
//! (best-fit GPU for a fraction), within team ceilings and quotas. Its node contents
//! become pattern columns and it is the first stage's starting solution, so the
//! integer program never returns less than this heuristic, and column generation
//! starts from a good basis instead of single-item patterns.

use super::master::{Master, Objective};
use super::pattern::{self, Item};
use crate::model::NodeIdx;
use crate::solve::pack::{self, Bins, Policy};
use std::collections::BTreeMap;
use std::time::Instant;

/// Adds the seed's patterns; returns a solution of the master holding it (`None` when
/// there are no packed classes or it does not satisfy the master's rows).
pub fn packed(m: &mut Master, deadline: Instant) -> Option<Vec<f64>> {
    if m.p.packed.is_empty() {
        return None;
    }
    let group_of = packed_nodes(m);
    let on = place(m, &group_of, deadline);
    let cols = pattern_columns(m, &on, &group_of);
    let x = solution(m, &on, &group_of, &cols)?;
    m.lp.feasible(&x, 1e-6).then_some(x)
}

/// Contents of a node: replicas per packed item.
type Contents = BTreeMap<NodeIdx, BTreeMap<Item, u32>>;

/// Whole-GPU nodes of groups that hold packed items (and are not packed by volume),
/// with their group.
fn packed_nodes(m: &Master) -> BTreeMap<NodeIdx, usize> {
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
fn place(m: &Master, group_of: &BTreeMap<NodeIdx, usize>, deadline: Instant) -> Contents {
    let (c, p) = (m.c, m.p);
    let nodes: Vec<NodeIdx> = group_of.keys().copied().collect();
    let mut bins = Bins::new(c, &Default::default(), nodes.iter().copied());
    let mut on = Contents::new();
    let mut ledger = Ledger::default();
    for w in pack::largest_first(c, p.packed.keys().copied()) {
        let wl = &c.workloads[w];
        let item = Item::Packed { w: w as u32 };
        let candidates: Vec<NodeIdx> = nodes
            .iter()
            .copied()
            .filter(|n| m.items[group_of[n]].contains(&item))
            .collect();
        for r in 0..wl.replicas {
            if r % 64 == 0 && Instant::now() > deadline {
                return on;
            }
            let Some((n, gpus)) = bins.place(c, w, &candidates, Policy::Aligned) else {
                break;
            };
            let model = p.groups[group_of[&n]].model.clone();
            if !ledger.admits(m, w, &model) {
                bins.give_back(c, w, n, &gpus);
                break;
            }
            ledger.add(m, w, &model);
            *on.entry(n).or_default().entry(item).or_default() += 1;
        }
    }
    on
}

/// The pattern column of each node's contents (added when new), with how many nodes
/// hold it.
fn pattern_columns(
    m: &mut Master,
    on: &Contents,
    group_of: &BTreeMap<NodeIdx, usize>,
) -> Vec<(usize, f64)> {
    let p = m.p;
    let mut per_group: BTreeMap<(usize, Vec<(Item, u32)>), f64> = BTreeMap::new();
    for (n, items) in on {
        let g = group_of[n];
        let counts: Vec<(Item, u32)> = items.iter().map(|(i, k)| (*i, *k)).collect();
        *per_group.entry((g, counts)).or_default() += 1.0;
    }
    let mut cols: Vec<(usize, f64)> = Vec::new();
    for ((g, counts), k) in per_group {
        let need = |i: Item| m.need(i);
        let Some(pat) = pattern::fit(&p.groups[g].shape, &counts, &need) else {
            continue;
        };
        let col = match m.pattern_col(g, &pat.items) {
            Some(col) => col,
            None => match m.add_pattern(g, pat, &Objective::Compact) {
                Some(col) => col,
                None => continue,
            },
        };
        cols.push((col, k));
    }
    cols
}

/// The master's solution of the seed: the pattern columns, the rest of every group on
/// the empty pattern (or another mode), and the packed and admitted replicas. `None`
/// when a column is not a pattern column.
fn solution(
    m: &Master,
    on: &Contents,
    group_of: &BTreeMap<NodeIdx, usize>,
    cols: &[(usize, f64)],
) -> Option<Vec<f64>> {
    let p = m.p;
    let mut x = vec![0.0; m.lp.cols()];
    let mut used: BTreeMap<usize, f64> = BTreeMap::new();
    for (col, k) in cols {
        x[*col] += k;
        let g = m.group_of_col(*col)?;
        *used.entry(g).or_default() += k;
    }
    // The rest of every group: the empty pattern (or another mode).
    for g in 0..p.groups.len() {
        let size = p.groups[g].nodes.len() as f64;
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
        let k: f64 = on
            .iter()
            .filter(|(n, _)| p.groups[group_of[n]].model == *model)
            .map(|(_, items)| {
                items
                    .get(&Item::Packed { w: w as u32 })
                    .copied()
                    .unwrap_or(0) as f64
            })
            .sum();
        x[pk] = k;
        if let Some(&a) = m.a.get(&w) {
            x[a] += k;
        }
    }
    Some(x)
}

/// Team usage of the seed, in GPU-equivalents (ceilings and per-model quotas).
#[derive(Default)]
struct Ledger {
    team: BTreeMap<String, f64>,
    quota: BTreeMap<(String, usize), f64>,
}

impl Ledger {
    fn admits(&self, m: &Master, w: usize, model: &str) -> bool {
        let c = m.c;
        let wl = &c.workloads[w];
        let amount = wl.packed_gpu_milli() as f64 / 1000.0;
        c.team_chain(&wl.team).iter().all(|t| {
            self.team.get(&t.name).copied().unwrap_or(0.0) + amount <= t.ceiling() as f64 + 1e-9
                && t.quotas.iter().enumerate().all(|(qi, q)| {
                    q.model.as_deref() != Some(model)
                        || q.burst.is_none()
                        || self
                            .quota
                            .get(&(t.name.clone(), qi))
                            .copied()
                            .unwrap_or(0.0)
                            + amount
                            <= q.burst.unwrap_or(0) as f64 + 1e-9
                })
        })
    }

    fn add(&mut self, m: &Master, w: usize, model: &str) {
        let c = m.c;
        let wl = &c.workloads[w];
        let amount = wl.packed_gpu_milli() as f64 / 1000.0;
        for t in c.team_chain(&wl.team) {
            *self.team.entry(t.name.clone()).or_default() += amount;
            for (qi, q) in t.quotas.iter().enumerate() {
                if q.model.as_deref() == Some(model) {
                    *self.quota.entry((t.name.clone(), qi)).or_default() += amount;
                }
            }
        }
    }
}
