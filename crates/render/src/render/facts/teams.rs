//! Team and priority facts: quotas, the priority order, and the names every target
//! must accept (a team is a namespace and a queue, a priority a PriorityClass).

use super::{PriorityFacts, TeamFacts, is_dns_label, mig_resource};
use crate::diag::Diagnostic;
use crate::model::{Cluster, Priority};
use crate::placement::Placement;
use crate::render::GP910;
use std::collections::{BTreeMap, BTreeSet};

/// The priorities, highest value first (ties by name), ranked from 1 = lowest; each
/// preempts its explicit list, or every lower priority, or none (`never`).
pub(super) fn priorities_of(c: &Cluster) -> Vec<PriorityFacts> {
    let mut ps: Vec<&Priority> = c.priorities.iter().collect();
    ps.sort_by(|a, b| b.value.cmp(&a.value).then(a.name.cmp(&b.name)));
    let n = ps.len() as u32;
    ps.iter()
        .enumerate()
        .map(|(i, p)| PriorityFacts {
            name: p.name.clone(),
            value: p.value,
            rank: n - i as u32,
            never: p.never_preempts,
            preempts: preempted_by(c, p),
            description: p.description.clone().unwrap_or_default(),
        })
        .collect()
}

/// The priorities `p` may preempt, sorted.
fn preempted_by(c: &Cluster, p: &Priority) -> Vec<String> {
    let mut v = if p.never_preempts {
        Vec::new()
    } else if !p.preempts.is_empty() {
        p.preempts.clone()
    } else {
        c.priorities
            .iter()
            .filter(|q| q.value < p.value)
            .map(|q| q.name.clone())
            .collect()
    };
    v.sort();
    v
}

/// The rank of a priority (0 when there is no such priority).
pub(super) fn rank_of(priorities: &[PriorityFacts], name: &str) -> u32 {
    priorities
        .iter()
        .find(|x| x.name == name)
        .map(|x| x.rank)
        .unwrap_or(0)
}

/// Every team with its guarantee and ceiling, and what the plan gives its classes: the
/// priorities they use, MIG instances per resource and shared-GPU replicas.
pub(super) fn teams_of(
    c: &Cluster,
    plan: &Placement,
    priorities: &[PriorityFacts],
    rank_of: &dyn Fn(&str) -> u32,
) -> Vec<TeamFacts> {
    c.teams
        .values()
        .map(|t| {
            let own: Vec<_> = plan.workloads.iter().filter(|w| w.team == t.name).collect();
            let mut mig = BTreeMap::new();
            let mut shared = 0;
            for w in &own {
                for i in &w.mig_instances {
                    *mig.entry(mig_resource(&i.profile)).or_insert(0) += 1;
                }
                shared += shared_replicas(c, w);
            }
            let used: BTreeSet<&str> = own.iter().map(|w| w.priority.as_str()).collect();
            TeamFacts {
                name: t.name.clone(),
                guarantee: t.guarantee,
                ceiling: t.ceiling(),
                parent: t.parent.clone(),
                weight: t.weight,
                rank: used.iter().map(|p| rank_of(p)).max().unwrap_or(0),
                priorities: priorities
                    .iter()
                    .filter(|p| used.contains(p.name.as_str()))
                    .map(|p| p.name.clone())
                    .collect(),
                mig,
                shared,
                dra: BTreeMap::new(),
            }
        })
        .collect()
}

/// Each team's DRA quota per DeviceClass, from the groups of its classes that run under
/// `serves` (every class when `None`): a whole-GPU class gets the team's ceiling plus
/// the shared GPUs it claims from it (a shared claim is one device, whatever the pods
/// on it), a MIG class the instances planned. Call after the teams are scoped.
pub(super) fn dra_quotas(
    teams: &mut [TeamFacts],
    classes: &[super::ClassFacts],
    serves: Option<&[crate::model::Authority]>,
) {
    for t in teams.iter_mut() {
        let mut whole: BTreeSet<String> = BTreeSet::new();
        let mut dra: BTreeMap<String, u32> = BTreeMap::new();
        let mine = classes.iter().filter(|c| {
            c.team == t.name && serves.is_none_or(|s| c.scheduler.is_some_and(|a| s.contains(&a)))
        });
        for g in mine.flat_map(|c| &c.groups) {
            let Some(d) = &g.dra else { continue };
            for (_, class) in &d.classes {
                match (&g.ask, &d.sharing) {
                    (super::Ask::Mig { .. }, _) => {
                        *dra.entry(class.clone()).or_insert(0) += g.count
                    }
                    (_, Some(_)) => *dra.entry(class.clone()).or_insert(0) += 1,
                    _ => {
                        whole.insert(class.clone());
                    }
                }
            }
        }
        for class in whole {
            *dra.entry(class).or_insert(0) += t.ceiling;
        }
        t.dra = dra;
    }
}

