//! gres.conf: per node, the GPU device files it lists (whole GPUs with their `Cores`,
//! MIG devices by parent GPU), and the reading of GRES type names.

use super::GP741;
use super::conf::{Record, hostlist};
use super::models::catalog_mig_profile;
use super::nodes::Node;
use crate::diag::Diagnostic;
use std::collections::{BTreeMap, BTreeSet};

/// Per node: the GPU devices gres.conf lists.
#[derive(Clone, Debug, Default)]
pub(super) struct Devices {
    /// The GPU `Type`s gres.conf names for the node (AutoDetect writes the full model
    /// name, e.g. `nvidia_a100_80gb_pcie_1g.10gb`, where slurm.conf may say `1g.10gb`).
    pub(super) types: BTreeSet<String>,
    /// Whole GPUs: index -> cores (from `Cores=`, or `CPUs=` turned into cores).
    pub(super) whole: BTreeMap<u32, Option<String>>,
    /// Whole GPUs: index -> `Type` (for the order of the GPU types of a node).
    pub(super) typed: BTreeMap<u32, String>,
    /// MIG devices: parent GPU index -> profiles.
    pub(super) mig: BTreeMap<u32, Vec<String>>,
    /// Sharing GRES (`Name=shard` or `Name=mps`) on the node.
    pub(super) sharing: BTreeSet<String>,
}

/// MIG devices one gres.conf line may stand for on one GPU (the most any GPU has).
const MAX_MIG_PER_GPU: usize = 7;

/// gres.conf: per node, its GPU device files (whole GPUs with `Cores`, MIG devices by
/// their parent GPU). Names of nodes slurm.conf does not declare are GP754.
pub(super) fn read_gres(
    records: &[Record],
    nodes: &BTreeMap<String, Node>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Devices> {
    let mut out: BTreeMap<String, Devices> = BTreeMap::new();
    for r in records {
        let name = r.value("name").unwrap_or("").to_ascii_lowercase();
        if !matches!(name.as_str(), "gpu" | "shard" | "mps") {
            continue;
        }
        let targets: Vec<String> = match r.get("nodename") {
            Some(p) => match hostlist(&p.value) {
                Ok(n) => {
                    super::undeclared(
                        &n,
                        |x| nodes.contains_key(x),
                        "gres.conf NodeName",
                        p.span,
                        diags,
                    );
                    n
                }
                Err(e) => {
                    diags.push(
                        Diagnostic::warning(
                            GP741,
                            format!("gres.conf NodeName `{}`: {e}", p.value),
                        )
                        .at(p.span, "this hostlist")
                        .with_help("write node names as Slurm hostlists"),
                    );
                    continue;
                }
            },
            None => nodes.keys().cloned().collect(),
        };
        if name != "gpu" {
            for t in targets.iter().filter(|t| nodes.contains_key(*t)) {
                out.entry(t.clone())
                    .or_default()
                    .sharing
                    .insert(name.clone());
            }
            continue;
        }
        let ty = r.value("type").unwrap_or("");
        let indices = device_indices(r, diags);
        let mig = catalog_mig_profile(ty);
        for t in targets.iter() {
            let Some(node) = nodes.get(t) else { continue };
            let d = out.entry(t.clone()).or_default();
            if !ty.is_empty() {
                d.types.insert(ty.to_string());
            }
            match &mig {
                Some(profile) => {
                    // One MIG device per line; its parent is the GPU's own device file.
                    if let Some(&parent) = indices.first() {
                        let count = r
                            .value("count")
                            .and_then(|c| c.parse::<usize>().ok())
                            .unwrap_or(1)
                            .min(MAX_MIG_PER_GPU);
                        let list = d.mig.entry(parent).or_default();
                        for _ in 0..count {
                            if list.len() < MAX_MIG_PER_GPU {
                                list.push(profile.clone());
                            }
                        }
                    }
                }
                None => {
                    let cores = affinity(r, node);
                    for &i in &indices {
                        d.whole.insert(i, cores.clone());
                        if !ty.is_empty() {
                            d.typed.insert(i, ty.to_string());
                        }
                    }
                }
            }
        }
    }
    out
}

/// The GPU indices of a line's `File=`/`MultipleFiles=` (`/dev/nvidia[0-3]`), expanded
/// within the import's names budget.
fn device_indices(r: &Record, diags: &mut Vec<Diagnostic>) -> Vec<u32> {
    let Some(p) = r.get("multiplefiles").or_else(|| r.get("file")) else {
        return Vec::new();
    };
    match hostlist(&p.value) {
        Ok(files) => files.iter().filter_map(|f| gpu_index(f)).collect(),
        Err(e) => {
            diags.push(
                Diagnostic::warning(GP741, format!("gres.conf `{}`: {e}", p.value))
                    .at(p.span, "these device files")
                    .with_help("write device files as /dev/nvidia[0-7]"),
            );
            Vec::new()
        }
    }
}

/// The cores a GPU is close to: `Cores=` as written, or `CPUs=` (CPU ids) as the cores
/// they are on, numbered as Linux numbers them (the threads of core `c` are `c`,
/// `c + cores`, `c + 2 * cores`...; docs/import.md).
fn affinity(r: &Record, node: &Node) -> Option<String> {
    if let Some(c) = r.value("cores") {
        return Some(c.to_string());
    }
    let cpus = crate::units::parse_index_set(r.value("cpus")?).ok()?;
    let total = (u64::from(node.sockets) * u64::from(node.cores)).max(1);
    let mut cores: Vec<u32> = cpus
        .iter()
        .map(|c| (u64::from(*c) % total) as u32)
        .collect();
    cores.sort_unstable();
    cores.dedup();
    Some(crate::units::format_index_set(&cores))
}

/// `/dev/nvidia3` -> 3 (not `/dev/nvidiactl`, `/dev/nvidia-caps/...`, nor an index past the
/// per-node GPU limit).
fn gpu_index(file: &str) -> Option<u32> {
    let i: u32 = file.strip_prefix("/dev/nvidia")?.parse().ok()?;
    (u64::from(i) < crate::limits::MAX_GPUS_PER_NODE).then_some(i)
}
