//! Dynamic Resource Allocation facts: what the pods of a group on DRA nodes claim
//! (docs/render.md, "Dynamic Resource Allocation").
//!
//! Decisions:
//! - **DeviceClasses per GPU model and MIG profile, written by gpuplan.** NVIDIA's DRA
//!   driver installs `gpu.nvidia.com` (every full GPU) and `mig.nvidia.com` (every MIG
//!   device); gpuplan narrows them to one model (`<model>.gpuplan.io`) and one model's MIG
//!   profile (`<model>-mig-<profile>.gpuplan.io`) with CEL on the attributes the driver
//!   publishes (`cmd/gpu-kubelet-plugin/deviceinfo.go`, `mig.go`): `type`,
//!   `productName`, `architecture`, `profile`. The claims then name a class and a count
//!   only, which is what Kueue's quota accounting reads (it supports neither CEL
//!   selectors nor config in a claim), and a ResourceQuota per class
//!   (`<class>.deviceclass.resource.k8s.io/devices`) caps each model and MIG profile.
//! - **No memory bound in the selector.** `productName` names the model exactly; the
//!   `memory` capacity the driver publishes is NVML's total (81559 MiB on an H100 80GB),
//!   so a bound would restate the model at best and drop devices at worst.
//! - **Whole GPUs and MIG devices: a ResourceClaimTemplate** (one claim, and its own
//!   devices, per pod). **Shared GPUs: one ResourceClaim per planned GPU**, referenced
//!   by the group's pods on it, with the driver's `GpuConfig` sharing (`TimeSlicing`, or
//!   `MPS` with each client's active-thread percentage and pinned-memory limit its share
//!   of the GPU): under DRA a device belongs to one claim, so pods share a GPU only by
//!   sharing the claim.
//! - **A gang on several nodes of one multi-node NVLink domain gets a ComputeDomain**
//!   (`resource.nvidia.com/v1beta1`, `numNodes` = its pods) whose channel
//!   ResourceClaimTemplate (created by the driver's controller) every pod references:
//!   the IMEX channel without which cross-node NVLink falls back to the network.

use super::{Ask, NodeFacts};
use crate::model::{Cluster, GpuModel};
use serde::Serialize;
use std::collections::BTreeSet;

/// The DRA driver of NVIDIA GPUs (its ResourceSlices, device attributes and opaque
/// configuration).
pub(crate) const DRIVER: &str = "gpu.nvidia.com";
/// The NVLink clique GPU Feature Discovery labels a node with (`<cluster UUID>.<clique>`).
pub(crate) const CLIQUE_LABEL: &str = "nvidia.com/gpu.clique";
pub use crate::names::DEVICE_PLUGIN_DEPLOY_LABEL;

/// A DeviceClass gpuplan writes: the devices of one GPU model, or one MIG profile of it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct DeviceClassFacts {
    pub name: String,
    pub model: String,
    /// The MIG profile, as the driver names it (`None`: full GPUs).
    pub profile: Option<String>,
    /// The CEL selector.
    pub expression: String,
}

/// How the pods of a shared claim share its GPU (the driver's `GpuConfig.sharing`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "strategy")]
pub(crate) enum DraSharing {
    TimeSlicing,
    #[serde(rename = "MPS")]
    Mps {
        /// `defaultActiveThreadPercentage`.
        threads: u32,
        /// `defaultPinnedDeviceMemoryLimit` (a quantity, `20389Mi`).
        memory: String,
    },
}

/// What the pods of one group claim on DRA nodes.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DraGroup {
    /// The device classes a pod's GPUs may come from, one per GPU model of the group:
    /// `(model, class)`; several are alternatives (`firstAvailable`).
    pub classes: Vec<(String, String)>,
    /// Devices per pod.
    pub count: u32,
    /// Shared GPU: one ResourceClaim the group's pods reference, with this sharing
    /// (`None`: a ResourceClaimTemplate, one claim per pod).
    pub sharing: Option<DraSharing>,
    /// A gang on several nodes of one multi-node NVLink domain: its ComputeDomain's
    /// `numNodes` (the gang's pods).
    pub compute_domain: Option<u32>,
    /// The NVLink clique (`nvidia.com/gpu.clique`) every node of the group carries.
    pub clique: Option<String>,
    /// A shared claim's GPU: its node and index.
    pub gpu: Option<(String, u32)>,
}

/// The first Volcano whose capacity plugin caps DRA devices per queue (`deviceclass/<class>`
/// keys in `capability`; volcano-sh/volcano docs/design/capacity-dra-support.md, first
/// released in v1.15.0).
pub(crate) const VOLCANO_DRA_QUOTA: &[u32] = &[1, 15];

/// Whether the declared Volcano caps DRA devices per queue.
pub(crate) fn volcano_counts_dra(c: &Cluster) -> bool {
    c.volcano_version
        .as_deref()
        .is_some_and(|v| v >= VOLCANO_DRA_QUOTA)
}

/// The DeviceClass of a model's full GPUs (`None`) or of one of its MIG profiles.
pub(crate) fn device_class_name(model: &str, profile: Option<&str>) -> String {
    match profile {
        None => format!("{model}.gpuplan.io"),
        Some(p) => format!("{model}-mig-{}.gpuplan.io", p.replace('+', ".")),
    }
}

