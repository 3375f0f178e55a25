//! The GPU Operator's own objects (NVIDIA/gpu-operator, `nvidia.com/v1` ClusterPolicy
//! and `nvidia.com/v1alpha1` NVIDIADriver, GPU Operator 23.9 and later), beside the
//! ConfigMaps of `k8s/gpu-operator.yaml`:
//!
//! - `k8s/gpu-operator-drivers.yaml`: one NVIDIADriver per distinct declared driver
//!   (`gpus driver=`, else the GPU model's `driver`), whose `nodeSelector` is the
//!   node label `gpuplan.io/driver` that gpuplan puts on exactly the nodes running it.
//!   A full version installs that driver (`driverType: gpu`); a bare branch (`"550"`)
//!   is what precompiled driver images are tagged with (`usePrecompiled: true`).
//!   Nodes whose driver is not declared get no NVIDIADriver: gpuplan does not guess.
//! - `k8s/gpu-operator-policy.yaml`: a ClusterPolicy fragment that points MIG Manager
//!   (`migManager.config.name`) and the device plugin (`devicePlugin.config`) at the
//!   ConfigMaps gpuplan writes, sets the `mixed` MIG strategy gpuplan's resource names
//!   need, and hands the driver to the NVIDIADriver objects (`driver.useNvidiaDriverCRD`)
//!   when there are any. Every other section is `{}`, so applied as a merge patch
//!   (`kubectl patch clusterpolicy/cluster-policy --type merge --patch-file ...`) it
//!   changes only these keys; it is also a complete object the CRD schema accepts.

use super::facts::Facts;
use super::{Files, run};
use crate::diag::Diagnostic;
use crate::names::DRIVER_LABEL;
use minijinja::Environment;
use serde::Serialize;
use std::collections::BTreeMap;

/// One NVIDIADriver: a declared driver and the nodes that run it.
#[derive(Serialize)]
struct Driver {
    /// `gpuplan-driver-550-54-15`.
    name: String,
    /// The declared driver as written in the label (`550.54.15`).
    version: String,
    /// A bare branch (`550`): precompiled driver images are tagged by branch.
    precompiled: bool,
    label: &'static str,
    /// The nodes it selects, for the comment (hostlist ranges).
    nodes: String,
}

#[derive(Serialize)]
struct Ctx {
    header: String,
    drivers: Vec<Driver>,
    /// Some node has a MIG configuration (mig-parted config and `mixed` strategy).
    mig: bool,
}

/// The NVIDIADriver objects (when a driver is declared) and the ClusterPolicy fragment.
pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let mut by_driver: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for n in &f.nodes {
        if let Some(d) = n.labels.get(DRIVER_LABEL) {
            by_driver.entry(d).or_default().push(n.name.clone());
        }
    }
    let drivers: Vec<Driver> = by_driver
        .into_iter()
        .map(|(v, nodes)| Driver {
            name: format!("gpuplan-driver-{}", v.replace('.', "-")),
            version: v.to_string(),
            precompiled: !v.contains('.'),
            label: DRIVER_LABEL,
            nodes: super::facts::range(&nodes),
        })
        .collect();
    let ctx = Ctx {
        header: f.header(),
        mig: f.nodes.iter().any(|n| n.mig_config.is_some()),
        drivers,
    };
    let mut files = Files::new();
    if !ctx.drivers.is_empty() {
        files.insert(
            "gpu-operator-drivers.yaml".into(),
            run(env, "k8s/gpu-operator-drivers.yaml.j2", &ctx)?,
        );
    }
    files.insert(
        "gpu-operator-policy.yaml".into(),
        run(env, "k8s/gpu-operator-policy.yaml.j2", &ctx)?,
    );
    Ok(files)
}
