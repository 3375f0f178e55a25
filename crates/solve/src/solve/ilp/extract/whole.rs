//! Whole-GPU nodes: each node takes one of its group's patterns, the pattern's instances
//! take GPUs, then shares become gangs and instances become replicas.
//!
//! Shares of a (shape, mode, domain) are dealt to its gangs round-robin over the nodes,
//! each node's shares consecutively: the master allows a node `j` shares only when the
//! domain has at least `j` gangs, so no gang gets two shares of one node. With a previous
//! placement, nodes first take the pattern closest to what they held, instances the GPUs
//! they had, and previous gangs re-form on their shares before the rest is dealt.

use super::super::master::{Master, partial_size};
use super::super::pattern::{self, Item, Slots};
use super::{Ctx, order};
use crate::model::NodeIdx;
use crate::model::PoolMode;
use crate::solve::previous::Previous;
use crate::solve::{Assignment, GangNodes};
use std::collections::{BTreeMap, BTreeSet};

/// What a previous instance was: a gang share of a shape, or a packed replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Shape(usize),
    Packed(usize),
}

fn key(item: Item) -> Key {
    match item {
        Item::Share { s, .. } | Item::Local { s, .. } => Key::Shape(s as usize),
        Item::Packed { w } => Key::Packed(w as usize),
    }
}

/// A share slot: node, GPUs, and whether it is the smaller share.
type Slot = (NodeIdx, Vec<u32>, bool);

/// One placed instance.
#[derive(Clone, Debug)]
struct Placed {
    node: NodeIdx,
    item: Item,
    gpus: Vec<u32>,
}

/// What each node held before: (key, GPUs) per instance.
type Held = BTreeMap<NodeIdx, Vec<(Key, Vec<u32>)>>;

/// What each node held before and may keep: (key, GPUs) per instance. A class that now
/// admits fewer replicas than it had releases its last ones (their nodes take new work
/// first), so the nodes of the replicas it keeps are not taken from under them.
fn previous_contents(cx: &Ctx, pv: &Previous) -> Held {
    let m = cx.m;
    let shape_of = m.p.shape_of();
    let admitted = |w: usize| m.a.get(&w).map(|a| cx.val(*a)).unwrap_or(0) as usize;
    let mut out = Held::new();
    for (w, gangs) in &pv.gangs {
        let Some(&s) = shape_of.get(w) else { continue };
        for g in gangs.iter().take(admitted(*w)) {
            for (n, gpus) in g {
                let mut gpus = gpus.clone();
                gpus.sort_unstable();
                out.entry(*n).or_default().push((Key::Shape(s), gpus));
            }
        }
    }
    for (w, entries) in &pv.packed {
        let mut left = admitted(*w);
        for (n, gpus, k) in entries {
            let reps = if gpus.len() > 1 { 1 } else { *k as usize };
            for _ in 0..reps.min(left) {
                out.entry(*n)
                    .or_default()
                    .push((Key::Packed(*w), gpus.clone()));
            }
            left = left.saturating_sub(reps);
        }
    }
    out
}

/// Places the whole-GPU part of the solution into `a`.
pub(crate) fn place(cx: &Ctx, a: &mut Assignment) {
    let m = cx.m;
    let before = cx
        .prev
        .map(|pv| previous_contents(cx, pv))
        .unwrap_or_default();
    let mut placed: Vec<Placed> = Vec::new();
    for gi in 0..m.p.groups.len() {
        let nodes = cx
            .by_mode
            .get(&(gi, PoolMode::WholeGpu))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if m.volume.contains_key(&gi) {
            for (n, pat) in volume_nodes(cx, gi, nodes, &before) {
                placed.extend(layout(m, gi, n, &pat, before.get(&n).map(Vec::as_slice)));
            }
            continue;
        }
        for (n, pi) in patterns_to_nodes(cx, gi, nodes, &before) {
            let pat = &m.patterns[gi][pi].pattern;
            placed.extend(layout(m, gi, n, pat, before.get(&n).map(Vec::as_slice)));
        }
    }
    for p in &placed {
        a.node_mode[p.node] = Some(PoolMode::WholeGpu);
    }
    gangs(cx, &placed, a);
    packed(cx, &placed, a);
}

