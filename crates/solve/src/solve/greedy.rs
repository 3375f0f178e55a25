//! The greedy baseline: gangs, MIG and shared classes first-fit in name order, the way
//! default schedulers place, then packed classes first-fit decreasing with best-fit
//! node choice.
//!
//! Workload classes go in priority order (higher value first, then by name), replicas
//! one at a time; a replica that does not fit is skipped and the next one is tried.
//! Nodes are scanned in name order (`Cluster::nodes` is name-sorted), GPUs by index.
//! Packed classes (`requests`, `fraction`) come after the others, largest first, each
//! replica on the node it fits most tightly ([`place_packed`]).
//!
//! Rules honoured: acceptable models ([`sizing::runs_on`]), usable GPUs only, pinned
//! pools (a node of a declared pool only takes its mode), one mode per node (set on
//! first use), fixed MIG layouts, team ceilings (parents and per-model/pool quotas
//! included, in GPU-equivalents), gangs all-or-nothing inside one domain of the required
//! tier, MIG layouts grown instance by instance while [`fits_profiles`] accepts them,
//! and shared GPUs holding up to `per-gpu` replicas of one class.
//!
//! A fixed layout's instance serves only replicas right-sized to exactly its profile, as
//! a Kubernetes pod under the mixed MIG strategy requests `nvidia.com/mig-<profile>`.

use super::{Assignment, GangNodes, SolveInfo};
use crate::catalog::{MigProfile, fits_profiles, sort_canonical};
use crate::model::PoolMode;
use crate::model::ledger::{Charge, Ledger};
use crate::model::sizing::{self, Usage};
use crate::model::{Cluster, NodeIdx, Tier};
use std::collections::{BTreeMap, BTreeSet};

/// One GPU in MIG mode: its layout and the instances already serving replicas.
struct MigGpu {
    fixed: bool,
    layout: Vec<&'static MigProfile>,
    used: Vec<&'static MigProfile>,
}

struct State<'c> {
    c: &'c Cluster,
    mode: Vec<Option<PoolMode>>,
    /// GPUs taken whole by gangs.
    used: BTreeSet<(NodeIdx, u32)>,
    mig: BTreeMap<(NodeIdx, u32), MigGpu>,
    /// Shared GPUs: (workload, replicas).
    shared: BTreeMap<(NodeIdx, u32), (usize, u32)>,
    /// The sharing factor (`per-gpu`) each shared node serves: the device plugin gives
    /// every GPU of a node one replica count.
    factor: BTreeMap<NodeIdx, u32>,
    ledger: Ledger,
    a: Assignment,
    /// Nodes whose every usable GPU is taken by gangs (skipped without looking).
    full: Vec<bool>,
    domains: BTreeMap<Tier, DomainNodes>,
    /// Current layouts (`current=#true`) of GPUs without a fixed one.
    current: BTreeMap<(NodeIdx, u32), Vec<&'static MigProfile>>,
}

/// Places every workload class first-fit; see the module docs.
pub fn solve(c: &Cluster) -> (Assignment, SolveInfo) {
    let start = std::time::Instant::now();
    let mut s = State::new(c);
    let order = priority_order(c);
    for &wi in &order {
        if !c.workloads[wi].packed() {
            place_class(&mut s, wi);
        }
    }
    let ledger = std::mem::take(&mut s.ledger);
    let mut a = s.finish();
    place_packed(c, &order, ledger, &mut a);
    (
        a,
        SolveInfo {
            name: "greedy",
            status: super::SolveStatus::Heuristic,
            seconds: start.elapsed().as_secs_f64(),
            stages: 1,
            ..Default::default()
        },
    )
}

/// Workload indexes, higher priority value first, then by name.
pub(crate) fn priority_order(c: &Cluster) -> Vec<usize> {
    let mut order: Vec<usize> = (0..c.workloads.len()).collect();
    let value = |i: usize| {
        c.priority(&c.workloads[i].priority)
            .map(|p| p.value)
            .unwrap_or(0)
    };
    order.sort_by(|&x, &y| {
        value(y)
            .cmp(&value(x))
            .then_with(|| c.workloads[x].name.cmp(&c.workloads[y].name))
    });
    order
}

