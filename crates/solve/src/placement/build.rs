//! [`build`]: turns a solver's [`Assignment`] into the reported [`Placement`] value:
//! pools, per-class placements with gang spans, MIG layouts (driver names applied), team
//! usage and cost, headroom per tier, the summary and the solver summary. Reasons for
//! what was left out come from [`super::explain`].
//!
//! Accounting choices:
//! - a replica's GPU-equivalents: a gang counts its GPUs, a MIG instance its memory
//!   slices over the GPU's (a `3g.40gb` on an 8-slice H100 is 0.5), a shared replica
//!   `1 / per-gpu`;
//! - a team's `gpus_placed` covers its own classes and its children's (what its ceiling
//!   limits);
//! - `summary.gpus_allocated` counts hardware taken: a MIG GPU by its used instances'
//!   memory slices over 8 (or the model's slice count), a shared GPU as one whole GPU as
//!   soon as one replica uses it.
//!
//! Every list is sorted (names, indexes) and every number rounded to 4 decimals, so the
//! same assignment gives byte-identical JSON.

use super::accounting::{
    Record, free_whole_gpus, gpu_model, pools_of, records, replica_equivalent, round4,
};
use super::{
    FORMAT_VERSION, Gang, GpuLayout, Headroom, LevelSummary, MigAction, MigChange, MigInstance,
    NodeGpus, NodePool, Packed, Placement, Share, SolverSummary, Span, StageSummary, Summary,
    TeamUsage, WorkloadPlacement,
};
use crate::model::topology::Vertex;
use crate::model::{Cluster, NodeIdx, Tier};
use crate::solve::{Assignment, SolveInfo, SolveStatus};
use std::collections::{BTreeMap, BTreeSet};

/// The reported placement of an assignment.
pub fn build(c: &Cluster, a: &Assignment, info: &SolveInfo) -> Placement {
    let records = records(c, a);
    let pools = pools_of(c, a);
    let mut held: Vec<f64> = vec![0.0; c.workloads.len()];
    for r in &records {
        if let Some(h) = held.get_mut(r.workload) {
            *h += r.amount;
        }
    }
    let by_class = ByClass::of(c, a);
    let mut workloads: Vec<WorkloadPlacement> = (0..c.workloads.len())
        .map(|wi| workload(c, a, &by_class, wi, held[wi]))
        .collect();
    // Why what is left out is left out, on another core while the rest is built (the
    // facts behind it take 0.13 s at 100,000 GPUs); taken by class index.
    let short: Vec<(usize, u32)> = workloads
        .iter()
        .enumerate()
        .filter(|(_, wp)| wp.replicas_placed < wp.replicas_requested)
        .map(|(wi, wp)| (wi, wp.replicas_placed))
        .collect();
    let why = || -> Vec<(usize, Vec<super::Unplaced>)> {
        if short.is_empty() {
            return Vec::new();
        }
        let facts = super::explain::Facts::new(c, a, &records);
        short
            .iter()
            .map(|&(wi, placed)| (wi, super::explain::explain(c, &facts, wi, placed)))
            .collect()
    };
    let (reasons, rest) = std::thread::scope(|scope| {
        let explaining = if short.is_empty() {
            None
        } else {
            std::thread::Builder::new().spawn_scoped(scope, why).ok()
        };
        let rest = Rest {
            team_used: team_usage(c, &records),
            solver: solver_summary(c, info, &workloads),
            summary: summary(c, a),
            headroom: headroom(c, a, &pools),
            mig_layouts: mig_layouts(c, a),
            mig_changes: mig_changes(c, a),
        };
        let reasons = match explaining {
            Some(h) => crate::par::joined(h),
            None => why(),
        };
        (reasons, rest)
    });
    for (wi, unplaced) in reasons {
        workloads[wi].unplaced = unplaced;
    }
    workloads.sort_by(|x, y| x.name.cmp(&y.name));
    let team_used = rest.team_used;
    let teams = c
        .teams
        .values()
        .map(|t| TeamUsage {
            name: t.name.clone(),
            guarantee: t.guarantee,
            ceiling: t.ceiling(),
            gpus_placed: round4(team_used.get(&t.name).map(|u| u.0).unwrap_or(0.0)),
            cost_per_hour: team_used.get(&t.name).and_then(|u| u.1).map(round4),
        })
        .collect();
    let mut p = Placement {
        format_version: FORMAT_VERSION.to_string(),
        cluster: c.name.clone(),
        solver: rest.solver,
        summary: rest.summary,
        headroom: rest.headroom,
        pools,
        workloads,
        mig_layouts: rest.mig_layouts,
        mig_changes: rest.mig_changes,
        teams,
        authorities: Vec::new(),
        moves: None,
        economics: None,
    };
    p.authorities = super::authority::authorities(c, &p);
    p
}

