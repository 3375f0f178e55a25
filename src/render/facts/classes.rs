//! Class facts: where each workload class runs (pool, model, the domain replica 0 is
//! pinned to), what its pods ask for, and which taints they must tolerate.

use super::{
    ClassFacts, GPU_RESOURCE, NodeFacts, SCHEDULER_LABEL, SHARED_RESOURCE, TierFacts, Workloads,
    mig_resource,
};
use crate::model::Cluster;
use crate::model::WorkloadKind;
use crate::model::{Taint, Tier, Workload};
use crate::placement::{Placement, WorkloadPlacement};
use std::collections::{BTreeMap, BTreeSet};

/// The facts of every planned class, sorted by name.
pub(super) fn classes_of(
    c: &Cluster,
    plan: &Placement,
    nodes: &[NodeFacts],
    tiers: &[TierFacts],
    workload: &Workloads,
) -> Vec<ClassFacts> {
    let cx = ClassCx {
        c,
        by_name: nodes.iter().map(|n| (n.name.as_str(), n)).collect(),
        pool_taints: pool_taints(nodes),
        tiers,
    };
    let mut out: Vec<ClassFacts> = plan
        .workloads
        .iter()
        .filter_map(|w| {
            let m = workload.get(w.name.as_str()).copied()?;
            Some(cx.class(w, m))
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Tolerations per pool: every taint of its nodes, sorted, without duplicates
/// (computed once, not per class).
fn pool_taints(nodes: &[NodeFacts]) -> BTreeMap<&str, Vec<Taint>> {
    let mut sets: BTreeMap<&str, BTreeSet<&Taint>> = BTreeMap::new();
    for n in nodes {
        sets.entry(n.pool.as_str()).or_default().extend(&n.taints);
    }
    sets.into_iter()
        .map(|(pool, taints)| (pool, taints.into_iter().cloned().collect()))
        .collect()
}

/// What every class's facts are computed from.
struct ClassCx<'a> {
    c: &'a Cluster,
    by_name: BTreeMap<&'a str, &'a NodeFacts>,
    pool_taints: BTreeMap<&'a str, Vec<Taint>>,
    tiers: &'a [TierFacts],
}

impl ClassCx<'_> {
    /// The facts of class `m` as planned in `w`.
    fn class(&self, w: &WorkloadPlacement, m: &Workload) -> ClassFacts {
        let nf = first_node(w).and_then(|n| self.by_name.get(n).copied());
        let (resource, per_pod) = resource_of(w, m);
        let required = m.required_tier.map(|t| t.as_str().to_string());
        let (pin_label, pin_value) = match (&required, nf) {
            (Some(t), Some(n)) => self.pin(t, n),
            _ => (None, None),
        };
        let scheduler = self.c.authority_of(m);
        // The pool's taints, less other schedulers' (a pool named after its mode may
        // span schedulers), plus the class's own scheduler's.
        let mut tolerations: Vec<Taint> = nf
            .and_then(|n| self.pool_taints.get(n.pool.as_str()))
            .cloned()
            .unwrap_or_default();
        tolerations.retain(|t| t.key != SCHEDULER_LABEL && t.key != super::CAPACITY_LABEL);
        if self.c.has_spot() && self.c.may_use_spot(m) {
            tolerations.push(super::spot_taint());
            tolerations.sort();
        }
        if let Some(a) = scheduler {
            tolerations.push(Taint {
                key: SCHEDULER_LABEL.into(),
                value: Some(a.as_str().into()),
                effect: "NoSchedule".into(),
            });
            tolerations.sort();
        }
        let nccl = if m.kind == WorkloadKind::Training {
            let landed: BTreeSet<&str> = w
                .gangs
                .iter()
                .flat_map(|g| g.nodes.iter())
                .filter_map(|n| self.by_name.get(n.node.as_str()).map(|f| f.class.as_str()))
                .collect();
            if landed.is_empty() {
                Vec::new()
            } else {
                crate::render::fabric::env_for(self.c, &landed)
            }
        } else {
            Vec::new()
        };
        ClassFacts {
            name: w.name.clone(),
            scheduler,
            nccl_mount: nccl.iter().any(|(k, _)| k == "NCCL_TOPO_FILE"),
            nccl,
            kind: w.kind.clone(),
            team: w.team.clone(),
            priority: w.priority.clone(),
            replicas: w.replicas_requested,
            replicas_placed: w.replicas_placed,
            pool: nf.map(|n| n.pool.clone()),
            model: nf
                .and_then(|n| n.model.clone())
                .or_else(|| m.models.first().cloned()),
            model_short: nf.and_then(|n| n.model_short.clone()),
            resource,
            per_pod,
            pods: pods_of(w, m, per_pod),
            gang_gpus: m.gang_gpus,
            preemptible: m.preemptible,
            spot: self.c.may_use_spot(m),
            straddle: m.straddle,
            required,
            preferred: m.preferred_tier.map(|t| t.as_str().to_string()),
            pin_label,
            pin_value,
            tolerations,
        }
    }

    /// Where a class with required tier `tier` is pinned, given the node replica 0
    /// landed on: `(label, value)` of that node's domain at the innermost tier at or
    /// above `tier` (its hostname for `node`); none when the node has no such domain.
    fn pin(&self, tier: &str, n: &NodeFacts) -> (Option<String>, Option<String>) {
        if tier == "node" {
            return (
                Some("kubernetes.io/hostname".to_string()),
                Some(n.name.clone()),
            );
        }
        let want = Tier::parse(tier);
        self.tiers
            .iter()
            .find(|x| Tier::parse(&x.name) >= want)
            .and_then(|x| {
                n.domains
                    .get(&x.name)
                    .map(|v| (Some(x.label.clone()), Some(v.clone())))
            })
            .unwrap_or((None, None))
    }
}

/// Where the class runs: the first node of replica 0, else of its first MIG instance,
/// else of its first share.
fn first_node(w: &WorkloadPlacement) -> Option<&str> {
    w.gangs
        .first()
        .and_then(|g| g.nodes.first().map(|n| n.node.as_str()))
        .or_else(|| w.mig_instances.first().map(|i| i.node.as_str()))
        .or_else(|| w.shares.first().map(|s| s.node.as_str()))
}

/// The resource each pod asks for, and how many: a MIG instance, a shared-GPU replica,
/// or whole GPUs (a training pod takes its gang's GPUs on one node).
fn resource_of(w: &WorkloadPlacement, m: &Workload) -> (String, u32) {
    if let Some(i) = w.mig_instances.first() {
        (mig_resource(&i.profile), 1)
    } else if !w.shares.is_empty() {
        (SHARED_RESOURCE.to_string(), 1)
    } else if m.kind == WorkloadKind::Training {
        let per_node = w
            .gangs
            .first()
            .and_then(|g| g.nodes.first())
            .map(|n| n.gpus.len() as u32)
            .unwrap_or_else(|| m.gpus_per_node.unwrap_or(m.gang_gpus.max(1)));
        (GPU_RESOURCE.to_string(), per_node.max(1))
    } else {
        (GPU_RESOURCE.to_string(), m.gpus_per_replica.max(1))
    }
}

/// Pods of one gang: the nodes of replica 0 (or the gang's GPUs over `per_pod`) for a
/// training class, 1 otherwise.
fn pods_of(w: &WorkloadPlacement, m: &Workload, per_pod: u32) -> u32 {
    if m.kind != WorkloadKind::Training {
        return 1;
    }
    w.gangs
        .first()
        .map(|g| g.nodes.len() as u32)
        .unwrap_or_else(|| m.gang_gpus.div_ceil(per_pod.max(1)))
        .max(1)
}
