//! The built-in GPU catalog: models, memory, NVLink, MIG profiles and placement rules.
//!
//! Facts come from `../shared/reference/mig.md` and `limits.md` (NVIDIA MIG User Guide,
//! `nvidia-smi mig -lgip/-lgipp` transcripts, mig-parted). Profile IDs are keyed by
//! (GPU model, profile name): the same numeric ID means different shapes on A30 and A100.
//! [`placement`] decides whether a multiset of MIG profiles fits one GPU by the
//! hardware's start-slot rules.

pub mod cuda;
pub mod data;
pub mod memory;
pub mod placement;

pub use data::profile_min_driver;
pub use memory::usable_memory_gib;

pub use placement::{
    FitError, Placement, enumerate_layouts, fits, fits_profiles, is_maximal, sort_canonical,
};

/// NVLink capability of a GPU model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct NvlinkSpec {
    pub generation: u8,
    /// NVLink links per GPU.
    pub links: u8,
    /// Aggregate bidirectional bandwidth per GPU in GB/s.
    pub bandwidth_gbs: u32,
}

/// One GPU-instance profile of a MIG-capable model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct MigProfile {
    /// Name as `nvidia-smi mig -lgip` prints it without the `MIG ` prefix, e.g. `3g.40gb`.
    pub name: &'static str,
    /// The profile ID `nvidia-smi mig -lgip` prints and `-cgi` accepts.
    pub id: u32,
    /// Compute (SM) slices.
    pub compute_slices: u8,
    /// Memory slices occupied (the placement size).
    pub memory_slices: u8,
    /// Maximum number of instances of this profile on one GPU.
    pub max_count: u8,
    /// Allowed placement start slots (memory-slice index), from `-lgipp`.
    pub starts: &'static [u8],
    /// Usable memory in GiB as `nvidia-smi mig -lgip` reports it (the highest seen, or
    /// derived). Right-sizing uses [`memory::usable_memory_gib`], the value that holds
    /// on a given driver.
    pub memory_gib: f64,
    /// Whether `memory_gib` was read from a real `-lgip` transcript (otherwise derived).
    pub memory_observed: bool,
    /// Media-extension variant (`+me`): at most one per GPU.
    pub media_extensions: bool,
    /// Media engine sets (NVDEC/NVENC/JPEG) the instance takes, on models that count
    /// them ([`MigSpec::engines`]; Blackwell GB20x: `-me` takes none, `+me.all` all).
    pub decoders: u8,
    /// Optical-flow accelerators the instance takes (same models).
    pub ofa: u8,
}

/// MIG geometry of a model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct MigSpec {
    pub memory_slices: u8,
    pub compute_slices: u8,
    pub max_instances: u8,
    pub profiles: &'static [MigProfile],
    /// Minimum driver branch for MIG on this model, e.g. `R525`.
    pub min_driver: &'static str,
    /// Media engine sets and OFAs the GPU has, where instances must share them out
    /// (RTX PRO 6000 Blackwell: 4 and 1, so `+me.all` leaves only `-me` beside it);
    /// `None` where the `+me` rule alone holds.
    pub engines: Option<(u8, u8)>,
    /// Profile names a newer driver prints for the same shape (catalog name, driver
    /// name), as mig-parted configures them (GB200: `7g.186gb` / `7g.189gb`).
    pub driver_names: &'static [(&'static str, &'static str)],
}

impl MigSpec {
    pub fn profile(&self, name: &str) -> Option<&'static MigProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// A profile by its catalog name or a name a driver prints for it.
    pub fn profile_any_name(&self, name: &str) -> Option<&'static MigProfile> {
        self.profile(name).or_else(|| {
            self.driver_names
                .iter()
                .find(|(_, d)| *d == name)
                .and_then(|(c, _)| self.profile(c))
        })
    }

    /// The minimum driver branch as a number (`R525` -> 525).
    pub(crate) fn min_driver_branch(&self) -> u32 {
        self.min_driver.trim_start_matches('R').parse().unwrap_or(0)
    }
}

