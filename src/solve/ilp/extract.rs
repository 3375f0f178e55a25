//! Post-pass: ILP counts -> concrete nodes, GPUs, layouts and instances.
//!
//! Deterministic: groups, nodes and GPUs are walked in name/index order, workloads in
//! priority order then name. Gang shares are placed largest first on aligned GPU blocks
//! (buddy style), which is exact for power-of-two sizes; a gang whose shares cannot all
//! be placed on distinct nodes is dropped whole (all-or-nothing) and reported unplaced.

use super::formulation::Formulation;
use super::problem::Problem;
use crate::catalog::MigProfile;
use crate::model::{Cluster, NodeIdx};
use crate::placement::PoolMode;
use crate::solve::Assignment;
use crate::solve::previous::Previous;
use std::collections::{BTreeMap, BTreeSet};

fn val(values: &[f64], col: usize) -> u64 {
    values.get(col).copied().unwrap_or(0.0).round().max(0.0) as u64
}

/// Workloads in admission order: higher priority first, then name.
fn order(c: &Cluster, ws: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = ws.into_iter().collect();
    v.sort_by_key(|w| {
        (
            std::cmp::Reverse(
                c.priority(&c.workloads[*w].priority)
                    .map(|p| p.value)
                    .unwrap_or(i64::MIN),
            ),
            c.workloads[*w].name.clone(),
        )
    });
    v
}

/// How gang jobs are packed: (multi-node gangs before node-local ones, multi-node
/// shares on the nodes with the most free GPUs first).
#[derive(Clone, Copy)]
struct Strategy {
    multi_first: bool,
    spread: bool,
}

const STRATEGIES: [Strategy; 4] = [
    Strategy {
        multi_first: false,
        spread: false,
    },
    Strategy {
        multi_first: true,
        spread: false,
    },
    Strategy {
        multi_first: false,
        spread: true,
    },
    Strategy {
        multi_first: true,
        spread: true,
    },
];

/// GPUs placed in gangs per priority value, highest first (compared lexicographically).
fn gang_score(c: &Cluster, a: &Assignment) -> Vec<(i64, u64)> {
    let mut m: BTreeMap<i64, u64> = BTreeMap::new();
    for (w, _, nodes) in &a.gangs {
        let v = c
            .priority(&c.workloads[*w].priority)
            .map(|p| p.value)
            .unwrap_or(i64::MIN);
        *m.entry(v).or_default() += nodes.iter().map(|n| n.1.len() as u64).sum::<u64>();
    }
    let mut all: Vec<i64> = c
        .workloads
        .iter()
        .map(|w| c.priority(&w.priority).map(|p| p.value).unwrap_or(i64::MIN))
        .collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    all.dedup();
    all.into_iter()
        .map(|v| (v, m.get(&v).copied().unwrap_or(0)))
        .collect()
}

#[derive(Clone)]
struct Free {
    /// Free GPU indexes per node.
    gpus: BTreeMap<NodeIdx, BTreeSet<u32>>,
}

impl Free {
    /// Takes `need` GPUs inside an aligned free block of `block` GPUs (by position in the
    /// node's usable GPU list), lowest first.
    fn take(&mut self, c: &Cluster, n: NodeIdx, need: u32, block: u32) -> Option<Vec<u32>> {
        let usable: Vec<u32> = c.nodes[n].usable_gpus().map(|g| g.index).collect();
        let free = self.gpus.get_mut(&n)?;
        let block = block.max(need).max(1) as usize;
        let mut start = 0;
        while start + block <= usable.len() {
            let blk = &usable[start..start + block];
            if blk.iter().filter(|g| free.contains(g)).count() >= need as usize
                && blk[..need as usize].iter().all(|g| free.contains(g))
            {
                let got: Vec<u32> = blk[..need as usize].to_vec();
                for g in &got {
                    free.remove(g);
                }
                return Some(got);
            }
            start += block;
        }
        None
    }

