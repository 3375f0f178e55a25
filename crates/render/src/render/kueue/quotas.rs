//! The Kueue queues' quotas: one resource group per ClusterQueue covering every resource
//! its flavors serve or its workloads ask for (Kueue admits a workload only when its
//! queue covers every resource it requests, and a flavor sits in one group).
//!
//! Whole GPUs: `nominalQuota` = the team's guarantee, split over flavors by the team's
//! declared `quota` blocks, then where the plan puts the team's whole GPUs, the rest to
//! the flavor its whole-GPU classes run on; `borrowingLimit` = ceiling - guarantee; the
//! cohort holds the GPUs no guarantee covers (Kueue lends only quota someone holds).
//! MIG instances, shared replicas, CPU and memory: what the plan gives the team, per
//! flavor.

use super::super::facts::{Facts, GPU_RESOURCE, SHARED_RESOURCE, TeamFacts, mig_resource};
use super::super::workload;
use super::Flavor;
use crate::model::PoolMode;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A team's share of one flavor: (team, pool, GPU model).
type FlavorOf<'a> = (&'a str, &'a str, &'a str);

#[derive(Serialize)]
pub(super) struct Res {
    pub name: String,
    /// A Kubernetes quantity.
    pub nominal: String,
    pub borrowing: Option<u32>,
}

#[derive(Serialize)]
pub(super) struct FlavorQuota {
    pub name: String,
    pub resources: Vec<Res>,
}

#[derive(Serialize)]
pub(super) struct Group {
    covered: Vec<String>,
    flavors: Vec<FlavorQuota>,
}

#[derive(Serialize)]
pub(super) struct ClusterQueue {
    name: String,
    /// Its team's cohort: the parent team's, else the cluster's.
    cohort: String,
    /// `fairSharing.weight`: the team's declared weight.
    weight: Option<u32>,
    groups: Vec<Group>,
}

/// What the queues' resource group is computed from: the flavors, the resources they
/// cover, and what the plan gives each team on each flavor.
pub(super) struct Quotas<'a> {
    pub f: &'a Facts<'a>,
    flavors: &'a [Flavor],
    pub whole: Vec<&'a Flavor>,
    /// Parent teams (their whole-GPU quota is their cohort's, see `super::cohorts`).
    parents: BTreeSet<String>,
    /// Team -> the cohort its ClusterQueue joins.
    cohort_of: BTreeMap<String, String>,
    covered: Vec<String>,
    /// (team, pool, model) -> resource -> amount planned there (counts; CPU in
    /// millicores; memory in bytes).
    planned: BTreeMap<FlavorOf<'a>, BTreeMap<String, u64>>,
    /// (team, pool, model) -> whole GPUs planned there.
    whole_planned: BTreeMap<FlavorOf<'a>, u64>,
}

impl<'a> Quotas<'a> {
    pub(super) fn new(
        f: &'a Facts<'a>,
        flavors: &'a [Flavor],
        (parents, cohort_of): (BTreeSet<String>, BTreeMap<String, String>),
    ) -> Self {
        let (planned, whole_planned) = planned_on(f);
        let mut covered: BTreeSet<String> = BTreeSet::new();
        if flavors.iter().any(|fl| fl.mode == PoolMode::WholeGpu) || !whole_planned.is_empty() {
            covered.insert(GPU_RESOURCE.to_string());
        }
        if flavors
            .iter()
            .any(|fl| matches!(fl.mode, PoolMode::TimeSlice | PoolMode::Mps))
        {
            covered.insert(SHARED_RESOURCE.to_string());
        }
        covered.extend(
            f.nodes
                .iter()
                .flat_map(|n| n.mig.values().flatten().map(|p| mig_resource(p))),
        );
        covered.extend(planned.values().flat_map(|r| r.keys().cloned()));
        Quotas {
            f,
            flavors,
            whole: flavors
                .iter()
                .filter(|fl| fl.mode == PoolMode::WholeGpu)
                .collect(),
            parents,
            cohort_of,
            covered: covered.into_iter().collect(),
            planned,
            whole_planned,
        }
    }

    /// Team `t`'s whole GPUs planned on each whole-GPU flavor.
    pub(crate) fn whole_of(&self, t: &TeamFacts) -> BTreeMap<String, u64> {
        self.whole
            .iter()
            .map(|fl| {
                let key = (
                    t.name.as_str(),
                    fl.pool.as_str(),
                    fl.model.as_deref().unwrap_or(""),
                );
                (
                    fl.name.clone(),
                    self.whole_planned.get(&key).copied().unwrap_or(0),
                )
            })
            .collect()
    }

