//! The independent checker: verifies a [`Placement`] against the cluster without the
//! solvers or their right-sizing (everything is re-derived from the model and the GPU
//! catalog). A plan that fails its own checker is never shown as valid.
//!
//! Invariants: each GPU used once (gangs, MIG, shares), never a down GPU or cordoned
//! node, existing indexes; one mode per node, matching what runs there and the declared
//! pool; gangs of the class's size with `gpus-per-node` per node on distinct nodes inside
//! one domain of the required tier; acceptable models; valid MIG layouts that hold their
//! instances, large enough profiles, fixed layouts kept exactly; shared GPUs within
//! `per-gpu` and one class; team ceilings (parents and quotas); no higher-priority gang
//! left out for capacity while lower-priority classes hold capacity that fits it;
//! counts and summary totals consistent.

use super::{Placement, PoolMode, WorkloadPlacement};
use crate::model::WorkloadKind;
use crate::model::{Cluster, Isolation, NodeIdx, Tier, Workload};
use crate::source::Span;
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod packed;
mod policy;
mod sharing;
use policy::{check_priority, check_summary, check_teams};

pub(super) const EPS: f64 = 1e-6;

/// Which invariant a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// The placement's classes are the configuration's, once each; counts add up.
    Classes,
    /// A GPU exists, is up, on a node that is not cordoned, and is used once.
    Gpu,
    /// Gangs: their size, GPUs per node, distinct nodes, one domain of the required tier,
    /// one side of spot capacity unless the class may straddle.
    Gang,
    /// Only GPU models the class accepts; spot nodes only for classes that may use them.
    Model,
    /// MIG layouts valid on the model, holding their instances, large enough profiles,
    /// fixed layouts kept.
    Mig,
    /// Shared GPUs within `per-gpu`, one class per GPU.
    Share,
    /// Packed replicas within their node's CPU and memory and their GPUs' shares.
    Packed,
    /// A node's GPUs shared by one device-plugin rule: shared classes of one sharing
    /// factor; fractions carried by replicas with no whole-GPU work beside them, within
    /// the replicas per GPU each allows, one strategy.
    Sharing,
    /// One mode per node, matching what runs there and its declared pool.
    Mode,
    /// Team ceilings and quotas.
    Team,
    /// No higher-priority gang left out for capacity lower-priority work holds.
    Priority,
    /// Summary totals consistent with the lists.
    Summary,
}

/// One violated invariant of a placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub invariant: Invariant,
    /// The declaration it concerns in the user's files (the class, node, team or MIG
    /// layout); `None` for the plan as a whole or a name the configuration lacks.
    pub span: Option<Span>,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// How a class uses GPUs, re-derived from the workload.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Gang,
    Mig,
    Shared(PoolMode, u32),
}

pub(super) fn kind(w: &Workload) -> Kind {
    if w.kind == WorkloadKind::Training {
        return Kind::Gang;
    }
    match w.isolation.or(w.share).unwrap_or(Isolation::WholeGpu) {
        Isolation::WholeGpu => Kind::Gang,
        Isolation::Mig => Kind::Mig,
        Isolation::TimeSlice => Kind::Shared(PoolMode::TimeSlice, w.per_gpu.unwrap_or(1).max(1)),
        Isolation::Mps => Kind::Shared(PoolMode::Mps, w.per_gpu.unwrap_or(1).max(1)),
    }
}

/// Gang size and GPUs per node of a gang class ([`Cluster::gang_per_node`]).
pub(super) fn gang_shape(c: &Cluster, w: &Workload) -> (u32, u32) {
    if w.kind == WorkloadKind::Training {
        (w.gang_gpus.max(1), c.gang_per_node(w))
    } else {
        let g = w.gpus_per_replica.max(1);
        (g, g)
    }
}

/// Domain names of a tier, and each GPU's domain (index into the names).
type DomainIndex = (Vec<String>, HashMap<(NodeIdx, u32), usize>);

