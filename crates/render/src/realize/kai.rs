//! KAI Scheduler's objects as KAI reads them (NVIDIA/KAI-Scheduler: docs/queues,
//! docs/gpu-sharing, docs/topology, docs/developer/pod-grouper.md;
//! `pkg/common/constants`): Queues (`scheduling.run.ai/v2`: `parentQueue`, per resource
//! `quota` and `limit`, -1 unlimited; only leaf queues run jobs), Topologies
//! (`kai.scheduler/v1alpha1`: levels), PodGroups (`scheduling.run.ai/v2alpha2`:
//! `minMember`, `queue`, `priorityClassName`, `preemptibility`, `topologyConstraint`)
//! whose pods name them (`pod-group-name`), and Deployments (a PodGroup per pod, the
//! queue from the `kai.scheduler/queue` label).
//!
//! A pod shares a GPU by the annotation `gpu-fraction` (a share of one GPU) or
//! `gpu-memory` (MiB of one GPU's memory) and asks no GPU resource: KAI's binder holds a
//! whole GPU the device plugin advertises, and every sharing pod on that GPU counts its
//! share, at most one GPU in all. Queues count GPUs in fractions: whole GPUs plus
//! shares; a non-preemptible job runs only within its queue's quota (and its parents').

use super::kube::World;
use super::matching::Reason;
use super::pods::Pod;
use super::units::Gpu;
use super::usage::Use;
use super::yaml::{self, Doc, seq_at, str_at};
use super::{Invariant, Sink, Target};
use crate::model::{Cluster, Workload};
use std::collections::{BTreeMap, BTreeSet};

const T: Target = Target::Kai;
/// The scheduler name KAI's pods carry.
pub(crate) const SCHEDULER: &str = "kai-scheduler";
pub(crate) const QUEUE_LABEL: &str = "kai.scheduler/queue";
const GPU_FRACTION: &str = "gpu-fraction";
const GPU_MEMORY: &str = "gpu-memory";
const MIB: u64 = 1 << 20;

pub(crate) struct Queue {
    pub id: String,
    pub file: String,
    pub parent: Option<String>,
    /// GPUs in thousandths; `None`: unlimited (-1) or not given.
    pub quota: Option<i128>,
    pub limit: Option<i128>,
}

#[derive(Default)]
pub(crate) struct Kai {
    pub queues: BTreeMap<String, Queue>,
    pub topologies: BTreeMap<String, Vec<String>>,
}

fn fail<T: Default>(sink: &mut Sink, d: &Doc, e: String) -> T {
    sink.push(T, Invariant::Parse, (&d.id(), &d.file), e);
    T::default()
}

/// A Queue's `gpu` `quota` or `limit` in thousandths (`None` for -1 or absent).
fn gpu_amount(d: &Doc, key: &str) -> Result<Option<i128>, String> {
    let Some(v) = yaml::at(&d.value, &["spec", "resources", "gpu", key]) else {
        return Ok(None);
    };
    let n = v
        .as_f64()
        .ok_or_else(|| format!("resources.gpu.{key} is not a number"))?;
    Ok((n >= 0.0).then(|| (n * 1000.0).round() as i128))
}

pub(crate) fn read(world: &World, sink: &mut Sink) -> Kai {
    let mut k = Kai::default();
    for d in world.all(T, "scheduling.run.ai", "Queue") {
        let quota = gpu_amount(d, "quota").unwrap_or_else(|e| fail(sink, d, e));
        let limit = gpu_amount(d, "limit").unwrap_or_else(|e| fail(sink, d, e));
        let parent = str_at(&d.value, &["spec", "parentQueue"]).map(String::from);
        let q = Queue {
            id: d.id(),
            file: d.file.clone(),
            parent,
            quota,
            limit,
        };
        k.queues.insert(d.name.clone(), q);
    }
    for d in world.all(T, "kai.scheduler", "Topology") {
        let levels = seq_at(&d.value, &["spec", "levels"])
            .iter()
            .filter_map(|l| str_at(l, &["nodeLabel"]).map(String::from))
            .collect();
        k.topologies.insert(d.name.clone(), levels);
    }
    k
}

