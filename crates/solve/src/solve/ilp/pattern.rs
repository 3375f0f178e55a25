//! Node patterns: what one whole-GPU node holds, exactly.
//!
//! A pattern is a multiset of [`Item`]s (gang shares, whole node-local gangs, packed
//! replicas) together with the GPUs each instance takes on a node of its group: it is a
//! real node-level placement, checked here by [`fit`] (NVLink domains, whole GPUs,
//! fractional shares per GPU, CPU and host memory), not a count the post-pass might fail
//! to pack. Nodes of one group have the same [`NodeShape`], so a pattern found for the
//! group is valid on each of its nodes; [`positions`] maps its GPU positions to one
//! node's GPU indexes. On a node that hands out GPUs through DRA a GPU holding
//! fractions holds one class's only (a device belongs to one ResourceClaim; see
//! [`crate::solve::pack`]).

use crate::model::sharing::Slots as Sharing;
use crate::model::{Cluster, NodeIdx};
use std::collections::BTreeMap;

/// What one replica-level unit on a whole-GPU node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Item {
    /// One node's share of a multi-node gang of shape `s` in mode `m`; `partial` for the
    /// one smaller share of a gang whose size is not a multiple of its GPUs per node.
    Share { s: u32, m: u32, partial: bool },
    /// A whole gang of shape `s` in mode `m` on one node.
    Local { s: u32, m: u32 },
    /// One replica of packed class `w`.
    Packed { w: u32 },
}

/// What one instance of an item takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Need {
    /// Whole GPUs.
    pub gpus: u32,
    /// The whole GPUs must sit in one NVLink domain of the node.
    pub nvlink: bool,
    /// A fraction of one GPU, in 1/1000 (0: none).
    pub milli: u32,
    /// CPU in 1/1000 cores.
    pub cpu: u64,
    /// Host memory in bytes.
    pub mem: u64,
    /// The device-plugin sharing a fraction needs of its node (`None`: shares of any
    /// size per GPU, see [`crate::model::sharing`]).
    pub slots: Option<Sharing>,
    /// The packed class a fraction belongs to (on a DRA node, one class per GPU).
    pub class: Option<u32>,
}

/// The part of a node that whole-GPU work can use; equal on every node of a group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct NodeShape {
    /// Usable GPUs per NVLink domain of the node, largest first.
    pub domains: Vec<u32>,
    /// CPU in 1/1000 cores, when the class declares it.
    pub cpu: Option<u64>,
    /// Host memory in bytes, when the class declares it.
    pub mem: Option<u64>,
    /// The node hands out GPUs through DRA: a GPU's fractions are one class's.
    pub dra: bool,
}

impl NodeShape {
    /// Whether the node's CPUs can limit `need`: never when it takes no CPU or the node
    /// declares none, nor when it takes at most one CPU per whole GPU and the node has
    /// a CPU per GPU (a Slurm job's CPU beside whole-GPU work only: the GPUs run out
    /// first).
    pub(crate) fn cpu_binds(&self, need: &Need) -> bool {
        match self.cpu {
            None => false,
            Some(_) if need.cpu == 0 => false,
            Some(cpu) => {
                let implied = need.milli == 0
                    && need.gpus > 0
                    && need.cpu <= 1000 * need.gpus as u64
                    && cpu >= 1000 * self.gpus() as u64;
                !implied
            }
        }
    }

    pub(crate) fn of(c: &Cluster, n: NodeIdx) -> NodeShape {
        NodeShape {
            domains: domains(c, n).iter().map(|d| d.len() as u32).collect(),
            cpu: c.node_cpu_milli(n),
            mem: c.node_memory(n),
            dra: c.node_allocation(n) == crate::model::Allocation::Dra,
        }
    }

    pub(crate) fn gpus(&self) -> u32 {
        self.domains.iter().sum()
    }

    /// First position of each domain.
    fn starts(&self) -> Vec<u32> {
        let mut s = Vec::with_capacity(self.domains.len());
        let mut at = 0;
        for d in &self.domains {
            s.push(at);
            at += d;
        }
        s
    }
}

