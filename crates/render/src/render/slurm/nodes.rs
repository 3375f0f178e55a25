//! `NodeName` lines of slurm.conf, gres.conf lines and the GPU TRES: nodes whose lines
//! are identical share one line with a hostlist range.

use crate::render::facts::{Facts, NodeFacts, range};
use crate::units::format_index_set;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Serialize)]
pub(super) struct NodeLine {
    names: String,
    cpus: u32,
    sockets: u32,
    cores: u32,
    threads: u32,
    memory: Option<u64>,
    gres: String,
    features: String,
}

#[derive(Serialize)]
pub(super) struct GresLine {
    nodes: String,
    #[serde(flatten)]
    file: GresFile,
}

/// One gres.conf line of a node, without NodeName.
#[derive(Serialize, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct GresFile {
    /// `gpu`, `shard` or `mps`.
    name: &'static str,
    /// The GPU's type (`gpu` only): its model or MIG profile.
    kind: Option<String>,
    /// Units (`shard`, `mps`).
    count: Option<u32>,
    files: String,
    /// `MultipleFiles=` (one MIG device) rather than `File=`.
    multiple: bool,
    cores: Option<String>,
}

/// The GRES type of whole GPU `g` of this node (its model's short name: a node with
/// GPUs of several models has several types).
fn gpu_type(n: &NodeFacts, g: u32) -> &str {
    n.gpu_models
        .get(&g)
        .map(|m| m.1.as_str())
        .or(n.model_short.as_deref())
        .unwrap_or("gpu")
}

/// `gpu:h100:8,gpu:1g.10gb:14` for a node: whole GPUs by model, MIG devices by profile.
fn node_gres(n: &NodeFacts) -> String {
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for g in &n.gpus {
        match n.mig.get(g) {
            Some(profiles) => {
                for p in profiles {
                    *counts.entry(p).or_insert(0) += 1;
                }
            }
            None => *counts.entry(gpu_type(n, *g)).or_insert(0) += 1,
        }
    }
    let mut out: Vec<String> = counts.iter().map(|(t, k)| format!("gpu:{t}:{k}")).collect();
    if let Some(kind) = n.slurm_sharing {
        let whole = n.gpus.iter().filter(|g| !n.mig.contains_key(g)).count();
        out.push(format!("{kind}:{}", whole * SHARES_PER_GPU as usize));
    }
    out.join(",")
}

/// `gres/shard` (or `gres/mps`) units per GPU of a shared Slurm node: a job's
/// thousandths of one GPU (its fraction, or 1/per-gpu) are exact.
pub(super) const SHARES_PER_GPU: u32 = 1000;

/// The sharing GRES of a node (`shard`, `mps`), when Slurm shares its GPUs.
pub(super) fn sharing_gres(_f: &Facts, n: &NodeFacts) -> Option<&'static str> {
    n.slurm_sharing
}

/// `gpu` plus `shard` / `mps` when some node shares its GPUs.
pub(super) fn gres_types(nodes: &[Arc<NodeFacts>]) -> String {
    let mut types = vec!["gpu"];
    for kind in ["mps", "shard"] {
        if nodes.iter().any(|n| n.slurm_sharing == Some(kind)) {
            types.push(kind);
        }
    }
    types.join(",")
}

/// [`node_gres`] of every node, in the nodes' order.
pub(super) fn node_gres_all(nodes: &[Arc<NodeFacts>]) -> Vec<String> {
    nodes.iter().map(|n| node_gres(n)).collect()
}

/// `gres/gpu` and one `gres/gpu:<type>` per GRES type of any node (`gres`: the nodes'
/// [`node_gres`]), sorted, comma-joined.
pub(super) fn tres(gres: &[String]) -> String {
    let mut types: Vec<String> = gres
        .iter()
        .flat_map(|g| g.split(','))
        .filter(|g| g.starts_with("gpu:"))
        .filter_map(|g| g.split(':').nth(1).map(|t| format!("gres/gpu:{t}")))
        .collect();
    for kind in ["mps", "shard"] {
        if gres
            .iter()
            .flat_map(|g| g.split(','))
            .any(|g| g.starts_with(&format!("{kind}:")))
        {
            types.push(format!("gres/{kind}"));
        }
    }
    types.sort();
    types.dedup();
    let mut tres = vec!["gres/gpu".to_string()];
    tres.extend(types);
    tres.join(",")
}

/// Groups nodes whose lines are identical: `key -> names`, in first-name order.
fn group<'a, K: Ord>(keyed: impl IntoIterator<Item = (K, &'a str)>) -> Vec<(K, String)> {
    let mut groups: BTreeMap<K, Vec<String>> = BTreeMap::new();
    for (k, name) in keyed {
        groups.entry(k).or_default().push(name.to_string());
    }
    let mut out: Vec<(K, Vec<String>)> = groups.into_iter().collect();
    out.sort_by(|a, b| a.1.first().cmp(&b.1.first()));
    out.into_iter()
        .map(|(k, names)| (k, range(&names)))
        .collect()
}

