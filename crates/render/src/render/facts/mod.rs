//! [`Facts`]: the plan and the cluster turned into the vocabulary every target shares,
//! computed once so that the targets cannot disagree: pool names and members, the label
//! keys and values of every node, fabric tiers, quotas, priority order, MIG and sharing
//! configurations per node, and the per-class facts the example manifests need.
//!
//! Decisions that every target inherits (see `docs/render.md`):
//! - a node's pool is its declared `pool`, or its mode (`whole-gpu`, `mig`, ...) when it
//!   has none;
//! - node labels `gpuplan.io/{pool,gpu-model,leaf,spine,core,nvlink-domain}` and one taint
//!   `gpuplan.io/pool=<pool>:NoSchedule` per GPU node, on top of the KDL's own;
//! - resources: whole GPUs `nvidia.com/gpu`, MIG `nvidia.com/mig-<profile>` (`+` -> `.`,
//!   device plugin `mixed` strategy), shared GPUs `nvidia.com/gpu.shared` (device plugin
//!   `renameByDefault`, so that slices never count against whole-GPU quotas);
//! - a team's ceiling caps whole GPUs, its guarantee is what it is entitled to; MIG and
//!   shared quotas are the instances and replicas the plan gives the team's classes.
//!
//! The work is split by subject: `nodes` (node labels, taints, MIG and device-plugin
//! configurations, pools), `classes` (per-class facts) and `teams` (teams, priorities
//! and the names a target must accept).

mod classes;
pub mod dra;
mod groups;
mod nodes;
mod sharing;
mod teams;

pub use nodes::Layout;

use super::Options;
use crate::diag::Diagnostic;
use crate::model::{Authority, SwitchTier};
use crate::model::{Cluster, PoolMode, Taint, Workload};
use crate::placement::Placement;
use crate::units::compress_names;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::names::{
    CAPACITY_LABEL, LABEL_PREFIX, MIG_CONFIG_LABEL, MODEL_LABEL, PLUGIN_CONFIG_LABEL, POOL_LABEL,
    SCHEDULER_LABEL,
};
pub(crate) const GPU_RESOURCE: &str = "nvidia.com/gpu";
pub(crate) const SHARED_RESOURCE: &str = "nvidia.com/gpu.shared";

/// One fabric tier that exists in this cluster (innermost first).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TierFacts {
    /// `nvlink`, `leaf`, `spine`, `core`.
    pub name: String,
    /// The node label that carries a node's domain of this tier.
    pub label: String,
    /// Volcano HyperNode tier number (1 = innermost).
    pub number: u32,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct NodeFacts {
    pub name: String,
    /// The scheduler that owns the node (`None`: no authority declared).
    pub authority: Option<Authority>,
    pub class: String,
    pub pool: String,
    pub mode: PoolMode,
    pub model: Option<String>,
    pub model_short: Option<String>,
    /// Each usable GPU's model and its short name (the Slurm GRES type): a node whose
    /// class has several `gpus` lines has several.
    pub gpu_models: BTreeMap<u32, (String, String)>,
    /// Usable GPU indexes (`gpus-down` and cordoned nodes excluded).
    pub gpus: Vec<u32>,
    /// Domain per tier name (`leaf` -> switch name ...), for the tiers the node has.
    pub domains: BTreeMap<String, String>,
    /// Every label gpuplan sets on the node (KDL labels included), sorted.
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub mig_config: Option<String>,
    pub plugin_config: String,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub memory_mib: Option<u64>,
    /// MIG GPUs: index -> profiles (largest first, driver names).
    pub mig: Layout,
    /// How Slurm shares the node's GPUs when the plan puts shared or fractional
    /// replicas on it: `shard` or `mps` (1000 per GPU; see `render::slurm`).
    pub slurm_sharing: Option<&'static str>,
    /// It hands out GPUs through DRA (no device plugin runs on it).
    pub dra: bool,
}

