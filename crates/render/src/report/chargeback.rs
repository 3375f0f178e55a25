//! `gpuplan report chargeback`: what each team is charged for the GPUs a placement gives
//! it over a period, and the idle capacity nobody is charged for. Pure: a model and a
//! placement in, a [`Chargeback`] out; [`table`] and [`csv`] format it, JSON is its
//! serde form (`schemas/chargeback.schema.json`). docs/chargeback.md explains the rules.
//!
//! - A plan is a steady-state layout: GPU-hours = GPU-equivalents held x period hours.
//! - GPU-equivalents: a whole GPU of a gang is 1; a MIG instance its profile's compute
//!   slices over the GPU's (3g on a 7-slice GPU is 3/7); a shared GPU (time-slice, MPS)
//!   its replicas over `per-gpu`; a packed replica its fraction of each GPU it lists.
//! - Price: the node's own `price-per-hour` (range, else class), else the GPU model's
//!   list price; cost = GPU-hours x price (absent where no price is known).
//! - Guaranteed and burst: a team's use up to its `guarantee` (GPU-equivalents) is
//!   guaranteed, the rest burst; the guarantee is filled by its classes in priority order
//!   (highest first), then by class name, then model, kind, profile, capacity.
//! - Parent teams: each team's rows are its own classes; `subtree_*` adds its children.
//! - Idle: per GPU, what no class is charged for (a free GPU, the unused compute of a
//!   partly used MIG GPU, unused shares), by model and capacity, at the GPU's price.

use crate::model::{Cluster, NodeIdx};
use crate::placement::{Placement, round4};
use serde::Serialize;
use std::collections::BTreeMap;

pub(crate) const FORMAT_VERSION: &str = "1";

/// How a GPU-equivalent is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Whole GPUs of gangs (training, whole-GPU inference).
    Whole,
    /// MIG instances.
    Mig,
    /// Time-sliced or MPS GPUs.
    Shared,
    /// Packed replicas (`requests`, `fraction`).
    Packed,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Whole => "whole",
            Kind::Mig => "mig",
            Kind::Shared => "shared",
            Kind::Packed => "packed",
        }
    }
}

/// One team's use of one (model, kind, profile, capacity, price).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub model: String,
    pub kind: Kind,
    /// The MIG profile (MIG rows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    pub capacity: crate::model::Capacity,
    /// Price of one GPU-hour (absent: none declared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_per_gpu_hour: Option<f64>,
    /// GPU-equivalents held.
    pub gpus: f64,
    pub gpu_hours: f64,
    pub guaranteed_gpu_hours: f64,
    pub burst_gpu_hours: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// What one team is charged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TeamCharge {
    pub team: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub guarantee: u32,
    pub rows: Vec<Row>,
    pub gpu_hours: f64,
    pub guaranteed_gpu_hours: f64,
    pub burst_gpu_hours: f64,
    /// Absent when some row has no price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// The team and every team below it.
    pub subtree_gpu_hours: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtree_cost: Option<f64>,
}

/// Capacity nobody is charged for.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Idle {
    pub model: String,
    pub capacity: crate::model::Capacity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_per_gpu_hour: Option<f64>,
    pub gpus: f64,
    pub gpu_hours: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Chargeback {
    pub format_version: &'static str,
    pub cluster: String,
    pub period_hours: f64,
    pub teams: Vec<TeamCharge>,
    pub idle: Vec<Idle>,
    pub charged_gpu_hours: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub charged_cost: Option<f64>,
    pub idle_gpu_hours: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_cost: Option<f64>,
}

/// One class's GPU-equivalents on one GPU.
struct Use {
    class: usize,
    node: NodeIdx,
    gpu: u32,
    kind: Kind,
    profile: Option<String>,
    equiv: f64,
}

fn round2(x: f64) -> f64 {
    let r = (x * 100.0).round() / 100.0;
    if r == 0.0 { 0.0 } else { r }
}

