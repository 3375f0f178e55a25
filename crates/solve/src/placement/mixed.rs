//! A placement made on the view that splits mixed nodes into one node per GPU model
//! ([`crate::model::mixed`]), turned back into the user's nodes and GPU indexes.

use super::{NodeGpus, NodePool, Placement, PoolMode};
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

impl Placement {
    /// The placement in the view's terms: a previous placement read back by the
    /// planner, so that it keeps what it can on every part of a mixed node.
    pub fn split_parts(&self, parts: &Parts) -> Placement {
        let mut p = self.clone();
        p.pools = self
            .pools
            .iter()
            .flat_map(|np| {
                parts.views_of(&np.node).into_iter().map(|node| {
                    let whole = parts.whole.contains(&node);
                    NodePool {
                        mode: if whole { PoolMode::WholeGpu } else { np.mode },
                        pool: if whole {
                            Some(WHOLE_POOL.to_string())
                        } else {
                            np.pool.clone()
                        },
                        node,
                    }
                })
            })
            .collect();
        p.pools.sort();
        for w in &mut p.workloads {
            for g in &mut w.gangs {
                g.nodes = g.nodes.iter().flat_map(|ng| to_parts(parts, ng)).collect();
                g.nodes.sort();
            }
            for i in &mut w.mig_instances {
                (i.node, i.gpu) = parts.to_view(&i.node, i.gpu);
            }
            for s in &mut w.shares {
                (s.node, s.gpu) = parts.to_view(&s.node, s.gpu);
            }
            for x in &mut w.packed {
                if let Some(&g) = x.gpus.first() {
                    let node = parts.to_view(&x.node, g).0;
                    x.gpus = x
                        .gpus
                        .iter()
                        .map(|&i| parts.to_view(&x.node, i).1)
                        .collect();
                    x.node = node;
                }
            }
        }
        for l in &mut p.mig_layouts {
            (l.node, l.gpu) = parts.to_view(&l.node, l.gpu);
        }
        for ch in &mut p.mig_changes {
            (ch.node, ch.gpu) = parts.to_view(&ch.node, ch.gpu);
        }
        p
    }
}

/// A node's GPUs `ng` as the view's parts hold them (one entry per part).
fn to_parts(parts: &Parts, ng: &NodeGpus) -> Vec<NodeGpus> {
    let mut by: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for &g in &ng.gpus {
        let (node, i) = parts.to_view(&ng.node, g);
        by.entry(node).or_default().push(i);
    }
    if by.is_empty() {
        return vec![ng.clone()];
    }
    by.into_iter()
        .map(|(node, gpus)| NodeGpus { node, gpus })
        .collect()
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