impl NodeFacts {
    /// Whether the device plugin shares the node's GPUs (time-slicing or MPS replicas).
    pub(crate) fn shares_gpus(&self) -> bool {
        self.plugin_config.starts_with("time-slicing-") || self.plugin_config.starts_with("mps-")
    }
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct PoolFacts {
    pub name: String,
    pub mode: PoolMode,
    pub nodes: Vec<String>,
    /// `nodes` compressed into hostlist ranges, comma-joined.
    pub range: String,
    pub models: Vec<String>,
    /// Capacity labels of its nodes (`spot`, `on-demand`, ...; none undeclared).
    pub capacities: Vec<String>,
    /// Highest priority rank of the classes placed in the pool (0 = none).
    pub rank: u32,
    pub preemptible: bool,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct TeamFacts {
    pub name: String,
    pub guarantee: u32,
    pub ceiling: u32,
    pub parent: Option<String>,
    /// The declared fair-share weight (`team ... weight=`), `None` when left out: each
    /// target then weighs the team by its guarantee.
    pub weight: Option<u32>,
    /// Highest priority rank among the team's classes (0 = none).
    pub rank: u32,
    /// Priorities the team's classes use, highest first.
    pub priorities: Vec<String>,
    /// MIG resource name -> instances planned for the team's classes.
    pub mig: BTreeMap<String, u32>,
    /// Shared-GPU replicas planned for the team's classes.
    pub shared: u32,
    /// DRA: devices per DeviceClass the team's Kubernetes-managed classes may claim at
    /// once (whole GPUs: the ceiling plus its shared GPUs; MIG: its planned instances).
    pub dra: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct PriorityFacts {
    pub name: String,
    pub value: i64,
    /// 1 = lowest.
    pub rank: u32,
    pub never: bool,
    /// Priorities this one may preempt (explicit list, or every lower one).
    pub preempts: Vec<String>,
    pub description: String,
}

/// What each pod of a placement group asks of its node's GPUs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum Ask {
    /// Whole GPUs (`nvidia.com/gpu`; Slurm `gpu:<model>:<n>`).
    Whole { gpus: u32 },
    /// One MIG instance (`nvidia.com/mig-<profile>`; Slurm `gpu:<profile>:1`).
    Mig { profile: String },
    /// One replica of a GPU the device plugin shares (`nvidia.com/gpu.shared`); in
    /// Slurm `thousandths` of one GPU as `gres/shard` (or `gres/mps` with `mps`).
    Shared { thousandths: u32, mps: bool },
    /// No GPU (a CPU-only replica).
    Cpu,
}

impl Ask {
    /// The Kubernetes resource a pod asks for (none for a CPU-only replica).
    pub(crate) fn resource(&self) -> Option<String> {
        match self {
            Ask::Whole { .. } => Some(GPU_RESOURCE.to_string()),
            Ask::Mig { profile } => Some(mig_resource(profile)),
            Ask::Shared { .. } => Some(SHARED_RESOURCE.to_string()),
            Ask::Cpu => None,
        }
    }

    /// How many of [`Ask::resource`] a pod asks for.
    pub(crate) fn amount(&self) -> u32 {
        match self {
            Ask::Whole { gpus } => *gpus,
            Ask::Mig { .. } | Ask::Shared { .. } => 1,
            Ask::Cpu => 0,
        }
    }
}

/// The fabric domain a group's gangs are pinned to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Pin {
    /// `nvlink`, `leaf`, `spine`, `core`.
    pub tier: String,
    /// The node label carrying it.
    pub label: String,
    pub value: String,
}

/// One placement group of a class: what one rendered object carries.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct GroupFacts {
    /// The object's name (a DNS label; the class's name when it has one group).
    pub name: String,
    /// Pools and GPU models of its nodes.
    pub pools: Vec<String>,
    pub models: Vec<String>,
    pub model_shorts: Vec<String>,
    pub ask: Ask,
    /// The Kubernetes resource each pod asks for, and how many (`per_pod`).
    pub resource: Option<String>,
    pub per_pod: u32,
    /// Pods of one gang (1 for replicas).
    pub pods: u32,
    /// Gangs (training, whole-GPU inference) or replicas the group carries.
    pub count: u32,
    /// The domain its gangs must stay in (multi-pod gangs with a required tier).
    pub pin: Option<Pin>,
    /// Packed classes: the nodes the plan packed the replicas on (selected by name).
    pub hosts: Vec<String>,
    /// Shared and fractional replicas: the device-plugin configurations of its nodes
    /// (selected by the node label, so a replica never lands on a node shared more
    /// finely than the plan gives it).
    pub plugin_configs: Vec<String>,
    /// Every node the group's units are on, sorted.
    pub nodes: Vec<String>,
    /// Taints the pods must tolerate (its nodes' taints and its scheduler's).
    pub tolerations: Vec<Taint>,
    /// Whether the Kubernetes targets carry the group (false only without declared
    /// authorities, for fractions the device plugin cannot share as planned: left out
    /// of k8s/, kueue/ and volcano/ with warning GP919).
    pub k8s_carried: bool,
    /// NCCL variables for a training group's pods (from the node classes it landed
    /// on, see `render::fabric`); empty for other classes.
    pub nccl: Vec<(String, String)>,
    /// Whether the pods mount the node's NCCL files (`NCCL_TOPO_FILE` is set).
    pub nccl_mount: bool,
    /// On DRA nodes: what its pods claim instead of an extended resource.
    pub dra: Option<dra::DraGroup>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ClassFacts {
    pub name: String,
    /// The scheduler the class runs under (`None`: no authority declared).
    pub scheduler: Option<Authority>,
    pub kind: String,
    pub team: String,
    pub priority: String,
    pub replicas: u32,
    pub replicas_placed: u32,
    pub gang_gpus: u32,
    pub preemptible: bool,
    /// The class may run on spot nodes ([`crate::model::Cluster::may_use_spot`]).
    pub spot: bool,
    /// Its gangs may mix spot and other nodes (`spot straddle=#true`).
    pub straddle: bool,
    /// Required / preferred tier (`nvlink`, `node`, `leaf`, ...).
    pub required: Option<String>,
    pub preferred: Option<String>,
    /// Declared requests of one replica: CPU in millicores and host memory in bytes
    /// (0: not declared).
    pub cpu_milli: u64,
    pub memory: u64,
    /// GPU memory one replica (training: one GPU) needs, when declared.
    pub gpu_memory: Option<u64>,
    /// Its placement groups, in a fixed order.
    pub groups: Vec<GroupFacts>,
}

#[derive(Clone)]
pub(crate) struct Facts<'a> {
    pub c: &'a Cluster,
    /// The schedulers this target's files serve (empty: every node, no authority).
    pub serves: Vec<Authority>,
    pub plan: &'a Placement,
    pub slurm_version: Vec<u32>,
    /// Shared between a target's scoped facts (cloning the list clones pointers).
    pub nodes: Vec<Arc<NodeFacts>>,
    pub pools: Vec<PoolFacts>,
    pub tiers: Vec<TierFacts>,
    pub teams: Vec<TeamFacts>,
    pub priorities: Vec<PriorityFacts>,
    pub classes: Vec<ClassFacts>,
    /// MIG configurations: name -> per-GPU layouts (gpu index -> profiles) of one node.
    pub mig_configs: BTreeMap<String, Layout>,
    /// Device-plugin configurations: name -> (sharing strategy, replicas).
    pub plugin_configs: BTreeMap<String, (String, u32)>,
    /// Fractional replicas the Kubernetes targets cannot carry: class -> nodes.
    pub uncarried: BTreeMap<String, Vec<String>>,
    /// The DeviceClasses the DRA groups claim from.
    pub device_classes: Vec<dra::DeviceClassFacts>,
    /// Node name -> index into `nodes`.
    node_at: BTreeMap<String, usize>,
}

