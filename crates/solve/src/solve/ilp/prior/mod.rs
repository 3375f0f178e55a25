//! A start from the previous placement (incremental re-plans): what the last applied
//! plan placed, as a solution of this run's master, checked against its rows.
//!
//! Per node group, each node that held work gets the pattern of what it held (a column,
//! added when new) and the others their previous pool mode; gangs count in their domain,
//! packed, MIG and shared replicas per class and model, guaranteed usage and the keep
//! variables as far as the rows allow. What no longer fits is left out: a gang whose
//! node item is gone (its shape, mode or domain changed, a node drained), replicas beyond
//! a class's new count, packed replicas on a node whose layout no longer holds. What is
//! left out is only not admitted by the start: the stages still decide admission.
//!
//! Decision: the start is a certificate, not a placement the plan must keep. A level
//! it admits in full skips its integer program (as for any start, see
//! [`super::Run::admit_level`]), and the other stages begin from it, so a one-class
//! change re-solves the levels it touches and the compaction starts with every
//! keep variable at its most; when it does not satisfy the master (an input changed what
//! a row counts) the run has no start, as without a previous placement.

mod fill;

use super::keep::item_of;
use super::master::Master;
use super::pattern::{self, Item};
use crate::model::{NodeIdx, PoolMode};
use crate::solve::previous::Previous;
use std::collections::BTreeMap;

/// A solution of the master holding what `prev` placed that still fits; `None` when it
/// does not satisfy the master's rows.
pub(crate) fn start(m: &mut Master, prev: &Previous) -> Option<Vec<f64>> {
    let group_of = m.p.group_of();
    let mut held = Held::default();
    held.gangs(m, prev, &group_of);
    held.packed(m, prev, &group_of);
    let nodes = held.node_columns(m, prev, &group_of)?;
    let mut x = vec![0.0; m.lp.cols()];
    for (col, k) in nodes {
        x[col] += k;
    }
    held.gang_columns(m, &mut x);
    packed_columns(m, &mut x);
    mig_columns(m, prev, &group_of, &mut x);
    shared_columns(m, prev, &group_of, &mut x);
    fill::fill(m, &mut x);
    raise(m, &mut x);
    m.lp.feasible(&x, 1e-6).then_some(x)
}

/// What the previous placement holds that still fits, as node items and gang counts.
#[derive(Default)]
struct Held {
    /// Per node: the items it holds.
    items: BTreeMap<NodeIdx, BTreeMap<Item, u32>>,
    /// Multi-node gangs per (shape, mode, domain).
    y: BTreeMap<(usize, usize, String), f64>,
    /// Gangs kept per workload.
    gangs: BTreeMap<usize, f64>,
}

impl Held {
    /// Each class's previous gangs (at most its replicas) whose every node share is
    /// still an item of its group, in one mode and domain.
    fn gangs(&mut self, m: &Master, prev: &Previous, group_of: &BTreeMap<NodeIdx, usize>) {
        let p = m.p;
        let shape_of = p.shape_of();
        for (w, gangs) in &prev.gangs {
            let Some(&si) = shape_of.get(w) else { continue };
            let mut kept = 0u32;
            for g in gangs {
                if kept >= m.c.workloads[*w].replicas {
                    break;
                }
                let items: Option<Vec<(NodeIdx, Item)>> = g
                    .iter()
                    .map(|(n, gpus)| {
                        let gi = *group_of.get(n)?;
                        item_of(m, group_of, gi, si, g, gpus).map(|i| (*n, i))
                    })
                    .collect();
                let Some(items) = items else { continue };
                if g.len() > 1 {
                    let Some(key) = gang_domain(m, group_of, si, &items) else {
                        continue;
                    };
                    *self.y.entry(key).or_default() += 1.0;
                }
                for (n, i) in items {
                    *self.items.entry(n).or_default().entry(i).or_default() += 1;
                }
                kept += 1;
            }
            *self.gangs.entry(*w).or_default() += kept as f64;
        }
    }

