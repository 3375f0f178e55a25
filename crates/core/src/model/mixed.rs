//! The planner's view of nodes with GPUs of several models (a node class with several
//! `gpus` lines): each such node becomes one node per model, so that every solver,
//! bound and check keeps a gang member, a replica and a MIG layout on GPUs of one model
//! without knowing why. [`crate::placement::Placement::merge_parts`] turns the parts
//! back into the node.
//!
//! The part of a node's first `gpus` line keeps the node's index and name (its GPU
//! indexes are the node's); each further line's part is a new node named
//! `NODE#J` (`PART_SEP`, J the line's number) whose GPUs are renumbered from 0. Parts share the
//! node's switches, pools, labels and capacity; its CPUs and host memory are divided
//! between them in proportion to their GPUs (a conservative split: a replica's CPU and
//! memory never come from two parts). A mixed node no pool pins is pinned to whole GPUs
//! (every part in one mode, so the node keeps one pool mode); in a MIG pool, the parts
//! whose model has no MIG hold whole GPUs.
//!
//! Decision: split in a view rather than teach every solver per-(node, model) capacity.
//! The solvers already keep one model per node group; the view keeps them unchanged and
//! exact for the parts.

use super::{Cluster, GpuGroup, NodeClass, NodeIdx, NvlinkDomain, Pool, PoolMode};
use std::collections::BTreeMap;

/// Separates a node's name from its part's number in the view (`tux0#1`).
pub const PART_SEP: char = '#';

/// The pool that pins mixed nodes no declared pool names (never in a placement the user
/// sees).
pub const WHOLE_POOL: &str = "#mixed-whole-gpu";

/// Where each part of the view lies on its node: view node name -> (node name, index of
/// the part's GPU 0 on the node).
#[derive(Clone, Debug, Default)]
pub struct Parts {
    pub of: BTreeMap<String, (String, u32)>,
    /// Node name -> its parts (index of the part's GPU 0, view node name), in order.
    pub by_node: BTreeMap<String, Vec<(u32, String)>>,
    /// View nodes pinned to whole GPUs ([`WHOLE_POOL`]).
    pub whole: std::collections::BTreeSet<String>,
}

impl Parts {
    /// The node and node-wide GPU index of GPU `gpu` of view node `name` (itself when it
    /// is not a part).
    pub fn locate(&self, name: &str, gpu: u32) -> (String, u32) {
        match self.of.get(name) {
            Some((node, first)) => (node.clone(), first + gpu),
            None => (name.to_string(), gpu),
        }
    }

    /// The view node and its GPU index of GPU `gpu` of node `name` (the inverse of
    /// [`Parts::locate`]).
    pub fn to_view(&self, name: &str, gpu: u32) -> (String, u32) {
        let part = self
            .by_node
            .get(name)
            .and_then(|ps| ps.iter().rev().find(|(first, _)| *first <= gpu));
        match part {
            Some((first, v)) => (v.clone(), gpu - first),
            None => (name.to_string(), gpu),
        }
    }

    /// The view nodes of node `name` (itself when it is not mixed).
    pub fn views_of(&self, name: &str) -> Vec<String> {
        match self.by_node.get(name) {
            Some(ps) => ps.iter().map(|(_, v)| v.clone()).collect(),
            None => vec![name.to_string()],
        }
    }

    /// The node a view node name stands for.
    pub fn node_of<'a>(&'a self, name: &'a str) -> &'a str {
        self.of.get(name).map_or(name, |(n, _)| n.as_str())
    }
}