    /// Takes exactly these GPUs (a previous gang's share) when they are free and form the
    /// start of an aligned block of `block` GPUs, as [`Free::take`] would have placed them.
    fn take_exact(&mut self, c: &Cluster, n: NodeIdx, gpus: &[u32], block: u32) -> bool {
        let usable: Vec<u32> = c.nodes[n].usable_gpus().map(|g| g.index).collect();
        let mut want = gpus.to_vec();
        want.sort_unstable();
        let block = block.max(want.len() as u32).max(1) as usize;
        let Some(start) = want
            .first()
            .and_then(|g0| usable.iter().position(|g| g == g0))
        else {
            return false;
        };
        if start % block != 0
            || start + block > usable.len()
            || usable[start..start + want.len()] != want[..]
        {
            return false;
        }
        let Some(free) = self.gpus.get_mut(&n) else {
            return false;
        };
        if !want.iter().all(|g| free.contains(g)) {
            return false;
        }
        for g in &want {
            free.remove(g);
        }
        true
    }

    fn give_back(&mut self, n: NodeIdx, gpus: &[u32]) {
        if let Some(f) = self.gpus.get_mut(&n) {
            f.extend(gpus.iter().copied());
        }
    }
}

pub fn assignment(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    values: &[f64],
    prev: Option<&Previous>,
) -> Assignment {
    let mut a = Assignment {
        node_mode: vec![None; c.nodes.len()],
        ..Default::default()
    };
    // 1. Node modes: whole-GPU nodes first in each group, then MIG, time-slice, MPS;
    // with a previous placement, nodes that had a mode keep it where the counts allow.
    let mut by_mode: BTreeMap<(usize, PoolMode), Vec<NodeIdx>> = BTreeMap::new();
    for (gi, g) in p.groups.iter().enumerate() {
        let want: Vec<(PoolMode, usize)> = PoolMode::ALL
            .into_iter()
            .filter_map(|mode| {
                f.n.get(&(gi, mode))
                    .map(|v| (mode, val(values, v.1) as usize))
            })
            .collect();
        for (mode, nodes) in modes_of(g, &want, prev) {
            for &n in &nodes {
                if mode != PoolMode::WholeGpu || g.pinned.is_some() {
                    a.node_mode[n] = Some(mode);
                }
            }
            by_mode.insert((gi, mode), nodes);
        }
    }
    let free = Free {
        gpus: c
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (i, n.usable_gpus().map(|g| g.index).collect()))
            .collect(),
    };
    // The ILP fixes gang counts per group; which node takes which share is a packing
    // step that can fail for one order and succeed for another (shares of a gang need
    // distinct nodes). Try a few deterministic strategies, keep the best by admitted
    // GPUs per priority level (highest first), the first on ties.
    let demand: u64 = p
        .shapes
        .iter()
        .flat_map(|s| s.workloads.iter().map(move |w| (s, w)))
        .map(|(s, w)| f.a.get(w).map(|v| val(values, v.1)).unwrap_or(0) * s.gpus as u64)
        .sum();
    // With a previous placement each strategy is tried replaying the previous gangs
    // first, then without (replaying must never cost a gang).
    let replays: &[bool] = if prev.is_some_and(|pv| !pv.gangs.is_empty()) {
        &[true, false]
    } else {
        &[false]
    };
    let mut best: Option<(Vec<(i64, u64)>, Assignment)> = None;
    'strategies: for &replay in replays {
        for strategy in STRATEGIES {
            let mut fr = free.clone();
            let mut aa = a.clone();
            let keep = prev.filter(|_| replay);
            gangs(
                c,
                p,
                f,
                (values, &by_mode),
                &mut fr,
                &mut aa,
                strategy,
                keep,
            );
            let score = gang_score(c, &aa);
            let placed: u64 = score.iter().map(|x| x.1).sum();
            if best.as_ref().is_none_or(|b| score > b.0) {
                best = Some((score, aa));
            }
            if placed >= demand {
                break 'strategies;
            }
        }
    }
    if let Some((_, aa)) = best {
        a = aa;
    }
    mig(c, p, f, values, &by_mode, &mut a, prev);
    shared(c, p, f, values, &by_mode, &mut a, prev);
    packed(c, p, f, values, &by_mode, &mut a, prev);
    a
}