/// Which pattern each whole-GPU node of group `gi` takes: nodes that held something take
/// the pattern closest to it, the rest take the remaining patterns (used ones first).
fn patterns_to_nodes(
    cx: &Ctx,
    gi: usize,
    nodes: &[NodeIdx],
    before: &Held,
) -> Vec<(NodeIdx, usize)> {
    let m = cx.m;
    let pats = &m.patterns[gi];
    let mut left: Vec<u64> = pats.iter().map(|pc| cx.val(pc.col)).collect();
    let weight = |pi: usize, held: &[(Key, Vec<u32>)]| closeness(m, &pats[pi].pattern, held);
    // Nodes whose previous pattern is still wanted take it back.
    let (mut out, pending) = same_patterns(m, gi, nodes, before, &mut left);
    let mut free: Vec<NodeIdx> = Vec::new();
    for n in pending {
        let held = before.get(&n).map(Vec::as_slice).unwrap_or(&[]);
        let best = (!held.is_empty())
            .then(|| {
                (0..pats.len())
                    .filter(|&pi| left[pi] > 0)
                    .max_by_key(|&pi| (weight(pi, held), std::cmp::Reverse(pi)))
                    .filter(|&pi| weight(pi, held) > 0)
            })
            .flatten();
        match best {
            Some(pi) => {
                left[pi] -= 1;
                out.push((n, pi));
            }
            None => free.push(n),
        }
    }
    // Used patterns first, in column order, then empty ones.
    let mut rest: Vec<usize> = Vec::new();
    for (pi, k) in left.iter().enumerate() {
        if !pats[pi].pattern.items.is_empty() {
            rest.extend(std::iter::repeat_n(pi, *k as usize));
        }
    }
    for (pi, k) in left.iter().enumerate() {
        if pats[pi].pattern.items.is_empty() {
            rest.extend(std::iter::repeat_n(pi, *k as usize));
        }
    }
    for (n, pi) in free.into_iter().zip(rest) {
        out.push((n, pi));
    }
    out
}

/// The nodes of group `gi` whose previous pattern (all of its work still admitted) the
/// solution still has `left`, with that pattern (taken from `left`); and the other
/// nodes.
fn same_patterns(
    m: &Master,
    gi: usize,
    nodes: &[NodeIdx],
    before: &Held,
    left: &mut [u64],
) -> (Vec<(NodeIdx, usize)>, Vec<NodeIdx>) {
    let pats = &m.patterns[gi];
    let mut out = Vec::with_capacity(nodes.len());
    let mut pending: Vec<NodeIdx> = Vec::new();
    for &n in nodes {
        // Only nodes whose previous work is all still admitted.
        let held = before.get(&n).map_or(0, Vec::len) as u32;
        let same = m
            .prev_pattern
            .get(&n)
            .filter(|q| q.iter().map(|(_, k)| *k).sum::<u32>() == held)
            .and_then(|q| pats.iter().position(|pc| pc.pattern.items == *q))
            .filter(|pi| left[*pi] > 0);
        match same {
            Some(pi) => {
                left[pi] -= 1;
                out.push((n, pi));
            }
            None => pending.push(n),
        }
    }
    (out, pending)
}

/// How close a pattern is to what a node `held`: the GPUs of the held instances it has
/// an instance of the same key and size for.
fn closeness(m: &Master, pat: &pattern::Pattern, held: &[(Key, Vec<u32>)]) -> u64 {
    let mut have: BTreeMap<Key, Vec<u32>> = BTreeMap::new();
    for (item, k) in &pat.items {
        let g = m.need(*item).gpus.max(1);
        for _ in 0..*k {
            have.entry(key(*item)).or_default().push(g);
        }
    }
    let mut score = 0;
    for (k, gpus) in held {
        if let Some(list) = have.get_mut(k) {
            if let Some(i) = list.iter().position(|g| *g as usize == gpus.len().max(1)) {
                score += list.remove(i) as u64;
            }
        }
    }
    score
}

