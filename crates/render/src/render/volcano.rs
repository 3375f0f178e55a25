//! Volcano: a `Queue` per team (hierarchical through `parent`), `HyperNode`s mirroring
//! the fabric tiers, and one object per placement group of every class: a `Job` per
//! training group whose gang is `minAvailable` and whose topology requirement is
//! `networkTopology`, a Deployment scheduled by Volcano in the team's queue otherwise.

use super::facts::{
    ClassFacts, Facts, GPU_RESOURCE, GroupFacts, NodeFacts, SHARED_RESOURCE, TeamFacts,
};
use super::volcano_versions::{self, Gates};
use super::{Files, run, workload};
use crate::diag::Diagnostic;
use crate::model::Tier;
use minijinja::Environment;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Serialize)]
struct Queue {
    name: String,
    parent: Option<String>,
    weight: u32,
    /// `None` before Volcano 1.10 (no Queue `priority`).
    priority: Option<u32>,
    /// resource -> amount
    capability: Vec<(String, u32)>,
    /// Empty before Volcano 1.9 (no Queue `deserved`).
    deserved: Vec<(String, u32)>,
    guarantee: Vec<(String, u32)>,
}

#[derive(Serialize)]
struct Member {
    /// `Node` or `HyperNode`
    kind: &'static str,
    name: String,
}

#[derive(Serialize)]
struct HyperNode {
    name: String,
    tier: u32,
    tier_name: String,
    members: Vec<Member>,
}

#[derive(Serialize)]
struct Ctx {
    header: String,
    queues: Vec<Queue>,
    hypernodes: Vec<HyperNode>,
    /// HyperNode `spec.tierName` (Volcano 1.14+).
    tier_name: bool,
}

/// A Volcano Job: one gang of a training group (a template submitted once per gang).
#[derive(Serialize)]
struct JobCtx<'a> {
    header: String,
    about: String,
    name: &'a str,
    namespace: &'a str,
    labels: Vec<(String, String)>,
    gangs: u32,
    queue: &'a str,
    priority: &'a str,
    pods: u32,
    /// `hard` / `soft` / none
    mode: Option<&'static str>,
    highest_tier: Option<u32>,
    /// The gang must stay in one domain (`hard`), whether or not the release can say so.
    #[serde(skip)]
    mode_was_hard: bool,
    pod: String,
}

/// HyperNode name for a fabric domain (tier names keep names unique across tiers).
fn hn_name(tier: &str, domain: &str) -> String {
    format!("{tier}-{domain}")
}

