//! A fake `libnvidia-ml.so.1` for gpuplan's `discover` tests.
//!
//! It exports, with the C signatures and struct layouts of `nvml.h` (as in
//! `nvml-wrapper-sys` 0.10's bindings), every NVML function that `gpuplan discover`
//! reaches: the ones `nvml-wrapper` calls for the wrapper methods gpuplan uses and the raw
//! MIG calls of `src/discover/nvml.rs`. Answers come from a machine description (JSON)
//! read at `nvmlInit_v2` from the file named by `GPUPLAN_FAKE_NVML`; see
//! `tests/fixtures/discover/fake-nvml/README.md` for its format. Every exported function
//! that is called appends its name to the file named by `GPUPLAN_FAKE_NVML_LOG`, so a test
//! can check which NVML calls were reached.
//!
//! Errors are NVML's own return codes where a driver returns them: `NOT_SUPPORTED` for
//! what a GPU lacks (no `mig`, no `nvlinks`, no `numa_node` in the description),
//! `INSUFFICIENT_SIZE` for a string buffer too small or an instance list longer than the
//! caller's buffer (sized, per NVML's contract, by the profile's `instanceCount`),
//! `INVALID_ARGUMENT` for a profile ID or index the GPU does not have, and, for a
//! versioned struct of the wrong version, what R580 answers (`FUNCTION_NOT_FOUND`). Where
//! a real driver's answer was recorded (`tests/fixtures/discover/fake-nvml/
//! dev-h100-nvml.txt`, an H100 with R580.159) the fake gives the same. Also
//! `UNINITIALIZED` before `nvmlInit_v2`. A description can also inject an error per
//! function (`"errors": {"nvmlDeviceGetNvLinkState": "NOT_SUPPORTED"}`, at the top level or
//! per GPU) or fail initialisation (`"init_error": "DRIVER_NOT_LOADED"`). A description
//! that cannot be read makes `nvmlInit_v2` return `UNKNOWN`; nothing here panics across
//! the C boundary (every entry point catches unwinding and answers `UNKNOWN`).
//!
//! Handles are opaque tagged integers, never dereferenced by callers.
//!
//! Feature `no-mig-instances`: the GPU/compute instance functions are not exported, as
//! in an NVML that predates them, so `dlsym` fails for those names.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use serde_json::Value;
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_ulonglong, c_void};
use std::io::Write;
use std::sync::Mutex;

type Ret = c_uint;
type Handle = *mut c_void;

const SUCCESS: Ret = 0;
const UNINITIALIZED: Ret = 1;
const INVALID_ARGUMENT: Ret = 2;
const NOT_SUPPORTED: Ret = 3;
const NOT_FOUND: Ret = 6;
const INSUFFICIENT_SIZE: Ret = 7;
const FUNCTION_NOT_FOUND: Ret = 13;
/// `NVML_GPU_INSTANCE_PROFILE_COUNT`: a profile index at or beyond it is an invalid
/// argument (recorded: R580 answers 2 for index 17, 3 for an index in range that the GPU
/// lacks).
const GPU_INSTANCE_PROFILE_COUNT: c_uint = 17;
const UNKNOWN: Ret = 999;

/// NVML return codes by the name after `NVML_ERROR_`.
fn code(name: &str) -> Ret {
    match name {
        "UNINITIALIZED" => 1,
        "INVALID_ARGUMENT" => 2,
        "NOT_SUPPORTED" => 3,
        "NO_PERMISSION" => 4,
        "NOT_FOUND" => 6,
        "INSUFFICIENT_SIZE" => 7,
        "DRIVER_NOT_LOADED" => 9,
        "TIMEOUT" => 10,
        "LIBRARY_NOT_FOUND" => 12,
        "FUNCTION_NOT_FOUND" => 13,
        "GPU_IS_LOST" => 15,
        "LIB_RM_VERSION_MISMATCH" => 18,
        _ => UNKNOWN,
    }
}