impl<'c> State<'c> {
    fn new(c: &'c Cluster) -> Self {
        let mut s = State {
            c,
            mode: vec![None; c.nodes.len()],
            used: BTreeSet::new(),
            mig: BTreeMap::new(),
            shared: BTreeMap::new(),
            factor: BTreeMap::new(),
            ledger: Ledger::default(),
            a: Assignment::default(),
            full: vec![false; c.nodes.len()],
            domains: BTreeMap::new(),
            current: BTreeMap::new(),
        };
        for (ni, m) in s.mode.iter_mut().enumerate() {
            *m = c.pool_of(ni).and_then(|p| PoolMode::from_decl(&p.mode));
        }
        s.fixed_layouts();
        let fixed: super::Layouts = s.mig.iter().map(|(k, m)| (*k, m.layout.clone())).collect();
        // The greedy baseline is stateless: no previous placement.
        s.current = super::keepable_layouts(c, &fixed, &BTreeMap::new());
        for (wi, w) in c.workloads.iter().enumerate() {
            if sizing::usage(w, 1) != Usage::Mig {
                continue;
            }
            for m in c.models.values() {
                if let Some(p) = sizing::mig_profile(c, w, m).filter(|_| sizing::runs_on(c, w, m)) {
                    s.a.mig_profiles.insert((wi, m.name.clone()), p.name);
                }
            }
        }
        s
    }

    /// Installs the `mig layout` declarations: those GPUs are MIG with exactly that
    /// layout, and their nodes are MIG nodes.
    fn fixed_layouts(&mut self) {
        let c = self.c;
        for l in c.mig.layouts.iter().filter(|l| !l.current) {
            for &ni in &l.nodes {
                let Some(node) = c.nodes.get(ni) else {
                    continue;
                };
                if self.mode[ni].is_some_and(|m| m != PoolMode::Mig) {
                    continue;
                }
                for g in node.usable_gpus() {
                    if !l.gpus.is_empty() && !l.gpus.contains(&g.index) {
                        continue;
                    }
                    let Some(model) = c.model_of(g) else { continue };
                    let Some(spec) = model.mig else { continue };
                    let layout: Option<Vec<&'static MigProfile>> =
                        l.profiles.iter().map(|p| model.mig_profile(p)).collect();
                    let Some(mut layout) = layout else { continue };
                    if fits_profiles(spec, &layout).is_err() {
                        continue;
                    }
                    sort_canonical(&mut layout);
                    self.mode[ni] = Some(PoolMode::Mig);
                    self.mig.insert(
                        (ni, g.index),
                        MigGpu {
                            fixed: true,
                            layout,
                            used: Vec::new(),
                        },
                    );
                }
            }
        }
    }

    fn finish(mut self) -> Assignment {
        // A configured GPU keeps its layout when what it serves is part of it, and when
        // nothing took it on a node that is MIG or unused.
        for k in self.current.keys() {
            let free_node = self.mode[k.0].is_none_or(|m| m == PoolMode::Mig);
            if free_node && self.untouched(k.0, k.1) {
                self.mode[k.0] = Some(PoolMode::Mig);
                self.mig.insert(
                    *k,
                    MigGpu {
                        fixed: false,
                        layout: Vec::new(),
                        used: Vec::new(),
                    },
                );
            }
        }
        for ((ni, gi), m) in &self.mig {
            let mut layout = if m.fixed {
                m.layout.clone()
            } else {
                match self.current.get(&(*ni, *gi)) {
                    Some(cur) if sub_multiset(&m.used, cur) => cur.clone(),
                    _ => m.used.clone(),
                }
            };
            sort_canonical(&mut layout);
            self.a
                .mig_layouts
                .insert((*ni, *gi), layout.iter().map(|p| p.name).collect());
        }
        for ((ni, gi), (wi, n)) in &self.shared {
            self.a.shares.push((*wi, *ni, *gi, *n));
        }
        self.a.shares.sort();
        self.a.node_mode = self.mode;
        self.a
    }

