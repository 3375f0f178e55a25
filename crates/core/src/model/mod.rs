//! The resolved, typed cluster: GPU models, node classes, nodes and their GPUs, the
//! fabric, NVLink domains, teams, priorities, workloads, MIG policy and pools, plus the
//! topology tree as a petgraph graph. No I/O.
//!
//! Building is best-effort and silent: what cannot be resolved is left out or `None`,
//! and the validation rules (which see both the spec and the model) report it. That
//! way every problem is reported once, by the rule that owns it.

pub mod allocation;
pub mod authority;
mod build;
pub mod capacity;
pub mod cost;
pub mod ledger;
mod mig;
pub mod mixed;
pub mod moved;
mod pool_mode;
pub mod sharing;
pub mod sizing;
pub mod topology;

pub use allocation::Allocation;
pub use authority::{Authority, ClassAuthority};
pub use build::{build, canonical_model};
pub use cost::{Capacity, CapacityTerms, SpotFit, Storage, StorageScope};
pub use mig::{CurrentLayouts, current_mig_layouts};
pub use pool_mode::PoolMode;
pub use topology::{Tier, Topology};

use crate::catalog::{GpuSpec, MigSpec, NvlinkSpec};
use crate::source::Span;
/// Spec vocabulary the layers above the model use (they import it from here).
pub use crate::spec::{SwitchTier, WorkloadKind};
use crate::units::{Bandwidth, Bytes, Duration};
use serde::Serialize;
use std::collections::BTreeMap;

pub type NodeIdx = usize;
pub(crate) type SwitchIdx = usize;
pub(crate) type DomainIdx = usize;

/// The `models` of a class that accepts no GPU model: no model has this name (a training
/// class whose `memory` no model holds, or a class of the planner's view whose scheduler
/// owns none of its models).
pub(crate) const NO_MODEL: &str = "@";

/// Slurm release assumed when the KDL names none (Debian 12).
pub(crate) const DEFAULT_SLURM: &[u32] = &[22, 5];

#[derive(Clone, Debug, Serialize)]
pub struct Cluster {
    pub name: String,
    pub slurm_version: Vec<u32>,
    pub kubernetes_version: Option<Vec<u32>>,
    pub volcano_version: Option<Vec<u32>>,
    pub kueue_version: Option<Vec<u32>>,
    /// The declared KAI Scheduler release (`cluster { kai version=... }`).
    pub kai_version: Option<Vec<u32>>,
    /// The default scheduling authority (`cluster { scheduler ... }`).
    pub scheduler: Option<Authority>,
    /// How Kubernetes-managed nodes hand out GPUs by default (`cluster {
    /// gpu-allocation ... }`; see [`allocation`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_allocation: Option<Allocation>,
    pub models: BTreeMap<String, GpuModel>,
    pub classes: BTreeMap<String, NodeClass>,
    pub nodes: Vec<Node>,
    #[serde(skip)]
    pub node_index: BTreeMap<String, NodeIdx>,
    pub switches: Vec<Switch>,
    pub nvlink_domains: Vec<NvlinkDomain>,
    pub teams: BTreeMap<String, Team>,
    pub priorities: Vec<Priority>,
    pub workloads: Vec<Workload>,
    pub mig: MigPolicy,
    pub pools: Vec<Pool>,
    /// Where checkpoints are written (`storage`).
    pub storages: Vec<Storage>,
    /// `moved` renames, resolved ([`moved::resolve`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<moved::Move>,
    #[serde(skip)]
    pub topology: Topology,
    /// Per GPU model present on nodes: usable GPUs, and the most on one node.
    #[serde(skip)]
    pub model_stats: BTreeMap<String, ModelStats>,
    /// Whether any node is spot capacity (see [`Cluster::has_spot`]).
    #[serde(skip)]
    pub any_spot: bool,
    /// Per GPU model present on nodes: the distinct drivers of the nodes with a usable GPU
    /// of it (`None` for a node with none declared), in order; MIG right-sizing takes the
    /// usable memory that holds on all of them ([`sizing::usable_gib`]).
    #[serde(skip)]
    pub model_drivers: BTreeMap<String, Vec<Option<Vec<u32>>>>,
    /// The scheduler owning each node (by node index), computed once from the pools
    /// (see [`Cluster::node_authority`]).
    #[serde(skip)]
    pub owners: Vec<Option<Authority>>,
    /// The authorities in `owners`, sorted, once each (see [`Cluster::authorities`]).
    #[serde(skip)]
    pub owner_list: Vec<Authority>,
    /// The pool listing each node first (by node index), computed with `owners` (see
    /// [`Cluster::pool_of`]).
    #[serde(skip)]
    pub pool_at: Vec<Option<usize>>,
    /// Per GPU model, the authorities owning a node with a usable GPU of it.
    #[serde(skip)]
    pub model_owners: BTreeMap<String, std::collections::BTreeSet<Authority>>,
    /// Every class's authority, in workload order (see [`Cluster::class_authority`]).
    #[serde(skip)]
    pub class_owners: Vec<ClassAuthority>,
}

