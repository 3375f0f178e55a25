//! Why a workload class was not (fully) placed, in the user's terms: a failure is a
//! value ([`Unplaced`]) first and prose second, and the prose names the KDL names.
//!
//! Reasons are checked in this order, the first that holds wins:
//! 1. `model`: no usable GPU of an acceptable model can hold a replica (for MIG: no
//!    allowed profile of an acceptable model is large enough);
//! 2. `topology`: a gang is larger than any domain of its required tier even on an
//!    empty cluster;
//! 3. `quota`: one more replica would take the team (or a parent, or a per-model/pool
//!    quota) above its ceiling;
//! 4. `capacity`: not enough free capacity of the right kind; the message names the
//!    classes that hold the GPUs that would fit.

use super::Unplaced;
use super::build::{Record, replica_equivalent};
use crate::model::capacity::capacity_by_domain;
use crate::model::{Cluster, Tier, Workload};
use crate::solve::Assignment;
use crate::solve::sizing::{self, Usage};
use std::collections::{BTreeMap, BTreeSet};

/// GPUs held per class (workload index -> (node, gpu)).
type Held = BTreeMap<usize, BTreeSet<(usize, u32)>>;

/// The reasons for `requested - placed` replicas of class `wi`.
pub(crate) fn explain(
    c: &Cluster,
    a: &Assignment,
    wi: usize,
    placed: u32,
    records: &[Record],
) -> Vec<Unplaced> {
    let Some(w) = c.workloads.get(wi) else {
        return Vec::new();
    };
    let missing = w.replicas.saturating_sub(placed);
    if missing == 0 {
        return Vec::new();
    }
    let (reason, message) = model_reason(c, w)
        .map(|m| ("model", m))
        .or_else(|| topology_reason(c, w).map(|m| ("topology", m)))
        .or_else(|| quota_reason(c, w, wi, records).map(|m| ("quota", m)))
        .unwrap_or_else(|| ("capacity", capacity_reason(c, a, w, wi, missing, records)));
    vec![Unplaced {
        replicas: missing,
        reason: reason.to_string(),
        message,
    }]
}

