//! What the planned units ask under a Kubernetes-family target, once matched to
//! objects: the input of the node-capacity and quota checks.

use super::objects::Object;
use std::collections::{BTreeMap, BTreeSet};

/// What one planned pod asks under a target (for node capacity and quotas).
#[derive(Clone, Debug)]
pub(crate) struct PodUse {
    pub node: String,
    pub requests: BTreeMap<String, i128>,
    /// `cpu`/`memory` its template leaves unrequested.
    pub unrequested: BTreeSet<String>,
    pub tpl: Option<super::pods::Pod>,
    /// The GPUs the plan gives it on its node.
    pub gpus: Vec<u32>,
    /// What the plan gives it of a GPU.
    pub gpu: super::units::Gpu,
    /// On a DRA node: what its claims take (`requests` then holds the node's device
    /// keys, `dra:<model>[:<profile>]`, instead of extended resources).
    pub dra: Option<DraUse>,
}

/// What one pod's resource claims take, for quotas and shares.
#[derive(Clone, Debug, Default)]
pub(crate) struct DraUse {
    /// DeviceClass -> devices, in thousandths (a shared claim's device split over the
    /// pods that share it).
    pub classes: BTreeMap<String, i128>,
    /// The shared ResourceClaim (`namespace/name`), its sharing and how many planned
    /// pods of the object reference it.
    pub shared: Option<(String, Option<super::dra::ClaimSharing>, u32)>,
}

/// One planned unit under a target: its class, the object that carries it (or the
/// class's first object when none can), and what its pods ask.
#[derive(Clone, Debug)]
pub(crate) struct Use {
    pub class: String,
    pub team: String,
    pub object: Option<usize>,
    pub pods: Vec<PodUse>,
}

/// A target's objects and the use of every unit it owns.
pub(crate) struct Carried {
    pub objects: Vec<Object>,
    pub uses: Vec<Use>,
}
