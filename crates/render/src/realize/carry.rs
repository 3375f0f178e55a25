//! Can this Kubernetes-family object carry this unit? Its shape (a Deployment replica
//! is one pod; a Job is one gang of its pods), then each pod on its planned node
//! (selected by nodeSelector and required affinity, and by a Kueue flavor; taints
//! tolerated; exactly the planned GPU resource and amount, the class's CPU and
//! memory), then the gang's topology (Kueue required level, Volcano hard tier).

use super::dra::Dra;
use super::kube::World;
use super::kueue::Kueue;
use super::matching::{self, Reason};
use super::objects::{Kind, Object};
use super::plugin::mig_resource;
use super::pods::Pod;
use super::quantity;
use super::units::{self, Gpu, Unit};
use super::volcano::Volcano;
use super::{Invariant, Target};
use crate::model::{Cluster, Workload};
use std::collections::BTreeMap;

/// Node labels of the fabric tiers: a selection that fails on one is a topology pin.
pub(crate) const TIER_KEYS: [&str; 4] = [
    "gpuplan.io/leaf",
    "gpuplan.io/spine",
    "gpuplan.io/core",
    "gpuplan.io/nvlink-domain",
];

pub(crate) struct Scope<'a> {
    pub t: Target,
    pub c: &'a Cluster,
    pub world: &'a World,
    pub kueue: &'a Kueue,
    pub volcano: &'a Volcano,
    pub dra: &'a Dra,
    pub kai: &'a super::kai::Kai,
}

/// The extended resources a pod must ask under target `t`: KAI's shared pods ask none
/// (their share is an annotation, see [`super::kai`]).
pub(crate) fn expected_for(t: Target, g: &Gpu) -> BTreeMap<String, i128> {
    match (t, g) {
        (Target::Kai, Gpu::Slot { .. }) => BTreeMap::new(),
        _ => expected(g),
    }
}

/// The extended resources a pod must ask for what the plan gives it.
pub(crate) fn expected(g: &Gpu) -> BTreeMap<String, i128> {
    match g {
        Gpu::None => BTreeMap::new(),
        Gpu::Whole(n) => [("nvidia.com/gpu".to_string(), *n as i128 * 1000)].into(),
        Gpu::Mig(p) => [(mig_resource(p), 1000)].into(),
        Gpu::Slot { .. } => [("nvidia.com/gpu.shared".to_string(), 1000)].into(),
    }
}

/// `nvidia.com/gpu: 2, cpu: 500m` (or `nothing`).
pub(crate) fn show(m: &BTreeMap<String, i128>) -> String {
    if m.is_empty() {
        return "no GPU resource".into();
    }
    let parts: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}: {}", quantity::show(*v, k)))
        .collect();
    parts.join(", ")
}

fn carried(score: u8, text: String) -> Reason {
    Reason::new(Invariant::Carried, score, text)
}

/// Whether `o` can carry `u` (a unit of class `w`).
pub(crate) fn carry(s: &Scope, o: &Object, u: &Unit, w: &Workload) -> Result<(), Reason> {
    shape(s, o, u)?;
    pods(s, o, u, w)?;
    topology(s, o, u)?;
    imex(s, o, u)
}

fn shape(s: &Scope, o: &Object, u: &Unit) -> Result<(), Reason> {
    let n = u.pods.len() as u32;
    let want = if o.gang { o.unit_pods() } else { 1 };
    if n != want {
        let what = if o.gang {
            format!("runs a gang of {want} pods")
        } else {
            "runs independent pods".into()
        };
        return Err(carried(
            0,
            format!(
                "{what}; the plan's {} has {n} ({})",
                u.what,
                u.nodes().join(", ")
            ),
        ));
    }
    if o.kind == Kind::Job && o.suspended && s.t == Target::K8s {
        return Err(carried(
            0,
            "is suspended, and nothing in k8s/ resumes it".into(),
        ));
    }
    if let Some(m) = o.min_available.filter(|m| *m != o.unit_pods() as u64) {
        return Err(carried(
            0,
            format!(
                "has minAvailable {m}, not its {} pods: the gang is not all-or-nothing",
                o.unit_pods()
            ),
        ));
    }
    let scheduler = o
        .scheduler
        .as_deref()
        .or(o.pods.first().and_then(|(p, _)| p.scheduler.as_deref()));
    let default = scheduler.is_none_or(|x| x == "default-scheduler");
    let volcano =
        scheduler == Some("volcano") || (o.kind == Kind::VolcanoJob && scheduler.is_none());
    match s.t {
        Target::Volcano if !volcano => Err(carried(
            0,
            "is not scheduled by Volcano (schedulerName)".into(),
        )),
        Target::Kai if scheduler != Some(super::kai::SCHEDULER) => Err(carried(
            0,
            "is not scheduled by KAI (schedulerName kai-scheduler)".into(),
        )),
        Target::Kai => Ok(()),
        Target::K8s | Target::Kueue if !default => Err(carried(
            0,
            format!(
                "asks scheduler `{}`, not kube-scheduler",
                scheduler.unwrap_or("")
            ),
        )),
        _ => Ok(()),
    }
}