    /// Each packed class's previous replicas, at most its replicas, on nodes that may
    /// hold it.
    fn packed(&mut self, m: &Master, prev: &Previous, group_of: &BTreeMap<NodeIdx, usize>) {
        for (w, entries) in &prev.packed {
            let item = Item::Packed { w: *w as u32 };
            let mut left = m.c.workloads[*w].replicas;
            for (n, gpus, k) in entries {
                let Some(&gi) = group_of.get(n) else { continue };
                if !m.items[gi].contains(&item) {
                    continue;
                }
                let reps = if gpus.len() > 1 { 1 } else { *k }.min(left);
                left -= reps;
                if reps > 0 {
                    *self.items.entry(*n).or_default().entry(item).or_default() += reps;
                }
            }
        }
    }

    /// The node columns: each node with items on its pattern (or its group's counts
    /// when packed by volume), each other node in its previous pool mode where its
    /// group has it, else on the empty pattern. `None` when a node's gang items no
    /// longer fit it.
    fn node_columns(
        &mut self,
        m: &mut Master,
        prev: &Previous,
        group_of: &BTreeMap<NodeIdx, usize>,
    ) -> Option<Vec<(usize, f64)>> {
        let mut out: Vec<(usize, f64)> = Vec::new();
        for (&n, &gi) in group_of {
            let items: Vec<(Item, u32)> = self
                .items
                .get(&n)
                .map(|v| v.iter().map(|(i, k)| (*i, *k)).collect())
                .unwrap_or_default();
            if !items.is_empty() {
                if let Some(cols) = whole_node(m, gi, &items) {
                    out.extend(cols);
                    continue;
                }
                // Packed replicas whose layout no longer holds are left out; gangs
                // cannot be (their domain counts are already taken).
                if items.iter().any(|(i, _)| !matches!(i, Item::Packed { .. })) {
                    return None;
                }
                self.items.remove(&n);
            }
            let mode = prev.node_mode.get(n).copied().flatten();
            let col = mode
                .filter(|md| *md != PoolMode::WholeGpu)
                .and_then(|md| m.n.get(&(gi, md)).copied())
                .or_else(|| empty_node(m, gi))?;
            out.push((col, 1.0));
        }
        Some(out)
    }

    /// Multi-node gangs per domain, "at least j gangs" and gang admission.
    fn gang_columns(&self, m: &Master, x: &mut [f64]) {
        for (key, k) in &self.y {
            if let Some(&col) = m.y.get(key) {
                x[col] = *k;
            }
        }
        for ((s, mi, d, j), &col) in &m.b {
            let y = self.y.get(&(*s, *mi, d.clone())).copied().unwrap_or(0.0);
            x[col] = if y >= *j as f64 { 1.0 } else { 0.0 };
        }
        for (w, k) in &self.gangs {
            if let Some(&a) = m.a.get(w) {
                x[a] = *k;
            }
        }
    }
}

/// The (shape, mode, domain) of a multi-node gang whose node items are `items`, when
/// they agree.
fn gang_domain(
    m: &Master,
    group_of: &BTreeMap<NodeIdx, usize>,
    si: usize,
    items: &[(NodeIdx, Item)],
) -> Option<(usize, usize, String)> {
    let mut key = None;
    for (n, i) in items {
        let Item::Share { m: mi, .. } = i else {
            return None;
        };
        let g = &m.p.groups[group_of[n]];
        let d = m.p.domain_of(g, &m.p.shapes[si].modes[*mi as usize])?;
        let k = (si, *mi as usize, d);
        if key.as_ref().is_some_and(|x| *x != k) {
            return None;
        }
        key = Some(k);
    }
    key
}

/// The columns of one whole-GPU node of group `gi` holding `items`: its pattern's
/// (added when new), or the volume counts of its group.
fn whole_node(m: &mut Master, gi: usize, items: &[(Item, u32)]) -> Option<Vec<(usize, f64)>> {
    if items.iter().any(|(i, _)| !m.items[gi].contains(i)) {
        return None;
    }
    if let Some(v) = m.volume.get(&gi) {
        let mut cols = vec![(v.nodes, 1.0)];
        for (i, k) in items {
            cols.push((*v.count.get(i)?, *k as f64));
        }
        let gpus: u32 = items.iter().map(|(i, k)| m.need(*i).gpus * k).sum();
        return (gpus <= m.p.groups[gi].shape.gpus()).then_some(cols);
    }
    let col = match m.pattern_col(gi, items) {
        Some(col) => col,
        None => {
            let (c, p) = (m.c, m.p);
            let pat = pattern::fit(&p.groups[gi].shape, items, &|i| {
                super::master::need(c, p, i)
            })?;
            match m.pattern_col(gi, &pat.items) {
                Some(col) => col,
                None => m.add_pattern(gi, pat, &super::master::Objective::Compact)?,
            }
        }
    };
    Some(vec![(col, 1.0)])
}

