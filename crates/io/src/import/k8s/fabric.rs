//! The fabric from node labels: multi-node NVLink domains from `nvidia.com/gpu.clique`
//! (GB200 NVL72: `<cluster UUID>.<clique id>`) or Topograph's
//! `network.topology.kubernetes.io/accelerator`, and switch tiers from the topology
//! labels Kueue TAS, Volcano HyperNodes and Topograph read. Which key is which tier is
//! `--tier leaf=KEY` etc.; without it, the first family of [`FAMILIES`] whose keys the
//! nodes carry.

use super::read::{Locator, RawNode};
use super::{GP738, Options};
use crate::diag::Diagnostic;
use crate::import::names::{one_pattern, sanitize, unique};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) const CLIQUE: &str = "nvidia.com/gpu.clique";
pub(crate) const ACCELERATOR: &str = "network.topology.kubernetes.io/accelerator";

/// Tier names, closest first.
pub(crate) const TIERS: [&str; 3] = ["leaf", "spine", "core"];

/// Known label families and their keys for leaf, spine and core.
pub(crate) const FAMILIES: &[(&str, [Option<&str>; 3])] = &[
    (
        "Topograph / Kueue TAS",
        [
            Some("network.topology.kubernetes.io/block"),
            Some("network.topology.kubernetes.io/spine"),
            Some("network.topology.kubernetes.io/datacenter"),
        ],
    ),
    (
        "EKS",
        [
            Some("topology.k8s.aws/network-node-layer-3"),
            Some("topology.k8s.aws/network-node-layer-2"),
            Some("topology.k8s.aws/network-node-layer-1"),
        ],
    ),
    (
        "GKE",
        [
            Some("cloud.google.com/gce-topology-subblock"),
            Some("cloud.google.com/gce-topology-block"),
            None,
        ],
    ),
];

/// A multi-node NVLink domain.
#[derive(Clone, Debug, Serialize)]
pub struct Domain {
    pub name: String,
    pub nodes: String,
    /// `key=value` it comes from.
    pub label: String,
}

/// A switch (group) of one tier.
#[derive(Clone, Debug, Serialize)]
pub struct Switch {
    pub tier: &'static str,
    pub name: String,
    /// `key=value` it comes from.
    pub label: String,
    /// Its nodes (leaves only).
    pub nodes: Option<String>,
    pub children: Vec<Switch>,
}

/// The fabric the labels describe.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fabric {
    /// The label key of each tier used (leaf first), after `--tier`.
    pub tiers: Vec<(&'static str, String)>,
    /// The family the default keys came from.
    pub family: Option<&'static str>,
    pub nvlink: Vec<Domain>,
    pub switches: Vec<Switch>,
    /// Nodes without a leaf value (in the [`UNLABELLED`] leaf).
    pub outside: Vec<String>,
}

/// The leaf holding the nodes without a leaf label.
pub(crate) const UNLABELLED: &str = "no-leaf-label";

