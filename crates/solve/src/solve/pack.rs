//! Packing replicas of packed classes (`requests`, `fraction`) onto nodes: CPU and host
//! memory per node, GPU shares per GPU (a fractional replica takes part of one GPU, a
//! whole-GPU replica whole free GPUs of one node). Shared by both solvers: the ILP's
//! post-pass packs the counts it chose per group, the greedy baseline packs every
//! replica first-fit.
//!
//! On a node that hands out GPUs through DRA ([`crate::model::Allocation::Dra`]) a GPU
//! holding fractions holds the fractions of one class only: a device belongs to one
//! ResourceClaim, and replicas share a GPU by sharing their object's claim, so two
//! classes' fractions on one GPU could not be rendered (GP944).

use crate::model::sharing::Slots as Sharing;
use crate::model::{Cluster, NodeIdx};
use crate::solve::Assignment;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
struct Bin {
    cpu: Option<(u64, u64)>,
    mem: Option<(u64, u64)>,
    /// (GPU index, model, free share in 1/1000).
    gpus: Vec<(u32, String, u64)>,
    gpu_cap: u64,
    /// Fractional replicas per GPU index.
    count: BTreeMap<u32, u32>,
    /// The node holds whole-GPU work (gangs, whole-GPU replicas).
    whole: bool,
    /// The device plugin shares the node's GPUs for fractions on it (see
    /// [`crate::model::sharing`]): the most replicas per GPU, and the strategy.
    shared: Option<Sharing>,
    /// The node hands out GPUs through DRA: one class's fractions per GPU.
    dra: bool,
    /// On a DRA node, the class whose fractions each GPU holds.
    owner: BTreeMap<u32, usize>,
}

impl Bin {
    /// The node's sharing once a fraction needing `slots` joins it, if it may (the rule
    /// of [`crate::solve::ilp::pattern::Slots::sharing_with`]).
    fn sharing_with(&self, slots: Option<Sharing>) -> Option<Option<Sharing>> {
        let per_gpu_shares = self.shared.is_none() && !self.count.is_empty();
        match (self.shared, slots) {
            (None, None) => Some(None),
            (Some(_), None) => None,
            (None, Some(s)) => {
                (!self.whole && !per_gpu_shares && self.count.values().all(|c| *c <= s.per_gpu))
                    .then_some(Some(s))
            }
            (Some(cur), Some(s)) => {
                let per_gpu = cur.per_gpu.min(s.per_gpu);
                (cur.mps == s.mps && self.count.values().all(|c| *c <= per_gpu)).then_some(Some(
                    Sharing {
                        per_gpu,
                        mps: cur.mps,
                    },
                ))
            }
        }
    }

    /// The node's free GPU share, in 1/1000 of a GPU.
    fn free_gpu(&self) -> u64 {
        self.gpus.iter().map(|x| x.2).sum()
    }

    /// Whether a fraction of class `w` may join GPU `g`: anywhere off DRA nodes; on a
    /// DRA node, a GPU with no fraction or only `w`'s.
    fn claimable(&self, g: u32, w: usize) -> bool {
        !self.dra || self.owner.get(&g).is_none_or(|o| *o == w)
    }
}

/// Free capacity of the nodes packed replicas may use.
#[derive(Clone, Debug)]
pub(crate) struct Bins {
    bins: BTreeMap<NodeIdx, Bin>,
    /// (free GPU share in 1/1000, node) of every bin, for [`Bins::place_best_fit`].
    by_free: BTreeSet<(u64, NodeIdx)>,
    /// Per workload, how the device plugin shares a GPU its fractions are on
    /// ([`Cluster::fraction_slots`], which resolves the class's scheduler: looked up once
    /// here, not at every fit).
    slots: Vec<Option<Sharing>>,
    /// Nodes [`Bins::place_best_fit_in`] has looked at (a measure of work done).
    pub(crate) looked: u64,
}