/// The column of an empty node of group `gi`: the empty pattern, the volume nodes, or
/// the first other pool mode.
fn empty_node(m: &Master, gi: usize) -> Option<usize> {
    if let Some(v) = m.volume.get(&gi) {
        return Some(v.nodes);
    }
    if let Some(col) = m.pattern_col(gi, &[]) {
        return Some(col);
    }
    m.n.range((gi, PoolMode::WholeGpu)..=(gi, PoolMode::Mps))
        .map(|(_, v)| *v)
        .next()
}

/// Packed replicas per model and class, from the node columns already in `x`.
fn packed_columns(m: &Master, x: &mut [f64]) {
    let mut pk: BTreeMap<(usize, String), f64> = BTreeMap::new();
    for (gi, pcs) in m.patterns.iter().enumerate() {
        for pc in pcs {
            let k = x[pc.col];
            if k <= 0.0 {
                continue;
            }
            for (i, c) in &pc.pattern.items {
                if let Item::Packed { w } = i {
                    let key = (*w as usize, m.p.groups[gi].model.clone());
                    *pk.entry(key).or_default() += k * *c as f64;
                }
            }
        }
    }
    for (gi, v) in &m.volume {
        for (i, col) in &v.count {
            if let Item::Packed { w } = i {
                let key = (*w as usize, m.p.groups[*gi].model.clone());
                *pk.entry(key).or_default() += x[*col];
            }
        }
    }
    for (key, k) in pk {
        if let Some(&col) = m.pk.get(&key) {
            x[col] = k;
            if let Some(&a) = m.a.get(&key.0) {
                x[a] += k;
            }
        }
    }
}

/// Whether the start puts node `n` in `mode` (read back from the node columns).
fn in_mode(
    m: &Master,
    group_of: &BTreeMap<NodeIdx, usize>,
    prev: &Previous,
    n: NodeIdx,
    mode: PoolMode,
) -> bool {
    prev.node_mode.get(n).copied().flatten() == Some(mode)
        && group_of
            .get(&n)
            .is_some_and(|gi| m.n.contains_key(&(*gi, mode)))
}

/// MIG nodes keep their current layouts; each class's previous instances on them (at
/// most its replicas) are its replicas.
fn mig_columns(m: &Master, prev: &Previous, group_of: &BTreeMap<NodeIdx, usize>, x: &mut [f64]) {
    for ((gi, ci), &col) in &m.k {
        let Some(&n) = m.n.get(&(*gi, PoolMode::Mig)) else {
            continue;
        };
        x[col] = m.p.groups[*gi].current[*ci].1 as f64 * x[n];
    }
    let mut r: BTreeMap<(usize, String), f64> = BTreeMap::new();
    for (w, v) in &prev.mig_instances {
        for (n, g, _) in v {
            if !in_mode(m, group_of, prev, *n, PoolMode::Mig) {
                continue;
            }
            if let Some(md) = m.c.gpu_model_name(*n, *g).map(str::to_string) {
                *r.entry((*w, md)).or_default() += 1.0;
            }
        }
    }
    replicas(m, r, x);
}

