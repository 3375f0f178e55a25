//! topology.conf: the switch tree (`topology/tree`), or blocks (`topology/block`, Slurm
//! 24.05 and later) made of multi-node NVLink domains or leaf switches.

use crate::model::SwitchTier;
use crate::render::facts::{Facts, range};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// A `SwitchName=` line, or a `BlockName=` line (`switches` none).
#[derive(Serialize)]
pub(super) struct Switch {
    pub name: String,
    pub nodes: Option<String>,
    pub switches: Option<String>,
}

/// The fabric as Slurm sees it.
pub(super) struct Topology {
    /// Switches with the planned nodes under them, leaves first; under one
    /// `gpuplan-root` when the fabric has several trees.
    pub switches: Vec<Switch>,
    /// Blocks (only when asked for): one per NVLink domain, else per leaf switch.
    pub blocks: Vec<Switch>,
    /// `BlockSizes`: the nodes of the smallest block.
    pub block_size: u32,
}

/// The switch tree of the planned nodes, and the blocks when `block`.
pub(super) fn of(f: &Facts, block: bool) -> Topology {
    let switches = switch_tree(f);
    if !block {
        return Topology {
            switches,
            blocks: Vec::new(),
            block_size: 0,
        };
    }
    let (blocks, block_size) = blocks(f);
    Topology {
        switches,
        blocks,
        block_size,
    }
}

/// Every switch with planned nodes or child switches, tier by tier from the leaves;
/// Slurm cannot place a job over disconnected trees, so several roots are joined under
/// one `gpuplan-root`.
fn switch_tree(f: &Facts) -> Vec<Switch> {
    let c = f.c;
    let planned: HashSet<&str> = f.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut switches = Vec::new();
    let mut top = Vec::new();
    // Switches kept so far (leaves first): a switch with none of the rendered nodes
    // below it (another scheduler's) is left out, and so is every reference to it.
    let mut kept: HashSet<usize> = HashSet::new();
    for tier in [SwitchTier::Leaf, SwitchTier::Spine, SwitchTier::Core] {
        for (si, s) in c
            .switches
            .iter()
            .enumerate()
            .filter(|(_, s)| s.tier == tier)
        {
            let nodes: Vec<String> = s
                .nodes
                .iter()
                .map(|ni| &c.nodes[*ni].name)
                .filter(|name| planned.contains(name.as_str()))
                .cloned()
                .collect();
            let children: Vec<String> = s
                .children
                .iter()
                .filter(|i| kept.contains(i))
                .map(|i| c.switches[*i].name.clone())
                .collect();
            if nodes.is_empty() && children.is_empty() {
                continue;
            }
            kept.insert(si);
            if s.parent.is_none() {
                top.push(s.name.clone());
            }
            switches.push(Switch {
                name: s.name.clone(),
                nodes: (!nodes.is_empty()).then(|| range(&nodes)),
                switches: (!children.is_empty()).then(|| range(&children)),
            });
        }
    }
    if top.len() > 1 {
        switches.push(Switch {
            name: "gpuplan-root".into(),
            nodes: None,
            switches: Some(range(&top)),
        });
    }
    switches
}

/// Blocks: multi-node NVLink domains when the cluster has them, else leaf switches,
/// with their planned nodes; and the size of the smallest (1 when there is none).
fn blocks(f: &Facts) -> (Vec<Switch>, u32) {
    let tier = if f.tier("nvlink").is_some() {
        "nvlink"
    } else {
        "leaf"
    };
    let mut doms: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for n in &f.nodes {
        if let Some(d) = n.domains.get(tier) {
            doms.entry(d.as_str()).or_default().push(n.name.clone());
        }
    }
    let size = doms.values().map(Vec::len).min().unwrap_or(1) as u32;
    let blocks = doms
        .into_iter()
        .map(|(d, nodes)| Switch {
            name: d.to_string(),
            nodes: Some(range(&nodes)),
            switches: None,
        })
        .collect();
    (blocks, size)
}
