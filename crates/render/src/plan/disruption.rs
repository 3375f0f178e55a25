//! What applying a plan disrupts, compared with the applied placement: GPUs whose MIG
//! layout changes (instances kept, destroyed and created; whether the GPU needs a reset
//! because MIG mode flips, or a drain because instances in use go away), training gangs
//! that move, workloads that lose admission, nodes whose pool mode changes; each with
//! the priority of the work it hits. A GPU whose declared current layout (`mig layout
//! ... current=#true`) loses instances is disrupted too, state or not: gpuplan does not
//! know who uses those instances (`users_unknown`; pods it does not manage may). Then a
//! rollout order: batches of nodes in which no pool has more than its `max-disrupted`
//! nodes (KDL `pool ... max-disrupted=N`, default 1) disrupted at once, least important
//! work first.

use crate::model::Cluster;
use crate::placement::{GpuLayout, NodeGpus, Placement, WorkloadPlacement};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Nodes of one pool disrupted at once when the pool does not say (`max-disrupted`).
pub(crate) const DEFAULT_MAX_DISRUPTED: u32 = 1;

/// A workload hit by a change, with its priority.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Affected {
    pub workload: String,
    pub priority: String,
    pub priority_value: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigChange {
    pub node: String,
    pub gpu: u32,
    pub model: String,
    /// Profiles before and after, largest first; empty = MIG disabled (whole GPU).
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Instances that survive, are destroyed, are created.
    pub kept: Vec<String>,
    pub destroyed: Vec<String>,
    pub created: Vec<String>,
    /// MIG mode flips (enable or disable): the GPU must be reset.
    pub reset: bool,
    /// Work on the GPU is evicted: drain the node's GPU work first.
    pub drain: bool,
    pub affected: Vec<Affected>,
    /// `before` is the declared current layout (`mig layout ... current=#true`), not a
    /// layout gpuplan applied: who uses the destroyed instances is unknown (workloads
    /// gpuplan does not manage may), so `affected` cannot list them.
    #[serde(default)]
    pub users_unknown: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GangMove {
    pub workload: String,
    pub replica: u32,
    pub priority: String,
    pub priority_value: i64,
    pub from: Vec<NodeGpus>,
    pub to: Vec<NodeGpus>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionLoss {
    pub workload: String,
    pub priority: String,
    pub priority_value: i64,
    pub replicas_before: u32,
    pub replicas_after: u32,
    /// `removed` (no longer in the configuration), `fewer replicas requested`, or why
    /// the rest is not placed (`capacity`, `quota`, ...).
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDisruption {
    pub node: String,
    /// Declared pool, or the pool mode for nodes outside declared pools.
    pub pool: String,
    pub reasons: Vec<String>,
    pub drain: bool,
    pub reset: bool,
    /// The most important work hit on this node, if any.
    pub priority: Option<String>,
    pub priority_value: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// 1-based.
    pub batch: u32,
    pub nodes: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disruption {
    pub mig: Vec<MigChange>,
    pub gangs_moved: Vec<GangMove>,
    pub admission_lost: Vec<AdmissionLoss>,
    pub nodes: Vec<NodeDisruption>,
    /// Nodes disrupted at once, per pool (only pools with disrupted nodes).
    pub max_disrupted: BTreeMap<String, u32>,
    pub rollout: Vec<Batch>,
    /// MIG instances the plan destroys (the `destroyed` of every `mig` entry), each a
    /// disruption whether or not its users are known.
    #[serde(default)]
    pub mig_instances_destroyed: u32,
}

impl Disruption {
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.admission_lost.is_empty()
    }

    /// Destroyed MIG instances whose users are unknown (of declared current layouts).
    pub(crate) fn instances_of_unknown_users(&self) -> u32 {
        self.mig
            .iter()
            .filter(|m| m.users_unknown)
            .map(|m| m.destroyed.len() as u32)
            .sum()
    }
}

fn priority_value(c: &Cluster, name: &str) -> i64 {
    c.priorities
        .iter()
        .find(|p| p.name == name)
        .map_or(0, |p| p.value)
}

fn affected(c: &Cluster, w: &WorkloadPlacement) -> Affected {
    Affected {
        workload: w.name.clone(),
        priority: w.priority.clone(),
        priority_value: priority_value(c, &w.priority),
    }
}

fn layouts(p: &Placement) -> BTreeMap<(String, u32), &GpuLayout> {
    p.mig_layouts
        .iter()
        .map(|l| ((l.node.clone(), l.gpu), l))
        .collect()
}

/// Multiset split: (kept, only in `a`, only in `b`), each in `a`'s / `b`'s order.
fn split(a: &[String], b: &[String]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut rest_b: Vec<Option<&String>> = b.iter().map(Some).collect();
    let mut kept = Vec::new();
    let mut gone = Vec::new();
    for x in a {
        match rest_b.iter_mut().find(|y| **y == Some(x)) {
            Some(slot) => {
                *slot = None;
                kept.push(x.clone());
            }
            None => gone.push(x.clone()),
        }
    }
    let new = rest_b.into_iter().flatten().cloned().collect();
    (kept, gone, new)
}

/// Work of the old placement on one GPU: MIG instances (with a profile in `profiles`,
/// or any when `None`), whole-GPU gangs and shares.
fn work_on_gpu(
    c: &Cluster,
    old: &Placement,
    node: &str,
    gpu: u32,
    profiles: Option<&[String]>,
) -> Vec<Affected> {
    let mut out = BTreeSet::new();
    for w in &old.workloads {
        let mig = w.mig_instances.iter().any(|m| {
            m.node == node && m.gpu == gpu && profiles.is_none_or(|p| p.contains(&m.profile))
        });
        let whole = profiles.is_none()
            && (w.gangs.iter().any(|g| {
                g.nodes
                    .iter()
                    .any(|n| n.node == node && n.gpus.contains(&gpu))
            }) || w.shares.iter().any(|s| s.node == node && s.gpu == gpu));
        if mig || whole {
            out.insert(affected(c, w));
        }
    }
    out.into_iter().collect()
}

fn mig_changes(c: &Cluster, old: &Placement, new: &Placement) -> Vec<MigChange> {
    let (b, a) = (layouts(old), layouts(new));
    let keys: BTreeSet<&(String, u32)> = b.keys().chain(a.keys()).collect();
    let mut out = Vec::new();
    for k in keys {
        let before = b.get(k).map(|l| l.profiles.clone()).unwrap_or_default();
        let after = a.get(k).map(|l| l.profiles.clone()).unwrap_or_default();
        if before == after {
            continue;
        }
        let model = a
            .get(k)
            .or(b.get(k))
            .map(|l| l.model.clone())
            .unwrap_or_default();
        let reset = before.is_empty() != after.is_empty();
        let (kept, destroyed, created) = split(&before, &after);
        let hit = if reset {
            work_on_gpu(c, old, &k.0, k.1, None)
        } else {
            work_on_gpu(c, old, &k.0, k.1, Some(&destroyed))
        };
        out.push(MigChange {
            node: k.0.clone(),
            gpu: k.1,
            model,
            drain: reset || !destroyed.is_empty(),
            before,
            after,
            kept,
            destroyed,
            created,
            reset,
            affected: hit,
            users_unknown: false,
        });
    }
    out
}

/// GPUs whose declared current layout (`mig layout ... current=#true`, the placement's
/// `mig_changes`) loses instances, unless `covered` by a change against the state: the
/// layout is known, its users are not.
fn current_layout_losses(new: &Placement, covered: &BTreeSet<(String, u32)>) -> Vec<MigChange> {
    new.mig_changes
        .iter()
        .filter(|m| !m.destroyed.is_empty() && !covered.contains(&(m.node.clone(), m.gpu)))
        .map(|m| MigChange {
            node: m.node.clone(),
            gpu: m.gpu,
            model: m.model.clone(),
            before: m.current.clone(),
            after: m.planned.clone(),
            kept: m.surviving.clone(),
            destroyed: m.destroyed.clone(),
            created: m.created.clone(),
            reset: m.planned.is_empty(),
            drain: true,
            affected: Vec::new(),
            users_unknown: true,
        })
        .collect()
}

fn gang_moves(c: &Cluster, old: &Placement, new: &Placement) -> Vec<GangMove> {
    let mut out = Vec::new();
    for w in &old.workloads {
        let Some(n) = new.workloads.iter().find(|x| x.name == w.name) else {
            continue;
        };
        for g in &w.gangs {
            let Some(h) = n.gangs.iter().find(|h| h.replica == g.replica) else {
                continue;
            };
            if g.nodes != h.nodes {
                out.push(GangMove {
                    workload: w.name.clone(),
                    replica: g.replica,
                    priority: w.priority.clone(),
                    priority_value: priority_value(c, &w.priority),
                    from: g.nodes.clone(),
                    to: h.nodes.clone(),
                });
            }
        }
    }
    out
}

fn admission_losses(c: &Cluster, old: &Placement, new: &Placement) -> Vec<AdmissionLoss> {
    let mut out = Vec::new();
    for w in &old.workloads {
        let n = new.workloads.iter().find(|x| x.name == w.name);
        let after = n.map_or(0, |n| n.replicas_placed);
        if after >= w.replicas_placed {
            continue;
        }
        let reason = match n {
            None => "removed".to_string(),
            Some(n) if n.replicas_requested < w.replicas_placed => {
                "fewer replicas requested".to_string()
            }
            Some(n) => n
                .unplaced
                .first()
                .map_or_else(|| "capacity".to_string(), |u| u.reason.to_string()),
        };
        out.push(AdmissionLoss {
            workload: w.name.clone(),
            priority: w.priority.clone(),
            priority_value: priority_value(c, &w.priority),
            replicas_before: w.replicas_placed,
            replicas_after: after,
            reason,
        });
    }
    out
}

/// Per node: why it is disrupted and the most important work hit.
struct NodeAcc {
    reasons: Vec<String>,
    drain: bool,
    reset: bool,
    top: Option<(i64, String)>,
}

fn hit(acc: &mut NodeAcc, a: &Affected) {
    if acc.top.as_ref().is_none_or(|(v, _)| a.priority_value > *v) {
        acc.top = Some((a.priority_value, a.priority.clone()));
    }
}

fn pool_key(new: &Placement, old: Option<&Placement>, node: &str) -> String {
    new.pools
        .iter()
        .chain(old.map(|o| o.pools.as_slice()).unwrap_or(&[]))
        .find(|p| p.node == node)
        .map(|p| {
            p.pool
                .clone()
                .unwrap_or_else(|| p.mode.as_str().to_string())
        })
        .unwrap_or_else(|| "-".to_string())
}

/// Something that disrupts one node: (node, why, drain, reset, work hit).
type Event = (String, String, bool, bool, Vec<Affected>);

fn mig_events(mig: &[MigChange]) -> Vec<Event> {
    mig.iter()
        .map(|m| {
            let what = if m.reset && m.after.is_empty() {
                format!("GPU {}: MIG disabled (was {})", m.gpu, counted(&m.before))
            } else if m.reset {
                format!("GPU {}: MIG enabled as {}", m.gpu, counted(&m.after))
            } else {
                format!(
                    "GPU {}: MIG {} -> {}",
                    m.gpu,
                    counted(&m.before),
                    counted(&m.after)
                )
            };
            let what = if m.users_unknown {
                format!(
                    "{what}; destroys {} of the current layout (users unknown)",
                    counted(&m.destroyed)
                )
            } else {
                what
            };
            (m.node.clone(), what, m.drain, m.reset, m.affected.clone())
        })
        .collect()
}

fn gang_events(gangs: &[GangMove]) -> Vec<Event> {
    let mut out = Vec::new();
    for g in gangs {
        let a = Affected {
            workload: g.workload.clone(),
            priority: g.priority.clone(),
            priority_value: g.priority_value,
        };
        for n in &g.from {
            out.push((
                n.node.clone(),
                format!("gang {} replica {} moves away", g.workload, g.replica),
                false,
                false,
                vec![a.clone()],
            ));
        }
    }
    out
}

/// Nodes whose pool mode changes: the device plugin's config changes, work restarts.
fn pool_events(c: &Cluster, old: &Placement, new: &Placement) -> Vec<Event> {
    let old_modes: BTreeMap<&str, &str> = old
        .pools
        .iter()
        .map(|p| (p.node.as_str(), p.mode.as_str()))
        .collect();
    let mut out = Vec::new();
    for p in &new.pools {
        let Some(m) = old_modes
            .get(p.node.as_str())
            .filter(|m| **m != p.mode.as_str())
        else {
            continue;
        };
        let gpus: Vec<u32> = c
            .node(&p.node)
            .map(|n| n.usable_gpus().map(|g| g.index).collect())
            .unwrap_or_default();
        let hit: BTreeSet<Affected> = gpus
            .iter()
            .flat_map(|g| work_on_gpu(c, old, &p.node, *g, None))
            .collect();
        out.push((
            p.node.clone(),
            format!("pool mode {m} -> {}", p.mode.as_str()),
            true,
            false,
            hit.into_iter().collect(),
        ));
    }
    out
}

fn node_disruptions(
    events: Vec<Event>,
    old: Option<&Placement>,
    new: &Placement,
) -> Vec<NodeDisruption> {
    let mut acc: BTreeMap<String, NodeAcc> = BTreeMap::new();
    for (node, what, drain, reset, hits) in events {
        let a = acc.entry(node).or_insert_with(|| NodeAcc {
            reasons: Vec::new(),
            drain: false,
            reset: false,
            top: None,
        });
        a.reasons.push(what);
        a.drain |= drain;
        a.reset |= reset;
        for h in &hits {
            hit(a, h);
        }
    }
    acc.into_iter()
        .map(|(node, a)| NodeDisruption {
            pool: pool_key(new, old, &node),
            node,
            reasons: a.reasons,
            drain: a.drain,
            reset: a.reset,
            priority_value: a.top.as_ref().map(|t| t.0),
            priority: a.top.map(|t| t.1),
        })
        .collect()
}

/// Compares the applied placement (if any) with the new one; with or without it, the
/// declared current MIG layouts with the planned ones.
pub fn compute(c: &Cluster, old: Option<&Placement>, new: &Placement) -> Disruption {
    let mut mig = old.map(|o| mig_changes(c, o, new)).unwrap_or_default();
    let covered: BTreeSet<(String, u32)> = mig.iter().map(|m| (m.node.clone(), m.gpu)).collect();
    mig.extend(current_layout_losses(new, &covered));
    mig.sort_by(|a, b| (&a.node, a.gpu).cmp(&(&b.node, b.gpu)));
    let mut events = mig_events(&mig);
    let (gangs_moved, admission_lost) = match old {
        Some(old) => {
            let gangs = gang_moves(c, old, new);
            events.extend(gang_events(&gangs));
            events.extend(pool_events(c, old, new));
            (gangs, admission_losses(c, old, new))
        }
        None => Default::default(),
    };
    let nodes = node_disruptions(events, old, new);
    let max_disrupted: BTreeMap<String, u32> = nodes
        .iter()
        .map(|n| {
            let cap = c
                .pools
                .iter()
                .find(|p| p.name == n.pool)
                .and_then(|p| p.max_disrupted)
                .unwrap_or(DEFAULT_MAX_DISRUPTED)
                .max(1);
            (n.pool.clone(), cap)
        })
        .collect();
    let rollout = batches(&nodes, &max_disrupted);
    Disruption {
        mig_instances_destroyed: mig.iter().map(|m| m.destroyed.len() as u32).sum(),
        mig,
        gangs_moved,
        admission_lost,
        nodes,
        max_disrupted,
        rollout,
    }
}

/// Least important work first (nodes hitting nothing first of all), then by name; each
/// batch takes the next nodes of every pool up to the pool's limit.
fn batches(nodes: &[NodeDisruption], caps: &BTreeMap<String, u32>) -> Vec<Batch> {
    let mut order: Vec<&NodeDisruption> = nodes.iter().collect();
    order.sort_by(|a, b| (a.priority_value, &a.node).cmp(&(b.priority_value, &b.node)));
    let mut pending: Vec<&NodeDisruption> = order;
    let mut out = Vec::new();
    while !pending.is_empty() {
        let mut taken: BTreeMap<&str, u32> = BTreeMap::new();
        let mut batch = Vec::new();
        pending.retain(|n| {
            let t = taken.entry(n.pool.as_str()).or_insert(0);
            if *t < caps.get(&n.pool).copied().unwrap_or(DEFAULT_MAX_DISRUPTED) {
                *t += 1;
                batch.push(n.node.clone());
                false
            } else {
                true
            }
        });
        out.push(Batch {
            batch: out.len() as u32 + 1,
            nodes: batch,
        });
    }
    out
}

/// `3g.40gb*2 + 1g.10gb` style: counts of equal profiles, in order of first appearance.
pub fn counted(profiles: &[String]) -> String {
    if profiles.is_empty() {
        return "whole GPU".to_string();
    }
    let mut parts: Vec<(String, usize)> = Vec::new();
    for p in profiles {
        match parts.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => parts.push((p.clone(), 1)),
        }
    }
    parts
        .into_iter()
        .map(|(p, n)| if n == 1 { p } else { format!("{p}*{n}") })
        .collect::<Vec<_>>()
        .join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn split_keeps_common_instances() {
        let (k, g, n) = split(
            &v(&["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]),
            &v(&["3g.40gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]),
        );
        assert_eq!(k, v(&["3g.40gb", "1g.10gb", "1g.10gb"]));
        assert_eq!(g, v(&["2g.20gb"]));
        assert_eq!(n, v(&["1g.10gb", "1g.10gb"]));
        assert_eq!(counted(&v(&["1g.10gb", "1g.10gb"])), "1g.10gb*2");
    }

    #[test]
    fn batches_respect_per_pool_limits() {
        let nd = |n: &str, pool: &str, pv: Option<i64>| NodeDisruption {
            node: n.into(),
            pool: pool.into(),
            reasons: vec![],
            drain: true,
            reset: false,
            priority: pv.map(|_| "p".into()),
            priority_value: pv,
        };
        let nodes = vec![
            nd("a1", "a", Some(100)),
            nd("a2", "a", None),
            nd("a3", "a", Some(10)),
            nd("b1", "b", Some(1)),
            nd("b2", "b", Some(1)),
        ];
        let caps: BTreeMap<String, u32> = [("a".into(), 1), ("b".into(), 2)].into();
        let b = batches(&nodes, &caps);
        let got: Vec<Vec<String>> = b.into_iter().map(|b| b.nodes).collect();
        assert_eq!(got, vec![v(&["a2", "b1", "b2"]), v(&["a3"]), v(&["a1"])]);
    }
}
