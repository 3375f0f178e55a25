//! The [`GpuSource`] of a real node: NVML through `nvml-wrapper`.
//!
//! `libnvidia-ml.so.1` is opened at run time (`dlopen` through `libloading`), never linked:
//! the binary starts on machines without the NVIDIA driver, and only `discover` needs it.
//! [`Nvml::load`] tries `libnvidia-ml.so.1` (what the driver installs) and then
//! `libnvidia-ml.so` (the development symlink).
//!
//! Read-only: nothing here changes MIG mode, instances or any GPU setting. GPU and compute
//! instances are listed through the raw NVML functions that `nvml-wrapper` does not wrap
//! (`nvmlDeviceGetGpuInstances`, `nvmlGpuInstanceGetInfo`,
//! `nvmlGpuInstanceGetComputeInstances`, `nvmlComputeInstanceGetInfo_v2`,
//! `nvmlDeviceGetGpuInstanceId`); each call is checked and its buffers are sized by NVML's
//! own counts. This module was written against the NVML headers and is tested against a
//! fake `libnvidia-ml.so.1` (`tests/fake-nvml/`, `tests/it/discover_fake_nvml.rs`); no
//! session had a GPU to record its output (see `docs/discover.md`).

use super::{
    ComputeInstanceFacts, GP700, GP701, GpuFacts, GpuInstanceFacts, GpuSource, MigFacts,
    NvlinkFacts, SourceError, SystemInfo,
};
use nvml_wrapper::Device;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper_sys::bindings as sys;
use std::ffi::OsStr;

/// Library names tried in order.
pub(crate) const LIBRARIES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// A loaded and initialised NVML.
pub struct Nvml(nvml_wrapper::Nvml);

fn not_found_help() -> String {
    "run `gpuplan discover` on a GPU node with the NVIDIA driver installed (it provides \
     libnvidia-ml.so.1); in a container, expose the driver (NVIDIA Container Toolkit, \
     `--gpus all`) or add its folder to LD_LIBRARY_PATH; without a driver, describe the \
     node from saved outputs with `gpuplan import nvidia-smi-topo|nvidia-smi-xml|mig-lgip`"
        .into()
}

impl Nvml {
    /// Loads and initialises NVML; an error says what is missing and how to fix it.
    pub fn load() -> Result<Nvml, SourceError> {
        // The first failure is kept: it is about `libnvidia-ml.so.1`, the name the driver
        // installs; the fallback name only matters on development machines. A library that
        // loads but fails to initialise (no driver) ends the search.
        let mut first = None;
        for lib in LIBRARIES {
            match nvml_wrapper::Nvml::builder()
                .lib_path(OsStr::new(lib))
                .init()
            {
                Ok(n) => return Ok(Nvml(n)),
                Err(e) => {
                    let load_failed = matches!(
                        e,
                        NvmlError::LibloadingError(_) | NvmlError::FailedToLoadSymbol(_)
                    );
                    if first.is_none() || !load_failed {
                        first = Some(e);
                    }
                    if !load_failed {
                        break;
                    }
                }
            }
        }
        Err(match first {
            Some(NvmlError::LibloadingError(e)) => SourceError {
                code: GP700,
                message: format!("NVML was not found: libnvidia-ml.so.1 could not be loaded ({e})"),
                help: Some(not_found_help()),
            },
            Some(NvmlError::DriverNotLoaded) => SourceError {
                code: GP700,
                message: "NVML was found but the NVIDIA driver is not loaded".into(),
                help: Some(
                    "load the kernel module (`modprobe nvidia`) or check `nvidia-smi`".into(),
                ),
            },
            Some(e) => SourceError {
                code: GP700,
                message: format!("NVML could not be initialised: {e}"),
                help: Some(not_found_help()),
            },
            None => SourceError {
                code: GP700,
                message: "NVML was not found".into(),
                help: Some(not_found_help()),
            },
        })
    }
}

fn fail(what: &str, index: Option<u32>, e: NvmlError) -> SourceError {
    SourceError {
        code: GP701,
        message: match index {
            Some(i) => format!("NVML could not read {what} of GPU {i}: {e}"),
            None => format!("NVML could not read {what}: {e}"),
        },
        help: Some("check `nvidia-smi`; permissions to /dev/nvidia* are needed".into()),
    }
}