/// A node's usable GPUs by NVLink domain, in canonical order: domains largest first
/// (then by lowest GPU index), GPUs ascending. A GPU outside any node-local domain is a
/// domain of its own; on a node of a multi-node NVLink domain (NVL72) all usable GPUs
/// form one domain.
fn domains(c: &Cluster, n: NodeIdx) -> Vec<Vec<u32>> {
    let node = &c.nodes[n];
    let mut by: BTreeMap<(u8, usize), Vec<u32>> = BTreeMap::new();
    for g in node.usable_gpus() {
        let key = if !node.mnnvl.is_empty() {
            (0, 0)
        } else {
            match g.nvlink_domain {
                Some(d) => (0, d),
                None => (1, g.index as usize),
            }
        };
        by.entry(key).or_default().push(g.index);
    }
    let mut out: Vec<Vec<u32>> = by.into_values().collect();
    for d in &mut out {
        d.sort_unstable();
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
    out
}

/// GPU index of every position of a node (canonical order, see [`NodeShape`]).
pub(crate) fn positions(c: &Cluster, n: NodeIdx) -> Vec<u32> {
    domains(c, n).into_iter().flatten().collect()
}

/// A pattern: item counts (sorted, all positive) and the GPU positions of every
/// instance (in `items` order, `count` instances each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    pub items: Vec<(Item, u32)>,
    pub places: Vec<Vec<u16>>,
}

impl Pattern {
    pub(crate) fn empty() -> Pattern {
        Pattern {
            items: Vec::new(),
            places: Vec::new(),
        }
    }
}

/// Places `counts` on a node of `shape`, or says it cannot be done. `need` gives each
/// item's requirement. Exact for what gpuplan's nodes hold (a handful of items per
/// node): NVLink-bound gangs and fractional shares are searched exhaustively, up to a
/// node limit past which the multiset is treated as not fitting.
pub(crate) fn fit(
    shape: &NodeShape,
    counts: &[(Item, u32)],
    need: &impl Fn(Item) -> Need,
) -> Option<Pattern> {
    let mut items: Vec<(Item, u32)> = counts.iter().copied().filter(|x| x.1 > 0).collect();
    items.sort();
    let (mut cpu, mut mem) = (0u64, 0u64);
    for (i, k) in &items {
        let n = need(*i);
        cpu += n.cpu * *k as u64;
        mem += n.mem * *k as u64;
    }
    if shape.cpu.is_some_and(|c| cpu > c) || shape.mem.is_some_and(|m| mem > m) {
        return None;
    }
    let inst: Vec<Need> = items
        .iter()
        .flat_map(|(i, k)| std::iter::repeat_n(need(*i), *k as usize))
        .collect();
    let places = fit_in(Slots::all(shape), &inst)?;
    Some(Pattern { items, places })
}

/// Free GPU positions of a node, by NVLink domain, the fractional load (and replicas)
/// already on some positions, and what the node's device plugin must then do.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slots {
    pub free: Vec<Vec<u16>>,
    pub frac: BTreeMap<u16, u32>,
    /// Fractional replicas per position holding fractions.
    pub count: BTreeMap<u16, u32>,
    /// The node holds whole-GPU work.
    pub whole: bool,
    /// Once a fraction carried by device-plugin replicas is on the node: the sharing all
    /// its GPUs get (`per_gpu`: the most replicas per GPU every fraction on it allows).
    pub shared: Option<Sharing>,
    /// The node hands out GPUs through DRA: one class's fractions per position.
    pub dra: bool,
    /// On a DRA node, the class whose fractions each position holds.
    pub owner: BTreeMap<u16, Option<u32>>,
}

impl Slots {
    /// Every position of `shape` free.
    pub(crate) fn all(shape: &NodeShape) -> Slots {
        let starts = shape.starts();
        Slots {
            free: shape
                .domains
                .iter()
                .zip(&starts)
                .map(|(size, s)| (*s..s + size).map(|p| p as u16).collect())
                .collect(),
            dra: shape.dra,
            ..Slots::default()
        }
    }