fn models_text(w: &Workload) -> String {
    if w.models.is_empty() {
        "any GPU model".to_string()
    } else {
        w.models
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn model_reason(c: &Cluster, w: &Workload) -> Option<String> {
    let present: BTreeSet<&str> = c
        .nodes
        .iter()
        .flat_map(|n| n.usable_gpus())
        .filter_map(|g| g.model.as_deref())
        .collect();
    let runs = present
        .iter()
        .filter_map(|m| c.models.get(*m))
        .any(|m| sizing::runs_on(c, w, m));
    if runs {
        return None;
    }
    let what = match sizing::usage(w, 1) {
        Usage::Mig => format!(
            "no allowed MIG profile of {} holds a replica of `{}`",
            models_text(w),
            w.name
        ),
        _ => format!(
            "`{}` runs on {}, and no usable GPU of such a model can hold a replica",
            w.name,
            models_text(w)
        ),
    };
    Some(match w.memory {
        Some(m) => format!("{what} ({m} each)"),
        None => what,
    })
}

fn topology_reason(c: &Cluster, w: &Workload) -> Option<String> {
    let Usage::Gang { gpus, .. } = sizing::usage(w, 1) else {
        return None;
    };
    let tier = w.required_tier.unwrap_or(Tier::Cluster);
    let caps = capacity_by_domain(c, w, tier);
    let best = caps.first();
    if best.is_some_and(|b| b.1 >= gpus) {
        return None;
    }
    let largest = match best {
        Some((name, cap, _)) if tier != Tier::Cluster => {
            format!(
                "the largest {} (`{name}`) holds {cap} even when empty",
                tier.as_str()
            )
        }
        Some((_, cap, _)) => format!("the whole cluster holds {cap} even when empty"),
        None => "no node has GPUs of an acceptable model".to_string(),
    };
    Some(format!(
        "gang `{}` needs {gpus} GPUs inside one {}; {largest}",
        w.name,
        tier.as_str()
    ))
}

fn quota_reason(c: &Cluster, w: &Workload, wi: usize, records: &[Record]) -> Option<String> {
    let need = replica_equivalent(c, wi);
    let in_team = |team: &str, r: &Record| {
        c.workloads
            .get(r.workload)
            .is_some_and(|x| c.team_chain(&x.team).iter().any(|t| t.name == team))
    };
    for t in c.team_chain(&w.team) {
        let used: f64 = records
            .iter()
            .filter(|r| in_team(&t.name, r))
            .map(|r| r.amount)
            .sum();
        if used + need > t.ceiling() as f64 + 1e-9 {
            let whose = if t.name == w.team {
                format!("team `{}`", t.name)
            } else {
                format!("team `{}`'s parent `{}`", w.team, t.name)
            };
            return Some(format!(
                "{whose} has placed {} GPUs of its ceiling of {}; one more replica of `{}` needs {}",
                fmt_num(used),
                t.ceiling(),
                w.name,
                fmt_num(need)
            ));
        }
    }
    quota_full_everywhere(c, w, need, records)
}

/// Quota reason from per-model/pool quotas: every usable GPU the class could use is
/// covered by a quota (of its team or a parent) with no room for one more replica.
fn quota_full_everywhere(
    c: &Cluster,
    w: &Workload,
    need: f64,
    records: &[Record],
) -> Option<String> {
    let chain = c.team_chain(&w.team);
    // GPU-equivalents per (team, quota index), for the teams of the chain.
    let mut usage: BTreeMap<(String, usize), f64> = BTreeMap::new();
    for r in records {
        let Some(x) = c.workloads.get(r.workload) else {
            continue;
        };
        let pool = c.pool_of(r.node).map(|p| p.name.as_str());
        for t in c.team_chain(&x.team) {
            if !chain.iter().any(|o| o.name == t.name) {
                continue;
            }
            for (qi, q) in t.quotas.iter().enumerate() {
                if q.covers(&r.model, pool) {
                    *usage.entry((t.name.clone(), qi)).or_default() += r.amount;
                }
            }
        }
    }
    let mut first: Option<String> = None;
    for (ni, n) in c.nodes.iter().enumerate() {
        let pool = c.pool_of(ni).map(|p| p.name.as_str());
        for g in n.usable_gpus().filter(|g| gpu_runs(c, w, ni, g.index)) {
            let model = g.model.as_deref().unwrap_or("");
            let full = chain.iter().find_map(|t| {
                t.quotas.iter().enumerate().find_map(|(qi, q)| {
                    let u = usage.get(&(t.name.clone(), qi)).copied().unwrap_or(0.0);
                    (q.covers(model, pool) && u + need > q.ceiling() as f64 + 1e-9).then(|| {
                        let what = q.model.as_deref().or(q.pool.as_deref()).unwrap_or("-");
                        format!(
                            "team `{}` has placed {} GPUs of `{what}` of its quota ceiling of {}; one more replica of `{}` needs {}",
                            t.name,
                            fmt_num(u),
                            q.ceiling(),
                            w.name,
                            fmt_num(need)
                        )
                    })
                })
            });
            match full {
                Some(m) => {
                    first.get_or_insert(m);
                }
                None => return None,
            }
        }
    }
    first
}

/// `12`, `0.5`, `2.25`: GPU-equivalents without trailing zeros.
pub(crate) fn fmt_num(x: f64) -> String {
    let s = format!("{:.2}", super::build::round4(x));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "`a` (priority p, higher) took 32, `b` (priority q, equal) took 8", from per-class
/// GPU counts.
fn holders_text(
    c: &Cluster,
    w: &Workload,
    held: &BTreeMap<usize, BTreeSet<(usize, u32)>>,
) -> String {
    let mine = c.priority(&w.priority).map(|p| p.value).unwrap_or(0);
    let mut list: Vec<(i64, &str, &str, usize)> = held
        .iter()
        .filter_map(|(x, gpus)| {
            let o = c.workloads.get(*x)?;
            let v = c.priority(&o.priority).map(|p| p.value).unwrap_or(0);
            Some((v, o.name.as_str(), o.priority.as_str(), gpus.len()))
        })
        .collect();
    list.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    list.iter()
        .map(|(v, name, prio, n)| {
            let rel = match v.cmp(&mine) {
                std::cmp::Ordering::Greater => "higher",
                std::cmp::Ordering::Equal => "equal",
                std::cmp::Ordering::Less => "lower",
            };
            format!("`{name}` (priority {prio}, {rel}) took {n}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn capacity_reason(
    c: &Cluster,
    a: &Assignment,
    w: &Workload,
    wi: usize,
    missing: u32,
    records: &[Record],
) -> String {
    let kind = match sizing::usage(w, 1) {
        Usage::Gang { gpus, .. } => return gang_capacity(c, a, w, wi, gpus, missing, records),
        Usage::Mig => "a MIG instance",
        Usage::Shared { mps: true, .. } => "a share of an MPS GPU",
        Usage::Shared { mps: false, .. } => "a share of a time-sliced GPU",
    };
    let mut held = Held::new();
    for r in records
        .iter()
        .filter(|r| r.workload != wi && gpu_runs(c, w, r.node, r.gpu))
    {
        held.entry(r.workload).or_default().insert((r.node, r.gpu));
    }
    let after = holders_text(c, w, &held);
    let after = if after.is_empty() {
        String::new()
    } else {
        format!("; GPUs of {}: {after}", models_text(w))
    };
    format!(
        "{missing} replica(s) of `{}` found no free room for {kind}{after}",
        w.name
    )
}

/// "gang `w` needs N GPUs inside one leaf; the largest leaf (`x`) has F free after ...".
fn gang_capacity(
    c: &Cluster,
    a: &Assignment,
    w: &Workload,
    wi: usize,
    gpus: u32,
    missing: u32,
    records: &[Record],
) -> String {
    let tier = w.required_tier.unwrap_or(Tier::Cluster);
    let pools = super::build::pools_of(c, a);
    let free = super::build::free_whole_gpus(c, a, &pools);
    let mut best: Option<(String, usize, Held)> = None;
    for d in c.topology.domains_ref(tier) {
        let n = d
            .gpus
            .iter()
            .filter(|&&(ni, gi)| free.contains(&(ni, gi)) && gpu_runs(c, w, ni, gi))
            .count();
        if best.as_ref().is_some_and(|b| n <= b.1) {
            continue;
        }
        let inside: BTreeSet<(usize, u32)> = d.gpus.iter().copied().collect();
        let mut held = Held::new();
        for r in records.iter().filter(|r| {
            r.workload != wi && inside.contains(&(r.node, r.gpu)) && gpu_runs(c, w, r.node, r.gpu)
        }) {
            held.entry(r.workload).or_default().insert((r.node, r.gpu));
        }
        best = Some((d.name.clone(), n, held));
    }
    let Some((name, n, held)) = best else {
        return format!("gang `{}` found no domain to land in", w.name);
    };
    let after = holders_text(c, w, &held);
    let after = if after.is_empty() {
        String::new()
    } else {
        format!(" after {after}")
    };
    let what = if tier == Tier::Cluster {
        "the cluster".to_string()
    } else {
        format!("the largest {} (`{name}`)", tier.as_str())
    };
    let reps = if missing == 1 {
        String::new()
    } else {
        format!("{missing} gangs: ")
    };
    format!(
        "{reps}gang `{}` needs {gpus} GPUs inside one {}; {what} has {n} free{after}",
        w.name,
        tier.as_str()
    )
}

fn gpu_runs(c: &Cluster, w: &Workload, ni: usize, gi: u32) -> bool {
    c.nodes
        .get(ni)
        .and_then(|n| n.gpus.iter().find(|g| g.index == gi))
        .and_then(|g| c.model_of(g))
        .is_some_and(|m| sizing::runs_on(c, w, m))
}