/// `NodeName` lines: CPU layout, memory, GRES (`gres`: the nodes' [`node_gres`]) and
/// features (pool, model, its NVLink domain and switches, capacity).
pub(super) fn node_lines(nodes: &[Arc<NodeFacts>], gres: &[String]) -> Vec<NodeLine> {
    let keyed = nodes.iter().zip(gres).map(|(n, gres)| {
        let mut features = vec![n.pool.as_str()];
        features.extend(n.model_short.as_deref());
        // A node with GPUs of several models has each model's feature.
        for (_, short) in n.gpu_models.values() {
            if !features.contains(&short.as_str()) {
                features.push(short.as_str());
            }
        }
        // Every fabric domain of the node, innermost first: a job pinned to one names it.
        for t in ["nvlink", "leaf", "spine", "core"] {
            features.extend(n.domains.get(t).map(String::as_str));
        }
        // `spot`, `on-demand`, `reserved` once capacity is declared (jobs constrain on it).
        features.extend(
            n.labels
                .get(crate::names::CAPACITY_LABEL)
                .map(String::as_str),
        );
        let key = (
            n.sockets,
            n.cores_per_socket,
            n.threads_per_core,
            n.memory_mib,
            gres.as_str(),
            features.join(","),
        );
        (key, n.name.as_str())
    });
    group(keyed)
        .into_iter()
        .map(
            |((sockets, cores, threads, memory, gres, features), names)| NodeLine {
                names,
                cpus: sockets * cores * threads,
                sockets,
                cores,
                threads,
                memory,
                gres: gres.to_string(),
                features,
            },
        )
        .collect()
}

/// gres.conf lines: each node's [`gres_files`], nodes with the same files grouped.
pub(super) fn gres_lines(f: &Facts) -> Vec<GresLine> {
    let keyed = f.nodes.iter().map(|n| (gres_files(f, n), n.name.as_str()));
    let mut out = Vec::new();
    for (lines, names) in group(keyed) {
        for file in lines {
            out.push(GresLine {
                nodes: names.clone(),
                file,
            });
        }
    }
    out
}

/// gres.conf lines of one node (without NodeName).
fn gres_files(f: &Facts, n: &NodeFacts) -> Vec<GresFile> {
    let class = f.c.classes.get(&n.class);
    let numa_of = |g: u32| class.and_then(|c| c.numa.iter().find(|x| x.gpus.contains(&g)));
    let mut out = Vec::new();
    // Whole GPUs, grouped by type and NUMA node (one Type= and Cores= per line).
    let mut by_numa: BTreeMap<(&str, Option<u32>), Vec<u32>> = BTreeMap::new();
    for g in n.gpus.iter().filter(|g| !n.mig.contains_key(g)) {
        by_numa
            .entry((gpu_type(n, *g), numa_of(*g).map(|x| x.id)))
            .or_default()
            .push(*g);
    }
    for ((kind, numa), gpus) in by_numa {
        let files = if gpus.len() == 1 {
            format!("/dev/nvidia{}", gpus[0])
        } else {
            format!("/dev/nvidia[{}]", format_index_set(&gpus))
        };
        let cores = numa
            .and_then(|id| class.and_then(|c| c.numa.iter().find(|x| x.id == id)))
            .filter(|x| !x.cores.is_empty())
            .map(|x| format_index_set(&x.cores));
        out.push(GresFile {
            name: "gpu",
            kind: Some(kind.to_string()),
            count: None,
            files,
            multiple: false,
            cores,
        });
    }
    // Shards (or MPS percent) of every whole GPU of a shared node, per GPU: a job's
    // shares come from one GPU.
    if let Some(kind) = n.slurm_sharing {
        for g in n.gpus.iter().filter(|g| !n.mig.contains_key(g)) {
            out.push(GresFile {
                name: kind,
                kind: None,
                count: Some(SHARES_PER_GPU),
                files: format!("/dev/nvidia{g}"),
                multiple: false,
                cores: None,
            });
        }
    }
    // MIG devices: GPU device file + GI and CI capability files. GI ids are the driver's
    // choice; gpuplan predicts them in creation order (largest first, from 1), which the
    // node script checks (see docs/render.md).
    for (g, profiles) in &n.mig {
        let cores = numa_of(*g)
            .filter(|x| !x.cores.is_empty())
            .map(|x| format_index_set(&x.cores));
        for (i, p) in profiles.iter().enumerate() {
            let gi = i as u32 + 1;
            let gi_minor = 3 + 135 * g + 9 * gi;
            let files = format!(
                "/dev/nvidia{g},/dev/nvidia-caps/nvidia-cap{gi_minor},/dev/nvidia-caps/nvidia-cap{}",
                gi_minor + 1
            );
            out.push(GresFile {
                name: "gpu",
                kind: Some(p.clone()),
                count: None,
                files,
                multiple: true,
                cores: cores.clone(),
            });
        }
    }
    out
}
