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
use super::accounting::{self, Record, replica_equivalent};
use crate::model::capacity::capacity_by_domain;
use crate::model::ledger::{Charge, Ledger, Refusal};
use crate::model::sizing::{self, Usage};
use crate::model::{Cluster, NodeIdx, Tier, Workload};
use crate::solve::Assignment;
use std::collections::{BTreeMap, BTreeSet};

/// Distinct GPUs held per class (workload index -> count).
type Held = BTreeMap<usize, usize>;

/// What every explanation needs, computed once per placement (explaining thousands of
/// classes on a 100,000-GPU cluster must not rescan the cluster per class).
pub(crate) struct Facts {
    /// Whole GPUs no class touches, per (node, model).
    free: BTreeMap<(NodeIdx, String), u32>,
    /// GPU models present on usable GPUs.
    present: BTreeSet<String>,
    /// Distinct GPUs held per (class, model).
    held: BTreeMap<(usize, String), usize>,
    /// Per tier: distinct GPUs held per (domain name, class, model).
    held_in: BTreeMap<Tier, BTreeMap<(String, usize, String), usize>>,
    /// GPU-equivalents placed, charged to the teams (the quota ledger of the planners).
    ledger: Ledger,
}

impl Facts {
    pub(crate) fn new(c: &Cluster, a: &Assignment, records: &[Record]) -> Facts {
        let pools = accounting::pools_of(c, a);
        let mut free: BTreeMap<(NodeIdx, String), u32> = BTreeMap::new();
        for (ni, gi) in accounting::free_whole_gpus(c, a, &pools) {
            if let Some(m) = c.gpu_model_name(ni, gi) {
                *free.entry((ni, m.to_string())).or_default() += 1;
            }
        }
        let present = c
            .nodes
            .iter()
            .flat_map(|n| n.usable_gpus())
            .filter_map(|g| g.model.clone())
            .collect();
        let distinct: BTreeSet<(usize, NodeIdx, u32, &str)> = records
            .iter()
            .map(|r| (r.workload, r.node, r.gpu, r.model.as_str()))
            .collect();
        let mut held: BTreeMap<(usize, String), usize> = BTreeMap::new();
        for (w, _, _, m) in &distinct {
            *held.entry((*w, m.to_string())).or_default() += 1;
        }
        let mut held_in = BTreeMap::new();
        // Each GPU's domain per tier, in a flat table by node offset and position
        // (a hash map of every GPU per tier was most of this at 100,000 GPUs).
        let mut base = Vec::with_capacity(c.nodes.len());
        let mut total = 0;
        for n in &c.nodes {
            base.push(total);
            total += n.gpus.len();
        }
        let slot = |ni: NodeIdx, gi: u32| -> Option<usize> {
            let p = c.nodes.get(ni)?.gpus.iter().position(|g| g.index == gi)?;
            Some(base[ni] + p)
        };
        let mut of = vec![usize::MAX; total];
        for tier in [
            Tier::Nvlink,
            Tier::Node,
            Tier::Leaf,
            Tier::Spine,
            Tier::Core,
            Tier::Cluster,
        ] {
            let domains = c.topology.domains_ref(tier);
            of.fill(usize::MAX);
            for (i, d) in domains.iter().enumerate() {
                for (ni, gi) in &d.gpus {
                    if let Some(s) = slot(*ni, *gi) {
                        of[s] = i;
                    }
                }
            }
            // Counted by domain index and borrowed model first: names are cloned once
            // per distinct key, not once per GPU held (domain names are unique in a tier).
            let mut by_index: BTreeMap<(usize, usize, &str), usize> = BTreeMap::new();
            for (w, ni, gi, m) in &distinct {
                if let Some(i) = slot(*ni, *gi).map(|s| of[s]).filter(|i| *i != usize::MAX) {
                    *by_index.entry((i, *w, m)).or_default() += 1;
                }
            }
            let counts: BTreeMap<(String, usize, String), usize> = by_index
                .into_iter()
                .map(|((i, w, m), k)| ((domains[i].name.clone(), w, m.to_string()), k))
                .collect();
            held_in.insert(tier, counts);
        }
        let mut amounts: BTreeMap<(usize, &str, Option<&str>), f64> = BTreeMap::new();
        for r in records {
            let pool = c.pool_of(r.node).map(|p| p.name.as_str());
            *amounts
                .entry((r.workload, r.model.as_str(), pool))
                .or_default() += r.amount;
        }
        let mut ledger = Ledger::default();
        for ((w, model, pool), amount) in &amounts {
            if let Some(x) = c.workloads.get(*w) {
                let charge = Charge {
                    model,
                    pool: *pool,
                    amount: *amount,
                };
                ledger.add(c, &x.team, &[charge]);
            }
        }
        Facts {
            ledger,
            free,
            present,
            held,
            held_in,
        }
    }
}

