//! Kueue and DRA: the `deviceClassMappings` fragment of Kueue's Configuration that makes
//! Kueue charge the devices of the ResourceClaimTemplates gpuplan renders to the
//! resources the ClusterQueues cover (whole GPUs `nvidia.com/gpu`, MIG devices
//! `nvidia.com/mig-<profile>`), and GP942 when the declared Kueue does not count them
//! by default (kubernetes-sigs/kueue site/content/en/docs/concepts/
//! dynamic_resource_allocation.md and tasks/manage/setup_dra.md: the
//! ResourceClaimTemplate path is alpha from 0.14 behind `DynamicResourceAllocation`,
//! beta and on by default from 0.18 as `KueueDRAIntegration`).

use crate::diag::Diagnostic;
use crate::render::facts::{Ask, Facts, GPU_RESOURCE, GroupFacts, mig_resource};
use crate::render::run;
use minijinja::Environment;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// GP942: the declared Kueue does not count DRA devices by default.
pub(crate) const GP942: &str = "GP942";

/// The first Kueue that counts ResourceClaimTemplate devices by default.
const KUEUE_DRA_BETA: &[u32] = &[0, 18];

#[derive(Serialize)]
struct Ctx {
    header: String,
    /// Resource -> the DeviceClasses charged to it.
    mappings: Vec<(String, Vec<String>)>,
}

/// `dra-configuration.yaml` when some group Kueue runs claims devices, with GP942 when
/// the Kueue named (or none) is older than 0.18.
pub(super) fn configuration(
    f: &Facts,
    env: &Environment,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<String>, Diagnostic> {
    let mut mappings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for g in f.classes.iter().flat_map(|c| &c.groups) {
        let Some(d) = g.dra.as_ref().filter(|d| d.sharing.is_none()) else {
            continue;
        };
        let resource = match &g.ask {
            Ask::Mig { profile } => mig_resource(profile),
            _ => GPU_RESOURCE.to_string(),
        };
        let e = mappings.entry(resource).or_default();
        e.extend(d.classes.iter().map(|(_, class)| class.clone()));
    }
    if mappings.is_empty() {
        return Ok(None);
    }
    let declared = f.c.kueue_version.as_deref();
    if declared.is_none_or(|v| v < KUEUE_DRA_BETA) {
        let named = declared.map_or("names no Kueue version".to_string(), |v| {
            format!(
                "names Kueue {}",
                v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
            )
        });
        warnings.push(
            Diagnostic::warning(
                GP942,
                format!("classes under Kueue claim GPUs through DRA and the cluster {named}: Kueue counts ResourceClaimTemplate devices by default only from 0.18 (KueueDRAIntegration; 0.14 to 0.17 behind the alpha DynamicResourceAllocation gate, older not at all)"),
            )
            .with_help("declare the Kueue the cluster runs (`cluster { kueue version=\"0.18\" }` or newer), or enable the DynamicResourceAllocation feature gate on Kueue 0.14 to 0.17; then merge kueue/dra-configuration.yaml into Kueue's Configuration"),
        );
    }
    let ctx = Ctx {
        header: f.header(),
        mappings: mappings
            .into_iter()
            .map(|(r, cs)| (r, cs.into_iter().collect()))
            .collect(),
    };
    run(env, "kueue/dra-configuration.yaml.j2", &ctx).map(Some)
}

/// Whether Kueue can carry group `g`: not a GPU shared through one ResourceClaim that
/// several pods reference (Kueue admits ResourceClaimTemplates only). Declared Kueue
/// classes never share on DRA nodes (GP056); without declared authorities the Kueue
/// target leaves such groups out, as the device plugin's uncarried fractions (GP919).
pub(super) fn carried(g: &GroupFacts) -> bool {
    g.dra.as_ref().is_none_or(|d| d.sharing.is_none())
}

/// GP919 per class with groups [`carried`] refuses.
pub(super) fn uncarried(f: &Facts) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in &f.classes {
        let mut nodes: Vec<String> = c
            .groups
            .iter()
            .filter(|g| g.k8s_carried && !carried(g))
            .flat_map(|g| g.nodes.iter().cloned())
            .collect();
        if nodes.is_empty() {
            continue;
        }
        nodes.sort();
        nodes.dedup();
        out.push(
            Diagnostic::warning(
                crate::render::GP919,
                format!(
                    "target `kueue` leaves out replicas of `{}` on {}: they share a GPU through one ResourceClaim on DRA nodes, and Kueue admits only ResourceClaimTemplates (one claim per pod)",
                    c.name,
                    crate::units::compress_names(&nodes).join(",")
                ),
            )
            .with_help("declare the scheduler (`cluster { scheduler \"kubernetes\" }` or `\"volcano\"`): GP056 refuses shared classes under Kueue on DRA nodes; or keep them on device-plugin nodes"),
        );
    }
    out
}
