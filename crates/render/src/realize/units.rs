//! What the plan asks the schedulers to carry, class by class: its units. A unit is
//! what one object slot holds: a training gang (one pod per node, each with the GPUs
//! listed for it), a whole-GPU inference replica (a one-node gang), one MIG instance,
//! one replica of a shared class (a shared slot of a GPU), one packed replica.

use crate::model::{Cluster, Isolation, Workload, WorkloadKind};
use crate::placement::{Placement, WorkloadPlacement};
use std::collections::BTreeMap;

/// What one pod of a unit takes of a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gpu {
    /// No GPU (a CPU-only packed replica).
    None,
    /// Whole GPUs.
    Whole(u32),
    /// One MIG instance of this profile (as the driver names it).
    Mig(String),
    /// One shared slot of a GPU: a `fraction` class's share (thousandths), or one of
    /// the `per-gpu` replicas of a time-slice/MPS class; the sharing mode when the class
    /// declares one.
    Slot {
        milli: Option<u32>,
        per_gpu: Option<u32>,
        mode: Option<Isolation>,
    },
}

impl Gpu {
    /// The share of one GPU the plan gives a slot, in thousandths.
    pub(crate) fn slot_milli(&self) -> Option<u32> {
        match self {
            Gpu::Slot { milli: Some(m), .. } => Some(*m),
            Gpu::Slot {
                per_gpu: Some(p), ..
            } => Some(1000 / (*p).max(1)),
            Gpu::Slot { .. } => Some(1000),
            _ => None,
        }
    }
}

/// One pod of a unit: where the plan puts it and what it takes there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pod {
    pub node: String,
    pub gpus: Vec<u32>,
    pub gpu: Gpu,
}

/// One unit of a class.
#[derive(Clone, Debug)]
pub(crate) struct Unit {
    /// `gang 3`, `replica on h100-02 GPU 4`, ...: the unit in the user's terms.
    pub what: String,
    pub pods: Vec<Pod>,
}

impl Unit {
    pub(crate) fn nodes(&self) -> Vec<&str> {
        self.pods.iter().map(|p| p.node.as_str()).collect()
    }
}

/// CPU (thousandths) and host memory (bytes) one pod of a class asks, 0 when the class
/// declares none.
pub(crate) fn host_needs(w: &Workload) -> (u64, u64) {
    (w.cpu_milli, w.host_memory.0)
}

/// The units of every placed class, by class name (classes with none left out).
pub(crate) fn of(c: &Cluster, plan: &Placement) -> BTreeMap<String, Vec<Unit>> {
    let mut out = BTreeMap::new();
    for wp in &plan.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        let units = class_units(w, wp);
        if !units.is_empty() {
            out.insert(wp.name.clone(), units);
        }
    }
    out
}

fn class_units(w: &Workload, wp: &WorkloadPlacement) -> Vec<Unit> {
    let mut out: Vec<Unit> = wp.gangs.iter().map(|g| gang(w, g)).collect();
    for m in &wp.mig_instances {
        out.push(single(
            format!("{} instance on {} GPU {}", m.profile, m.node, m.gpu),
            &m.node,
            vec![m.gpu],
            Gpu::Mig(m.profile.clone()),
        ));
    }
    let slot = |milli| Gpu::Slot {
        milli,
        per_gpu: w.per_gpu,
        mode: w
            .share
            .or(w.isolation)
            .filter(|m| matches!(m, Isolation::TimeSlice | Isolation::Mps)),
    };
    // One replica per GPU shares nothing: the device plugin shares a GPU only with two
    // replicas or more, so such a replica is a whole GPU.
    let share = if w.per_gpu == Some(1) {
        Gpu::Whole(1)
    } else {
        slot(w.gpu_milli)
    };
    for s in &wp.shares {
        for r in 0..s.replicas {
            let what = format!("shared replica {} on {} GPU {}", r + 1, s.node, s.gpu);
            out.push(single(what, &s.node, vec![s.gpu], share.clone()));
        }
    }
    let packed = match w.gpu_milli {
        Some(m) if m < 1000 => slot(Some(m)),
        Some(m) => Gpu::Whole(m.div_ceil(1000)),
        None if w.gpus_per_replica == 0 => Gpu::None,
        None => Gpu::Whole(w.gpus_per_replica),
    };
    for p in &wp.packed {
        for r in 0..p.replicas {
            let what = format!("packed replica {} on {}", r + 1, p.node);
            out.push(single(what, &p.node, p.gpus.clone(), packed.clone()));
        }
    }
    out
}

/// A gang (training) or whole-GPU replica: one pod per node.
fn gang(w: &Workload, g: &crate::placement::Gang) -> Unit {
    let pods = g
        .nodes
        .iter()
        .map(|n| Pod {
            node: n.node.clone(),
            gpus: n.gpus.clone(),
            gpu: Gpu::Whole(n.gpus.len() as u32),
        })
        .collect();
    let what = if w.kind == WorkloadKind::Training {
        format!("gang {}", g.replica)
    } else {
        format!("replica {}", g.replica)
    };
    Unit { what, pods }
}

fn single(what: String, node: &str, gpus: Vec<u32>, gpu: Gpu) -> Unit {
    Unit {
        what,
        pods: vec![Pod {
            node: node.to_string(),
            gpus,
            gpu,
        }],
    }
}
