//! Discovery: what a real node has, read through NVML, as the [`Inventory`] every
//! source of one machine produces (NVML here; the `nvidia-smi` outputs in
//! `import::nvidia_smi`, which reads them into the same model).
//!
//! ```text
//! NVML (nvml.rs, behind GpuSource) --collect--> Snapshot --inventory--> Inventory --serde--> JSON
//! nvidia-smi outputs (import::nvidia_smi) ---------------------------/      \
//!                         import::nvidia_smi::inventory --> import::doc --> KDL text
//! MIG profiles, driver's names (profiles.rs) --catalog check--> `gpu-model` pins
//! ```
//!
//! Everything above the [`GpuSource`] trait is pure: model matching against the catalog,
//! NVLink domains (connected components over active links), NUMA and PCIe grouping, the
//! MIG profile check. Only [`nvml`] touches the driver, and it loads `libnvidia-ml.so.1` at run
//! time, so the binary runs on machines without the NVIDIA driver. Diagnostics use the codes
//! `GP700`-`GP722` listed in `docs/discover.md`.

// A failed derivation returns the one `Diagnostic` that explains it; boxing it buys nothing.
#![allow(clippy::result_large_err)]

pub mod derive;
pub mod nvml;
pub mod profiles;

use serde::{Deserialize, Serialize};

/// NVML could not be loaded or initialised (no driver, no `libnvidia-ml.so.1`).
pub(crate) const GP700: &str = "GP700";
/// An NVML query failed.
pub const GP701: &str = "GP701";
/// A GPU is not in the built-in catalog: a `gpu-model` is declared from what was read.
pub(crate) const GP702: &str = "GP702";
/// MIG mode is pending a change (current and pending differ).
pub(crate) const GP703: &str = "GP703";
/// The input is not the expected `nvidia-smi` output at all.
pub(crate) const GP710: &str = "GP710";
/// The input is truncated: rows, cells or elements that the output always has are missing.
pub(crate) const GP711: &str = "GP711";
/// A value in the input cannot be read.
pub(crate) const GP712: &str = "GP712";
/// An incomplete record that carries nothing essential was skipped.
pub(crate) const GP713: &str = "GP713";
/// The GPU model cannot be told from the input; `--model` is needed.
pub const GP714: &str = "GP714";
/// A MIG profile name differs from the catalog (driver rename).
pub(crate) const GP720: &str = "GP720";
/// A MIG profile's usable memory differs from the catalog.
pub(crate) const GP721: &str = "GP721";
/// A MIG profile ID the catalog does not know for this model.
pub(crate) const GP722: &str = "GP722";

/// Version of the JSON documents `discover --format json` and `import --format json` print.
pub(crate) const FORMAT_VERSION: &str = "1";

/// An error from a [`GpuSource`]: a message and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    pub code: &'static str,
    pub message: String,
    pub help: Option<String>,
}

/// What NVML says about one node's driver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    pub driver_version: Option<String>,
    /// CUDA driver API version, e.g. `12.2`.
    pub cuda_version: Option<String>,
}

/// The abstraction over NVML: everything discovery needs, nothing more. [`nvml::Nvml`]
/// implements it on a real node; tests implement it with recorded or fake data.
pub trait GpuSource {
    fn system(&self) -> Result<SystemInfo, SourceError>;
    fn gpu_count(&self) -> Result<u32, SourceError>;
    /// GPU `index` in the driver's order (the `nvidia-smi` index).
    fn gpu(&self, index: u32) -> Result<GpuFacts, SourceError>;
}

/// What is known about one physical GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuFacts {
    pub index: u32,
    /// Product name as NVML reports it, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: Option<String>,
    /// PCI device id without the vendor, e.g. `0x2330`.
    pub pci_device_id: Option<u16>,
    /// PCI bus id, `domain:bus:device.function`, e.g. `00000000:18:00.0`.
    pub bus_id: Option<String>,
    pub uuid: Option<String>,
    /// Total memory in MiB.
    pub memory_mib: Option<u64>,
    /// `None`: the GPU has no MIG (or it is unknown).
    pub mig: Option<MigFacts>,
    /// NVLink links that are active.
    #[serde(default)]
    pub nvlinks: Vec<NvlinkFacts>,
    pub numa_node: Option<u32>,
    /// Logical CPUs close to the GPU, as an index set (`0-55,112-167`).
    pub cpu_affinity: Option<String>,
}

