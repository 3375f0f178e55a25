//! The previous placement (the last applied plan, or `plan --previous FILE`) in model
//! indexes, for plans that move as little as possible.
//!
//! Names are resolved against the current model: entries naming a node, GPU or class
//! that no longer exists, or a GPU that is now down or cordoned, are dropped (that work
//! has to move anyway). Pure: the caller reads the file.
//!
//! What the solvers do with it (the ILP; the greedy baseline stays stateless):
//! - the compaction stage rewards keeping, per node group, the GPUs each gang shape held,
//!   the packed replicas each class held and the nodes in each pool mode
//!   ([`KEEP_GPU`], [`KEEP_NODE`]); admission is decided before, so keeping never
//!   costs a higher-priority replica;
//! - previous MIG layouts become current layouts ([`Previous::current_layouts`]), which the
//!   ILP keeps unless admission needs the GPU;
//! - the post-pass puts each gang back on its previous GPUs when they are free and its
//!   shape fits, prefers each class's previous GPUs for MIG instances and shares and its
//!   previous nodes for packed replicas, and keeps nodes in their previous pool mode.

use crate::model::{Cluster, NodeIdx};
use crate::placement::{Moves, Placement, PoolMode};
use crate::solve::GangNodes;
use std::collections::BTreeMap;

/// Reward for keeping one GPU of a gang (or a packed replica's GPU share) in the node
/// group it used before. Decision: above every per-GPU cost of the compaction objective
/// (1 per MIG or shared GPU, at most 0.5 for price, a gang's spread penalty per GPU), so
/// running work is not moved for a tidier layout; below nothing that admission decides
/// (admission is locked before the compaction stage).
pub const KEEP_GPU: f64 = 2.0;

/// Reward for keeping one node in its previous pool mode (relabelling a node evicts what
/// runs on it).
pub const KEEP_NODE: f64 = 0.5;

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

impl Previous {
    /// Resolves `p` against `c`.
    pub fn resolve(c: &Cluster, p: &Placement) -> Previous {
        let usable = |n: NodeIdx, g: u32| c.nodes[n].usable_gpus().any(|x| x.index == g);
        let node = |name: &str| c.node_index.get(name).copied();
        let workload: BTreeMap<&str, usize> = c
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| (w.name.as_str(), i))
            .collect();
        let mut out = Previous {
            node_mode: vec![None; c.nodes.len()],
            ..Default::default()
        };
        for np in &p.pools {
            if let Some(n) = node(&np.node) {
                out.node_mode[n] = Some(np.mode);
            }
        }
        for l in &p.mig_layouts {
            if let Some(n) = node(&l.node).filter(|n| usable(*n, l.gpu)) {
                out.mig_layouts.insert((n, l.gpu), l.profiles.clone());
            }
        }
        for w in &p.workloads {
            let Some(&wi) = workload.get(w.name.as_str()) else {
                continue;
            };
            let mut gangs = Vec::new();
            'gang: for g in &w.gangs {
                let mut nodes: GangNodes = Vec::new();
                for ng in &g.nodes {
                    let Some(n) = node(&ng.node) else {
                        continue 'gang;
                    };
                    if ng.gpus.is_empty() || !ng.gpus.iter().all(|x| usable(n, *x)) {
                        continue 'gang;
                    }
                    nodes.push((n, ng.gpus.clone()));
                }
                if !nodes.is_empty() {
                    gangs.push(nodes);
                }
            }
            if !gangs.is_empty() {
                out.gangs.insert(wi, gangs);
            }
            let mig: Vec<(NodeIdx, u32, String)> = w
                .mig_instances
                .iter()
                .filter_map(|i| {
                    node(&i.node)
                        .filter(|n| usable(*n, i.gpu))
                        .map(|n| (n, i.gpu, i.profile.clone()))
                })
                .collect();
            if !mig.is_empty() {
                out.mig_instances.insert(wi, mig);
            }
            let shares: Vec<(NodeIdx, u32, u32)> = w
                .shares
                .iter()
                .filter_map(|s| {
                    node(&s.node)
                        .filter(|n| usable(*n, s.gpu))
                        .map(|n| (n, s.gpu, s.replicas))
                })
                .collect();
            if !shares.is_empty() {
                out.shares.insert(wi, shares);
            }
            let packed: Vec<(NodeIdx, Vec<u32>, u32)> = w
                .packed
                .iter()
                .filter_map(|s| {
                    node(&s.node)
                        .filter(|n| s.gpus.iter().all(|g| usable(*n, *g)))
                        .map(|n| (n, s.gpus.clone(), s.replicas))
                })
                .collect();
            if !packed.is_empty() {
                out.packed.insert(wi, packed);
            }
        }
        out
    }

    /// Whether there is anything to keep.
    pub fn is_empty(&self) -> bool {
        self.node_mode.iter().all(Option::is_none)
            && self.gangs.is_empty()
            && self.mig_layouts.is_empty()
            && self.shares.is_empty()
            && self.packed.is_empty()
    }

    /// GPUs each workload's gangs held per node.
    pub fn gang_gpus_by_node(&self) -> BTreeMap<(usize, NodeIdx), u32> {
        let mut m = BTreeMap::new();
        for (w, gangs) in &self.gangs {
            for g in gangs {
                for (n, gpus) in g {
                    *m.entry((*w, *n)).or_default() += gpus.len() as u32;
                }
            }
        }
        m
    }

    /// Packed replicas each workload held per node.
    pub fn packed_by_node(&self) -> BTreeMap<(usize, NodeIdx), u32> {
        let mut m = BTreeMap::new();
        for (w, entries) in &self.packed {
            for (n, _, k) in entries {
                *m.entry((*w, *n)).or_default() += *k;
            }
        }
        m
    }

    /// Adds the previous MIG layouts to the model as current layouts
    /// (`mig layout ... current=#true`) on GPUs whose layout the files do not declare,
    /// fixed or current: after an apply, that is what the GPUs have.
    pub fn current_layouts(&self, c: &mut Cluster) {
        let declared: std::collections::BTreeSet<(NodeIdx, u32)> = c
            .mig
            .layouts
            .iter()
            .flat_map(|l| {
                let c = &*c;
                l.nodes.iter().flat_map(move |&n| {
                    c.nodes[n]
                        .gpus
                        .iter()
                        .filter(move |g| l.gpus.is_empty() || l.gpus.contains(&g.index))
                        .map(move |g| (n, g.index))
                })
            })
            .collect();
        for ((n, g), profiles) in &self.mig_layouts {
            if declared.contains(&(*n, *g)) || profiles.is_empty() {
                continue;
            }
            c.mig.layouts.push(crate::model::MigLayout {
                span: Default::default(),
                nodes: vec![*n],
                gpus: vec![*g],
                profiles: profiles.clone(),
                profile_spans: Vec::new(),
                current: true,
                previous: true,
            });
        }
    }
}