    /// Takes `positions` out of the free ones for whole-GPU work, if they are all free
    /// and the node is not shared by the device plugin.
    pub(crate) fn take(&mut self, positions: &[u16]) -> bool {
        if self.shared.is_some() || !self.take_free(positions) {
            return false;
        }
        self.whole = true;
        true
    }

    fn take_free(&mut self, positions: &[u16]) -> bool {
        if !positions
            .iter()
            .all(|p| self.free.iter().any(|d| d.contains(p)))
        {
            return false;
        }
        for d in &mut self.free {
            d.retain(|p| !positions.contains(p));
        }
        true
    }

    /// The node's sharing once fractions needing `slots` join it, if they may: a node
    /// shared by the device plugin holds no whole-GPU work, one strategy, at most the
    /// smallest `per_gpu` of its fractions on any GPU, and no share of another carrier.
    pub(crate) fn sharing_with(&self, slots: Option<Sharing>) -> Option<Option<Sharing>> {
        match (self.shared, slots) {
            (None, None) => Some(None),
            (Some(_), None) => None,
            (None, Some(s)) => {
                let per_gpu_shares = !self.frac.is_empty();
                let fits = self.count.values().all(|c| *c <= s.per_gpu);
                (!self.whole && !per_gpu_shares && fits).then_some(Some(s))
            }
            (Some(cur), Some(s)) => {
                let per_gpu = cur.per_gpu.min(s.per_gpu);
                let fits = self.count.values().all(|c| *c <= per_gpu);
                (cur.mps == s.mps && fits).then_some(Some(Sharing {
                    per_gpu,
                    mps: cur.mps,
                }))
            }
        }
    }

    /// Adds a fraction to `position` (free, or already holding fractions) if it fits.
    pub(crate) fn add_fraction(&mut self, position: u16, need: &Need) -> bool {
        let Some(shared) = self.sharing_with(need.slots) else {
            return false;
        };
        let cap = shared.map(|s| s.per_gpu).unwrap_or(u32::MAX);
        let milli = need.milli;
        if self.dra && self.owner.get(&position).is_some_and(|o| *o != need.class) {
            return false;
        }
        if let Some(load) = self.frac.get(&position).copied() {
            let count = self.count.get(&position).copied().unwrap_or(0);
            if load + milli > 1000 || count + 1 > cap {
                return false;
            }
            self.frac.insert(position, load + milli);
            self.count.insert(position, count + 1);
        } else {
            if milli > 1000 || cap == 0 || !self.take_free(&[position]) {
                return false;
            }
            self.frac.insert(position, milli);
            self.count.insert(position, 1);
        }
        if self.dra {
            self.owner.insert(position, need.class);
        }
        self.shared = shared;
        true
    }
}