/// What the checker learns while walking the placement.
pub(super) struct Walk<'c> {
    pub(super) c: &'c Cluster,
    pub(super) errors: Vec<Violation>,
    /// The declaration being checked (the span violations get by default).
    pub(super) subject: Option<Span>,
    /// (node, gpu) -> owner description.
    pub(super) owner: BTreeMap<(NodeIdx, u32), String>,
    /// node -> modes of what runs there.
    pub(super) modes: BTreeMap<NodeIdx, BTreeSet<PoolMode>>,
    /// (team, model, pool) GPU-equivalents per class's team.
    /// (team, model, pool, amount, the class's priority value) per charge.
    pub(super) charges: Vec<(String, String, Option<String>, f64, i64)>,
    /// Allocated hardware per GPU (for the summary).
    pub(super) allocated: BTreeMap<(NodeIdx, u32), f64>,
    /// GPU-equivalents per class.
    pub(super) placed: BTreeMap<String, f64>,
    /// Per tier: the domain names, and each GPU's domain index (computed once per tier).
    domains: BTreeMap<Tier, DomainIndex>,
}

/// Every violated invariant; empty when the placement is sound.
pub fn check(c: &Cluster, p: &Placement) -> Vec<Violation> {
    let mut k = Walk {
        c,
        errors: Vec::new(),
        subject: None,
        owner: BTreeMap::new(),
        modes: BTreeMap::new(),
        charges: Vec::new(),
        allocated: BTreeMap::new(),
        placed: BTreeMap::new(),
        domains: BTreeMap::new(),
    };
    check_classes(&mut k, p);
    for wp in &p.workloads {
        k.subject = None;
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            k.fail(
                Invariant::Classes,
                format!("placement lists unknown class `{}`", wp.name),
            );
            continue;
        };
        k.subject = Some(w.span);
        check_counts(&mut k, w, wp);
        check_gangs(&mut k, w, wp);
        check_mig(&mut k, w, wp);
        check_shares(&mut k, w, wp);
    }
    k.subject = None;
    packed::check_packed(&mut k, p);
    sharing::check_sharing(&mut k, p);
    check_layouts(&mut k, p);
    check_modes(&mut k, p);
    check_teams(&mut k);
    check_priority(&mut k, p);
    check_summary(&mut k, p);
    k.errors
}

fn check_classes(k: &mut Walk, p: &Placement) {
    for w in &k.c.workloads {
        let n = p.workloads.iter().filter(|x| x.name == w.name).count();
        k.subject = Some(w.span);
        if n != 1 {
            k.fail(
                Invariant::Classes,
                format!("class `{}` appears {n} times in the placement", w.name),
            );
        }
    }
}

impl<'c> Walk<'c> {
    /// Records a violation of `invariant` about the current subject.
    pub(super) fn fail(&mut self, invariant: Invariant, message: String) {
        self.errors.push(Violation {
            invariant,
            span: self.subject,
            message,
        });
    }

    /// Records a violation about a node's declaration.
    pub(super) fn fail_node(&mut self, invariant: Invariant, ni: NodeIdx, message: String) {
        self.errors.push(Violation {
            invariant,
            span: self.c.nodes.get(ni).map(|n| n.span),
            message,
        });
    }

    /// Indexes the domains of `tier` (once).
    fn domains_at(&mut self, tier: Tier) {
        let c = self.c;
        self.domains.entry(tier).or_insert_with(|| {
            let ds = c.topology.domains(c, tier);
            let mut of = HashMap::new();
            for (i, d) in ds.iter().enumerate() {
                for g in &d.gpus {
                    of.insert(*g, i);
                }
            }
            (ds.into_iter().map(|d| d.name).collect(), of)
        });
    }

    /// The name of the `tier` domain holding a GPU (empty when it has none).
    fn domain_name(&self, tier: Tier, ni: NodeIdx, gi: u32) -> String {
        self.domains
            .get(&tier)
            .and_then(|(names, of)| of.get(&(ni, gi)).map(|i| names[*i].clone()))
            .unwrap_or_default()
    }

    /// Resolves a GPU, reporting unknown nodes/indexes, down GPUs and cordoned nodes.
    fn gpu(&mut self, node: &str, gi: u32, what: &str) -> Option<(NodeIdx, &'c crate::model::Gpu)> {
        let c = self.c;
        let Some(&ni) = c.node_index.get(node) else {
            self.fail(Invariant::Gpu, format!("{what}: unknown node `{node}`"));
            return None;
        };
        let n = &c.nodes[ni];
        let Some(g) = n.gpus.iter().find(|g| g.index == gi) else {
            self.fail(
                Invariant::Gpu,
                format!("{what}: node `{node}` has no GPU {gi}"),
            );
            return None;
        };
        if n.cordon {
            self.fail(Invariant::Gpu, format!("{what}: node `{node}` is cordoned"));
        } else if g.down {
            self.fail(
                Invariant::Gpu,
                format!("{what}: GPU {gi} of `{node}` is down"),
            );
        }
        Some((ni, g))
    }