/// Item counts of a volume-packed group onto its whole-GPU nodes: first back to the
/// nodes that held them, then largest first onto the first node with room (exact:
/// power-of-two sizes on power-of-two nodes); each node's items as a pattern.
fn volume_nodes(
    cx: &Ctx,
    gi: usize,
    nodes: &[NodeIdx],
    before: &Held,
) -> Vec<(NodeIdx, pattern::Pattern)> {
    let m = cx.m;
    let vc = &m.volume[&gi];
    let total = m.group_shape(gi).gpus();
    let mut left: BTreeMap<Item, u64> = vc.count.iter().map(|(i, c)| (*i, cx.val(*c))).collect();
    let mut free: Vec<u32> = vec![total; nodes.len()];
    let mut on: Vec<BTreeMap<Item, u32>> = vec![BTreeMap::new(); nodes.len()];
    for (k, n) in nodes.iter().enumerate() {
        for (key_held, gpus) in before.get(n).map(Vec::as_slice).unwrap_or(&[]) {
            let pick = left
                .iter()
                .filter(|(i, c)| **c > 0 && key(**i) == *key_held)
                .map(|(i, _)| *i)
                .find(|i| m.need(*i).gpus as usize == gpus.len() && m.need(*i).gpus <= free[k]);
            if let Some(i) = pick {
                *left.get_mut(&i).unwrap() -= 1;
                free[k] -= m.need(i).gpus;
                *on[k].entry(i).or_default() += 1;
            }
        }
    }
    let mut order: Vec<Item> = left.keys().copied().collect();
    order.sort_by_key(|i| (std::cmp::Reverse(m.need(*i).gpus), *i));
    for i in order {
        let g = m.need(i).gpus;
        let mut k = 0;
        while left[&i] > 0 && k < nodes.len() {
            if free[k] >= g {
                free[k] -= g;
                *on[k].entry(i).or_default() += 1;
                *left.get_mut(&i).unwrap() -= 1;
            } else {
                k += 1;
            }
        }
    }
    let shape = m.group_shape(gi);
    let need = |i: Item| m.need(i);
    nodes
        .iter()
        .zip(on)
        .filter_map(|(n, items)| {
            let counts: Vec<(Item, u32)> = items.into_iter().collect();
            pattern::fit(shape, &counts, &need).map(|p| (*n, p))
        })
        .collect()
}

/// The instances of a pattern on node `n`: the GPUs they held before where those are
/// still free and valid, the pattern's own layout otherwise.
fn layout(
    m: &Master,
    gi: usize,
    n: NodeIdx,
    pat: &pattern::Pattern,
    held: Option<&[(Key, Vec<u32>)]>,
) -> Vec<Placed> {
    let gpu_at = pattern::positions(m.c, n);
    let pos_of: BTreeMap<u32, u16> = gpu_at
        .iter()
        .enumerate()
        .map(|(i, g)| (*g, i as u16))
        .collect();
    let items: Vec<Item> = pat
        .items
        .iter()
        .flat_map(|(i, k)| std::iter::repeat_n(*i, *k as usize))
        .collect();
    let mut places: Vec<Vec<u16>> = pat.places.clone();
    if let Some(held) = held.filter(|h| !h.is_empty()) {
        if let Some(kept) = keep_layout(m, gi, &items, held, &pos_of) {
            places = kept;
        }
    }
    items
        .into_iter()
        .zip(places)
        .map(|(item, ps)| {
            let mut gpus: Vec<u32> = ps.iter().map(|p| gpu_at[*p as usize]).collect();
            gpus.sort_unstable();
            Placed {
                node: n,
                item,
                gpus,
            }
        })
        .collect()
}

