//! The previous placement (the last applied plan, or `plan --previous FILE`) in model
//! indexes, for plans that move as little as possible.
//!
//! Built from a placement by [`crate::placement::previous::resolve`]: entries naming a
//! node, GPU or class that no longer exists, or a GPU that is now down or cordoned, are
//! dropped (that work has to move anyway). Pure: the caller reads the file.
//!
//! What the solvers do with it (the ILP; the greedy baseline stays stateless):
//! - the compaction stage rewards keeping, per node group, the GPUs each gang shape held,
//!   the packed replicas each class held and the nodes in each pool mode
//!   ([`KEEP_GPU`], [`KEEP_NODE`]); admission is decided before, so keeping never
//!   costs a higher-priority replica;
//! - previous MIG layouts count as current layouts on GPUs the files declare no layout
//!   for ([`crate::model::current_mig_layouts`]), which the ILP keeps unless admission
//!   needs the GPU;
//! - the extraction puts each gang back on its previous GPUs when they are free and its
//!   shape fits, prefers each class's previous GPUs for MIG instances and shares and its
//!   previous nodes for packed replicas, and keeps nodes in their previous pool mode.

use crate::model::{NodeIdx, PoolMode};
use crate::solve::GangNodes;
use std::collections::BTreeMap;

/// Reward for keeping one GPU of a gang (or a packed replica's GPU share) in the node
/// group it used before. Decision: far above every per-GPU cost of the compaction
/// objective (1 per MIG or shared GPU, at most 0.5 for price, a gang's spread penalty
/// per GPU), so running work is not moved for a tidier layout; below nothing that
/// admission decides (admission is locked before the compaction stage). 2.0 (just above
/// the per-GPU costs) was not enough in aggregate: at 100,000 GPUs, one new leaf-bound
/// gang moved 8 running gangs (16 GPUs) to save more than 32 in layout costs elsewhere,
/// while a whole leaf was free; at 20 it moves none (docs/benchmarks.md).
pub(crate) const KEEP_GPU: f64 = 20.0;

/// Reward for keeping one node in its previous pool mode (relabelling a node evicts what
/// runs on it).
pub(crate) const KEEP_NODE: f64 = 0.5;

/// A previous placement, resolved against the current model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Previous {
    /// Pool mode of each node (by node index); `None` when the node was not in it.
    pub node_mode: Vec<Option<PoolMode>>,
    /// Gangs per workload: each gang's (node, GPUs), by previous replica order.
    pub gangs: BTreeMap<usize, Vec<GangNodes>>,
    /// MIG layouts per (node, GPU), profile names as planned.
    pub mig_layouts: BTreeMap<(NodeIdx, u32), Vec<String>>,
    /// MIG instances per workload: (node, GPU, profile name).
    pub mig_instances: BTreeMap<usize, Vec<(NodeIdx, u32, String)>>,
    /// Shared GPUs per workload: (node, GPU, replicas).
    pub shares: BTreeMap<usize, Vec<(NodeIdx, u32, u32)>>,
    /// Packed replicas per workload: (node, GPUs, replicas).
    pub packed: BTreeMap<usize, Vec<(NodeIdx, Vec<u32>, u32)>>,
}