/// Every GPU-equivalent the placement gives a class.
fn uses(c: &Cluster, p: &Placement) -> Vec<Use> {
    let mut out = Vec::new();
    let node = |name: &str| c.node_index.get(name).copied();
    for wp in &p.workloads {
        let Some(wi) = c.workloads.iter().position(|w| w.name == wp.name) else {
            continue;
        };
        let w = &c.workloads[wi];
        for g in &wp.gangs {
            for ng in &g.nodes {
                if let Some(ni) = node(&ng.node) {
                    for &gi in &ng.gpus {
                        out.push(Use {
                            class: wi,
                            node: ni,
                            gpu: gi,
                            kind: Kind::Whole,
                            profile: None,
                            equiv: 1.0,
                        });
                    }
                }
            }
        }
        for m in &wp.mig_instances {
            let Some(ni) = node(&m.node) else { continue };
            let gm = c.nodes[ni]
                .gpus
                .iter()
                .find(|g| g.index == m.gpu)
                .and_then(|g| c.model_of(g));
            let equiv = gm
                .and_then(|gm| gm.mig_profile(&m.profile).zip(gm.mig))
                .map(|(pr, s)| pr.compute_slices as f64 / s.compute_slices.max(1) as f64)
                .unwrap_or(1.0);
            out.push(Use {
                class: wi,
                node: ni,
                gpu: m.gpu,
                kind: Kind::Mig,
                profile: Some(m.profile.clone()),
                equiv,
            });
        }
        for s in &wp.shares {
            let Some(ni) = node(&s.node) else { continue };
            let per = w.per_gpu.unwrap_or(1).max(1) as f64;
            out.push(Use {
                class: wi,
                node: ni,
                gpu: s.gpu,
                kind: Kind::Shared,
                profile: None,
                equiv: (s.replicas as f64 / per).min(1.0),
            });
        }
        let share = w.packed_milli_per_gpu() as f64 / 1000.0;
        for pk in &wp.packed {
            let Some(ni) = node(&pk.node) else { continue };
            for &gi in &pk.gpus {
                out.push(Use {
                    class: wi,
                    node: ni,
                    gpu: gi,
                    kind: Kind::Packed,
                    profile: None,
                    equiv: (pk.replicas as f64 * share).min(1.0),
                });
            }
        }
    }
    out
}

fn model_at(c: &Cluster, ni: NodeIdx, gi: u32) -> String {
    c.gpu_model_name(ni, gi).unwrap_or_default().to_string()
}

/// Price key: millionths, so rows with equal prices merge exactly.
fn price_key(p: Option<f64>) -> Option<i64> {
    p.map(|x| (x * 1e6).round() as i64)
}

type RowKey = (
    String,
    Kind,
    Option<String>,
    crate::model::Capacity,
    Option<i64>,
);

/// The report for `placement` on `c` over `period_hours`.
pub fn compute(c: &Cluster, p: &Placement, period_hours: f64) -> Chargeback {
    let all = uses(c, p);
    // Per team: its uses in guarantee order.
    let mut by_team: BTreeMap<&str, Vec<&Use>> = BTreeMap::new();
    for u in &all {
        by_team
            .entry(c.workloads[u.class].team.as_str())
            .or_default()
            .push(u);
    }
    let mut teams = Vec::new();
    for (name, t) in &c.teams {
        let list: Vec<&Use> = by_team.remove(name.as_str()).unwrap_or_default();
        teams.push(team_charge(c, name, t, list, period_hours));
    }
    subtrees(c, &mut teams);
    let idle = idle(c, &all, period_hours);
    let charged_gpu_hours = round2(teams.iter().map(|t| t.gpu_hours).sum());
    let charged_cost = teams
        .iter()
        .map(|t| t.cost)
        .sum::<Option<f64>>()
        .map(round2);
    Chargeback {
        format_version: FORMAT_VERSION,
        cluster: c.name.clone(),
        period_hours,
        idle_gpu_hours: round2(idle.iter().map(|i| i.gpu_hours).sum()),
        idle_cost: idle.iter().map(|i| i.cost).sum::<Option<f64>>().map(round2),
        teams,
        idle,
        charged_gpu_hours,
        charged_cost,
    }
}