/// Shared GPUs: each class's previous replicas on nodes the start keeps in the mode, on
/// as few GPUs as its sharing factor allows, and the nodes serving each factor.
fn shared_columns(m: &Master, prev: &Previous, group_of: &BTreeMap<NodeIdx, usize>, x: &mut [f64]) {
    let mut r: BTreeMap<(usize, String), f64> = BTreeMap::new();
    let mut nodes: BTreeMap<(usize, PoolMode, u32), std::collections::BTreeSet<NodeIdx>> =
        BTreeMap::new();
    for (w, v) in &prev.shares {
        let Some((mps, per_gpu, _)) = m.p.shared.get(w) else {
            continue;
        };
        let mode = PoolMode::shared(*mps);
        for (n, g, k) in v {
            if !in_mode(m, group_of, prev, *n, mode) {
                continue;
            }
            if let Some(md) = m.c.gpu_model_name(*n, *g).map(str::to_string) {
                *r.entry((*w, md)).or_default() += *k as f64;
                nodes
                    .entry((group_of[n], mode, *per_gpu))
                    .or_default()
                    .insert(*n);
            }
        }
    }
    for (key, set) in nodes {
        if let Some(&col) = m.nf.get(&key) {
            x[col] = set.len() as f64;
        }
    }
    let r = replicas(m, r, x);
    for ((w, md), k) in r {
        let per_gpu = m.p.shared[&w].1.max(1) as f64;
        if let Some(&t) = m.t.get(&(w, md)) {
            x[t] = (k / per_gpu).ceil();
        }
    }
}

/// Sets each class's replicas per model (at most its replicas, in model order) and its
/// admission; returns what was set.
fn replicas(
    m: &Master,
    r: BTreeMap<(usize, String), f64>,
    x: &mut [f64],
) -> BTreeMap<(usize, String), f64> {
    let mut left: BTreeMap<usize, f64> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for ((w, md), k) in r {
        let Some(&col) = m.r.get(&(w, md.clone())) else {
            continue;
        };
        let l = left.entry(w).or_insert(m.c.workloads[w].replicas as f64);
        let k = k.min(*l);
        *l -= k;
        x[col] = k;
        if let Some(&a) = m.a.get(&w) {
            x[a] += k;
        }
        out.insert((w, md), k);
    }
    out
}

