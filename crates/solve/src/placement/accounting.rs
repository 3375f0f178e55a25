//! What a placement holds, GPU by GPU: the accounting that building the placement
//! ([`super::build`]) and explaining what was left out ([`super::explain`]) share.

use super::{NodePool, PoolMode};
use crate::model::sizing::{self, Usage};
use crate::model::{Cluster, NodeIdx};
use crate::solve::Assignment;
use std::collections::BTreeSet;

/// GPU-equivalents one class holds on one GPU.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub workload: usize,
    pub node: NodeIdx,
    pub gpu: u32,
    pub model: String,
    pub amount: f64,
}

pub fn round4(x: f64) -> f64 {
    let r = (x * 10_000.0).round() / 10_000.0;
    if r == 0.0 { 0.0 } else { r }
}

pub(crate) fn gpu_model(c: &Cluster, ni: NodeIdx, gi: u32) -> Option<&crate::model::GpuModel> {
    c.nodes
        .get(ni)?
        .gpus
        .iter()
        .find(|g| g.index == gi)
        .and_then(|g| c.model_of(g))
}

fn model_name(c: &Cluster, ni: NodeIdx, gi: u32) -> String {
    gpu_model(c, ni, gi)
        .map(|m| m.name.clone())
        .unwrap_or_default()
}

/// `amount` GPU-equivalents of class `workload` on one GPU.
fn record(c: &Cluster, workload: usize, node: NodeIdx, gpu: u32, amount: f64) -> Record {
    Record {
        workload,
        node,
        gpu,
        model: model_name(c, node, gpu),
        amount,
    }
}

/// GPU-equivalents held per (class, GPU), from the assignment.
pub(crate) fn records(c: &Cluster, a: &Assignment) -> Vec<Record> {
    let mut out = Vec::new();
    for (wi, _, nodes) in &a.gangs {
        for (ni, gpus) in nodes {
            for gi in gpus {
                out.push(record(c, *wi, *ni, *gi, 1.0));
            }
        }
    }
    for (wi, ni, gi, p) in &a.mig_instances {
        let m = gpu_model(c, *ni, *gi);
        let amount = m
            .and_then(|m| m.mig)
            .and_then(|s| {
                s.profile(p)
                    .map(|q| q.memory_slices as f64 / s.memory_slices.max(1) as f64)
            })
            .unwrap_or(1.0);
        out.push(record(c, *wi, *ni, *gi, amount));
    }
    for (wi, ni, gi, n) in &a.shares {
        let per_gpu = c
            .workloads
            .get(*wi)
            .map(|w| match sizing::usage(w, 1) {
                Usage::Shared { per_gpu, .. } => per_gpu,
                _ => 1,
            })
            .unwrap_or(1);
        out.push(record(c, *wi, *ni, *gi, *n as f64 / per_gpu.max(1) as f64));
    }
    for (wi, ni, gs, k) in &a.packed {
        let share = c.workloads[*wi].packed_milli_per_gpu() as f64 / 1000.0;
        for g in gs {
            out.push(record(c, *wi, *ni, *g, *k as f64 * share));
        }
    }
    out
}

/// The pool mode of every node: as assigned, else the declared pool's, else whole-GPU.
pub(crate) fn pools_of(c: &Cluster, a: &Assignment) -> Vec<NodePool> {
    let mut v: Vec<NodePool> = c
        .nodes
        .iter()
        .enumerate()
        .map(|(ni, n)| {
            let decl = c.pool_of(ni);
            let mode = a
                .node_mode
                .get(ni)
                .copied()
                .flatten()
                .or_else(|| decl.and_then(|p| PoolMode::from_decl(&p.mode)))
                .unwrap_or(PoolMode::WholeGpu);
            NodePool {
                node: n.name.clone(),
                mode,
                pool: decl.map(|p| p.name.clone()),
            }
        })
        .collect();
    v.sort();
    v
}

/// GPU-equivalents of one replica, on the first model (by name) it runs on.
pub(crate) fn replica_equivalent(c: &Cluster, wi: usize) -> f64 {
    let w = &c.workloads[wi];
    let gpus = c.nodes.first().map(|n| n.gpus.len() as u32).unwrap_or(1);
    match c.models.values().find(|m| sizing::runs_on(c, w, m)) {
        Some(m) => sizing::gpu_equivalent(c, w, m, gpus),
        None => match sizing::usage(w, gpus) {
            Usage::Gang { gpus, .. } => gpus as f64,
            Usage::Mig => 1.0,
            Usage::Shared { per_gpu, .. } => 1.0 / per_gpu as f64,
            Usage::Packed { milli } => milli as f64 / 1000.0,
        },
    }
}

/// GPUs no class touches (whole GPUs on whole-GPU nodes the device plugin does not
/// share for fractions): the ones a new gang could use.
pub(crate) fn free_whole_gpus(
    c: &Cluster,
    a: &Assignment,
    pools: &[NodePool],
) -> BTreeSet<(NodeIdx, u32)> {
    let whole: BTreeSet<&str> = pools
        .iter()
        .filter(|p| p.mode == PoolMode::WholeGpu)
        .map(|p| p.node.as_str())
        .collect();
    let mut busy: BTreeSet<(NodeIdx, u32)> = a.mig_layouts.keys().copied().collect();
    for (_, _, nodes) in &a.gangs {
        for (ni, gpus) in nodes {
            busy.extend(gpus.iter().map(|g| (*ni, *g)));
        }
    }
    busy.extend(a.mig_instances.iter().map(|m| (m.1, m.2)));
    busy.extend(a.shares.iter().map(|s| (s.1, s.2)));
    // Nodes whose GPUs the device plugin shares for fractions: none is free for whole
    // GPUs (see `model::sharing`).
    let mut shared: BTreeSet<NodeIdx> = BTreeSet::new();
    for (w, ni, gs, _) in &a.packed {
        busy.extend(gs.iter().map(|g| (*ni, *g)));
        let wl = &c.workloads[*w];
        if (1..1000).contains(&wl.packed_gpu_milli()) && c.fraction_slots(wl).is_some() {
            shared.insert(*ni);
        }
    }
    let mut out = BTreeSet::new();
    for (ni, n) in c.nodes.iter().enumerate() {
        if !whole.contains(n.name.as_str()) || shared.contains(&ni) {
            continue;
        }
        for g in n.usable_gpus() {
            if !busy.contains(&(ni, g.index)) {
                out.insert((ni, g.index));
            }
        }
    }
    out
}