impl Bins {
    /// `nodes`: where packed replicas may go. GPUs already used by `a` (gangs, MIG,
    /// shares, packed) are not free.
    pub(crate) fn new(
        c: &Cluster,
        a: &Assignment,
        nodes: impl IntoIterator<Item = NodeIdx>,
    ) -> Bins {
        let mut busy: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
        let mut whole: BTreeSet<NodeIdx> = BTreeSet::new();
        // A Slurm job takes a CPU: the pods of Slurm gangs on each node.
        let mut jobs: BTreeMap<NodeIdx, u64> = BTreeMap::new();
        for (w, _, gn) in &a.gangs {
            let slurm = c.authority_of(&c.workloads[*w]) == Some(crate::model::Authority::Slurm);
            for (n, gs) in gn {
                busy.extend(gs.iter().map(|g| (*n, *g)));
                whole.insert(*n);
                if slurm {
                    *jobs.entry(*n).or_insert(0) += 1000;
                }
            }
        }
        busy.extend(a.mig_layouts.keys().copied());
        busy.extend(a.shares.iter().map(|s| (s.1, s.2)));
        let mut bins = BTreeMap::new();
        for n in nodes {
            let node = &c.nodes[n];
            if node.cordon {
                continue;
            }
            let gpus: Vec<(u32, String, u64)> = node
                .usable_gpus()
                .filter(|g| !busy.contains(&(n, g.index)))
                .map(|g| (g.index, g.model.clone().unwrap_or_default(), 1000))
                .collect();
            let gpu_cap = node.usable_gpus().count() as u64 * 1000;
            bins.insert(
                n,
                Bin {
                    cpu: c
                        .node_cpu_milli(n)
                        .map(|k| (k.saturating_sub(jobs.get(&n).copied().unwrap_or(0)), k)),
                    mem: c.node_memory(n).map(|m| (m, m)),
                    gpus,
                    gpu_cap,
                    count: BTreeMap::new(),
                    whole: whole.contains(&n),
                    shared: None,
                    dra: c.node_allocation(n) == crate::model::Allocation::Dra,
                    owner: BTreeMap::new(),
                },
            );
        }
        let by_free = bins.iter().map(|(n, b)| (b.free_gpu(), *n)).collect();
        let slots = c.workloads.iter().map(|w| c.fraction_slots(w)).collect();
        let mut b = Bins {
            bins,
            by_free,
            slots,
            looked: 0,
        };
        for (w, n, gs, k) in &a.packed {
            for _ in 0..*k {
                b.take(c, *w, *n, gs);
            }
        }
        b
    }

    /// GPUs one replica of `w` would take on node `n`, and the best-fit slack (free
    /// share left on the GPU chosen), if it fits.
    fn fit(&self, c: &Cluster, w: usize, n: NodeIdx) -> Option<(Vec<u32>, u64)> {
        let wl = &c.workloads[w];
        let b = self.bins.get(&n)?;
        if b.cpu.is_some_and(|(f, _)| f < wl.cpu_milli)
            || b.mem.is_some_and(|(f, _)| f < wl.host_memory.0)
        {
            return None;
        }
        let milli = wl.packed_gpu_milli();
        let ok = |m: &str| wl.accepts(m);
        if milli == 0 {
            return Some((Vec::new(), 0));
        }
        if milli < 1000 {
            // Best fit: the GPU with the least free share that still holds it (and, on
            // a node the device plugin shares, fewer replicas than it allows).
            let shared = b.sharing_with(self.slots[w])?;
            let cap = shared.map(|s| s.per_gpu).unwrap_or(u32::MAX);
            return b
                .gpus
                .iter()
                .filter(|(i, m, f)| {
                    ok(m)
                        && *f >= milli
                        && b.count.get(i).copied().unwrap_or(0) < cap
                        && b.claimable(*i, w)
                })
                .min_by_key(|(i, _, f)| (*f, *i))
                .map(|(i, _, f)| (vec![*i], f - milli));
        }
        if b.shared.is_some() {
            return None;
        }
        let need = milli.div_ceil(1000) as usize;
        let whole: Vec<u32> = b
            .gpus
            .iter()
            .filter(|(_, m, f)| ok(m) && *f == 1000)
            .map(|(i, _, _)| *i)
            .take(need)
            .collect();
        (whole.len() == need).then(|| {
            let left = b.gpus.iter().filter(|(_, _, f)| *f == 1000).count() - need;
            (whole, left as u64 * 1000)
        })
    }

    /// The GPUs one replica of `w` would take on node `n`, if it fits there now.
    pub(crate) fn fits(&self, c: &Cluster, w: usize, n: NodeIdx) -> Option<Vec<u32>> {
        self.fit(c, w, n).map(|(gpus, _)| gpus)
    }