/// Every planned pod on a template of the object (a bipartite matching when the
/// object has several templates).
fn pods(s: &Scope, o: &Object, u: &Unit, w: &Workload) -> Result<(), Reason> {
    if let [(tpl, _)] = o.pods.as_slice() {
        return u.pods.iter().try_for_each(|p| fits(s, o, tpl, p, w));
    }
    let caps: Vec<u32> = o.pods.iter().map(|(_, n)| *n).collect();
    let mut can = |i: usize, j: usize| fits(s, o, &o.pods[j].0, &u.pods[i], w);
    let m = matching::assign(u.pods.len(), &caps, &mut can);
    match m.assigned.iter().position(Option::is_none) {
        None => Ok(()),
        Some(i) => Err(m.reasons[i].clone().map(|(_, r)| r).unwrap_or_else(|| {
            carried(
                1,
                format!("has no task left for the pod on {}", u.pods[i].node),
            )
        })),
    }
}

fn fits(s: &Scope, o: &Object, tpl: &Pod, p: &units::Pod, w: &Workload) -> Result<(), Reason> {
    let Some(node) = s.world.nodes.map.get(&p.node) else {
        return Err(carried(
            1,
            format!(
                "cannot reach {}: not a Kubernetes node of this cluster",
                p.node
            ),
        ));
    };
    if let Err(m) = tpl.selects(&node.name, &node.labels) {
        let inv = if TIER_KEYS.contains(&m.key.as_str()) {
            Invariant::Topology
        } else {
            Invariant::Carried
        };
        return Err(Reason::new(
            inv,
            1,
            format!("does not select {}: {}", node.name, m.text),
        ));
    }
    if s.t == Target::Kueue {
        let queue = o
            .labels
            .get("kueue.x-k8s.io/queue-name")
            .map(String::as_str)
            .unwrap_or("");
        let ns = s.world.ns_labels(&o.namespace);
        if let Ok((_, q)) = s.kueue.cluster_queue(&o.namespace, queue, &ns) {
            for r in expected(&p.gpu).keys() {
                if let Err(e) = s.kueue.flavor(q, r, node, tpl) {
                    if !e.contains("does not cover") {
                        return Err(carried(2, e));
                    }
                }
            }
        }
    }
    if let Some(t) = tpl.untolerated(&node.taints) {
        return Err(carried(
            3,
            format!("does not tolerate taint {t} of {}", node.name),
        ));
    }
    if let Some(devices) = &node.devices {
        return dra_resources(s, o, tpl, p, w, devices)
            .map_err(|e| carried(4, format!("{e} (on {})", node.name)));
    }
    if s.t == Target::Kai {
        let rest = if matches!(p.gpu, Gpu::Slot { .. }) {
            host_resources(tpl, w)
        } else {
            resources(tpl, &p.gpu, w)
        };
        super::kai::resources(tpl, &p.gpu, w, s.c, &node.name)
            .and(rest)
            .map_err(|e| carried(4, format!("{e} (on {})", node.name)))?;
        return Ok(());
    }
    resources(tpl, &p.gpu, w).map_err(|e| carried(4, format!("{e} (on {})", node.name)))?;
    above_one(tpl, node).map_err(|e| Reason::new(Invariant::Sharing, 4, e))
}

/// The devices a planned pod takes on a DRA node: `dra:<model>` (whole GPUs; a shared
/// GPU is its claim's one device), `dra:<model>:<profile>` (a MIG device), of the model
/// of the GPUs the plan gives it.
pub(crate) fn expected_dra(c: &Cluster, p: &units::Pod) -> BTreeMap<String, i128> {
    let model = c
        .node_index
        .get(&p.node)
        .zip(p.gpus.first())
        .and_then(|(&ni, &g)| c.gpu_model_name(ni, g))
        .unwrap_or("?");
    match &p.gpu {
        Gpu::None => BTreeMap::new(),
        Gpu::Whole(n) => [(format!("dra:{model}"), *n as i128 * 1000)].into(),
        Gpu::Mig(profile) => [(format!("dra:{model}:{profile}"), 1000)].into(),
        Gpu::Slot { .. } => [(format!("dra:{model}"), 1000)].into(),
    }
}