impl Kai {
    /// A queue and its ancestors (cycles stop).
    pub(crate) fn chain<'a>(&'a self, queue: &'a str) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::new();
        let mut next = self.queues.get_key_value(queue);
        while let Some((name, q)) = next {
            if out.contains(&name.as_str()) {
                break;
            }
            out.push(name);
            next = q
                .parent
                .as_deref()
                .and_then(|p| self.queues.get_key_value(p));
        }
        out
    }

    fn is_leaf(&self, queue: &str) -> bool {
        !self
            .queues
            .values()
            .any(|q| q.parent.as_deref() == Some(queue))
    }
}

/// The share of one GPU a pod asks (thousandths), from `gpu-fraction`, or
/// `gpu-memory` over the memory of its node's GPUs; `None` without either.
pub(crate) fn share(tpl: &Pod, c: &Cluster, node: &str) -> Result<Option<u32>, String> {
    if let Some(f) = tpl.annotations.get(GPU_FRACTION) {
        let v: f64 = f
            .parse()
            .map_err(|_| format!("{GPU_FRACTION} `{f}` is not a number"))?;
        if !(v > 0.0 && v <= 1.0) {
            return Err(format!("{GPU_FRACTION} `{f}` is not a share of one GPU"));
        }
        return Ok(Some((v * 1000.0).round() as u32));
    }
    let Some(m) = tpl.annotations.get(GPU_MEMORY) else {
        return Ok(None);
    };
    let mib: u64 = m
        .parse()
        .map_err(|_| format!("{GPU_MEMORY} `{m}` is not a number of MiB"))?;
    let gpu = c
        .node(node)
        .and_then(|n| n.gpus.iter().find_map(|g| g.model.clone()))
        .and_then(|m| c.models.get(&m))
        .map(|m| m.memory.0 / MIB)
        .filter(|g| *g > 0)
        .ok_or_else(|| format!("{node}'s GPU memory is not known: {GPU_MEMORY} cannot be read"))?;
    if mib > gpu {
        return Err(format!(
            "{GPU_MEMORY} {mib} MiB is more than one GPU of {node} ({gpu} MiB)"
        ));
    }
    Ok(Some((mib * 1000).div_ceil(gpu) as u32))
}

/// The GPU share under KAI: for a shared replica, no GPU resource and a share of at
/// least what the plan gives it (its fraction, or, for a class that declares its GPU
/// memory, that memory); for anything else no share (its GPU resources are checked as
/// every Kubernetes target's, in the carry module).
pub(crate) fn resources(
    tpl: &Pod,
    g: &Gpu,
    w: &Workload,
    c: &Cluster,
    node: &str,
) -> Result<(), String> {
    let extended: BTreeMap<&String, &i128> = tpl
        .requests
        .iter()
        .filter(|(k, _)| k.contains('/'))
        .collect();
    let asked = share(tpl, c, node)?;
    match g {
        Gpu::Slot { .. } => {
            if !extended.is_empty() {
                let names: Vec<&str> = extended.keys().map(|k| k.as_str()).collect();
                return Err(format!(
                    "asks {} beside a GPU share: KAI shares only pods that ask no GPU resource",
                    names.join(", ")
                ));
            }
            let Some(have) = asked else {
                return Err(
                    "asks no gpu-fraction or gpu-memory where the plan gives a shared GPU".into(),
                );
            };
            let by_memory = tpl.annotations.contains_key(GPU_MEMORY);
            match (by_memory, w.memory) {
                (true, Some(need)) => {
                    let mib = tpl.annotations[GPU_MEMORY].parse::<u64>().unwrap_or(0);
                    if mib * MIB < need.0 {
                        return Err(format!(
                            "asks {GPU_MEMORY} {mib} MiB where the class needs {} MiB",
                            need.0.div_ceil(MIB)
                        ));
                    }
                }
                _ => {
                    let want = g.slot_milli().unwrap_or(1000);
                    if have < want {
                        return Err(format!(
                            "asks {}% of a GPU where the plan gives {}%",
                            have as f64 / 10.0,
                            want as f64 / 10.0
                        ));
                    }
                }
            }
        }
        _ if asked.is_some() => {
            return Err("asks a GPU share where the plan gives whole GPUs or none".into());
        }
        _ => {}
    }
    Ok(())
}