/// Raises guaranteed usage and the keep variables to the most their rows allow, in
/// column order.
fn raise(m: &Master, x: &mut [f64]) {
    let lp = &m.lp;
    let mut act = lp.activity(x);
    let cols = m.u.values().copied().chain(m.keep.iter().map(|(c, _)| *c));
    for j in cols {
        let mut v = lp.hi[j] - x[j];
        for &(r, a) in &lp.entries[j] {
            if a > 0.0 {
                v = v.min((lp.row_hi[r] - act[r]) / a);
            }
        }
        let v = v.max(0.0);
        if v > 0.0 {
            x[j] += v;
            for &(r, a) in &lp.entries[j] {
                act[r] += a * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::keep;
    use super::super::master::{Master, Objective};
    use super::super::problem::Problem;
    use super::super::testing::cluster;
    use super::start;
    use crate::model::Cluster;
    use crate::solve::previous::Previous;

    /// A node-local 2-GPU gang and a 1-GPU replica, on two 2-GPU nodes.
    fn classes(gangs: u32) -> String {
        format!(
            r#"
training "g" team="t" priority="p" replicas={gangs} {{
    gang gpus=2 gpus-per-node=2
    topology required="node"
}}
inference "i" team="t" priority="p" replicas=2 {{
    isolation "whole-gpu"
    gpus 1
    requests cpu=1 memory="1GiB"
}}
"#
        )
    }

    fn idx(c: &Cluster, node: &str) -> usize {
        c.nodes.iter().position(|x| x.name == node).unwrap()
    }

    /// The master as the solver builds it with a previous placement (initial patterns,
    /// keep variables), and what the start from it admits per class (checked against
    /// the master's rows).
    fn start_of(c: &Cluster, prev: &Previous) -> Option<Vec<(String, f64)>> {
        let p = Problem::build(c, &Default::default());
        let mut m = Master::new(c, &p);
        for g in 0..p.groups.len() {
            m.seed_patterns(g, &Objective::Compact, 0);
        }
        keep::add(&mut m, prev);
        let x = start(&mut m, prev)?;
        assert!(m.lp.feasible(&x, 1e-6));
        let admitted =
            m.a.iter()
                .map(|(w, a)| (c.workloads[*w].name.clone(), x[*a]))
                .collect();
        Some(admitted)
    }

    fn previous(c: &Cluster, gangs: &[&str], replicas: &[(&str, u32)]) -> Previous {
        let w = |name: &str| c.workloads.iter().position(|x| x.name == name).unwrap();
        let mut prev = Previous {
            node_mode: vec![None; c.nodes.len()],
            ..Previous::default()
        };
        prev.gangs.insert(
            w("g"),
            gangs
                .iter()
                .map(|n| vec![(idx(c, n), vec![0, 1])])
                .collect(),
        );
        prev.packed.insert(
            w("i"),
            replicas
                .iter()
                .map(|(n, g)| (idx(c, n), vec![*g], 1))
                .collect(),
        );
        prev
    }

    #[test]
    fn the_start_holds_the_previous_placement_and_fills_what_fits() {
        // Before: the gang on n-1, one replica on n-2's GPU 0. Both classes grew by
        // one: a second replica fits n-2's free GPU, a second gang fits no node.
        let c = cluster(&classes(2));
        let prev = previous(&c, &["n-1"], &[("n-2", 0)]);
        let admitted = start_of(&c, &prev).expect("a start");
        assert_eq!(
            admitted,
            vec![("g".to_string(), 1.0), ("i".to_string(), 2.0)]
        );
    }

    #[test]
    fn a_class_with_fewer_replicas_keeps_at_most_its_count() {
        // Before: two gangs; the class now asks for one.
        let c = cluster(&classes(1));
        let prev = previous(&c, &["n-1", "n-2"], &[]);
        let admitted = start_of(&c, &prev).expect("a start");
        assert_eq!(admitted[0], ("g".to_string(), 1.0));
        // The node the second gang left takes both replicas of `i`.
        assert_eq!(admitted[1], ("i".to_string(), 2.0));
    }

    #[test]
    fn shared_replicas_grow_onto_free_slots_then_another_node() {
        // Before: two replicas on n-1's GPU 0 in time-slice mode (two per GPU), n-2 empty.
        // Four fit n-1 (a second shared GPU); six need n-2 in time-slice mode too.
        for (replicas, admitted) in [(4, 4.0), (6, 6.0), (9, 8.0)] {
            let c = cluster(&format!(
                r#"
dev "nb" team="t" priority="p" replicas={replicas} {{
    share "time-slice" per-gpu=2
    memory "4GiB"
}}
"#
            ));
            let nb = c.workloads.iter().position(|x| x.name == "nb").unwrap();
            let mut prev = Previous {
                node_mode: vec![None; c.nodes.len()],
                ..Previous::default()
            };
            prev.node_mode[idx(&c, "n-1")] = Some(crate::model::PoolMode::TimeSlice);
            prev.shares.insert(nb, vec![(idx(&c, "n-1"), 0, 2)]);
            let got = start_of(&c, &prev).expect("a start");
            assert_eq!(
                got,
                vec![("nb".to_string(), admitted)],
                "{replicas} replicas"
            );
        }
    }

    #[test]
    fn larger_replicas_are_added_first() {
        // Nothing before; three 1-GPU replicas and one 2-GPU gang of the same priority on
        // two 2-GPU nodes. The gang first admits 4 GPUs (the gang and two replicas); the
        // replicas first (class order) would leave no node for it (3 GPUs).
        let c = cluster(
            r#"
inference "a-small" team="t" priority="p" replicas=3 {
    isolation "whole-gpu"
    gpus 1
    requests cpu=1 memory="1GiB"
}
training "b-big" team="t" priority="p" {
    gang gpus=2 gpus-per-node=2
    topology required="node"
}
"#,
        );
        let prev = Previous {
            node_mode: vec![None; c.nodes.len()],
            ..Previous::default()
        };
        let mut got = start_of(&c, &prev).expect("a start");
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            vec![("a-small".to_string(), 2.0), ("b-big".to_string(), 1.0)]
        );
    }

    #[test]
    fn a_gang_on_a_cordoned_node_is_left_out() {
        let mut c = cluster(&classes(2));
        let n2 = idx(&c, "n-2");
        c.nodes[n2].cordon = true;
        let prev = previous(&c, &["n-2", "n-1"], &[]);
        let admitted = start_of(&c, &prev).expect("a start");
        // The gang on n-1 stays; n-2 is gone, and n-1 has no room for another.
        assert_eq!(admitted[0], ("g".to_string(), 1.0));
        assert_eq!(admitted[1], ("i".to_string(), 0.0));
    }
}
