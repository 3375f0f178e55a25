//! How capacity is bought and what interruptions and checkpoints cost: node capacity
//! (on-demand, reserved, spot) with prices and interruption rates, which classes may run
//! on spot, and the storage checkpoints are written to. The formulas that use them live
//! in [`crate::placement::economics`]; docs/cost.md explains both.

use super::{Cluster, NodeIdx, SwitchIdx, Workload, WorkloadKind};
use crate::source::Span;
use crate::units::{Bandwidth, Duration};
use serde::Serialize;

/// Restart time assumed when a class's `checkpoint` names none: rescheduling, start-up
/// and reading the checkpoint back (10 minutes).
pub(crate) const DEFAULT_RESTART: Duration = Duration(600);

/// Share of GPU time a class may spend writing checkpoints before the plan warns.
pub(crate) const DEFAULT_MAX_IDLE: f64 = 0.05;

/// How a node's capacity is bought.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capacity {
    #[default]
    OnDemand,
    Reserved,
    Spot,
}

impl Capacity {
    pub(crate) fn parse(s: &str) -> Option<Capacity> {
        Some(match s {
            "on-demand" => Capacity::OnDemand,
            "reserved" => Capacity::Reserved,
            "spot" => Capacity::Spot,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Capacity::OnDemand => "on-demand",
            Capacity::Reserved => "reserved",
            Capacity::Spot => "spot",
        }
    }
}

/// What a node class or range declares about its capacity (the range wins per field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CapacityTerms {
    pub capacity: Option<Capacity>,
    pub price_per_hour: Option<f64>,
    /// Interruptions per hour (spot).
    pub interruptions: Option<f64>,
}

impl CapacityTerms {
    /// `self`, with what it leaves open taken from `base`.
    pub(crate) fn over(self, base: CapacityTerms) -> CapacityTerms {
        CapacityTerms {
            capacity: self.capacity.or(base.capacity),
            price_per_hour: self.price_per_hour.or(base.price_per_hour),
            interruptions: self.interruptions.or(base.interruptions),
        }
    }
}

/// Where a storage serves checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageScope {
    Cluster,
    Pool(String),
    Leaf(SwitchIdx),
}

/// `storage "NAME" write-bandwidth=...`.
#[derive(Clone, Debug, Serialize)]
pub struct Storage {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    pub write_bandwidth: Bandwidth,
    pub scope: StorageScope,
}

/// Why a class may or may not run on spot capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpotFit {
    /// It may: interruptible, and it checkpoints (training) or is stateless (inference).
    Allowed,
    /// `spot #false`.
    OptedOut,
    /// Dev sessions hold interactive state nobody checkpoints.
    Dev,
    /// Not `preemptible`.
    NotPreemptible,
    /// Training without `checkpoint`: an interruption loses the whole run.
    NoCheckpoint,
    /// Inference at the cluster's highest priority.
    TopPriority,
}

impl SpotFit {
    /// Why not, in the user's terms (`None` when allowed).
    pub fn reason(self) -> Option<&'static str> {
        Some(match self {
            SpotFit::Allowed => return None,
            SpotFit::OptedOut => "it says `spot #false`",
            SpotFit::Dev => "dev sessions hold interactive state that no checkpoint saves",
            SpotFit::NotPreemptible => "it is not `preemptible`",
            SpotFit::NoCheckpoint => {
                "it does not `checkpoint`: an interruption would lose the whole run"
            }
            SpotFit::TopPriority => "it runs at the cluster's highest priority",
        })
    }
}

impl Workload {
    /// Restart time after an interruption (`checkpoint restart=`, default 10 minutes).
    pub fn restart_time(&self) -> Duration {
        self.restart.unwrap_or(DEFAULT_RESTART)
    }

    /// Share of GPU time the class may spend writing checkpoints (`max-idle`, 5%).
    pub fn max_checkpoint_idle(&self) -> f64 {
        self.max_idle.unwrap_or(DEFAULT_MAX_IDLE)
    }
}