/// How much of one GPU model the cluster has (usable GPUs only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelStats {
    pub gpus: u32,
    pub max_per_node: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct GpuModel {
    pub name: String,
    #[serde(skip)]
    pub catalog: Option<&'static GpuSpec>,
    pub memory: Bytes,
    pub nvlink: Option<NvlinkSpec>,
    #[serde(skip)]
    pub mig: Option<&'static MigSpec>,
    pub mig_capable: bool,
    pub price_per_hour: Option<f64>,
    /// catalog profile name -> name the driver advertises
    pub driver_names: BTreeMap<String, String>,
    /// Driver branch on nodes with this model (`gpu-model ... driver=`), when declared.
    #[serde(skip)]
    pub driver_branch: Option<u32>,
    /// The full driver version (`gpu-model ... driver=`), when declared.
    #[serde(skip)]
    pub driver: Option<Vec<u32>>,
    pub short_name: String,
    pub product_name: Option<String>,
    #[serde(skip)]
    pub span: Option<Span>,
}

impl GpuModel {
    /// The name a MIG profile has on nodes with this model (driver renames applied).
    pub fn profile_name<'a>(&'a self, catalog_name: &'a str) -> &'a str {
        self.driver_names
            .get(catalog_name)
            .map(String::as_str)
            .unwrap_or(catalog_name)
    }