pub(crate) fn build(
    nodes: &[&RawNode],
    loc: &Locator,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Fabric {
    let (keys, family) = tier_keys(nodes, opts, diags);
    let mut used = BTreeSet::new();
    let nvlink = domains(nodes, &mut used);
    let tiers: Vec<(&'static str, String)> = TIERS.iter().copied().zip(keys).collect();
    let (mut switches, outside) = if tiers.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        tree(nodes, &tiers, loc, &mut used, diags)
    };
    // gpuplan needs every node under a leaf once there is a fabric: the nodes without
    // the leaf label share one leaf of their own (flagged by the import's report).
    if let (false, Some((_, key))) = (outside.is_empty(), tiers.first()) {
        switches.push(Switch {
            tier: "leaf",
            name: crate::import::names::unique(UNLABELLED, &mut used),
            label: format!("no {key} label"),
            nodes: Some(crate::import::names::one_pattern(&outside)),
            children: Vec::new(),
        });
    }
    Fabric {
        tiers,
        family,
        nvlink,
        switches,
        outside,
    }
}

/// The keys of the tiers in use, closest first: the defaults of the first family the
/// nodes carry, then `--tier` (an empty key turns a tier off). A tier without one below
/// it moves down (a spine key alone is the leaf).
fn tier_keys(
    nodes: &[&RawNode],
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<String>, Option<&'static str>) {
    let present = |k: &str| nodes.iter().any(|n| n.labels.contains_key(k));
    let mut keys: [Option<String>; 3] = [None, None, None];
    let mut family = None;
    if let Some((name, fam)) = FAMILIES
        .iter()
        .find(|(_, ks)| ks.iter().flatten().any(|k| present(k)))
    {
        family = Some(*name);
        for (slot, k) in keys.iter_mut().zip(fam) {
            *slot = k.filter(|k| present(k)).map(str::to_string);
        }
    }
    for (tier, key) in &opts.tiers {
        let Some(i) = TIERS.iter().position(|t| t == tier) else {
            continue;
        };
        if !key.is_empty() && !present(key) {
            diags.push(
                Diagnostic::warning(
                    GP738,
                    format!("`--tier {tier}={key}`: no GPU node has label `{key}`"),
                )
                .with_help("check the key against `kubectl get nodes --show-labels`"),
            );
        }
        keys[i] = Some(key.clone()).filter(|k| !k.is_empty() && present(k));
    }
    (keys.into_iter().flatten().collect(), family)
}

/// Multi-node NVLink domains: nodes of one clique.
fn domains(nodes: &[&RawNode], used: &mut BTreeSet<String>) -> Vec<Domain> {
    let mut groups: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for n in nodes {
        let found = [CLIQUE, ACCELERATOR].iter().find_map(|k| {
            n.labels
                .get(*k)
                .filter(|v| !v.is_empty())
                .map(|v| (*k, v.as_str()))
        });
        if let Some(kv) = found {
            groups.entry(kv).or_default().push(n.name.clone());
        }
    }
    groups
        .into_iter()
        .map(|((key, value), names)| {
            let base = match value.rsplit_once('.') {
                Some((cluster, id)) if key == CLIQUE => {
                    let c = sanitize(cluster, 63);
                    format!(
                        "nvl-{}-{}",
                        &c[..c.len().min(8)].trim_end_matches('-'),
                        sanitize(id, 40)
                    )
                }
                _ => format!("nvl-{}", sanitize(value, 50)),
            };
            Domain {
                name: unique(&sanitize(&base, 58), used),
                nodes: one_pattern(&names),
                label: format!("{key}={value}"),
            }
        })
        .collect()
}

/// Switches of one tier: its label value, its nodes (all below it) and its children.
#[derive(Clone, Default)]
struct Group {
    members: Vec<String>,
    children: Vec<String>,
}

/// The switch tree, and the nodes without a leaf value.
fn tree(
    nodes: &[&RawNode],
    tiers: &[(&'static str, String)],
    loc: &Locator,
    used: &mut BTreeSet<String>,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Switch>, Vec<String>) {
    let by_name: BTreeMap<&str, &RawNode> = nodes.iter().map(|n| (n.name.as_str(), *n)).collect();
    let mut levels: Vec<BTreeMap<String, Group>> = vec![BTreeMap::new(); tiers.len()];
    let mut outside = Vec::new();
    for n in nodes {
        match n.labels.get(&tiers[0].1) {
            Some(v) if !v.is_empty() => levels[0]
                .entry(v.clone())
                .or_default()
                .members
                .push(n.name.clone()),
            _ => outside.push(n.name.clone()),
        }
    }
    // Top-level groups: (level, value).
    let mut top: Vec<(usize, String)> = Vec::new();
    for level in 1..tiers.len() {
        let key = &tiers[level].1;
        let below: Vec<(String, Vec<String>)> = levels[level - 1]
            .iter()
            .map(|(v, g)| (v.clone(), g.members.clone()))
            .collect();
        for (value, members) in below {
            match parent(
                &members,
                key,
                &by_name,
                tiers[level - 1].0,
                &value,
                loc,
                diags,
            ) {
                Some(p) => {
                    let g = levels[level].entry(p).or_default();
                    g.children.push(value);
                    g.members.extend(members);
                }
                None => top.push((level - 1, value)),
            }
        }
    }
    let last = tiers.len() - 1;
    top.extend(levels[last].keys().map(|v| (last, v.clone())));
    top.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let switches = top
        .iter()
        .map(|(level, value)| switch(&levels, tiers, *level, value, used))
        .collect();
    (switches, outside)
}

/// The value of `key` that the members share; a warning and the smallest value when
/// they do not; `None` when none has it.
fn parent(
    members: &[String],
    key: &str,
    by_name: &BTreeMap<&str, &RawNode>,
    tier: &str,
    value: &str,
    loc: &Locator,
    diags: &mut Vec<Diagnostic>,
) -> Option<String> {
    let values: BTreeSet<Option<&String>> = members
        .iter()
        .filter_map(|m| by_name.get(m.as_str()))
        .map(|n| n.labels.get(key))
        .collect();
    let first = values.iter().flatten().next().map(|v| v.to_string());
    if values.len() > 1 {
        // The first node that does not say the chosen value.
        let node = members
            .iter()
            .filter_map(|m| by_name.get(m.as_str()))
            .find(|n| n.labels.get(key) != first.as_ref());
        let mut d = Diagnostic::warning(
            GP738,
            format!("the nodes of {tier} `{value}` do not share one `{key}` value: the {tier} is put under {}", first.as_deref().unwrap_or("nothing")),
        )
        .with_help("topology labels must form a tree: every node under one switch has the same switch above it");
        if let Some(n) = node {
            d = d.at(loc.key(n.index, key, &n.name), "here");
        }
        diags.push(d);
    }
    first
}

fn switch(
    levels: &[BTreeMap<String, Group>],
    tiers: &[(&'static str, String)],
    level: usize,
    value: &str,
    used: &mut BTreeSet<String>,
) -> Switch {
    let (tier, key) = &tiers[level];
    let name = unique(&sanitize(value, 58), used);
    let Some(g) = levels[level].get(value) else {
        return Switch {
            tier,
            name,
            label: format!("{key}={value}"),
            nodes: None,
            children: Vec::new(),
        };
    };
    let mut children: Vec<&String> = g.children.iter().collect();
    children.sort();
    Switch {
        tier,
        name,
        label: format!("{key}={value}"),
        nodes: (level == 0).then(|| one_pattern(&g.members)),
        children: children
            .into_iter()
            .map(|c| switch(levels, tiers, level - 1, c, used))
            .collect(),
    }
}