/// The parts of a placement built while its unplaced classes are explained.
struct Rest {
    team_used: BTreeMap<String, (f64, Option<f64>)>,
    solver: SolverSummary,
    summary: Summary,
    headroom: Vec<Headroom>,
    mig_layouts: Vec<GpuLayout>,
    mig_changes: Vec<MigChange>,
}

/// `(bound - got) / bound`, 0 when the bound is reached (rounded).
fn gap_of(bound: f64, got: f64) -> f64 {
    if bound <= 1e-9 || bound - got <= 1e-6 {
        0.0
    } else {
        round4(((bound - got) / bound).min(1.0))
    }
}

/// Per priority level, highest first: admitted against the solver's bound (none
/// without bounds: greedy).
fn level_summaries(
    info: &crate::solve::SolveInfo,
    admitted: &BTreeMap<i64, f64>,
    names: &BTreeMap<i64, std::collections::BTreeSet<String>>,
) -> Vec<LevelSummary> {
    if info.levels.is_empty() {
        Vec::new()
    } else {
        admitted
            .iter()
            .rev()
            .map(|(v, got)| {
                let bound = info
                    .levels
                    .iter()
                    .find(|l| l.priority == *v)
                    .map_or(*got, |l| l.bound)
                    .max(*got);
                LevelSummary {
                    priority: *v,
                    names: names[v].iter().cloned().collect(),
                    admitted: round4(*got),
                    bound: round4(bound),
                    gap: gap_of(bound, *got),
                }
            })
            .collect()
    }
}

/// The solver summary of a placement: the levels' final admission against the
/// solver's bounds (so every number is true of this placement, not of a model).
pub fn solver_summary(
    c: &Cluster,
    info: &crate::solve::SolveInfo,
    workloads: &[WorkloadPlacement],
) -> SolverSummary {
    let value = |prio: &str| c.priority(prio).map(|p| p.value).unwrap_or(i64::MIN);
    let mut admitted: BTreeMap<i64, f64> = BTreeMap::new();
    let mut names: BTreeMap<i64, std::collections::BTreeSet<String>> = BTreeMap::new();
    for w in &c.workloads {
        let v = value(&w.priority);
        admitted.entry(v).or_default();
        names.entry(v).or_default().insert(w.priority.clone());
    }
    for wp in workloads {
        *admitted.entry(value(&wp.priority)).or_default() += wp.gpus_placed;
    }
    let total = round4(admitted.values().sum());
    let levels = level_summaries(info, &admitted, &names);
    let bound = (!levels.is_empty()).then(|| round4(levels.iter().map(|l| l.bound).sum()));
    let compaction =
        (info.name == "ilp" && info.status != SolveStatus::Fallback).then(|| StageSummary {
            objective: round4(info.objective),
            bound: round4(info.bound.min(info.objective)),
            gap: round4(info.gap),
        });
    let proven = levels.iter().all(|l| l.gap <= 1e-4)
        && compaction
            .as_ref()
            .is_none_or(|s| s.gap <= info.requested_gap.max(1e-4));
    let status = match info.status {
        SolveStatus::Optimal | SolveStatus::Feasible if info.name == "ilp" => {
            if proven {
                SolveStatus::Optimal
            } else {
                SolveStatus::Feasible
            }
        }
        s => s,
    };
    SolverSummary {
        name: info.name.to_string(),
        status,
        note: info.note.clone(),
        objective: total,
        gap: bound.map(|b| gap_of(b, total)),
        bound,
        levels,
        compaction,
        seconds: round4(info.seconds),
        stages: info.stages,
        variables: info.variables,
        constraints: info.constraints,
    }
}

