//! slurm.conf `NodeName` lines (with `NodeName=DEFAULT`) into nodes: CPUs, memory and
//! their `Gres=gpu` entries.

use super::conf::{self, Record, hostlist};
use super::models::catalog_mig_profile;
use super::{GP741, Ledger};
use crate::diag::Diagnostic;
use crate::source::Span;
use std::collections::{BTreeMap, BTreeSet};

/// One node as slurm.conf and gres.conf describe it.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) name: String,
    pub(super) span: Span,
    pub(super) sockets: u32,
    pub(super) cores: u32,
    pub(super) threads: u32,
    pub(super) memory_mib: Option<u64>,
    /// GRES `gpu` entries: (type, count).
    pub(super) gres: Vec<(String, u32)>,
    /// The span of the line's `Gres=` pair.
    pub(super) gres_span: Span,
    /// `Features=` (or `Feature=`), for `NodeSet=... Feature=`.
    pub(super) features: BTreeSet<String>,
    /// Sharing GRES of its `Gres=` (`shard`, `mps`).
    pub(super) sharing: BTreeSet<String>,
}

/// The most a CPU count of a NodeName line may say (sockets, cores per socket,
/// threads per core, boards): beyond it a value is a typo or an attack, and products of
/// them must not overflow.
const MAX_CPU_FIELD: u64 = 4096;

/// The most GPU GRES one entry may count: whole GPUs up to the per-node limit, MIG
/// instances up to seven per GPU.
const MAX_GRES_COUNT: u32 = crate::limits::MAX_GPUS_PER_NODE as u32 * 7;

fn number(r: &Record, key: &str, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    let p = r.get(key)?;
    let bound = if key == "realmemory" {
        u64::MAX / 2
    } else {
        MAX_CPU_FIELD
    };
    match p.value.trim().parse::<u64>() {
        Ok(v) if v > bound => {
            diags.push(
                Diagnostic::warning(
                    GP741,
                    format!("`{}` is more than {bound}; ignored", p.value),
                )
                .at(p.span, "too large")
                .with_help("give the node's real count"),
            );
            None
        }
        Ok(v) => Some(v),
        Err(_) => {
            diags.push(
                Diagnostic::warning(GP741, format!("`{}` is not a number; ignored", p.value))
                    .at(p.span, "not a number")
                    .with_help("Slurm takes whole numbers here"),
            );
            None
        }
    }
}

/// `NodeName` lines (with `NodeName=DEFAULT` applied) into nodes with GPUs, by name.
pub(super) fn read_nodes(
    records: &[Record],
    diags: &mut Vec<Diagnostic>,
    ledger: &mut Ledger,
) -> BTreeMap<String, Node> {
    let mut defaults: BTreeMap<String, String> = BTreeMap::new();
    let mut out: BTreeMap<String, Node> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind() == "nodename") {
        let Some(names_pair) = r.get("nodename") else {
            continue;
        };
        if names_pair.value.eq_ignore_ascii_case("default") {
            for p in &r.pairs[1..] {
                defaults.insert(p.key.clone(), p.value.clone());
            }
            continue;
        }
        // The line with the defaults filled in.
        let mut full = r.clone();
        for (k, v) in &defaults {
            if full.get(k).is_none() {
                full.pairs.push(conf::Pair {
                    key: k.clone(),
                    value: v.clone(),
                    span: r.span,
                });
            }
        }
        let names = match hostlist(&names_pair.value) {
            Ok(n) => n,
            Err(e) => {
                diags.push(
                    Diagnostic::error(GP741, format!("NodeName `{}`: {e}", names_pair.value))
                        .at(names_pair.span, "this hostlist")
                        .with_help("write node names as Slurm hostlists, e.g. gpu[001-032]"),
                );
                continue;
            }
        };
        // The run's nodes limit, as `validate` would apply it to the output: an import
        // past it is refused here, before the work of describing every node.
        let limit = crate::limits::current().nodes;
        if (out.len() + names.len()) as u64 > limit {
            diags.push(
                Diagnostic::error(
                    GP741,
                    format!(
                        "NodeName `{}`: the site declares more than {limit} nodes (the nodes limit)",
                        names_pair.value
                    ),
                )
                .at(names_pair.span, "this hostlist goes past the limit")
                .with_help(crate::limits::hint("nodes")),
            );
            break;
        }
        let gres = gres_gpus(&full, diags);
        let whole: u64 = gres
            .iter()
            .filter(|(t, _)| catalog_mig_profile(t).is_none())
            .map(|(_, c)| u64::from(*c))
            .sum();
        for name in &names {
            ledger.seen.push((name.clone(), whole));
        }
        let gres_span = full.get("gres").map_or(r.span, |p| p.span);
        let (sockets, cores, threads) = cpu_shape(&full, diags);
        let memory_mib = number(&full, "realmemory", diags).filter(|m| *m > 1);
        let (sharing, features) = sharing_and_features(&full);
        for name in names {
            if let Err(e) = crate::units::validate_node_name(&name) {
                ledger.drop(&name, GP741, e.to_string());
                diags.push(
                    Diagnostic::warning(GP741, format!("node `{name}` is left out: {e}"))
                        .at(names_pair.span, "in this hostlist")
                        .with_help("gpuplan node names are lowercase DNS labels"),
                );
                continue;
            }
            out.insert(
                name.clone(),
                Node {
                    name,
                    span: names_pair.span,
                    sockets: sockets as u32,
                    cores: cores as u32,
                    threads: threads as u32,
                    memory_mib,
                    gres: gres.clone(),
                    gres_span,
                    features: features.clone(),
                    sharing: sharing.clone(),
                },
            );
        }
    }
    out
}

