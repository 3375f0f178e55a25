//! Capacity of topology domains for a gang, on an empty cluster: how many GPUs of an
//! acceptable model a gang of a workload can use inside each domain of a tier, given
//! its GPUs per node. Shared by validation (GP016) and the plan's explanations.

use super::{Cluster, Tier, Workload};
use std::collections::BTreeMap;

/// GPUs a gang of `w` can use inside each domain of `tier`, best first:
/// `(domain name, usable GPUs, nodes contributing)`.
pub fn capacity_by_domain(m: &Cluster, w: &Workload, tier: Tier) -> Vec<(String, u32, u32)> {
    let mut v: Vec<(String, u32, u32)> = m
        .topology
        .domains_ref(tier)
        .iter()
        .map(|d| {
            let mut per_node: BTreeMap<usize, u32> = BTreeMap::new();
            for (n, model, count) in &d.per_node {
                if w.accepts(model) {
                    *per_node.entry(*n).or_default() += count;
                }
            }
            let mut cap = 0;
            let mut nodes = 0;
            for (n, free) in per_node {
                // The node's GPUs of models the class accepts (a node may have several
                // models; a gang member takes GPUs of one).
                let accepted = m.nodes[n]
                    .gpus
                    .iter()
                    .filter(|g| g.model.as_deref().is_some_and(|x| w.accepts(x)))
                    .count() as u32;
                let gpn = w.effective_gpus_per_node(accepted).max(1);
                if free >= gpn {
                    cap += free / gpn * gpn;
                    nodes += 1;
                }
            }
            (d.name.clone(), cap, nodes)
        })
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}
