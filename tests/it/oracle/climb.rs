//! An attack on the oracle's completeness: a random walk over the placements the
//! checker accepts. From a starting assignment it removes and adds single replicas
//! (gangs on random GPUs of random nodes, right-sized MIG instances grown into a GPU's
//! layout, shared replicas, packed replicas) and moves to every neighbour that
//! `placement::check` accepts. No placement it reaches may admit more than the oracle.
//!
//! It shares no code with the search: neighbours are proposed blindly and judged by
//! the checker alone.

use gpuplan::catalog::{MigProfile, sort_canonical};
use gpuplan::model::PoolMode;
use gpuplan::model::sizing::{self, Usage};
use gpuplan::model::{Cluster, NodeIdx};
use gpuplan::placement::{self, Placement};
use gpuplan::solve::{Assignment, SolveInfo};
use std::collections::BTreeSet;

/// xorshift64*: a small deterministic generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// The best placement (by levels, lexicographically) a walk of `steps` neighbours from
/// `start` reaches, with its levels; `None` when no step was accepted.
pub fn climb(
    c: &Cluster,
    start: &Assignment,
    steps: usize,
    rng: &mut Rng,
) -> Option<(Vec<f64>, Placement)> {
    let mut a = start.clone();
    let mut best: Option<(Vec<f64>, Placement)> = None;
    for _ in 0..steps {
        let mut b = a.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(c, &mut b, rng);
        }
        let p = build(c, &b);
        if !placement::check(c, &p).is_empty() {
            continue;
        }
        let levels = super::per_level(c, &p);
        if best
            .as_ref()
            .is_none_or(|(v, _)| !super::lex_geq(v, &levels))
        {
            best = Some((levels, p));
        }
        a = b;
    }
    best
}

fn build(c: &Cluster, a: &Assignment) -> Placement {
    let info = SolveInfo {
        name: "climb",
        status: gpuplan::solve::SolveStatus::Heuristic,
        ..SolveInfo::default()
    };
    placement::build(c, a, &info)
}

fn mutate(c: &Cluster, a: &mut Assignment, rng: &mut Rng) {
    if rng.below(3) == 0 {
        remove(a, rng);
        return;
    }
    let wi = rng.below(c.workloads.len());
    let w = &c.workloads[wi];
    match sizing::usage(w, 8) {
        Usage::Gang { .. } => add_gang(c, a, wi, rng),
        Usage::Mig => add_mig(c, a, wi, rng),
        Usage::Shared { mps, per_gpu } => add_share(c, a, wi, mps, per_gpu, rng),
        Usage::Packed { milli } => add_packed(c, a, wi, milli, rng),
    }
}

fn remove(a: &mut Assignment, rng: &mut Rng) {
    let counts = [
        a.gangs.len(),
        a.mig_instances.len(),
        a.shares.len(),
        a.packed.len(),
    ];
    let total: usize = counts.iter().sum();
    if total == 0 {
        return;
    }
    let mut i = rng.below(total);
    if i < counts[0] {
        a.gangs.remove(i);
        return;
    }
    i -= counts[0];
    if i < counts[1] {
        let (_, ni, g, prof) = a.mig_instances.remove(i);
        if let Some(l) = a.mig_layouts.get_mut(&(ni, g)) {
            if let Some(k) = l.iter().position(|x| *x == prof) {
                l.remove(k);
            }
            if l.is_empty() {
                a.mig_layouts.remove(&(ni, g));
            }
        }
        return;
    }
    i -= counts[1];
    if i < counts[2] {
        a.shares.remove(i);
        return;
    }
    a.packed.remove(i - counts[2]);
}

/// GPUs something holds (gangs, MIG layouts, shares, packed replicas).
fn held(a: &Assignment) -> BTreeSet<(NodeIdx, u32)> {
    let mut s = BTreeSet::new();
    for (_, _, nodes) in &a.gangs {
        for (ni, gpus) in nodes {
            s.extend(gpus.iter().map(|g| (*ni, *g)));
        }
    }
    s.extend(a.mig_layouts.keys().copied());
    s.extend(a.shares.iter().map(|x| (x.1, x.2)));
    for (_, ni, gpus, _) in &a.packed {
        s.extend(gpus.iter().map(|g| (*ni, *g)));
    }
    s
}

/// Usable GPUs of node `ni` that nothing holds.
fn free(c: &Cluster, a: &Assignment, ni: NodeIdx) -> Vec<u32> {
    let h = held(a);
    c.nodes[ni]
        .usable_gpus()
        .map(|g| g.index)
        .filter(|g| !h.contains(&(ni, *g)))
        .collect()
}

