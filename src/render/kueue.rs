//! Kueue (`kueue.x-k8s.io/v1beta2`): a `ResourceFlavor` per pool and GPU model, a
//! `Topology` from the fabric labels (hostname last), a `ClusterQueue` per team in one
//! cohort, a `LocalQueue` per team namespace, a `WorkloadPriorityClass` per priority,
//! and an example Job per training class with its topology annotation.
//!
//! Whole-GPU quota: `nominalQuota` = the team's guarantee, split over flavors by the
//! team's declared `quota` blocks (what is left goes to the flavor its whole-GPU classes
//! run on), `borrowingLimit` = ceiling - guarantee. MIG and shared resources: the
//! instances and replicas the plan gives the team, per flavor.

use super::facts::{Facts, GPU_RESOURCE, SHARED_RESOURCE, TeamFacts, is_dns_label, mig_resource};
use super::k8s::{TolerationCtx, tolerations};
use super::{Files, GP913, run};
use crate::diag::Diagnostic;
use crate::model::Taint;
use minijinja::Environment;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Serialize, Clone)]
struct Flavor {
    name: String,
    pool: String,
    model: Option<String>,
    mode: String,
    nodes: Vec<String>,
    labels: Vec<(String, String)>,
    taints: Vec<Taint>,
    topology: bool,
}

#[derive(Serialize)]
struct Res {
    name: String,
    nominal: u32,
    borrowing: Option<u32>,
}

#[derive(Serialize)]
struct FlavorQuota {
    name: String,
    resources: Vec<Res>,
}

#[derive(Serialize)]
struct Group {
    covered: Vec<String>,
    flavors: Vec<FlavorQuota>,
}

#[derive(Serialize)]
struct ClusterQueue {
    name: String,
    groups: Vec<Group>,
}

#[derive(Serialize)]
struct Ctx<'a> {
    header: String,
    cohort: String,
    topology: Option<String>,
    levels: Vec<String>,
    flavors: Vec<Flavor>,
    queues: Vec<ClusterQueue>,
    teams: Vec<&'a str>,
    priorities: &'a [super::facts::PriorityFacts],
}

#[derive(Serialize)]
struct JobCtx<'a> {
    header: String,
    c: &'a super::facts::ClassFacts,
    /// (annotation, level label)
    topology: Option<(&'static str, String)>,
    flavor_labels: Vec<(String, String)>,
    tolerations: Vec<TolerationCtx>,
}