pub(super) fn render(
    f: &Facts,
    env: &Environment,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Files, Diagnostic> {
    let gates = Gates::of(f.c.volcano_version.as_deref());
    let ctx = Ctx {
        header: f.header(),
        queues: queues_of(f, gates),
        hypernodes: if gates.hypernodes {
            hypernodes_of(f)
        } else {
            Vec::new()
        },
        tier_name: gates.tier_name,
    };
    let mut pinned: Vec<&str> = Vec::new();
    let mut files = Files::new();
    files.insert(
        "queues.yaml".into(),
        run(env, "volcano/queues.yaml.j2", &ctx)?,
    );
    if !ctx.hypernodes.is_empty() {
        files.insert(
            "hypernodes.yaml".into(),
            run(env, "volcano/hypernodes.yaml.j2", &ctx)?,
        );
    }
    for c in &f.classes {
        for g in c.groups.iter().filter(|g| g.k8s_carried) {
            let mut pod = workload::pod(f, c, g);
            let text = if c.kind == "training" {
                let mut job = job_ctx(f, env, c, g, pod)?;
                if !gates.hypernodes && job.mode.take().is_some() {
                    job.highest_tier = None;
                    if job.mode_was_hard && !pinned.contains(&c.name.as_str()) {
                        pinned.push(&c.name);
                    }
                }
                run(env, "volcano/job.yaml.j2", &job)?
            } else {
                pod.scheduler_name = Some("volcano");
                pod.annotations.push((
                    "scheduling.volcano.sh/queue-name".to_string(),
                    c.team.clone(),
                ));
                pod.annotations.sort();
                let o = workload::object(f, env, c, g, pod, &[], false)?;
                run(env, "k8s/workload.yaml.j2", &o)?
            };
            let mut doc = super::dra::documents(env, c, g)?;
            doc.push_str(&text);
            files.insert(format!("workloads/{}.yaml", g.name), doc);
        }
    }
    warnings.extend(volcano_versions::warnings(f, gates, &pinned));
    Ok(files)
}

/// One queue per team: capability = its ceiling, deserved and guarantee = its
/// guarantee, plus the MIG and shared resources of the team and its descendants (a
/// parent queue's deserved must cover its children's).
fn queues_of(f: &Facts, gates: Gates) -> Vec<Queue> {
    f.teams
        .iter()
        .map(|t| {
            let extra = descendant_resources(f, t);
            let mut capability = vec![(GPU_RESOURCE.to_string(), t.ceiling)];
            capability.extend(extra.iter().cloned());
            if super::facts::dra::volcano_counts_dra(f.c) {
                capability.extend(descendant_devices(f, t));
            }
            capability.sort();
            let mut deserved = vec![(GPU_RESOURCE.to_string(), t.guarantee)];
            deserved.extend(extra);
            deserved.sort();
            if !gates.parent {
                deserved.clear();
            }
            Queue {
                name: t.name.clone(),
                parent: t.parent.clone().filter(|_| gates.parent),
                weight: t.weight.unwrap_or(t.guarantee).clamp(1, 65535),
                priority: Some(t.rank).filter(|_| gates.priority),
                capability,
                guarantee: vec![(GPU_RESOURCE.to_string(), t.guarantee)],
                deserved,
            }
        })
        .collect()
}

/// MIG and shared-GPU resources planned for team `t` and its descendants, by resource.
fn descendant_resources(f: &Facts, t: &TeamFacts) -> Vec<(String, u32)> {
    let mut sums: BTreeMap<String, u32> = BTreeMap::new();
    for u in f
        .teams
        .iter()
        .filter(|u| f.c.team_chain(&u.name).iter().any(|x| x.name == t.name))
    {
        for (k, v) in &u.mig {
            *sums.entry(k.clone()).or_insert(0) += v;
        }
        if u.shared > 0 {
            *sums.entry(SHARED_RESOURCE.to_string()).or_insert(0) += u.shared;
        }
    }
    sums.into_iter().collect()
}

/// DRA devices per DeviceClass the classes of team `t` and its descendants may claim,
/// as the capacity plugin's `deviceclass/<class>` keys (Volcano 1.15+).
fn descendant_devices(f: &Facts, t: &TeamFacts) -> Vec<(String, u32)> {
    let mut sums: BTreeMap<String, u32> = BTreeMap::new();
    for u in f
        .teams
        .iter()
        .filter(|u| f.c.team_chain(&u.name).iter().any(|x| x.name == t.name))
    {
        for (class, v) in &u.dra {
            *sums.entry(format!("deviceclass/{class}")).or_insert(0) += v;
        }
    }
    sums.into_iter().collect()
}

/// HyperNodes, innermost tier first. A domain's members are the domains of the tier
/// below that lie inside it, plus its nodes that are in no such domain.
fn hypernodes_of(f: &Facts) -> Vec<HyperNode> {
    let mut hypernodes = Vec::new();
    let mut below: Option<&str> = None;
    for t in &f.tiers {
        let mut doms: BTreeMap<&str, Vec<&NodeFacts>> = BTreeMap::new();
        for n in &f.nodes {
            if let Some(d) = n.domains.get(&t.name) {
                doms.entry(d.as_str()).or_default().push(n);
            }
        }
        for (d, nodes) in doms {
            hypernodes.push(HyperNode {
                name: hn_name(&t.name, d),
                tier: t.number,
                tier_name: t.name.clone(),
                members: members(&nodes, below),
            });
        }
        below = Some(&t.name);
    }
    hypernodes
}

/// The members of a domain with `nodes`: the nodes in no domain of tier `below`, then
/// the HyperNodes of the `below` domains they are in (sorted, once each).
fn members(nodes: &[&NodeFacts], below: Option<&str>) -> Vec<Member> {
    let mut members = Vec::new();
    let mut children: BTreeSet<String> = BTreeSet::new();
    for n in nodes {
        match below.and_then(|b| n.domains.get(b).map(|x| (b, x))) {
            Some((b, x)) => {
                children.insert(hn_name(b, x));
            }
            None => members.push(Member {
                kind: "Node",
                name: n.name.clone(),
            }),
        }
    }
    members.extend(children.into_iter().map(|name| Member {
        kind: "HyperNode",
        name,
    }));
    members
}

/// The Job of a training group. Network topology: `hard` at the required tier (or the
/// next one its nodes have) for a gang of several pods, `soft` at the preferred tier
/// when only that is given. The tier is one of the HyperNodes over the group's nodes:
/// an H100 node in no NVLink HyperNode never serves a gang limited to tier 1, whatever
/// the GB200 racks beside it have.
fn job_ctx<'a>(
    f: &Facts,
    env: &Environment,
    c: &'a ClassFacts,
    g: &'a GroupFacts,
    pod: workload::PodCtx,
) -> Result<JobCtx<'a>, Diagnostic> {
    let nodes: Vec<&NodeFacts> = f.nodes_named(&g.nodes).collect();
    let tier_of = |want: &str| -> Option<u32> {
        let want = Tier::parse(want)?;
        f.tiers
            .iter()
            .filter(|t| Tier::parse(&t.name).is_some_and(|x| x >= want))
            .find(|t| nodes.iter().all(|n| n.domains.contains_key(&t.name)))
            .map(|t| t.number)
    };
    let (mode, tier) = match (&c.required, &c.preferred) {
        (Some(r), _) if r == "node" || g.pods <= 1 => (None, None),
        (Some(r), _) => match tier_of(r) {
            Some(t) => (Some("hard"), Some(t)),
            None => (None, None),
        },
        (None, Some(p)) if g.pods > 1 => match tier_of(p) {
            Some(t) => (Some("soft"), Some(t)),
            None => (None, None),
        },
        _ => (None, None),
    };
    let mut labels = vec![
        ("app.kubernetes.io/name".to_string(), g.name.clone()),
        (workload::CLASS_LABEL.to_string(), c.name.clone()),
    ];
    labels.sort();
    Ok(JobCtx {
        header: f.header(),
        about: workload::describe(c, g),
        name: &g.name,
        namespace: &c.team,
        labels,
        gangs: g.count,
        queue: &c.team,
        priority: &c.priority,
        pods: g.pods,
        mode,
        highest_tier: tier,
        mode_was_hard: mode == Some("hard"),
        pod: workload::pod_yaml(env, &pod, 8)?,
    })
}
