//! Scheduling authority: which scheduler owns each node and runs each class.
//!
//! A node is owned by exactly one scheduler: its pool's `scheduler=`, or else the
//! cluster's `scheduler`. A class runs under exactly one scheduler (see
//! [`Cluster::class_authority`]) and is placed only on nodes that scheduler owns. When
//! no authority is declared anywhere, every node and class has none (`None`): the plan
//! is made as before and every target renders every node (`validate` warns once).
//!
//! Decision: a class is never split across schedulers. A job is submitted to one
//! scheduler; splitting a class would need one submission per scheduler and a quota
//! per part, which nobody writes by hand and gpuplan could not render honestly.

use super::{Cluster, NodeIdx, PoolMode, Quota, Workload, WorkloadKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The scheduler that owns a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Authority {
    /// kube-scheduler alone (no gang admission).
    Kubernetes,
    /// kube-scheduler with Kueue admission (gangs through `podSets`, topology-aware).
    Kueue,
    /// Volcano (gangs through PodGroups, HyperNodes).
    Volcano,
    /// NVIDIA KAI Scheduler (hierarchical queues, gangs through PodGroups, GPU
    /// fractions it shares itself, its Topology).
    Kai,
    /// Slurm (gangs are jobs, topology.conf).
    Slurm,
}

impl Authority {
    pub const ALL: [Authority; 5] = [
        Authority::Kubernetes,
        Authority::Kueue,
        Authority::Volcano,
        Authority::Kai,
        Authority::Slurm,
    ];

    pub(crate) fn parse(s: &str) -> Option<Authority> {
        Some(match s {
            "kubernetes" => Authority::Kubernetes,
            "kueue" => Authority::Kueue,
            "volcano" => Authority::Volcano,
            "kai" => Authority::Kai,
            "slurm" => Authority::Slurm,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Authority::Kubernetes => "kubernetes",
            Authority::Kueue => "kueue",
            Authority::Volcano => "volcano",
            Authority::Kai => "kai",
            Authority::Slurm => "slurm",
        }
    }

    /// Whether its nodes are Kubernetes nodes (every authority but Slurm).
    pub fn kubernetes_managed(self) -> bool {
        self != Authority::Slurm
    }

    /// Whether gpuplan hands out its nodes' GPUs through DRA resource claims when a pool
    /// (or the cluster) declares `gpu-allocation "dra"`: kube-scheduler, Kueue and
    /// Volcano. Not Slurm (gres.conf), nor KAI Scheduler: its GPU sharing is its own
    /// (`gpu-fraction` / `gpu-memory` with a reservation pod holding a GPU the device
    /// plugin advertises), and its DRA accounting (KAI-Scheduler PR #900, "gpu dra
    /// accounting") counts neither claims shared by several pods nor `firstAvailable`,
    /// the two forms gpuplan's DRA claims take. A DRA declaration on its pools is GP053.
    pub(crate) fn claims_gpus_through_dra(self) -> bool {
        matches!(
            self,
            Authority::Kubernetes | Authority::Kueue | Authority::Volcano
        )
    }

    /// Whether it admits a multi-pod gang all-or-nothing (kube-scheduler alone does not).
    pub(crate) fn gang_admission(self) -> bool {
        self != Authority::Kubernetes
    }

    /// Whether its device plumbing supports GPUs in `mode`. Kubernetes-managed nodes get
    /// every mode from the NVIDIA device plugin (MIG `mixed` strategy, time-slicing and
    /// MPS sharing). Slurm gets whole GPUs and MIG instances (gres.conf, one GRES per
    /// instance with `MultipleFiles`), and shared GPUs from 22.05 (`gres/shard`,
    /// `gres/mps`). KAI shares GPUs itself (`gpu-fraction`, `gpu-memory`: a reservation
    /// pod holds the GPU the device plugin advertises whole), so it serves whole-GPU,
    /// training and time-slice pools; MIG (KAI counts an `Ng.Mgb` instance as N whole
    /// GPUs against its queues and reads no other profile names) and MPS (an MPS server
    /// per node, outside KAI) are not rendered for it.
    pub(crate) fn supports(self, mode: PoolMode, slurm_version: &[u32]) -> bool {
        match self {
            Authority::Slurm => {
                matches!(mode, PoolMode::WholeGpu | PoolMode::Mig) || slurm_version >= SLURM_SHARING
            }
            Authority::Kai => !matches!(mode, PoolMode::Mig | PoolMode::Mps),
            _ => true,
        }
    }

    /// Whether it shares a GPU by fractions of any size that add up to at most one GPU
    /// (Slurm's shards, KAI's `gpu-fraction`), rather than by the device plugin's one
    /// replica count per node.
    pub fn shares_by_fraction(self) -> bool {
        matches!(self, Authority::Slurm | Authority::Kai)
    }

    /// Whether it can run a class at all (gangs of several pods need gang admission).
    pub(crate) fn can_run(self, c: &Cluster, w: &Workload) -> bool {
        // Cheapest test first: counting a gang's pods scans the nodes.
        self.gang_admission() || !(w.kind == WorkloadKind::Training && c.gang_pods(w) > 1)
    }
}

/// The first Slurm with `gres/shard` (and `MultipleFiles`): GPUs shared between jobs.
pub(crate) const SLURM_SHARING: &[u32] = &[22, 5];

impl std::fmt::Display for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a class's authority was decided, or why it could not be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassAuthority {
    /// No authority is declared anywhere: the class may land on any node.
    Undeclared,
    Resolved(Authority),
    /// More than one authority could run it and none is the cluster's default.
    Ambiguous,
    /// No authority of the cluster can run it (e.g. a multi-pod gang where only plain
    /// `kubernetes` owns nodes).
    None,
}

impl Cluster {
    /// Whether any scheduling authority is declared (cluster, pool, class or quota).
    pub fn authorities_declared(&self) -> bool {
        self.scheduler.is_some()
            || self.pools.iter().any(|p| p.scheduler.is_some())
            || self.workloads.iter().any(|w| w.scheduler.is_some())
            || self
                .teams
                .values()
                .any(|t| t.quotas.iter().any(|q| q.scheduler.is_some()))
    }

    /// The scheduler that owns a node: its pool's, else the cluster's.
    pub fn node_authority(&self, n: NodeIdx) -> Option<Authority> {
        match self.owners.get(n) {
            Some(a) if self.owners.len() == self.nodes.len() => *a,
            _ => self.pool_of(n).and_then(|p| p.scheduler).or(self.scheduler),
        }
    }

    /// Every node's authority, from the first pool listing each node (`pool_at`, see
    /// [`Cluster::pool_of`]).
    fn owners_of(&self, pool_at: &[Option<usize>]) -> Vec<Option<Authority>> {
        pool_at
            .iter()
            .map(|p| p.and_then(|pi| self.pools[pi].scheduler).or(self.scheduler))
            .collect()
    }

    /// The first pool listing each node, by node index.
    pub(super) fn compute_pool_at(&self) -> Vec<Option<usize>> {
        let mut pool: Vec<Option<usize>> = vec![None; self.nodes.len()];
        for (pi, p) in self.pools.iter().enumerate() {
            for &n in &p.nodes {
                if let Some(slot) = pool.get_mut(n) {
                    slot.get_or_insert(pi);
                }
            }
        }
        pool
    }

    /// The authorities that own at least one node, sorted.
    pub fn authorities(&self) -> Vec<Authority> {
        if self.owners.len() == self.nodes.len() {
            return self.owner_list.clone();
        }
        Self::distinct((0..self.nodes.len()).filter_map(|n| self.node_authority(n)))
    }

    /// The authorities of `all`, sorted, once each (a handful over 12,500 nodes at
    /// 100,000 GPUs: kept as found, then sorted).
    fn distinct(all: impl Iterator<Item = Authority>) -> Vec<Authority> {
        let mut v: Vec<Authority> = Vec::new();
        for a in all {
            if !v.contains(&a) {
                v.push(a);
            }
        }
        v.sort();
        v
    }

    /// Pods of one gang of a training class.
    pub(crate) fn gang_pods(&self, w: &Workload) -> u32 {
        w.gang_gpus.max(1).div_ceil(self.gang_per_node(w).max(1))
    }

    /// The scheduler a class runs under: its `scheduler=`; else the cluster's default
    /// when it owns a node with a GPU model the class accepts and can run it; else the
    /// one authority owning such nodes that can run it.
    pub(crate) fn class_authority(&self, w: &Workload) -> ClassAuthority {
        // Cached per class (workloads are sorted by name) when computed for this model.
        if self.class_owners.len() == self.workloads.len() {
            if let Ok(i) = self.workloads.binary_search_by(|x| x.name.cmp(&w.name)) {
                return self.class_owners[i];
            }
        }
        self.resolve_class(w)
    }

    /// [`Cluster::class_authority`] without the cache.
    fn resolve_class(&self, w: &Workload) -> ClassAuthority {
        if !self.authorities_declared() {
            return ClassAuthority::Undeclared;
        }
        if let Some(a) = w.scheduler {
            return ClassAuthority::Resolved(a);
        }
        let candidates = self.candidate_authorities(w);
        // The default only where it owns a node the class accepts (or where no node
        // does: nothing else to choose, and the rules say why).
        let owns = |a: &Authority| candidates.is_empty() || candidates.contains(a);
        if let Some(a) = self.scheduler.filter(|a| owns(a) && a.can_run(self, w)) {
            return ClassAuthority::Resolved(a);
        }
        let found: Vec<Authority> = candidates
            .into_iter()
            .filter(|a| a.can_run(self, w))
            .collect();
        match found.as_slice() {
            [one] => ClassAuthority::Resolved(*one),
            [] => ClassAuthority::None,
            _ => ClassAuthority::Ambiguous,
        }
    }

    /// The authorities owning nodes with a usable GPU of a model the class accepts,
    /// sorted (from the per-model index, not a scan of the nodes).
    pub(crate) fn candidate_authorities(&self, w: &Workload) -> Vec<Authority> {
        let mut v: Vec<Authority> = if self.model_owners.is_empty() && !self.nodes.is_empty() {
            (0..self.nodes.len())
                .filter(|&n| {
                    self.nodes[n]
                        .usable_gpus()
                        .any(|g| g.model.as_deref().is_some_and(|m| w.accepts(m)))
                })
                .filter_map(|n| self.node_authority(n))
                .collect()
        } else {
            self.model_owners
                .iter()
                .filter(|(m, _)| w.accepts(m))
                .flat_map(|(_, a)| a.iter().copied())
                .collect()
        };
        v.sort();
        v.dedup();
        v
    }

    /// Per GPU model: the authorities owning a node with a usable GPU of it.
    pub(super) fn compute_model_owners(
        &self,
    ) -> std::collections::BTreeMap<String, std::collections::BTreeSet<Authority>> {
        let mut out: std::collections::BTreeMap<String, std::collections::BTreeSet<Authority>> =
            Default::default();
        for (n, node) in self.nodes.iter().enumerate() {
            let Some(a) = self.node_authority(n) else {
                continue;
            };
            for g in node.usable_gpus() {
                if let Some(m) = &g.model {
                    if !out.get(m).is_some_and(|s| s.contains(&a)) {
                        out.entry(m.clone()).or_default().insert(a);
                    }
                }
            }
        }
        out
    }

    /// Every class's authority, in workload order (the cache of
    /// [`Cluster::class_authority`]).
    pub(super) fn compute_class_owners(&self) -> Vec<ClassAuthority> {
        self.workloads
            .iter()
            .map(|w| self.resolve_class(w))
            .collect()
    }

    /// Recomputes the authority caches (after nodes, pools or classes changed).
    pub(crate) fn refresh_authorities(&mut self) {
        self.owners = Vec::new();
        self.owner_list = Vec::new();
        self.pool_at = Vec::new();
        self.model_owners = Default::default();
        self.class_owners = Vec::new();
        self.pool_at = self.compute_pool_at();
        self.owners = self.owners_of(&self.pool_at);
        self.owner_list = Self::distinct(self.owners.iter().flatten().copied());
        self.model_owners = self.compute_model_owners();
        self.class_owners = self.compute_class_owners();
    }

    /// The resolved authority of a class (`None` when undeclared or unresolved).
    pub fn authority_of(&self, w: &Workload) -> Option<Authority> {
        match self.class_authority(w) {
            ClassAuthority::Resolved(a) => Some(a),
            _ => None,
        }
    }

    /// The authorities the nodes a quota counts belong to: its `scheduler=`, else its
    /// pool's nodes', else those of the nodes with its model (every authority of the
    /// cluster for a quota that names neither).
    pub fn quota_authorities(&self, q: &Quota) -> Vec<Authority> {
        if let Some(a) = q.scheduler {
            return vec![a];
        }
        let mut v: Vec<Authority> = (0..self.nodes.len())
            .filter(|&n| {
                let pool_ok = q
                    .pool
                    .as_deref()
                    .is_none_or(|p| self.pool_of(n).is_some_and(|x| x.name == p));
                let model_ok = q.model.as_deref().is_none_or(|m| {
                    self.nodes[n]
                        .gpus
                        .iter()
                        .any(|g| g.model.as_deref() == Some(m))
                });
                pool_ok && model_ok
            })
            .filter_map(|n| self.node_authority(n))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// One authority's part of a team's quota.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Part {
    pub guarantee: u32,
    pub ceiling: u32,
}

impl Cluster {
    /// The authorities the classes of a team and of its descendants run under, sorted.
    pub(crate) fn team_class_authorities(&self, team: &str) -> Vec<Authority> {
        let mut v: Vec<Authority> = self
            .workloads
            .iter()
            .filter(|w| self.team_chain(&w.team).iter().any(|t| t.name == team))
            .filter_map(|w| self.authority_of(w))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// A team's quota split per authority. With `quota scheduler=...` lines, their sums;
    /// otherwise all of it to the one authority its classes (and its descendants') run
    /// under, or, with no class, to the cluster's default (or its only) authority. Empty
    /// when authorities are undeclared or the split is not determined (GP038 says why).
    pub fn team_parts(&self, team: &super::Team) -> std::collections::BTreeMap<Authority, Part> {
        if !self.authorities_declared() {
            return Default::default();
        }
        self.parts_with(team, &self.team_class_authorities(&team.name))
    }

    /// Every team's parts (see [`Cluster::team_parts`]), the classes' authorities
    /// gathered in one pass over the classes.
    pub fn all_team_parts(
        &self,
    ) -> std::collections::BTreeMap<String, std::collections::BTreeMap<Authority, Part>> {
        if !self.authorities_declared() {
            return Default::default();
        }
        let mut classes: std::collections::BTreeMap<&str, Vec<Authority>> = Default::default();
        for w in &self.workloads {
            let Some(a) = self.authority_of(w) else {
                continue;
            };
            for t in self.team_chain(&w.team) {
                let v = classes.entry(t.name.as_str()).or_default();
                if !v.contains(&a) {
                    v.push(a);
                }
            }
        }
        self.teams
            .values()
            .map(|t| {
                let mut cl = classes.get(t.name.as_str()).cloned().unwrap_or_default();
                cl.sort();
                (t.name.clone(), self.parts_with(t, &cl))
            })
            .collect()
    }

    /// A team's parts given the authorities its classes (and its descendants') run under.
    fn parts_with(
        &self,
        team: &super::Team,
        classes: &[Authority],
    ) -> std::collections::BTreeMap<Authority, Part> {
        let mut out = std::collections::BTreeMap::new();
        let lines: Vec<&Quota> = team
            .quotas
            .iter()
            .filter(|q| q.scheduler.is_some() && q.model.is_none() && q.pool.is_none())
            .collect();
        if !lines.is_empty() {
            for q in lines {
                let p: &mut Part = out.entry(q.scheduler.expect("filtered")).or_default();
                p.guarantee += q.guarantee;
                p.ceiling += q.ceiling();
            }
            return out;
        }
        let whole = Part {
            guarantee: team.guarantee,
            ceiling: team.ceiling(),
        };
        let all = self.authorities();
        let one = match (classes, self.scheduler, all.as_slice()) {
            ([a], _, _) => Some(*a),
            ([], Some(d), _) => Some(d),
            ([], None, [a]) => Some(*a),
            _ => None,
        };
        if let Some(a) = one {
            out.insert(a, whole);
        }
        out
    }

    /// Usable GPUs owned by an authority (of `model`, when given).
    pub(crate) fn authority_gpus(&self, a: Authority, model: Option<&str>) -> u32 {
        (0..self.nodes.len())
            .filter(|&n| self.node_authority(n) == Some(a))
            .map(|n| {
                self.nodes[n]
                    .usable_gpus()
                    .filter(|g| model.is_none_or(|m| g.model.as_deref() == Some(m)))
                    .count() as u32
            })
            .sum()
    }
}

/// What a model name of the planner's view stands for: the user's model, the scheduler
/// owning the node, its driver, and whether it is spot capacity.
type ViewKey = (String, Option<Authority>, Option<Vec<u32>>, bool);

/// The view's tag of spot capacity: `MODEL@AUTHORITY~DRIVER%spot`.
pub const SPOT_TAG: &str = "%spot";

/// The planner's view of a cluster with authorities, CUDA requirements or spot capacity:
/// every GPU's model is renamed `MODEL@AUTHORITY~DRIVER%spot` after the scheduler that
/// owns its node, its driver and its capacity (each part when it matters), every class
/// accepts only the names of its own scheduler whose driver and architecture run its
/// CUDA, and spot names only when it may run on spot ([`Cluster::may_use_spot`]); a
/// gang stays on one side of spot unless it may straddle (the solvers split its
/// domains, see [`Cluster::gang_side`]). Quotas count the
/// renamed models (a scheduler's part counts every model of its scheduler, see
/// [`super::Quota::covers`]). Every solver, bound and check then keeps each class on the
/// nodes that can run it without knowing why; `Placement::restore_model_names` turns
/// the names back.
pub fn solver_view(c: &Cluster) -> Cluster {
    let mut v = c.clone();
    let cuda = c.workloads.iter().any(|w| w.cuda.is_some());
    let spot = c.has_spot();
    // Each node's key: its model, `@scheduler` when authorities are declared, `~driver`
    // when a class declares `cuda` and the node's driver is known.
    let key_of = |n: NodeIdx, m: &str| -> String {
        let mut k = m.to_string();
        if let Some(a) = c.node_authority(n) {
            k.push('@');
            k.push_str(a.as_str());
        }
        if cuda {
            if let Some(d) = c.node_driver(n) {
                k.push('~');
                k.push_str(&crate::catalog::cuda::driver_text(d));
            }
        }
        if spot && c.node_spot(n) {
            k.push_str(SPOT_TAG);
        }
        k
    };
    let mut keys: BTreeMap<String, ViewKey> = BTreeMap::new();
    for (n, node) in v.nodes.iter_mut().enumerate() {
        // A node's GPUs mostly share a model: its key is made once per run.
        let mut last: Option<(String, String)> = None;
        for g in &mut node.gpus {
            let Some(m) = g.model.take() else { continue };
            let k = match &last {
                Some((lm, lk)) if *lm == m => lk.clone(),
                _ => {
                    let k = key_of(n, &m);
                    keys.entry(k.clone()).or_insert_with(|| {
                        (
                            m.clone(),
                            c.node_authority(n),
                            c.node_driver(n).map(<[u32]>::to_vec),
                            c.node_spot(n),
                        )
                    });
                    last = Some((m, k.clone()));
                    k
                }
            };
            g.model = Some(k);
        }
    }
    v.models = keys
        .iter()
        .filter_map(|(k, (m, _, _, _))| {
            let mut gm = c.models.get(m)?.clone();
            gm.name = k.clone();
            Some((k.clone(), gm))
        })
        .collect();
    for (w, orig) in v.workloads.iter_mut().zip(&c.workloads) {
        let a = c.authority_of(orig);
        if c.authorities_declared() && a.is_none() {
            // Unresolved (validation reports it): the class accepts no model.
            w.models = vec![super::NO_MODEL.to_string()];
            continue;
        }
        w.scheduler = a;
        w.models = keys
            .iter()
            .filter(|(_, (m, owner, driver, on_spot))| {
                orig.accepts(m)
                    && (a.is_none() || *owner == a)
                    && c.cuda_fit(orig, m, driver.as_deref()).is_ok()
                    && (!on_spot || c.may_use_spot(orig))
            })
            .map(|(k, _)| k.clone())
            .collect();
        if w.models.is_empty() {
            w.models = vec![super::NO_MODEL.to_string()];
        }
    }
    for (t, orig) in v.teams.values_mut().zip(c.teams.values()) {
        for (q, oq) in t.quotas.iter_mut().zip(&orig.quotas) {
            if let Some(m) = &oq.model {
                let owner = oq
                    .scheduler
                    .or_else(|| match c.quota_authorities(oq).as_slice() {
                        [one] => Some(*one),
                        _ => None,
                    });
                if let Some(a) = owner {
                    q.model = Some(format!("{m}@{a}"));
                }
            }
        }
    }
    // The nodes are the same, their models renamed: the topology is renamed, not built.
    v.topology = std::mem::take(&mut v.topology).renamed(key_of);
    v.refresh_beside_topology();
    v
}

/// Why a class's CUDA runtime cannot run on a GPU model with a driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CudaMisfit {
    /// The driver is older than the CUDA release needs.
    Driver { need: [u32; 3] },
    /// The CUDA release predates the GPU's architecture.
    Architecture {
        architecture: &'static str,
        need: (u32, u32),
    },
    /// A later CUDA major dropped the GPU's architecture (CUDA 13 and Volta).
    Dropped {
        architecture: &'static str,
        last_major: u32,
    },
    /// A CUDA release gpuplan does not know.
    Unknown,
}

impl Cluster {
    /// Whether the model planner needs its view (authorities or CUDA requirements).
    pub fn needs_view(&self) -> bool {
        self.authorities_declared()
            || self.workloads.iter().any(|w| w.cuda.is_some())
            || self.has_spot()
    }

    /// The side of spot a gang of class `w` must keep to on node `n`: `Some(spot)` when
    /// the class may not straddle spot and other capacity, `None` when it may (or no
    /// node is spot). Nodes of one gang must all have the same side.
    pub fn gang_side(&self, w: &Workload, n: NodeIdx) -> Option<bool> {
        (!w.straddle && self.has_spot()).then(|| self.node_spot(n))
    }

    /// The NVIDIA driver on a node: its class's `gpus driver=`, else its GPU model's.
    pub fn node_driver(&self, n: NodeIdx) -> Option<&[u32]> {
        let node = &self.nodes[n];
        if let Some(d) = self
            .classes
            .get(&node.class)
            .and_then(|k| k.driver.as_deref())
        {
            return Some(d);
        }
        let m = node.gpus.iter().find_map(|g| g.model.as_deref())?;
        self.models.get(m).and_then(|gm| gm.driver.as_deref())
    }

    /// Whether class `w`'s CUDA runtime runs on GPUs of `model` under `driver` (an
    /// unknown driver is not held against it: it cannot be checked offline). A driver
    /// older than the release needs still runs it when the class ships the forward
    /// compatibility package (`compat=#true`), the GPU is a data center part and the
    /// driver's branch is one the package supports ([`Cluster::cuda_forward_compatible`]).
    pub(crate) fn cuda_fit(
        &self,
        w: &Workload,
        model: &str,
        driver: Option<&[u32]>,
    ) -> Result<(), CudaMisfit> {
        let Some((major, minor)) = w.cuda else {
            return Ok(());
        };
        let Some(need) = crate::catalog::cuda::min_driver(major, minor) else {
            return Err(CudaMisfit::Unknown);
        };
        let arch = self
            .models
            .get(model)
            .and_then(|m| m.catalog)
            .map(|s| s.architecture);
        if let Some(architecture) = arch {
            if let Some(min) = crate::catalog::cuda::min_cuda_for(architecture) {
                if (major, minor) < min {
                    return Err(CudaMisfit::Architecture {
                        architecture,
                        need: min,
                    });
                }
            }
            if let Some(last_major) = crate::catalog::cuda::last_cuda_major_for(architecture) {
                if major > last_major {
                    return Err(CudaMisfit::Dropped {
                        architecture,
                        last_major,
                    });
                }
            }
        }
        match driver {
            Some(d) if !crate::catalog::cuda::at_least(d, need) => {
                if w.cuda_compat && self.cuda_forward_compatible(w, model, d) {
                    Ok(())
                } else {
                    Err(CudaMisfit::Driver { need })
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether the forward compatibility package of class `w`'s CUDA release runs on GPUs
    /// of `model` under `driver`, whether or not the class declares it: a data center GPU
    /// (a catalog model, or a `gpu-model` with a catalog `base`) and a supported branch.
    pub(crate) fn cuda_forward_compatible(
        &self,
        w: &Workload,
        model: &str,
        driver: &[u32],
    ) -> bool {
        let Some((major, minor)) = w.cuda else {
            return false;
        };
        let datacenter = self
            .models
            .get(model)
            .and_then(|m| m.catalog)
            .is_some_and(|s| s.datacenter);
        crate::catalog::cuda::forward_compatible(major, minor, driver, datacenter)
    }
}

/// `MODEL@AUTHORITY~DRIVER%spot` -> `MODEL` (names from [`solver_view`]).
pub fn base_model(name: &str) -> &str {
    let name = name.strip_suffix(SPOT_TAG).unwrap_or(name);
    let name = name.split_once('~').map(|(m, _)| m).unwrap_or(name);
    match name.rsplit_once('@') {
        Some((b, o)) if Authority::parse(o).is_some() => b,
        _ => name,
    }
}

/// Text with the view's model names in the user's terms: `h100@slurm` -> `h100 (slurm
/// nodes)`.
pub fn restore_text(s: &str) -> String {
    // The spot tag first (it ends a name): "`h100%spot`" -> "`h100` (spot nodes)".
    let s = s
        .replace(&format!("{SPOT_TAG}`"), "` (spot nodes)")
        .replace(SPOT_TAG, " (spot nodes)");
    // `~DRIVER` suffixes next: `h100~550.54.15` -> `h100 (driver 550.54.15)`.
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(i) = rest.find('~') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        if end == 0 {
            out.push('~');
            rest = tail;
            continue;
        }
        let (drv, after) = tail.split_at(end);
        // Keep a closing backtick inside: "`h100~550.54.15`" -> "`h100` (driver ...)".
        if let Some(a) = after.strip_prefix('`') {
            out.push_str(&format!("` (driver {drv})"));
            rest = a;
        } else {
            out.push_str(&format!(" (driver {drv})"));
            rest = after;
        }
    }
    out.push_str(rest);
    for a in Authority::ALL {
        out = out
            .replace(&format!("@{a}`"), &format!("` (on {a} nodes)"))
            .replace(&format!("@{a}"), &format!(" (on {a} nodes)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_agree_with_the_scans() {
        let src = r#"
cluster "c" { scheduler "kueue"; }
node-class "k" { gpus 8 model="h100-sxm5-80gb"; }
nodes "n-[01-04]" class="k"
fabric { leaf "l" nodes="n-[01-04]"; }
pool "hpc" mode="training" nodes="n-[01-02]" scheduler="slurm"
team "t" guarantee=8
priority "p" value=1
training "a" team="t" priority="p" { gang gpus=16 gpus-per-node=8; }
training "b" team="t" priority="p" scheduler="slurm" { gang gpus=8; }
inference "c" team="t" priority="p" { gpus 1; }
"#;
        let c = crate::model::from_text(src);
        assert_eq!(c.pool_at, c.compute_pool_at());
        assert_eq!(c.owners, c.owners_of(&c.compute_pool_at()));
        let mut bare = c.clone();
        bare.owners.clear();
        bare.model_owners.clear();
        bare.class_owners.clear();
        assert_eq!(c.authorities(), bare.authorities());
        assert_eq!(c.authorities(), vec![Authority::Kueue, Authority::Slurm]);
        for w in &c.workloads {
            assert_eq!(c.class_authority(w), bare.class_authority(w), "{}", w.name);
            assert_eq!(c.candidate_authorities(w), bare.candidate_authorities(w));
        }
        assert_eq!(c.authority_of(&c.workloads[1]), Some(Authority::Slurm));
        assert_eq!(c.node_authority(0), Some(Authority::Slurm));
        assert_eq!(c.node_authority(3), Some(Authority::Kueue));
    }
}
