//! Right-sizing: which MIG profile, or how many GPUs, one replica of a workload needs on
//! a GPU model; and the GPU-equivalent of one replica (for quotas and reports).

use crate::catalog::MigProfile;
use crate::model::{Cluster, GpuModel, Isolation, Workload};
use crate::spec::WorkloadKind;

/// How a workload uses GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// Gangs of whole GPUs: `gpus` per gang, `per_node` on each node it uses.
    Gang { gpus: u32, per_node: u32 },
    /// One MIG instance per replica.
    Mig,
    /// `per_gpu` replicas share one GPU by time-slicing or MPS.
    Shared { mps: bool, per_gpu: u32 },
    /// Replicas packed per node by CPU, host memory and GPU share (`milli` of one GPU,
    /// 1000 per whole GPU, 0 for a CPU-only replica).
    Packed { milli: u64 },
}

/// The usage of a workload on nodes with `node_gpus` GPUs.
pub fn usage(w: &Workload, node_gpus: u32) -> Usage {
    if w.packed() {
        return Usage::Packed {
            milli: w.packed_gpu_milli(),
        };
    }
    match w.kind {
        WorkloadKind::Training => Usage::Gang {
            gpus: w.gang_gpus.max(1),
            per_node: w.effective_gpus_per_node(node_gpus).max(1),
        },
        WorkloadKind::Inference | WorkloadKind::Dev => {
            let iso = w.isolation.or(w.share).unwrap_or(Isolation::WholeGpu);
            match iso {
                Isolation::WholeGpu => {
                    let g = w.gpus_per_replica.max(1);
                    Usage::Gang {
                        gpus: g,
                        per_node: g,
                    }
                }
                Isolation::Mig => Usage::Mig,
                Isolation::TimeSlice => Usage::Shared {
                    mps: false,
                    per_gpu: w.per_gpu.unwrap_or(1).max(1),
                },
                Isolation::Mps => Usage::Shared {
                    mps: true,
                    per_gpu: w.per_gpu.unwrap_or(1).max(1),
                },
            }
        }
    }
}

/// The smallest allowed MIG profile of `model` that holds one replica of `w`: its usable
/// memory covers the footprint plus the policy headroom and it has at least
/// `min-compute` slices. An explicit `profile` wins (when it exists on the model).
/// Among profiles of equal memory, the one with fewer compute slices wins (`1g.20gb`
/// before `2g.20gb`).
pub fn mig_profile(c: &Cluster, w: &Workload, model: &GpuModel) -> Option<&'static MigProfile> {
    let spec = model.mig?;
    if let Some(p) = &w.profile {
        return model.mig_profile(p).filter(|q| model.driver_has(q.name));
    }
    let need = w
        .memory
        .map(|m| m.gib() * (1.0 + c.mig.headroom))
        .unwrap_or(0.0);
    let min_compute = w.min_compute.unwrap_or(1);
    spec.profiles
        .iter()
        .filter(|p| !p.media_extensions && model.driver_has(p.name))
        .filter(|p| {
            c.mig.allow.is_empty()
                || c.mig
                    .allow
                    .iter()
                    .any(|a| model.mig_profile(a).is_some_and(|q| q.name == p.name))
        })
        .filter(|p| {
            usable_gib(c, model, p) + 1e-9 >= need && p.compute_slices as u32 >= min_compute
        })
        .min_by(|a, b| {
            (a.memory_slices, a.compute_slices, a.name).cmp(&(
                b.memory_slices,
                b.compute_slices,
                b.name,
            ))
        })
}

/// The usable memory of MIG profile `p` on `model` for right-sizing: the lowest of the
/// values that hold on the drivers of the nodes with that model
/// ([`crate::catalog::usable_memory_gib`]; the lowest known for a node with no declared
/// driver), or on the model's own `driver=` when no node has it. One value per model
/// keeps a class's profile the same on every node of the model.
pub(crate) fn usable_gib(c: &Cluster, model: &GpuModel, p: &MigProfile) -> f64 {
    let Some(spec) = model.mig else {
        return p.memory_gib;
    };
    match c.model_drivers.get(&model.name) {
        Some(ds) if !ds.is_empty() => ds
            .iter()
            .map(|d| crate::catalog::usable_memory_gib(spec, p, d.as_deref()))
            .fold(f64::INFINITY, f64::min),
        _ => crate::catalog::usable_memory_gib(spec, p, model.driver.as_deref()),
    }
}

/// GPU-equivalents of one replica on `model`.
pub fn gpu_equivalent(c: &Cluster, w: &Workload, model: &GpuModel, node_gpus: u32) -> f64 {
    match usage(w, node_gpus) {
        Usage::Gang { gpus, .. } => gpus as f64,
        Usage::Mig => match (mig_profile(c, w, model), model.mig) {
            (Some(p), Some(spec)) => p.memory_slices as f64 / spec.memory_slices as f64,
            _ => 1.0,
        },
        Usage::Shared { per_gpu, .. } => 1.0 / per_gpu as f64,
        Usage::Packed { milli } => milli as f64 / 1000.0,
    }
}

/// Whether one GPU of `model` holds a rank of training class `w`: its `memory` (per GPU)
/// is at most the GPU's memory (the catalog's total as `nvidia-smi` reports it, e.g.
/// 79.65 GiB for an H100 80GB, or `gpu-model memory=`). A rank has a whole GPU, so MIG's
/// driver-dependent usable memory and `mig headroom` do not apply. True without
/// `memory`, and for inference and dev (sized by [`runs_on`]).
pub(crate) fn holds_rank(w: &Workload, model: &GpuModel) -> bool {
    w.kind != WorkloadKind::Training || w.memory.is_none_or(|m| m.0 <= model.memory.0)
}

/// Whether `w` can run at all on `model` (acceptable, and MIG-sizable when MIG).
pub fn runs_on(c: &Cluster, w: &Workload, model: &GpuModel) -> bool {
    if !w.accepts(&model.name) {
        return false;
    }
    match usage(w, 1) {
        Usage::Mig => mig_profile(c, w, model).is_some(),
        Usage::Shared { .. } | Usage::Gang { .. } | Usage::Packed { .. } => {
            // A replica's footprint must fit the GPU (shared GPUs have no memory isolation,
            // but one replica larger than the GPU never runs).
            w.memory
                .is_none_or(|m| m.0 <= model.memory.0 * w.gpus_per_replica.max(1) as u64)
        }
    }
}
