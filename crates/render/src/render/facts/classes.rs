//! Class facts: what each class's pods ask for, and its *placement groups*: the gangs or
//! replicas the plan put in one pool and GPU model, asking for the same thing, in one
//! domain of the class's required tier. Every target renders one object per group, each
//! selecting its group's nodes and carrying its share of the replicas, so that a class
//! spread over several pools, models, MIG profiles, leaves or NVLink domains runs where
//! the plan put each part (docs/render.md, "Placement groups").

use super::groups::{self, Unit};
use super::{Ask, ClassFacts, GroupFacts, NodeFacts, Pin, SCHEDULER_LABEL, TierFacts, Workloads};
use crate::model::{Cluster, Taint, Tier, Workload, WorkloadKind};
use crate::placement::{Placement, WorkloadPlacement};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The facts of every planned class, sorted by name, with their groups named.
pub(super) fn classes_of(
    c: &Cluster,
    plan: &Placement,
    nodes: &[Arc<NodeFacts>],
    tiers: &[TierFacts],
    workload: &Workloads,
    uncarried: &BTreeMap<String, Vec<String>>,
) -> Vec<ClassFacts> {
    let cx = ClassCx {
        c,
        by_name: nodes.iter().map(|n| (n.name.as_str(), &**n)).collect(),
        tiers,
        uncarried,
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
    groups::name_all(&mut out);
    out
}

/// What every class's facts are computed from.
struct ClassCx<'a> {
    c: &'a Cluster,
    by_name: BTreeMap<&'a str, &'a NodeFacts>,
    tiers: &'a [TierFacts],
    uncarried: &'a BTreeMap<String, Vec<String>>,
}