/// Positions for `items` that reuse the GPUs held before where possible; `None` when
/// the rest then does not fit (the pattern's own layout is used).
fn keep_layout(
    m: &Master,
    gi: usize,
    items: &[Item],
    held: &[(Key, Vec<u32>)],
    pos_of: &BTreeMap<u32, u16>,
) -> Option<Vec<Vec<u16>>> {
    let shape = m.group_shape(gi);
    let mut slots = Slots::all(shape);
    let domain_of: BTreeMap<u16, usize> = slots
        .free
        .iter()
        .enumerate()
        .flat_map(|(d, ps)| ps.iter().map(move |p| (*p, d)))
        .collect();
    let mut used_held = vec![false; held.len()];
    let mut places: Vec<Option<Vec<u16>>> = vec![None; items.len()];
    for (k, item) in items.iter().enumerate() {
        let need = m.need(*item);
        for (h, (hk, gpus)) in held.iter().enumerate() {
            if used_held[h] || *hk != key(*item) {
                continue;
            }
            let Some(ps) = gpus
                .iter()
                .map(|g| pos_of.get(g).copied())
                .collect::<Option<Vec<u16>>>()
            else {
                continue;
            };
            let ok = if need.milli > 0 {
                ps.len() == 1 && slots.add_fraction(ps[0], &need)
            } else if need.gpus as usize == ps.len() && need.gpus > 0 {
                let one_domain = ps
                    .iter()
                    .map(|p| domain_of[p])
                    .collect::<BTreeSet<_>>()
                    .len()
                    == 1;
                (!need.nvlink || one_domain) && slots.take(&ps)
            } else {
                need.gpus == 0 && need.milli == 0 && ps.is_empty()
            };
            if ok {
                used_held[h] = true;
                places[k] = Some(ps);
                break;
            }
        }
    }
    let rest: Vec<usize> = (0..items.len()).filter(|k| places[*k].is_none()).collect();
    let needs: Vec<pattern::Need> = rest.iter().map(|k| m.need(items[*k])).collect();
    let got = pattern::fit_in(slots, &needs)?;
    for (k, ps) in rest.into_iter().zip(got) {
        places[k] = Some(ps);
    }
    places.into_iter().collect()
}

/// Gangs per shape, each with the workload it held before.
type ShapeGangs = BTreeMap<usize, Vec<(GangNodes, Option<usize>)>>;

/// Gangs from local instances and dealt shares, then onto workloads.
fn gangs(cx: &Ctx, placed: &[Placed], a: &mut Assignment) {
    // Gangs per shape: (nodes, workload it held before).
    let mut per_shape = ShapeGangs::new();
    let prev_owner = previous_owner(cx.prev);
    for pl in placed {
        if let Item::Local { s, .. } = pl.item {
            let g = vec![(pl.node, pl.gpus.clone())];
            let owner = prev_owner.get(&g).copied();
            per_shape.entry(s as usize).or_default().push((g, owner));
        }
    }
    deal_shares(cx, placed, &prev_owner, &mut per_shape);
    onto_workloads(cx, per_shape, a);
}

/// The share slots of each (shape, mode, domain), dealt to as many gangs as the solution
/// has there (previous gangs re-formed first), into `per_shape`.
fn deal_shares(
    cx: &Ctx,
    placed: &[Placed],
    prev_owner: &BTreeMap<GangNodes, usize>,
    per_shape: &mut ShapeGangs,
) {
    let (m, p) = (cx.m, cx.m.p);
    // Share slots per (shape, mode, domain).
    let group_of = p.group_of();
    let mut slots: BTreeMap<(usize, usize, String), Vec<Slot>> = BTreeMap::new();
    for pl in placed {
        if let Item::Share { s, m: mi, partial } = pl.item {
            let gi = group_of[&pl.node];
            if let Some(d) = p.domain_of(&p.groups[gi], &p.shapes[s as usize].modes[mi as usize]) {
                slots
                    .entry((s as usize, mi as usize, d))
                    .or_default()
                    .push((pl.node, pl.gpus.clone(), partial));
            }
        }
    }
    for ((s, mi, d), list) in slots {
        let k = m.y.get(&(s, mi, d)).map(|y| cx.val(*y)).unwrap_or(0) as usize;
        let shares = p.shapes[s].shares as usize;
        let owners: BTreeMap<GangNodes, usize> = prev_owner
            .iter()
            .filter(|(g, w)| g.len() == shares && p.shapes[s].workloads.contains(w))
            .map(|(g, w)| (g.clone(), *w))
            .collect();
        let full = shares - usize::from(partial_size(&p.shapes[s]).is_some());
        let formed = deal(&list, k, full, cx.prev.map(|_| &owners));
        for (g, owner) in formed {
            per_shape.entry(s).or_default().push((g, owner));
        }
    }
}

