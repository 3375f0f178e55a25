//! Kueue (`kueue.x-k8s.io/v1beta2`): a `ResourceFlavor` per pool and GPU model, a
//! `Topology` per family of nodes carrying the same fabric labels (hostname last, see
//! `topologies_of`), a `ClusterQueue` per team in one cohort (and the cohort's own
//! quota), a `LocalQueue` per team namespace, a `WorkloadPriorityClass` per priority,
//! and one object per placement group of every class Kueue runs: a suspended Job per
//! training group with its topology annotation, a Deployment otherwise. The queues'
//! quotas are in [`quotas`].

mod cohorts;
mod dra;
mod quotas;

use super::facts::{ClassFacts, Facts, GroupFacts, NodeFacts, PriorityFacts, is_dns_label};
use super::{Files, GP913, run, workload};
use crate::diag::Diagnostic;
use crate::model::{PoolMode, Taint};
use cohorts::CohortCtx;
use minijinja::{Environment, Value};
use quotas::{ClusterQueue, Quotas};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Serialize, Clone)]
pub(super) struct Flavor {
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

#[derive(Serialize)]
struct Ctx<'a> {
    header: String,
    cohort: String,
    topologies: Vec<TopologyCtx>,
    flavors: Vec<Flavor>,
    queues: Vec<ClusterQueue>,
    /// The Cohort objects: the root cohort's own whole-GPU quota per flavor (what no
    /// team's guarantee covers), then, for a team tree, one per parent team.
    cohorts: Vec<CohortCtx>,
    /// The teams form a tree (hierarchical cohorts).
    nested: bool,
    teams: Vec<&'a str>,
    priorities: &'a [PriorityFacts],
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
    let tree = cohorts::Tree::new(f, &name);
    let quotas = Quotas::new(f, &flavors, tree.for_quotas(f));
    let queues = quotas.queues();
    let pool = quotas.cohort_pool(&tree.held(&quotas));
    // Every cohort a ClusterQueue or Cohort names is an object (the root too).
    let cohorts = tree.cohorts(&quotas, pool);
    let has_topology = !topologies.is_empty();
    let ctx = Ctx {
        header: f.header(),
        cohort: tree.root.clone(),
        topologies,
        flavors,
        queues,
        cohorts,
        nested: tree.nested(),
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
    if !ctx.cohorts.is_empty() {
        files.insert(
            "cohorts.yaml".into(),
            run(env, "kueue/cohorts.yaml.j2", &values)?,
        );
    }
    if let Some(text) = dra::configuration(f, env, warnings)? {
        files.insert("dra-configuration.yaml".into(), text);
    }
    warnings.extend(dra::uncarried(f));
    files.extend(workload::render_where(
        f,
        env,
        "k8s/workload.yaml.j2",
        dra::carried,
        |c, g| {
            let labels = [
                ("kueue.x-k8s.io/queue-name".to_string(), c.team.clone()),
                (
                    "kueue.x-k8s.io/priority-class".to_string(),
                    c.priority.clone(),
                ),
            ];
            let mut pod = workload::pod(f, c, g);
            pod.annotations.extend(topology_annotation(f, &ctx, c, g));
            pod.annotations.sort();
            workload::object(f, env, c, g, pod, &labels, c.kind == "training")
        },
    )?);
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
                .map(|n| &**n)
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

/// The Kueue topology annotation of a group's pods: the required tier (else the
/// preferred one) of a gang of several pods, at a level of its flavor's Topology (the
/// innermost at or above the tier; none when the flavor has no Topology).
fn topology_annotation(
    f: &Facts,
    ctx: &Ctx,
    c: &ClassFacts,
    g: &GroupFacts,
) -> Option<(String, String)> {
    if c.kind != "training" || g.pods < 2 {
        return None;
    }
    let flavor = ctx.flavors.iter().find(|fl| {
        g.pools.contains(&fl.pool) && fl.model.as_ref().is_some_and(|m| g.models.contains(m))
    });
    let family: Option<&TopologyCtx> = flavor
        .and_then(|fl| fl.topology.as_ref())
        .and_then(|name| ctx.topologies.iter().find(|t| &t.name == name));
    let label_of = |tier: &str| f.level_label(&family?.tiers, tier);
    if let Some(r) = c.required.as_deref().and_then(label_of) {
        Some(("kueue.x-k8s.io/podset-required-topology".to_string(), r))
    } else {
        c.preferred
            .as_deref()
            .and_then(label_of)
            .map(|p| ("kueue.x-k8s.io/podset-preferred-topology".to_string(), p))
    }
}