/// The DeviceClass of `m`'s full GPUs or of its MIG `profile` (driver name); `None`
/// when the model has no product name to select it by (refused by GP055).
pub(crate) fn device_class(m: &GpuModel, profile: Option<&str>) -> Option<DeviceClassFacts> {
    let attr = |k: &str| format!("device.attributes['{DRIVER}'].{k}");
    let product = m.product_name.as_deref()?;
    let mut terms = vec![
        format!("device.driver == {}", cel_string(DRIVER)),
        format!(
            "{} == {}",
            attr("type"),
            cel_string(if profile.is_some() { "mig" } else { "gpu" })
        ),
        format!("{} == {}", attr("productName"), cel_string(product)),
    ];
    if let Some(a) = m.catalog.and_then(|g| architecture(g.architecture)) {
        terms.push(format!("{} == {}", attr("architecture"), cel_string(a)));
    }
    if let Some(p) = profile {
        terms.push(format!("{} == {}", attr("profile"), cel_string(p)));
    }
    Some(DeviceClassFacts {
        name: device_class_name(&m.name, profile),
        model: m.name.clone(),
        profile: profile.map(String::from),
        expression: terms.join(" && "),
    })
}

/// A CEL string literal: single-quoted, `\` and `'` escaped.
fn cel_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The architecture as the driver publishes it: go-nvlib's
/// `GetArchitectureAsString` (`Hopper`, `Ada Lovelace`, ...).
fn architecture(catalog: &str) -> Option<&'static str> {
    Some(match catalog {
        "kepler" => "Kepler",
        "maxwell" => "Maxwell",
        "pascal" => "Pascal",
        "volta" => "Volta",
        "turing" => "Turing",
        "ampere" => "Ampere",
        "ada" => "Ada Lovelace",
        "hopper" => "Hopper",
        "blackwell" => "Blackwell",
        _ => return None,
    })
}

/// What a group of pods asking `ask` on DRA nodes `nodes` (its GPU `models`) claims; a
/// gang of `pods` pods of a training class (`gang`). `None` for CPU-only pods.
pub(super) fn group(
    c: &Cluster,
    ask: &Ask,
    models: &[String],
    nodes: &[&NodeFacts],
    gang: bool,
    pods: u32,
) -> Option<DraGroup> {
    let (profile, count, sharing) = match ask {
        Ask::Cpu => return None,
        Ask::Whole { gpus } => (None, *gpus, None),
        Ask::Mig { profile } => (Some(profile.as_str()), 1, None),
        Ask::Shared { thousandths, mps } => {
            let sharing = if *mps {
                let mib = models
                    .first()
                    .and_then(|m| c.models.get(m))
                    .map_or(0, |m| m.memory.mib());
                DraSharing::Mps {
                    threads: thousandths / 10,
                    memory: format!("{}Mi", mib * u64::from(*thousandths) / 1000),
                }
            } else {
                DraSharing::TimeSlicing
            };
            (None, 1, Some(sharing))
        }
    };
    let classes = models
        .iter()
        .map(|m| (m.clone(), device_class_name(m, profile)))
        .collect();
    let domains: BTreeSet<Option<&String>> =
        nodes.iter().map(|n| n.domains.get("nvlink")).collect();
    let one_domain = matches!(domains.iter().next(), Some(Some(_))) && domains.len() == 1;
    let compute_domain = (gang && pods > 1 && one_domain).then_some(pods);
    let cliques: BTreeSet<Option<&String>> =
        nodes.iter().map(|n| n.labels.get(CLIQUE_LABEL)).collect();
    let clique = match cliques.into_iter().collect::<Vec<_>>()[..] {
        [Some(v)] if compute_domain.is_some() => Some(v.clone()),
        _ => None,
    };
    Some(DraGroup {
        classes,
        count,
        sharing,
        compute_domain,
        clique,
        gpu: None,
    })
}

/// Whether the nodes (two or more) all sit in one multi-node NVLink domain: a gang
/// there needs an IMEX channel (a ComputeDomain, or Slurm's `switch/nvidia_imex`).
pub(crate) fn one_domain<'a>(c: &Cluster, nodes: impl Iterator<Item = &'a str>) -> bool {
    let mut count = 0;
    let mut domains = BTreeSet::new();
    for n in nodes {
        count += 1;
        let d = c.node(n).and_then(|x| {
            x.mnnvl
                .iter()
                .copied()
                .find(|&d| c.nvlink_domains[d].multi_node)
        });
        domains.insert(d);
    }
    count > 1 && domains.len() == 1 && domains.iter().all(Option::is_some)
}

/// Every DeviceClass the groups claim from, sorted by name.
pub(super) fn device_classes(c: &Cluster, classes: &[super::ClassFacts]) -> Vec<DeviceClassFacts> {
    let mut wanted: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    for g in classes.iter().flat_map(|c| &c.groups) {
        let Some(_) = &g.dra else { continue };
        let profile = match &g.ask {
            Ask::Mig { profile } => Some(profile.clone()),
            _ => None,
        };
        for m in &g.models {
            wanted.insert((m.clone(), profile.clone()));
        }
    }
    let mut out: Vec<DeviceClassFacts> = wanted
        .iter()
        .filter_map(|(m, p)| device_class(c.models.get(m)?, p.as_deref()))
        .collect();
    out.sort();
    out
}