/// On a DRA node: no extended GPU resource (nothing advertises it there), claims that
/// take exactly the planned devices (shared through one ResourceClaim exactly where
/// the plan shares a GPU), and the class's CPU and memory.
fn dra_resources(
    s: &Scope,
    o: &Object,
    tpl: &Pod,
    p: &units::Pod,
    w: &Workload,
    devices: &super::dra::NodeDevices,
) -> Result<(), String> {
    if let Some(k) = tpl.requests.keys().find(|k| k.starts_with("nvidia.com/")) {
        return Err(format!(
            "asks {k}, which a DRA node does not advertise (its device plugin is off)"
        ));
    }
    let claimed = s.dra.claimed(s.c, &o.namespace, tpl, devices)?;
    let want = expected_dra(s.c, p);
    if claimed.devices != want {
        return Err(format!(
            "claims {} where the plan gives {}",
            show(&claimed.devices),
            show(&want)
        ));
    }
    match (&p.gpu, &claimed.shared) {
        (Gpu::Slot { .. }, None) => {
            return Err("claims a GPU of its own for every pod (a ResourceClaimTemplate) where the plan shares one GPU between replicas".into());
        }
        (Gpu::Whole(_) | Gpu::Mig(_), Some((claim, _))) if o.capacity * o.unit_pods() > 1 => {
            return Err(format!(
                "its {} pods all share ResourceClaim {claim}, where the plan gives each devices of its own",
                o.capacity * o.unit_pods()
            ));
        }
        _ => {}
    }
    host_resources(tpl, w)
}

/// A gang on several DRA nodes of one multi-node NVLink domain references the channel
/// claim of a ComputeDomain sized for it (`numNodes` its pods, or 0: not waited for),
/// one ComputeDomain per gang.
fn imex(s: &Scope, o: &Object, u: &Unit) -> Result<(), Reason> {
    let nodes = u.nodes();
    let dra = nodes.iter().all(|n| {
        s.world
            .nodes
            .map
            .get(*n)
            .is_some_and(|x| x.devices.is_some())
    });
    let Some(domain) = super::dra::nvlink_domain(s.c, &nodes).filter(|_| dra) else {
        return Ok(());
    };
    let fail = |text: String| Err(Reason::new(Invariant::Imex, 5, text));
    let (Some((tpl, _)), Some(devices)) = (
        o.pods.first(),
        s.world
            .nodes
            .map
            .get(nodes[0])
            .and_then(|n| n.devices.as_ref()),
    ) else {
        return Ok(());
    };
    let Ok(claimed) = s.dra.claimed(s.c, &o.namespace, tpl, devices) else {
        return Ok(());
    };
    let pods = nodes.len() as u64;
    match claimed.channel {
        None => fail(format!(
            "runs the plan's {} on {pods} nodes of multi-node NVLink domain {domain} without an IMEX channel (no ComputeDomain channel claim): its traffic between nodes falls back to the network",
            u.what
        )),
        Some((cd, n)) if n != 0 && n != pods => fail(format!(
            "uses {cd}, whose numNodes {n} is not the gang's {pods} nodes"
        )),
        Some((cd, _)) if o.capacity > 1 => fail(format!(
            "submits {} gangs that would all join {cd}: one ComputeDomain per gang",
            o.capacity
        )),
        Some(_) => Ok(()),
    }
}

/// A shared resource asked above 1 where the device plugin refuses it (MPS, or
/// `failRequestsGreaterThanOne`).
fn above_one(tpl: &Pod, node: &super::nodes::Node) -> Result<(), String> {
    let Some(s) = node.sharing.as_ref().filter(|s| s.fail_above_one) else {
        return Ok(());
    };
    for name in s.replicas.keys() {
        let shared = if s.rename {
            format!("{name}.shared")
        } else {
            name.clone()
        };
        if let Some(n) = tpl.requests.get(&shared).filter(|n| **n > 1000) {
            return Err(format!(
                "asks {} {shared} on {}, whose device plugin refuses more than 1 of a shared resource",
                n / 1000,
                node.name
            ));
        }
    }
    Ok(())
}

/// Exactly the planned extended resources; the class's CPU and memory when declared.
pub(crate) fn resources(tpl: &Pod, g: &Gpu, w: &Workload) -> Result<(), String> {
    let want = expected(g);
    let have: BTreeMap<String, i128> = tpl
        .requests
        .iter()
        .filter(|(k, _)| k.contains('/'))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    if have != want {
        return Err(format!(
            "asks {} where the plan gives {}",
            show(&have),
            show(&want)
        ));
    }
    host_resources(tpl, w)
}