/// Which nodes of a group take each pool mode, given how many the ILP wants in each
/// (`want`, in [`PoolMode::ALL`] order). Without a previous placement: in name order,
/// whole-GPU first. With one: first the nodes that had the mode before, then the rest
/// in name order; each list is in name order.
fn modes_of(
    g: &super::problem::Group,
    want: &[(PoolMode, usize)],
    prev: Option<&Previous>,
) -> Vec<(PoolMode, Vec<NodeIdx>)> {
    let mut out: Vec<(PoolMode, Vec<NodeIdx>)> =
        want.iter().map(|(m, _)| (*m, Vec::new())).collect();
    let mut taken: BTreeSet<NodeIdx> = BTreeSet::new();
    if let Some(pv) = prev {
        for (i, (mode, k)) in want.iter().enumerate() {
            for &n in &g.nodes {
                if out[i].1.len() >= *k {
                    break;
                }
                if pv.node_mode.get(n).copied().flatten() == Some(*mode) && taken.insert(n) {
                    out[i].1.push(n);
                }
            }
        }
    }
    let mut rest = g.nodes.iter().copied().filter(|n| !taken.contains(n));
    // Group nodes are in name order; keep each list so.
    let pos: BTreeMap<NodeIdx, usize> = g.nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    for (i, (_, k)) in want.iter().enumerate() {
        while out[i].1.len() < *k {
            let Some(n) = rest.next() else { break };
            out[i].1.push(n);
        }
        if prev.is_some() {
            out[i].1.sort_by_key(|n| pos[n]);
        }
    }
    out
}

/// Packed classes onto whole-GPU nodes: first the counts the ILP chose per group (on
/// that group's nodes, best-aligned node first), then what did not fit there on any
/// node; CPU-only classes last, on what is left (they take no GPU, so every replica
/// is tried).
fn packed(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    values: &[f64],
    by_mode: &BTreeMap<(usize, PoolMode), Vec<NodeIdx>>,
    a: &mut Assignment,
    prev: Option<&Previous>,
) {
    use crate::solve::pack::{self, Bins, Policy};
    if p.packed.is_empty() {
        return;
    }
    let mut whole: Vec<NodeIdx> = (0..p.groups.len())
        .filter_map(|gi| by_mode.get(&(gi, PoolMode::WholeGpu)))
        .flatten()
        .copied()
        .collect();
    whole.sort_by(|x, y| c.nodes[*x].name.cmp(&c.nodes[*y].name));
    let mut bins = Bins::new(c, a, whole.iter().copied());
    // With a previous placement, replicas first go back where they were, within the
    // ILP's count for the group (CPU-only classes: within their admitted count).
    let mut kept: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let mut kept_cpu: BTreeMap<usize, u64> = BTreeMap::new();
    if let Some(pv) = prev.filter(|pv| !pv.packed.is_empty()) {
        let group_of = whole_group_of(by_mode);
        for w in pack::largest_first(c, p.packed.keys().copied()) {
            let wl = &c.workloads[w];
            let cpu_only = wl.packed_gpu_milli() == 0;
            for (n, gs, k) in pv.packed.get(&w).map(Vec::as_slice).unwrap_or(&[]) {
                let Some(&gi) = group_of.get(n) else { continue };
                for _ in 0..*k {
                    let room = if cpu_only {
                        wl.replicas as u64 - kept_cpu.get(&w).copied().unwrap_or(0)
                    } else {
                        f.pk.get(&(w, gi)).map(|v| val(values, v.1)).unwrap_or(0)
                            - kept.get(&(w, gi)).copied().unwrap_or(0)
                    };
                    if room == 0 || !bins.place_exact(c, w, *n, gs) {
                        break;
                    }
                    pack::record(a, w, *n, gs.clone(), wl.packed_gpu_milli() >= 1000);
                    if cpu_only {
                        *kept_cpu.entry(w).or_default() += 1;
                    } else {
                        *kept.entry((w, gi)).or_default() += 1;
                    }
                }
            }
        }
    }
    let mut left: Vec<(usize, u64)> = Vec::new();
    let mut cpu_only: Vec<(usize, u64)> = Vec::new();
    for w in pack::largest_first(c, p.packed.keys().copied()) {
        let wl = &c.workloads[w];
        if wl.packed_gpu_milli() == 0 {
            let k = kept_cpu.get(&w).copied().unwrap_or(0);
            cpu_only.push((w, wl.replicas as u64 - k));
            continue;
        }
        let mut placed = 0;
        for gi in 0..p.groups.len() {
            let Some(v) = f.pk.get(&(w, gi)) else {
                continue;
            };
            let nodes = by_mode
                .get(&(gi, PoolMode::WholeGpu))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let again = kept.get(&(w, gi)).copied().unwrap_or(0);
            placed += again;
            for _ in again..val(values, v.1) {
                let Some((n, gs)) = bins.place(c, w, nodes, Policy::Aligned) else {
                    break;
                };
                pack::record(a, w, n, gs, wl.packed_gpu_milli() >= 1000);
                placed += 1;
            }
        }
        let admitted = f.a.get(&w).map(|v| val(values, v.1)).unwrap_or(0);
        if admitted > placed {
            left.push((w, admitted - placed));
        }
    }
    for (w, k) in left.into_iter().chain(cpu_only) {
        let whole_gpus = c.workloads[w].packed_gpu_milli() >= 1000;
        for _ in 0..k {
            let Some((n, gs)) = bins.place(c, w, &whole, Policy::Aligned) else {
                break;
            };
            pack::record(a, w, n, gs, whole_gpus);
        }
    }
    a.packed.sort();
}