/// The view with one node per model of every mixed node, or `None` when no node is
/// mixed.
pub fn split(c: &Cluster) -> Option<(Cluster, Parts)> {
    if !c.nodes.iter().any(|n| is_mixed(c, &n.class)) {
        return None;
    }
    let mut v = c.clone();
    let mut parts = Parts::default();
    // View class of each (class, line): the first line keeps the class's name.
    for k in c.classes.values().filter(|k| k.is_mixed()) {
        for (j, g) in k.gpu_groups.iter().enumerate() {
            v.classes.insert(part_name(&k.name, j), part_class(k, g, j));
        }
    }
    let mut whole_pool: Vec<NodeIdx> = Vec::new();
    // (node, line) -> view node index, for the NVLink domains and MIG layouts.
    let mut index: BTreeMap<(NodeIdx, usize), NodeIdx> = BTreeMap::new();
    for n in 0..c.nodes.len() {
        let Some(k) = c.classes.get(&c.nodes[n].class).filter(|k| k.is_mixed()) else {
            continue;
        };
        let pools: Vec<usize> = (0..c.pools.len())
            .filter(|&p| c.pools[p].nodes.contains(&n))
            .collect();
        if pools.is_empty() {
            whole_pool.push(n);
        }
        for (j, g) in k.gpu_groups.iter().enumerate() {
            let vi = if j == 0 { n } else { v.nodes.len() };
            index.insert((n, j), vi);
            let mut node = c.nodes[n].clone();
            node.class = part_name(&k.name, j);
            node.gpus
                .retain(|x| x.index >= g.first && x.index - g.first < g.count);
            for x in &mut node.gpus {
                x.index -= g.first;
                x.nvlink_domain = None;
            }
            let view_name = part_name(&c.nodes[n].name, j);
            let entry = parts.by_node.entry(c.nodes[n].name.clone()).or_default();
            entry.push((g.first, view_name));
            if j == 0 {
                node.mnnvl = c.nodes[n].mnnvl.clone();
                v.nodes[n] = node;
                continue;
            }
            node.name = part_name(&c.nodes[n].name, j);
            node.mnnvl = Vec::new();
            parts
                .of
                .insert(node.name.clone(), (c.nodes[n].name.clone(), g.first));
            v.node_index.insert(node.name.clone(), vi);
            v.nodes.push(node);
            for s in v.switches.iter_mut().filter(|s| s.nodes.contains(&n)) {
                s.nodes.push(vi);
            }
            join_pools(c, &mut v, &pools, g, vi, &mut whole_pool);
            if pools.is_empty() {
                whole_pool.push(vi);
            }
        }
    }
    parts.whole = whole_pool
        .iter()
        .map(|&n| v.nodes[n].name.clone())
        .collect();
    if !whole_pool.is_empty() {
        v.pools.push(Pool {
            name: WHOLE_POOL.to_string(),
            span: c.nodes[whole_pool[0]].span,
            mode: PoolMode::WholeGpu.as_str().to_string(),
            nodes: whole_pool,
            max_disrupted: None,
            scheduler: None,
            gpu_allocation: None,
        });
    }
    split_nvlink(c, &mut v, &index);
    split_layouts(c, &mut v, &index);
    v.refresh();
    one_model_gangs(c, &mut v);
    Some((v, parts))
}

/// A gang over several nodes is one Slurm job asking every node for GPUs of one type:
/// a class whose gangs span nodes and that accepts several models, one of them on mixed
/// nodes, keeps in the view only the model with the most usable GPUs (so no gang mixes
/// models, nor takes two parts of one node).
fn one_model_gangs(c: &Cluster, v: &mut Cluster) {
    let on_mixed: std::collections::BTreeSet<&str> = c
        .classes
        .values()
        .filter(|k| k.is_mixed())
        .flat_map(|k| k.gpu_groups.iter().filter_map(|g| g.model.as_deref()))
        .collect();
    for wi in 0..v.workloads.len() {
        let w = &v.workloads[wi];
        if w.kind != super::WorkloadKind::Training || w.gang_gpus <= v.gang_per_node(w) {
            continue;
        }
        let accepted: Vec<(&String, u32)> = v
            .model_stats
            .iter()
            .filter(|(m, _)| w.accepts(m))
            .map(|(m, s)| (m, s.gpus))
            .collect();
        if accepted.len() < 2 || !accepted.iter().any(|(m, _)| on_mixed.contains(m.as_str())) {
            continue;
        }
        // The most GPUs; the first name on a tie.
        let best = accepted
            .iter()
            .max_by_key(|(m, n)| (*n, std::cmp::Reverse(*m)))
            .map(|(m, _)| (*m).clone());
        v.workloads[wi].models = best.into_iter().collect();
    }
}

fn is_mixed(c: &Cluster, class: &str) -> bool {
    c.classes.get(class).is_some_and(NodeClass::is_mixed)
}

/// The view name of line `j` of class (or node) `name`.
fn part_name(name: &str, j: usize) -> String {
    if j == 0 {
        name.to_string()
    } else {
        format!("{name}{PART_SEP}{j}")
    }
}

/// Part `vi` (line `g`) joins the node's pools; a MIG pool's part whose model has no
/// MIG joins the whole-GPU pin instead.
fn join_pools(
    c: &Cluster,
    v: &mut Cluster,
    pools: &[usize],
    g: &GpuGroup,
    vi: NodeIdx,
    whole: &mut Vec<NodeIdx>,
) {
    let mig = g
        .model
        .as_ref()
        .and_then(|m| c.models.get(m))
        .is_some_and(|m| m.mig.is_some());
    for &p in pools {
        if PoolMode::from_decl(&c.pools[p].mode) == Some(PoolMode::Mig) && !mig {
            whole.push(vi);
        } else {
            v.pools[p].nodes.push(vi);
        }
    }
}