/// A gang's PodGroup topology constraint: a level of the named Topology, which every
/// node of the gang carries with one value (KAI does not place a required level on
/// nodes that lack its label).
pub fn topology(
    kai: &Kai,
    world: &World,
    constraint: &Option<(String, Option<String>)>,
    nodes: &[&str],
) -> Result<(), Reason> {
    let Some((topo, Some(level))) = constraint else {
        return Ok(());
    };
    let fail = |text: String| Err(Reason::new(Invariant::Topology, 5, text));
    let Some(levels) = kai.topologies.get(topo) else {
        return fail(format!(
            "requires level {level} of Topology {topo}, which kai/ lacks"
        ));
    };
    if !levels.contains(level) {
        return fail(format!(
            "requires level {level}, which Topology {topo} does not have"
        ));
    }
    let mut values = BTreeSet::new();
    for n in nodes {
        match world.nodes.map.get(*n).and_then(|x| x.labels.get(level)) {
            Some(v) => values.insert(v.clone()),
            None => {
                return fail(format!(
                    "{n} lacks label {level}: KAI does not place the gang there"
                ));
            }
        };
    }
    if values.len() > 1 && nodes.len() > 1 {
        let v: Vec<String> = values.into_iter().collect();
        return fail(format!(
            "requires one {level} domain; the plan's gang spans {}",
            v.join(", ")
        ));
    }
    Ok(())
}

/// GPUs shared by KAI pods: each GPU's shares add up to at most one GPU, on a node
/// whose device plugin advertises whole GPUs (KAI's reservation pod takes one), and a
/// node's whole GPUs plus the GPUs holding shares within what it advertises.
pub(crate) fn capacity(world: &World, c: &Cluster, uses: &[Use], sink: &mut Sink) {
    let mut per_gpu: BTreeMap<(&str, u32), (u32, BTreeSet<&str>)> = BTreeMap::new();
    let mut whole: BTreeMap<&str, i128> = BTreeMap::new();
    for u in uses {
        for p in &u.pods {
            *whole.entry(&p.node).or_default() +=
                p.requests.get("nvidia.com/gpu").copied().unwrap_or(0);
            let Some(tpl) = &p.tpl else { continue };
            let Ok(Some(s)) = share(tpl, c, &p.node) else {
                continue;
            };
            if let Some(&g) = p.gpus.first() {
                let e = per_gpu.entry((&p.node, g)).or_default();
                e.0 += s;
                e.1.insert(&u.class);
            }
        }
    }
    let mut held: BTreeMap<&str, i128> = BTreeMap::new();
    for ((node, gpu), (sum, classes)) in &per_gpu {
        *held.entry(node).or_default() += 1000;
        let at = (format!("Node/{node}"), world.nodes.plugin_file.clone());
        let who = classes.iter().copied().collect::<Vec<_>>().join(", ");
        if *sum > 1000 {
            let msg = format!(
                "GPU {gpu} of {node} is shared by KAI pods asking {}% of it in all ({who})",
                *sum as f64 / 10.0
            );
            sink.push(T, Invariant::Capacity, (&at.0, &at.1), msg);
        }
        if world
            .nodes
            .map
            .get(*node)
            .is_some_and(|n| n.sharing.is_some())
        {
            let msg = format!(
                "{node}'s device plugin shares its GPUs, so KAI's binder cannot hold one whole for the shares of {who}"
            );
            sink.push(T, Invariant::Sharing, (&at.0, &at.1), msg);
        }
    }
    for (node, h) in held {
        let Some(n) = world.nodes.map.get(node) else {
            continue;
        };
        let have = n.advertised.get("nvidia.com/gpu").copied().unwrap_or(0);
        let asked = h + whole.get(node).copied().unwrap_or(0);
        if asked > have {
            let msg = format!(
                "{node} is asked for {} GPUs (whole ones and GPUs holding KAI shares) but advertises {}",
                asked / 1000,
                have / 1000
            );
            sink.push(
                T,
                Invariant::Capacity,
                (&format!("Node/{node}"), &world.nodes.plugin_file),
                msg,
            );
        }
    }
}

