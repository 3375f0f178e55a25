//! The result of planning: a [`Placement`] value.
//!
//! Which nodes form which pool, where every gang lands (nodes and GPU indexes), the MIG
//! layout of every MIG GPU and which replicas use which instances, the time-slice/MPS
//! shares, what was admitted and what was not (with reasons in the user's terms), team
//! usage, headroom per tier and the solver's summary. Produced by either solver
//! (`solve::ilp`, `solve::greedy`), verified by the independent [`mod@check`] module and
//! rendered by `views`. Everything is ordered (names, indexes) so that the same input
//! gives byte-identical JSON.

mod accounting;
mod authority;
mod build;
pub mod check;
pub mod economics;
pub use accounting::round4;
mod explain;
mod mixed;
pub mod moved;
pub mod previous;
pub mod view;

pub use build::build;
pub use build::solver_summary;
pub use check::{Invariant, Violation, check};

use serde::{Deserialize, Serialize};

/// Version of the JSON form of a placement (`gpuplan plan --format json`).
pub const FORMAT_VERSION: &str = "1";

pub use crate::model::PoolMode;
pub use crate::solve::SolveStatus;

/// What the solver reports, and what it can prove, about the placement the user gets.
///
/// `objective` is the GPU-equivalents the placement admits. `bound` is a valid upper
/// bound on what any placement can admit, level by level (each priority level's bound
/// holds given what the levels above admit here), and `gap` compares the two; both are
/// `null` for the greedy baseline, which proves nothing. `status` is `optimal` only when
/// every level admits its bound and the compaction stage closed its gap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolverSummary {
    /// `ilp` or `greedy`.
    pub name: String,
    /// `optimal`, `feasible` (a bound not reached: time limit, or columns not enough),
    /// `fallback` (the ILP failed or its placement failed the checker; the greedy
    /// answer is used, see `note`) or `heuristic` (greedy).
    pub status: SolveStatus,
    /// Why a fallback happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// GPU-equivalents admitted by the placement, all levels.
    pub objective: f64,
    /// Sum of the levels' bounds (`null`: no bound).
    pub bound: Option<f64>,
    /// `(bound - objective) / bound` (`null`: no bound).
    pub gap: Option<f64>,
    /// Per priority level, highest first: admitted vs bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelSummary>,
    /// The last stage (topology spread, MIG/shared GPUs, price, moves kept): its
    /// objective, a bound on it given the admission, and their gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<StageSummary>,
    pub seconds: f64,
    /// Stages solved (one per priority level, then compaction).
    pub stages: u32,
    /// Columns and rows of the master problem.
    pub variables: usize,
    pub constraints: usize,
}

/// One priority level's admission and its bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    /// The priority value; `names` are the priorities with that value.
    pub priority: i64,
    pub names: Vec<String>,
    /// GPU-equivalents the placement admits at this level.
    pub admitted: f64,
    /// What no placement can exceed at this level, given the levels above.
    pub bound: f64,
    pub gap: f64,
}

/// A minimisation stage's objective, bound and gap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    pub objective: f64,
    pub bound: f64,
    pub gap: f64,
}

/// Pool membership of one node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodePool {
    pub node: String,
    pub mode: PoolMode,
    /// The declared `pool` this node belongs to, if any.
    pub pool: Option<String>,
}

/// GPUs of one node used by one gang (or one whole-GPU replica).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeGpus {
    pub node: String,
    pub gpus: Vec<u32>,
}

/// How far a gang spreads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub nvlink_domains: u32,
    pub nodes: u32,
    pub leaves: u32,
    pub spines: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gang {
    /// 0-based replica index within the workload class.
    pub replica: u32,
    pub nodes: Vec<NodeGpus>,
    pub span: Span,
}

/// One MIG instance serving one replica.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MigInstance {
    pub node: String,
    pub gpu: u32,
    /// Catalog profile name (as the driver advertises it when renamed with `mig-name`).
    pub profile: String,
}

/// Replicas of a shared class on one GPU (time-slice / MPS).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Share {
    pub node: String,
    pub gpu: u32,
    pub replicas: u32,
}

/// Replicas of a packed class (`requests`, `fraction`) on one node: on one GPU for a
/// fractional class, on whole GPUs for a whole-GPU class, on none for a CPU-only class.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Packed {
    pub node: String,
    pub gpus: Vec<u32>,
    pub replicas: u32,
}

/// Why (part of) a workload class was not placed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unplaced {
    pub replicas: u32,
    /// Short machine-readable reason.
    pub reason: UnplacedReason,
    /// The explanation in the user's terms.
    pub message: String,
}

/// What the plan does to a GPU whose current MIG layout is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigAction {
    /// The same layout.
    Keep,
    /// Another layout.
    Reconfigure,
    /// No MIG instances planned: the node leaves MIG, or the GPU is down or cordoned.
    Clear,
}

impl MigAction {
    pub fn as_str(self) -> &'static str {
        match self {
            MigAction::Keep => "keep",
            MigAction::Reconfigure => "reconfigure",
            MigAction::Clear => "clear",
        }
    }
}

impl std::fmt::Display for MigAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why replicas were not placed, in the order the explanation tries them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnplacedReason {
    /// No GPU of a model the class accepts is usable.
    Model,
    /// The topology the class requires exists nowhere (a gang larger than any domain).
    Topology,
    /// The team's ceiling or a quota is reached.
    Quota,
    /// Not enough free capacity (higher-priority or earlier work holds it).
    Capacity,
}