    /// Claims a GPU for `who`; a GPU may be claimed by one owner (shared/MIG GPUs by
    /// one key, claimed once per GPU).
    fn claim(&mut self, ni: NodeIdx, gi: u32, who: String) {
        if let Some(prev) = self.owner.get(&(ni, gi)) {
            if *prev != who {
                self.fail_node(
                    Invariant::Gpu,
                    ni,
                    format!(
                        "GPU {gi} of `{}` is used twice: by {prev} and by {who}",
                        self.c.nodes[ni].name
                    ),
                );
            }
            return;
        }
        self.owner.insert((ni, gi), who);
    }

    fn charge(&mut self, w: &Workload, ni: NodeIdx, model: &str, amount: f64) {
        if self.c.node_spot(ni) {
            if let Some(why) = self.c.spot_fit(w).reason() {
                let node = &self.c.nodes[ni].name;
                self.fail(
                    Invariant::Model,
                    format!("`{}` runs on spot node `{node}`, but {why}", w.name),
                );
            }
        }
        let pool = self.c.pool_of(ni).map(|p| p.name.clone());
        *self.placed.entry(w.name.clone()).or_default() += amount;
        let prio = self
            .c
            .priority(&w.priority)
            .map(|p| p.value)
            .unwrap_or(i64::MIN);
        self.charges
            .push((w.team.clone(), model.to_string(), pool, amount, prio));
    }

    fn mode(&mut self, ni: NodeIdx, m: PoolMode) {
        self.modes.entry(ni).or_default().insert(m);
    }
}

fn check_counts(k: &mut Walk, w: &Workload, wp: &WorkloadPlacement) {
    let placed = wp.gangs.len() as u32
        + wp.mig_instances.len() as u32
        + wp.shares.iter().map(|s| s.replicas).sum::<u32>()
        + wp.packed.iter().map(|s| s.replicas).sum::<u32>();
    if placed != wp.replicas_placed {
        k.fail(
            Invariant::Classes,
            format!(
                "`{}`: replicas_placed is {} but the lists hold {placed}",
                w.name, wp.replicas_placed
            ),
        );
    }
    let unplaced: u32 = wp.unplaced.iter().map(|u| u.replicas).sum();
    if wp.replicas_requested != w.replicas || placed + unplaced != w.replicas {
        k.fail(
            Invariant::Classes,
            format!(
                "`{}`: {placed} placed + {unplaced} unplaced != {} requested",
                w.name, w.replicas
            ),
        );
    }
}

fn check_gangs(k: &mut Walk, w: &Workload, wp: &WorkloadPlacement) {
    if wp.gangs.is_empty() {
        return;
    }
    if kind(w) != Kind::Gang {
        k.fail(
            Invariant::Gang,
            format!("`{}` is not a whole-GPU class but has gangs", w.name),
        );
    }
    let tier = w.required_tier.unwrap_or(Tier::Cluster);
    k.domains_at(tier);
    let mut replicas = BTreeSet::new();
    for g in &wp.gangs {
        if g.replica >= w.replicas || !replicas.insert(g.replica) {
            let who = format!("gang {} of `{}`", g.replica, w.name);
            k.fail(
                Invariant::Gang,
                format!("{who}: replica index repeated or out of range"),
            );
        }
        check_gang(k, w, g, tier);
    }
}

