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
        .domains(m, tier)
        .into_iter()
        .map(|d| {
            let mut per_node: BTreeMap<usize, u32> = BTreeMap::new();
            for (n, gi) in &d.gpus {
                let ok = m.nodes[*n]
                    .gpus
                    .iter()
                    .find(|g| g.index == *gi)
                    .and_then(|g| g.model.as_deref())
                    .is_some_and(|md| w.accepts(md));
                if ok {
                    *per_node.entry(*n).or_default() += 1;
                }
            }
            let mut cap = 0;
            let mut nodes = 0;
            for (n, free) in per_node {
                let gpn = w
                    .effective_gpus_per_node(m.nodes[n].gpus.len() as u32)
                    .max(1);
                if free >= gpn {
                    cap += free / gpn * gpn;
                    nodes += 1;
                }
            }
            (d.name, cap, nodes)
        })
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}