/// One team's charge: its uses, highest priority first, counted against its guarantee
/// until it is spent (the rest is burst), per model, kind, profile, capacity and price.
fn team_charge(
    c: &Cluster,
    name: &str,
    t: &crate::model::Team,
    mut list: Vec<&Use>,
    period_hours: f64,
) -> TeamCharge {
    let prio = |wi: usize| {
        c.priority(&c.workloads[wi].priority)
            .map(|p| p.value)
            .unwrap_or(i64::MIN)
    };
    list.sort_by(|a, b| {
        prio(b.class)
            .cmp(&prio(a.class))
            .then_with(|| c.workloads[a.class].name.cmp(&c.workloads[b.class].name))
            .then_with(|| model_at(c, a.node, a.gpu).cmp(&model_at(c, b.node, b.gpu)))
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.profile.cmp(&b.profile))
            .then_with(|| c.nodes[a.node].capacity.cmp(&c.nodes[b.node].capacity))
            .then_with(|| (a.node, a.gpu).cmp(&(b.node, b.gpu)))
    });
    let mut left = t.guarantee as f64;
    let mut rows: BTreeMap<RowKey, (f64, f64, Option<f64>)> = BTreeMap::new();
    for u in list {
        let model = model_at(c, u.node, u.gpu);
        let price = c.gpu_price(u.node, &model);
        let g = u.equiv.min(left.max(0.0));
        left -= g;
        let key = (
            model,
            u.kind,
            u.profile.clone(),
            c.nodes[u.node].capacity,
            price_key(price),
        );
        let e = rows.entry(key).or_insert((0.0, 0.0, price));
        e.0 += u.equiv;
        e.1 += g;
    }
    let rows: Vec<Row> = rows
        .into_iter()
        .map(
            |((model, kind, profile, capacity, _), (gpus, guaranteed, price))| {
                let hours = gpus * period_hours;
                let g_hours = guaranteed * period_hours;
                Row {
                    model,
                    kind,
                    profile,
                    capacity,
                    price_per_gpu_hour: price,
                    gpus: round4(gpus),
                    gpu_hours: round2(hours),
                    guaranteed_gpu_hours: round2(g_hours),
                    burst_gpu_hours: round2(hours - g_hours),
                    cost: price.map(|p| round2(hours * p)),
                }
            },
        )
        .collect();
    let sum = |f: fn(&Row) -> f64| round2(rows.iter().map(f).sum());
    let cost = rows.iter().map(|r| r.cost).sum::<Option<f64>>().map(round2);
    TeamCharge {
        team: name.to_string(),
        parent: t.parent.clone(),
        guarantee: t.guarantee,
        gpu_hours: sum(|r| r.gpu_hours),
        guaranteed_gpu_hours: sum(|r| r.guaranteed_gpu_hours),
        burst_gpu_hours: sum(|r| r.burst_gpu_hours),
        cost,
        rows,
        subtree_gpu_hours: 0.0,
        subtree_cost: None,
    }
}

/// Subtrees: a team and every team whose chain reaches it.
fn subtrees(c: &Cluster, teams: &mut [TeamCharge]) {
    let own: BTreeMap<String, (f64, Option<f64>)> = teams
        .iter()
        .map(|t| (t.team.clone(), (t.gpu_hours, t.cost)))
        .collect();
    for t in teams.iter_mut() {
        let mut hours = 0.0;
        let mut cost = Some(0.0);
        for (name, (h, k)) in &own {
            if c.team_chain(name).iter().any(|x| x.name == t.team) {
                hours += h;
                cost = cost.zip(*k).map(|(a, b)| a + b);
            }
        }
        t.subtree_gpu_hours = round2(hours);
        t.subtree_cost = cost.map(round2);
    }
}

/// (model, capacity, price key) of idle capacity.
type IdleKey = (String, crate::model::Capacity, Option<i64>);

/// What no class is charged for, per (model, capacity, price).
fn idle(c: &Cluster, all: &[Use], period_hours: f64) -> Vec<Idle> {
    let mut held: BTreeMap<(NodeIdx, u32), f64> = BTreeMap::new();
    for u in all {
        *held.entry((u.node, u.gpu)).or_default() += u.equiv;
    }
    let mut out: BTreeMap<IdleKey, (f64, Option<f64>)> = BTreeMap::new();
    for (ni, n) in c.nodes.iter().enumerate() {
        for g in n.usable_gpus() {
            let free = (1.0 - held.get(&(ni, g.index)).copied().unwrap_or(0.0)).max(0.0);
            if free <= 1e-9 {
                continue;
            }
            let model = g.model.clone().unwrap_or_default();
            let price = c.gpu_price(ni, &model);
            let e = out
                .entry((model, n.capacity, price_key(price)))
                .or_insert((0.0, price));
            e.0 += free;
        }
    }
    out.into_iter()
        .map(|((model, capacity, _), (gpus, price))| Idle {
            model,
            capacity,
            price_per_gpu_hour: price,
            gpus: round4(gpus),
            gpu_hours: round2(gpus * period_hours),
            cost: price.map(|p| round2(gpus * period_hours * p)),
        })
        .collect()
}

