//! Kueue (`kueue.x-k8s.io/v1beta2`): a `ResourceFlavor` per pool and GPU model, a
//! `Topology` per family of nodes carrying the same fabric labels (hostname last, see
//! `topologies_of`), a `ClusterQueue` per team in one
//! cohort, a `LocalQueue` per team namespace, a `WorkloadPriorityClass` per priority,
//! and an example Job per training class with its topology annotation.
//!
//! Whole-GPU quota: `nominalQuota` = the team's guarantee, split over flavors by the
//! team's declared `quota` blocks (what is left goes to the flavor its whole-GPU classes
//! run on), `borrowingLimit` = ceiling - guarantee. MIG and shared resources: the
//! instances and replicas the plan gives the team, per flavor.

use super::facts::{
    ClassFacts, Facts, GPU_RESOURCE, NodeFacts, PriorityFacts, SHARED_RESOURCE, TeamFacts,
    is_dns_label, mig_resource,
};
use super::k8s::{TolerationCtx, tolerations};
use super::{Files, GP913, run};
use crate::diag::Diagnostic;
use crate::model::{PoolMode, Taint};
use minijinja::{Environment, Value};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Serialize, Clone)]
struct Flavor {
    name: String,
    pool: String,
    model: Option<String>,
    mode: PoolMode,
    labels: Vec<(String, String)>,
    taints: Vec<Taint>,
    /// The Topology whose levels every node of the flavor carries (none when its
    /// nodes carry no fabric label).
    topology: Option<String>,
}

/// A Kueue Topology: the fabric labels (coarsest first, hostname last) that one family
/// of nodes all carry.
#[derive(Serialize, Clone)]
struct TopologyCtx {
    name: String,
    /// Tier names, innermost first (the flavor's family).
    tiers: Vec<String>,
    levels: Vec<String>,
}

/// A team's share of one flavor: (team, pool, GPU model).
type FlavorOf<'a> = (&'a str, &'a str, &'a str);

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
    topologies: Vec<TopologyCtx>,
    flavors: Vec<Flavor>,
    queues: Vec<ClusterQueue>,
    teams: Vec<&'a str>,
    priorities: &'a [PriorityFacts],
}

#[derive(Serialize)]
struct JobCtx<'a> {
    header: &'a str,
    c: &'a ClassFacts,
    /// (annotation, level label)
    topology: Option<(&'static str, String)>,
    flavor_labels: Vec<(String, String)>,
    tolerations: Vec<TolerationCtx>,
}