/// One gang to place: the shape, its per-share footprint, and the groups (with share
/// counts still available) it may take shares from.
struct GangJob {
    shape: usize,
    mode: usize,
    groups: Vec<usize>,
    block: u32,
}

/// Nodes of each (group, pool mode).
type ByMode = BTreeMap<(usize, PoolMode), Vec<NodeIdx>>;

/// The group of each whole-GPU node.
fn whole_group_of(by_mode: &ByMode) -> BTreeMap<NodeIdx, usize> {
    by_mode
        .iter()
        .filter(|((_, mode), _)| *mode == PoolMode::WholeGpu)
        .flat_map(|((gi, _), nodes)| nodes.iter().map(move |n| (*n, *gi)))
        .collect()
}

/// Whole-GPU gangs onto nodes: `solution` is the ILP's column values and the nodes
/// of each (group, mode). With `prev`, gangs first go back where they were (see
/// [`replay`]).
#[allow(clippy::too_many_arguments)] // the post-pass state, passed down once
fn gangs(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    solution: (&[f64], &ByMode),
    free: &mut Free,
    a: &mut Assignment,
    strategy: Strategy,
    prev: Option<&Previous>,
) {
    let (values, by_mode) = solution;
    let mut jobs: Vec<GangJob> = Vec::new();
    let mut shares_left: BTreeMap<(usize, usize, usize), u64> = BTreeMap::new();
    for (&(si, mi, gi), y) in &f.y_local {
        for _ in 0..val(values, y.1) {
            jobs.push(GangJob {
                shape: si,
                mode: mi,
                groups: vec![gi],
                block: f.footprint[&(si, mi, gi)],
            });
        }
        shares_left.insert((si, mi, gi), val(values, y.1));
    }
    for (&(si, mi, gi), x) in &f.x {
        shares_left.insert((si, mi, gi), val(values, x.1));
    }
    for ((si, mi, d), y) in &f.y_dom {
        let groups: Vec<usize> =
            f.x.keys()
                .filter(|(s, m, g)| {
                    s == si
                        && m == mi
                        && p.domain_of(&p.groups[*g], &p.shapes[*si].modes[*mi])
                            .as_deref()
                            == Some(d.as_str())
                })
                .map(|k| k.2)
                .collect();
        let block = groups
            .iter()
            .map(|g| f.footprint[&(*si, *mi, *g)])
            .max()
            .unwrap_or(1);
        for _ in 0..val(values, y.1) {
            jobs.push(GangJob {
                shape: *si,
                mode: *mi,
                groups: groups.clone(),
                block,
            });
        }
    }
    // Largest shares first; then preferred modes; deterministic by shape and groups.
    // Gangs whose shares need distinct nodes.
    let multi =
        |j: &GangJob| !p.shapes[j.shape].modes[j.mode].node_local && p.shapes[j.shape].shares > 1;
    jobs.sort_by(|x, y| {
        let first = |j: &GangJob| strategy.multi_first && multi(j);
        (first(y), y.block, x.mode, x.shape, &x.groups).cmp(&(
            first(x),
            x.block,
            y.mode,
            y.shape,
            &y.groups,
        ))
    });
    // Workloads per shape, in admission order, with their admitted gang counts.
    let mut queue: BTreeMap<usize, Vec<(usize, u64)>> = BTreeMap::new();
    for (si, s) in p.shapes.iter().enumerate() {
        let q = order(c, s.workloads.iter().copied())
            .into_iter()
            .map(|w| (w, f.a.get(&w).map(|v| val(values, v.1)).unwrap_or(0)))
            .collect();
        queue.insert(si, q);
    }
    let mut replica: BTreeMap<usize, u32> = BTreeMap::new();
    let mut consumed = vec![false; jobs.len()];
    if let Some(pv) = prev {
        let mut st = Replay {
            jobs: &jobs,
            consumed: &mut consumed,
            shares_left: &mut shares_left,
            queue: &mut queue,
            replica: &mut replica,
        };
        replay(c, p, f, by_mode, free, a, pv, &mut st);
    }
    for (ji, job) in jobs.into_iter().enumerate() {
        if consumed[ji] {
            continue;
        }
        let s = &p.shapes[job.shape];
        let Some(w) = queue
            .get_mut(&job.shape)
            .and_then(|q| q.iter_mut().find(|(_, n)| *n > 0))
        else {
            continue;
        };
        let need = if s.modes[job.mode].node_local {
            s.gpus
        } else {
            s.per_node
        };
        let shares = if s.modes[job.mode].node_local {
            1
        } else {
            s.shares
        };
        let mut placed: Vec<(NodeIdx, Vec<u32>)> = Vec::new();
        let mut used_left: Vec<(usize, usize, usize)> = Vec::new();
        'share: for _ in 0..shares {
            for &gi in &job.groups {
                let key = (job.shape, job.mode, gi);
                if shares_left.get(&key).copied().unwrap_or(0) == 0 {
                    continue;
                }
                let block = f.footprint[&key];
                let mut candidates: Vec<NodeIdx> = by_mode
                    .get(&(gi, PoolMode::WholeGpu))
                    .cloned()
                    .unwrap_or_default();
                if strategy.spread && shares > 1 {
                    // Most free GPUs first (stable: name order on ties).
                    candidates.sort_by_key(|n| {
                        std::cmp::Reverse(free.gpus.get(n).map(|g| g.len()).unwrap_or(0))
                    });
                }
                for n in candidates {
                    if placed.iter().any(|(pn, _)| *pn == n) {
                        continue;
                    }
                    if let Some(g) = free.take(c, n, need, block) {
                        placed.push((n, g));
                        *shares_left.get_mut(&key).unwrap() -= 1;
                        used_left.push(key);
                        continue 'share;
                    }
                }
            }
            break;
        }
        if placed.len() as u32 != shares {
            for (n, g) in &placed {
                free.give_back(*n, g);
            }
            for k in used_left {
                *shares_left.get_mut(&k).unwrap() += 1;
            }
            continue;
        }
        w.1 -= 1;
        let r = replica.entry(w.0).or_default();
        for (n, _) in &placed {
            a.node_mode[*n] = Some(PoolMode::WholeGpu);
        }
        placed.sort();
        a.gangs.push((w.0, *r, placed));
        *r += 1;
    }
    a.gangs.sort_by_key(|x| (x.0, x.1));
}