/// Places instances (CPU and memory already checked) into `slots`; returns each
/// instance's positions.
pub(crate) fn fit_in(mut slots: Slots, inst: &[Need]) -> Option<Vec<Vec<u16>>> {
    let whole: u32 = inst.iter().map(|n| n.gpus).sum();
    // The node's sharing once every fraction is on it (no whole-GPU work beside a node
    // the device plugin shares).
    let mut shared = slots.shared;
    let mut probe = slots.clone();
    for n in inst.iter().filter(|n| n.milli > 0) {
        shared = probe.sharing_with(n.slots)?;
        probe.shared = shared;
    }
    if whole > 0 && (shared.is_some() || probe.shared.is_some()) {
        return None;
    }
    let free_total: usize = slots.free.iter().map(Vec::len).sum();
    if whole as usize > free_total {
        return None;
    }
    let mut places: Vec<Vec<u16>> = vec![Vec::new(); inst.len()];
    // 1. NVLink-bound instances, largest first, into domains (exhaustive).
    let mut bound: Vec<usize> = (0..inst.len())
        .filter(|&k| inst[k].nvlink && inst[k].gpus > 0)
        .collect();
    bound.sort_by_key(|&k| (std::cmp::Reverse(inst[k].gpus), k));
    let sizes: Vec<u32> = bound.iter().map(|&k| inst[k].gpus).collect();
    let caps: Vec<u32> = slots.free.iter().map(|d| d.len() as u32).collect();
    let chosen = assign_domains(&sizes, &caps)?;
    for (j, &k) in bound.iter().enumerate() {
        let d = chosen[j];
        places[k] = slots.free[d].drain(..sizes[j] as usize).collect();
    }
    // 2. Other whole-GPU instances, largest first: inside one domain when one has room
    // (the fullest such domain), else from the domains with the most free GPUs.
    let mut rest: Vec<usize> = (0..inst.len())
        .filter(|&k| !inst[k].nvlink && inst[k].gpus > 0)
        .collect();
    rest.sort_by_key(|&k| (std::cmp::Reverse(inst[k].gpus), k));
    let free = &mut slots.free;
    for k in rest {
        let g = inst[k].gpus as usize;
        let best = (0..free.len())
            .filter(|&d| free[d].len() >= g)
            .min_by_key(|&d| (free[d].len(), d));
        places[k] = match best {
            Some(d) => free[d].drain(..g).collect(),
            None => {
                let mut t = Vec::with_capacity(g);
                while t.len() < g {
                    let d =
                        (0..free.len()).max_by_key(|&d| (free[d].len(), std::cmp::Reverse(d)))?;
                    let n = (g - t.len()).min(free[d].len());
                    if n == 0 {
                        return None;
                    }
                    t.extend(free[d].drain(..n));
                }
                t.sort_unstable();
                t
            }
        };
    }
    // 3. Fractional instances onto GPUs already holding fractions, then the free ones
    // (on a DRA node, each class onto its own GPUs).
    let frac: Vec<usize> = (0..inst.len()).filter(|&k| inst[k].milli > 0).collect();
    let cap = shared.map(|s| s.per_gpu).unwrap_or(u32::MAX);
    if slots.dra {
        place_claimed(&slots, inst, &frac, cap, &mut places)?;
    } else if !frac.is_empty() {
        let mut gpus: Vec<u16> = slots.frac.keys().copied().collect();
        let loads: Vec<(u32, u32)> = gpus
            .iter()
            .map(|g| (slots.frac[g], slots.count.get(g).copied().unwrap_or(0)))
            .collect();
        let mut left: Vec<u16> = slots.free.iter().flatten().copied().collect();
        left.sort_unstable();
        gpus.extend(left);
        let sizes: Vec<u32> = frac.iter().map(|&k| inst[k].milli).collect();
        let bins = pack_fractions(&sizes, &loads, cap, gpus.len())?;
        for (j, &k) in frac.iter().enumerate() {
            places[k] = vec![gpus[bins[j]]];
        }
    }
    Some(places)
}

/// Step 3 of [`fit_in`] on a DRA node: the fractions `frac` of `inst`, class by class
/// (in class order), onto the GPUs holding that class's fractions and then onto free
/// GPUs no other class took. A class's fractions are all one size, so first-fit packs
/// each class onto as few new GPUs as can hold it, and the classes' GPUs add up.
fn place_claimed(
    slots: &Slots,
    inst: &[Need],
    frac: &[usize],
    cap: u32,
    places: &mut [Vec<u16>],
) -> Option<()> {
    let mut classes: Vec<Option<u32>> = frac.iter().map(|&k| inst[k].class).collect();
    classes.sort_unstable();
    classes.dedup();
    let mut left: Vec<u16> = slots.free.iter().flatten().copied().collect();
    left.sort_unstable();
    for class in classes {
        let mine: Vec<usize> = frac
            .iter()
            .copied()
            .filter(|&k| inst[k].class == class)
            .collect();
        let mut gpus: Vec<u16> = slots
            .frac
            .keys()
            .copied()
            .filter(|p| slots.owner.get(p).is_some_and(|o| *o == class))
            .collect();
        let loads: Vec<(u32, u32)> = gpus
            .iter()
            .map(|g| (slots.frac[g], slots.count.get(g).copied().unwrap_or(0)))
            .collect();
        let sizes: Vec<u32> = mine.iter().map(|&k| inst[k].milli).collect();
        let mut order: Vec<usize> = (0..sizes.len()).collect();
        order.sort_by_key(|&j| (std::cmp::Reverse(sizes[j]), j));
        if loads.iter().any(|(_, c)| *c > cap) {
            return None;
        }
        let (used, bins) = first_fit(&sizes, &loads, cap, &order);
        let new = used - loads.len();
        if new > left.len() {
            return None;
        }
        gpus.extend(left.drain(..new));
        for (j, &k) in mine.iter().enumerate() {
            places[k] = vec![gpus[bins[j]]];
        }
    }
    Some(())
}