/// A GPU model of the built-in catalog.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GpuSpec {
    /// gpuplan's stable id, e.g. `h100-sxm5-80gb`.
    pub id: &'static str,
    /// Other accepted spellings (lowercase).
    pub aliases: &'static [&'static str],
    /// Product name as NVML / `nvidia-smi` reports it, e.g. `NVIDIA H100 80GB HBM3`.
    pub product_names: &'static [&'static str],
    /// PCI device ids (without the vendor part), e.g. `0x2330`.
    pub pci_device_ids: &'static [u16],
    pub architecture: &'static str,
    /// Total memory in MiB.
    pub memory_mib: u64,
    pub nvlink: Option<NvlinkSpec>,
    pub mig: Option<&'static MigSpec>,
    /// Short type name used for Slurm GRES and labels, e.g. `h100`.
    pub short_name: &'static str,
    /// An NVIDIA data center GPU (every model of the catalog so far). CUDA forward
    /// compatibility (`cuda ... compat=#true`) works only on these, not on GeForce or
    /// RTX workstation parts ([`cuda::forward_compatible`]).
    pub datacenter: bool,
}

/// Every model of the catalog, in a stable order.
pub fn all() -> &'static [GpuSpec] {
    data::MODELS
}

/// Finds a model by id or alias (case-insensitive).
pub fn lookup(name: &str) -> Option<&'static GpuSpec> {
    let lower = name.to_ascii_lowercase();
    all()
        .iter()
        .find(|g| g.id == lower || g.aliases.contains(&lower.as_str()))
}

/// Finds a model by the product name NVML reports (e.g. `NVIDIA A100-SXM4-80GB`).
pub fn lookup_product(product: &str) -> Option<&'static GpuSpec> {
    let p = product.trim();
    all()
        .iter()
        .find(|g| g.product_names.iter().any(|n| n.eq_ignore_ascii_case(p)))
}

/// Finds a model from any name another tool prints for it: gpuplan's id or alias, the
/// NVML product name (`NVIDIA H100 80GB HBM3`), GPU Feature Discovery's label value
/// (`NVIDIA-H100-80GB-HBM3`, also with the `-MIG-3g.40gb` or `-SHARED` suffix GFD adds
/// under the single MIG strategy or time-slicing renames), or a Slurm GRES type
/// (`h100`, `tesla_v100`, `nvidia_a100-sxm4-80gb`, `a100_3g.40gb` for a MIG type as
/// Slurm's NVML autodetection names it). Matching ignores case and punctuation.
pub fn identify(name: &str) -> Option<&'static GpuSpec> {
    let mut base = name.trim();
    for suffix in ["-SHARED", "-shared"] {
        base = base.strip_suffix(suffix).unwrap_or(base);
    }
    if let Some(i) = base.to_ascii_lowercase().find("-mig-") {
        base = &base[..i];
    }
    // Slurm's autodetected MIG types: `<gpu>_<N>g.<M>gb`.
    if let Some((gpu, profile)) = base.rsplit_once('_') {
        if profile.contains('g') && profile.contains('.') && profile.ends_with("gb") {
            base = gpu;
        }
    }
    let key = squash(base);
    let key = key.strip_prefix("nvidia").unwrap_or(&key).to_string();
    let bare = key.strip_prefix("tesla").unwrap_or(&key).to_string();
    if key.is_empty() {
        return None;
    }
    let matches = |g: &GpuSpec, k: &str| {
        squash(g.id) == k
            || g.aliases.iter().any(|a| squash(a) == k)
            || g.product_names.iter().any(|n| {
                let n = squash(n);
                let n = n.strip_prefix("nvidia").unwrap_or(&n);
                n == k || n.strip_prefix("tesla") == Some(k)
            })
    };
    all()
        .iter()
        .find(|g| matches(g, &key))
        .or_else(|| all().iter().find(|g| matches(g, &bare)))
}

/// Lowercase alphanumerics only: `NVIDIA-A100-SXM4-80GB` and `nvidia_a100_sxm4_80gb` agree.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Finds a model by PCI device id.
pub fn lookup_pci(device_id: u16) -> Option<&'static GpuSpec> {
    all().iter().find(|g| g.pci_device_ids.contains(&device_id))
}

#[cfg(test)]
mod tests;
