//! Pools from slurm.conf `PartitionName` lines.

use super::conf::{Record, hostlist};
use super::describe::Described;
use super::{GP741, GP744};
use crate::diag::Diagnostic;
use crate::source::Span;
use std::collections::{BTreeMap, BTreeSet};

/// Pools from partitions: node -> partition (first: default, then by name).
pub(super) fn partitions(
    records: &[Record],
    nodes: &[Described],
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<String>> {
    let known: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let mut parts: Vec<(bool, String, Vec<String>, Span)> = Vec::new();
    for r in records.iter().filter(|r| r.kind() == "partitionname") {
        let Some(name) = r.value("partitionname") else {
            continue;
        };
        if name.eq_ignore_ascii_case("default") {
            continue;
        }
        let members = match r.value("nodes") {
            Some(v) if v.eq_ignore_ascii_case("all") => {
                known.iter().map(|s| s.to_string()).collect()
            }
            Some(v) => match hostlist(v) {
                Ok(n) => n,
                Err(e) => {
                    diags.push(
                        Diagnostic::warning(GP741, format!("partition `{name}` Nodes: {e}"))
                            .at(r.span, "this partition")
                            .with_help("write node names as Slurm hostlists"),
                    );
                    continue;
                }
            },
            None => Vec::new(),
        };
        let default = r
            .value("default")
            .is_some_and(|d| d.eq_ignore_ascii_case("yes"));
        parts.push((!default, name.to_string(), members, r.span));
    }
    parts.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut multi: BTreeSet<String> = BTreeSet::new();
    for (_, name, members, _) in &parts {
        for m in members.iter().filter(|m| known.contains(m.as_str())) {
            if owner.contains_key(m) {
                multi.insert(m.clone());
            } else {
                owner.insert(m.clone(), name.clone());
            }
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
    let mut pools: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (node, part) in owner {
        pools.entry(part).or_default().push(node);
    }
    pools
}
