//! How nodes share their GPUs, per scheduler (see [`crate::model::sharing`]): the
//! device-plugin sharing of every node holding time-sliced, MPS or fractional replicas
//! under a Kubernetes scheduler, Slurm's `gres/shard` / `gres/mps` nodes, and the
//! fractions a Kubernetes target cannot carry (only without declared authorities).

use super::{NodeFacts, Workloads};
use crate::model::{Cluster, Isolation};
use crate::placement::Placement;
use std::collections::BTreeMap;
use std::sync::Arc;

/// How one node's GPUs are shared (the device plugin applies one strategy and one
/// replica count to every GPU of a node).
pub(super) struct Sharing {
    /// `time-slicing` or `mps`.
    pub strategy: &'static str,
    /// Replicas per GPU.
    pub replicas: u32,
}

/// Node -> its sharing, for the nodes that hold time-sliced, MPS or fractional replicas
/// under a Kubernetes scheduler (Slurm shares with `gres/shard`): the shared classes'
/// `per-gpu` (one per node, as planned), or for fractions the most replicas per GPU
/// every fraction on the node allows ([`Cluster::fraction_slots`]); without declared
/// authorities, the most fractional replicas the plan puts on one of its GPUs.
pub(super) fn sharing_by_node<'a>(
    c: &Cluster,
    plan: &'a Placement,
    workload: &Workloads,
) -> BTreeMap<&'a str, Sharing> {
    let mut out: BTreeMap<&str, Sharing> = BTreeMap::new();
    // Slurm (shards) and KAI (its own fractions on GPUs the device plugin advertises
    // whole) share GPUs without the device plugin.
    let slurm = |node: &str| {
        c.node_index
            .get(node)
            .and_then(|&i| c.node_authority(i))
            .is_some_and(|a| a.shares_by_fraction())
    };
    let whole = whole_gpu_nodes(plan, workload);
    // Fractional replicas per GPU (all classes), and the fewest replicas per GPU the
    // fractions of each node allow (none: no authority declared).
    let mut per_gpu: BTreeMap<(&str, u32), u32> = BTreeMap::new();
    let mut allows: BTreeMap<&str, Option<u32>> = BTreeMap::new();
    for w in &plan.workloads {
        let Some(m) = workload.get(w.name.as_str()).copied() else {
            continue;
        };
        let mps = m.isolation.or(m.share) == Some(Isolation::Mps);
        let strategy = if mps { "mps" } else { "time-slicing" };
        let factor = m.per_gpu.unwrap_or(1);
        for s in w.shares.iter().filter(|s| !slurm(&s.node) && factor > 1) {
            let e = out.entry(s.node.as_str()).or_insert(Sharing {
                strategy,
                replicas: 1,
            });
            e.replicas = e.replicas.max(factor);
        }
        let milli = m.packed_gpu_milli();
        if milli == 0 || milli >= 1000 {
            continue;
        }
        // The most replicas per GPU that give each replica its fraction (without a
        // declared scheduler too: the Kubernetes targets carry what they can).
        let slots = Some(
            c.fraction_slots(m)
                .map_or((1000 / milli).max(1) as u32, |s| s.per_gpu),
        );
        // A node with whole-GPU work keeps its whole GPUs (no authority declared: the
        // fractions there are not carried, see `uncarried_fractions`).
        for p in w
            .packed
            .iter()
            .filter(|p| !slurm(&p.node) && !whole.contains(p.node.as_str()))
        {
            for g in &p.gpus {
                *per_gpu.entry((p.node.as_str(), *g)).or_insert(0) += p.replicas;
            }
            let a = allows.entry(p.node.as_str()).or_insert(slots);
            *a = match (*a, slots) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
            out.entry(p.node.as_str()).or_insert(Sharing {
                strategy,
                replicas: 1,
            });
        }
    }
    for (node, a) in allows {
        let most = per_gpu
            .iter()
            .filter(|((n, _), _)| *n == node)
            .map(|(_, k)| *k)
            .max()
            .unwrap_or(1);
        if let Some(e) = out.get_mut(node) {
            e.replicas = a.unwrap_or(most).max(1);
        }
    }
    out
}