/// The MIG instances of GPU `index` could not be listed; a driver whose NVML lacks the
/// instance functions is told apart from a failed query.
fn mig_fail(index: u32, e: NvmlError) -> SourceError {
    match e {
        NvmlError::FunctionNotFound | NvmlError::FailedToLoadSymbol(_) => SourceError {
            code: GP701,
            message: format!(
                "GPU {index} has MIG enabled but this driver's NVML lacks the MIG instance \
                 functions (nvmlDeviceGetGpuInstances, nvmlGpuInstanceGetComputeInstances, \
                 nvmlComputeInstanceGetInfo_v2, nvmlDeviceGetGpuInstanceId)"
            ),
            help: Some(
                "update the NVIDIA driver (R470 or newer), or describe the node from \
                 `nvidia-smi -q -x` with `gpuplan import nvidia-smi-xml`"
                    .into(),
            ),
        },
        e => fail("the MIG instances", Some(index), e),
    }
}

/// `Ok(None)` for what a GPU does not support.
fn optional<T>(r: Result<T, NvmlError>) -> Result<Option<T>, NvmlError> {
    match r {
        Ok(v) => Ok(Some(v)),
        // Not supported by this GPU, or by this driver's NVML (an older library lacks the
        // symbol: `nvmlDeviceGetNumaNodeId` came with R535).
        Err(
            NvmlError::NotSupported
            | NvmlError::InvalidArg
            | NvmlError::FunctionNotFound
            | NvmlError::FailedToLoadSymbol(_),
        ) => Ok(None),
        Err(e) => Err(e),
    }
}

impl GpuSource for Nvml {
    fn system(&self) -> Result<SystemInfo, SourceError> {
        let driver = self
            .0
            .sys_driver_version()
            .map_err(|e| fail("the driver version", None, e))?;
        let cuda = optional(self.0.sys_cuda_driver_version())
            .map_err(|e| fail("the CUDA version", None, e))?;
        Ok(SystemInfo {
            driver_version: Some(driver),
            cuda_version: cuda.map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
        })
    }

    fn gpu_count(&self) -> Result<u32, SourceError> {
        self.0
            .device_count()
            .map_err(|e| fail("the GPU count", None, e))
    }

    fn gpu(&self, index: u32) -> Result<GpuFacts, SourceError> {
        let f = |what: &'static str| move |e| fail(what, Some(index), e);
        let d = self.0.device_by_index(index).map_err(f("the handle"))?;
        let pci = d.pci_info().map_err(f("the PCI info"))?;
        let mig = match optional(d.mig_mode()).map_err(f("the MIG mode"))? {
            Some(m) => {
                let current = m.current == 1;
                Some(MigFacts {
                    current,
                    pending: m.pending == 1,
                    gpu_instances: if current {
                        gpu_instances(&self.0, &d).map_err(|e| mig_fail(index, e))?
                    } else {
                        Vec::new()
                    },
                })
            }
            None => None,
        };
        Ok(GpuFacts {
            index,
            name: Some(d.name().map_err(f("the name"))?),
            pci_device_id: Some((pci.pci_device_id >> 16) as u16),
            bus_id: Some(pci.bus_id.clone()),
            uuid: optional(d.uuid()).map_err(f("the UUID"))?,
            memory_mib: Some(d.memory_info().map_err(f("the memory"))?.total / (1024 * 1024)),
            mig,
            nvlinks: nvlinks(&d).map_err(f("the NVLink state"))?,
            numa_node: optional(d.numa_node_id()).map_err(f("the NUMA node"))?,
            cpu_affinity: optional(d.cpu_affinity(16))
                .map_err(f("the CPU affinity"))?
                .map(|mask| {
                    let bits = std::mem::size_of::<std::ffi::c_ulong>() * 8;
                    let cpus: Vec<u32> = mask
                        .iter()
                        .enumerate()
                        .flat_map(|(w, m)| {
                            (0..bits)
                                .filter(move |b| (m >> b) & 1 == 1)
                                .map(move |b| (w * bits + b) as u32)
                        })
                        .collect();
                    crate::units::format_index_set(&cpus)
                }),
        })
    }
}