pub(super) fn render(
    f: &Facts,
    env: &Environment,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Files, Diagnostic> {
    warnings.extend(version_warning(f));
    let name = if is_dns_label(&f.c.name) {
        f.c.name.clone()
    } else {
        "gpuplan".to_string()
    };
    let (flavors, topologies) = topologies_of(f, flavors_of(f), &name);
    let queues = Quotas::new(f, &flavors).queues();
    let has_topology = !topologies.is_empty();
    let ctx = Ctx {
        header: f.header(),
        cohort: name.clone(),
        topologies,
        flavors,
        queues,
        teams: f.teams.iter().map(|t| t.name.as_str()).collect(),
        priorities: &f.priorities,
    };
    let mut files = Files::new();
    // One conversion to template values serves every file.
    let values = Value::from_serialize(&ctx);
    for name in [
        "resourceflavors.yaml",
        "clusterqueues.yaml",
        "localqueues.yaml",
        "workloadpriorityclasses.yaml",
    ] {
        files.insert(name.into(), run(env, &format!("kueue/{name}.j2"), &values)?);
    }
    if has_topology {
        files.insert(
            "topology.yaml".into(),
            run(env, "kueue/topology.yaml.j2", &values)?,
        );
    }
    for c in f.classes.iter().filter(|c| c.kind == "training") {
        let jc = job_ctx(f, &ctx, c);
        files.insert(
            format!("examples/{}.yaml", c.name),
            run(env, "kueue/job.yaml.j2", &jc)?,
        );
    }
    Ok(files)
}

/// GP913 when the KDL names a Kueue older than 0.15 (the first to serve v1beta2).
fn version_warning(f: &Facts) -> Option<Diagnostic> {
    let v = f.c.kueue_version.as_ref()?;
    (v.as_slice() < [0, 15].as_slice()).then(|| {
        Diagnostic::warning(
            GP913,
            format!(
                "the cluster names Kueue {}, but gpuplan renders kueue.x-k8s.io/v1beta2, served from Kueue 0.15",
                v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
            ),
        )
        .with_help("upgrade Kueue to 0.15 or later before applying kueue/, or leave it out")
    })
}

/// One flavor per pool and GPU model (named after the pool alone when the pool has one
/// model), sorted by name.
fn flavors_of(f: &Facts) -> Vec<Flavor> {
    let mut out: Vec<Flavor> = Vec::new();
    for p in &f.pools {
        for m in &p.models {
            let name = if p.models.len() == 1 {
                p.name.clone()
            } else {
                format!("{}-{m}", p.name)
            };
            let nodes: Vec<&NodeFacts> = f
                .nodes
                .iter()
                .filter(|n| n.pool == p.name && n.model.as_ref() == Some(m))
                .collect();
            out.push(Flavor {
                name,
                pool: p.name.clone(),
                model: Some(m.clone()),
                mode: p.mode,
                labels: {
                    let mut l = vec![
                        (super::facts::MODEL_LABEL.to_string(), m.clone()),
                        (super::facts::POOL_LABEL.to_string(), p.name.clone()),
                    ];
                    if !f.serves.is_empty() {
                        l.push((
                            super::facts::SCHEDULER_LABEL.to_string(),
                            crate::model::Authority::Kueue.as_str().to_string(),
                        ));
                    }
                    l
                },
                taints: common_taints(&nodes),
                // Provisionally the tiers every node carries (comma-joined); named
                // by `topologies_of`.
                topology: Some(
                    f.tiers
                        .iter()
                        .filter(|t| nodes.iter().all(|n| n.domains.contains_key(&t.name)))
                        .map(|t| t.name.clone())
                        .collect::<Vec<_>>()
                        .join(","),
                )
                .filter(|s| !s.is_empty()),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// One Topology per family of flavors whose nodes carry the same fabric labels (a GB200
/// rack's nodes carry `gpuplan.io/nvlink-domain`, an H100 node does not), so that every
/// flavor's `topologyName` names levels all its nodes carry: Kueue cannot place a
/// topology-aware job on a flavor without a topology, nor on nodes missing a level. With
/// one family the Topology is named after the cluster; with several, after the cluster
/// and the family's tiers (`pod-nvlink-leaf-spine`, `pod-leaf-spine`).
fn topologies_of(
    f: &Facts,
    mut flavors: Vec<Flavor>,
    cluster: &str,
) -> (Vec<Flavor>, Vec<TopologyCtx>) {
    let families: BTreeSet<String> = flavors
        .iter()
        .filter_map(|fl| fl.topology.clone())
        .collect();
    let one = families.len() == 1;
    let mut topologies = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for fam in &families {
        let tiers: Vec<String> = fam.split(',').map(str::to_string).collect();
        let name = if one {
            cluster.to_string()
        } else {
            format!("{cluster}-{}", tiers.join("-"))
        };
        let mut levels: Vec<String> = f
            .tiers
            .iter()
            .rev()
            .filter(|t| tiers.contains(&t.name))
            .map(|t| t.label.clone())
            .collect();
        levels.push("kubernetes.io/hostname".into());
        names.insert(fam.clone(), name.clone());
        topologies.push(TopologyCtx {
            name,
            tiers,
            levels,
        });
    }
    topologies.sort_by(|a, b| a.name.cmp(&b.name));
    for fl in &mut flavors {
        fl.topology = fl.topology.as_ref().and_then(|t| names.get(t).cloned());
    }
    (flavors, topologies)
}

/// The taints every node of a flavor has (at most 8, as Kueue allows).
fn common_taints(nodes: &[&NodeFacts]) -> Vec<Taint> {
    let mut taints: Vec<Taint> = nodes.first().map(|n| n.taints.clone()).unwrap_or_default();
    taints.retain(|t| nodes.iter().all(|n| n.taints.contains(t)));
    taints.truncate(8);
    taints
}

/// What the queues' resource groups are computed from: the flavors by mode, the MIG
/// resources of the cluster, and what the plan gives each team on each flavor.
struct Quotas<'a> {
    f: &'a Facts<'a>,
    whole: Vec<&'a Flavor>,
    shared: Vec<&'a Flavor>,
    mig: Vec<&'a Flavor>,
    mig_resources: Vec<String>,
    /// (team, pool, model) -> resource -> instances / replicas planned there.
    planned: BTreeMap<FlavorOf<'a>, BTreeMap<String, u32>>,
}

impl<'a> Quotas<'a> {
    fn new(f: &'a Facts<'a>, flavors: &'a [Flavor]) -> Self {
        let of_mode = |modes: &[PoolMode]| -> Vec<&'a Flavor> {
            flavors
                .iter()
                .filter(|fl| modes.contains(&fl.mode))
                .collect()
        };
        Quotas {
            f,
            whole: of_mode(&[PoolMode::WholeGpu]),
            shared: of_mode(&[PoolMode::TimeSlice, PoolMode::Mps]),
            mig: of_mode(&[PoolMode::Mig]),
            mig_resources: f
                .nodes
                .iter()
                .flat_map(|n| n.mig.values().flatten().map(|p| mig_resource(p)))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            planned: planned_on(f),
        }
    }

    /// One ClusterQueue per team: a resource group for whole GPUs, shared GPUs and MIG
    /// instances, each where the cluster has flavors for it.
    fn queues(&self) -> Vec<ClusterQueue> {
        self.f
            .teams
            .iter()
            .map(|t| {
                let mut groups = Vec::new();
                if !self.whole.is_empty() {
                    groups.push(self.whole_group(t));
                }
                if !self.shared.is_empty() {
                    groups.push(self.shared_group(t));
                }
                if !self.mig.is_empty() && !self.mig_resources.is_empty() {
                    groups.push(self.mig_group(t));
                }
                ClusterQueue {
                    name: t.name.clone(),
                    groups,
                }
            })
            .collect()
    }

    /// Whole GPUs: the guarantee split over the flavors, borrowing up to the ceiling.
    fn whole_group(&self, t: &TeamFacts) -> Group {
        let split = whole_gpu_split(self.f, t, &self.whole);
        Group {
            covered: vec![GPU_RESOURCE.to_string()],
            flavors: self
                .whole
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
        }
    }

    /// Shared GPUs: the replicas the plan gives the team on each flavor.
    fn shared_group(&self, t: &TeamFacts) -> Group {
        Group {
            covered: vec![SHARED_RESOURCE.to_string()],
            flavors: self
                .shared
                .iter()
                .map(|fl| FlavorQuota {
                    name: fl.name.clone(),
                    resources: vec![Res {
                        name: SHARED_RESOURCE.to_string(),
                        nominal: self.planned(t, fl, SHARED_RESOURCE),
                        borrowing: None,
                    }],
                })
                .collect(),
        }
    }

    /// MIG instances: every MIG resource of the cluster on each MIG flavor, the
    /// instances the plan gives the team there.
    fn mig_group(&self, t: &TeamFacts) -> Group {
        Group {
            covered: self.mig_resources.clone(),
            flavors: self
                .mig
                .iter()
                .map(|fl| FlavorQuota {
                    name: fl.name.clone(),
                    resources: self
                        .mig_resources
                        .iter()
                        .map(|r| Res {
                            name: r.clone(),
                            nominal: self.planned(t, fl, r),
                            borrowing: None,
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Instances / replicas of `resource` the plan gives team `t` on flavor `fl`.
    fn planned(&self, t: &TeamFacts, fl: &Flavor, resource: &str) -> u32 {
        let model = fl.model.as_deref().unwrap_or("");
        self.planned
            .get(&(t.name.as_str(), fl.pool.as_str(), model))
            .and_then(|r| r.get(resource))
            .copied()
            .unwrap_or(0)
    }
}

/// Whole-GPU nominal quota of a team per flavor (see the module docs).
fn whole_gpu_split(f: &Facts, t: &TeamFacts, whole: &[&Flavor]) -> BTreeMap<String, u32> {
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

/// Instances / replicas of each team's classes on the nodes of each flavor, per
/// resource, in one pass over the plan: `(team, pool, model) -> resource -> count` (a
/// flavor is one pool and model, and so are its nodes).
fn planned_on<'a>(f: &'a Facts) -> BTreeMap<FlavorOf<'a>, BTreeMap<String, u32>> {
    let flavor_of: BTreeMap<&str, (&str, &str)> = f
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), (n.pool.as_str(), n.model.as_deref()?))))
        .collect();
    let mut out: BTreeMap<FlavorOf, BTreeMap<String, u32>> = BTreeMap::new();
    let mut add = |team: &'a str, node: &str, resource: String, n: u32| {
        if let Some((pool, model)) = flavor_of.get(node) {
            *out.entry((team, pool, model))
                .or_default()
                .entry(resource)
                .or_insert(0) += n;
        }
    };
    for w in &f.plan.workloads {
        for i in &w.mig_instances {
            add(&w.team, &i.node, mig_resource(&i.profile), 1);
        }
        for s in &w.shares {
            add(&w.team, &s.node, SHARED_RESOURCE.to_string(), s.replicas);
        }
    }
    out
}

/// The example Job of a training class: its topology annotation (required, else
/// preferred tier) at a level of its flavor's Topology (the innermost at or above the
/// tier; none when the flavor has no Topology), the node labels of its flavor and its
/// tolerations.
fn job_ctx<'a>(f: &Facts, ctx: &'a Ctx, c: &'a ClassFacts) -> JobCtx<'a> {
    let flavor = ctx
        .flavors
        .iter()
        .find(|fl| Some(&fl.pool) == c.pool.as_ref() && fl.model == c.model);
    let family: Option<&TopologyCtx> = flavor
        .and_then(|fl| fl.topology.as_ref())
        .and_then(|name| ctx.topologies.iter().find(|t| &t.name == name));
    // The innermost level of the family at or above the tier, the hostname counting as
    // the `node` tier (just above `nvlink`: a node outside any multi-node NVLink domain
    // is its own NVLink domain, as the planner has it).
    let label_of = |tier: &str| -> Option<String> {
        use crate::model::Tier;
        let fam = family?;
        let want = Tier::parse(tier)?;
        let mut levels: Vec<(Tier, String)> = f
            .tiers
            .iter()
            .filter(|t| fam.tiers.contains(&t.name))
            .filter_map(|t| Some((Tier::parse(&t.name)?, t.label.clone())))
            .collect();
        levels.push((Tier::Node, "kubernetes.io/hostname".to_string()));
        levels
            .into_iter()
            .filter(|(t, _)| *t >= want)
            .min_by_key(|(t, _)| *t)
            .map(|(_, l)| l)
    };
    let topology = if let Some(r) = c.required.as_deref().and_then(label_of) {
        Some(("kueue.x-k8s.io/podset-required-topology", r))
    } else {
        c.preferred
            .as_deref()
            .and_then(label_of)
            .map(|p| ("kueue.x-k8s.io/podset-preferred-topology", p))
    };
    let flavor_labels = flavor.map(|fl| fl.labels.clone()).unwrap_or_default();
    JobCtx {
        header: &ctx.header,
        c,
        topology,
        flavor_labels,
        tolerations: tolerations(&c.tolerations),
    }
}