/// MIG mode and, when enabled, the instances that exist.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MigFacts {
    pub current: bool,
    pub pending: bool,
    #[serde(default)]
    pub gpu_instances: Vec<GpuInstanceFacts>,
}

/// One GPU instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuInstanceFacts {
    pub id: u32,
    /// The profile ID `nvidia-smi mig -lgip` prints (not the NVML enum).
    pub profile_id: Option<u32>,
    /// Profile name as the driver reports it, e.g. `3g.40gb`.
    pub profile: Option<String>,
    /// Placement in memory slices.
    pub start: Option<u32>,
    pub size: Option<u32>,
    pub memory_mib: Option<u64>,
    #[serde(default)]
    pub compute_instances: Vec<ComputeInstanceFacts>,
}

impl GpuInstanceFacts {
    /// Records one MIG device of an `nvidia-smi` report (one per compute instance): GPU
    /// instance `gi`, first seen with the memory `memory` gives (asked only then), and its
    /// compute instance `ci` when the report names one.
    pub(crate) fn record(
        instances: &mut Vec<GpuInstanceFacts>,
        gi: u32,
        ci: Option<u32>,
        memory: impl FnOnce() -> Option<u64>,
    ) {
        let pos = match instances.iter().position(|x| x.id == gi) {
            Some(p) => p,
            None => {
                instances.push(GpuInstanceFacts {
                    id: gi,
                    memory_mib: memory(),
                    ..GpuInstanceFacts::default()
                });
                instances.len() - 1
            }
        };
        if let Some(ci) = ci {
            instances[pos].compute_instances.push(ComputeInstanceFacts {
                id: ci,
                ..ComputeInstanceFacts::default()
            });
        }
    }
}

/// One compute instance inside a GPU instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ComputeInstanceFacts {
    pub id: u32,
    pub profile_id: Option<u32>,
    /// Compute slices, when known.
    pub slices: Option<u32>,
}

/// One active NVLink link.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NvlinkFacts {
    pub link: u32,
    /// PCI bus id of the far end (a GPU or an NVSwitch).
    pub remote_bus_id: String,
}

/// Everything NVML reported for a node: what `GpuSource` returns, gathered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub system: SystemInfo,
    pub gpus: Vec<GpuFacts>,
}

impl Snapshot {
    /// Replays a recorded snapshot (tests, or a JSON file captured on another node).
    pub fn source(&self) -> RecordedSource<'_> {
        RecordedSource(self)
    }
}

/// A [`GpuSource`] over recorded data.
pub struct RecordedSource<'a>(&'a Snapshot);

impl GpuSource for RecordedSource<'_> {
    fn system(&self) -> Result<SystemInfo, SourceError> {
        Ok(self.0.system.clone())
    }
    fn gpu_count(&self) -> Result<u32, SourceError> {
        Ok(self.0.gpus.len() as u32)
    }
    fn gpu(&self, index: u32) -> Result<GpuFacts, SourceError> {
        self.0
            .gpus
            .get(index as usize)
            .cloned()
            .ok_or_else(|| SourceError {
                code: GP701,
                message: format!("no GPU {index}"),
                help: None,
            })
    }
}

/// Reads every GPU of a source. The first failure stops: a partial inventory would be a
/// guess about the GPUs that could not be read.
pub fn collect(src: &dyn GpuSource) -> Result<Snapshot, SourceError> {
    let system = src.system()?;
    let n = src.gpu_count()?;
    let gpus = (0..n).map(|i| src.gpu(i)).collect::<Result<Vec<_>, _>>()?;
    Ok(Snapshot { system, gpus })
}

/// A NIC seen in a topology matrix.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NicFacts {
    /// Column name in the matrix (`NIC0`, `mlx5_0`).
    pub name: String,
    /// Device name from the matrix's NIC legend, when it has one.
    pub device: Option<String>,
    pub numa_node: Option<u32>,
}