/// Gangs onto workloads: a gang returns to the class it held before, the rest go in
/// admission order, as many per class as the solution admits.
fn onto_workloads(cx: &Ctx, per_shape: ShapeGangs, a: &mut Assignment) {
    let (m, c, p) = (cx.m, cx.m.c, cx.m.p);
    let mut replica: BTreeMap<usize, u32> = BTreeMap::new();
    for (s, mut list) in per_shape {
        let mut want: BTreeMap<usize, u64> = p.shapes[s]
            .workloads
            .iter()
            .map(|w| (*w, m.a.get(w).map(|v| cx.val(*v)).unwrap_or(0)))
            .collect();
        let mut out: Vec<(usize, GangNodes)> = Vec::new();
        list.retain(
            |(g, owner)| match owner.filter(|w| want.get(w).is_some_and(|k| *k > 0)) {
                Some(w) => {
                    *want.get_mut(&w).unwrap() -= 1;
                    out.push((w, g.clone()));
                    false
                }
                None => true,
            },
        );
        let mut queue = order(c, p.shapes[s].workloads.iter().copied()).into_iter();
        let mut cur = queue.next();
        for (g, _) in list {
            while let Some(w) = cur {
                if want.get(&w).is_some_and(|k| *k > 0) {
                    break;
                }
                cur = queue.next();
            }
            let Some(w) = cur else { break };
            *want.get_mut(&w).unwrap() -= 1;
            out.push((w, g));
        }
        for (w, mut g) in out {
            g.sort();
            let r = replica.entry(w).or_default();
            a.gangs.push((w, *r, g));
            *r += 1;
        }
    }
    a.gangs.sort_by_key(|x| (x.0, x.1));
}

/// Previous gangs by their (sorted) nodes and GPUs, with their workload.
fn previous_owner(prev: Option<&Previous>) -> BTreeMap<GangNodes, usize> {
    let mut out = BTreeMap::new();
    if let Some(pv) = prev {
        for (w, gangs) in &pv.gangs {
            for g in gangs {
                let mut g = g.clone();
                for (_, gpus) in g.iter_mut() {
                    gpus.sort_unstable();
                }
                g.sort();
                out.insert(g, *w);
            }
        }
    }
    out
}

/// Deals share slots to `k` gangs on distinct nodes. Previous gangs whose every share
/// is among the slots re-form first; the rest are dealt round-robin (each node's slots
/// consecutively, full shares then the one partial share per gang). Falls back to
/// dealing everything when re-forming leaves the rest undealable.
fn deal(
    list: &[Slot],
    k: usize,
    full: usize,
    prev: Option<&BTreeMap<GangNodes, usize>>,
) -> Vec<(GangNodes, Option<usize>)> {
    if let Some(owners) = prev {
        let mut used = vec![false; list.len()];
        let mut formed: Vec<(GangNodes, Option<usize>)> = Vec::new();
        for (g, w) in owners {
            if formed.len() >= k {
                break;
            }
            let mut picks = Vec::new();
            for (n, gpus) in g {
                match (0..list.len()).find(|&i| {
                    !used[i] && !picks.contains(&i) && list[i].0 == *n && list[i].1 == *gpus
                }) {
                    Some(i) => picks.push(i),
                    None => break,
                }
            }
            if picks.len() == g.len() && !picks.is_empty() {
                for i in &picks {
                    used[*i] = true;
                }
                formed.push((g.clone(), Some(*w)));
            }
        }
        if !formed.is_empty() {
            let rest: Vec<Slot> = list
                .iter()
                .enumerate()
                .filter(|(i, _)| !used[*i])
                .map(|(_, s)| s.clone())
                .collect();
            if let Some(more) = round_robin(&rest, k - formed.len(), full) {
                formed.extend(more.into_iter().map(|g| (g, None)));
                return formed;
            }
        }
    }
    round_robin(list, k, full)
        .unwrap_or_default()
        .into_iter()
        .map(|g| (g, None))
        .collect()
}