/// One gang: distinct nodes and GPUs, acceptable models, GPUs per node, its size, one
/// domain of the required tier; claims and charges its GPUs.
fn check_gang(k: &mut Walk, w: &Workload, g: &super::Gang, tier: Tier) {
    let c = k.c;
    let who = format!("gang {} of `{}`", g.replica, w.name);
    let mut total = 0;
    let mut domains = BTreeSet::new();
    let mut short = 0;
    let mut nodes = BTreeSet::new();
    let mut sides = BTreeSet::new();
    for ng in &g.nodes {
        if !nodes.insert(ng.node.clone()) {
            k.fail(
                Invariant::Gang,
                format!("{who}: node `{}` listed twice", ng.node),
            );
        }
        let mut per_node_size = None;
        let distinct: BTreeSet<u32> = ng.gpus.iter().copied().collect();
        if distinct.len() != ng.gpus.len() {
            k.fail(
                Invariant::Gang,
                format!("{who}: a GPU of `{}` is listed twice", ng.node),
            );
        }
        for &gi in &ng.gpus {
            let Some((ni, gpu)) = k.gpu(&ng.node, gi, &who) else {
                continue;
            };
            let model = gpu.model.clone().unwrap_or_default();
            if !w.accepts(&model) {
                k.fail(
                    Invariant::Model,
                    format!(
                        "{who}: `{}` GPU {gi} is `{model}`, not an acceptable model",
                        ng.node
                    ),
                );
            }
            per_node_size = Some(gang_shape(c, w).1);
            sides.insert(c.gang_side(w, ni));
            k.claim(ni, gi, who.clone());
            k.mode(ni, PoolMode::WholeGpu);
            k.charge(w, ni, &model, 1.0);
            k.allocated.insert((ni, gi), 1.0);
            domains.insert(k.domain_name(tier, ni, gi));
            total += 1;
        }
        if let Some(per) = per_node_size {
            let n = ng.gpus.len() as u32;
            if n > per {
                k.fail(
                    Invariant::Gang,
                    format!(
                        "{who}: {n} GPUs on `{}`, the class takes {per} per node",
                        ng.node
                    ),
                );
            } else if n < per {
                short += 1;
            }
        }
    }
    if sides.len() > 1 {
        k.fail(
            Invariant::Gang,
            format!("{who}: mixes spot and other nodes, and the class may not straddle them"),
        );
    }
    gang_extent(k, w, &who, (total, short), domains, tier);
}

/// A gang's size (`total` GPUs), at most one node short of `gpus-per-node` (`short`),
/// and the domains of `tier` it spans (one).
fn gang_extent(
    k: &mut Walk,
    w: &Workload,
    who: &str,
    (total, short): (u32, u32),
    domains: BTreeSet<String>,
    tier: Tier,
) {
    let c = k.c;
    let size = gang_shape(c, w).0;
    if total != size {
        k.fail(
            Invariant::Gang,
            format!("{who}: holds {total} GPUs, the class's gang has {size}"),
        );
    }
    // Only the last node of a gang whose size is not a multiple may hold fewer.
    if short > 1 {
        k.fail(
            Invariant::Gang,
            format!("{who}: {short} nodes hold fewer GPUs than gpus-per-node"),
        );
    }
    if domains.len() > 1 {
        let list: Vec<String> = domains.into_iter().collect();
        k.fail(
            Invariant::Gang,
            format!(
                "{who}: spans {} {} domains ({}), must stay inside one",
                list.len(),
                tier.as_str(),
                list.join(", ")
            ),
        );
    }
}

fn check_mig(k: &mut Walk, w: &Workload, wp: &WorkloadPlacement) {
    if wp.mig_instances.is_empty() {
        return;
    }
    if kind(w) != Kind::Mig {
        k.fail(
            Invariant::Mig,
            format!("`{}` is not a MIG class but has MIG instances", w.name),
        );
    }
    let c = k.c;
    for m in &wp.mig_instances {
        let who = format!("MIG instance of `{}` on `{}` GPU {}", w.name, m.node, m.gpu);
        let Some((ni, gpu)) = k.gpu(&m.node, m.gpu, &who) else {
            continue;
        };
        let model_name = gpu.model.clone().unwrap_or_default();
        k.claim(ni, m.gpu, "a MIG layout".to_string());
        k.mode(ni, PoolMode::Mig);
        if !w.accepts(&model_name) {
            k.fail(
                Invariant::Model,
                format!("{who}: `{model_name}` is not an acceptable model"),
            );
        }
        let Some(model) = c.models.get(&model_name) else {
            continue;
        };
        let (Some(spec), Some(prof)) = (model.mig, model.mig_profile(&m.profile)) else {
            k.fail(
                Invariant::Mig,
                format!(
                    "{who}: `{}` is not a MIG profile of `{model_name}`",
                    m.profile
                ),
            );
            continue;
        };
        if let Some(mem) = w.memory {
            // What holds on this node's driver (catalog::memory).
            let usable = crate::catalog::usable_memory_gib(spec, prof, c.node_driver(ni));
            if usable + 1e-9 < mem.gib() {
                k.fail(
                    Invariant::Mig,
                    format!(
                        "{who}: `{}` has {usable} GiB, the replica needs {mem}",
                        m.profile
                    ),
                );
            }
        }
        let frac = prof.memory_slices as f64 / spec.memory_slices.max(1) as f64;
        k.charge(w, ni, &model_name, frac);
        *k.allocated.entry((ni, m.gpu)).or_default() += frac;
    }
}