    /// Places one replica of `w` on exactly these GPUs of node `n` (where it was before)
    /// when they and the node's CPU and memory still hold it.
    pub(crate) fn place_exact(&mut self, c: &Cluster, w: usize, n: NodeIdx, gpus: &[u32]) -> bool {
        let wl = &c.workloads[w];
        let Some(b) = self.bins.get(&n) else {
            return false;
        };
        let milli = wl.packed_gpu_milli();
        let each = wl.packed_milli_per_gpu();
        let sharing_ok = if milli == 0 {
            true
        } else if milli < 1000 {
            b.sharing_with(self.slots[w]).is_some_and(|s| {
                let cap = s.map(|s| s.per_gpu).unwrap_or(u32::MAX);
                gpus.iter()
                    .all(|g| b.count.get(g).copied().unwrap_or(0) < cap && b.claimable(*g, w))
            })
        } else {
            b.shared.is_none()
        };
        let gpus_ok = sharing_ok
            && gpus.len() == milli.div_ceil(1000) as usize
            && gpus.iter().all(|g| {
                b.gpus.iter().any(|(i, m, f)| {
                    i == g && wl.accepts(m) && *f >= each && (each < 1000 || *f == 1000)
                })
            });
        if !gpus_ok
            || b.cpu.is_some_and(|(f, _)| f < wl.cpu_milli)
            || b.mem.is_some_and(|(f, _)| f < wl.host_memory.0)
        {
            return false;
        }
        self.take(c, w, n, gpus);
        true
    }

    fn take(&mut self, c: &Cluster, w: usize, n: NodeIdx, gpus: &[u32]) {
        let wl = &c.workloads[w];
        let Some(b) = self.bins.get_mut(&n) else {
            return;
        };
        self.by_free.remove(&(b.free_gpu(), n));
        let each = wl.packed_milli_per_gpu();
        for g in gpus {
            if let Some(x) = b.gpus.iter_mut().find(|x| x.0 == *g) {
                x.2 = x.2.saturating_sub(each);
            }
        }
        self.by_free.insert((b.free_gpu(), n));
        if let Some((f, _)) = b.cpu.as_mut() {
            *f = f.saturating_sub(wl.cpu_milli);
        }
        if let Some((f, _)) = b.mem.as_mut() {
            *f = f.saturating_sub(wl.host_memory.0);
        }
        let milli = wl.packed_gpu_milli();
        if milli >= 1000 {
            b.whole = true;
        } else if milli > 0 {
            if let Some(shared) = b.sharing_with(self.slots[w]) {
                b.shared = shared;
            }
            for g in gpus {
                *b.count.entry(*g).or_insert(0) += 1;
                if b.dra {
                    b.owner.insert(*g, w);
                }
            }
        }
    }

    /// Undoes [`Bins::place`] for one replica.
    pub(crate) fn give_back(&mut self, c: &Cluster, w: usize, n: NodeIdx, gpus: &[u32]) {
        let wl = &c.workloads[w];
        let Some(b) = self.bins.get_mut(&n) else {
            return;
        };
        if let Some((f, cap)) = b.cpu.as_mut() {
            *f = (*f + wl.cpu_milli).min(*cap);
        }
        if let Some((f, cap)) = b.mem.as_mut() {
            *f = (*f + wl.host_memory.0).min(*cap);
        }
        let each = wl.packed_milli_per_gpu();
        self.by_free.remove(&(b.free_gpu(), n));
        for g in gpus {
            if let Some(x) = b.gpus.iter_mut().find(|x| x.0 == *g) {
                x.2 = (x.2 + each).min(1000);
            }
        }
        self.by_free.insert((b.free_gpu(), n));
        let milli = wl.packed_gpu_milli();
        if milli > 0 && milli < 1000 {
            for g in gpus {
                if let Some(k) = b.count.get_mut(g) {
                    *k -= 1;
                    if *k == 0 {
                        b.count.remove(g);
                        b.owner.remove(g);
                    }
                }
            }
            // The sharing stays as strict as the fractions that set it until none is
            // left (a conservative rule: it never admits what the node cannot carry).
            if b.count.is_empty() {
                b.shared = None;
            }
        }
    }

    /// How well a replica of `w` suits node `n` (higher is better).
    fn score(&self, c: &Cluster, w: usize, n: NodeIdx, slack: u64) -> f64 {
        let wl = &c.workloads[w];
        let b = &self.bins[&n];
        let rel = |need: u64, (free, cap): (u64, u64)| -> f64 {
            if cap == 0 {
                0.0
            } else {
                (need as f64 / cap as f64) * (free as f64 / cap as f64)
            }
        };
        let free_gpu: u64 = b.gpus.iter().map(|x| x.2).sum();
        let dot = b.cpu.map(|x| rel(wl.cpu_milli, x)).unwrap_or(0.0)
            + b.mem.map(|x| rel(wl.host_memory.0, x)).unwrap_or(0.0)
            + rel(wl.packed_gpu_milli(), (free_gpu, b.gpu_cap));
        dot - slack as f64 * 1e-9
    }