/// Deals `full` full shares to each of `k` gangs cyclically (a node's shares go to
/// consecutive gangs, so to distinct ones while it has at most `k`), then gives each
/// gang one partial share on a node it does not use yet (a matching). Shares beyond
/// what the gangs need stay free.
fn round_robin(list: &[Slot], k: usize, full: usize) -> Option<Vec<GangNodes>> {
    if k == 0 {
        return Some(Vec::new());
    }
    let mut fulls: Vec<&Slot> = list.iter().filter(|s| !s.2).collect();
    let mut partial: Vec<&Slot> = list.iter().filter(|s| s.2).collect();
    fulls.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    partial.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    if fulls.len() < k * full {
        return None;
    }
    fulls.truncate(k * full);
    let full = fulls;
    let mut gangs: Vec<GangNodes> = vec![Vec::new(); k];
    for (t, s) in full.iter().enumerate() {
        gangs[t % k].push((s.0, s.1.clone()));
    }
    if !partial.is_empty() {
        if partial.len() < k {
            return None;
        }
        // Gang -> partial share (by index), by augmenting paths; shares left over stay
        // free.
        let allowed = |g: usize, p: usize| gangs[g].iter().all(|(n, _)| *n != partial[p].0);
        let mut owner: Vec<Option<usize>> = vec![None; partial.len()];
        fn augment(
            g: usize,
            seen: &mut [bool],
            owner: &mut [Option<usize>],
            allowed: &dyn Fn(usize, usize) -> bool,
        ) -> bool {
            for p in 0..owner.len() {
                if seen[p] || !allowed(g, p) {
                    continue;
                }
                seen[p] = true;
                if owner[p].is_none_or(|h| augment(h, seen, owner, allowed)) {
                    owner[p] = Some(g);
                    return true;
                }
            }
            false
        }
        for g in 0..k {
            let mut seen = vec![false; partial.len()];
            if !augment(g, &mut seen, &mut owner, &allowed) {
                return None;
            }
        }
        for (p, g) in owner.iter().enumerate() {
            if let Some(g) = g {
                gangs[*g].push((partial[p].0, partial[p].1.clone()));
            }
        }
    }
    for g in &gangs {
        let nodes: BTreeSet<NodeIdx> = g.iter().map(|(n, _)| *n).collect();
        if nodes.len() != g.len() {
            return None;
        }
    }
    Some(gangs)
}

/// Packed replicas: a fractional replica per GPU (counted), a whole-GPU replica per
/// entry, CPU-only replicas counted per node.
fn packed(cx: &Ctx, placed: &[Placed], a: &mut Assignment) {
    let mut counted: BTreeMap<(usize, NodeIdx, Vec<u32>), u32> = BTreeMap::new();
    // At most what is admitted (a pattern may hold more than its class needs).
    let mut left: BTreeMap<usize, u64> = cx.m.a.iter().map(|(w, a)| (*w, cx.val(*a))).collect();
    for pl in placed {
        let Item::Packed { w } = pl.item else {
            continue;
        };
        let w = w as usize;
        match left.get_mut(&w) {
            Some(k) if *k > 0 => *k -= 1,
            _ => continue,
        }
        if pl.gpus.len() > 1 {
            a.packed.push((w, pl.node, pl.gpus.clone(), 1));
        } else {
            *counted.entry((w, pl.node, pl.gpus.clone())).or_default() += 1;
        }
    }
    for ((w, n, gpus), k) in counted {
        // A whole-GPU replica of one GPU is listed one by one, as the checker expects.
        a.packed.push((w, n, gpus, k));
    }
    a.packed.sort();
}