fn check_shares(k: &mut Walk, w: &Workload, wp: &WorkloadPlacement) {
    if wp.shares.is_empty() {
        return;
    }
    let Kind::Shared(mode, per_gpu) = kind(w) else {
        k.fail(
            Invariant::Share,
            format!("`{}` is not a shared class but has shares", w.name),
        );
        return;
    };
    for s in &wp.shares {
        let who = format!("shared GPU of `{}`", w.name);
        let Some((ni, gpu)) = k.gpu(&s.node, s.gpu, &who) else {
            continue;
        };
        let model = gpu.model.clone().unwrap_or_default();
        if !w.accepts(&model) {
            k.fail(
                Invariant::Model,
                format!("{who}: `{model}` is not an acceptable model"),
            );
        }
        if s.replicas == 0 || s.replicas > per_gpu {
            k.fail(
                Invariant::Share,
                format!(
                    "{who}: GPU {} of `{}` holds {} replicas, per-gpu is {per_gpu}",
                    s.gpu, s.node, s.replicas
                ),
            );
        }
        // Claimed per class: a second share entry of any class on this GPU collides.
        let key = format!("shares of `{}` on `{}` GPU {}", w.name, s.node, s.gpu);
        match k.owner.entry((ni, s.gpu)) {
            std::collections::btree_map::Entry::Occupied(prev) => {
                let prev = prev.get().clone();
                k.fail_node(
                    Invariant::Gpu,
                    ni,
                    format!(
                        "GPU {} of `{}` is used twice: by {prev} and by {key}",
                        s.gpu, s.node
                    ),
                );
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(key);
            }
        }
        k.mode(ni, mode);
        k.charge(w, ni, &model, s.replicas as f64 / per_gpu as f64);
        k.allocated.insert((ni, s.gpu), 1.0);
    }
}

/// MIG layouts: valid on the model, hold their instances, keep the fixed layouts.
fn check_layouts(k: &mut Walk, p: &Placement) {
    let c = k.c;
    let mut layouts: BTreeMap<(NodeIdx, u32), Vec<&'static str>> = BTreeMap::new();
    for l in &p.mig_layouts {
        let who = format!("MIG layout of `{}` GPU {}", l.node, l.gpu);
        k.subject = c.node_index.get(&l.node).map(|&n| c.nodes[n].span);
        let Some((ni, gpu)) = k.gpu(&l.node, l.gpu, &who) else {
            continue;
        };
        k.claim(ni, l.gpu, "a MIG layout".to_string());
        k.mode(ni, PoolMode::Mig);
        let Some(model) = c.model_of(gpu) else {
            continue;
        };
        let Some(spec) = model.mig else {
            k.fail(
                Invariant::Mig,
                format!("{who}: `{}` is not MIG-capable", model.name),
            );
            continue;
        };
        let names: Option<Vec<&'static str>> = l
            .profiles
            .iter()
            .map(|n| model.mig_profile(n).map(|q| q.name))
            .collect();
        let Some(names) = names else {
            k.fail(
                Invariant::Mig,
                format!("{who}: unknown profile in {:?}", l.profiles),
            );
            continue;
        };
        if let Err(e) = crate::catalog::fits(spec, &names) {
            k.fail(
                Invariant::Mig,
                format!("{who}: {} does not fit: {e}", names.join("+")),
            );
        }
        if layouts.insert((ni, l.gpu), names).is_some() {
            k.fail(Invariant::Mig, format!("{who}: listed twice"));
        }
    }
    k.subject = None;
    check_instances(k, p, &layouts);
    check_fixed(k, &layouts);
}

