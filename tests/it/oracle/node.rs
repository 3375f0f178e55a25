//! Every way one node can hold replicas of the single-node classes (MIG, time-slice,
//! MPS, packed), as the checker accepts them: one mode per node; MIG GPUs holding a
//! layout of right-sized instances that `catalog::fits_profiles` accepts; shared GPUs
//! holding one class, at most `per-gpu` replicas; packed replicas within the node's CPU
//! and host memory, whole-GPU ones on GPUs of their own, fractional ones on GPUs whose
//! shares add up to at most 100% and that hold nothing else.
//!
//! A configuration is identified by how many replicas of each class it takes; GPUs of a
//! node are interchangeable (down ones are not listed), so counts decide feasibility and
//! one concrete layout is kept as the witness.

use super::problem::{Problem, SingleClass, Use};
use gpuplan::catalog::{MigProfile, MigSpec, fits_profiles};
use gpuplan::model::PoolMode;
use std::collections::{HashMap, HashSet};

/// What one node holds, as a witness.
#[derive(Clone, Debug)]
pub(super) enum Layout {
    Empty,
    /// Per GPU used: its instances as (single class, profile).
    Mig(Vec<Vec<(usize, &'static MigProfile)>>),
    /// Per GPU used: (single class, replicas).
    Shared(Vec<(usize, u32)>),
    /// Whole-GPU packed replicas (their class each), then per fractional GPU the class
    /// of each replica on it.
    Packed {
        whole: Vec<usize>,
        bins: Vec<Vec<usize>>,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Config {
    pub mode: Option<PoolMode>,
    /// Replicas taken per single class.
    pub take: Vec<u32>,
    /// Units gained per priority level.
    pub gain: Vec<u64>,
    /// Units charged per ledger counter.
    pub charge: Vec<u64>,
    pub layout: Layout,
}

/// Every configuration of a node of kind `kind` with `gpus` free GPUs; `forced`: gangs
/// already use the node (whole-GPU mode), so only packed replicas may join. The empty
/// configuration comes first.
pub(super) fn configs(p: &Problem, kind: usize, gpus: u32, forced: bool) -> Vec<Config> {
    let mut out = vec![config(
        p,
        kind,
        None,
        vec![0; p.singles.len()],
        Layout::Empty,
    )];
    let mut seen: HashSet<Vec<u32>> = HashSet::new();
    seen.insert(vec![0; p.singles.len()]);
    let k = &p.kinds[kind];
    let mut modes = vec![PoolMode::WholeGpu];
    if !forced {
        modes.extend([PoolMode::Mig, PoolMode::TimeSlice, PoolMode::Mps]);
    }
    for mode in modes.into_iter().filter(|m| k.allows(*m)) {
        for (take, layout) in mode_configs(p, kind, gpus, mode) {
            if seen.insert(take.clone()) {
                out.push(config(p, kind, Some(mode), take, layout));
            }
        }
    }
    out
}

fn config(
    p: &Problem,
    kind: usize,
    mode: Option<PoolMode>,
    take: Vec<u32>,
    layout: Layout,
) -> Config {
    let mut gain = vec![0; p.levels.len()];
    let mut charge = vec![0; p.ceiling.len()];
    for (s, &n) in p.singles.iter().zip(&take) {
        if n == 0 {
            continue;
        }
        let units = n as u64 * s.eq[kind].unwrap();
        gain[s.level] += units;
        for &k in &s.charge[kind] {
            charge[k] += units;
        }
    }
    Config {
        mode,
        take,
        gain,
        charge,
        layout,
    }
}

/// Feasible (take, layout) pairs of one mode, from every take vector up to the caps.
fn mode_configs(p: &Problem, kind: usize, gpus: u32, mode: PoolMode) -> Vec<(Vec<u32>, Layout)> {
    let caps: Vec<u32> = p
        .singles
        .iter()
        .map(|s| cap(p, s, kind, gpus, mode))
        .collect();
    let mig = (mode == PoolMode::Mig).then(|| MigSets::new(p, kind, gpus, &caps));
    let mut out = Vec::new();
    for take in odometer(&caps) {
        if take.iter().all(|&n| n == 0) {
            continue;
        }
        let layout = match mode {
            PoolMode::Mig => mig.as_ref().unwrap().layout(p, kind, &take),
            PoolMode::TimeSlice | PoolMode::Mps => shared_layout(p, &take, gpus),
            PoolMode::WholeGpu => packed_layout(p, kind, &take, gpus),
        };
        if let Some(l) = layout {
            out.push((take, l));
        }
    }
    out
}

/// The most replicas of `s` a node of this kind can hold in `mode` (0: none).
fn cap(p: &Problem, s: &SingleClass, kind: usize, gpus: u32, mode: PoolMode) -> u32 {
    if s.eq[kind].is_none() {
        return 0;
    }
    let k = &p.kinds[kind];
    let most = match (s.how, mode) {
        (Use::Mig, PoolMode::Mig) => gpus * k.mig.map_or(0, |m| m.max_instances as u32),
        (Use::Shared(m, per), _) if m == mode => gpus * per,
        (Use::Packed { milli, cpu, mem }, PoolMode::WholeGpu) => {
            let by_gpu = if milli >= 1000 {
                gpus / milli.div_ceil(1000) as u32
            } else {
                gpus * (1000 / milli) as u32
            };
            let by_cpu = limit(k.cpu, cpu);
            let by_mem = limit(k.mem, mem);
            by_gpu.min(by_cpu).min(by_mem)
        }
        _ => 0,
    };
    most.min(s.replicas)
}

/// Replicas a node's resource (`None`: not declared, no limit) holds at `need` each.
fn limit(have: Option<u64>, need: u64) -> u32 {
    match (have, need) {
        (Some(h), n) if n > 0 => (h / n).min(u32::MAX as u64) as u32,
        _ => u32::MAX,
    }
}

/// Every vector `v` with `0 <= v[i] <= caps[i]`.
fn odometer(caps: &[u32]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    for &c in caps {
        out = out
            .into_iter()
            .flat_map(|v| {
                (0..=c).map(move |x| {
                    let mut w = v.clone();
                    w.push(x);
                    w
                })
            })
            .collect();
    }
    out
}

// ------------------------------------------------------------------ shared GPUs

/// Each shared class on GPUs of its own, `per-gpu` replicas each (the last one fewer);
/// the classes on one node share one `per-gpu` (the device plugin gives every GPU of a
/// node one replica count).
fn shared_layout(p: &Problem, take: &[u32], gpus: u32) -> Option<Layout> {
    let mut per_gpu = Vec::new();
    let mut factor = None;
    for (si, (s, &n)) in p.singles.iter().zip(take).enumerate() {
        let Use::Shared(_, per) = s.how else {
            continue;
        };
        if n > 0 && factor.replace(per).is_some_and(|f| f != per) {
            return None;
        }
        let mut left = n;
        while left > 0 {
            per_gpu.push((si, left.min(per)));
            left -= left.min(per);
        }
    }
    (per_gpu.len() as u32 <= gpus).then_some(Layout::Shared(per_gpu))
}

// ------------------------------------------------------------------ packed replicas

fn packed_layout(p: &Problem, kind: usize, take: &[u32], gpus: u32) -> Option<Layout> {
    let k = &p.kinds[kind];
    let (mut cpu, mut mem, mut whole_gpus) = (0u64, 0u64, 0u32);
    let mut whole = Vec::new();
    let mut items: Vec<(u64, usize)> = Vec::new();
    for (si, (s, &n)) in p.singles.iter().zip(take).enumerate() {
        let Use::Packed {
            milli,
            cpu: c,
            mem: m,
        } = s.how
        else {
            continue;
        };
        cpu += c * n as u64;
        mem += m * n as u64;
        for _ in 0..n {
            if milli >= 1000 {
                whole_gpus += milli.div_ceil(1000) as u32;
                whole.push(si);
            } else {
                items.push((milli, si));
            }
        }
    }
    if k.cpu.is_some_and(|h| cpu > h) || k.mem.is_some_and(|h| mem > h) || whole_gpus > gpus {
        return None;
    }
    items.sort_by(|a, b| b.cmp(a));
    let bins = pack(&items, (gpus - whole_gpus) as usize)?;
    Some(Layout::Packed { whole, bins })
}

/// Bin packing of fractional replicas (milli, class), largest first, into at most
/// `bins` GPUs of 1000 each: exhaustive, trying each distinct fill level once.
fn pack(items: &[(u64, usize)], bins: usize) -> Option<Vec<Vec<usize>>> {
    fn go(items: &[(u64, usize)], bins: usize, fill: &mut Vec<(u64, Vec<usize>)>) -> bool {
        let Some(&(m, si)) = items.first() else {
            return true;
        };
        let mut tried = HashSet::new();
        for b in 0..=fill.len() {
            if b == fill.len() && b == bins {
                break;
            }
            let level = fill.get(b).map_or(0, |f| f.0);
            if level + m > 1000 || !tried.insert(level) {
                continue;
            }
            if b == fill.len() {
                fill.push((0, Vec::new()));
            }
            fill[b].0 += m;
            fill[b].1.push(si);
            if go(&items[1..], bins, fill) {
                return true;
            }
            fill[b].0 -= m;
            fill[b].1.pop();
            if fill[b].1.is_empty() {
                fill.pop();
            }
        }
        false
    }
    let mut fill = Vec::new();
    go(items, bins, &mut fill).then(|| fill.into_iter().map(|f| f.1).collect())
}

// ------------------------------------------------------------------ MIG

/// The MIG layouts a node of one kind can hold: over the distinct right-sized profiles
/// of the MIG classes, every vector of instance counts its GPUs hold together (with one
/// split per GPU), up to what the classes could use.
struct MigSets {
    profiles: Vec<&'static MigProfile>,
    /// Instance counts per profile -> counts per GPU (GPUs with an instance only).
    sets: HashMap<Vec<u32>, Vec<Vec<u32>>>,
}

impl MigSets {
    fn new(p: &Problem, kind: usize, gpus: u32, caps: &[u32]) -> MigSets {
        let mut profiles: Vec<&'static MigProfile> = Vec::new();
        let mut most: Vec<u32> = Vec::new();
        for (s, &c) in p.singles.iter().zip(caps) {
            let (Use::Mig, Some(q)) = (s.how, s.profile[kind]) else {
                continue;
            };
            match profiles.iter().position(|x| x.name == q.name) {
                Some(i) => most[i] += c,
                None => {
                    profiles.push(q);
                    most.push(c);
                }
            }
        }
        let sets = match p.kinds[kind].mig {
            Some(spec) if !profiles.is_empty() => node_sets(spec, &profiles, &most, gpus),
            _ => HashMap::new(),
        };
        MigSets { profiles, sets }
    }

    fn layout(&self, p: &Problem, kind: usize, take: &[u32]) -> Option<Layout> {
        let mut want = vec![0u32; self.profiles.len()];
        // Replicas per profile, as (class) queues.
        let mut queue: Vec<Vec<usize>> = vec![Vec::new(); self.profiles.len()];
        for (si, (s, &n)) in p.singles.iter().zip(take).enumerate() {
            if n == 0 {
                continue;
            }
            let q = s.profile[kind]?;
            let i = self.profiles.iter().position(|x| x.name == q.name)?;
            want[i] += n;
            queue[i].extend(std::iter::repeat_n(si, n as usize));
        }
        let split = self.sets.get(&want)?;
        let gpus = split
            .iter()
            .map(|counts| {
                let mut inst = Vec::new();
                for (i, &n) in counts.iter().enumerate() {
                    for _ in 0..n {
                        inst.push((queue[i].pop().unwrap(), self.profiles[i]));
                    }
                }
                inst
            })
            .collect();
        Some(Layout::Mig(gpus))
    }
}

/// Every vector of instance counts (at most `most`) that one GPU holds.
fn one_gpu(spec: &MigSpec, profiles: &[&'static MigProfile], most: &[u32]) -> Vec<Vec<u32>> {
    let caps: Vec<u32> = profiles
        .iter()
        .zip(most)
        .map(|(q, m)| (*m).min(q.max_count as u32))
        .collect();
    odometer(&caps)
        .into_iter()
        .filter(|v| v.iter().any(|&n| n > 0))
        .filter(|v| {
            let list: Vec<&'static MigProfile> = v
                .iter()
                .zip(profiles)
                .flat_map(|(&n, q)| std::iter::repeat_n(*q, n as usize))
                .collect();
            fits_profiles(spec, &list).is_ok()
        })
        .collect()
}

/// Sums of up to `gpus` one-GPU vectors (each at most `most`), with one split each.
fn node_sets(
    spec: &MigSpec,
    profiles: &[&'static MigProfile],
    most: &[u32],
    gpus: u32,
) -> HashMap<Vec<u32>, Vec<Vec<u32>>> {
    let one = one_gpu(spec, profiles, most);
    let mut sets: HashMap<Vec<u32>, Vec<Vec<u32>>> = HashMap::new();
    sets.insert(vec![0; profiles.len()], Vec::new());
    let mut frontier: Vec<Vec<u32>> = vec![vec![0; profiles.len()]];
    for _ in 0..gpus {
        let mut next = Vec::new();
        for t in &frontier {
            for b in &one {
                let sum: Vec<u32> = t.iter().zip(b).map(|(x, y)| x + y).collect();
                if sum.iter().zip(most).any(|(x, m)| x > m) || sets.contains_key(&sum) {
                    continue;
                }
                let mut split = sets[t].clone();
                split.push(b.clone());
                sets.insert(sum.clone(), split);
                next.push(sum);
            }
        }
        frontier = next;
    }
    sets
}