    fn domain_nodes(&mut self, tier: Tier) -> DomainNodes {
        let c = self.c;
        self.domains
            .entry(tier)
            .or_insert_with(|| {
                std::rc::Rc::new(
                    c.topology
                        .domains_ref(tier)
                        .iter()
                        .map(|d| {
                            let mut by_node: BTreeMap<NodeIdx, Vec<u32>> = BTreeMap::new();
                            for &(ni, gi) in &d.gpus {
                                by_node.entry(ni).or_default().push(gi);
                            }
                            by_node.into_iter().collect()
                        })
                        .collect(),
                )
            })
            .clone()
    }

    /// Marks a node full once gangs hold all its usable GPUs.
    fn refresh_full(&mut self, ni: NodeIdx) {
        let c = self.c;
        self.full[ni] = c.nodes[ni]
            .usable_gpus()
            .all(|g| self.used.contains(&(ni, g.index)));
    }

    /// Whether node `ni` may take work of `mode` (its mode is unset or the same).
    fn takes(&self, ni: NodeIdx, mode: PoolMode) -> bool {
        self.mode[ni].is_none_or(|m| m == mode)
    }

    /// Whether GPU `gi` of node `ni` is untouched (no gang, MIG or share on it).
    fn untouched(&self, ni: NodeIdx, gi: u32) -> bool {
        let k = (ni, gi);
        !self.used.contains(&k) && !self.mig.contains_key(&k) && !self.shared.contains_key(&k)
    }

    fn pool_name(&self, ni: NodeIdx) -> Option<&'c str> {
        self.c.pool_of(ni).map(|p| p.name.as_str())
    }
}

/// Places the replicas of one class. Placing only ever fills capacity and charges teams,
/// so a position that could not take a replica cannot take the next one of the same
/// class: each replica starts where the previous one landed (`cursor`), and the first
/// replica that fits nowhere ends the class. Same answer as rescanning from the start,
/// without the quadratic cost on large clusters.
fn place_class(s: &mut State, wi: usize) {
    let c = s.c;
    let w = &c.workloads[wi];
    let mut cursor = 0;
    match sizing::usage(w, 1) {
        Usage::Gang { .. } => {
            let tier = w.required_tier.unwrap_or(Tier::Cluster);
            let domains = s.domain_nodes(tier);
            for r in 0..w.replicas {
                match place_gang(s, wi, r, &domains[cursor..]) {
                    Some(d) => cursor += d,
                    None => break,
                }
            }
        }
        Usage::Packed { .. } => {} // placed after the other classes: `place_packed`
        Usage::Mig => {
            for _ in 0..w.replicas {
                match place_mig(s, wi, cursor) {
                    Some(ni) => cursor = ni,
                    None => break,
                }
            }
        }
        Usage::Shared { mps, per_gpu } => {
            let mode = PoolMode::shared(mps);
            for _ in 0..w.replicas {
                match place_shared(s, wi, mode, per_gpu, cursor) {
                    Some(ni) => cursor = ni,
                    None => break,
                }
            }
        }
    }
}

/// Packed classes (`requests`, `fraction`), after the others: first-fit decreasing
/// with best-fit node choice. Classes in priority order, then the largest GPU share,
/// CPU and memory first ([`pack::largest_first`]); each replica on the node it leaves
/// with the least free GPU share (then CPU; ties: name order) among those with enough
/// CPU, host memory and GPU share, within the team's ceilings; a replica that fits
/// nowhere ends its class (its replicas are alike).
///
/// Decision: best fit over first fit in name order (issue 31). On the openb default list
/// (seed 42) name-order first fit of the aggregated classes left 27% of the GPUs
/// unallocated, small fractions first scattering over every node; largest first with
/// best fit is the heuristic the FGD paper's BestFit baseline and bin-packing practice
/// use, and it serves as the ILP's floor ([`crate::pipeline`]).
fn place_packed(c: &Cluster, order: &[usize], mut ledger: Ledger, a: &mut Assignment) {
    use super::pack::{self, Bins};
    if !order.iter().any(|w| c.workloads[*w].packed()) {
        return;
    }
    let order = constrained_largest_first(c, order);
    let nodes: Vec<NodeIdx> = (0..c.nodes.len())
        .filter(|n| a.node_mode[*n].is_none_or(|m| m == PoolMode::WholeGpu))
        .collect();
    let mut bins = Bins::new(c, a, nodes.iter().copied());
    for &wi in &order {
        let w = &c.workloads[wi];
        let amount = w.packed_gpu_milli() as f64 / 1000.0;
        for _ in 0..w.replicas {
            let Some((n, gs)) = bins.place_best_fit(c, wi) else {
                break;
            };
            let model = gs
                .first()
                .and_then(|g| c.nodes[n].gpus.iter().find(|x| x.index == *g))
                .and_then(|x| x.model.clone())
                .unwrap_or_default();
            let charge = [Charge {
                model: &model,
                pool: c.pool_of(n).map(|p| p.name.as_str()),
                amount,
            }];
            if !ledger.admits(c, &w.team, &charge) {
                bins.give_back(c, wi, n, &gs);
                break;
            }
            ledger.add(c, &w.team, &charge);
            pack::record(a, wi, n, gs, w.packed_gpu_milli() >= 1000);
        }
    }
    a.packed.sort();
}

