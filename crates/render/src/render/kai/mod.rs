//! NVIDIA KAI Scheduler (NVIDIA/KAI-Scheduler, docs/queues, docs/gpu-sharing,
//! docs/topology, docs/developer/pod-grouper.md; CRDs in
//! `deployments/kai-scheduler/crds/`): the fifth scheduling authority.
//!
//! - `queues.yaml`: a `scheduling.run.ai/v2` Queue per team, the team tree through
//!   `parentQueue` (department -> project; KAI schedules only leaf queues, GP058).
//!   `gpu.quota` = the guarantee, `gpu.limit` = the ceiling, `overQuotaWeight` = the
//!   declared weight, else the guarantee. KAI counts a GPU fraction against the same
//!   `gpu` resource as whole GPUs, so both add what the plan gives the team's (and its
//!   subtree's) fractional replicas. CPU and memory are not gpuplan's quota: `quota:
//!   -1` (never over quota on them: a job over quota on any resource may be reclaimed)
//!   and `limit: -1`.
//! - `topology.yaml`: a `kai.scheduler/v1alpha1` Topology per family of nodes carrying
//!   the same fabric labels (coarsest first, `kubernetes.io/hostname` last).
//! - `workloads/<object>.yaml`: per placement group of a training class, one
//!   `scheduling.run.ai/v2alpha2` PodGroup per gang (`minMember` = its pods, the
//!   team's queue, `topologyConstraint` at the level of the plan's tier) and its pods
//!   (`pod-group-name`: the pod-grouper leaves pods it does not own alone; a batch Job's
//!   pods would get one PodGroup each, `minMember` 1); a Deployment otherwise (the
//!   pod-grouper makes a PodGroup per pod). Shared and fractional replicas ask no GPU
//!   resource but `gpu-fraction` (the plan's share) or `gpu-memory` (MiB, a class that
//!   declares its GPU memory): KAI's binder holds the GPU, which the device plugin
//!   advertises whole, with a reservation pod.

mod workloads;

use super::facts::{Ask, ClassFacts, Facts, NodeFacts, TeamFacts};
use super::{Files, run};
use crate::diag::Diagnostic;
use minijinja::Environment;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The queue label KAI's pod-grouper reads (`DefaultQueueLabel`).
pub(super) const QUEUE_LABEL: &str = "kai.scheduler/queue";
/// KAI's scheduler name (`DefaultSchedulerName`).
pub(super) const SCHEDULER: &str = "kai-scheduler";

#[derive(Serialize)]
struct Queue {
    name: String,
    parent: Option<String>,
    /// GPUs as a decimal (`12`, `12.5`).
    quota: String,
    limit: String,
    weight: u32,
}

/// A KAI Topology: the fabric labels one family of nodes carries.
#[derive(Serialize, Clone)]
pub(super) struct TopologyCtx {
    pub name: String,
    /// Tier names, innermost first.
    pub tiers: Vec<String>,
    /// Node labels, coarsest first, hostname last.
    pub levels: Vec<String>,
}

#[derive(Serialize)]
struct Ctx {
    header: String,
    queues: Vec<Queue>,
    topologies: Vec<TopologyCtx>,
}

/// Thousandths of a GPU as KAI's decimal (`2500` -> `2.5`).
pub(super) fn gpus_text(milli: u64) -> String {
    let (whole, rest) = (milli / 1000, milli % 1000);
    if rest == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{rest:03}")
            .trim_end_matches('0')
            .to_string()
    }
}

/// GP951: the declared KAI release predates what gpuplan renders.
pub(crate) const GP951: &str = "GP951";
/// The first KAI release with the `kai.scheduler/v1alpha1` Topology CRD (before it, KAI
/// read Kueue's Topology) and PodGroup `preemptibility` (0.10).
const KAI_TOPOLOGY: [u32; 2] = [0, 12];

/// GP951 when the KDL names a KAI older than 0.12.
fn version_warning(f: &Facts) -> Option<Diagnostic> {
    let v = f.c.kai_version.as_ref()?;
    (v.as_slice() < KAI_TOPOLOGY.as_slice()).then(|| {
        Diagnostic::warning(
            GP951,
            format!(
                "the cluster names KAI Scheduler {}, but gpuplan renders the kai.scheduler/v1alpha1 Topology and PodGroup preemptibility, served from KAI 0.12",
                v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
            ),
        )
        .with_help("upgrade KAI Scheduler to 0.12 or later before applying kai/")
    })
}

