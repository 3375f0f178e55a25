//! MIG state from GPU Feature Discovery and device-plugin labels: `nvidia.com/mig.config`
//! (the mig-parted config name), `nvidia.com/mig-<profile>.count` labels and
//! `nvidia.com/mig-<profile>` capacities (mixed strategy), or `nvidia.com/gpu.product`
//! ending in `-MIG-<profile>` (single strategy). Node labels give totals per node, so a
//! layout is read as the same on every GPU, and checked against the catalog.
//!
//! `nvidia.com/mig.strategy=single` alone does not mean MIG devices: the GPU Operator
//! sets it on every node of a cluster whose policy is `single`, MIG enabled or not. Only
//! a product name ending in `-MIG-<profile>` says that `nvidia.com/gpu.count` counts MIG
//! devices; without it the GPUs are whole (`mig.config=all-disabled`) or the layout of
//! `mig.config` is not applied yet (`mig.config.state` pending, rebooting, failed).

use super::read::RawNode;
use super::text::shown;
use crate::catalog::{self, GpuSpec, MigProfile, MigSpec};
use std::collections::BTreeMap;

/// The MIG layout of every GPU of a node, as `mig layout` arguments (`"1g.10gb*7"`).
pub(crate) type Layout = Vec<String>;

pub(crate) const CONFIG: &str = "nvidia.com/mig.config";
const STATE: &str = "nvidia.com/mig.config.state";
const STRATEGY: &str = "nvidia.com/mig.strategy";

/// The profile of a single-strategy product name (`NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`).
pub(crate) fn single_profile(product: &str) -> Option<&str> {
    let lower = product.to_ascii_lowercase();
    let i = lower.find("-mig-")?;
    Some(&product[i + 5..])
}

/// Whether the node's GPUs are advertised as MIG devices of one profile (single strategy
/// with MIG enabled): its product name ends in `-MIG-<profile>`. The strategy label alone
/// is not enough (it is set whether MIG is enabled or not).
pub(crate) fn advertises_devices(n: &RawNode) -> bool {
    let product = n.labels.get(super::PRODUCT).map_or("", String::as_str);
    single_profile(product).is_some()
}

/// Whether the node advertises MIG devices by profile (mixed strategy): `mig-<p>.count`
/// labels or `nvidia.com/mig-<p>` capacities above 0.
pub(crate) fn has_totals(n: &RawNode) -> bool {
    !totals(n).is_empty()
}

/// MIG devices per profile the node advertises: `nvidia.com/mig-<p>.count` labels, else
/// `nvidia.com/mig-<p>` capacities.
pub(crate) fn totals(n: &RawNode) -> BTreeMap<String, u32> {
    let from_labels: BTreeMap<String, u32> = n
        .labels
        .iter()
        .filter_map(|(k, v)| {
            let p = k.strip_prefix("nvidia.com/mig-")?.strip_suffix(".count")?;
            Some((p.to_string(), v.trim().parse().ok()?))
        })
        .filter(|(_, c)| *c > 0)
        .collect();
    if !from_labels.is_empty() {
        return from_labels;
    }
    n.capacity
        .iter()
        .filter_map(|(k, v)| {
            let p = k.strip_prefix("nvidia.com/mig-")?;
            Some((p.to_string(), v.trim().parse().ok()?))
        })
        .filter(|(_, c)| *c > 0)
        .collect()
}

/// Physical GPUs of a single-strategy node advertising `count` MIG devices of `profile`
/// (`all-<profile>`: as many per GPU as fit), with the per-GPU layout.
pub(crate) fn single(
    spec: &GpuSpec,
    profile: &str,
    count: u64,
) -> Result<(u64, Vec<&'static MigProfile>), String> {
    let mig = mig_spec(spec)?;
    let p = profile_of(mig, spec, profile)?;
    let layout = most_of(mig, p);
    let per_gpu = layout.len() as u64;
    if per_gpu == 0 || count == 0 || count % per_gpu != 0 {
        return Err(format!(
            "{count} MIG devices of {} do not make whole GPUs of {per_gpu} each",
            shown(profile)
        ));
    }
    Ok((count / per_gpu, layout))
}