/// Assigns items of `sizes` (sorted largest first) to bins of capacity `caps`; returns
/// each item's bin. Depth-first, bins with equal remaining room tried once.
fn assign_domains(sizes: &[u32], caps: &[u32]) -> Option<Vec<usize>> {
    fn go(
        i: usize,
        sizes: &[u32],
        room: &mut Vec<u32>,
        out: &mut Vec<usize>,
        budget: &mut u32,
    ) -> bool {
        if i == sizes.len() {
            return true;
        }
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let mut tried: Vec<u32> = Vec::new();
        for d in 0..room.len() {
            if room[d] < sizes[i] || tried.contains(&room[d]) {
                continue;
            }
            tried.push(room[d]);
            room[d] -= sizes[i];
            out.push(d);
            if go(i + 1, sizes, room, out, budget) {
                return true;
            }
            out.pop();
            room[d] += sizes[i];
        }
        false
    }
    let mut room = caps.to_vec();
    let mut out = Vec::with_capacity(sizes.len());
    let mut budget = 200_000;
    go(0, sizes, &mut room, &mut out, &mut budget).then_some(out)
}

/// Packs fractions (1/1000 of a GPU) onto at most `gpus` GPUs, the first ones already
/// holding `loads` (thousandths, replicas), at most `cap` replicas per GPU; returns each
/// fraction's GPU. First-fit decreasing, then an exhaustive search when that needs too
/// many GPUs.
fn pack_fractions(
    sizes: &[u32],
    loads: &[(u32, u32)],
    cap: u32,
    gpus: usize,
) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&k| (std::cmp::Reverse(sizes[k]), k));
    let total: u64 = sizes.iter().map(|s| *s as u64).sum();
    let room: u64 = loads
        .iter()
        .map(|(l, _)| 1000 - (*l).min(1000) as u64)
        .sum::<u64>()
        + (gpus.saturating_sub(loads.len())) as u64 * 1000;
    if total > room || loads.iter().any(|(_, c)| *c > cap) {
        return None;
    }
    let (used, mut bin) = first_fit(sizes, loads, cap, &order);
    if used <= gpus {
        return Some(bin);
    }
    let mut load = loads.to_vec();
    let mut st = Search {
        order: &order,
        sizes,
        cap,
        gpus,
        budget: 200_000,
    };
    st.go(0, &mut load, &mut bin, total).then_some(bin)
}

/// First-fit decreasing (`order`: largest first) onto GPUs holding `loads`, at most
/// `cap` replicas each, opening new ones as needed: the GPUs used, and each fraction's
/// GPU.
fn first_fit(
    sizes: &[u32],
    loads: &[(u32, u32)],
    cap: u32,
    order: &[usize],
) -> (usize, Vec<usize>) {
    let mut load: Vec<(u32, u32)> = loads.to_vec();
    let mut bin = vec![0usize; sizes.len()];
    for &k in order {
        match load
            .iter()
            .position(|(l, c)| l + sizes[k] <= 1000 && *c < cap)
        {
            Some(b) => {
                load[b].0 += sizes[k];
                load[b].1 += 1;
                bin[k] = b;
            }
            None => {
                load.push((sizes[k], 1));
                bin[k] = load.len() - 1;
            }
        }
    }
    (load.len(), bin)
}