/// A random usable GPU of the cluster.
fn any_gpu(c: &Cluster, rng: &mut Rng) -> Option<(NodeIdx, u32)> {
    let all: Vec<(NodeIdx, u32)> = c
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(ni, n)| n.usable_gpus().map(move |g| (ni, g.index)))
        .collect();
    (!all.is_empty()).then(|| all[rng.below(all.len())])
}

/// A gang of the class on random nodes, as many GPUs as allowed on each in turn.
fn add_gang(c: &Cluster, a: &mut Assignment, wi: usize, rng: &mut Rng) {
    let w = &c.workloads[wi];
    let used: BTreeSet<u32> = a.gangs.iter().filter(|g| g.0 == wi).map(|g| g.1).collect();
    let Some(replica) = (0..w.replicas).find(|r| !used.contains(r)) else {
        return;
    };
    let mut nodes: Vec<NodeIdx> = (0..c.nodes.len()).collect();
    rng.shuffle(&mut nodes);
    let Usage::Gang { gpus: size, .. } = sizing::usage(w, 8) else {
        return;
    };
    let mut left = size;
    let mut shape = Vec::new();
    for ni in nodes {
        let per_node = if w.kind == gpuplan::spec::WorkloadKind::Training {
            c.gang_per_node(w)
        } else {
            size
        };
        let mut f = free(c, a, ni);
        rng.shuffle(&mut f);
        let take = per_node.min(left).min(f.len() as u32) as usize;
        if take == 0 || left == 0 || rng.below(4) == 0 {
            continue;
        }
        left -= take as u32;
        shape.push((ni, f[..take].to_vec()));
    }
    if left == 0 {
        for (ni, _) in &shape {
            a.node_mode[*ni] = Some(PoolMode::WholeGpu);
        }
        a.gangs.push((wi, replica, shape));
    }
}

/// One instance of the class's right-sized profile, grown into a random GPU's layout.
fn add_mig(c: &Cluster, a: &mut Assignment, wi: usize, rng: &mut Rng) {
    let Some((ni, g)) = any_gpu(c, rng) else {
        return;
    };
    let gpu = c.nodes[ni].gpus.iter().find(|x| x.index == g).unwrap();
    let Some(model) = c.model_of(gpu) else {
        return;
    };
    let Some(q) = sizing::mig_profile(c, &c.workloads[wi], model) else {
        return;
    };
    let spec = model.mig.unwrap();
    let layout = a.mig_layouts.entry((ni, g)).or_default();
    let mut profiles: Vec<&'static MigProfile> =
        layout.iter().filter_map(|n| spec.profile(n)).collect();
    profiles.push(q);
    sort_canonical(&mut profiles);
    *layout = profiles.iter().map(|p| p.name).collect();
    a.mig_instances.push((wi, ni, g, q.name));
    a.mig_profiles.insert((wi, model.name.clone()), q.name);
    a.node_mode[ni] = Some(PoolMode::Mig);
}

/// One more shared replica on a random GPU (joining the class's share there).
fn add_share(c: &Cluster, a: &mut Assignment, wi: usize, mps: bool, per_gpu: u32, rng: &mut Rng) {
    let Some((ni, g)) = any_gpu(c, rng) else {
        return;
    };
    match a
        .shares
        .iter_mut()
        .find(|s| s.0 == wi && s.1 == ni && s.2 == g)
    {
        Some(s) if s.3 < per_gpu => s.3 += 1,
        Some(_) => return,
        None => a.shares.push((wi, ni, g, 1)),
    }
    a.node_mode[ni] = Some(if mps {
        PoolMode::Mps
    } else {
        PoolMode::TimeSlice
    });
}

/// One more packed replica: on a random GPU (fractional) or on free GPUs of a random
/// node (whole).
fn add_packed(c: &Cluster, a: &mut Assignment, wi: usize, milli: u64, rng: &mut Rng) {
    if milli == 0 {
        return;
    }
    let Some((ni, g)) = any_gpu(c, rng) else {
        return;
    };
    if milli < 1000 {
        match a
            .packed
            .iter_mut()
            .find(|p| p.0 == wi && p.1 == ni && p.2 == [g])
        {
            Some(p) => p.3 += 1,
            None => a.packed.push((wi, ni, vec![g], 1)),
        }
    } else {
        let mut f = free(c, a, ni);
        rng.shuffle(&mut f);
        let want = milli.div_ceil(1000) as usize;
        if f.len() < want {
            return;
        }
        a.packed.push((wi, ni, f[..want].to_vec(), 1));
    }
    a.node_mode[ni] = Some(PoolMode::WholeGpu);
}