    /// The cohort's own quota: per whole-GPU flavor, its GPUs less the teams' nominal
    /// quotas there. Teams borrow it (within `borrowingLimit`) for what the plan gives
    /// them above their guarantees: Kueue lends only quota someone holds.
    /// `held`: per flavor, what the cohorts of parent teams hold themselves.
    pub(super) fn cohort_pool(&self, held: &BTreeMap<String, u32>) -> Vec<FlavorQuota> {
        let mut nominal: BTreeMap<String, u32> = BTreeMap::new();
        for t in &self.f.teams {
            for (fl, n) in self.nominal_of(t) {
                *nominal.entry(fl).or_insert(0) += n;
            }
        }
        for (fl, n) in held {
            *nominal.entry(fl.clone()).or_insert(0) += n;
        }
        let pool: Vec<FlavorQuota> = self
            .whole
            .iter()
            .map(|fl| {
                let gpus: u32 = self
                    .f
                    .nodes
                    .iter()
                    .filter(|n| n.pool == fl.pool && n.model == fl.model)
                    .map(|n| n.gpus.len() as u32)
                    .sum();
                FlavorQuota {
                    name: fl.name.clone(),
                    resources: vec![Res {
                        name: GPU_RESOURCE.to_string(),
                        nominal: gpus
                            .saturating_sub(nominal.get(&fl.name).copied().unwrap_or(0))
                            .to_string(),
                        borrowing: None,
                    }],
                }
            })
            .collect();
        if pool.iter().all(|q| q.resources[0].nominal == "0") {
            Vec::new()
        } else {
            pool
        }
    }

    /// A team's ClusterQueue `nominalQuota` of whole GPUs per whole-GPU flavor: its
    /// guarantee split over them, or none for a parent team (its quota is its cohort's,
    /// shared by its subtree).
    pub(crate) fn nominal_of(&self, t: &TeamFacts) -> BTreeMap<String, u32> {
        if self.parents.contains(&t.name) {
            return self.whole.iter().map(|fl| (fl.name.clone(), 0)).collect();
        }
        whole_gpu_split(self.f, t, &self.whole, &self.whole_of(t))
    }

    /// One ClusterQueue per team with one resource group: every resource the flavors
    /// serve or the plan asks for (Kueue admits a workload only when its queue covers
    /// every resource it requests, and a flavor sits in one group).
    pub(super) fn queues(&self) -> Vec<ClusterQueue> {
        self.f
            .teams
            .iter()
            .map(|t| {
                let groups = if self.covered.is_empty() || self.flavors.is_empty() {
                    Vec::new()
                } else {
                    vec![self.group(t)]
                };
                ClusterQueue {
                    name: t.name.clone(),
                    cohort: self.cohort_of.get(&t.name).cloned().unwrap_or_default(),
                    weight: t.weight,
                    groups,
                }
            })
            .collect()
    }