/// The class's declared CPU and memory, exactly.
fn host_resources(tpl: &Pod, w: &Workload) -> Result<(), String> {
    let (cpu, mem) = units::host_needs(w);
    for (r, need) in [("cpu", cpu as i128), ("memory", mem as i128 * 1000)] {
        let asked = tpl.requests.get(r).copied().unwrap_or(0);
        if need > 0 && asked != need {
            return Err(format!(
                "asks {r} {} where the class declares {}",
                quantity::show(asked, r),
                quantity::show(need, r)
            ));
        }
    }
    Ok(())
}

fn topology(s: &Scope, o: &Object, u: &Unit) -> Result<(), Reason> {
    let nodes = u.nodes();
    if s.t == Target::Volcano {
        if let Some((mode, Some(tier))) = &o.network {
            if mode == "hard" && nodes.len() > 1 && !s.volcano.one_hypernode(*tier, &nodes) {
                let text = format!(
                    "needs one HyperNode of tier <= {tier}; no such HyperNode holds {}",
                    nodes.join(", ")
                );
                return Err(Reason::new(Invariant::Topology, 5, text));
            }
        }
    }
    if s.t == Target::Kueue {
        return kueue_topology(s, o, u);
    }
    if s.t == Target::Kai {
        return super::kai::topology(s.kai, s.world, &o.kai_topology, &nodes);
    }
    Ok(())
}

fn topo_fail(text: String) -> Result<(), Reason> {
    Err(Reason::new(Invariant::Topology, 5, text))
}

/// Kueue TAS: the levels of the Topology of the flavor the gang's first pod gets
/// (`None` when its queue or flavor does not resolve: reported elsewhere).
fn kueue_levels<'k>(
    s: &'k Scope,
    o: &Object,
    u: &Unit,
    tpl: &Pod,
) -> Option<Result<(&'k str, &'k [String]), String>> {
    let queue = o
        .labels
        .get("kueue.x-k8s.io/queue-name")
        .map(String::as_str)
        .unwrap_or("");
    let ns = s.world.ns_labels(&o.namespace);
    let (_, q) = s.kueue.cluster_queue(&o.namespace, queue, &ns).ok()?;
    let first = &u.pods[0];
    let node = s.world.nodes.map.get(&first.node)?;
    let resource = expected(&first.gpu).into_keys().next()?;
    let flavor = s.kueue.flavor(q, &resource, node, tpl).ok()?;
    let Some(topo) = s
        .kueue
        .flavors
        .get(flavor)
        .and_then(|f| f.topology.as_ref())
    else {
        return Some(Err(format!("flavor {flavor} has no topologyName")));
    };
    match s.kueue.topologies.get_key_value(topo) {
        Some((name, levels)) => Some(Ok((name.as_str(), levels.as_slice()))),
        None => Some(Err(format!("Topology {topo} is missing"))),
    }
}

fn kueue_topology(s: &Scope, o: &Object, u: &Unit) -> Result<(), Reason> {
    let Some((tpl, _)) = o.pods.first() else {
        return Ok(());
    };
    let Some(level) = tpl
        .annotations
        .get("kueue.x-k8s.io/podset-required-topology")
    else {
        return Ok(());
    };
    let (topo, levels) = match kueue_levels(s, o, u, tpl) {
        None => return Ok(()),
        Some(Err(e)) => return topo_fail(format!("requires topology level {level}, but {e}")),
        Some(Ok(x)) => x,
    };
    if !levels.contains(level) {
        return topo_fail(format!(
            "requires level {level}, which Topology {topo} does not have"
        ));
    }
    let mut values = std::collections::BTreeSet::new();
    for p in &u.pods {
        let labels = s.world.nodes.map.get(&p.node).map(|n| &n.labels);
        let missing = levels
            .iter()
            .find(|l| labels.is_none_or(|m| !m.contains_key(*l)));
        if let Some(missing) = missing {
            let node = &p.node;
            return topo_fail(format!(
                "{node} lacks label {missing} of Topology {topo}: TAS leaves it out"
            ));
        }
        values.insert(
            labels
                .and_then(|m| m.get(level))
                .cloned()
                .unwrap_or_default(),
        );
    }
    if values.len() > 1 {
        let v: Vec<String> = values.into_iter().collect();
        let what = &u.what;
        return topo_fail(format!(
            "requires one {level} domain; the plan's {what} spans {}",
            v.join(", ")
        ));
    }
    Ok(())
}