pub(super) fn render(
    f: &Facts,
    env: &Environment,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Files, Diagnostic> {
    warnings.extend(version_warning(f));
    let use_of = usage_by_team(f);
    let topologies = topologies_of(f);
    let ctx = Ctx {
        header: f.header(),
        queues: queues_of(f, &use_of),
        topologies,
    };
    let mut files = Files::new();
    files.insert("queues.yaml".into(), run(env, "kai/queues.yaml.j2", &ctx)?);
    if !ctx.topologies.is_empty() {
        files.insert(
            "topology.yaml".into(),
            run(env, "kai/topology.yaml.j2", &ctx)?,
        );
    }
    let w = workloads::Workloads {
        f,
        env,
        topologies: &ctx.topologies,
        use_of: &use_of,
    };
    for c in &f.classes {
        for g in &c.groups {
            files.insert(format!("workloads/{}.yaml", g.name), w.object(c, g)?);
        }
    }
    Ok(files)
}

/// What the plan gives a team's KAI classes: whole GPUs and thousandths of shared ones.
#[derive(Clone, Copy, Default)]
pub(super) struct Use {
    pub whole: u64,
    pub fraction_milli: u64,
}

/// Per team, what its own classes are planned to use.
fn usage_by_team(f: &Facts) -> BTreeMap<String, Use> {
    let mut out: BTreeMap<String, Use> = BTreeMap::new();
    for c in &f.classes {
        let u = out.entry(c.team.clone()).or_default();
        for g in &c.groups {
            match &g.ask {
                Ask::Whole { gpus } => u.whole += *gpus as u64 * g.pods as u64 * g.count as u64,
                Ask::Shared { thousandths, .. } => {
                    u.fraction_milli += *thousandths as u64 * g.count as u64
                }
                Ask::Mig { .. } | Ask::Cpu => {}
            }
        }
    }
    out
}

/// The teams in `t`'s subtree (itself included).
fn subtree<'f>(f: &'f Facts, t: &TeamFacts) -> Vec<&'f TeamFacts> {
    f.teams
        .iter()
        .filter(|u| f.c.team_chain(&u.name).iter().any(|x| x.name == t.name))
        .collect()
}

fn queues_of(f: &Facts, use_of: &BTreeMap<String, Use>) -> Vec<Queue> {
    let names: BTreeSet<&str> = f.teams.iter().map(|t| t.name.as_str()).collect();
    f.teams
        .iter()
        .map(|t| {
            let fraction: u64 = subtree(f, t)
                .iter()
                .filter_map(|u| use_of.get(&u.name))
                .map(|u| u.fraction_milli)
                .sum();
            Queue {
                name: t.name.clone(),
                parent: t.parent.clone().filter(|p| names.contains(p.as_str())),
                quota: gpus_text(t.guarantee as u64 * 1000 + fraction),
                limit: gpus_text(t.ceiling as u64 * 1000 + fraction),
                weight: t.weight.unwrap_or(t.guarantee).max(1),
            }
        })
        .collect()
}

/// The tiers (innermost first) every one of `nodes` carries.
pub(super) fn common_tiers(f: &Facts, nodes: &[&NodeFacts]) -> Vec<String> {
    f.tiers
        .iter()
        .filter(|t| nodes.iter().all(|n| n.domains.contains_key(&t.name)))
        .map(|t| t.name.clone())
        .collect()
}

/// One Topology per family: the tiers of each node, and those every node of a group
/// shares (a group's gangs name the family of its nodes). Named after the cluster when
/// there is one family, else `<cluster>-<tiers>`.
fn topologies_of(f: &Facts) -> Vec<TopologyCtx> {
    let mut families: BTreeSet<Vec<String>> =
        f.nodes.iter().map(|n| common_tiers(f, &[n])).collect();
    for c in &f.classes {
        for g in &c.groups {
            let nodes: Vec<&NodeFacts> = f.nodes_named(&g.nodes).collect();
            families.insert(common_tiers(f, &nodes));
        }
    }
    families.remove(&Vec::new());
    let cluster = if super::facts::is_dns_label(&f.c.name) {
        f.c.name.clone()
    } else {
        "gpuplan".to_string()
    };
    let one = families.len() == 1;
    let mut out: Vec<TopologyCtx> = families
        .into_iter()
        .map(|tiers| {
            let mut levels: Vec<String> = f
                .tiers
                .iter()
                .rev()
                .filter(|t| tiers.contains(&t.name))
                .map(|t| t.label.clone())
                .collect();
            levels.push("kubernetes.io/hostname".into());
            TopologyCtx {
                name: if one {
                    cluster.clone()
                } else {
                    format!("{cluster}-{}", tiers.join("-"))
                },
                tiers,
                levels,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The topology constraint of a class's gangs on `nodes`: its Topology, the required
/// level (the innermost level of the family at or above the required tier, the
/// hostname counting as `node`) and the preferred one. None for one-pod gangs.
pub(super) fn constraint(
    f: &Facts,
    topologies: &[TopologyCtx],
    c: &ClassFacts,
    nodes: &[&NodeFacts],
) -> Option<(String, Option<String>, Option<String>)> {
    let tiers = common_tiers(f, nodes);
    let topo = topologies.iter().find(|t| t.tiers == tiers)?;
    let level = |tier: &str| f.level_label(&topo.tiers, tier);
    let required = c.required.as_deref().and_then(level);
    let preferred = c
        .preferred
        .as_deref()
        .and_then(level)
        .filter(|p| Some(p) != required.as_ref());
    (required.is_some() || preferred.is_some()).then(|| (topo.name.clone(), required, preferred))
}