/// The packed classes of `order`: priority first, then the classes that accept fewer of
/// the cluster's usable GPUs (a class allowed on one model before those that run
/// anywhere, which would otherwise take that model's GPUs first), then largest first
/// ([`pack::largest_first`]'s order: GPU share, CPU, memory, name).
fn constrained_largest_first(c: &Cluster, order: &[usize]) -> Vec<usize> {
    let mut per_model: BTreeMap<&str, u64> = BTreeMap::new();
    for n in &c.nodes {
        for g in n.usable_gpus() {
            *per_model
                .entry(g.model.as_deref().unwrap_or(""))
                .or_default() += 1;
        }
    }
    let reach = |w: usize| -> u64 {
        let wl = &c.workloads[w];
        if wl.packed_gpu_milli() == 0 {
            return u64::MAX;
        }
        per_model
            .iter()
            .filter(|(m, _)| wl.accepts(m))
            .map(|(_, k)| *k)
            .sum()
    };
    let sized = super::pack::largest_first(
        c,
        order.iter().copied().filter(|w| c.workloads[*w].packed()),
    );
    let rank: BTreeMap<usize, usize> = sized.iter().enumerate().map(|(i, w)| (*w, i)).collect();
    let mut v = sized;
    let pr = |w: usize| c.priority(&c.workloads[w].priority).map(|p| p.value);
    v.sort_by(|a, b| {
        pr(*b)
            .cmp(&pr(*a))
            .then(reach(*a).cmp(&reach(*b)))
            .then(rank[a].cmp(&rank[b]))
    });
    v
}

/// The usable GPUs of each domain of a tier, grouped by node (node order), computed
/// once per tier.
type DomainNodes = std::rc::Rc<Vec<Vec<(NodeIdx, Vec<u32>)>>>;

/// First domain (name order) where the gang fits on the first nodes with enough free
/// GPUs of an acceptable model; all-or-nothing. Returns the domain's position in
/// `domains`, `None` when it fits nowhere.
fn place_gang(
    s: &mut State,
    wi: usize,
    replica: u32,
    domains: &[Vec<(NodeIdx, Vec<u32>)>],
) -> Option<usize> {
    let c = s.c;
    let w = &c.workloads[wi];
    let Usage::Gang { gpus, .. } = sizing::usage(w, 1) else {
        return None;
    };
    // A gang that may not straddle spot and other capacity is built from one side of
    // each domain at a time (other capacity first).
    let sides: &[Option<bool>] = if c.has_spot() && !w.straddle {
        &[Some(false), Some(true)]
    } else {
        &[None]
    };
    for (di, by_node) in domains.iter().enumerate() {
        for &side in sides {
            let mut picked: GangNodes = Vec::new();
            let mut remaining = gpus;
            for (ni, idxs) in by_node {
                let ni = *ni;
                if remaining == 0 {
                    break;
                }
                if side.is_some_and(|sd| c.node_spot(ni) != sd) {
                    continue;
                }
                if !s.takes(ni, PoolMode::WholeGpu) || s.full[ni] {
                    continue;
                }
                let node = &c.nodes[ni];
                let per_node = if w.kind == crate::model::WorkloadKind::Training {
                    c.gang_per_node(w)
                } else {
                    gpus
                };
                let take = per_node.min(remaining) as usize;
                let mut free: Vec<u32> = idxs
                    .iter()
                    .copied()
                    .filter(|&gi| s.untouched(ni, gi))
                    .filter(|&gi| {
                        node.gpus
                            .iter()
                            .find(|g| g.index == gi)
                            .and_then(|g| c.model_of(g))
                            .is_some_and(|m| sizing::runs_on(c, w, m))
                    })
                    .collect();
                free.sort_unstable();
                if free.len() < take {
                    continue;
                }
                // A node whose GPUs the team's ceilings or quotas cannot take is skipped here,
                // not after the domain is filled (another node may hold the share).
                let mut trial = picked.clone();
                trial.push((ni, choose_gpus(c, ni, &free, take)));
                if !s.ledger.admits(c, &w.team, &gang_charges(s, &trial)) {
                    continue;
                }
                picked = trial;
                remaining -= take as u32;
            }
            if remaining > 0 {
                continue;
            }
            let charges = gang_charges(s, &picked);
            if !s.ledger.admits(c, &w.team, &charges) {
                continue;
            }
            s.ledger.add(c, &w.team, &charges);
            for (ni, g) in &picked {
                s.mode[*ni] = Some(PoolMode::WholeGpu);
                s.used.extend(g.iter().map(|&gi| (*ni, gi)));
                s.refresh_full(*ni);
            }
            s.a.gangs.push((wi, replica, picked));
            return Some(di);
        }
    }
    None
}

