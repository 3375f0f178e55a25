//! GPU allocation on Kubernetes-managed nodes: NVIDIA's device plugin (extended
//! resources `nvidia.com/gpu`, `nvidia.com/mig-*`, `nvidia.com/gpu.shared`) or NVIDIA's
//! DRA driver (`resource.k8s.io/v1` ResourceClaims, Kubernetes 1.34+).
//!
//! A node's allocation is its pool's `gpu-allocation=`, else the cluster's
//! `gpu-allocation`, else the device plugin. It only means something on a node
//! kube-scheduler, Kueue or Volcano owns (or where no authority is declared):
//! Slurm hands out GPUs through gres.conf whatever is declared, KAI Scheduler shares the
//! GPUs the device plugin advertises itself
//! ([`Authority::claims_gpus_through_dra`](super::Authority::claims_gpus_through_dra)),
//! and a DRA declaration that reaches only such nodes is refused (GP053). A cluster-wide
//! `gpu-allocation "dra"` leaves their nodes on the device plugin.
//!
//! Decision: one mode per node, never both. NVIDIA's device plugin and its DRA driver
//! would both hand out the same GPUs; on a DRA node the device plugin is switched off
//! (the GPU Operator's `nvidia.com/gpu.deploy.device-plugin=false` label), so a pod there
//! asking an extended `nvidia.com/*` resource would never be scheduled.

use super::{Cluster, NodeIdx, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How a node hands out its GPUs.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// NVIDIA's device plugin: extended resources.
    #[default]
    DevicePlugin,
    /// NVIDIA's DRA driver: ResourceClaims against DeviceClasses.
    Dra,
}

/// The first Kubernetes release that serves `resource.k8s.io/v1` (DRA is stable).
pub(crate) const DRA_KUBERNETES: &[u32] = &[1, 34];

impl Allocation {
    pub(crate) fn parse(s: &str) -> Option<Allocation> {
        match s {
            "device-plugin" => Some(Allocation::DevicePlugin),
            "dra" => Some(Allocation::Dra),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Allocation::DevicePlugin => "device-plugin",
            Allocation::Dra => "dra",
        }
    }
}

impl std::fmt::Display for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Cluster {
    /// What the configuration declares for node `n`: its pool's `gpu-allocation=`, else
    /// the cluster's.
    pub(crate) fn declared_allocation(&self, n: NodeIdx) -> Option<Allocation> {
        self.pool_of(n)
            .and_then(|p| p.gpu_allocation)
            .or(self.gpu_allocation)
    }

    /// How node `n` hands out GPUs: DRA where declared on a node kube-scheduler, Kueue
    /// or Volcano owns (or where no authority is declared), else the device plugin.
    pub fn node_allocation(&self, n: NodeIdx) -> Allocation {
        let claims = self
            .node_authority(n)
            .is_none_or(|a| a.claims_gpus_through_dra());
        match self.declared_allocation(n) {
            Some(Allocation::Dra) if claims => Allocation::Dra,
            _ => Allocation::DevicePlugin,
        }
    }

    /// Whether any declaration asks for DRA (cluster or pool).
    pub(crate) fn dra_declared(&self) -> bool {
        self.gpu_allocation == Some(Allocation::Dra)
            || self
                .pools
                .iter()
                .any(|p| p.gpu_allocation == Some(Allocation::Dra))
    }

    /// The allocations of the nodes class `w` may land on: the nodes its scheduler owns
    /// (every node with no authority declared) with a usable GPU of a model it accepts.
    pub(crate) fn class_allocations(&self, w: &Workload) -> BTreeSet<Allocation> {
        let owner = self.authority_of(w);
        let mut out = BTreeSet::new();
        for (n, node) in self.nodes.iter().enumerate() {
            if owner.is_some() && self.node_authority(n) != owner {
                continue;
            }
            let accepted = node
                .usable_gpus()
                .any(|g| g.model.as_deref().is_some_and(|m| w.accepts(m)));
            if accepted {
                out.insert(self.node_allocation(n));
            }
        }
        out
    }
}
