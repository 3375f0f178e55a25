//! Packed classes (`requests`, `fraction`): whole GPUs used once, fractional shares of
//! one GPU summing to at most 100% and never on a GPU something else holds, CPU and
//! host memory of every node not exceeded.

use super::{Invariant, Walk};
use crate::model::{PoolMode, Workload};
use crate::placement::Placement;
use std::collections::BTreeMap;

/// Marks GPUs holding fractional replicas in [`Walk::owner`].
const FRACTIONAL: &str = "fractional replicas";

/// What packed replicas request per GPU (thousandths) and per node (CPU, memory).
#[derive(Default)]
struct Totals {
    share: BTreeMap<(usize, u32), u64>,
    cpu: BTreeMap<usize, u64>,
    mem: BTreeMap<usize, u64>,
}

pub(super) fn check_packed(k: &mut Walk, p: &Placement) {
    let c = k.c;
    let mut t = Totals::default();
    for wp in &p.workloads {
        if wp.packed.is_empty() {
            continue;
        }
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        k.subject = Some(w.span);
        if !w.packed() {
            k.fail(
                Invariant::Packed,
                format!(
                    "`{}` has packed replicas but no `requests` or `fraction`",
                    w.name
                ),
            );
            continue;
        }
        for e in &wp.packed {
            check_entry(k, w, e, &mut t);
        }
    }
    k.subject = None;
    // A Slurm job takes a CPU: the pods of Slurm gangs count on their nodes' CPUs.
    for wp in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        if c.authority_of(w) != Some(crate::model::Authority::Slurm) {
            continue;
        }
        for ng in wp.gangs.iter().flat_map(|g| &g.nodes) {
            if let Some(&ni) = c.node_index.get(&ng.node) {
                *t.cpu.entry(ni).or_default() += 1000;
            }
        }
    }
    check_totals(k, &t);
}

/// One packed entry: its node, its GPUs (whole ones used once, fractional ones never
/// on a GPU something else holds), its model; adds what it requests to `t`.
fn check_entry(k: &mut Walk, w: &Workload, e: &crate::placement::Packed, t: &mut Totals) {
    let c = k.c;
    let milli = w.packed_gpu_milli();
    let who = format!("packed replicas of `{}` on `{}`", w.name, e.node);
    let Some(&ni) = c.node_index.get(&e.node) else {
        k.fail(Invariant::Packed, format!("{who}: unknown node"));
        return;
    };
    if c.nodes[ni].cordon {
        k.fail(Invariant::Packed, format!("{who}: node is cordoned"));
    }
    if e.replicas == 0 {
        k.fail(Invariant::Packed, format!("{who}: zero replicas"));
    }
    *t.cpu.entry(ni).or_default() += w.cpu_milli * e.replicas as u64;
    *t.mem.entry(ni).or_default() += w.host_memory.0 * e.replicas as u64;
    let want = if milli == 0 {
        0
    } else {
        milli.div_ceil(1000) as usize
    };
    if e.gpus.len() != want {
        k.fail(
            Invariant::Packed,
            format!(
                "{who}: {} GPU(s) listed, one replica takes {want}",
                e.gpus.len()
            ),
        );
        return;
    }
    if milli >= 1000 && e.replicas != 1 {
        k.fail(
            Invariant::Packed,
            format!("{who}: whole-GPU replicas are listed one by one"),
        );
    }
    let mut model = String::new();
    for &g in &e.gpus {
        let Some((_, gpu)) = k.gpu(&e.node, g, &who) else {
            continue;
        };
        model = gpu.model.clone().unwrap_or_default();
        if !w.accepts(&model) {
            k.fail(
                Invariant::Model,
                format!("{who}: `{model}` is not an acceptable model"),
            );
        }
        if milli >= 1000 {
            k.claim(ni, g, format!("a replica of `{}`", w.name));
            k.allocated.insert((ni, g), 1.0);
        } else {
            match k.owner.get(&(ni, g)) {
                Some(o) if o != FRACTIONAL => k.fail_node(
                    Invariant::Gpu,
                    ni,
                    format!("GPU {g} of `{}` is used twice: by {o} and by {who}", e.node),
                ),
                Some(_) => {}
                None => {
                    k.owner.insert((ni, g), FRACTIONAL.to_string());
                }
            }
            *t.share.entry((ni, g)).or_default() += milli * e.replicas as u64;
            *k.allocated.entry((ni, g)).or_default() += milli as f64 * e.replicas as f64 / 1000.0;
        }
    }
    k.mode(ni, PoolMode::WholeGpu);
    if milli > 0 {
        let amount = milli as f64 * e.replicas as f64 / 1000.0;
        k.charge(w, ni, &model, amount);
    }
}

/// No GPU above 100% in fractional replicas, no node above its CPU or host memory.
fn check_totals(k: &mut Walk, t: &Totals) {
    let c = k.c;
    for (&(ni, g), &s) in &t.share {
        if s > 1000 {
            k.fail_node(
                Invariant::Packed,
                ni,
                format!(
                    "GPU {g} of `{}` holds {}% in fractional replicas",
                    c.nodes[ni].name,
                    s as f64 / 10.0
                ),
            );
        }
    }
    for (&ni, &used) in &t.cpu {
        if let Some(cap) = c.node_cpu_milli(ni).filter(|cap| used > *cap) {
            k.fail_node(
                Invariant::Packed,
                ni,
                format!(
                    "node `{}`: packed replicas (and Slurm jobs, a CPU each) request {} CPU, it has {}",
                    c.nodes[ni].name,
                    used as f64 / 1000.0,
                    cap as f64 / 1000.0
                ),
            );
        }
    }
    for (&ni, &used) in &t.mem {
        if let Some(cap) = c.node_memory(ni).filter(|cap| used > *cap) {
            k.fail_node(
                Invariant::Packed,
                ni,
                format!(
                    "node `{}`: packed replicas request {} of host memory, it has {}",
                    c.nodes[ni].name,
                    crate::units::Bytes(used),
                    crate::units::Bytes(cap)
                ),
            );
        }
    }
}