/// Domain counts of a gang's GPUs: NVLink domains, nodes, leaves, spines.
pub(crate) fn span(c: &Cluster, nodes: &[(NodeIdx, Vec<u32>)]) -> Span {
    let mut nvl: BTreeSet<(Option<usize>, NodeIdx, u32)> = BTreeSet::new();
    let mut leaves = BTreeSet::new();
    let mut spines = BTreeSet::new();
    for (ni, gpus) in nodes {
        for gi in gpus {
            let d = c
                .nodes
                .get(*ni)
                .and_then(|n| n.gpus.iter().find(|g| g.index == *gi))
                .and_then(|g| g.nvlink_domain);
            nvl.insert(match d {
                Some(d) => (Some(d), 0, 0),
                None => (None, *ni, *gi),
            });
        }
        for (tier, set) in [(Tier::Leaf, &mut leaves), (Tier::Spine, &mut spines)] {
            let v = c.topology.ancestor_at(c, *ni, tier);
            if matches!(c.topology.graph.node_weight(v), Some(Vertex::Switch(_))) {
                set.insert(v);
            }
        }
    }
    let distinct: BTreeSet<NodeIdx> = nodes.iter().map(|(n, _)| *n).collect();
    Span {
        nvlink_domains: nvl.len() as u32,
        nodes: distinct.len() as u32,
        leaves: leaves.len() as u32,
        spines: spines.len() as u32,
    }
}

fn node_name(c: &Cluster, ni: NodeIdx) -> String {
    c.nodes.get(ni).map(|n| n.name.clone()).unwrap_or_default()
}

/// An assignment's entries per class (indexes into its lists), so that each class's
/// part is read once instead of every list being scanned per class (at 2,000 classes
/// and 100,000 GPUs the scans took a fifth of building the placement).
struct ByClass {
    gangs: Vec<Vec<usize>>,
    mig: Vec<Vec<usize>>,
    shares: Vec<Vec<usize>>,
    packed: Vec<Vec<usize>>,
}

impl ByClass {
    fn of(c: &Cluster, a: &Assignment) -> ByClass {
        fn index(n: usize, classes: impl Iterator<Item = usize>) -> Vec<Vec<usize>> {
            let mut out = vec![Vec::new(); n];
            for (i, w) in classes.enumerate() {
                if let Some(v) = out.get_mut(w) {
                    v.push(i);
                }
            }
            out
        }
        let n = c.workloads.len();
        ByClass {
            gangs: index(n, a.gangs.iter().map(|g| g.0)),
            mig: index(n, a.mig_instances.iter().map(|m| m.0)),
            shares: index(n, a.shares.iter().map(|s| s.0)),
            packed: index(n, a.packed.iter().map(|p| p.0)),
        }
    }
}

/// The gangs of class `wi`, by replica, nodes and GPUs sorted.
fn gangs_of(c: &Cluster, a: &Assignment, by: &ByClass, wi: usize) -> Vec<Gang> {
    let mut gangs: Vec<Gang> = by.gangs[wi]
        .iter()
        .map(|&i| &a.gangs[i])
        .map(|(_, r, nodes)| {
            let mut ng: Vec<NodeGpus> = nodes
                .iter()
                .map(|(ni, g)| {
                    let mut gpus = g.clone();
                    gpus.sort_unstable();
                    NodeGpus {
                        node: node_name(c, *ni),
                        gpus,
                    }
                })
                .collect();
            ng.sort();
            Gang {
                replica: *r,
                nodes: ng,
                span: span(c, nodes),
            }
        })
        .collect();
    gangs.sort_by_key(|g| g.replica);
    gangs
}

/// The MIG instances of class `wi` (driver profile names), sorted.
fn instances_of(c: &Cluster, a: &Assignment, by: &ByClass, wi: usize) -> Vec<MigInstance> {
    let mut mig_instances: Vec<MigInstance> = by.mig[wi]
        .iter()
        .map(|&i| &a.mig_instances[i])
        .map(|(_, ni, gi, p)| MigInstance {
            node: node_name(c, *ni),
            gpu: *gi,
            profile: gpu_model(c, *ni, *gi)
                .map(|m| m.profile_name(p).to_string())
                .unwrap_or_else(|| p.to_string()),
        })
        .collect();
    mig_instances.sort();
    mig_instances
}

