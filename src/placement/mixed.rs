//! A placement made on the view that splits mixed nodes into one node per GPU model
//! ([`crate::model::mixed`]), turned back into the user's nodes and GPU indexes.

use super::{NodePool, Placement, PoolMode};
use crate::model::Cluster;
use crate::model::mixed::{PART_SEP, Parts, WHOLE_POOL};
use std::collections::BTreeMap;

impl Placement {
    /// Names each part's node and GPU indexes as the node's, merges the parts' pool
    /// entries (a MIG part makes the node's mode MIG; the whole-GPU pin is no declared
    /// pool) and recomputes the authority table on the user's model `user`.
    pub fn merge_parts(&mut self, parts: &Parts, user: &Cluster) {
        self.pools = merged_pools(&self.pools, parts);
        for w in &mut self.workloads {
            for g in &mut w.gangs {
                for ng in &mut g.nodes {
                    let (node, gpus) = locate_all(parts, &ng.node, &ng.gpus);
                    ng.node = node;
                    ng.gpus = gpus;
                }
                g.nodes.sort();
            }
            for i in &mut w.mig_instances {
                (i.node, i.gpu) = parts.locate(&i.node, i.gpu);
            }
            w.mig_instances.sort();
            for s in &mut w.shares {
                (s.node, s.gpu) = parts.locate(&s.node, s.gpu);
            }
            w.shares.sort();
            for p in &mut w.packed {
                let (node, gpus) = locate_all(parts, &p.node, &p.gpus);
                p.node = node;
                p.gpus = gpus;
            }
            w.packed.sort();
        }
        for l in &mut self.mig_layouts {
            (l.node, l.gpu) = parts.locate(&l.node, l.gpu);
        }
        self.mig_layouts.sort();
        for ch in &mut self.mig_changes {
            (ch.node, ch.gpu) = parts.locate(&ch.node, ch.gpu);
        }
        self.mig_changes.sort();
        for h in &mut self.headroom {
            if let Some(d) = &mut h.domain {
                if let Some((node, _)) = d.split_once(PART_SEP) {
                    *d = node.to_string();
                }
            }
        }
        self.authorities = super::authority::authorities(user, self);
    }
}

/// A node's GPU indexes for GPUs `gpus` of view node `name`.
fn locate_all(parts: &Parts, name: &str, gpus: &[u32]) -> (String, Vec<u32>) {
    let node = parts.node_of(name).to_string();
    let gpus = gpus.iter().map(|&g| parts.locate(name, g).1).collect();
    (node, gpus)
}

/// One pool entry per node: the mode of a part that is not whole-GPU when there is one
/// (a MIG pool's parts without MIG hold whole GPUs), the declared pool.
fn merged_pools(pools: &[NodePool], parts: &Parts) -> Vec<NodePool> {
    let mut by_node: BTreeMap<String, NodePool> = BTreeMap::new();
    for p in pools {
        let node = parts.node_of(&p.node).to_string();
        let declared = p.pool.clone().filter(|x| x != WHOLE_POOL);
        let e = by_node.entry(node.clone()).or_insert_with(|| NodePool {
            node,
            mode: p.mode,
            pool: None,
        });
        if e.mode == PoolMode::WholeGpu {
            e.mode = p.mode;
        }
        if e.pool.is_none() {
            e.pool = declared;
        }
    }
    let mut out: Vec<NodePool> = by_node.into_values().collect();
    out.sort();
    out
}
