//! How a class's share of a GPU, and its CPU and memory, are carried by the scheduler
//! that runs it. The planner plans with these rules so that every target can carry the
//! plan (docs/render.md, "Sharing"):
//!
//! - **Kubernetes** (`kubernetes`, `kueue`, `volcano`): NVIDIA's device plugin shares a
//!   node's GPUs by time-slicing or MPS with *one* replica count `R` for every GPU of the
//!   node, advertises them as `nvidia.com/gpu.shared` (no whole `nvidia.com/gpu` is left
//!   on that node) and gives each pod one replica (MPS: 1/R of the GPU's memory and
//!   threads). A fractional replica of `f` is carried when `1/R >= f`: a node holding
//!   fractions holds nothing that asks for whole GPUs, at most `R` replicas per GPU,
//!   with `R <= floor(1/f)` for every fraction on it, and one strategy.
//! - **KAI Scheduler**: `gpu-fraction` / `gpu-memory` pods share a GPU that the device
//!   plugin advertises whole (a reservation pod holds it): like Slurm's shards, shares
//!   of any size per GPU add up to at most one GPU, and a shared GPU holds no whole-GPU
//!   work.
//! - **Slurm**: `gres/shard` (or `gres/mps`) counts per GPU: a job's shards come from one
//!   GPU, and shares of any size add up to 100% of a GPU (Slurm 22.05+). CPUs are whole
//!   (`--cpus-per-task`, at least one a job) and memory is in MiB (`--mem`), so a Slurm
//!   packed class's CPU request is rounded up to whole CPUs and its memory to MiB.
//! - **DRA nodes** ([`super::Allocation::Dra`]): a GPU belongs to one ResourceClaim and
//!   replicas share it by sharing their object's claim, so a GPU holding fractions holds
//!   one class's (kept by the planners' packing, `solve::pack` and
//!   `solve::ilp::pattern`, and by the placement checker), on top of the rules above.
//! - **No authority declared**: the trace semantics (shares of any size per GPU,
//!   millicores): every target renders what it can carry and says what it cannot.

use super::{Authority, Cluster, Isolation, Workload};

/// What the device plugin needs of a node holding one fractional replica of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slots {
    /// The most replicas per GPU the node may be shared with: `floor(1000 / milli)`.
    pub per_gpu: u32,
    /// MPS (each replica gets 1/R of memory and threads) rather than time-slicing.
    pub mps: bool,
}

/// One mebibyte.
const MIB: u64 = 1024 * 1024;

impl Cluster {
    /// The device-plugin slots a fractional replica of `w` needs, when its scheduler
    /// carries fractions by replicas (a Kubernetes-family authority); `None` for a class
    /// that is no fraction, runs under Slurm, or runs where no authority is declared.
    pub fn fraction_slots(&self, w: &Workload) -> Option<Slots> {
        let milli = w.gpu_milli.filter(|m| *m > 0 && *m < 1000)?;
        match self.authority_of(w)? {
            Authority::Slurm | Authority::Kai => None,
            Authority::Kubernetes | Authority::Kueue | Authority::Volcano => Some(Slots {
                per_gpu: (1000 / milli).max(1),
                mps: w.isolation == Some(Isolation::Mps),
            }),
        }
    }

    /// Rounds the requests of Slurm's packed classes to what Slurm allocates: whole
    /// CPUs, at least one, and memory in MiB (idempotent; called once authorities are
    /// known). Other Slurm jobs' CPUs are checked by GP049.
    pub(crate) fn round_scheduler_units(&mut self) {
        let slurm: Vec<bool> = self
            .workloads
            .iter()
            .map(|w| self.authority_of(w) == Some(Authority::Slurm))
            .collect();
        for (w, s) in self.workloads.iter_mut().zip(slurm) {
            if s && w.packed() {
                // Every job takes at least one CPU.
                w.cpu_milli = w.cpu_milli.div_ceil(1000).max(1) * 1000;
                w.host_memory.0 = w.host_memory.0.div_ceil(MIB) * MIB;
            }
        }
    }
}