/// Line `g` (number `j`) of mixed class `k` as a class of its own: its GPUs numbered
/// from 0, the index sets cut to them, CPUs and memory in proportion to its GPUs.
fn part_class(k: &NodeClass, g: &GpuGroup, j: usize) -> NodeClass {
    let inside = |set: &Vec<u32>| -> Vec<u32> {
        set.iter()
            .filter(|&&i| i >= g.first && i - g.first < g.count)
            .map(|i| i - g.first)
            .collect()
    };
    let total = u64::from(k.gpu_count.max(1));
    let share = |x: u64| (x * u64::from(g.count) / total).max(1);
    let mut p = k.clone();
    p.name = part_name(&k.name, j);
    p.gpu_count = g.count;
    p.gpu_model = g.model.clone();
    p.gpu_groups = vec![GpuGroup {
        model: g.model.clone(),
        first: 0,
        count: g.count,
    }];
    p.nvlink_domains = k
        .nvlink_domains
        .iter()
        .map(inside)
        .filter(|s| !s.is_empty())
        .collect();
    for x in &mut p.numa {
        x.gpus = inside(&x.gpus);
    }
    for x in &mut p.pcie_switches {
        x.gpus = inside(&x.gpus);
    }
    p.gpu_bus_ids = k
        .gpu_bus_ids
        .iter()
        .skip(g.first as usize)
        .take(g.count as usize)
        .cloned()
        .collect();
    let cores = u64::from(k.sockets) * u64::from(k.cores_per_socket);
    p.sockets = 1;
    p.cores_per_socket = share(cores) as u32;
    p.memory = k.memory.map(|m| crate::units::Bytes(share(m.0)));
    p
}

/// NVLink domains: a node-local domain of a mixed node keeps the members of its first
/// line's part; the members on other parts move to a domain of their part. Members of
/// multi-node domains outside a node's first line are dropped.
fn split_nvlink(c: &Cluster, v: &mut Cluster, index: &BTreeMap<(NodeIdx, usize), NodeIdx>) {
    let mut extra: Vec<NvlinkDomain> = Vec::new();
    for d in v.nvlink_domains.iter_mut() {
        let mut moved: BTreeMap<NodeIdx, Vec<(NodeIdx, u32)>> = BTreeMap::new();
        let mut kept = Vec::new();
        for &(n, gi) in &d.members {
            match locate_part(c, n, gi) {
                Some((j, local)) if j > 0 => {
                    let vi = index[&(n, j)];
                    moved.entry(vi).or_default().push((vi, local));
                }
                _ => kept.push((n, gi)),
            }
        }
        d.members = kept;
        if d.multi_node {
            continue;
        }
        for (vi, members) in moved {
            extra.push(NvlinkDomain {
                name: format!("{}{PART_SEP}{vi}", d.name),
                span: d.span,
                multi_node: false,
                members,
            });
        }
    }
    v.nvlink_domains.extend(extra);
    for (di, d) in v.nvlink_domains.iter().enumerate() {
        for &(n, gi) in &d.members {
            if let Some(g) = v.nodes[n].gpus.iter_mut().find(|g| g.index == gi) {
                g.nvlink_domain = Some(di);
            }
        }
    }
}

/// The line `j` of node `n`'s class that GPU `gi` is on, and its index in that line.
fn locate_part(c: &Cluster, n: NodeIdx, gi: u32) -> Option<(usize, u32)> {
    let k = c.classes.get(&c.nodes[n].class).filter(|k| k.is_mixed())?;
    k.gpu_groups
        .iter()
        .position(|g| gi >= g.first && gi - g.first < g.count)
        .map(|j| (j, gi - k.gpu_groups[j].first))
}

/// MIG layouts (fixed and current) naming GPUs of a mixed node's further lines apply to
/// those GPUs of its parts; a layout for every GPU applies to the parts whose model has
/// MIG.
fn split_layouts(c: &Cluster, v: &mut Cluster, index: &BTreeMap<(NodeIdx, usize), NodeIdx>) {
    let mut extra = Vec::new();
    for l in &c.mig.layouts {
        let mut by_part: BTreeMap<(usize, Vec<u32>), Vec<NodeIdx>> = BTreeMap::new();
        for &n in &l.nodes {
            let Some(k) = c.classes.get(&c.nodes[n].class).filter(|k| k.is_mixed()) else {
                continue;
            };
            for (j, g) in k.gpu_groups.iter().enumerate().skip(1) {
                let gpus: Vec<u32> = l
                    .gpus
                    .iter()
                    .filter(|&&i| i >= g.first && i - g.first < g.count)
                    .map(|i| i - g.first)
                    .collect();
                let mig = g
                    .model
                    .as_ref()
                    .and_then(|m| c.models.get(m))
                    .is_some_and(|m| m.mig.is_some());
                if (l.gpus.is_empty() && mig) || !gpus.is_empty() {
                    by_part.entry((j, gpus)).or_default().push(index[&(n, j)]);
                }
            }
        }
        for ((_, gpus), nodes) in by_part {
            let mut p = l.clone();
            p.nodes = nodes;
            p.gpus = gpus;
            extra.push(p);
        }
    }
    v.mig.layouts.extend(extra);
}