/// Replicas of a class that ask for a shared GPU: its time-slice and MPS replicas and
/// its fractional packed replicas.
pub(super) fn shared_replicas(c: &Cluster, w: &crate::placement::WorkloadPlacement) -> u32 {
    let shares: u32 = w.shares.iter().map(|s| s.replicas).sum();
    let fraction = c
        .workloads
        .iter()
        .find(|x| x.name == w.name)
        .is_some_and(|x| (1..1000).contains(&x.packed_gpu_milli()));
    let packed: u32 = if fraction {
        w.packed.iter().map(|p| p.replicas).sum()
    } else {
        0
    };
    shares + packed
}

/// GP910 for every team that cannot be a namespace or queue name, then for every
/// priority that cannot be a PriorityClass (name, or value out of range).
pub(super) fn name_errors(
    c: &Cluster,
    teams: &[TeamFacts],
    priorities: &[PriorityFacts],
) -> Vec<Diagnostic> {
    let teams = teams
        .iter()
        .filter(|t| !is_dns_label(&t.name))
        .map(|t| team_name_error(c, &t.name));
    let priorities = priorities
        .iter()
        .filter(|p| !is_dns_label(&p.name) || p.value > 1_000_000_000 || p.value < -2_147_483_648)
        .map(|p| priority_error(c, p));
    teams.chain(priorities).collect()
}

fn team_name_error(c: &Cluster, name: &str) -> Diagnostic {
    let mut d = Diagnostic::error(
        GP910,
        format!("team `{name}` cannot be a Kubernetes namespace or queue name"),
    )
    .with_help("use lowercase letters, digits and `-` (at most 63)");
    if let Some(t) = c.teams.get(name) {
        d = d.at(t.span, "declared here");
    }
    d
}

fn priority_error(c: &Cluster, p: &PriorityFacts) -> Diagnostic {
    let mut d = Diagnostic::error(
        GP910,
        format!(
            "priority `{}` (value {}) cannot be a Kubernetes PriorityClass",
            p.name, p.value
        ),
    )
    .with_help("names are lowercase letters, digits and `-`; values are at most 1000000000");
    if let Some(x) = c.priority(&p.name) {
        d = d.at(x.span, "declared here");
    }
    d
}

/// The teams as one target sees them (see [`super::Facts::scoped`]): each team's
/// guarantee and ceiling are its parts under `serves` (summed), its MIG instances and
/// shared replicas those of its classes that run under them; a team with no part and no
/// sub-team with one is left out (a parent stays for its children's sake).
pub(super) fn scoped(
    c: &Cluster,
    plan: &Placement,
    all: &[TeamFacts],
    serves: &[crate::model::Authority],
) -> Vec<TeamFacts> {
    let all_parts = c.all_team_parts();
    // Teams with a part here, and their ancestors (a parent stays for its children).
    let mut kept: BTreeSet<&str> = BTreeSet::new();
    for t in c.teams.values() {
        if all_parts
            .get(&t.name)
            .is_some_and(|p| p.keys().any(|a| serves.contains(a)))
        {
            kept.extend(c.team_chain(&t.name).iter().map(|x| x.name.as_str()));
        }
    }
    let keep = |name: &str| kept.contains(name);
    let authority: BTreeMap<&str, Option<crate::model::Authority>> = c
        .workloads
        .iter()
        .map(|w| (w.name.as_str(), c.authority_of(w)))
        .collect();
    let runs_here = |w: &str| {
        authority
            .get(w)
            .copied()
            .flatten()
            .is_some_and(|a| serves.contains(&a))
    };
    all.iter()
        .filter(|t| keep(&t.name))
        .map(|t| {
            let mut t = t.clone();
            let parts = c
                .teams
                .get(&t.name)
                .map(|x| c.team_parts(x))
                .unwrap_or_default();
            t.guarantee = 0;
            t.ceiling = 0;
            for (a, p) in parts.iter().filter(|(a, _)| serves.contains(a)) {
                let _ = a;
                t.guarantee += p.guarantee;
                t.ceiling += p.ceiling;
            }
            t.mig.clear();
            t.shared = 0;
            for w in plan
                .workloads
                .iter()
                .filter(|w| w.team == t.name && runs_here(&w.name))
            {
                for i in &w.mig_instances {
                    *t.mig.entry(mig_resource(&i.profile)).or_insert(0) += 1;
                }
                // KAI's shared pods ask no `nvidia.com/gpu.shared` (gpu-fraction).
                let kai = authority.get(w.name.as_str()).copied().flatten()
                    == Some(crate::model::Authority::Kai);
                if !kai {
                    t.shared += shared_replicas(c, w);
                }
            }
            t
        })
        .collect()
}
