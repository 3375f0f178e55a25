//! topology.conf: switches (tree) and blocks into gpuplan's fabric.

use super::conf::{Record, hostlist};
use super::describe::Described;
use super::nodes::Node;
use super::{GP741, GP744, GP746, GP755};
use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind};
use crate::source::Span;
use std::collections::{BTreeMap, BTreeSet};

/// The fabric: leaves (with spines and cores above) and multi-node NVLink domains.
#[derive(Default)]
pub(super) struct Fabric {
    /// Switch name -> (tier, children switches, nodes).
    pub(super) switches: BTreeMap<String, (u8, Vec<String>, Vec<String>)>,
    pub(super) nvlink: Vec<(String, Vec<String>)>,
    /// Nodes under no leaf, put under one catch-all leaf.
    pub(super) orphans: Vec<String>,
    pub(super) no_topology: bool,
    /// What topology.conf says that the output cannot (a node under a second switch).
    pub(super) left_out: Vec<Item>,
}

/// Switches as topology.conf declares them: name -> (children, nodes, span).
type Raw = BTreeMap<String, (Vec<String>, Vec<String>, Span)>;

pub(super) fn fabric(
    records: &[Record],
    declared: &BTreeMap<String, Node>,
    nodes: &[Described],
    have_file: bool,
    diags: &mut Vec<Diagnostic>,
) -> Fabric {
    let known: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let mut f = Fabric {
        no_topology: !have_file,
        ..Fabric::default()
    };
    let raw = read_switches(records, declared, nodes, &mut f, diags);
    let placed = place_switches(&raw, &mut f, diags);
    f.orphans = known
        .iter()
        .filter(|n| !placed.contains_key(**n))
        .map(|n| n.to_string())
        .collect();
    if !f.orphans.is_empty() && have_file {
        diags.push(
            Diagnostic::warning(
                GP744,
                format!(
                    "{} node(s) are under no switch of topology.conf ({}); one leaf `unlisted` holds them",
                    f.orphans.len(),
                    crate::units::compress_names(&f.orphans).join(",")
                ),
            )
            .with_help("gpuplan needs every node under a leaf; put them where they are cabled"),
        );
    }
    f
}

/// The `SwitchName` and `BlockName` records (a block is a leaf; a block of multi-node
/// NVLink nodes is also an NVLink domain, pushed to `f.nvlink`).
fn read_switches(
    records: &[Record],
    declared: &BTreeMap<String, Node>,
    nodes: &[Described],
    f: &mut Fabric,
    diags: &mut Vec<Diagnostic>,
) -> Raw {
    let known: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let multi_node: BTreeSet<&str> = nodes
        .iter()
        .filter(|n| n.hardware.lines.iter().any(|(m, _)| m.starts_with("gb")))
        .map(|n| n.name.as_str())
        .collect();
    let expand = |r: &Record, key: &str, diags: &mut Vec<Diagnostic>| -> Vec<String> {
        let Some(p) = r.get(key) else {
            return Vec::new();
        };
        let names = hostlist(&p.value).unwrap_or_else(|e| {
            diags.push(
                Diagnostic::warning(GP741, format!("`{}`: {e}", p.value))
                    .at(p.span, "this hostlist")
                    .with_help("write names as Slurm hostlists"),
            );
            Vec::new()
        });
        if key == "nodes" {
            let what = format!("topology.conf `{}`", r.pairs[0].value);
            super::undeclared(&names, |x| declared.contains_key(x), &what, p.span, diags);
        }
        names
    };
    let mut raw = Raw::new();
    for r in records {
        match r.kind() {
            "switchname" => {
                let name = crate::import::names::sanitize(r.value("switchname").unwrap_or(""), 63);
                let members: Vec<String> = expand(r, "nodes", diags)
                    .into_iter()
                    .filter(|n| known.contains(n.as_str()))
                    .collect();
                let children: Vec<String> = expand(r, "switches", diags)
                    .iter()
                    .map(|s| crate::import::names::sanitize(s, 63))
                    .collect();
                raw.insert(name, (children, members, r.span));
            }
            "blockname" => {
                let name = crate::import::names::sanitize(r.value("blockname").unwrap_or(""), 63);
                let members: Vec<String> = expand(r, "nodes", diags)
                    .into_iter()
                    .filter(|n| known.contains(n.as_str()))
                    .collect();
                if members.is_empty() {
                    continue;
                }
                if members.iter().all(|m| multi_node.contains(m.as_str())) {
                    f.nvlink.push((name.clone(), members.clone()));
                }
                raw.entry(format!("{name}-leaf"))
                    .or_insert((Vec::new(), members, r.span));
            }
            _ => {}
        }
    }
    raw
}

/// A switch's height: leaves 0, then 1 + the highest child.
fn height(s: &str, raw: &Raw, depth: usize) -> usize {
    match raw.get(s) {
        Some((children, _, _)) if !children.is_empty() && depth < 16 => children
            .iter()
            .map(|c| 1 + height(c, raw, depth + 1))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// Every switch at its tier into `f.switches` (deeper than core left out, a node under a
/// second leaf kept under the first); returns each placed node's leaf.
fn place_switches(
    raw: &Raw,
    f: &mut Fabric,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, String> {
    let mut placed: BTreeMap<String, String> = BTreeMap::new();
    for (name, (children, members, span)) in raw {
        let h = height(name, raw, 0);
        if h > 2 {
            diags.push(
                Diagnostic::warning(
                    GP746,
                    format!("switch `{name}` is {h} levels above its nodes; gpuplan has leaf, spine and core, so it is left out"),
                )
                .at(*span, "this switch")
                .with_help("describe deeper fabrics by hand (docs/language.md `fabric`)"),
            );
            continue;
        }
        if !children.is_empty() && !members.is_empty() {
            diags.push(
                Diagnostic::warning(
                    GP746,
                    format!(
                        "switch `{name}` has both nodes and switches; its switches are ignored"
                    ),
                )
                .at(*span, "this switch")
                .with_help("a gpuplan leaf holds nodes, a spine holds leaves"),
            );
        }
        let children = if members.is_empty() {
            children.clone()
        } else {
            Vec::new()
        };
        let tier = if members.is_empty() { h as u8 } else { 0 };
        let mut members = members.clone();
        if tier == 0 {
            members.retain(|m| match placed.get(m) {
                None => {
                    placed.insert(m.clone(), name.clone());
                    true
                }
                Some(first) => {
                    twice(name, m, first, *span, diags, &mut f.left_out);
                    false
                }
            });
        }
        f.switches.insert(name.clone(), (tier, children, members));
    }
    placed
}

/// GP755: a node under a second leaf (gpuplan cables a node to one leaf, GP009): kept
/// under the first (by switch name), the second switch's claim left out.
fn twice(
    leaf: &str,
    node: &str,
    first: &str,
    span: Span,
    diags: &mut Vec<Diagnostic>,
    left_out: &mut Vec<Item>,
) {
    diags.push(
        Diagnostic::warning(
            GP755,
            format!("topology.conf puts node `{node}` under switch `{leaf}` and under switch `{first}`: kept under `{first}` only, so the import is incomplete"),
        )
        .at(span, "the second switch of this node")
        .with_help("a node is cabled to one leaf switch: remove it from one of the two lines"),
    );
    left_out.push(Item::new(
        ItemKind::Switch,
        leaf,
        GP755,
        format!("node `{node}` is also under `{first}`; kept there only"),
    ));
}