#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[repr(C)]
pub struct ProfileInfo {
    id: c_uint,
    is_p2p_supported: c_uint,
    slice_count: c_uint,
    instance_count: c_uint,
    multiprocessor_count: c_uint,
    copy_engine_count: c_uint,
    decoder_count: c_uint,
    encoder_count: c_uint,
    jpeg_count: c_uint,
    ofa_count: c_uint,
    memory_size_mb: c_ulonglong,
}

#[repr(C)]
pub struct Placement {
    start: c_uint,
    size: c_uint,
}

#[repr(C)]
pub struct GpuInstanceInfo {
    device: Handle,
    id: c_uint,
    profile_id: c_uint,
    placement: Placement,
}

#[repr(C)]
pub struct ComputeInstanceInfo {
    device: Handle,
    gpu_instance: Handle,
    id: c_uint,
    profile_id: c_uint,
    placement: Placement,
}

// The sizes of nvml.h on LP64 (nvmlPciInfo_t, nvmlMemory_v2_t, ...).
const _: () = assert!(std::mem::size_of::<PciInfo>() == 68);
const _: () = assert!(std::mem::size_of::<MemoryV2>() == 40);
const _: () = assert!(std::mem::size_of::<ProfileInfo>() == 48);
const _: () = assert!(std::mem::size_of::<GpuInstanceInfo>() == 24);
const _: () = assert!(std::mem::size_of::<ComputeInstanceInfo>() == 32);

/// `NVML_STRUCT_VERSION(Memory, 2)`.
const MEMORY_V2_VERSION: c_uint = (std::mem::size_of::<MemoryV2>() as c_uint) | (2 << 24);

static MACHINE: Mutex<Option<Value>> = Mutex::new(None);

// ---- handles ------------------------------------------------------------------------

const KIND_SHIFT: usize = 40;
const DEV: usize = 1;
const MIG: usize = 2;
#[cfg_attr(feature = "no-mig-instances", allow(dead_code))]
const GI: usize = 3;
#[cfg_attr(feature = "no-mig-instances", allow(dead_code))]
const CI: usize = 4;

#[derive(Clone, Copy)]
struct Decoded {
    kind: usize,
    gpu: usize,
    gi: usize,
    ci: usize,
}

fn handle(kind: usize, gpu: usize, gi: usize, ci: usize) -> Handle {
    ((kind << KIND_SHIFT) | (gpu << 16) | (gi << 8) | ci) as Handle
}

fn decode(h: Handle) -> Decoded {
    let v = h as usize;
    Decoded {
        kind: v >> KIND_SHIFT,
        gpu: (v >> 16) & 0xff,
        gi: (v >> 8) & 0xff,
        ci: v & 0xff,
    }
}

// ---- plumbing -----------------------------------------------------------------------

fn log(name: &str) {
    let Some(path) = std::env::var_os("GPUPLAN_FAKE_NVML_LOG") else {
        return;
    };
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{name}");
    }
}

fn injected(v: &Value, name: &str) -> Option<Ret> {
    v.get("errors")?.get(name)?.as_str().map(code)
}

/// Runs an entry point: logs it, catches unwinding, and answers `UNINITIALIZED` before
/// `nvmlInit_v2` and an injected error where the description has one.
fn entry(name: &str, f: impl FnOnce(&Value) -> Ret) -> Ret {
    log(name);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let guard = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(m) = guard.as_ref() else {
            return UNINITIALIZED;
        };
        if let Some(e) = injected(m, name) {
            return e;
        }
        f(m)
    }))
    .unwrap_or(UNKNOWN)
}

/// An entry point on a GPU handle of `kinds`, with the GPU's injected errors applied.
fn on_gpu(name: &str, h: Handle, kinds: &[usize], f: impl FnOnce(&Value, Decoded) -> Ret) -> Ret {
    entry(name, |m| {
        let d = decode(h);
        if !kinds.contains(&d.kind) {
            return INVALID_ARGUMENT;
        }
        let Some(gpu) = m.get("gpus").and_then(|g| g.get(d.gpu)) else {
            return INVALID_ARGUMENT;
        };
        if let Some(e) = injected(gpu, name) {
            return e;
        }
        f(gpu, d)
    })
}