impl ClassCx<'_> {
    /// The facts of class `m` as planned in `w`.
    fn class(&self, w: &WorkloadPlacement, m: &Workload) -> ClassFacts {
        let scheduler = self.c.authority_of(m);
        let required = m.required_tier.map(|t| t.as_str().to_string());
        let mut by_key: BTreeMap<groups::Key, groups::Acc> = BTreeMap::new();
        for u in groups::units(w, m) {
            let key = self.key(m, &u);
            let acc = by_key.entry(key).or_default();
            acc.count += u.count;
            acc.nodes.extend(u.nodes.iter().map(|(n, _)| n.clone()));
        }
        let groups = by_key
            .into_iter()
            .map(|(key, acc)| self.group(m, key, acc))
            .collect();
        ClassFacts {
            name: w.name.clone(),
            scheduler,
            kind: w.kind.clone(),
            team: w.team.clone(),
            priority: w.priority.clone(),
            replicas: w.replicas_requested,
            replicas_placed: w.replicas_placed,
            gang_gpus: m.gang_gpus,
            preemptible: m.preemptible,
            spot: self.c.may_use_spot(m),
            straddle: m.straddle,
            required,
            preferred: m.preferred_tier.map(|t| t.as_str().to_string()),
            cpu_milli: m.cpu_milli,
            memory: m.host_memory.0,
            gpu_memory: m.memory.map(|b| b.0),
            groups,
        }
    }

    /// The group a unit belongs to: its nodes' pools and models, what each pod asks,
    /// its pods and the domain it is pinned to.
    fn key(&self, m: &Workload, u: &Unit) -> groups::Key {
        let facts: Vec<&NodeFacts> = u
            .nodes
            .iter()
            .filter_map(|(n, _)| self.by_name.get(n.as_str()).copied())
            .collect();
        let dra = !facts.is_empty() && facts.iter().all(|n| n.dra);
        groups::Key {
            pools: facts.iter().map(|n| n.pool.clone()).collect(),
            models: unit_models(&self.by_name, u),
            ask: u.ask.clone(),
            pods: u.nodes.len() as u32,
            pin: self.pin(m, &facts),
            dra,
            split: if dra { split(m, u, &facts) } else { None },
        }
    }

    /// Where a gang of several pods must stay: the domain its nodes share at the
    /// innermost tier at or above the class's required tier that they all have
    /// (`nvlink`, `leaf`, `spine`, `core`); none for one pod, the node or cluster tier.
    fn pin(&self, m: &Workload, nodes: &[&NodeFacts]) -> Option<Pin> {
        let want = m.required_tier?;
        if nodes.len() < 2 || matches!(want, Tier::Node | Tier::Cluster) {
            return None;
        }
        self.tiers
            .iter()
            .filter(|t| Tier::parse(&t.name).is_some_and(|x| x >= want))
            .find_map(|t| {
                let doms: BTreeSet<&String> = nodes
                    .iter()
                    .filter_map(|n| n.domains.get(&t.name))
                    .collect();
                match doms.into_iter().collect::<Vec<_>>()[..] {
                    [one] if nodes.iter().all(|n| n.domains.contains_key(&t.name)) => Some(Pin {
                        tier: t.name.clone(),
                        label: t.label.clone(),
                        value: one.clone(),
                    }),
                    _ => None,
                }
            })
    }

    /// A group's facts (named later by [`groups::name_all`]).
    fn group(&self, m: &Workload, key: groups::Key, acc: groups::Acc) -> GroupFacts {
        let nodes: Vec<&NodeFacts> = acc
            .nodes
            .iter()
            .filter_map(|n| self.by_name.get(n.as_str()).copied())
            .collect();
        let tolerations = self.tolerations(m, &nodes);
        let nccl = if m.kind == WorkloadKind::Training {
            let landed: BTreeSet<&str> = nodes.iter().map(|n| n.class.as_str()).collect();
            crate::render::nccl::env_for(self.c, &landed)
        } else {
            Vec::new()
        };
        let shared = matches!(key.ask, Ask::Shared { .. });
        let models: Vec<String> = key.models.iter().cloned().collect();
        let mut dra = if key.dra {
            let training = m.kind == WorkloadKind::Training;
            super::dra::group(self.c, &key.ask, &models, &nodes, training, key.pods)
        } else {
            None
        };
        if let Some(d) = dra.as_mut().filter(|d| d.sharing.is_some()) {
            d.gpu = key.split.clone();
        }
        // A shared GPU under DRA is one ResourceClaim: its pods go to its node.
        let dra_shared = dra.as_ref().is_some_and(|d| d.sharing.is_some());
        // The GRES types of the GPUs the group uses (one node may have several models).
        let model_shorts = key
            .models
            .iter()
            .filter_map(|m| self.c.models.get(m).map(|gm| gm.short_name.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        GroupFacts {
            name: String::new(),
            pools: key.pools.into_iter().collect(),
            models: key.models.into_iter().collect(),
            model_shorts,
            resource: key.ask.resource(),
            per_pod: key.ask.amount(),
            ask: key.ask,
            pods: key.pods,
            count: acc.count,
            pin: key.pin,
            hosts: if m.packed() || dra_shared {
                acc.nodes.iter().cloned().collect()
            } else {
                Vec::new()
            },
            plugin_configs: if shared && !key.dra {
                nodes
                    .iter()
                    .map(|n| n.plugin_config.clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect()
            } else {
                Vec::new()
            },
            k8s_carried: !self
                .uncarried
                .get(&m.name)
                .is_some_and(|ns| ns.iter().any(|n| acc.nodes.contains(n))),
            nodes: acc.nodes.into_iter().collect(),
            tolerations,
            nccl_mount: nccl.iter().any(|(k, _)| k == "NCCL_TOPO_FILE"),
            nccl,
            dra,
        }
    }

    /// Taints the pods must tolerate: every taint of the group's nodes but the
    /// scheduler and capacity ones, plus the class's own scheduler's and, for a class
    /// that may be interrupted, the spot taint.
    fn tolerations(&self, m: &Workload, nodes: &[&NodeFacts]) -> Vec<Taint> {
        let mut set: BTreeSet<Taint> = nodes
            .iter()
            .flat_map(|n| n.taints.iter().cloned())
            .filter(|t| t.key != SCHEDULER_LABEL && t.key != super::CAPACITY_LABEL)
            .collect();
        if self.c.has_spot() && self.c.may_use_spot(m) {
            set.insert(super::spot_taint());
        }
        if let Some(a) = self.c.authority_of(m) {
            set.insert(Taint {
                key: SCHEDULER_LABEL.into(),
                value: Some(a.as_str().into()),
                effect: "NoSchedule".into(),
            });
        }
        set.into_iter().collect()
    }
}

/// What makes a DRA unit an object of its own: a shared GPU (its node and index: one
/// ResourceClaim each), or a gang on several nodes of one multi-node NVLink domain (its
/// replica: one ComputeDomain each).
fn split(m: &Workload, u: &Unit, nodes: &[&NodeFacts]) -> Option<(String, u32)> {
    if matches!(u.ask, Ask::Shared { .. }) {
        let (node, gpus) = u.nodes.first()?;
        return Some((node.clone(), gpus.first().copied().unwrap_or(0)));
    }
    let domains: BTreeSet<Option<&String>> =
        nodes.iter().map(|n| n.domains.get("nvlink")).collect();
    let one = domains.len() == 1 && domains.iter().all(Option::is_some);
    if m.kind == WorkloadKind::Training && u.nodes.len() > 1 && one {
        return Some((String::new(), u.gang?));
    }
    None
}

/// The GPU models a unit's GPUs are of (each node's model for a unit without GPUs).
fn unit_models(by_name: &BTreeMap<&str, &NodeFacts>, u: &Unit) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (name, gpus) in &u.nodes {
        let Some(n) = by_name.get(name.as_str()) else {
            continue;
        };
        if gpus.is_empty() {
            out.extend(n.model.clone());
        }
        out.extend(
            gpus.iter()
                .filter_map(|g| n.gpu_models.get(g).map(|m| m.0.clone())),
        );
    }
    out
}