fn nvlinks(d: &Device) -> Result<Vec<NvlinkFacts>, NvmlError> {
    let mut out = Vec::new();
    for link in 0..sys::NVML_NVLINK_MAX_LINKS {
        let l = d.link_wrapper_for(link);
        match optional(l.is_active())? {
            Some(true) => {
                if let Some(remote) = optional(l.remote_pci_info())? {
                    out.push(NvlinkFacts {
                        link,
                        remote_bus_id: remote.bus_id,
                    });
                }
            }
            Some(false) => {}
            None => break,
        }
    }
    Ok(out)
}

fn check(ret: sys::nvmlReturn_t) -> Result<(), NvmlError> {
    nvml_wrapper::error::nvml_try(ret)
}

/// The raw NVML functions for GPU and compute instances, which `nvml-wrapper` does not
/// wrap.
struct MigCalls {
    get_gis: unsafe extern "C" fn(
        sys::nvmlDevice_t,
        u32,
        *mut sys::nvmlGpuInstance_t,
        *mut u32,
    ) -> sys::nvmlReturn_t,
    gi_info: unsafe extern "C" fn(
        sys::nvmlGpuInstance_t,
        *mut sys::nvmlGpuInstanceInfo_t,
    ) -> sys::nvmlReturn_t,
    get_cis: unsafe extern "C" fn(
        sys::nvmlGpuInstance_t,
        u32,
        *mut sys::nvmlComputeInstance_t,
        *mut u32,
    ) -> sys::nvmlReturn_t,
    ci_info: unsafe extern "C" fn(
        sys::nvmlComputeInstance_t,
        *mut sys::nvmlComputeInstanceInfo_t,
    ) -> sys::nvmlReturn_t,
}

impl MigCalls {
    /// The functions from the loaded library; `FunctionNotFound` when a driver lacks one.
    fn load(lib: &sys::NvmlLib) -> Result<Self, NvmlError> {
        let missing = |_| NvmlError::FunctionNotFound;
        Ok(MigCalls {
            get_gis: *lib.nvmlDeviceGetGpuInstances.as_ref().map_err(missing)?,
            gi_info: *lib.nvmlGpuInstanceGetInfo.as_ref().map_err(missing)?,
            get_cis: *lib
                .nvmlGpuInstanceGetComputeInstances
                .as_ref()
                .map_err(missing)?,
            ci_info: *lib
                .nvmlComputeInstanceGetInfo_v2
                .as_ref()
                .map_err(missing)?,
        })
    }
}

/// The GPU instances of a MIG-enabled GPU, with compute instances and driver names.
fn gpu_instances(
    nvml: &nvml_wrapper::Nvml,
    d: &Device,
) -> Result<Vec<GpuInstanceFacts>, NvmlError> {
    let calls = MigCalls::load(nvml.lib())?;
    let names = mig_names(nvml, d)?;
    let mut out = Vec::new();
    for profile in 0..sys::NVML_GPU_INSTANCE_PROFILE_COUNT {
        let Some(info) = optional(d.profile_info(profile))? else {
            continue;
        };
        // NVML lists instances by profile ID (`info.id`, what `nvidia-smi mig -lgip`
        // prints), not by the `NVML_GPU_INSTANCE_PROFILE_*` index `profile`.
        for gi in instances_of_profile(&calls, d, info.id, info.instance_count)? {
            // SAFETY: zeroed plain C struct, filled by NVML for a handle it returned.
            let mut gi_i: sys::nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
            check(unsafe { (calls.gi_info)(gi, &mut gi_i) })?;
            out.push(GpuInstanceFacts {
                id: gi_i.id,
                profile_id: Some(info.id),
                profile: names
                    .iter()
                    .find(|(id, _)| *id == gi_i.id)
                    .map(|(_, n)| n.clone()),
                start: Some(gi_i.placement.start),
                size: Some(gi_i.placement.size),
                memory_mib: Some(info.memory_size_mb),
                compute_instances: compute_instances(&calls, gi)?,
            });
        }
    }
    out.sort_by_key(|g| (g.start, g.id));
    Ok(out)
}