/// The exhaustive fraction packing: each fraction (largest first) into an open GPU
/// (GPUs of equal load tried once) or a new one, within a node budget.
struct Search<'a> {
    order: &'a [usize],
    sizes: &'a [u32],
    /// Replicas per GPU at most.
    cap: u32,
    gpus: usize,
    budget: u32,
}

impl Search<'_> {
    /// Places fractions `i..` given the GPUs' `load` (thousandths, replicas) and `left`
    /// thousandths still to place; fills `bin` and says whether it succeeded.
    fn go(&mut self, i: usize, load: &mut Vec<(u32, u32)>, bin: &mut [usize], left: u64) -> bool {
        if i == self.order.len() {
            return true;
        }
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        let room: u64 = load.iter().map(|(l, _)| (1000 - l) as u64).sum::<u64>()
            + (self.gpus - load.len()) as u64 * 1000;
        if left > room {
            return false;
        }
        let k = self.order[i];
        let s = self.sizes[k];
        let mut tried: Vec<(u32, u32)> = Vec::new();
        for b in 0..load.len() {
            if load[b].0 + s > 1000 || load[b].1 >= self.cap || tried.contains(&load[b]) {
                continue;
            }
            tried.push(load[b]);
            load[b].0 += s;
            load[b].1 += 1;
            bin[k] = b;
            if self.go(i + 1, load, bin, left - s as u64) {
                return true;
            }
            load[b].0 -= s;
            load[b].1 -= 1;
        }
        if load.len() < self.gpus && self.cap > 0 {
            load.push((s, 1));
            bin[k] = load.len() - 1;
            if self.go(i + 1, load, bin, left - s as u64) {
                return true;
            }
            load.pop();
        }
        false
    }
}