/// The cluster's workload classes by name.
type Workloads<'a> = BTreeMap<&'a str, &'a Workload>;

/// `nvidia.com/mig-<profile>` with `+` written as `.` (device plugin naming).
pub(crate) fn mig_resource(profile: &str) -> String {
    format!("nvidia.com/mig-{}", profile.replace('+', "."))
}

pub use crate::names::{is_dns_label, is_label_value};

/// Hostlist ranges of names, comma-joined (`dgx-[001-016,018-032]`).
pub(crate) fn range(names: &[String]) -> String {
    compress_names(names).join(",")
}

/// The node label of a fabric tier: `gpuplan.io/<tier>`, `gpuplan.io/nvlink-domain`.
fn tier_label(tier: &str) -> String {
    if tier == "nvlink" {
        format!("{LABEL_PREFIX}/nvlink-domain")
    } else {
        format!("{LABEL_PREFIX}/{tier}")
    }
}

fn switch_tier_name(t: SwitchTier) -> &'static str {
    match t {
        SwitchTier::Leaf => "leaf",
        SwitchTier::Spine => "spine",
        SwitchTier::Core => "core",
    }
}

impl<'a> Facts<'a> {
    /// The node label of the innermost level at or above `tier` among a family's fabric
    /// tiers (`family`: tier names), the hostname counting as the `node` tier (just above
    /// `nvlink`: a node outside any multi-node NVLink domain is its own NVLink domain, as
    /// the planner has it). The level a KAI or Kueue topology constraint names.
    pub(crate) fn level_label(&self, family: &[String], tier: &str) -> Option<String> {
        use crate::model::Tier;
        let want = Tier::parse(tier)?;
        let mut levels: Vec<(Tier, String)> = self
            .tiers
            .iter()
            .filter(|t| family.contains(&t.name))
            .filter_map(|t| Some((Tier::parse(&t.name)?, t.label.clone())))
            .collect();
        levels.push((Tier::Node, "kubernetes.io/hostname".to_string()));
        levels
            .into_iter()
            .filter(|(t, _)| *t >= want)
            .min_by_key(|(t, _)| *t)
            .map(|(_, l)| l)
    }