    /// Whole GPUs: the guarantee split over the whole-GPU flavors, borrowing up to the
    /// ceiling; shared GPUs, MIG instances, CPU and memory: what the plan gives the team
    /// on each flavor.
    fn group(&self, t: &TeamFacts) -> Group {
        let split = self.nominal_of(t);
        // A parent team's own classes borrow from its cohort, up to its ceiling.
        let borrow = if self.parents.contains(&t.name) {
            t.ceiling
        } else {
            t.ceiling - t.guarantee
        };
        Group {
            covered: self.covered.clone(),
            flavors: self
                .flavors
                .iter()
                .map(|fl| FlavorQuota {
                    name: fl.name.clone(),
                    resources: self
                        .covered
                        .iter()
                        .map(|r| {
                            if r == GPU_RESOURCE && fl.mode == PoolMode::WholeGpu {
                                Res {
                                    name: r.clone(),
                                    nominal: split.get(&fl.name).copied().unwrap_or(0).to_string(),
                                    borrowing: Some(borrow),
                                }
                            } else if r == GPU_RESOURCE {
                                // Whole GPUs on a MIG or shared flavor (one replica per
                                // GPU): what the plan gives the team there.
                                let key = (
                                    t.name.as_str(),
                                    fl.pool.as_str(),
                                    fl.model.as_deref().unwrap_or(""),
                                );
                                let n = self.whole_planned.get(&key).copied().unwrap_or(0);
                                Res {
                                    name: r.clone(),
                                    nominal: n.to_string(),
                                    borrowing: Some(0),
                                }
                            } else {
                                Res {
                                    name: r.clone(),
                                    nominal: quantity(r, self.planned(t, fl, r)),
                                    borrowing: None,
                                }
                            }
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// What the plan gives team `t` of `resource` on flavor `fl`.
    fn planned(&self, t: &TeamFacts, fl: &Flavor, resource: &str) -> u64 {
        let model = fl.model.as_deref().unwrap_or("");
        self.planned
            .get(&(t.name.as_str(), fl.pool.as_str(), model))
            .and_then(|r| r.get(resource))
            .copied()
            .unwrap_or(0)
    }
}

/// An amount of `resource` as a Kubernetes quantity.
fn quantity(resource: &str, v: u64) -> String {
    match resource {
        "cpu" => workload::cpu_quantity(v),
        "memory" => workload::memory_quantity(v),
        _ => v.to_string(),
    }
}

/// Whole-GPU nominal quota of a team per flavor (see the module docs).
fn whole_gpu_split(
    f: &Facts,
    t: &TeamFacts,
    whole: &[&Flavor],
    planned: &BTreeMap<String, u64>,
) -> BTreeMap<String, u32> {
    let mut out: BTreeMap<String, u32> = whole.iter().map(|fl| (fl.name.clone(), 0)).collect();
    let Some(team) = f.c.teams.get(&t.name) else {
        return out;
    };
    let mut declared = 0u32;
    // Model and pool quotas that Kueue enforces (with authorities, those of Kueue's
    // nodes; a scheduler's part is already the team's guarantee here).
    let kueue_quota = |q: &&crate::model::Quota| {
        (q.model.is_some() || q.pool.is_some())
            && (!f.c.authorities_declared()
                || f.c.quota_authorities(q) == [crate::model::Authority::Kueue])
    };
    for q in team.quotas.iter().filter(kueue_quota) {
        declared += q.guarantee;
        if let Some(fl) = whole
            .iter()
            .find(|fl| q.covers(fl.model.as_deref().unwrap_or(""), Some(&fl.pool)))
        {
            *out.entry(fl.name.clone()).or_insert(0) += q.guarantee;
        }
    }
    let mut rest = t.guarantee.saturating_sub(declared);
    // Then where the plan puts the team's whole GPUs, most first.
    let mut by_use: Vec<(&String, u64)> = planned.iter().map(|(k, v)| (k, *v)).collect();
    by_use.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (fl, want) in by_use {
        let have = out.get(fl).copied().unwrap_or(0) as u64;
        let give = want.saturating_sub(have).min(rest as u64) as u32;
        *out.entry(fl.clone()).or_insert(0) += give;
        rest -= give;
    }
    if rest > 0 {
        let home = f
            .classes
            .iter()
            .filter(|c| c.team == t.name)
            .flat_map(|c| c.groups.iter())
            .filter(|g| g.resource.as_deref() == Some(GPU_RESOURCE))
            .find_map(|g| {
                whole.iter().find(|fl| {
                    g.pools.contains(&fl.pool)
                        && fl.model.as_ref().is_some_and(|m| g.models.contains(m))
                })
            })
            .or_else(|| whole.first());
        if let Some(h) = home {
            *out.entry(h.name.clone()).or_insert(0) += rest;
        }
    }
    out
}

/// What each team's classes ask on the nodes of each flavor, per resource, in one pass
/// over the classes' groups: `(team, pool, model) -> resource -> amount` (a flavor is
/// one pool and model, and so are its nodes): shared replicas, MIG instances, and the
/// declared CPU (millicores) and memory (bytes) of every pod.
type Planned<'a> = (
    BTreeMap<FlavorOf<'a>, BTreeMap<String, u64>>,
    BTreeMap<FlavorOf<'a>, u64>,
);

fn planned_on<'a>(f: &'a Facts) -> Planned<'a> {
    let flavor_of: BTreeMap<&str, (&str, &str)> = f
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), (n.pool.as_str(), n.model.as_deref()?))))
        .collect();
    let mut out: BTreeMap<FlavorOf, BTreeMap<String, u64>> = BTreeMap::new();
    let mut add = |team: &'a str, node: &str, resource: String, n: u64| {
        if let Some((pool, model)) = flavor_of.get(node) {
            *out.entry((team, pool, model))
                .or_default()
                .entry(resource)
                .or_insert(0) += n;
        }
    };
    let mut whole: BTreeMap<FlavorOf, u64> = BTreeMap::new();
    let class = |name: &str| f.classes.iter().find(|c| c.name == name);
    for w in &f.plan.workloads {
        let Some(c) = class(&w.name) else { continue };
        let gpus = w
            .gangs
            .iter()
            .flat_map(|g| g.nodes.iter().map(|n| (n.node.as_str(), n.gpus.len())))
            .chain(w.packed.iter().map(|p| (p.node.as_str(), p.gpus.len())))
            .filter(|_| {
                !c.groups
                    .iter()
                    .any(|g| g.resource.as_deref() == Some(SHARED_RESOURCE))
            });
        for (node, k) in gpus {
            if let Some((pool, model)) = flavor_of.get(node) {
                *whole.entry((&w.team, pool, model)).or_insert(0) += k as u64;
            }
        }
        for i in &w.mig_instances {
            add(&w.team, &i.node, mig_resource(&i.profile), 1);
        }
        let fraction = c
            .groups
            .iter()
            .any(|g| g.resource.as_deref() == Some(SHARED_RESOURCE));
        for s in &w.shares {
            if fraction {
                add(
                    &w.team,
                    &s.node,
                    SHARED_RESOURCE.to_string(),
                    s.replicas as u64,
                );
            } else if let Some((pool, model)) = flavor_of.get(s.node.as_str()) {
                // One replica per GPU shares nothing: a whole GPU.
                *whole.entry((&w.team, pool, model)).or_insert(0) += s.replicas as u64;
            }
        }
        for p in &w.packed {
            let k = p.replicas as u64;
            if fraction {
                add(&w.team, &p.node, SHARED_RESOURCE.to_string(), k);
            }
            if c.cpu_milli > 0 {
                add(&w.team, &p.node, "cpu".to_string(), c.cpu_milli * k);
            }
            if c.memory > 0 {
                add(&w.team, &p.node, "memory".to_string(), c.memory * k);
            }
        }
    }
    (out, whole)
}
