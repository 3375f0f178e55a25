//! Pools from slurm.conf `PartitionName` lines, their `Nodes=` read through `NodeSet`s
//! (`Nodes=` lists and `Feature=` filters), `ALL` and hostlists. A gpuplan node is in
//! one pool: a node in several partitions joins the pool of its first (the default
//! partition first, then by name); every partition that loses nodes to another is
//! said in a note above the pools and flagged, so that none disappears unseen.

use super::conf::{Record, hostlist};
use super::describe::Described;
use super::nodes::Node;
use super::{GP741, GP744};
use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind};
use std::collections::{BTreeMap, BTreeSet};

/// Pools and the notes on partitions that overlap.
#[derive(Default)]
pub(super) struct Pools {
    /// Partition -> the nodes of its pool.
    pub(super) pools: BTreeMap<String, Vec<String>>,
    /// Partition -> a note (its nodes in other pools), written above the pools.
    pub(super) notes: BTreeMap<String, String>,
    /// Flagged items for the report (overlapping partitions).
    pub(super) flags: Vec<Item>,
}

/// `NodeSet` name -> its member nodes.
fn nodesets(
    records: &[Record],
    nodes: &BTreeMap<String, Node>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind() == "nodeset") {
        let Some(name) = r.value("nodeset") else {
            continue;
        };
        let mut members: BTreeSet<String> = BTreeSet::new();
        if let Some(p) = r.get("nodes") {
            match hostlist(&p.value) {
                Ok(n) => {
                    super::undeclared(&n, |x| nodes.contains_key(x), "NodeSet", p.span, diags);
                    members.extend(n);
                }
                Err(e) => diags.push(
                    Diagnostic::warning(GP741, format!("NodeSet `{name}` Nodes: {e}"))
                        .at(p.span, "this hostlist")
                        .with_help("write node names as Slurm hostlists"),
                ),
            }
        }
        if let Some(f) = r.value("feature") {
            members.extend(
                nodes
                    .values()
                    .filter(|n| n.features.contains(f))
                    .map(|n| n.name.clone()),
            );
        }
        out.insert(name.to_string(), members.into_iter().collect());
    }
    out
}

/// The nodes a partition's `Nodes=` names: `ALL`, NodeSet names and hostlists,
/// comma-separated (commas inside brackets belong to a hostlist).
fn members(
    value: &str,
    sets: &BTreeMap<String, Vec<String>>,
    all: &BTreeSet<&str>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top(value) {
        if item.eq_ignore_ascii_case("all") {
            out.extend(all.iter().map(|s| s.to_string()));
        } else if let Some(set) = sets.get(item) {
            out.extend(set.iter().cloned());
        } else {
            out.extend(hostlist(item)?);
        }
    }
    Ok(out)
}

/// Splits at commas outside brackets.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect()
}

/// Pools from partitions: node -> partition (first: default, then by name).
pub(super) fn partitions(
    records: &[Record],
    declared: &BTreeMap<String, Node>,
    nodes: &[Described],
    diags: &mut Vec<Diagnostic>,
) -> Pools {
    let known: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let sets = nodesets(records, declared, diags);
    let mut parts: Vec<(bool, String, Vec<String>)> = Vec::new();
    for r in records.iter().filter(|r| r.kind() == "partitionname") {
        let Some(name) = r.value("partitionname") else {
            continue;
        };
        if name.eq_ignore_ascii_case("default") {
            continue;
        }
        let value = r.value("nodes").unwrap_or("");
        let listed = match members(value, &sets, &known) {
            Ok(n) => n,
            Err(e) => {
                diags.push(
                    Diagnostic::warning(GP741, format!("partition `{name}` Nodes: {e}"))
                        .at(r.span, "this partition")
                        .with_help("write node names as Slurm hostlists or NodeSet names"),
                );
                continue;
            }
        };
        let span = r.get("nodes").map_or(r.span, |p| p.span);
        let what = format!("partition `{name}`");
        super::undeclared(&listed, |x| declared.contains_key(x), &what, span, diags);
        let default = r
            .value("default")
            .is_some_and(|d| d.eq_ignore_ascii_case("yes"));
        parts.push((!default, name.to_string(), listed));
    }
    parts.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    assign(parts, &known, diags)
}

/// Each node to the pool of its first partition; notes and flags for the others.
fn assign(
    parts: Vec<(bool, String, Vec<String>)>,
    known: &BTreeSet<&str>,
    diags: &mut Vec<Diagnostic>,
) -> Pools {
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut multi: BTreeSet<String> = BTreeSet::new();
    let mut out = Pools::default();
    for (_, name, listed) in &parts {
        let mut elsewhere: BTreeSet<String> = BTreeSet::new();
        for m in listed.iter().filter(|m| known.contains(m.as_str())) {
            match owner.get(m) {
                Some(o) if o != name => {
                    multi.insert(m.clone());
                    elsewhere.insert(o.clone());
                }
                Some(_) => {}
                None => {
                    owner.insert(m.clone(), name.clone());
                }
            }
        }
        if !elsewhere.is_empty() {
            let pools: Vec<String> = elsewhere.into_iter().collect();
            let note = format!(
                "partition {name} overlaps: nodes of it are in pool(s) {} (a gpuplan node is in one pool)",
                pools.join(", ")
            );
            out.flags
                .push(Item::new(ItemKind::Pool, name.clone(), GP744, note.clone()));
            out.notes.insert(name.clone(), note);
        }
    }
    if !multi.is_empty() {
        let list: Vec<String> = multi.into_iter().collect();
        diags.push(
            Diagnostic::warning(
                GP744,
                format!(
                    "{} node(s) are in several partitions ({}); each joins the pool of its first (the default partition, then by name)",
                    list.len(),
                    crate::units::compress_names(&list).join(",")
                ),
            )
            .with_help("a gpuplan node is in one pool; partitions that overlap are Slurm's business"),
        );
    }
    for (node, part) in owner {
        out.pools.entry(part).or_default().push(node);
    }
    out
}