/// The post-pass's bookkeeping that [`replay`] updates.
struct Replay<'a> {
    jobs: &'a [GangJob],
    consumed: &'a mut [bool],
    shares_left: &'a mut BTreeMap<(usize, usize, usize), u64>,
    queue: &'a mut BTreeMap<usize, Vec<(usize, u64)>>,
    replica: &'a mut BTreeMap<usize, u32>,
}

/// Puts previous gangs back on their GPUs, in admission order, where the ILP's counts
/// allow: a gang takes an unconsumed job of its shape whose groups hold every node it
/// used (each on a whole-GPU node of that group, with shares left there), with the same
/// GPUs per node as the shape needs, on GPUs still free and aligned as a fresh
/// placement would be. What cannot go back is placed afresh by the caller.
#[allow(clippy::too_many_arguments)]
fn replay(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    by_mode: &ByMode,
    free: &mut Free,
    a: &mut Assignment,
    pv: &Previous,
    st: &mut Replay<'_>,
) {
    let whole_group = whole_group_of(by_mode);
    let shape_of = p.shape_of();
    for w in order(c, pv.gangs.keys().copied()) {
        let Some(&si) = shape_of.get(&w) else {
            continue;
        };
        let s = &p.shapes[si];
        for old in &pv.gangs[&w] {
            let Some(entry) = st
                .queue
                .get_mut(&si)
                .and_then(|q| q.iter_mut().find(|(x, _)| *x == w))
            else {
                break;
            };
            if entry.1 == 0 {
                break;
            }
            let Some(groups) = old
                .iter()
                .map(|(n, _)| whole_group.get(n).copied())
                .collect::<Option<Vec<usize>>>()
            else {
                continue;
            };
            let found = st.jobs.iter().enumerate().find(|(ji, j)| {
                if st.consumed[*ji] || j.shape != si {
                    return false;
                }
                let mode = &s.modes[j.mode];
                let (need, shares) = if mode.node_local {
                    (s.gpus, 1)
                } else {
                    (s.per_node, s.shares)
                };
                if old.len() as u32 != shares || old.iter().any(|(_, g)| g.len() as u32 != need) {
                    return false;
                }
                let mut per_group: BTreeMap<usize, u64> = BTreeMap::new();
                for gi in &groups {
                    *per_group.entry(*gi).or_default() += 1;
                }
                per_group.iter().all(|(gi, k)| {
                    j.groups.contains(gi)
                        && st.shares_left.get(&(si, j.mode, *gi)).copied().unwrap_or(0) >= *k
                })
            });
            let Some((ji, job)) = found else {
                continue;
            };
            let mut taken: Vec<(NodeIdx, Vec<u32>)> = Vec::new();
            for ((n, gpus), gi) in old.iter().zip(&groups) {
                if free.take_exact(c, *n, gpus, f.footprint[&(si, job.mode, *gi)]) {
                    taken.push((*n, gpus.clone()));
                } else {
                    break;
                }
            }
            if taken.len() != old.len() {
                for (n, g) in &taken {
                    free.give_back(*n, g);
                }
                continue;
            }
            for gi in &groups {
                *st.shares_left.get_mut(&(si, job.mode, *gi)).unwrap() -= 1;
            }
            st.consumed[ji] = true;
            entry.1 -= 1;
            let r = st.replica.entry(w).or_default();
            for (n, _) in &taken {
                a.node_mode[*n] = Some(PoolMode::WholeGpu);
            }
            let mut placed: Vec<(NodeIdx, Vec<u32>)> = taken
                .into_iter()
                .map(|(n, mut g)| {
                    g.sort_unstable();
                    (n, g)
                })
                .collect();
            placed.sort();
            a.gangs.push((w, *r, placed));
            *r += 1;
        }
    }
}