/// The `gpu` entries of a line's `Gres=`: (type, count); an untyped entry has type "".
fn gres_gpus(r: &Record, diags: &mut Vec<Diagnostic>) -> Vec<(String, u32)> {
    let Some(p) = r.get("gres") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in p.value.split(',') {
        // gpu[:type]:count[(S:0-1)]
        let entry = entry.split('(').next().unwrap_or("").trim();
        let parts: Vec<&str> = entry.split(':').collect();
        if parts.first() != Some(&"gpu") {
            continue;
        }
        let (ty, count) = match parts.as_slice() {
            [_, count] => ("", *count),
            [_, ty, count] => (*ty, *count),
            _ => ("", ""),
        };
        match count.parse::<u32>() {
            Ok(n) if n > MAX_GRES_COUNT => diags.push(
                Diagnostic::warning(
                    GP741,
                    format!("GRES entry `{entry}` counts more than {MAX_GRES_COUNT}; ignored"),
                )
                .at(p.span, "this Gres")
                .with_help("a node has at most 64 GPUs (and 7 MIG instances per GPU)"),
            ),
            Ok(n) if n > 0 => out.push((ty.to_string(), n)),
            Ok(_) => {}
            Err(_) => diags.push(
                Diagnostic::warning(
                    GP741,
                    format!("GRES entry `{entry}` has no GPU count; ignored"),
                )
                .at(p.span, "this Gres")
                .with_help("write it as gpu:TYPE:COUNT, e.g. gpu:h100:8"),
            ),
        }
    }
    out
}

/// Sockets, cores per socket and threads per core of a NodeName line: `Boards` x
/// `SocketsPerBoard` (or `Sockets`), `CoresPerSocket`, `ThreadsPerCore`, or `CPUs` alone.
fn cpu_shape(full: &Record, diags: &mut Vec<Diagnostic>) -> (u64, u64, u64) {
    let boards = number(full, "boards", diags).unwrap_or(1).max(1);
    let sockets = number(full, "socketsperboard", diags)
        .map(|s| (s * boards).min(MAX_CPU_FIELD))
        .or_else(|| number(full, "sockets", diags))
        .map(|s| s.max(1));
    let cores = number(full, "corespersocket", diags).map(|c| c.max(1));
    let threads = number(full, "threadspercore", diags).unwrap_or(1).max(1);
    let cpus = number(full, "cpus", diags);
    let (sockets, cores, threads) = match (sockets, cores, cpus) {
        (Some(s), Some(c), _) => (s, c, threads),
        (None, Some(c), _) => (1, c, threads),
        (Some(s), None, Some(cpu)) => (s, (cpu / (s * threads)).max(1), threads),
        (None, None, Some(cpu)) => (1, cpu.max(1), 1),
        _ => (1, 1, 1),
    };
    (sockets, cores, threads)
}

/// The sharing GRES (`shard`, `mps`) of a line's `Gres=`, and its `Features=`.
fn sharing_and_features(full: &Record) -> (BTreeSet<String>, BTreeSet<String>) {
    let sharing: BTreeSet<String> = full
        .value("gres")
        .unwrap_or("")
        .split(',')
        .filter_map(|e| e.split(':').next())
        .map(|k| k.trim().to_ascii_lowercase())
        .filter(|k| k == "shard" || k == "mps")
        .collect();
    let features: BTreeSet<String> = full
        .value("features")
        .or_else(|| full.value("feature"))
        .map(|f| f.split(',').map(|x| x.trim().to_string()).collect())
        .unwrap_or_default();
    (sharing, features)
}
