//! gres.conf: per node, the GPU device files it lists (whole GPUs with their `Cores`,
//! MIG devices by parent GPU), and the reading of GRES type names.

use super::GP741;
use super::conf::{Record, hostlist};
use super::nodes::Node;
use crate::diag::Diagnostic;
use std::collections::{BTreeMap, BTreeSet};

/// Per node: the GPU devices gres.conf lists.
#[derive(Clone, Debug, Default)]
pub(super) struct Devices {
    /// The GPU `Type`s gres.conf names for the node (AutoDetect writes the full model
    /// name, e.g. `nvidia_a100_80gb_pcie_1g.10gb`, where slurm.conf may say `1g.10gb`).
    pub(super) types: BTreeSet<String>,
    /// Whole GPUs: index -> Cores.
    pub(super) whole: BTreeMap<u32, Option<String>>,
    /// MIG devices: parent GPU index -> profiles.
    pub(super) mig: BTreeMap<u32, Vec<String>>,
}

/// gres.conf: per node, its GPU device files (whole GPUs with `Cores`, MIG devices by
/// their parent GPU).
pub(super) fn read_gres(
    records: &[Record],
    nodes: &BTreeMap<String, Node>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Devices> {
    let mut out: BTreeMap<String, Devices> = BTreeMap::new();
    for r in records {
        if r.value("name").is_none_or(|n| n != "gpu") {
            continue;
        }
        let targets: Vec<String> = match r.get("nodename") {
            Some(p) => match hostlist(&p.value) {
                Ok(n) => n,
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
        let ty = r.value("type").unwrap_or("");
        let files: Vec<String> = r
            .value("multiplefiles")
            .or_else(|| r.value("file"))
            .map(|f| crate::units::expand_pattern_list(f).unwrap_or_default())
            .unwrap_or_default();
        let indices: Vec<u32> = files.iter().filter_map(|f| gpu_index(f)).collect();
        let mig = catalog_mig_profile(ty);
        for t in targets.iter().filter(|t| nodes.contains_key(*t)) {
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
                            .unwrap_or(1);
                        for _ in 0..count {
                            d.mig.entry(parent).or_default().push(profile.clone());
                        }
                    }
                }
                None => {
                    for &i in &indices {
                        d.whole.insert(i, r.value("cores").map(str::to_string));
                    }
                }
            }
        }
    }
    out
}

/// `/dev/nvidia3` -> 3 (not `/dev/nvidiactl`, `/dev/nvidia-caps/...`).
fn gpu_index(file: &str) -> Option<u32> {
    file.strip_prefix("/dev/nvidia")?.parse().ok()
}

/// The MIG profile of a GRES type like `a100_3g.40gb`, `nvidia_a100_1g.10gb`, or a
/// bare `1g.10gb`.
pub(super) fn catalog_mig_profile(ty: &str) -> Option<String> {
    let profile = ty.rsplit_once('_').map_or(ty, |(_, p)| p);
    let (g, rest) = profile.split_once("g.")?;
    let ok = !g.is_empty() && g.bytes().all(|c| c.is_ascii_digit()) && rest.contains("gb");
    ok.then(|| profile.to_string())
}

/// The GPU model part of a MIG GRES type (`a100` of `a100_3g.40gb`; empty for a bare
/// profile).
pub(super) fn model_part(ty: &str) -> &str {
    match catalog_mig_profile(ty) {
        Some(p) => ty
            .strip_suffix(p.as_str())
            .map_or(ty, |x| x.trim_end_matches('_')),
        None => ty,
    }
}