fn workload(
    c: &Cluster,
    a: &Assignment,
    by: &ByClass,
    wi: usize,
    gpus_placed: f64,
) -> WorkloadPlacement {
    let w = &c.workloads[wi];
    let gangs = gangs_of(c, a, by, wi);
    let mig_instances = instances_of(c, a, by, wi);
    let mut shares: Vec<Share> = by.shares[wi]
        .iter()
        .map(|&i| &a.shares[i])
        .map(|(_, ni, gi, n)| Share {
            node: node_name(c, *ni),
            gpu: *gi,
            replicas: *n,
        })
        .collect();
    shares.sort();
    let mut packed: Vec<Packed> = by.packed[wi]
        .iter()
        .map(|&i| &a.packed[i])
        .map(|(_, ni, gs, k)| Packed {
            node: node_name(c, *ni),
            gpus: gs.clone(),
            replicas: *k,
        })
        .collect();
    packed.sort();
    let placed = gangs.len() as u32
        + mig_instances.len() as u32
        + shares.iter().map(|s| s.replicas).sum::<u32>()
        + packed.iter().map(|p| p.replicas).sum::<u32>();
    let mig_profiles = a
        .mig_profiles
        .range((wi, String::new())..(wi + 1, String::new()))
        .map(|((_, m), p)| {
            let name = c
                .models
                .get(m)
                .map(|gm| gm.profile_name(p).to_string())
                .unwrap_or_else(|| p.to_string());
            (m.clone(), name)
        })
        .collect();
    WorkloadPlacement {
        name: w.name.clone(),
        kind: w.kind.as_str().to_string(),
        team: w.team.clone(),
        priority: w.priority.clone(),
        replicas_requested: w.replicas,
        replicas_placed: placed,
        gpus_requested: round4(w.replicas as f64 * replica_equivalent(c, wi)),
        gpus_placed: round4(gpus_placed),
        gangs,
        mig_profiles,
        mig_instances,
        shares,
        packed,
        unplaced: Vec::new(),
    }
}

/// Per team (its subtree): GPU-equivalents placed and cost per hour (when every GPU it
/// uses has a price).
fn team_usage(c: &Cluster, records: &[Record]) -> BTreeMap<String, (f64, Option<f64>)> {
    let mut out: BTreeMap<String, (f64, Option<f64>)> = BTreeMap::new();
    let priced = c.priced();
    for t in c.teams.keys() {
        out.insert(t.clone(), (0.0, priced.then_some(0.0)));
    }
    for r in records {
        let price = c.gpu_price(r.node, &r.model);
        let Some(w) = c.workloads.get(r.workload) else {
            continue;
        };
        for t in c.team_chain(&w.team) {
            let e = out.entry(t.name.clone()).or_insert((0.0, Some(0.0)));
            e.0 += r.amount;
            e.1 = match (e.1, price) {
                (Some(x), Some(p)) => Some(x + r.amount * p),
                _ => None,
            };
        }
    }
    out
}

fn summary(c: &Cluster, a: &Assignment) -> Summary {
    let total = c.usable_gpu_count() as u32;
    let mut held: BTreeMap<(NodeIdx, u32), f64> = BTreeMap::new();
    for (_, _, nodes) in &a.gangs {
        for (ni, gpus) in nodes {
            for gi in gpus {
                held.insert((*ni, *gi), 1.0);
            }
        }
    }
    for (_, ni, gi, p) in &a.mig_instances {
        let frac = gpu_model(c, *ni, *gi)
            .and_then(|m| m.mig)
            .and_then(|s| {
                s.profile(p)
                    .map(|q| q.memory_slices as f64 / s.memory_slices.max(1) as f64)
            })
            .unwrap_or(1.0);
        *held.entry((*ni, *gi)).or_default() += frac;
    }
    for (_, ni, gi, _) in &a.shares {
        held.insert((*ni, *gi), 1.0);
    }
    for (wi, ni, gs, k) in &a.packed {
        let share = c.workloads[*wi].packed_milli_per_gpu() as f64 / 1000.0;
        for g in gs {
            *held.entry((*ni, *g)).or_default() += *k as f64 * share;
        }
    }
    let allocated: f64 = held.values().map(|v| v.min(1.0)).sum();
    let priced = c.priced();
    let cost: f64 = held
        .iter()
        .map(|((ni, gi), v)| {
            v.min(1.0)
                * gpu_model(c, *ni, *gi)
                    .and_then(|m| c.gpu_price(*ni, &m.name))
                    .unwrap_or(0.0)
        })
        .sum();
    Summary {
        gpus_total: total,
        gpus_allocated: round4(allocated),
        allocation_pct: if total == 0 {
            0.0
        } else {
            round4(100.0 * allocated / total as f64)
        },
        cost_per_hour: priced.then_some(round4(cost)),
    }
}