/// Queues admit the planned GPUs, all running at once: every queue (with its
/// descendants' use) within its `limit`, and what non-preemptible jobs use within its
/// `quota`. `gpu_of`: per unit, its queue, GPUs in thousandths and preemptibility.
pub(crate) fn queues(kai: &Kai, used: &[(String, i128, bool, String)], sink: &mut Sink) {
    let mut sum: BTreeMap<&str, (i128, i128, BTreeSet<&str>)> = BTreeMap::new();
    for (queue, milli, preemptible, class) in used {
        for q in kai.chain(queue) {
            let e = sum.entry(q).or_default();
            e.0 += milli;
            if !preemptible {
                e.1 += milli;
            }
            e.2.insert(class);
        }
    }
    for (name, (all, fixed, classes)) in sum {
        let q = &kai.queues[name];
        let who = classes.into_iter().collect::<Vec<_>>().join(", ");
        let at = (q.id.as_str(), q.file.as_str());
        if let Some(l) = q.limit.filter(|l| all > *l) {
            let msg = format!(
                "the planned pods of {who} use {} GPUs; its limit is {}",
                all as f64 / 1000.0,
                l as f64 / 1000.0
            );
            sink.push(T, Invariant::Quota, at, msg);
        }
        if fixed > q.quota.unwrap_or(i128::MAX) {
            let msg = format!(
                "non-preemptible pods of {who} use {} GPUs; KAI runs them only within its quota {}",
                fixed as f64 / 1000.0,
                q.quota.unwrap_or(0) as f64 / 1000.0
            );
            sink.push(T, Invariant::Quota, at, msg);
        }
    }
}

/// Queue references: an object's queue exists and is a leaf; a parent exists; no cycle.
pub(crate) fn references(kai: &Kai, queue: Option<&str>, fail: &mut dyn FnMut(String)) {
    match queue {
        None => fail(format!(
            "names no queue ({QUEUE_LABEL}): KAI puts it in its default queue"
        )),
        Some(q) if !kai.queues.contains_key(q) => {
            fail(format!("queue `{q}` is not a Queue of kai/"))
        }
        Some(q) if !kai.is_leaf(q) => fail(format!(
            "queue `{q}` has child queues: KAI schedules only leaf queues"
        )),
        Some(_) => {}
    }
}

/// Every Queue's parent exists and no queue is its own ancestor.
pub(crate) fn queue_tree(kai: &Kai, sink: &mut Sink) {
    for (name, q) in &kai.queues {
        let at = (q.id.as_str(), q.file.as_str());
        if let Some(p) = q.parent.as_ref().filter(|p| !kai.queues.contains_key(*p)) {
            sink.push(
                T,
                Invariant::Reference,
                at,
                format!("parentQueue `{p}` is not a Queue of kai/"),
            );
        }
        let chain = kai.chain(name);
        let last = chain.last().and_then(|l| kai.queues.get(*l));
        if last
            .and_then(|l| l.parent.as_deref())
            .is_some_and(|p| chain.contains(&p))
        {
            sink.push(
                T,
                Invariant::Reference,
                at,
                format!("queue `{name}` is its own ancestor"),
            );
        }
    }
}