impl UnplacedReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            UnplacedReason::Model => "model",
            UnplacedReason::Topology => "topology",
            UnplacedReason::Quota => "quota",
            UnplacedReason::Capacity => "capacity",
        }
    }
}

impl std::fmt::Display for UnplacedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadPlacement {
    pub name: String,
    pub kind: String,
    pub team: String,
    pub priority: String,
    pub replicas_requested: u32,
    pub replicas_placed: u32,
    /// GPU-equivalents requested and placed (a 3g.40gb on an 8-slice GPU is 0.5, a
    /// time-slice replica with 4 per GPU is 0.25).
    pub gpus_requested: f64,
    pub gpus_placed: f64,
    /// Whole-GPU gangs (training, whole-GPU inference), by replica.
    pub gangs: Vec<Gang>,
    /// MIG profile chosen per GPU model (right-sizing), `model -> profile`.
    pub mig_profiles: std::collections::BTreeMap<String, String>,
    pub mig_instances: Vec<MigInstance>,
    pub shares: Vec<Share>,
    /// Packed replicas (classes with `requests` or `fraction`), by node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packed: Vec<Packed>,
    pub unplaced: Vec<Unplaced>,
}

/// The MIG layout of one GPU (profiles largest first).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GpuLayout {
    pub node: String,
    pub gpu: u32,
    pub model: String,
    pub profiles: Vec<String>,
}

/// What the plan does to a GPU whose current MIG layout is known (`mig layout ...
/// current=#true`). Instances are compared as multisets of profiles, as the node script
/// does: it destroys the instances whose profile the plan does not keep and creates the
/// missing ones.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MigChange {
    pub node: String,
    pub gpu: u32,
    pub model: String,
    pub action: MigAction,
    /// Profiles now and planned, largest first.
    pub current: Vec<String>,
    pub planned: Vec<String>,
    /// Instances that stay (current and planned), are destroyed (current only) and are
    /// created (planned only).
    pub surviving: Vec<String>,
    pub destroyed: Vec<String>,
    pub created: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeamUsage {
    pub name: String,
    pub guarantee: u32,
    pub ceiling: u32,
    pub gpus_placed: f64,
    pub cost_per_hour: Option<f64>,
}

/// Largest gang that would still fit, per tier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Headroom {
    pub tier: String,
    /// Largest number of free whole GPUs inside one domain of this tier.
    pub largest_gang: u32,
    /// The domain offering it.
    pub domain: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub gpus_total: u32,
    pub gpus_allocated: f64,
    pub allocation_pct: f64,
    pub cost_per_hour: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub format_version: String,
    pub cluster: String,
    pub solver: SolverSummary,
    pub summary: Summary,
    pub pools: Vec<NodePool>,
    pub workloads: Vec<WorkloadPlacement>,
    pub mig_layouts: Vec<GpuLayout>,
    /// Per GPU with a known current layout: what survives and what is destroyed (absent
    /// when no current layout is declared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig_changes: Vec<MigChange>,
    pub teams: Vec<TeamUsage>,
    pub headroom: Vec<Headroom>,
    /// Per scheduling authority: its pools, nodes, classes and team quota parts (absent
    /// when no authority is declared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorities: Vec<AuthorityUse>,
    /// What moved since the previous placement (the state's, or `plan --previous`);
    /// absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<Moves>,
    /// Spot interruptions and checkpoint writes (absent when no class is on spot and
    /// none declares a checkpoint size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub economics: Option<economics::Economics>,
}

/// One scheduler's share of the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuthorityUse {
    pub scheduler: crate::model::Authority,
    /// Declared pools whose nodes it owns.
    pub pools: Vec<String>,
    /// Its nodes, as hostlist ranges.
    pub nodes: String,
    pub node_count: u32,
    /// Usable GPUs on its nodes.
    pub gpus: u32,
    /// Classes that run under it.
    pub classes: Vec<String>,
    /// Each team's part of its quota, and the GPUs the team's classes got under it.
    pub teams: Vec<TeamPart>,
}

/// One team's part of its quota under one scheduler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeamPart {
    pub team: String,
    pub guarantee: u32,
    pub ceiling: u32,
    pub gpus_placed: f64,
}

/// How much of the previous placement a plan moved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moves {
    /// Gangs on the same GPUs as a gang of their class before (whatever the replica
    /// number), and gangs placed in both whose GPUs differ.
    pub gangs_kept: u32,
    pub gangs_moved: u32,
    /// MIG instances, shared and packed replicas on the same GPU (node, for CPU-only
    /// ones) as before, and those not, counted up to what both placements hold.
    pub replicas_kept: u32,
    pub replicas_moved: u32,
    /// Nodes whose pool mode changed.
    pub nodes_changed: u32,
    /// GPUs whose MIG layout was created, changed or removed.
    pub mig_gpus_changed: u32,
}

impl Placement {
    /// Turns the planner's view names (`h100@slurm`, see
    /// [`crate::model::authority::solver_view`]) back into the user's model names.
    pub fn restore_model_names(&mut self) {
        use crate::model::authority::{base_model, restore_text};
        for w in &mut self.workloads {
            w.mig_profiles = std::mem::take(&mut w.mig_profiles)
                .into_iter()
                .map(|(m, p)| (base_model(&m).to_string(), p))
                .collect();
            for u in &mut w.unplaced {
                u.message = restore_text(&u.message);
            }
        }
        for l in &mut self.mig_layouts {
            l.model = base_model(&l.model).to_string();
        }
        for ch in &mut self.mig_changes {
            ch.model = base_model(&ch.model).to_string();
        }
        if let Some(n) = &mut self.solver.note {
            *n = restore_text(n);
        }
    }
}