fn headroom(c: &Cluster, a: &Assignment, pools: &[NodePool]) -> Vec<Headroom> {
    // Free GPUs flagged per node and index: every GPU of every domain of five tiers is
    // looked up (500,000 lookups at 100,000 GPUs).
    let mut free: Vec<Vec<bool>> = vec![Vec::new(); c.nodes.len()];
    for (ni, gi) in free_whole_gpus(c, a, pools) {
        let flags = &mut free[ni];
        if flags.len() <= gi as usize {
            flags.resize(gi as usize + 1, false);
        }
        flags[gi as usize] = true;
    }
    let is_free = |(ni, gi): &(NodeIdx, u32)| {
        free.get(*ni)
            .and_then(|f| f.get(*gi as usize))
            .copied()
            .unwrap_or(false)
    };
    [
        Tier::Nvlink,
        Tier::Node,
        Tier::Leaf,
        Tier::Spine,
        Tier::Cluster,
    ]
    .into_iter()
    .map(|tier| {
        let mut best: (u32, Option<String>) = (0, None);
        for d in c.topology.domains_ref(tier) {
            let n = d.gpus.iter().filter(|g| is_free(g)).count() as u32;
            if n > best.0 {
                best = (n, Some(d.name.clone()));
            }
        }
        Headroom {
            tier: tier.as_str().to_string(),
            largest_gang: best.0,
            domain: best.1,
        }
    })
    .collect()
}

fn mig_layouts(c: &Cluster, a: &Assignment) -> Vec<GpuLayout> {
    let mut v: Vec<GpuLayout> = a
        .mig_layouts
        .iter()
        .map(|((ni, gi), profiles)| {
            let m = gpu_model(c, *ni, *gi);
            GpuLayout {
                node: node_name(c, *ni),
                gpu: *gi,
                model: m.map(|m| m.name.clone()).unwrap_or_default(),
                profiles: profiles
                    .iter()
                    .map(|p| {
                        m.map(|m| m.profile_name(p).to_string())
                            .unwrap_or_else(|| p.to_string())
                    })
                    .collect(),
            }
        })
        .collect();
    v.sort();
    v
}

/// The current layout (catalog names, largest first) of every GPU a `current=#true`
/// layout of the files names: the report covers declared layouts only (the plan's
/// disruption section compares with the state).
pub(crate) fn current_layouts(c: &Cluster) -> BTreeMap<(NodeIdx, u32), Vec<&'static str>> {
    crate::model::current_mig_layouts(c, &BTreeMap::new())
        .into_iter()
        .map(|(k, ps)| (k, ps.iter().map(|q| q.name).collect()))
        .collect()
}

/// Multiset difference `a - b` (order of `a` kept).
fn minus(a: &[&'static str], b: &[&'static str]) -> Vec<&'static str> {
    let mut left: Vec<&str> = b.to_vec();
    a.iter()
        .copied()
        .filter(|x| match left.iter().position(|y| y == x) {
            Some(i) => {
                left.remove(i);
                false
            }
            None => true,
        })
        .collect()
}

fn mig_changes(c: &Cluster, a: &Assignment) -> Vec<MigChange> {
    let mut out: Vec<MigChange> = current_layouts(c)
        .into_iter()
        .map(|((ni, gi), current)| {
            let planned: Vec<&'static str> =
                a.mig_layouts.get(&(ni, gi)).cloned().unwrap_or_default();
            let destroyed = minus(&current, &planned);
            let created = minus(&planned, &current);
            let surviving = minus(&current, &destroyed);
            let action = if planned.is_empty() {
                MigAction::Clear
            } else if destroyed.is_empty() && created.is_empty() {
                MigAction::Keep
            } else {
                MigAction::Reconfigure
            };
            let m = gpu_model(c, ni, gi);
            let names = |v: &[&str]| -> Vec<String> {
                v.iter()
                    .map(|p| {
                        m.map(|m| m.profile_name(p).to_string())
                            .unwrap_or_else(|| p.to_string())
                    })
                    .collect()
            };
            MigChange {
                node: node_name(c, ni),
                gpu: gi,
                model: m.map(|m| m.name.clone()).unwrap_or_default(),
                action,
                current: names(&current),
                planned: names(&planned),
                surviving: names(&surviving),
                destroyed: names(&destroyed),
                created: names(&created),
            }
        })
        .collect();
    out.sort();
    out
}