fn u32_of(v: &Value, key: &str) -> Option<u32> {
    v.get(key)?.as_u64().and_then(|n| u32::try_from(n).ok())
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)?.as_str()
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

unsafe fn put<T>(p: *mut T, v: T) -> Ret {
    if p.is_null() {
        return INVALID_ARGUMENT;
    }
    unsafe { p.write(v) };
    SUCCESS
}

/// Copies `s` and a NUL into `buf` of `len` bytes; `INSUFFICIENT_SIZE` when it does not fit.
unsafe fn put_str(s: &str, buf: *mut c_char, len: c_uint) -> Ret {
    if buf.is_null() {
        return INVALID_ARGUMENT;
    }
    if s.len() + 1 > len as usize {
        return INSUFFICIENT_SIZE;
    }
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, s.len());
        *buf.add(s.len()) = 0;
    }
    SUCCESS
}

fn fill<const N: usize>(s: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(s.bytes().take(N - 1)) {
        *o = b as c_char;
    }
    out
}

/// `nvmlPciInfo_t` for bus id `domain:bus:device.function` (hex).
fn pci_info(bus_id: &str, device_id: u32) -> Option<PciInfo> {
    let (domain, rest) = bus_id.split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (dev, _func) = rest.split_once('.')?;
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    let (domain, bus, dev) = (hex(domain)?, hex(bus)?, hex(dev)?);
    Some(PciInfo {
        bus_id_legacy: fill(&format!("{:04x}:{bus:02x}:{dev:02x}.0", domain as u16)),
        domain,
        bus,
        device: dev,
        pci_device_id: device_id,
        pci_sub_system_id: 0,
        bus_id: fill(bus_id),
    })
}

