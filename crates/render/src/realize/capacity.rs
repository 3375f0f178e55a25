//! Nodes and shares under a Kubernetes-family target: no node is asked for more than
//! it advertises (every resource the planned pods on it ask: GPUs, shared slots, MIG
//! devices, CPU, memory), and a node holding shared slots gives each replica at least
//! its planned share (`1/replicas` of a GPU no less than the class's fraction, no more
//! replicas than its `per-gpu`) with the class's sharing mode.

use super::dra::ClaimSharing;
use super::kube::World;
use super::quantity;
use super::units::Gpu;
use super::usage::{DraUse, Use};
use super::{Invariant, Sink, Target};
use crate::model::Isolation;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn check_kube(t: Target, world: &World, uses: &[Use], sink: &mut Sink) {
    let mut asked: BTreeMap<&str, BTreeMap<&str, (i128, BTreeSet<&str>)>> = BTreeMap::new();
    for u in uses {
        for p in &u.pods {
            let node = asked.entry(&p.node).or_default();
            for (r, v) in &p.requests {
                let e = node.entry(r).or_default();
                e.0 += v;
                e.1.insert(&u.class);
            }
            match &p.dra {
                Some(d) => dra_sharing(t, &u.class, &p.node, &p.gpu, d, sink),
                // KAI shares GPUs itself (super::kai::capacity).
                None if t == Target::Kai => {}
                None => sharing(t, world, &u.class, &p.node, &p.gpu, sink),
            }
        }
    }
    for (name, resources) in asked {
        let Some(node) = world.nodes.map.get(name) else {
            continue;
        };
        for (r, (sum, classes)) in resources {
            let limit = match node.advertised.get(r) {
                Some(v) => *v,
                None if r == "cpu" || r == "memory" => continue,
                None => 0,
            };
            if sum > limit {
                let classes: Vec<&str> = classes.into_iter().collect();
                let file = if r.contains('/') {
                    &world.nodes.plugin_file
                } else {
                    "k8s/nodes.yaml"
                };
                let msg = format!(
                    "{name} is asked for {} {r} (by {}) but advertises {}",
                    quantity::show(sum, r),
                    classes.join(", "),
                    quantity::show(limit, r)
                );
                sink.push(t, Invariant::Capacity, (&format!("Node/{name}"), file), msg);
            }
        }
    }
}

fn mode_name(m: Isolation) -> &'static str {
    if m == Isolation::Mps {
        "mps"
    } else {
        "time-slicing"
    }
}

/// A shared slot's node against the class's share.
fn sharing(t: Target, world: &World, class: &str, node: &str, g: &Gpu, sink: &mut Sink) {
    let Gpu::Slot {
        milli,
        per_gpu,
        mode,
    } = g
    else {
        return;
    };
    let Some(n) = world.nodes.map.get(node) else {
        return;
    };
    let at = (format!("Node/{node}"), world.nodes.plugin_file.clone());
    let mut fail = |m: String| sink.push(t, Invariant::Sharing, (&at.0, &at.1), m);
    let Some(s) = &n.sharing else {
        fail(format!(
            "{node} does not share its GPUs (device-plugin config `{}`), yet the plan puts shared replicas of `{class}` there",
            n.plugin
        ));
        return;
    };
    let Some(&r) = s.replicas.get("nvidia.com/gpu") else {
        fail(format!(
            "{node}'s device-plugin config `{}` does not share nvidia.com/gpu",
            n.plugin
        ));
        return;
    };
    if let Some(m) = milli.filter(|m| r as u64 * *m as u64 > 1000) {
        fail(format!(
            "{node} splits each GPU in {r} ({}% each), less than the {}% `{class}` is planned with",
            100 / r.max(1),
            m as f64 / 10.0
        ));
    }
    if let Some(p) = per_gpu.filter(|p| r > *p) {
        fail(format!(
            "{node} splits each GPU in {r}; `{class}` allows {p} replicas per GPU"
        ));
    }
    if let Some(m) = mode.filter(|m| *m != s.mode) {
        fail(format!(
            "{node} shares GPUs by {}; `{class}` asks for {}",
            mode_name(s.mode),
            mode_name(m)
        ));
    }
}

/// A shared slot on a DRA node: one ResourceClaim whose pods each get at least their
/// planned share (no more pods than `per-gpu`, or than the fraction allows) with the
/// class's sharing mode (MPS: each client's thread percentage at least its share).
fn dra_sharing(t: Target, class: &str, node: &str, g: &Gpu, d: &DraUse, sink: &mut Sink) {
    let Gpu::Slot {
        milli,
        per_gpu,
        mode,
    } = g
    else {
        return;
    };
    let Some((claim, sharing, pods)) = &d.shared else {
        return;
    };
    let at = format!("ResourceClaim/{claim}");
    let mut fail = |m: String| sink.push(t, Invariant::Sharing, (&at, ""), m);
    let share = g.slot_milli().unwrap_or(1000);
    if milli.is_some_and(|m| *pods as u64 * m as u64 > 1000) || per_gpu.is_some_and(|p| *pods > p) {
        fail(format!(
            "{pods} pods of `{class}` on {node} share one GPU through {claim}, more than the plan's {}% each allows",
            share as f64 / 10.0
        ));
    }
    let has = match sharing {
        None => None,
        Some(ClaimSharing::TimeSlicing) => Some(Isolation::TimeSlice),
        Some(ClaimSharing::Mps { .. }) => Some(Isolation::Mps),
    };
    if let Some(m) = mode.filter(|m| Some(*m) != has) {
        fail(format!(
            "{claim} shares its GPU by {}; `{class}` asks for {}",
            has.map_or("the driver's default (no sharing config)", mode_name),
            mode_name(m)
        ));
    }
    if let Some(ClaimSharing::Mps {
        threads: Some(threads),
        ..
    }) = sharing
    {
        if *threads < share / 10 {
            fail(format!(
                "{claim} caps each MPS client at {threads}% of the SMs, below the {}% `{class}` is planned with",
                share as f64 / 10.0
            ));
        }
    }
}