/// The reasons for `requested - placed` replicas of class `wi`.
pub(crate) fn explain(c: &Cluster, facts: &Facts, wi: usize, placed: u32) -> Vec<Unplaced> {
    let Some(w) = c.workloads.get(wi) else {
        return Vec::new();
    };
    let missing = w.replicas.saturating_sub(placed);
    if missing == 0 {
        return Vec::new();
    }
    use super::UnplacedReason as R;
    let (reason, message) = model_reason(c, w, facts)
        .map(|m| (R::Model, m))
        .or_else(|| topology_reason(c, w).map(|m| (R::Topology, m)))
        .or_else(|| quota_reason(c, w, wi, facts).map(|m| (R::Quota, m)))
        .unwrap_or_else(|| (R::Capacity, capacity_reason(c, facts, w, wi, missing)));
    vec![Unplaced {
        replicas: missing,
        reason,
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

fn model_reason(c: &Cluster, w: &Workload, facts: &Facts) -> Option<String> {
    let runs = facts
        .present
        .iter()
        .filter_map(|m| c.models.get(m))
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

fn quota_reason(c: &Cluster, w: &Workload, wi: usize, facts: &Facts) -> Option<String> {
    let need = replica_equivalent(c, wi);
    // The ceilings of the team and its ancestors: a charge no quota covers.
    let anywhere = Charge {
        model: "",
        pool: None,
        amount: need,
    };
    if let Some(Refusal::Ceiling { team: t, used }) = facts.ledger.refusal(c, &w.team, &[anywhere])
    {
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
    quota_full_everywhere(c, w, need, facts)
}

/// Quota reason from per-model/pool quotas: every usable GPU the class could use is
/// covered by a quota (of its team or a parent) with no room for one more replica.
fn quota_full_everywhere(c: &Cluster, w: &Workload, need: f64, facts: &Facts) -> Option<String> {
    if c.team_chain(&w.team).iter().all(|t| t.quotas.is_empty()) {
        return None;
    }
    let mut first: Option<String> = None;
    for (ni, n) in c.nodes.iter().enumerate() {
        let pool = c.pool_of(ni).map(|p| p.name.as_str());
        for g in n.usable_gpus().filter(|g| gpu_runs(c, w, ni, g.index)) {
            let charge = Charge {
                model: g.model.as_deref().unwrap_or(""),
                pool,
                amount: need,
            };
            match facts.ledger.refusal(c, &w.team, &[charge]) {
                Some(Refusal::Quota { team, quota, used }) => {
                    let what = quota
                        .model
                        .as_deref()
                        .or(quota.pool.as_deref())
                        .unwrap_or("-");
                    first.get_or_insert(format!(
                        "team `{}` has placed {} GPUs of `{what}` of its quota ceiling of {}; one more replica of `{}` needs {}",
                        team.name,
                        fmt_num(used),
                        quota.ceiling(),
                        w.name,
                        fmt_num(need)
                    ));
                }
                _ => return None,
            }
        }
    }
    first
}

/// `12`, `0.5`, `2.25`: GPU-equivalents without trailing zeros.
pub(crate) fn fmt_num(x: f64) -> String {
    let s = format!("{:.2}", accounting::round4(x));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "`a` (priority p, higher) took 32, `b` (priority q, equal) took 8", from per-class
/// GPU counts.
fn holders_text(c: &Cluster, w: &Workload, held: &Held) -> String {
    let mine = c.priority(&w.priority).map(|p| p.value).unwrap_or(0);
    let mut list: Vec<(i64, &str, &str, usize)> = held
        .iter()
        .filter_map(|(x, gpus)| {
            let o = c.workloads.get(*x)?;
            let v = c.priority(&o.priority).map(|p| p.value).unwrap_or(0);
            Some((v, o.name.as_str(), o.priority.as_str(), *gpus))
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

fn capacity_reason(c: &Cluster, facts: &Facts, w: &Workload, wi: usize, missing: u32) -> String {
    let kind = match sizing::usage(w, 1) {
        Usage::Gang { gpus, .. } => return gang_capacity(c, facts, w, wi, gpus, missing),
        Usage::Mig => "a MIG instance",
        Usage::Shared { mps: true, .. } => "a share of an MPS GPU",
        Usage::Shared { mps: false, .. } => "a share of a time-sliced GPU",
        Usage::Packed { milli } => return packed_capacity(w, milli, missing),
    };
    let runs = runs_on_models(c, w);
    let mut held = Held::new();
    for ((x, m), n) in &facts.held {
        if *x != wi && runs.contains(m.as_str()) {
            *held.entry(*x).or_default() += n;
        }
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

/// A packed class: what one replica asks a node for.
fn packed_capacity(w: &Workload, milli: u64, missing: u32) -> String {
    let mut parts = Vec::new();
    if milli >= 1000 {
        parts.push(format!(
            "{} whole GPU(s) of {}",
            milli / 1000,
            models_text(w)
        ));
    } else if milli > 0 {
        parts.push(format!(
            "{}% of one GPU of {}",
            milli as f64 / 10.0,
            models_text(w)
        ));
    }
    if w.cpu_milli > 0 {
        parts.push(format!("{} CPU", w.cpu_milli as f64 / 1000.0));
    }
    if w.host_memory.0 > 0 {
        parts.push(format!("{} host memory", w.host_memory));
    }
    format!(
        "{missing} replica(s) of `{}` found no node with {} free at once (the cluster's free \
         capacity is fragmented across nodes and GPUs, or taken)",
        w.name,
        parts.join(", ")
    )
}

/// Names of the catalog models the class runs on.
fn runs_on_models<'c>(c: &'c Cluster, w: &Workload) -> BTreeSet<&'c str> {
    c.models
        .values()
        .filter(|m| sizing::runs_on(c, w, m))
        .map(|m| m.name.as_str())
        .collect()
}

/// "gang `w` needs N GPUs inside one leaf; the largest leaf (`x`) has F free after ...".
fn gang_capacity(
    c: &Cluster,
    facts: &Facts,
    w: &Workload,
    wi: usize,
    gpus: u32,
    missing: u32,
) -> String {
    let tier = w.required_tier.unwrap_or(Tier::Cluster);
    let runs = runs_on_models(c, w);
    let mut best: Option<(&str, u32, u32)> = None;
    for d in c.topology.domains_ref(tier) {
        // Free GPUs, and those on spot nodes.
        let (mut n, mut spot) = (0, 0);
        for (ni, m, _) in d
            .per_node
            .iter()
            .filter(|(_, m, _)| runs.contains(m.as_str()))
        {
            let f = facts.free.get(&(*ni, m.clone())).copied().unwrap_or(0);
            n += f;
            if c.node_spot(*ni) {
                spot += f;
            }
        }
        if best.is_some_and(|b| n <= b.1) {
            continue;
        }
        best = Some((d.name.as_str(), n, spot));
    }
    let Some((name, n, spot)) = best else {
        return format!("gang `{}` found no domain to land in", w.name);
    };
    let mut held = Held::new();
    if let Some(counts) = facts.held_in.get(&tier) {
        for ((d, x, m), k) in counts.range((name.to_string(), 0usize, String::new())..) {
            if d != name {
                break;
            }
            if *x != wi && runs.contains(m.as_str()) {
                *held.entry(*x).or_default() += k;
            }
        }
    }
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
    // A gang that may not straddle spot and other capacity needs them on one side.
    let sides = if c.has_spot() && !w.straddle && spot > 0 && spot < n {
        format!(
            " ({spot} on spot nodes, {} on others, and a gang may not mix them without `spot straddle=#true`)",
            n - spot
        )
    } else {
        String::new()
    };
    format!(
        "{reps}gang `{}` needs {gpus} GPUs inside one {}; {what} has {n} free{sides}{after}",
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