/// The greatest common divisor (of GPU shares in thousandths: the unit of a share table).
pub(super) fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole GPUs a pattern uses (a GPU holding fractions counts once).
    fn gpus_used(p: &Pattern) -> usize {
        let mut used: Vec<u16> = p.places.iter().flatten().copied().collect();
        used.sort_unstable();
        used.dedup();
        used.len()
    }

    fn shape(domains: &[u32]) -> NodeShape {
        NodeShape {
            domains: domains.to_vec(),
            cpu: Some(8_000),
            mem: None,
            dra: false,
        }
    }

    fn need(i: Item) -> Need {
        match i {
            Item::Local { s, .. } => Need {
                gpus: s,
                nvlink: true,
                ..Need::default()
            },
            Item::Share { s, .. } => Need {
                gpus: s,
                ..Need::default()
            },
            Item::Packed { w } => Need {
                milli: w,
                cpu: 1_000,
                ..Need::default()
            },
        }
    }

    #[test]
    fn nvlink_bound_gangs_need_a_domain_each() {
        // Two domains of 4: two 4-GPU gangs fit, a 5-GPU gang does not.
        let s = shape(&[4, 4]);
        let p = fit(&s, &[(Item::Local { s: 4, m: 0 }, 2)], &need).unwrap();
        assert_eq!(p.places, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert!(fit(&s, &[(Item::Local { s: 5, m: 0 }, 1)], &need).is_none());
        // 3 + 3 + 2 into 4 + 4: 3 and 3 take both domains, 2 is left without room.
        assert!(
            fit(
                &s,
                &[
                    (Item::Local { s: 3, m: 0 }, 2),
                    (Item::Local { s: 2, m: 0 }, 1)
                ],
                &need
            )
            .is_none()
        );
        // Shares are not bound to a domain: 3 + 3 + 2 GPUs fit in 8.
        let p = fit(
            &s,
            &[
                (
                    Item::Share {
                        s: 3,
                        m: 0,
                        partial: false,
                    },
                    2,
                ),
                (
                    Item::Share {
                        s: 2,
                        m: 0,
                        partial: false,
                    },
                    1,
                ),
            ],
            &need,
        )
        .unwrap();
        assert_eq!(gpus_used(&p), 8);
    }

    #[test]
    fn seven_gpus_hold_three_pairs() {
        // The issue-14 case: a node with one GPU down holds 3 two-GPU replicas.
        let s = shape(&[7]);
        let p = fit(
            &s,
            &[(
                Item::Share {
                    s: 2,
                    m: 0,
                    partial: false,
                },
                3,
            )],
            &need,
        )
        .unwrap();
        assert_eq!(gpus_used(&p), 6);
        assert!(
            fit(
                &s,
                &[(
                    Item::Share {
                        s: 2,
                        m: 0,
                        partial: false
                    },
                    4
                )],
                &need
            )
            .is_none()
        );
    }

    #[test]
    fn fractions_pack_per_gpu_and_respect_cpu() {
        let s = shape(&[2]);
        // 600 + 400 on one GPU, 600 + 400 on the other (first-fit decreasing finds it).
        let p = fit(
            &s,
            &[(Item::Packed { w: 600 }, 2), (Item::Packed { w: 400 }, 2)],
            &need,
        )
        .unwrap();
        assert_eq!(gpus_used(&p), 2);
        // 5 x 400 needs 3 GPUs.
        assert!(fit(&s, &[(Item::Packed { w: 400 }, 5)], &need).is_none());
        // CPU: 9 replicas of 1 core on an 8-core node.
        let big = shape(&[8]);
        assert!(fit(&big, &[(Item::Packed { w: 100 }, 9)], &need).is_none());
        // A whole GPU and fractions never share a GPU.
        let p = fit(
            &s,
            &[
                (
                    Item::Share {
                        s: 1,
                        m: 0,
                        partial: false,
                    },
                    1,
                ),
                (Item::Packed { w: 500 }, 2),
            ],
            &need,
        )
        .unwrap();
        assert_eq!(p.places[0], vec![0]);
        assert_eq!(p.places[1], vec![1]);
        assert_eq!(p.places[2], vec![1]);
    }

    #[test]
    fn a_dra_gpu_holds_one_class_s_fractions() {
        // Classes 1 and 2, two 25% fractions each, on a node of two GPUs: each class
        // gets a GPU of its own under DRA; a third class finds none. Off DRA all three
        // fit on two GPUs (six quarters).
        let need = |i: Item| match i {
            Item::Packed { w } => Need {
                milli: 250,
                class: Some(w),
                ..Need::default()
            },
            _ => Need::default(),
        };
        let mut s = shape(&[2]);
        s.dra = true;
        let two = [(Item::Packed { w: 1 }, 2), (Item::Packed { w: 2 }, 2)];
        let p = fit(&s, &two, &need).unwrap();
        assert_eq!(p.places, vec![vec![0], vec![0], vec![1], vec![1]]);
        let three = [
            (Item::Packed { w: 1 }, 2),
            (Item::Packed { w: 2 }, 2),
            (Item::Packed { w: 3 }, 2),
        ];
        assert!(fit(&s, &three, &need).is_none());
        s.dra = false;
        let p = fit(&s, &three, &need).unwrap();
        assert_eq!(gpus_used(&p), 2);
    }

    #[test]
    fn exhaustive_fraction_packing_beats_first_fit() {
        // 500 400 300 300 300 200: FFD uses 3 GPUs (500+400, 300+300+300, 200)? It
        // fits 500+400, 300+300+300, 200 -> 3; the optimum is 2 (500+300+200, 400+300+300).
        let bins = pack_fractions(&[500, 400, 300, 300, 300, 200], &[], u32::MAX, 2).unwrap();
        let mut load = [0u32; 2];
        for (k, b) in bins.iter().enumerate() {
            load[*b] += [500, 400, 300, 300, 300, 200][k];
        }
        assert!(load.iter().all(|l| *l <= 1000));
    }
}