/// `take` of the free GPUs (sorted): the lowest indexes inside one NVLink domain when
/// one domain has enough, else the lowest indexes.
fn choose_gpus(c: &Cluster, ni: NodeIdx, free: &[u32], take: usize) -> Vec<u32> {
    let node = &c.nodes[ni];
    let mut groups: Vec<(Option<usize>, Vec<u32>)> = Vec::new();
    for &gi in free {
        let d = node
            .gpus
            .iter()
            .find(|g| g.index == gi)
            .and_then(|g| g.nvlink_domain);
        match groups.iter_mut().find(|(k, _)| *k == d && d.is_some()) {
            Some((_, v)) => v.push(gi),
            None => groups.push((d, vec![gi])),
        }
    }
    groups
        .iter()
        .find(|(d, v)| d.is_some() && v.len() >= take)
        .map(|(_, v)| v[..take].to_vec())
        .unwrap_or_else(|| free[..take].to_vec())
}

fn gang_charges<'a>(s: &State<'a>, picked: &GangNodes) -> Vec<Charge<'a>> {
    let c = s.c;
    let mut out = Vec::new();
    for (ni, gpus) in picked {
        for gi in gpus {
            let model = c.nodes[*ni]
                .gpus
                .iter()
                .find(|g| g.index == *gi)
                .and_then(|g| g.model.as_deref())
                .unwrap_or("");
            out.push(Charge {
                model,
                pool: s.pool_name(*ni),
                amount: 1.0,
            });
        }
    }
    out
}

/// First GPU (node name order, then index) whose MIG layout can take the replica's
/// right-sized profile: a free instance of a fixed layout, or one more instance that
/// still fits.
/// Whether every profile of `a` is in `b` (as multisets).
fn sub_multiset(a: &[&'static MigProfile], b: &[&'static MigProfile]) -> bool {
    let mut left: Vec<&str> = b.iter().map(|q| q.name).collect();
    a.iter()
        .all(|q| match left.iter().position(|x| *x == q.name) {
            Some(i) => {
                left.remove(i);
                true
            }
            None => false,
        })
}

/// Which GPUs a MIG pass may use.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    /// Configured GPUs whose current layout still has a free instance of the profile.
    Keep,
    /// GPUs without a current layout.
    Fresh,
    Any,
}

/// One MIG replica. With current layouts known, configured GPUs that already hold the
/// profile come first, then unconfigured GPUs, then any (a reconfiguration); each pass
/// scans from the first node, so the returned cursor is 0.
fn place_mig(s: &mut State, wi: usize, from: NodeIdx) -> Option<NodeIdx> {
    if s.current.is_empty() {
        return place_mig_pass(s, wi, from, Pass::Any);
    }
    [Pass::Keep, Pass::Fresh, Pass::Any]
        .into_iter()
        .find_map(|pass| place_mig_pass(s, wi, 0, pass))
        .map(|_| 0)
}

