//! Volcano: a `Queue` per team (hierarchical through `parent`), `HyperNode`s mirroring
//! the fabric tiers, and a `Job` per training class whose gang is `minAvailable` and
//! whose topology requirement is `networkTopology`.

use super::facts::{ClassFacts, Facts, GPU_RESOURCE, NodeFacts, SHARED_RESOURCE, TeamFacts};
use super::k8s::{TolerationCtx, tolerations};
use super::{Files, run};
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
    priority: u32,
    /// resource -> amount
    capability: Vec<(String, u32)>,
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
}

#[derive(Serialize)]
struct JobCtx<'a> {
    header: &'a str,
    c: &'a ClassFacts,
    /// `hard` / `soft` / none
    mode: Option<&'static str>,
    highest_tier: Option<u32>,
    pool_label: &'static str,
    model_label: &'static str,
    scheduler_label: &'static str,
    tolerations: Vec<TolerationCtx>,
}

/// HyperNode name for a fabric domain (tier names keep names unique across tiers).
fn hn_name(tier: &str, domain: &str) -> String {
    format!("{tier}-{domain}")
}

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let ctx = Ctx {
        header: f.header(),
        queues: queues_of(f),
        hypernodes: hypernodes_of(f),
    };
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
    for c in f.classes.iter().filter(|c| c.kind == "training") {
        files.insert(
            format!("jobs/{}.yaml", c.name),
            run(env, "volcano/job.yaml.j2", &job_ctx(f, &ctx.header, c))?,
        );
    }
    Ok(files)
}

/// One queue per team: capability = its ceiling, deserved and guarantee = its
/// guarantee, plus the MIG and shared resources of the team and its descendants (a
/// parent queue's deserved must cover its children's).
fn queues_of(f: &Facts) -> Vec<Queue> {
    f.teams
        .iter()
        .map(|t| {
            let extra = descendant_resources(f, t);
            let mut capability = vec![(GPU_RESOURCE.to_string(), t.ceiling)];
            capability.extend(extra.iter().cloned());
            capability.sort();
            let mut deserved = vec![(GPU_RESOURCE.to_string(), t.guarantee)];
            deserved.extend(extra);
            deserved.sort();
            Queue {
                name: t.name.clone(),
                parent: t.parent.clone(),
                weight: t.guarantee.clamp(1, 65535),
                priority: t.rank,
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

/// The Job of a training class. Network topology: `hard` at the required tier (or the
/// next one its nodes have) for a gang of several pods, `soft` at the preferred tier
/// when only that is given. The tier is one of the HyperNodes over the class's candidate
/// nodes (its pool and GPU model): an H100 node in no NVLink HyperNode never serves a
/// gang limited to tier 1, whatever the GB200 racks beside it have.
fn job_ctx<'a>(f: &Facts, header: &'a str, c: &'a ClassFacts) -> JobCtx<'a> {
    let candidates: Vec<&NodeFacts> = f
        .nodes
        .iter()
        .filter(|n| c.pool.as_ref().is_none_or(|p| &n.pool == p))
        .filter(|n| c.model.is_none() || n.model == c.model)
        .collect();
    let tier_of = |want: &str| -> Option<u32> {
        let want = Tier::parse(want)?;
        f.tiers
            .iter()
            .filter(|t| Tier::parse(&t.name).is_some_and(|x| x >= want))
            .find(|t| candidates.iter().any(|n| n.domains.contains_key(&t.name)))
            .map(|t| t.number)
    };
    let (mode, tier) = match (&c.required, &c.preferred) {
        (Some(r), _) if r == "node" || c.pods <= 1 => (None, None),
        (Some(r), _) => match tier_of(r) {
            Some(t) => (Some("hard"), Some(t)),
            None => (None, None),
        },
        (None, Some(p)) => match tier_of(p) {
            Some(t) => (Some("soft"), Some(t)),
            None => (None, None),
        },
        _ => (None, None),
    };
    JobCtx {
        header,
        c,
        mode,
        highest_tier: tier,
        pool_label: super::facts::POOL_LABEL,
        model_label: super::facts::MODEL_LABEL,
        scheduler_label: super::facts::SCHEDULER_LABEL,
        tolerations: tolerations(&c.tolerations),
    }
}