    /// Computes every fact of the plan. What a target cannot express (GP910) comes back
    /// all together: node label values first (in the KDL's node order), then team
    /// names, then priorities.
    pub(crate) fn build(
        c: &'a Cluster,
        plan: &'a Placement,
        opts: &Options,
    ) -> Result<Self, Vec<Diagnostic>> {
        let tiers = tiers_of(c);
        let workload: Workloads = c.workloads.iter().map(|w| (w.name.as_str(), w)).collect();
        let nodes::Built {
            nodes,
            mig_configs,
            plugin_configs,
            mut errors,
        } = nodes::build(c, plan, &workload);
        let nodes: Vec<Arc<NodeFacts>> = nodes.into_iter().map(Arc::new).collect();
        let priorities = teams::priorities_of(c);
        let rank_of = |p: &str| teams::rank_of(&priorities, p);
        let uncarried = sharing::uncarried_fractions(c, plan, &nodes, &workload);
        let classes = classes::classes_of(c, plan, &nodes, &tiers, &workload, &uncarried);
        let pools = nodes::pools_of(&nodes, &classes, &rank_of);
        let mut teams = teams::teams_of(c, plan, &priorities, &rank_of);
        teams::dra_quotas(&mut teams, &classes, None);
        let device_classes = dra::device_classes(c, &classes);
        errors.extend(teams::name_errors(c, &teams, &priorities));
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Facts {
            c,
            serves: Vec::new(),
            plan,
            slurm_version: opts
                .slurm_version
                .clone()
                .unwrap_or_else(|| c.slurm_version.clone()),
            nodes,
            pools,
            tiers,
            teams,
            priorities,
            classes,
            mig_configs,
            plugin_configs,
            uncarried,
            device_classes,
            node_at: BTreeMap::new(),
        }
        .indexed())
    }

    /// With `node_at` computed for the current `nodes`.
    fn indexed(mut self) -> Self {
        self.node_at = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        self
    }

    /// The facts of the named nodes this target has (in the given order).
    pub(crate) fn nodes_named<'s>(
        &'s self,
        names: &'s [String],
    ) -> impl Iterator<Item = &'s NodeFacts> {
        names
            .iter()
            .filter_map(|n| self.node_at.get(n).map(|&i| &*self.nodes[i]))
    }

    pub(crate) fn tier(&self, name: &str) -> Option<&TierFacts> {
        self.tiers.iter().find(|t| t.name == name)
    }

    /// The header comment every file starts with (naming the schedulers it serves).
    pub(crate) fn header(&self) -> String {
        let serves = if self.serves.is_empty() {
            String::new()
        } else {
            let owners = self.c.authorities();
            let names: Vec<&str> = self
                .serves
                .iter()
                .filter(|a| owners.contains(a))
                .map(|a| a.as_str())
                .collect();
            if self.serves.len() == Authority::ALL.len() {
                format!(" for every scheduler's nodes ({})", names.join(", "))
            } else {
                format!(
                    " for scheduler {} (its nodes and classes only)",
                    names.join(", ")
                )
            }
        };
        format!(
            "generated by gpuplan {} from cluster `{}`{serves}; do not edit, re-render instead",
            env!("CARGO_PKG_VERSION"),
            self.c.name
        )
    }

    /// The facts one target renders, when authorities are declared: only the nodes its
    /// schedulers own, the classes they run and each team's part of its quota under
    /// them. Slurm, Volcano and Kueue serve their own nodes; Kubernetes objects cover
    /// every Kubernetes-managed node (plain `kubernetes`, `kueue`, `volcano`), their
    /// example workloads only plain-`kubernetes` classes, their ResourceQuotas the sum
    /// of the Kubernetes-managed parts (the API server counts every pod of a
    /// namespace, whatever its scheduler). The MIG and fabric targets work below
    /// scheduling: every node, with a header that says so. `None`: no authority is
    /// declared, render everything.
    pub(crate) fn scoped(&self, target: super::Target) -> Option<Facts<'a>> {
        use super::Target;
        if !self.c.authorities_declared() {
            // KAI only where declared: its sharing (a reservation pod on a GPU the
            // device plugin advertises whole) contradicts the device-plugin sharing the
            // other Kubernetes targets render for the same nodes.
            return (target == Target::Kai).then(|| {
                let mut f = self.clone();
                f.nodes.clear();
                f.classes.clear();
                f.pools.clear();
                f.teams.clear();
                f.serves = vec![Authority::Kai];
                f.indexed()
            });
        }
        if matches!(target, Target::Mig | Target::Fabric) {
            // Below scheduling: every node, whatever its scheduler; the header says so.
            let mut f = self.clone();
            f.serves = Authority::ALL.to_vec();
            return Some(f);
        }
        let serves: Vec<Authority> = match target {
            Target::Slurm => vec![Authority::Slurm],
            Target::Volcano => vec![Authority::Volcano],
            Target::Kueue => vec![Authority::Kueue],
            Target::Kai => vec![Authority::Kai],
            _ => vec![
                Authority::Kubernetes,
                Authority::Kueue,
                Authority::Volcano,
                Authority::Kai,
            ],
        };
        let runs: &[Authority] = if target == Target::K8s {
            &[Authority::Kubernetes]
        } else {
            &serves
        };
        let mut f = self.clone();
        f.nodes
            .retain(|n| n.authority.is_some_and(|a| serves.contains(&a)));
        f.classes
            .retain(|c| c.scheduler.is_some_and(|a| runs.contains(&a)));
        let rank_of = |p: &str| teams::rank_of(&self.priorities, p);
        f.pools = nodes::pools_of(&f.nodes, &f.classes, &rank_of);
        f.teams = teams::scoped(self.c, self.plan, &self.teams, &serves);
        teams::dra_quotas(&mut f.teams, &self.classes, Some(&serves));
        f.serves = serves;
        Some(f.indexed())
    }
}

/// The fabric tiers the cluster has, innermost first: `nvlink` when a multi-node NVLink
/// domain exists, then every switch tier that has a switch.
fn tiers_of(c: &Cluster) -> Vec<TierFacts> {
    let mut names = Vec::new();
    if c.nvlink_domains.iter().any(|d| d.multi_node) {
        names.push("nvlink");
    }
    for t in [SwitchTier::Leaf, SwitchTier::Spine, SwitchTier::Core] {
        if c.switches.iter().any(|s| s.tier == t) {
            names.push(switch_tier_name(t));
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(i, n)| TierFacts {
            name: n.to_string(),
            label: tier_label(n),
            number: i as u32 + 1,
        })
        .collect()
}

/// The taint on spot nodes: `gpuplan.io/capacity=spot:NoSchedule`.
pub(crate) fn spot_taint() -> crate::model::Taint {
    crate::model::Taint {
        key: CAPACITY_LABEL.into(),
        value: Some("spot".into()),
        effect: "NoSchedule".into(),
    }
}