fn place_mig_pass(s: &mut State, wi: usize, from: NodeIdx, pass: Pass) -> Option<NodeIdx> {
    let c = s.c;
    let w = &c.workloads[wi];
    for (ni, node) in c.nodes.iter().enumerate().skip(from) {
        if !s.takes(ni, PoolMode::Mig) || s.full[ni] {
            continue;
        }
        for g in node.usable_gpus() {
            let Some(model) = c.model_of(g) else { continue };
            let Some(spec) = model.mig else { continue };
            if !sizing::runs_on(c, w, model) {
                continue;
            }
            let Some(p) = sizing::mig_profile(c, w, model) else {
                continue;
            };
            let k = (ni, g.index);
            if s.used.contains(&k) || s.shared.contains_key(&k) {
                continue;
            }
            let passes = match (pass, s.current.get(&k)) {
                (Pass::Any, _) | (Pass::Fresh, None) => true,
                (Pass::Fresh, Some(_)) | (Pass::Keep, None) => false,
                (Pass::Keep, Some(cur)) => {
                    let mut l = s.mig.get(&k).map(|m| m.used.clone()).unwrap_or_default();
                    l.push(p);
                    !s.mig.get(&k).is_some_and(|m| m.fixed) && sub_multiset(&l, cur)
                }
            };
            if !passes {
                continue;
            }
            let ok = match s.mig.get(&k) {
                Some(m) if m.fixed => {
                    let have = m.layout.iter().filter(|q| q.name == p.name).count();
                    let taken = m.used.iter().filter(|q| q.name == p.name).count();
                    have > taken
                }
                Some(m) => {
                    let mut l = m.used.clone();
                    l.push(p);
                    fits_profiles(spec, &l).is_ok()
                }
                None => fits_profiles(spec, &[p]).is_ok(),
            };
            if !ok {
                continue;
            }
            let charge = [Charge {
                model: &model.name,
                pool: s.pool_name(ni),
                amount: p.memory_slices as f64 / spec.memory_slices.max(1) as f64,
            }];
            if !s.ledger.admits(c, &w.team, &charge) {
                continue;
            }
            s.ledger.add(c, &w.team, &charge);
            s.mode[ni] = Some(PoolMode::Mig);
            s.mig
                .entry(k)
                .or_insert_with(|| MigGpu {
                    fixed: false,
                    layout: Vec::new(),
                    used: Vec::new(),
                })
                .used
                .push(p);
            s.a.mig_instances.push((wi, ni, g.index, p.name));
            return Some(ni);
        }
    }
    None
}

/// First GPU that already serves this class below `per_gpu`, or the first untouched
/// GPU on a node of the same sharing mode.
fn place_shared(
    s: &mut State,
    wi: usize,
    mode: PoolMode,
    per_gpu: u32,
    from: NodeIdx,
) -> Option<NodeIdx> {
    let c = s.c;
    let w = &c.workloads[wi];
    for (ni, node) in c.nodes.iter().enumerate().skip(from) {
        if !s.takes(ni, mode) || s.full[ni] || s.factor.get(&ni).is_some_and(|f| *f != per_gpu) {
            continue;
        }
        for g in node.usable_gpus() {
            let Some(model) = c.model_of(g) else { continue };
            if !sizing::runs_on(c, w, model) {
                continue;
            }
            let k = (ni, g.index);
            let ok = match s.shared.get(&k) {
                Some(&(owner, n)) => owner == wi && n < per_gpu,
                None => s.untouched(ni, g.index),
            };
            if !ok {
                continue;
            }
            let charge = [Charge {
                model: &model.name,
                pool: s.pool_name(ni),
                amount: 1.0 / per_gpu.max(1) as f64,
            }];
            if !s.ledger.admits(c, &w.team, &charge) {
                continue;
            }
            s.ledger.add(c, &w.team, &charge);
            s.mode[ni] = Some(mode);
            s.factor.insert(ni, per_gpu);
            s.shared.entry(k).or_insert((wi, 0)).1 += 1;
            return Some(ni);
        }
    }
    None
}