/// The node as gpuplan describes it: the one result model every source produces and
/// every printer (KDL, JSON) renders.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inventory {
    pub format_version: &'static str,
    /// `nvml`, `nvidia-smi-topo`, `nvidia-smi-xml`.
    pub source: &'static str,
    pub node: String,
    pub class: String,
    pub system: SystemInfo,
    /// The GPU model every GPU matched (a node class has one model).
    pub model: derive::ModelMatch,
    pub gpus: Vec<GpuFacts>,
    pub nics: Vec<NicFacts>,
    /// GPU index sets joined by NVLink, each with at least two GPUs.
    pub nvlink_domains: Vec<Vec<u32>>,
    /// NVLink link count per GPU pair as `nvidia-smi topo -m` shows it (`NV18`), when known.
    pub nvlink_links: Option<u32>,
    pub numa: Vec<derive::NumaGroup>,
    pub pcie_switches: Vec<derive::PcieGroup>,
    /// MIG profile names pinned because the driver renames them: (catalog, driver).
    pub mig_names: Vec<(String, String)>,
    /// Notes printed as comments above the KDL (what was not known, what to check).
    pub notes: Vec<String>,
}

/// How the node and its class are named in the output.
#[derive(Clone, Debug, Default)]
pub struct Naming {
    pub node: String,
    /// Default: `<model>-x<gpus>`.
    pub class: Option<String>,
    /// Overrides model matching (`--model`).
    pub model: Option<String>,
}

/// Turns per-GPU facts (from NVML or `nvidia-smi -q -x`) into an [`Inventory`], with
/// the warnings found on the way (models outside the catalog, renamed MIG profiles,
/// pending MIG mode changes).
pub fn inventory(
    source: &'static str,
    snap: &Snapshot,
    naming: &Naming,
) -> Result<(Inventory, Vec<crate::diag::Diagnostic>), crate::diag::Diagnostic> {
    let (model, mut diags) = match &naming.model {
        Some(m) => (derive::ModelMatch::named(m), Vec::new()),
        None => derive::match_node(&snap.gpus)?,
    };
    let mut mig_names = Vec::new();
    let mut snap = snap.clone();
    if let Some(mig) = model.spec().and_then(|s| s.mig) {
        name_instances_by_profile_id(&mut snap, mig);
    }
    if let Some(spec) = model.spec() {
        let (pins, d) = profiles::compare(spec, &observed_profiles(&snap));
        mig_names = pins;
        diags.extend(d);
    }
    diags.extend(snap.gpus.iter().filter_map(pending_mig_mode));
    let class = naming
        .class
        .clone()
        .unwrap_or_else(|| format!("{}-x{}", model.name, snap.gpus.len()));
    let inv = Inventory {
        format_version: FORMAT_VERSION,
        source,
        node: naming.node.clone(),
        class,
        system: snap.system.clone(),
        model,
        nvlink_domains: derive::nvlink_domains_from_links(&snap.gpus),
        nvlink_links: None,
        numa: derive::numa_groups(&snap.gpus),
        pcie_switches: Vec::new(),
        nics: Vec::new(),
        mig_names,
        gpus: snap.gpus.clone(),
        notes: Vec::new(),
    };
    Ok((inv, diags))
}

/// A GPU instance whose MIG device name could not be read is named by its profile ID.
fn name_instances_by_profile_id(snap: &mut Snapshot, mig: &crate::catalog::MigSpec) {
    for gi in snap
        .gpus
        .iter_mut()
        .filter_map(|g| g.mig.as_mut())
        .flat_map(|m| &mut m.gpu_instances)
        .filter(|gi| gi.profile.is_none())
    {
        gi.profile = gi
            .profile_id
            .and_then(|id| mig.profiles.iter().find(|p| p.id == id))
            .map(|p| p.name.to_string());
    }
}

/// The profiles of the GPU instances that have both an ID and a name.
fn observed_profiles(snap: &Snapshot) -> Vec<profiles::ObservedProfile> {
    snap.gpus
        .iter()
        .filter_map(|g| g.mig.as_ref())
        .flat_map(|m| &m.gpu_instances)
        .filter_map(|gi| {
            Some(profiles::ObservedProfile {
                id: gi.profile_id?,
                name: gi.profile.clone()?,
                memory_gib: None,
                span: None,
            })
        })
        .collect()
}

/// GP703 for a GPU whose MIG mode changes at the next reset.
fn pending_mig_mode(g: &GpuFacts) -> Option<crate::diag::Diagnostic> {
    let m = g.mig.as_ref().filter(|m| m.current != m.pending)?;
    let mode = |on: bool| if on { "enabled" } else { "disabled" };
    Some(
        crate::diag::Diagnostic::warning(
            GP703,
            format!(
                "GPU {}: MIG mode is {} but {} is pending",
                g.index,
                mode(m.current),
                mode(m.pending)
            ),
        )
        .with_help(
            "the pending mode takes effect after a GPU reset or reboot; discover again afterwards",
        ),
    )
}
