//! topology.yaml (Slurm 25.05 and later, topology.yaml(5)): several named topologies
//! in one cluster, each partition naming its own (`PartitionName=... Topology=`). One
//! topology per fabric family: a `block` topology of the multi-node NVLink domains
//! (a GB200 NVL72 rack is one block) for the partitions whose nodes all lie in such
//! domains, and a `tree` topology of the leaf/spine/core switches (every rendered node
//! under its switches, as topology.conf has them) for the others. The tree is the
//! cluster default (slurmctld's own traffic follows it) when there is one.
//!
//! Slurm reads topology.yaml instead of topology.conf and `TopologyPlugin` when it
//! exists, so from 25.05 neither is written; 22.05 to 24.11 keep topology.conf.

use super::topology::{Switch, Topology};
use crate::render::facts::{Facts, range};
use serde::Serialize;
use std::collections::BTreeMap;

/// The first Slurm that reads topology.yaml and partition `Topology=`.
pub(super) const TOPOLOGY_YAML: [u32; 2] = [25, 5];

/// The tree topology's name.
pub(super) const TREE: &str = "fabric";
/// The block topology's name (multi-node NVLink domains).
pub(super) const BLOCK: &str = "nvlink";

/// One switch of a tree topology.
#[derive(Serialize)]
pub(super) struct YamlSwitch {
    name: String,
    children: Option<String>,
    nodes: Option<String>,
}

/// One block of a block topology.
#[derive(Serialize)]
pub(super) struct YamlBlock {
    name: String,
    nodes: String,
}

/// One named topology: `tree` (switches) or `block` (block sizes and blocks).
#[derive(Serialize)]
pub(super) struct Named {
    pub name: &'static str,
    pub default: bool,
    switches: Vec<YamlSwitch>,
    block_sizes: Vec<u32>,
    blocks: Vec<YamlBlock>,
}

/// Every topology and the one each pool's partition names.
pub(super) struct Topologies {
    pub list: Vec<Named>,
    /// Pool -> topology name.
    pub of_pool: BTreeMap<String, &'static str>,
}

/// The topologies of the rendered nodes: the tree of `topo.switches` (as topology.conf
/// would have it), the blocks of the multi-node NVLink domains, and each pool's.
pub(super) fn of(f: &Facts, topo: &Topology) -> Topologies {
    let mut list = Vec::new();
    if !topo.switches.is_empty() {
        list.push(Named {
            name: TREE,
            default: true,
            switches: topo.switches.iter().map(yaml_switch).collect(),
            block_sizes: Vec::new(),
            blocks: Vec::new(),
        });
    }
    let mut doms: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for n in &f.nodes {
        if let Some(d) = n.domains.get("nvlink") {
            doms.entry(d.as_str()).or_default().push(n.name.clone());
        }
    }
    if !doms.is_empty() {
        let size = doms.values().map(Vec::len).min().unwrap_or(1) as u32;
        list.push(Named {
            name: BLOCK,
            default: list.is_empty(),
            switches: Vec::new(),
            block_sizes: vec![size],
            blocks: doms
                .into_iter()
                .map(|(d, nodes)| YamlBlock {
                    name: d.to_string(),
                    nodes: range(&nodes),
                })
                .collect(),
        });
    }
    let has = |name: &str| list.iter().any(|t| t.name == name);
    let mut of_pool = BTreeMap::new();
    for p in &f.pools {
        let in_blocks = f
            .nodes_named(&p.nodes)
            .all(|n| n.domains.contains_key("nvlink"));
        let name = if in_blocks && has(BLOCK) {
            Some(BLOCK)
        } else if has(TREE) {
            Some(TREE)
        } else {
            None
        };
        if let Some(name) = name {
            of_pool.insert(p.name.clone(), name);
        }
    }
    Topologies { list, of_pool }
}

fn yaml_switch(s: &Switch) -> YamlSwitch {
    YamlSwitch {
        name: s.name.clone(),
        children: s.switches.clone(),
        nodes: s.nodes.clone(),
    }
}