fn mig(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    values: &[f64],
    by_mode: &BTreeMap<(usize, PoolMode), Vec<NodeIdx>>,
    a: &mut Assignment,
    prev: Option<&Previous>,
) {
    for (&w, per) in &p.mig {
        for (m, q) in per {
            a.mig_profiles.insert((w, m.clone()), q.name);
        }
    }
    for (m, layouts) in &f.layouts {
        // Instance slots per profile: fixed layouts first, then chosen layouts on free GPUs.
        let mut slots: BTreeMap<&str, Vec<(NodeIdx, u32)>> = BTreeMap::new();
        for ((n, g), ls) in &p.fixed_layouts {
            if c.nodes[*n]
                .gpus
                .iter()
                .any(|x| x.index == *g && x.model.as_deref() == Some(m.as_str()) && !x.down)
            {
                a.mig_layouts
                    .insert((*n, *g), ls.iter().map(|q| q.name).collect());
                a.node_mode[*n] = Some(PoolMode::Mig);
                for q in ls {
                    slots.entry(q.name).or_default().push((*n, *g));
                }
            }
        }
        let mut gpus: Vec<(NodeIdx, u32)> = Vec::new();
        let mut kept: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
        for (gi, g) in p.groups.iter().enumerate() {
            if &g.model != m {
                continue;
            }
            let nodes: &[NodeIdx] = if g.fixed_mig {
                &g.nodes
            } else {
                by_mode
                    .get(&(gi, PoolMode::Mig))
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
            };
            // Current layouts kept: as many GPUs of each as the ILP keeps, in name order.
            for (ci, (layout, _)) in g.current.iter().enumerate() {
                let mut want = f.k.get(&(gi, ci)).map(|v| val(values, v.1)).unwrap_or(0);
                for &n in nodes {
                    for x in c.nodes[n].usable_gpus() {
                        if want > 0 && p.current_layouts.get(&(n, x.index)) == Some(layout) {
                            kept.insert((n, x.index));
                            want -= 1;
                        }
                    }
                }
            }
            for &n in nodes {
                for x in c.nodes[n].usable_gpus() {
                    if !p.fixed_layouts.contains_key(&(n, x.index)) && !kept.contains(&(n, x.index))
                    {
                        gpus.push((n, x.index));
                    }
                }
            }
        }
        // New layouts go to GPUs without a current layout first, then to configured
        // GPUs the ILP gives up (name order within each).
        gpus.sort_by(|x, y| {
            (p.current_layouts.contains_key(x), &c.nodes[x.0].name, x.1).cmp(&(
                p.current_layouts.contains_key(y),
                &c.nodes[y.0].name,
                y.1,
            ))
        });
        for &(n, g) in &kept {
            let names: Vec<&'static str> =
                p.current_layouts[&(n, g)].iter().map(|q| q.name).collect();
            for q in &names {
                slots.entry(q).or_default().push((n, g));
            }
            a.mig_layouts.insert((n, g), names);
            a.node_mode[n] = Some(PoolMode::Mig);
        }
        let mut it = gpus.into_iter();
        for (li, l) in layouts.iter().enumerate() {
            let count =
                f.z.get(&(m.clone(), li))
                    .map(|v| val(values, v.1))
                    .unwrap_or(0);
            for _ in 0..count {
                let Some((n, g)) = it.next() else { break };
                let names: Vec<&'static str> = l.iter().map(|q: &&MigProfile| q.name).collect();
                for q in &names {
                    slots.entry(q).or_default().push((n, g));
                }
                a.mig_layouts.insert((n, g), names);
                a.node_mode[n] = Some(PoolMode::Mig);
            }
        }
        // A configured GPU of a MIG node that no new layout needs keeps its layout: the
        // node script would not touch it anyway.
        for (n, g) in it {
            if let Some(ls) = p.current_layouts.get(&(n, g)) {
                let names: Vec<&'static str> = ls.iter().map(|q| q.name).collect();
                for q in &names {
                    slots.entry(q).or_default().push((n, g));
                }
                a.mig_layouts.insert((n, g), names);
            }
        }
        let ws = order(
            c,
            p.mig.keys().copied().filter(|w| p.mig[w].contains_key(m)),
        );
        let mut want: BTreeMap<usize, u64> = ws
            .iter()
            .map(|w| {
                let k =
                    f.r.get(&(*w, m.clone()))
                        .map(|v| val(values, v.1))
                        .unwrap_or(0);
                (*w, k)
            })
            .collect();
        // With a previous placement, each class first takes back the slots it had
        // (admission order); the others are taken from the front of each list.
        let mut claimed: BTreeMap<(&str, (NodeIdx, u32)), u32> = BTreeMap::new();
        if let Some(pv) = prev.filter(|pv| !pv.mig_instances.is_empty()) {
            let mut avail: BTreeMap<(&str, (NodeIdx, u32)), u32> = BTreeMap::new();
            for (q, list) in &slots {
                for x in list {
                    *avail.entry((*q, *x)).or_default() += 1;
                }
            }
            let model = &c.models[m];
            for &w in &ws {
                let q = p.mig[&w][m].name;
                for (n, g, prof) in pv.mig_instances.get(&w).map(Vec::as_slice).unwrap_or(&[]) {
                    let left = want.get_mut(&w).unwrap();
                    if *left == 0 {
                        break;
                    }
                    if model.mig_profile(prof).map(|x| x.name) != Some(q) {
                        continue;
                    }
                    if let Some(k) = avail.get_mut(&(q, (*n, *g))).filter(|k| **k > 0) {
                        *k -= 1;
                        *left -= 1;
                        *claimed.entry((q, (*n, *g))).or_default() += 1;
                        a.mig_instances.push((w, *n, *g, q));
                    }
                }
            }
        }
        let mut cursor: BTreeMap<&str, usize> = BTreeMap::new();
        for w in ws {
            let q = p.mig[&w][m].name;
            let list = slots.entry(q).or_default();
            let at = cursor.entry(q).or_default();
            for _ in 0..want[&w] {
                let slot = loop {
                    let Some(x) = list.get(*at).copied() else {
                        break None;
                    };
                    *at += 1;
                    match claimed.get_mut(&(q, x)) {
                        Some(k) if *k > 0 => *k -= 1,
                        _ => break Some(x),
                    }
                };
                let Some((n, g)) = slot else { break };
                a.mig_instances.push((w, n, g, q));
            }
        }
    }
    a.mig_instances.sort();
}