impl Cluster {
    /// Whether any node is spot capacity (cached when the cluster is built or
    /// refreshed).
    pub fn has_spot(&self) -> bool {
        self.any_spot
    }

    /// Whether any node declares its capacity other than on-demand (nodes are then
    /// labelled with it).
    pub fn capacity_declared(&self) -> bool {
        self.nodes.iter().any(|n| n.capacity != Capacity::OnDemand)
    }

    /// Whether node `n` is spot capacity.
    pub fn node_spot(&self, n: NodeIdx) -> bool {
        self.nodes[n].capacity == Capacity::Spot
    }

    /// The on-demand price of one GPU-hour of model `model` (its `price-per-hour`).
    pub fn list_price(&self, model: &str) -> Option<f64> {
        self.models.get(model).and_then(|m| m.price_per_hour)
    }

    /// The price of one GPU-hour on node `n` for a GPU of `model`: the node's own price
    /// (range, else class), else the model's list price.
    pub fn gpu_price(&self, n: NodeIdx, model: &str) -> Option<f64> {
        self.nodes[n]
            .price_per_hour
            .or_else(|| self.list_price(model))
    }

    /// Whether any GPU has a price (a model's list price or a node's own).
    pub fn priced(&self) -> bool {
        self.models.values().any(|m| m.price_per_hour.is_some())
            || self.nodes.iter().any(|n| n.price_per_hour.is_some())
    }

    /// Whether class `w` may run on spot capacity, and if not why.
    pub fn spot_fit(&self, w: &Workload) -> SpotFit {
        if w.spot == Some(false) {
            return SpotFit::OptedOut;
        }
        if w.kind == WorkloadKind::Dev {
            return SpotFit::Dev;
        }
        if !w.preemptible {
            return SpotFit::NotPreemptible;
        }
        match w.kind {
            WorkloadKind::Training if w.checkpoint.is_none() => SpotFit::NoCheckpoint,
            WorkloadKind::Inference if self.top_priority(w) => SpotFit::TopPriority,
            _ => SpotFit::Allowed,
        }
    }

    /// Whether class `w` may land on spot nodes.
    pub fn may_use_spot(&self, w: &Workload) -> bool {
        self.spot_fit(w) == SpotFit::Allowed
    }

    /// Whether `w` runs at the highest priority value any priority class has.
    fn top_priority(&self, w: &Workload) -> bool {
        let top = self.priorities.iter().map(|p| p.value).max();
        let mine = self
            .priorities
            .iter()
            .find(|p| p.name == w.priority)
            .map(|p| p.value);
        matches!((mine, top), (Some(m), Some(t)) if m >= t)
    }

    /// The storage serving node `n`: its leaf's, else its pool's, else the cluster's
    /// (the first declared of each scope).
    pub fn storage_of(&self, n: NodeIdx) -> Option<&Storage> {
        let node = &self.nodes[n];
        let pool = self.pool_of(n).map(|p| p.name.as_str());
        let find = |f: &dyn Fn(&StorageScope) -> bool| self.storages.iter().find(|s| f(&s.scope));
        find(&|s| matches!(s, StorageScope::Leaf(l) if node.leaves.contains(l)))
            .or_else(|| find(&|s| matches!(s, StorageScope::Pool(p) if Some(p.as_str()) == pool)))
            .or_else(|| find(&|s| *s == StorageScope::Cluster))
    }

    /// Bandwidth of node `n`'s NICs together (count x speed), when declared.
    pub fn node_nic_bandwidth(&self, n: NodeIdx) -> Option<Bandwidth> {
        let class = self.classes.get(&self.nodes[n].class)?;
        let speed = class.nic_speed?;
        (class.nics > 0).then(|| Bandwidth(speed.0.saturating_mul(class.nics as u64)))
    }
}