/// The per-GPU layout of a mixed-strategy (or unlabelled-strategy) node with `gpus` GPUs;
/// `None` when MIG is not configured.
pub(crate) fn mixed(
    n: &RawNode,
    spec: &GpuSpec,
    gpus: u32,
) -> Result<Option<Vec<&'static MigProfile>>, String> {
    let config = n.labels.get(CONFIG).map(String::as_str);
    let totals = totals(n);
    if config.is_none() && totals.is_empty() {
        return Ok(None);
    }
    if config == Some("all-disabled") {
        if totals.is_empty() {
            return Ok(None);
        }
        return Err("`nvidia.com/mig.config` is all-disabled but MIG devices are advertised (a reconfiguration in progress?)".into());
    }
    if let Some(state) = n.labels.get(STATE) {
        if state != "success" {
            return Err(format!(
                "`{STATE}` is `{}`: the layout of `{}` may not be on the GPUs yet; the GPUs are imported whole",
                shown(state),
                shown(config.unwrap_or("?"))
            ));
        }
    }
    if totals.is_empty() && n.labels.get(STRATEGY).map(String::as_str) == Some("single") {
        // Single strategy with MIG applied renames the product `...-MIG-<profile>`: a
        // whole-GPU product name says the layout is not on the GPUs (yet).
        return Err(format!(
            "`{STRATEGY}` is single but `nvidia.com/gpu.product` names a whole GPU: the layout of `{}` is not on the GPUs (yet); the GPUs are imported whole",
            shown(config.unwrap_or("?"))
        ));
    }
    let mig = mig_spec(spec)?;
    if totals.is_empty() {
        return from_config_name(mig, spec, config.unwrap_or_default()).map(Some);
    }
    split(mig, spec, &totals, gpus).map(Some)
}

/// `all-<profile>` without device counts: as many of the profile per GPU as fit.
fn from_config_name(
    mig: &'static MigSpec,
    spec: &GpuSpec,
    config: &str,
) -> Result<Vec<&'static MigProfile>, String> {
    match config.strip_prefix("all-") {
        Some(p) if mig.profile(p).is_some() => Ok(most_of(mig, profile_of(mig, spec, p)?)),
        _ => Err(format!(
            "the layout of mig-parted config `{}` is not in the labels (no `nvidia.com/mig-<profile>.count` labels or capacities)",
            shown(config)
        )),
    }
}

/// Node totals split evenly over the node's GPUs.
fn split(
    mig: &'static MigSpec,
    spec: &GpuSpec,
    totals: &BTreeMap<String, u32>,
    gpus: u32,
) -> Result<Vec<&'static MigProfile>, String> {
    if gpus == 0 {
        return Err("the node's GPU count is unknown".into());
    }
    let mut layout = Vec::new();
    for (name, count) in totals {
        let p = profile_of(mig, spec, name)?;
        if count / gpus > u32::from(p.max_count) {
            return Err(format!(
                "{count}x {} over {gpus} GPU(s) is more than one GPU holds ({} at most)",
                shown(name),
                p.max_count
            ));
        }
        if count % gpus != 0 {
            return Err(format!(
                "{} do not split evenly over {gpus} GPUs: the per-GPU layouts are not in the labels",
                describe(totals)
            ));
        }
        layout.extend(std::iter::repeat_n(p, (count / gpus) as usize));
    }
    catalog::fits_profiles(mig, &layout).map_err(|e| {
        format!(
            "{} per GPU does not fit one {}: {e}",
            describe_layout(&layout),
            spec.id
        )
    })?;
    Ok(layout)
}

fn describe(totals: &BTreeMap<String, u32>) -> String {
    totals
        .iter()
        .map(|(p, c)| format!("{c}x {}", shown(p)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_layout(layout: &[&'static MigProfile]) -> String {
    args(layout).join(" ")
}

fn mig_spec(spec: &GpuSpec) -> Result<&'static MigSpec, String> {
    spec.mig
        .ok_or_else(|| format!("{} has no MIG in the catalog", spec.id))
}

fn profile_of(
    mig: &'static MigSpec,
    spec: &GpuSpec,
    name: &str,
) -> Result<&'static MigProfile, String> {
    mig.profile(name).ok_or_else(|| {
        format!(
            "`{}` is not a MIG profile of {} in the catalog",
            shown(name),
            spec.id
        )
    })
}

/// As many instances of `p` as fit one GPU.
fn most_of(mig: &'static MigSpec, p: &'static MigProfile) -> Vec<&'static MigProfile> {
    let mut n = p.max_count as usize;
    while n > 0 {
        let layout = vec![p; n];
        if catalog::fits_profiles(mig, &layout).is_ok() {
            return layout;
        }
        n -= 1;
    }
    Vec::new()
}

/// `mig layout` arguments in canonical order: `["3g.40gb", "1g.10gb*2"]`.
pub(crate) fn args(layout: &[&'static MigProfile]) -> Layout {
    let mut sorted = layout.to_vec();
    catalog::sort_canonical(&mut sorted);
    let mut out: Vec<(&str, usize)> = Vec::new();
    for p in sorted {
        match out.last_mut() {
            Some((name, k)) if *name == p.name => *k += 1,
            _ => out.push((p.name, 1)),
        }
    }
    out.into_iter()
        .map(|(n, k)| {
            if k == 1 {
                n.to_string()
            } else {
                format!("{n}*{k}")
            }
        })
        .collect()
}