fn hex_u32(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

// ---- init ---------------------------------------------------------------------------

fn load_description() -> Result<Value, Ret> {
    let path = std::env::var_os("GPUPLAN_FAKE_NVML").ok_or(UNKNOWN)?;
    let text = std::fs::read_to_string(path).map_err(|_| UNKNOWN)?;
    let m: Value = serde_json::from_str(&text).map_err(|_| UNKNOWN)?;
    match str_of(&m, "init_error") {
        Some(e) => Err(code(e)),
        None => Ok(m),
    }
}

fn init(name: &str) -> Ret {
    log(name);
    std::panic::catch_unwind(|| match load_description() {
        Ok(m) => {
            *MACHINE.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
            SUCCESS
        }
        Err(e) => e,
    })
    .unwrap_or(UNKNOWN)
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> Ret {
    init("nvmlInit_v2")
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> Ret {
    init("nvmlInitWithFlags")
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> Ret {
    log("nvmlShutdown");
    *MACHINE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(_result: Ret) -> *const c_char {
    log("nvmlErrorString");
    c"fake NVML error".as_ptr()
}

// ---- system -------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> Ret {
    entry("nvmlSystemGetDriverVersion", |m| {
        let v = str_of(m, "driver_version").unwrap_or("");
        unsafe { put_str(v, version, length) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> Ret {
    entry("nvmlSystemGetCudaDriverVersion_v2", |m| {
        match m.get("cuda_version").and_then(Value::as_i64) {
            Some(v) => unsafe { put(version, v as c_int) },
            None => NOT_SUPPORTED,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> Ret {
    entry("nvmlDeviceGetCount_v2", |m| unsafe {
        put(count, arr(m, "gpus").len() as c_uint)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(index: c_uint, device: *mut Handle) -> Ret {
    entry("nvmlDeviceGetHandleByIndex_v2", |m| {
        if index as usize >= arr(m, "gpus").len() {
            return INVALID_ARGUMENT;
        }
        unsafe { put(device, handle(DEV, index as usize, 0, 0)) }
    })
}

// ---- device -------------------------------------------------------------------------

/// Compute slices of a compute-instance profile enum (`NVML_COMPUTE_INSTANCE_PROFILE_*`).
fn ci_profile_slices(profile: u32) -> Option<u32> {
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

fn mig(gpu: &Value) -> Option<&Value> {
    gpu.get("mig").filter(|m| !m.is_null())
}

fn profile_by<'a>(gpu: &'a Value, key: &str, value: u32) -> Option<&'a Value> {
    arr(mig(gpu)?, "profiles")
        .iter()
        .find(|p| u32_of(p, key) == Some(value))
}

fn gi_at(gpu: &Value, gi: usize) -> Option<&Value> {
    arr(mig(gpu)?, "gpu_instances").get(gi)
}

/// The name a MIG device (one compute instance) has: `1c.3g.40gb` when the compute
/// instance is smaller than its GPU instance, else the GPU instance's profile name.
fn mig_device_name(gpu: &Value, gi: &Value, ci: &Value) -> Option<String> {
    let p = profile_by(gpu, "id", u32_of(gi, "profile_id")?)?;
    let gi_name = str_of(p, "name")?;
    let gi_slices = u32_of(p, "slices")?;
    let ci_slices = ci_profile_slices(u32_of(ci, "profile")?)?;
    Some(if ci_slices < gi_slices {
        format!("{ci_slices}c.{gi_name}")
    } else {
        gi_name.to_string()
    })
}

/// MIG devices in NVML's order: compute instances of the GPU instances in order.
fn mig_devices(gpu: &Value) -> Vec<(usize, usize)> {
    let Some(m) = mig(gpu) else {
        return Vec::new();
    };
    arr(m, "gpu_instances")
        .iter()
        .enumerate()
        .flat_map(|(g, gi)| (0..arr(gi, "compute_instances").len()).map(move |c| (g, c)))
        .collect()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: Handle,
    name: *mut c_char,
    length: c_uint,
) -> Ret {
    on_gpu("nvmlDeviceGetName", device, &[DEV, MIG], |gpu, d| {
        let base = str_of(gpu, "name").unwrap_or("");
        let full = if d.kind == MIG {
            let mig_name = gi_at(gpu, d.gi).and_then(|gi| {
                let ci = arr(gi, "compute_instances").get(d.ci)?;
                mig_device_name(gpu, gi, ci)
            });
            match mig_name {
                Some(n) => format!("{base} MIG {n}"),
                None => return INVALID_ARGUMENT,
            }
        } else {
            base.to_string()
        };
        unsafe { put_str(&full, name, length) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: Handle,
    uuid: *mut c_char,
    length: c_uint,
) -> Ret {
    on_gpu("nvmlDeviceGetUUID", device, &[DEV], |gpu, _| {
        match str_of(gpu, "uuid") {
            Some(u) => unsafe { put_str(u, uuid, length) },
            None => NOT_SUPPORTED,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(device: Handle, pci: *mut PciInfo) -> Ret {
    on_gpu("nvmlDeviceGetPciInfo_v3", device, &[DEV], |gpu, _| {
        let info = str_of(gpu, "bus_id")
            .and_then(|b| pci_info(b, str_of(gpu, "pci_device_id").and_then(hex_u32)?));
        match info {
            Some(i) => unsafe { put(pci, i) },
            None => UNKNOWN,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(device: Handle, memory: *mut MemoryV2) -> Ret {
    on_gpu("nvmlDeviceGetMemoryInfo_v2", device, &[DEV], |gpu, _| {
        if memory.is_null() {
            return INVALID_ARGUMENT;
        }
        // A wrong struct version: R580.159 answers FUNCTION_NOT_FOUND (recorded on an
        // H100 for version 1 passed to the _v2 function), not ARGUMENT_VERSION_MISMATCH.
        if unsafe { (*memory).version } != MEMORY_V2_VERSION {
            return FUNCTION_NOT_FOUND;
        }
        let mib = |k| gpu.get(k).and_then(Value::as_u64).unwrap_or(0) * 1024 * 1024;
        let (total, used) = (mib("memory_mib"), mib("memory_used_mib"));
        unsafe {
            put(
                memory,
                MemoryV2 {
                    version: MEMORY_V2_VERSION,
                    total,
                    reserved: 0,
                    free: total.saturating_sub(used),
                    used,
                },
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNumaNodeId(device: Handle, node: *mut c_uint) -> Ret {
    on_gpu(
        "nvmlDeviceGetNumaNodeId",
        device,
        &[DEV],
        |gpu, _| match u32_of(gpu, "numa_node") {
            Some(n) => unsafe { put(node, n) },
            None => NOT_SUPPORTED,
        },
    )
}

/// Logical CPUs of an index set (`0-55,112-167`).
fn cpus(set: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in set.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
        out.extend(a..=b.min(a + 65536));
    }
    Some(out)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCpuAffinity(
    device: Handle,
    cpu_set_size: c_uint,
    cpu_set: *mut c_ulong,
) -> Ret {
    on_gpu("nvmlDeviceGetCpuAffinity", device, &[DEV], |gpu, _| {
        let Some(list) = str_of(gpu, "cpu_affinity").and_then(cpus) else {
            return NOT_SUPPORTED;
        };
        if cpu_set.is_null() {
            return INVALID_ARGUMENT;
        }
        let bits = c_ulong::BITS as usize;
        let words = cpu_set_size as usize;
        // SAFETY: the caller gives `cpu_set_size` words; CPUs beyond them are dropped, as
        // NVML does.
        let set = unsafe { std::slice::from_raw_parts_mut(cpu_set, words) };
        set.fill(0);
        for c in list.into_iter().filter(|c| c / bits < words) {
            set[c / bits] |= (1 as c_ulong) << (c % bits);
        }
        SUCCESS
    })
}

// ---- NVLink -------------------------------------------------------------------------

/// Link `link` of a GPU: `Err(NOT_SUPPORTED)` for a GPU without NVLink,
/// `Err(INVALID_ARGUMENT)` beyond its links.
fn link_of(gpu: &Value, link: c_uint) -> Result<&Value, Ret> {
    let links = gpu
        .get("nvlinks")
        .and_then(Value::as_array)
        .ok_or(NOT_SUPPORTED)?;
    links.get(link as usize).ok_or(INVALID_ARGUMENT)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: Handle,
    link: c_uint,
    is_active: *mut c_uint,
) -> Ret {
    on_gpu("nvmlDeviceGetNvLinkState", device, &[DEV], |gpu, _| {
        match link_of(gpu, link) {
            // A bus id (the far end) or `true`: active; `false`: down.
            Ok(l) => unsafe { put(is_active, u32::from(l.as_bool() != Some(false))) },
            Err(e) => e,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemotePciInfo_v2(
    device: Handle,
    link: c_uint,
    pci: *mut PciInfo,
) -> Ret {
    on_gpu(
        "nvmlDeviceGetNvLinkRemotePciInfo_v2",
        device,
        &[DEV],
        |gpu, _| {
            let l = match link_of(gpu, link) {
                Ok(l) => l,
                Err(e) => return e,
            };
            // `true`: active, but the far end has no PCI identity this driver reports.
            match l.as_str().and_then(|b| pci_info(b, 0)) {
                Some(i) => unsafe { put(pci, i) },
                None => NOT_SUPPORTED,
            }
        },
    )
}

// ---- MIG ----------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: Handle,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> Ret {
    on_gpu("nvmlDeviceGetMigMode", device, &[DEV], |gpu, _| {
        let Some(m) = mig(gpu) else {
            return NOT_SUPPORTED;
        };
        let flag = |k| u32::from(m.get(k).and_then(Value::as_bool).unwrap_or(false));
        match unsafe { put(current, flag("current")) } {
            SUCCESS => unsafe { put(pending, flag("pending")) },
            e => e,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceProfileInfo(
    device: Handle,
    profile: c_uint,
    info: *mut ProfileInfo,
) -> Ret {
    on_gpu(
        "nvmlDeviceGetGpuInstanceProfileInfo",
        device,
        &[DEV],
        |gpu, _| {
            if profile >= GPU_INSTANCE_PROFILE_COUNT {
                return INVALID_ARGUMENT;
            }
            let Some(p) = profile_by(gpu, "enum", profile) else {
                return NOT_SUPPORTED;
            };
            let n = |k| u32_of(p, k).unwrap_or(0);
            let slices = n("slices");
            let out = ProfileInfo {
                id: n("id"),
                is_p2p_supported: 0,
                slice_count: slices,
                instance_count: n("instances"),
                multiprocessor_count: n("sms"),
                copy_engine_count: slices,
                decoder_count: 0,
                encoder_count: 0,
                jpeg_count: 0,
                ofa_count: 0,
                memory_size_mb: p.get("memory_mib").and_then(Value::as_u64).unwrap_or(0),
            };
            unsafe { put(info, out) }
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(device: Handle, count: *mut c_uint) -> Ret {
    on_gpu(
        "nvmlDeviceGetMaxMigDeviceCount",
        device,
        &[DEV],
        |gpu, _| match mig(gpu) {
            // Recorded: 0 while MIG is disabled.
            Some(m) if m.get("current").and_then(Value::as_bool) != Some(true) => unsafe {
                put(count, 0)
            },
            Some(m) => unsafe { put(count, u32_of(m, "max_devices").unwrap_or(7)) },
            None => NOT_SUPPORTED,
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: Handle,
    index: c_uint,
    mig_device: *mut Handle,
) -> Ret {
    on_gpu(
        "nvmlDeviceGetMigDeviceHandleByIndex",
        device,
        &[DEV],
        |gpu, d| {
            if mig(gpu).is_none() {
                return NOT_SUPPORTED;
            }
            match mig_devices(gpu).get(index as usize) {
                Some(&(g, c)) => unsafe { put(mig_device, handle(MIG, d.gpu, g, c)) },
                None => NOT_FOUND,
            }
        },
    )
}

#[cfg(not(feature = "no-mig-instances"))]
pub use instances::*;

/// The GPU/compute instance functions a driver without them does not export.
#[cfg(not(feature = "no-mig-instances"))]
mod instances {
    use super::*;

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(device: Handle, id: *mut c_uint) -> Ret {
        on_gpu(
            "nvmlDeviceGetGpuInstanceId",
            device,
            &[MIG],
            |gpu, d| match gi_at(gpu, d.gi).and_then(|gi| u32_of(gi, "id")) {
                Some(i) => unsafe { put(id, i) },
                None => INVALID_ARGUMENT,
            },
        )
    }

    /// Writes the handles of `found` into `out`, at most `capacity` of them; `count`
    /// receives how many exist. `INSUFFICIENT_SIZE` when they do not all fit.
    unsafe fn put_handles(
        found: &[Handle],
        capacity: usize,
        out: *mut Handle,
        count: *mut c_uint,
    ) -> Ret {
        if out.is_null() || count.is_null() {
            return INVALID_ARGUMENT;
        }
        for (i, h) in found.iter().take(capacity).enumerate() {
            unsafe { *out.add(i) = *h };
        }
        unsafe { *count = found.len().min(capacity) as c_uint };
        if found.len() > capacity {
            return INSUFFICIENT_SIZE;
        }
        SUCCESS
    }

    /// NVML takes the profile *ID* (`nvmlGpuInstanceProfileInfo_t.id`, what
    /// `nvidia-smi mig -lgip` prints), not the `NVML_GPU_INSTANCE_PROFILE_*` index; the
    /// caller's buffer holds the profile's `instanceCount` handles.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn nvmlDeviceGetGpuInstances(
        device: Handle,
        profile_id: c_uint,
        gpu_instances: *mut Handle,
        count: *mut c_uint,
    ) -> Ret {
        on_gpu("nvmlDeviceGetGpuInstances", device, &[DEV], |gpu, d| {
            let Some(m) = mig(gpu) else {
                return NOT_SUPPORTED;
            };
            let Some(p) = profile_by(gpu, "id", profile_id) else {
                return INVALID_ARGUMENT;
            };
            let found: Vec<Handle> = arr(m, "gpu_instances")
                .iter()
                .enumerate()
                .filter(|(_, gi)| u32_of(gi, "profile_id") == Some(profile_id))
                .map(|(g, _)| handle(GI, d.gpu, g, 0))
                .collect();
            let capacity = u32_of(p, "instances").unwrap_or(0) as usize;
            unsafe { put_handles(&found, capacity, gpu_instances, count) }
        })
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn nvmlGpuInstanceGetInfo(
        gpu_instance: Handle,
        info: *mut GpuInstanceInfo,
    ) -> Ret {
        on_gpu("nvmlGpuInstanceGetInfo", gpu_instance, &[GI], |gpu, d| {
            let Some(gi) = gi_at(gpu, d.gi) else {
                return INVALID_ARGUMENT;
            };
            let n = |k| u32_of(gi, k).unwrap_or(0);
            let out = GpuInstanceInfo {
                device: handle(DEV, d.gpu, 0, 0),
                id: n("id"),
                profile_id: n("profile_id"),
                placement: Placement {
                    start: n("start"),
                    size: n("size"),
                },
            };
            unsafe { put(info, out) }
        })
    }

    /// `profile_id` is a compute-instance profile ID (equal to its
    /// `NVML_COMPUTE_INSTANCE_PROFILE_*` index on every driver so far). The caller's buffer
    /// holds the profile's `instanceCount` handles: one per compute slice of the GPU
    /// instance for the 1-slice profile, at most 8.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstances(
        gpu_instance: Handle,
        profile_id: c_uint,
        compute_instances: *mut Handle,
        count: *mut c_uint,
    ) -> Ret {
        on_gpu(
            "nvmlGpuInstanceGetComputeInstances",
            gpu_instance,
            &[GI],
            |gpu, d| {
                let Some(gi) = gi_at(gpu, d.gi) else {
                    return INVALID_ARGUMENT;
                };
                let gi_slices = u32_of(gi, "profile_id")
                    .and_then(|id| profile_by(gpu, "id", id))
                    .and_then(|p| u32_of(p, "slices"))
                    .unwrap_or(0);
                let Some(ci_slices) = ci_profile_slices(profile_id).filter(|s| *s <= gi_slices)
                else {
                    return NOT_SUPPORTED;
                };
                let found: Vec<Handle> = arr(gi, "compute_instances")
                    .iter()
                    .enumerate()
                    .filter(|(_, ci)| u32_of(ci, "profile") == Some(profile_id))
                    .map(|(c, _)| handle(CI, d.gpu, d.gi, c))
                    .collect();
                let capacity = gi
                    .get("ci_capacity")
                    .and_then(Value::as_u64)
                    .map_or((gi_slices / ci_slices).min(8) as usize, |c| c as usize);
                unsafe { put_handles(&found, capacity, compute_instances, count) }
            },
        )
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn nvmlComputeInstanceGetInfo_v2(
        compute_instance: Handle,
        info: *mut ComputeInstanceInfo,
    ) -> Ret {
        on_gpu(
            "nvmlComputeInstanceGetInfo_v2",
            compute_instance,
            &[CI],
            |gpu, d| {
                let Some(ci) =
                    gi_at(gpu, d.gi).and_then(|gi| arr(gi, "compute_instances").get(d.ci))
                else {
                    return INVALID_ARGUMENT;
                };
                let n = |k| u32_of(ci, k).unwrap_or(0);
                let out = ComputeInstanceInfo {
                    device: handle(DEV, d.gpu, 0, 0),
                    gpu_instance: handle(GI, d.gpu, d.gi, 0),
                    id: n("id"),
                    profile_id: n("profile"),
                    placement: Placement {
                        start: n("start"),
                        size: ci_profile_slices(n("profile")).unwrap_or(0),
                    },
                };
                unsafe { put(info, out) }
            },
        )
    }
}