/// The GPU instances of profile ID `profile_id` on `d` (at most `instance_count` of them,
/// the profile's count, which sizes the buffer); none when the GPU does not support the
/// profile. A list longer than the buffer (`INSUFFICIENT_SIZE`) is an error, not a
/// truncated inventory.
fn instances_of_profile(
    calls: &MigCalls,
    d: &Device,
    profile_id: u32,
    instance_count: u32,
) -> Result<Vec<sys::nvmlGpuInstance_t>, NvmlError> {
    // SAFETY: the handle belongs to `d`, which outlives this function.
    let handle = unsafe { d.handle() };
    let cap = instance_count.max(1) as usize;
    let mut gis: Vec<sys::nvmlGpuInstance_t> = vec![std::ptr::null_mut(); cap];
    let mut count: u32 = 0;
    // SAFETY: `gis` has room for `instance_count` handles, the most NVML returns for
    // one profile; `count` receives how many were written.
    let ret = unsafe { (calls.get_gis)(handle, profile_id, gis.as_mut_ptr(), &mut count) };
    if ret == sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED {
        return Ok(Vec::new());
    }
    check(ret)?;
    gis.truncate((count as usize).min(cap));
    Ok(gis)
}

/// The compute instances of GPU instance `gi`, by id.
fn compute_instances(
    calls: &MigCalls,
    gi: sys::nvmlGpuInstance_t,
) -> Result<Vec<ComputeInstanceFacts>, NvmlError> {
    let mut out = Vec::new();
    for ci_profile in 0..sys::NVML_COMPUTE_INSTANCE_PROFILE_COUNT {
        let mut cis: Vec<sys::nvmlComputeInstance_t> = vec![std::ptr::null_mut(); 8];
        let mut n: u32 = 0;
        // SAFETY: at most 8 compute instances exist per GPU instance (7 compute
        // slices, 8 on GB20x); `n` receives how many were written.
        let ret = unsafe { (calls.get_cis)(gi, ci_profile, cis.as_mut_ptr(), &mut n) };
        // A profile this GPU instance cannot hold; any other failure (a list longer
        // than the buffer included) is an error, not an instance less.
        if ret == sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED
            || ret == sys::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT
        {
            continue;
        }
        check(ret)?;
        for &ci in cis.iter().take((n as usize).min(8)) {
            // SAFETY: as above.
            let mut ci_i: sys::nvmlComputeInstanceInfo_t = unsafe { std::mem::zeroed() };
            check(unsafe { (calls.ci_info)(ci, &mut ci_i) })?;
            out.push(ComputeInstanceFacts {
                id: ci_i.id,
                profile_id: Some(ci_i.profileId),
                slices: ci_slices(ci_profile),
            });
        }
    }
    out.sort_by_key(|c| c.id);
    Ok(out)
}

/// Compute slices of an NVML compute-instance profile enum.
fn ci_slices(profile: u32) -> Option<u32> {
    match profile {
        0 | 7 => Some(1),
        1 => Some(2),
        2 => Some(3),
        3 => Some(4),
        4 => Some(7),
        5 => Some(8),
        6 => Some(6),
        _ => None,
    }
}

/// GPU instance id -> profile name as the driver names the MIG device
/// (`NVIDIA A100-SXM4-80GB MIG 3g.40gb` -> `3g.40gb`).
fn mig_names(nvml: &nvml_wrapper::Nvml, d: &Device) -> Result<Vec<(u32, String)>, NvmlError> {
    let Ok(&gi_id) = nvml.lib().nvmlDeviceGetGpuInstanceId.as_ref() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let max = optional(d.mig_device_count())?.unwrap_or(0);
    for i in 0..max {
        let Ok(m) = d.mig_device_by_index(i) else {
            continue;
        };
        let mut id: u32 = 0;
        // SAFETY: `m` is a valid MIG device handle returned by NVML.
        if unsafe { gi_id(m.handle(), &mut id) } != sys::nvmlReturn_enum_NVML_SUCCESS {
            continue;
        }
        let Some(name) = m
            .name()
            .ok()
            .and_then(|n| n.rsplit_once("MIG ").map(|(_, p)| p.trim().to_string()))
        else {
            continue;
        };
        // A compute instance smaller than its GPU instance is named `1c.3g.40gb`.
        let gi_name = match name.split_once("c.") {
            Some((c, rest)) if c.bytes().all(|b| b.is_ascii_digit()) => rest.to_string(),
            _ => name,
        };
        if !out.iter().any(|(i, _)| *i == id) {
            out.push((id, gi_name));
        }
    }
    Ok(out)
}