    /// The catalog profile for a name as written: the catalog name, or a driver name
    /// pinned with `mig-name`.
    pub fn mig_profile(&self, name: &str) -> Option<&'static crate::catalog::MigProfile> {
        let mig = self.mig?;
        mig.profile(name).or_else(|| {
            self.driver_names
                .iter()
                .find(|(_, d)| d.as_str() == name)
                .and_then(|(c, _)| mig.profile(c))
        })
    }

    /// Whether the declared driver (if any) has this catalog profile.
    pub fn driver_has(&self, profile: &str) -> bool {
        match (self.mig, self.driver_branch) {
            (Some(spec), Some(branch)) => {
                branch >= crate::catalog::profile_min_driver(spec, profile)
            }
            _ => true,
        }
    }

    /// Profile names as this model's driver advertises them.
    pub(crate) fn profile_names(&self) -> Vec<&str> {
        self.mig
            .map(|m| {
                m.profiles
                    .iter()
                    .map(|p| self.profile_name(p.name))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Numa {
    pub id: u32,
    pub gpus: Vec<u32>,
    pub nics: Vec<u32>,
    pub cores: Vec<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PcieSwitch {
    pub name: String,
    pub gpus: Vec<u32>,
    pub nics: Vec<u32>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct NodeClass {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    /// Whether the class declares `cpu` (packed classes are limited by it only then).
    #[serde(skip)]
    pub cpu_declared: bool,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub memory: Option<Bytes>,
    /// GPUs per node, of every model.
    pub gpu_count: u32,
    /// The model of the class's first `gpus` line: the class's model when it has one
    /// (see [`NodeClass::gpu_groups`] and [`NodeClass::model_of`] for mixed classes).
    pub gpu_model: Option<String>,
    /// The `gpus` lines in order, one per model: GPU indexes run across them.
    pub gpu_groups: Vec<GpuGroup>,
    /// Node-local NVLink domains (GPU index sets).
    pub nvlink_domains: Vec<Vec<u32>>,
    pub numa: Vec<Numa>,
    pub pcie_switches: Vec<PcieSwitch>,
    pub nics: u32,
    pub nic_speed: Option<Bandwidth>,
    pub nic_kind: Option<String>,
    /// RDMA device names in rail order (`nics names=`), empty when not declared.
    pub nic_names: Vec<String>,
    /// `nics socket-ifname=`: NCCL's bootstrap interface(s).
    pub socket_ifname: Option<String>,
    /// `nics gid-index=`: the RoCE GID index.
    pub gid_index: Option<u32>,
    /// Declared PCI bus ids (NCCL spelling) of the GPUs and NICs, in index order; empty
    /// when not declared (or not valid: GP041).
    pub gpu_bus_ids: Vec<String>,
    pub nic_bus_ids: Vec<String>,
    /// `gpus driver=`: the NVIDIA driver on the class's nodes.
    pub driver: Option<Vec<u32>>,
    /// `capacity=`, `price-per-hour=`, `interruptions=` of the class.
    pub capacity: CapacityTerms,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
}

/// One `gpus` line of a node class: `count` GPUs of `model` (canonical name; `None`
/// when it does not resolve), indexes `first..first + count`.
#[derive(Clone, Debug, Serialize)]
pub struct GpuGroup {
    pub model: Option<String>,
    pub first: u32,
    pub count: u32,
}

impl NodeClass {
    /// Whether the class carries GPUs of more than one `gpus` line (mixed models).
    pub fn is_mixed(&self) -> bool {
        self.gpu_groups.len() > 1
    }

    /// The model of GPU `index` (by the `gpus` line its index falls in).
    pub fn model_of(&self, index: u32) -> Option<&str> {
        self.gpu_groups
            .iter()
            .find(|g| index >= g.first && index - g.first < g.count)
            .and_then(|g| g.model.as_deref())
    }

    /// `8 a100-sxm4-80gb + 2 t4-16gb`: the class's GPUs for people.
    pub fn gpus_text(&self) -> String {
        if self.gpu_groups.is_empty() {
            return "0 -".into();
        }
        let parts: Vec<String> = self
            .gpu_groups
            .iter()
            .map(|g| format!("{} {}", g.count, g.model.as_deref().unwrap_or("-")))
            .collect();
        parts.join(" + ")
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Gpu {
    pub index: u32,
    pub model: Option<String>,
    /// NVLink domain (node-local or multi-node) this GPU belongs to.
    pub nvlink_domain: Option<DomainIdx>,
    pub numa: Option<u32>,
    pub pcie_switch: Option<String>,
    /// Rail (NIC index) on the same PCIe switch or NUMA node, when known.
    pub rail: Option<u32>,
    /// Out of service (`gpus-down`).
    pub down: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Node {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    pub class: String,
    pub gpus: Vec<Gpu>,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Leaf switches that list this node (exactly one when the fabric is valid).
    pub leaves: Vec<SwitchIdx>,
    /// Multi-node NVLink domains that list this node (at most one when valid).
    pub mnnvl: Vec<DomainIdx>,
    pub cordon: bool,
    /// How the node is bought (range, else class; on-demand by default).
    pub capacity: Capacity,
    /// Price of one GPU-hour on this node (range, else class), when declared.
    pub price_per_hour: Option<f64>,
    /// Spot interruptions per hour (range, else class), when declared.
    pub interruptions: Option<f64>,
}

impl Node {
    /// GPUs available for planning.
    pub fn usable_gpus(&self) -> impl Iterator<Item = &Gpu> {
        self.gpus.iter().filter(move |g| !g.down && !self.cordon)
    }

    pub fn leaf(&self) -> Option<SwitchIdx> {
        match self.leaves.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Switch {
    pub name: String,
    pub tier: SwitchTier,
    #[serde(skip)]
    pub span: Span,
    pub parent: Option<SwitchIdx>,
    pub children: Vec<SwitchIdx>,
    pub nodes: Vec<NodeIdx>,
    pub rails: Option<u32>,
    pub link_speed: Option<Bandwidth>,
}

#[derive(Clone, Debug, Serialize)]
pub struct NvlinkDomain {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    /// Multi-node (declared under `fabric`) or node-local (from the node class).
    pub multi_node: bool,
    pub members: Vec<(NodeIdx, u32)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Quota {
    pub model: Option<String>,
    pub pool: Option<String>,
    pub guarantee: u32,
    pub burst: Option<u32>,
    /// `scheduler=`: the authority this part of the quota belongs to.
    pub scheduler: Option<Authority>,
    #[serde(skip)]
    pub span: Span,
}

impl Quota {
    /// The quota's ceiling (burst, never below the guarantee).
    pub fn ceiling(&self) -> u32 {
        self.burst.unwrap_or(self.guarantee).max(self.guarantee)
    }

    /// Whether GPUs of `model` in declared pool `pool` count against this quota. A quota
    /// that names neither a model nor a pool nor a scheduler counts nothing (the team
    /// ceiling covers it). A scheduler's part (`scheduler=`) counts the GPUs of models
    /// named `MODEL@SCHEDULER`: the planner's view of an authority's nodes
    /// ([`crate::model::authority::solver_view`]).
    pub fn covers(&self, model: &str, pool: Option<&str>) -> bool {
        // The planner's view may also tag the driver and spot capacity:
        // `MODEL@SCHEDULER~DRIVER%spot`.
        let model = model.strip_suffix(authority::SPOT_TAG).unwrap_or(model);
        let model = model.split_once('~').map(|(m, _)| m).unwrap_or(model);
        let (base, owner) = match model.rsplit_once('@') {
            Some((b, o)) => (b, Authority::parse(o)),
            None => (model, None),
        };
        (self.model.is_some() || self.pool.is_some() || self.scheduler.is_some())
            && self
                .model
                .as_deref()
                .is_none_or(|m| m == base || m == model)
            && self.pool.as_deref().is_none_or(|p| Some(p) == pool)
            && self.scheduler.is_none_or(|s| Some(s) == owner)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Team {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    pub guarantee: u32,
    /// Burst ceiling; `None` = the guarantee is also the ceiling.
    pub burst: Option<u32>,
    pub parent: Option<String>,
    /// Declared fair-share weight (`weight=`), `None` when left out.
    pub weight: Option<u32>,
    pub quotas: Vec<Quota>,
}

impl Team {
    pub fn ceiling(&self) -> u32 {
        self.burst.unwrap_or(self.guarantee).max(self.guarantee)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Priority {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    pub value: i64,
    pub preempts: Vec<String>,
    pub never_preempts: bool,
    pub description: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    Mig,
    TimeSlice,
    Mps,
    WholeGpu,
}

impl Isolation {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "mig" => Isolation::Mig,
            "time-slice" => Isolation::TimeSlice,
            "mps" => Isolation::Mps,
            "whole-gpu" => Isolation::WholeGpu,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    pub team: String,
    pub priority: String,
    pub replicas: u32,
    /// `scheduler=`: the authority the class is pinned to.
    pub scheduler: Option<Authority>,
    /// `cuda "12.4"`: the CUDA runtime the class's image needs (major, minor).
    pub cuda: Option<(u32, u32)>,
    /// `cuda ... compat=#true`: the image ships NVIDIA's CUDA forward-compatibility
    /// package, so an older driver branch may run it ([`crate::catalog::cuda::forward_compatible`]).
    pub cuda_compat: bool,
    /// Acceptable models (canonical names); empty = any. A training class with `memory`
    /// keeps only the models that hold a rank ([`sizing::holds_rank`]), [`NO_MODEL`] when
    /// none does.
    pub models: Vec<String>,
    pub gang_gpus: u32,
    pub gpus_per_node: Option<u32>,
    pub required_tier: Option<Tier>,
    pub preferred_tier: Option<Tier>,
    pub checkpoint: Option<Duration>,
    /// The `checkpoint` node, for diagnostics.
    #[serde(skip)]
    pub checkpoint_span: Option<Span>,
    /// `checkpoint size=`: what one checkpoint of one gang writes.
    pub checkpoint_size: Option<Bytes>,
    /// `checkpoint restart=` (see [`Workload::restart_time`]).
    pub restart: Option<Duration>,
    /// `checkpoint max-idle=` (see [`Workload::max_checkpoint_idle`]).
    pub max_idle: Option<f64>,
    pub preemptible: bool,
    /// `spot #true|#false`, when written.
    pub spot: Option<bool>,
    /// `spot straddle=#true`: a gang may mix spot and other nodes.
    pub straddle: bool,
    pub memory: Option<Bytes>,
    pub isolation: Option<Isolation>,
    pub profile: Option<String>,
    pub gpus_per_replica: u32,
    pub min_compute: Option<u32>,
    pub share: Option<Isolation>,
    pub per_gpu: Option<u32>,
    /// CPU per replica in millicores (`requests cpu=`), 0 when not given.
    pub cpu_milli: u64,
    /// Host memory per replica (`requests memory=`), 0 when not given.
    pub host_memory: Bytes,
    /// Share of one GPU per replica in 1/1000 (`fraction`), when given.
    pub gpu_milli: Option<u32>,
}

impl Workload {
    /// Whether a GPU model is acceptable to this workload.
    pub fn accepts(&self, model: &str) -> bool {
        self.models.is_empty() || self.models.iter().any(|m| m == model)
    }

    /// Whether the class accepts no GPU model at all ([`NO_MODEL`]).
    pub(crate) fn accepts_none(&self) -> bool {
        matches!(self.models.as_slice(), [only] if only == NO_MODEL)
    }

    /// Packed on nodes by CPU, host memory and GPU share (`requests` or `fraction`, or
    /// whole-GPU inference with `gpus 0`): placed per node and GPU, not in pools.
    pub fn packed(&self) -> bool {
        self.kind == WorkloadKind::Inference
            && (self.cpu_milli > 0
                || self.host_memory.0 > 0
                || self.gpu_milli.is_some()
                || self.gpus_per_replica == 0)
    }

    /// GPU share of one packed replica in 1/1000 GPU (1000 per whole GPU).
    pub fn packed_gpu_milli(&self) -> u64 {
        match self.gpu_milli {
            Some(m) => m as u64,
            None => self.gpus_per_replica as u64 * 1000,
        }
    }

    /// Share (1/1000) one packed replica takes of each GPU it lists: all of it for a
    /// whole-GPU replica, its fraction otherwise.
    pub fn packed_milli_per_gpu(&self) -> u64 {
        self.packed_gpu_milli().min(1000)
    }

    /// GPUs per node a gang takes on a node with `node_gpus` GPUs.
    pub(crate) fn effective_gpus_per_node(&self, node_gpus: u32) -> u32 {
        self.gpus_per_node
            .unwrap_or_else(|| even_share(self.gang_gpus, node_gpus))
    }
}

/// The GPUs per node of a gang of `gang` GPUs without `gpus-per-node`: the most that
/// divides the gang and fits a node of `node_gpus` (every pod of a gang gets the same
/// GPUs: one Job template, one `--gres`, `torchrun --nproc-per-node`).
pub(crate) fn even_share(gang: u32, node_gpus: u32) -> u32 {
    let gang = gang.max(1);
    let most = gang.min(node_gpus.max(1));
    (1..=most).rev().find(|k| gang % k == 0).unwrap_or(1)
}

#[derive(Clone, Debug, Serialize)]
pub struct MigLayout {
    #[serde(skip)]
    pub span: Span,
    pub nodes: Vec<NodeIdx>,
    /// GPU indexes; empty = all GPUs of each node.
    pub gpus: Vec<u32>,
    pub profiles: Vec<String>,
    #[serde(skip)]
    pub profile_spans: Vec<Span>,
    /// `current=#true`: what the GPUs have now (kept when it serves the plan), not a
    /// fixed layout the planner must use.
    pub current: bool,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MigPolicy {
    /// Allowed profiles; empty = every profile of the model.
    pub allow: Vec<String>,
    pub layouts: Vec<MigLayout>,
    pub headroom: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Pool {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    pub mode: String,
    pub nodes: Vec<NodeIdx>,
    /// Nodes of the pool a rollout may disrupt at once (`max-disrupted`; default 1).
    pub max_disrupted: Option<u32>,
    /// `scheduler=`: the authority that owns the pool's nodes.
    pub scheduler: Option<Authority>,
    /// `gpu-allocation=`: device plugin or DRA on the pool's Kubernetes nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_allocation: Option<Allocation>,
}

impl Cluster {
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.node_index.get(name).map(|&i| &self.nodes[i])
    }

    pub fn priority(&self, name: &str) -> Option<&Priority> {
        self.priorities.iter().find(|p| p.name == name)
    }

    pub fn model_of(&self, gpu: &Gpu) -> Option<&GpuModel> {
        gpu.model.as_ref().and_then(|m| self.models.get(m))
    }

    /// The model name of GPU `gi` of node `ni`, when both exist and it has one.
    pub fn gpu_model_name(&self, ni: NodeIdx, gi: u32) -> Option<&str> {
        self.nodes
            .get(ni)
            .and_then(|n| n.gpus.iter().find(|g| g.index == gi))
            .and_then(|g| g.model.as_deref())
    }

    /// CPU of a node in millicores (sockets x cores x threads), when its class says.
    pub fn node_cpu_milli(&self, n: NodeIdx) -> Option<u64> {
        let k = self.classes.get(&self.nodes[n].class)?;
        if !k.cpu_declared {
            return None;
        }
        let threads =
            k.sockets as u64 * k.cores_per_socket as u64 * k.threads_per_core.max(1) as u64;
        (threads > 0).then_some(threads * 1000)
    }

    /// GPUs per node of a training class's gang: its `gpus-per-node`, or else the gang
    /// size capped by the largest usable GPU count of a node whose model it accepts (and
    /// whose GPU memory holds its footprint). One number for the whole class, as its
    /// pods are one template: every node of a gang holds this many GPUs but one, which
    /// may hold fewer when the size is not a multiple.
    pub fn gang_per_node(&self, w: &Workload) -> u32 {
        if let Some(p) = w.gpus_per_node {
            return p.max(1);
        }
        let largest = self
            .nodes
            .iter()
            .filter_map(|n| {
                // Per model: a node with GPUs of several models gives a gang member
                // GPUs of one.
                let mut per: BTreeMap<&str, u32> = BTreeMap::new();
                for m in n.usable_gpus().filter_map(|g| g.model.as_deref()) {
                    *per.entry(m).or_default() += 1;
                }
                per.into_iter()
                    .filter(|(m, _)| {
                        w.accepts(m)
                            && self
                                .models
                                .get(*m)
                                .is_some_and(|gm| sizing::holds_rank(w, gm))
                    })
                    .map(|(_, k)| k)
                    .max()
            })
            .max()
            .unwrap_or(1);
        even_share(w.gang_gpus, largest)
    }

    /// Host memory of a node in bytes, when its class says.
    pub fn node_memory(&self, n: NodeIdx) -> Option<u64> {
        self.classes.get(&self.nodes[n].class)?.memory.map(|m| m.0)
    }

    /// Whether one replica of a packed workload fits an empty node: an acceptable GPU
    /// model (unless CPU-only), enough usable GPUs, CPU and host memory. Unknown CPU or
    /// memory (not declared on the node class) does not limit.
    pub fn packed_fits_node(&self, w: &Workload, n: NodeIdx) -> bool {
        let node = &self.nodes[n];
        let milli = w.packed_gpu_milli();
        if milli > 0 {
            let usable: Vec<&Gpu> = node
                .usable_gpus()
                .filter(|g| g.model.as_deref().is_some_and(|m| w.accepts(m)))
                .collect();
            if (usable.len() as u64) < milli.div_ceil(1000) {
                return false;
            }
        } else if node.cordon {
            return false;
        }
        self.node_cpu_milli(n).is_none_or(|c| c >= w.cpu_milli)
            && self.node_memory(n).is_none_or(|m| m >= w.host_memory.0)
    }

    /// Total GPUs available for planning.
    pub fn usable_gpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.usable_gpus().count()).sum()
    }

    /// A team and its ancestors (nearest first), following `parent`; stops at a missing
    /// parent or a cycle.
    pub fn team_chain(&self, team: &str) -> Vec<&Team> {
        let mut out: Vec<&Team> = Vec::new();
        let mut next = self.teams.get(team);
        while let Some(t) = next {
            if out.iter().any(|o| o.name == t.name) {
                break;
            }
            out.push(t);
            next = t.parent.as_deref().and_then(|p| self.teams.get(p));
        }
        out
    }

    /// The declared pool a node belongs to (first declaration wins).
    pub fn pool_of(&self, node: NodeIdx) -> Option<&Pool> {
        match self.pool_at.get(node) {
            Some(p) if self.pool_at.len() == self.nodes.len() => p.and_then(|i| self.pools.get(i)),
            _ => self.pools.iter().find(|p| p.nodes.contains(&node)),
        }
    }

    /// Resolves a GPU model name as written (catalog alias or declared name).
    pub(crate) fn resolve_model(&self, name: &str) -> Option<&GpuModel> {
        if let Some(m) = self.models.get(name) {
            return Some(m);
        }
        let spec = crate::catalog::lookup(name)?;
        self.models.get(spec.id)
    }
}

/// The cluster of one KDL text (for the model's tests).
#[cfg(test)]
pub(crate) fn from_text(src: &str) -> Cluster {
    let mut sources = crate::source::SourceMap::new();
    sources.add("t.kdl", src);
    let mut diags = crate::diag::Diagnostics::new();
    build(&crate::spec::parse_all(&sources, &mut diags))
}