/// Every MIG instance is one of its GPU's layout instances (as a multiset).
fn check_instances(
    k: &mut Walk,
    p: &Placement,
    layouts: &BTreeMap<(NodeIdx, u32), Vec<&'static str>>,
) {
    let c = k.c;
    // Instances within their GPU's layout.
    let mut used: BTreeMap<(NodeIdx, u32), Vec<&'static str>> = BTreeMap::new();
    for wp in &p.workloads {
        for m in &wp.mig_instances {
            let Some(&ni) = c.node_index.get(&m.node) else {
                continue;
            };
            let prof = c.nodes[ni]
                .gpus
                .iter()
                .find(|g| g.index == m.gpu)
                .and_then(|g| c.model_of(g))
                .and_then(|md| md.mig_profile(&m.profile));
            if let Some(q) = prof {
                used.entry((ni, m.gpu)).or_default().push(q.name);
            }
        }
    }
    for (key, inst) in &used {
        let mut left = layouts.get(key).cloned().unwrap_or_default();
        for name in inst {
            match left.iter().position(|x| x == name) {
                Some(i) => {
                    left.remove(i);
                }
                None => k.fail_node(
                    Invariant::Mig,
                    key.0,
                    format!(
                        "`{}` GPU {}: instance `{name}` is not in the GPU's MIG layout",
                        c.nodes[key.0].name, key.1
                    ),
                ),
            }
        }
    }
}

/// The `mig layout` declarations are kept exactly on every usable GPU they name.
fn check_fixed(k: &mut Walk, layouts: &BTreeMap<(NodeIdx, u32), Vec<&'static str>>) {
    let c = k.c;
    for l in c.mig.layouts.iter().filter(|l| !l.current) {
        k.subject = Some(l.span);
        for &ni in &l.nodes {
            let Some(n) = c.nodes.get(ni) else { continue };
            for g in n
                .usable_gpus()
                .filter(|g| l.gpus.is_empty() || l.gpus.contains(&g.index))
            {
                let Some(model) = c.model_of(g) else { continue };
                let mut want: Vec<&str> = l
                    .profiles
                    .iter()
                    .map(|x| model.mig_profile(x).map(|q| q.name).unwrap_or(x.as_str()))
                    .collect();
                want.sort_unstable();
                let mut have: Vec<&str> = layouts.get(&(ni, g.index)).cloned().unwrap_or_default();
                have.sort_unstable();
                if want != have {
                    k.fail(
                        Invariant::Mig,
                        format!(
                            "`{}` GPU {}: the fixed `mig layout` {} is not kept (plan has {})",
                            n.name,
                            g.index,
                            want.join("+"),
                            if have.is_empty() {
                                "none".to_string()
                            } else {
                                have.join("+")
                            }
                        ),
                    );
                }
            }
        }
    }
}

fn check_modes(k: &mut Walk, p: &Placement) {
    let c = k.c;
    k.subject = None;
    let mut seen = BTreeMap::new();
    for np in &p.pools {
        let Some(&ni) = c.node_index.get(&np.node) else {
            k.fail(
                Invariant::Mode,
                format!("pools: unknown node `{}`", np.node),
            );
            continue;
        };
        if seen.insert(ni, np.mode).is_some() {
            k.fail_node(
                Invariant::Mode,
                ni,
                format!("pools: node `{}` listed twice", np.node),
            );
        }
        if let Some(decl) = c.pool_of(ni) {
            if PoolMode::from_decl(&decl.mode).is_some_and(|m| m != np.mode) {
                k.fail_node(
                    Invariant::Mode,
                    ni,
                    format!(
                        "node `{}` of pool `{}` (mode {}) is used as {}",
                        np.node,
                        decl.name,
                        decl.mode,
                        np.mode.as_str()
                    ),
                );
            }
        }
    }
    for (ni, n) in c.nodes.iter().enumerate() {
        if !seen.contains_key(&ni) {
            k.fail_node(
                Invariant::Mode,
                ni,
                format!("pools: node `{}` is missing", n.name),
            );
        }
    }
    let modes_of = std::mem::take(&mut k.modes);
    for (ni, modes) in &modes_of {
        let name = &c.nodes[*ni].name;
        if modes.len() > 1 {
            let list: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
            k.fail_node(
                Invariant::Mode,
                *ni,
                format!("node `{name}` mixes modes: {}", list.join(", ")),
            );
        }
        if let (Some(m), Some(pm)) = (modes.iter().next(), seen.get(ni)) {
            if modes.len() == 1 && m != pm {
                k.fail_node(
                    Invariant::Mode,
                    *ni,
                    format!(
                        "node `{name}` runs {} work but its pool mode is {}",
                        m.as_str(),
                        pm.as_str()
                    ),
                );
            }
        }
    }
    k.modes = modes_of;
}