fn flavors_of(f: &Facts) -> Vec<Flavor> {
    let mut out: Vec<Flavor> = Vec::new();
    for p in &f.pools {
        for m in &p.models {
            let name = if p.models.len() == 1 {
                p.name.clone()
            } else {
                format!("{}-{m}", p.name)
            };
            let nodes: Vec<&super::facts::NodeFacts> = f
                .nodes
                .iter()
                .filter(|n| n.pool == p.name && n.model.as_ref() == Some(m))
                .collect();
            // Taints every node of the flavor has.
            let mut taints: Vec<Taint> =
                nodes.first().map(|n| n.taints.clone()).unwrap_or_default();
            taints.retain(|t| nodes.iter().all(|n| n.taints.contains(t)));
            taints.truncate(8);
            let topology = !f.tiers.is_empty()
                && nodes
                    .iter()
                    .all(|n| f.tiers.iter().all(|t| n.domains.contains_key(&t.name)));
            out.push(Flavor {
                name,
                pool: p.name.clone(),
                model: Some(m.clone()),
                mode: p.mode.clone(),
                nodes: nodes.iter().map(|n| n.name.clone()).collect(),
                labels: vec![
                    (super::facts::MODEL_LABEL.to_string(), m.clone()),
                    (super::facts::POOL_LABEL.to_string(), p.name.clone()),
                ],
                taints,
                topology,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whole-GPU nominal quota of a team per flavor (see the module docs).
fn whole_gpu_split(f: &Facts, t: &TeamFacts, whole: &[&Flavor]) -> BTreeMap<String, u32> {
    let mut out: BTreeMap<String, u32> = whole.iter().map(|fl| (fl.name.clone(), 0)).collect();
    let Some(team) = f.c.teams.get(&t.name) else {
        return out;
    };
    let mut declared = 0u32;
    for q in &team.quotas {
        declared += q.guarantee;
        if let Some(fl) = whole
            .iter()
            .find(|fl| q.covers(fl.model.as_deref().unwrap_or(""), Some(&fl.pool)))
        {
            *out.entry(fl.name.clone()).or_insert(0) += q.guarantee;
        }
    }
    let rest = t.guarantee.saturating_sub(declared);
    if rest > 0 {
        let home = f
            .classes
            .iter()
            .filter(|c| c.team == t.name && c.resource == GPU_RESOURCE)
            .find_map(|c| {
                whole
                    .iter()
                    .find(|fl| Some(&fl.pool) == c.pool.as_ref() && fl.model == c.model)
            })
            .or_else(|| whole.first());
        if let Some(h) = home {
            *out.entry(h.name.clone()).or_insert(0) += rest;
        }
    }
    out
}

/// Instances / replicas of a team's classes on the nodes of a flavor, per resource.
fn planned_on(f: &Facts, team: &str, fl: &Flavor) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for w in f.plan.workloads.iter().filter(|w| w.team == team) {
        for i in w
            .mig_instances
            .iter()
            .filter(|i| fl.nodes.contains(&i.node))
        {
            *out.entry(mig_resource(&i.profile)).or_insert(0) += 1;
        }
        for s in w.shares.iter().filter(|s| fl.nodes.contains(&s.node)) {
            *out.entry(SHARED_RESOURCE.to_string()).or_insert(0) += s.replicas;
        }
    }
    out
}

pub(super) fn render(
    f: &Facts,
    env: &Environment,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Files, Diagnostic> {
    if let Some(v) = &f.c.kueue_version {
        if v.as_slice() < [0, 15].as_slice() {
            warnings.push(
                Diagnostic::warning(
                    GP913,
                    format!(
                        "the cluster names Kueue {}, but gpuplan renders kueue.x-k8s.io/v1beta2, served from Kueue 0.15",
                        v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
                    ),
                )
                .with_help("upgrade Kueue to 0.15 or later before applying kueue/, or leave it out"),
            );
        }
    }
    let flavors = flavors_of(f);
    let whole: Vec<&Flavor> = flavors.iter().filter(|fl| fl.mode == "whole-gpu").collect();
    let shared: Vec<&Flavor> = flavors
        .iter()
        .filter(|fl| fl.mode == "time-slice" || fl.mode == "mps")
        .collect();
    let migf: Vec<&Flavor> = flavors.iter().filter(|fl| fl.mode == "mig").collect();
    let mig_resources: Vec<String> = f
        .nodes
        .iter()
        .flat_map(|n| n.mig.values().flatten().map(|p| mig_resource(p)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let queues = f
        .teams
        .iter()
        .map(|t| {
            let mut groups = Vec::new();
            if !whole.is_empty() {
                let split = whole_gpu_split(f, t, &whole);
                groups.push(Group {
                    covered: vec![GPU_RESOURCE.to_string()],
                    flavors: whole
                        .iter()
                        .map(|fl| FlavorQuota {
                            name: fl.name.clone(),
                            resources: vec![Res {
                                name: GPU_RESOURCE.to_string(),
                                nominal: split.get(&fl.name).copied().unwrap_or(0),
                                borrowing: Some(t.ceiling - t.guarantee),
                            }],
                        })
                        .collect(),
                });
            }
            if !shared.is_empty() {
                groups.push(Group {
                    covered: vec![SHARED_RESOURCE.to_string()],
                    flavors: shared
                        .iter()
                        .map(|fl| FlavorQuota {
                            name: fl.name.clone(),
                            resources: vec![Res {
                                name: SHARED_RESOURCE.to_string(),
                                nominal: planned_on(f, &t.name, fl)
                                    .get(SHARED_RESOURCE)
                                    .copied()
                                    .unwrap_or(0),
                                borrowing: None,
                            }],
                        })
                        .collect(),
                });
            }
            if !migf.is_empty() && !mig_resources.is_empty() {
                groups.push(Group {
                    covered: mig_resources.clone(),
                    flavors: migf
                        .iter()
                        .map(|fl| {
                            let planned = planned_on(f, &t.name, fl);
                            FlavorQuota {
                                name: fl.name.clone(),
                                resources: mig_resources
                                    .iter()
                                    .map(|r| Res {
                                        name: r.clone(),
                                        nominal: planned.get(r).copied().unwrap_or(0),
                                        borrowing: None,
                                    })
                                    .collect(),
                            }
                        })
                        .collect(),
                });
            }
            ClusterQueue {
                name: t.name.clone(),
                groups,
            }
        })
        .collect();

    let name = if is_dns_label(&f.c.name) {
        f.c.name.clone()
    } else {
        "gpuplan".to_string()
    };
    let has_topology = flavors.iter().any(|fl| fl.topology);
    let mut levels: Vec<String> = f.tiers.iter().rev().map(|t| t.label.clone()).collect();
    levels.push("kubernetes.io/hostname".into());
    let ctx = Ctx {
        header: f.header(),
        cohort: name.clone(),
        topology: has_topology.then(|| name.clone()),
        levels,
        flavors,
        queues,
        teams: f.teams.iter().map(|t| t.name.as_str()).collect(),
        priorities: &f.priorities,
    };
    let mut files = Files::new();
    for name in [
        "resourceflavors.yaml",
        "clusterqueues.yaml",
        "localqueues.yaml",
        "workloadpriorityclasses.yaml",
    ] {
        files.insert(name.into(), run(env, &format!("kueue/{name}.j2"), &ctx)?);
    }
    if has_topology {
        files.insert(
            "topology.yaml".into(),
            run(env, "kueue/topology.yaml.j2", &ctx)?,
        );
    }
    for c in f.classes.iter().filter(|c| c.kind == "training") {
        let label_of = |tier: &str| -> Option<String> {
            if tier == "node" {
                Some("kubernetes.io/hostname".to_string())
            } else {
                f.tier_at_least(tier).map(|t| t.label.clone())
            }
        };
        let topology = if !has_topology {
            None
        } else if let Some(r) = c.required.as_deref().and_then(label_of) {
            Some(("kueue.x-k8s.io/podset-required-topology", r))
        } else {
            c.preferred
                .as_deref()
                .and_then(label_of)
                .map(|p| ("kueue.x-k8s.io/podset-preferred-topology", p))
        };
        let flavor_labels = ctx
            .flavors
            .iter()
            .find(|fl| Some(&fl.pool) == c.pool.as_ref() && fl.model == c.model)
            .map(|fl| fl.labels.clone())
            .unwrap_or_default();
        let jc = JobCtx {
            header: f.header(),
            c,
            topology,
            flavor_labels,
            tolerations: tolerations(&c.tolerations),
        };
        files.insert(
            format!("examples/{}.yaml", c.name),
            run(env, "kueue/job.yaml.j2", &jc)?,
        );
    }
    Ok(files)
}