    /// What node `n` has left once a replica of `w` is on it, for best fit: its free GPU
    /// share in GPUs, then a tie-breaker below one GPU's 1/1000 from its free CPU.
    fn left_after(&self, c: &Cluster, w: usize, n: NodeIdx) -> f64 {
        let wl = &c.workloads[w];
        let Some(b) = self.bins.get(&n) else {
            return f64::INFINITY;
        };
        let free_gpu: u64 = b.gpus.iter().map(|x| x.2).sum();
        let gpu = free_gpu.saturating_sub(wl.packed_gpu_milli()) as f64 / 1000.0;
        let cpu = b
            .cpu
            .map(|(f, cap)| f.saturating_sub(wl.cpu_milli) as f64 / cap.max(1) as f64)
            .unwrap_or(0.0);
        gpu + cpu * 1e-4
    }

    /// Best fit (the greedy baseline): one replica of `w` on the node of the bins it
    /// leaves with the least free GPU share (then the least free CPU, relative to the
    /// node's; then the first node), which fills nodes one by one and keeps whole GPUs
    /// and whole nodes free for larger requests. Not every node is looked at: nodes are visited by free GPU share, least first, from the
    /// replica's share up, and the search stops past the free share of the first node
    /// it fits (a node with more free share leaves more free: best fit's first key).
    pub(crate) fn place_best_fit(&mut self, c: &Cluster, w: usize) -> Option<(NodeIdx, Vec<u32>)> {
        self.place_best_fit_in(c, w, |_| true)
    }

    /// [`Bins::place_best_fit`] on the nodes `allowed` accepts.
    pub(crate) fn place_best_fit_in(
        &mut self,
        c: &Cluster,
        w: usize,
        allowed: impl Fn(NodeIdx) -> bool,
    ) -> Option<(NodeIdx, Vec<u32>)> {
        let milli = c.workloads[w].packed_gpu_milli();
        let mut best: Option<(u64, f64, NodeIdx, Vec<u32>)> = None;
        for &(free, n) in self.by_free.range((milli, 0)..) {
            if best.as_ref().is_some_and(|b| free > b.0) {
                break;
            }
            self.looked += 1;
            if !allowed(n) {
                continue;
            }
            let Some((gpus, _)) = self.fit(c, w, n) else {
                continue;
            };
            let s = -self.left_after(c, w, n);
            if best.as_ref().is_none_or(|b| s > b.1) {
                best = Some((free, s, n, gpus));
            }
        }
        let (_, _, n, gpus) = best?;
        self.take(c, w, n, &gpus);
        Some((n, gpus))
    }

    /// Places one replica of `w` on the one of `candidates` whose free resources align
    /// best with the replica's request (largest dot product of request and free
    /// capacity, both relative to the node's size: keeps CPU, memory and GPU of every node
    /// balanced, so that little is stranded; ties keep the earlier node); returns the node
    /// and GPUs taken.
    pub(crate) fn place(
        &mut self,
        c: &Cluster,
        w: usize,
        candidates: &[NodeIdx],
    ) -> Option<(NodeIdx, Vec<u32>)> {
        let mut best: Option<(f64, NodeIdx, Vec<u32>)> = None;
        for &n in candidates {
            let Some((gpus, slack)) = self.fit(c, w, n) else {
                continue;
            };
            let s = self.score(c, w, n, slack);
            if best.as_ref().is_none_or(|b| s > b.0) {
                best = Some((s, n, gpus));
            }
        }
        let (_, n, gpus) = best?;
        self.take(c, w, n, &gpus);
        Some((n, gpus))
    }
}

/// Order in which packed replicas are placed by the ILP post-pass: priority, then the
/// largest GPU share, then the largest CPU and memory, then name.
pub(crate) fn largest_first(c: &Cluster, ws: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = ws.into_iter().collect();
    v.sort_by(|a, b| {
        let (x, y) = (&c.workloads[*a], &c.workloads[*b]);
        let pr = |w: &crate::model::Workload| c.priority(&w.priority).map(|p| p.value);
        pr(y)
            .cmp(&pr(x))
            .then(y.packed_gpu_milli().cmp(&x.packed_gpu_milli()))
            .then(y.cpu_milli.cmp(&x.cpu_milli))
            .then(y.host_memory.0.cmp(&x.host_memory.0))
            .then(x.name.cmp(&y.name))
    });
    v
}

/// Adds one placed replica to the assignment's packed list (merging fractional and
/// CPU-only replicas that share a node and GPU).
pub(crate) fn record(a: &mut Assignment, w: usize, n: NodeIdx, gpus: Vec<u32>, whole: bool) {
    if !whole {
        if let Some(e) = a
            .packed
            .iter_mut()
            .rev()
            .find(|e| e.0 == w && e.1 == n && e.2 == gpus)
        {
            e.3 += 1;
            return;
        }
    }
    a.packed.push((w, n, gpus, 1));
    if a.node_mode[n].is_none() {
        a.node_mode[n] = Some(crate::model::PoolMode::WholeGpu);
    }
}