/// Node -> how Slurm shares its GPUs (`shard`, or `mps` when every shared replica on it
/// is MPS), for the nodes Slurm may own (Slurm's, or every node without authorities)
/// that hold time-sliced, MPS or fractional replicas.
pub(super) fn slurm_sharing<'a>(
    c: &Cluster,
    plan: &'a Placement,
    workload: &Workloads,
) -> BTreeMap<&'a str, &'static str> {
    let mut mps: BTreeMap<&str, bool> = BTreeMap::new();
    let slurm_may_own = |node: &str| {
        !c.authorities_declared()
            || c.node_index
                .get(node)
                .and_then(|&i| c.node_authority(i))
                .is_some_and(|a| a == crate::model::Authority::Slurm)
    };
    for w in &plan.workloads {
        let Some(m) = workload.get(w.name.as_str()).copied() else {
            continue;
        };
        let is_mps = m.isolation.or(m.share) == Some(Isolation::Mps);
        let fraction = (1..1000).contains(&m.packed_gpu_milli());
        // One replica per GPU shares nothing: a whole GPU.
        let shared = m.per_gpu.unwrap_or(1) > 1;
        let nodes = w
            .shares
            .iter()
            .filter(|_| shared)
            .map(|s| s.node.as_str())
            .chain(
                w.packed
                    .iter()
                    .filter(|_| fraction)
                    .map(|p| p.node.as_str()),
            );
        for n in nodes.filter(|n| slurm_may_own(n)) {
            let e = mps.entry(n).or_insert(true);
            *e &= is_mps;
        }
    }
    mps.into_iter()
        .map(|(n, m)| (n, if m { "mps" } else { "shard" }))
        .collect()
}

/// Fractional replicas the Kubernetes targets cannot carry, per class: on a node that
/// also holds whole-GPU work, or shared more finely than the fraction (possible only
/// where no authority is declared: the planner keeps declared Kubernetes classes to
/// what the device plugin carries, see [`crate::model::sharing`]). Class -> nodes.
pub(super) fn uncarried_fractions(
    c: &Cluster,
    plan: &Placement,
    nodes: &[Arc<NodeFacts>],
    workload: &Workloads,
) -> BTreeMap<String, Vec<String>> {
    let by_name: BTreeMap<&str, &NodeFacts> =
        nodes.iter().map(|n| (n.name.as_str(), &**n)).collect();
    let whole = whole_gpu_nodes(plan, workload);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for w in &plan.workloads {
        let Some(m) = workload.get(w.name.as_str()).copied() else {
            continue;
        };
        let milli = m.packed_gpu_milli();
        if milli == 0 || milli >= 1000 || c.authority_of(m).is_some_and(|a| a.shares_by_fraction())
        {
            continue;
        }
        for p in &w.packed {
            let Some(n) = by_name.get(p.node.as_str()) else {
                continue;
            };
            // DRA shares a GPU per claim, not per node (a GPU several objects would
            // share is GP944).
            if n.dra {
                continue;
            }
            let replicas = n
                .plugin_config
                .rsplit('-')
                .next()
                .and_then(|r| r.parse::<u64>().ok())
                .filter(|_| n.shares_gpus());
            // Not shared, shared more finely than the fraction, more replicas on a GPU
            // than it is shared, or beside whole GPUs.
            let most = per_gpu_count(plan, workload, p.node.as_str());
            let carried = replicas.is_some_and(|r| r * milli <= 1000 && r >= most);
            if whole.contains(p.node.as_str()) || !carried {
                let v = out.entry(w.name.clone()).or_default();
                if !v.contains(&p.node) {
                    v.push(p.node.clone());
                }
            }
        }
    }
    out
}

/// Nodes holding work that asks for whole GPUs (gangs, whole-GPU packed replicas).
fn whole_gpu_nodes<'a>(
    plan: &'a Placement,
    workload: &Workloads,
) -> std::collections::BTreeSet<&'a str> {
    let mut whole = std::collections::BTreeSet::new();
    for w in &plan.workloads {
        whole.extend(
            w.gangs
                .iter()
                .flat_map(|g| g.nodes.iter().map(|n| n.node.as_str())),
        );
        if workload
            .get(w.name.as_str())
            .is_some_and(|m| m.packed_gpu_milli() >= 1000)
        {
            whole.extend(w.packed.iter().map(|p| p.node.as_str()));
        }
    }
    whole
}

/// The most fractional replicas (of any class) the plan puts on one GPU of `node`.
fn per_gpu_count(plan: &Placement, workload: &Workloads, node: &str) -> u64 {
    let mut per: BTreeMap<u32, u64> = BTreeMap::new();
    for w in &plan.workloads {
        let fraction = workload
            .get(w.name.as_str())
            .is_some_and(|m| (1..1000).contains(&m.packed_gpu_milli()));
        if !fraction {
            continue;
        }
        for p in w.packed.iter().filter(|p| p.node == node) {
            for g in &p.gpus {
                *per.entry(*g).or_insert(0) += p.replicas as u64;
            }
        }
    }
    per.values().copied().max().unwrap_or(0)
}