fn shared(
    c: &Cluster,
    p: &Problem,
    f: &Formulation,
    values: &[f64],
    by_mode: &BTreeMap<(usize, PoolMode), Vec<NodeIdx>>,
    a: &mut Assignment,
    prev: Option<&Previous>,
) {
    let mut gpus: BTreeMap<(String, PoolMode), Vec<(NodeIdx, u32)>> = BTreeMap::new();
    for (gi, g) in p.groups.iter().enumerate() {
        for mode in [PoolMode::TimeSlice, PoolMode::Mps] {
            for &n in by_mode.get(&(gi, mode)).map(Vec::as_slice).unwrap_or(&[]) {
                for x in c.nodes[n].usable_gpus() {
                    gpus.entry((g.model.clone(), mode))
                        .or_default()
                        .push((n, x.index));
                }
            }
        }
    }
    for v in gpus.values_mut() {
        v.sort_by(|x, y| (&c.nodes[x.0].name, x.1).cmp(&(&c.nodes[y.0].name, y.1)));
        v.reverse(); // pop() takes the first
    }
    // With a previous placement, each class first takes back the GPUs it shared
    // (admission order); `taken` GPUs are skipped when popping.
    let mut reps: BTreeMap<(usize, String), u32> = BTreeMap::new();
    for (&w, (_, _, models)) in &p.shared {
        for m in models {
            let k =
                f.r.get(&(w, m.clone()))
                    .map(|v| val(values, v.1))
                    .unwrap_or(0) as u32;
            reps.insert((w, m.clone()), k);
        }
    }
    let mut taken: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
    if let Some(pv) = prev.filter(|pv| !pv.shares.is_empty()) {
        let mut avail: BTreeMap<(NodeIdx, u32), (String, PoolMode)> = BTreeMap::new();
        for ((m, mode), list) in &gpus {
            for x in list {
                avail.insert(*x, (m.clone(), *mode));
            }
        }
        for w in order(c, p.shared.keys().copied()) {
            let (mps, per_gpu, _) = &p.shared[&w];
            let mode = PoolMode::shared(*mps);
            for (n, g, _) in pv.shares.get(&w).map(Vec::as_slice).unwrap_or(&[]) {
                let Some((m, gm)) = avail.get(&(*n, *g)) else {
                    continue;
                };
                let left = reps.get_mut(&(w, m.clone()));
                let Some(left) = left.filter(|l| **l > 0 && *gm == mode) else {
                    continue;
                };
                if !taken.insert((*n, *g)) {
                    continue;
                }
                let k = (*left).min(*per_gpu);
                a.shares.push((w, *n, *g, k));
                a.node_mode[*n] = Some(mode);
                *left -= k;
            }
        }
    }
    for w in order(c, p.shared.keys().copied()) {
        let (mps, per_gpu, models) = &p.shared[&w];
        let mode = PoolMode::shared(*mps);
        for m in models {
            let mut left = reps[&(w, m.clone())];
            let list = gpus.entry((m.clone(), mode)).or_default();
            while left > 0 {
                let Some((n, g)) = list.pop() else { break };
                if taken.contains(&(n, g)) {
                    continue;
                }
                let k = left.min(*per_gpu);
                a.shares.push((w, n, g, k));
                a.node_mode[n] = Some(mode);
                left -= k;
            }
        }
    }
    a.shares.sort();
}