/// Compares `now` with `before` (both resolved against the same model).
pub fn moves(before: &Previous, now: &Previous) -> Moves {
    let mut m = Moves::default();
    for (w, gangs) in &now.gangs {
        let old = before.gangs.get(w).cloned().unwrap_or_default();
        let mut old: Vec<GangNodes> = old.into_iter().map(sorted).collect();
        let mut unmatched = 0u32;
        for g in gangs {
            let g = sorted(g.clone());
            if let Some(i) = old.iter().position(|o| *o == g) {
                old.swap_remove(i);
                m.gangs_kept += 1;
            } else {
                unmatched += 1;
            }
        }
        // A gang that did not exist before (more replicas) is not a move.
        m.gangs_moved += unmatched.min(old.len() as u32);
    }
    let keyed = |entries: &[(NodeIdx, Vec<u32>, u32)]| {
        let mut b: BTreeMap<(NodeIdx, Vec<u32>), u32> = BTreeMap::new();
        for (n, g, k) in entries {
            *b.entry((*n, g.clone())).or_default() += k;
        }
        b
    };
    let mut compare = |a: BTreeMap<(NodeIdx, Vec<u32>), u32>,
                       b: BTreeMap<(NodeIdx, Vec<u32>), u32>| {
        let total_a: u32 = a.values().sum();
        let total_b: u32 = b.values().sum();
        let kept: u32 = b
            .iter()
            .map(|(k, v)| (*v).min(a.get(k).copied().unwrap_or(0)))
            .sum();
        m.replicas_kept += kept;
        m.replicas_moved += total_a.min(total_b) - kept;
    };
    let workloads: std::collections::BTreeSet<usize> = before
        .mig_instances
        .keys()
        .chain(now.mig_instances.keys())
        .chain(before.shares.keys())
        .chain(now.shares.keys())
        .chain(before.packed.keys())
        .chain(now.packed.keys())
        .copied()
        .collect();
    for w in workloads {
        let mig = |p: &Previous| {
            let v: Vec<(NodeIdx, Vec<u32>, u32)> = p
                .mig_instances
                .get(&w)
                .map(|v| v.iter().map(|(n, g, _)| (*n, vec![*g], 1)).collect())
                .unwrap_or_default();
            keyed(&v)
        };
        compare(mig(before), mig(now));
        let shares = |p: &Previous| {
            let v: Vec<(NodeIdx, Vec<u32>, u32)> = p
                .shares
                .get(&w)
                .map(|v| v.iter().map(|(n, g, k)| (*n, vec![*g], *k)).collect())
                .unwrap_or_default();
            keyed(&v)
        };
        compare(shares(before), shares(now));
        let packed = |p: &Previous| keyed(p.packed.get(&w).map(Vec::as_slice).unwrap_or(&[]));
        compare(packed(before), packed(now));
    }
    m.nodes_changed = before
        .node_mode
        .iter()
        .zip(&now.node_mode)
        .filter(|(a, b)| a.is_some() && b.is_some() && a != b)
        .count() as u32;
    let gpus: std::collections::BTreeSet<&(NodeIdx, u32)> = before
        .mig_layouts
        .keys()
        .chain(now.mig_layouts.keys())
        .collect();
    m.mig_gpus_changed = gpus
        .into_iter()
        .filter(|k| {
            let mut a = before.mig_layouts.get(k).cloned().unwrap_or_default();
            let mut b = now.mig_layouts.get(k).cloned().unwrap_or_default();
            a.sort();
            b.sort();
            a != b
        })
        .count() as u32;
    m
}

fn sorted(mut g: GangNodes) -> GangNodes {
    for (_, gpus) in g.iter_mut() {
        gpus.sort_unstable();
    }
    g.sort();
    g
}