fn money(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// The human table.
pub fn table(r: &Chargeback) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "chargeback for cluster `{}` over {} hours (GPU-hours; cost at the declared prices)",
        r.cluster, r.period_hours
    );
    let _ = writeln!(
        s,
        "\n  {:<16} {:<18} {:<7} {:<10} {:<10} {:>8} {:>12} {:>12} {:>12} {:>12}",
        "team",
        "model",
        "kind",
        "profile",
        "capacity",
        "price",
        "gpu-hours",
        "guaranteed",
        "burst",
        "cost"
    );
    for t in &r.teams {
        for row in &t.rows {
            let _ = writeln!(
                s,
                "  {:<16} {:<18} {:<7} {:<10} {:<10} {:>8} {:>12.2} {:>12.2} {:>12.2} {:>12}",
                t.team,
                row.model,
                row.kind.as_str(),
                row.profile.as_deref().unwrap_or("-"),
                row.capacity.as_str(),
                money(row.price_per_gpu_hour),
                row.gpu_hours,
                row.guaranteed_gpu_hours,
                row.burst_gpu_hours,
                money(row.cost)
            );
        }
        let parent = t
            .parent
            .as_deref()
            .map(|p| format!(" (parent {p})"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {:<16} total{parent}: {:.2} GPU-hours ({:.2} guaranteed, {:.2} burst), cost {}; with sub-teams {:.2} GPU-hours, cost {}",
            t.team,
            t.gpu_hours,
            t.guaranteed_gpu_hours,
            t.burst_gpu_hours,
            money(t.cost),
            t.subtree_gpu_hours,
            money(t.subtree_cost)
        );
    }
    let _ = writeln!(s, "\nidle (charged to nobody)");
    for i in &r.idle {
        let _ = writeln!(
            s,
            "  {:<18} {:<10} {:>8} {:>10.4} GPUs {:>12.2} GPU-hours {:>12}",
            i.model,
            i.capacity.as_str(),
            money(i.price_per_gpu_hour),
            i.gpus,
            i.gpu_hours,
            money(i.cost)
        );
    }
    let _ = writeln!(
        s,
        "\ncharged {:.2} GPU-hours, cost {}; idle {:.2} GPU-hours, cost {}",
        r.charged_gpu_hours,
        money(r.charged_cost),
        r.idle_gpu_hours,
        money(r.idle_cost)
    );
    s
}

/// A CSV field, quoted when it needs to be (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per team x model x kind x profile x capacity x price, then one per idle
/// (model, capacity, price) with the team `(idle)`.
pub fn csv(r: &Chargeback) -> String {
    let mut s = String::from(
        "team,parent,model,kind,profile,capacity,price_per_gpu_hour,gpus,gpu_hours,guaranteed_gpu_hours,burst_gpu_hours,cost\n",
    );
    let opt = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_default();
    for t in &r.teams {
        for row in &t.rows {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{:.2},{:.2},{:.2},{}\n",
                field(&t.team),
                field(t.parent.as_deref().unwrap_or("")),
                field(&row.model),
                row.kind.as_str(),
                field(row.profile.as_deref().unwrap_or("")),
                row.capacity.as_str(),
                opt(row.price_per_gpu_hour),
                row.gpus,
                row.gpu_hours,
                row.guaranteed_gpu_hours,
                row.burst_gpu_hours,
                opt(row.cost)
            ));
        }
    }
    for i in &r.idle {
        s.push_str(&format!(
            "(idle),,{},idle,,{},{},{},{:.2},0.00,0.00,{}\n",
            field(&i.model),
            i.capacity.as_str(),
            opt(i.price_per_gpu_hour),
            i.gpus,
            i.gpu_hours,
            opt(i.cost)
        ));
    }
    s
}
