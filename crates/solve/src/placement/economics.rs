//! The cost and failure side of a placement: what spot interruptions cost each class
//! that landed on spot nodes, and how long its checkpoints take to write. Pure
//! arithmetic on the placement the user receives; docs/cost.md gives the formulas with a
//! worked example.
//!
//! - **Spot.** A unit is a gang (training, whole-GPU inference) or, for other classes,
//!   the class's GPUs on one node. A unit is interrupted whenever one of its spot nodes
//!   is taken back (rates add up), and every GPU of the unit loses the work since its
//!   last checkpoint (half the interval on average; nothing for inference, which keeps
//!   no state) plus the restart time: lost GPU-hours per day = 24 x rate x (interval/2 +
//!   restart) x GPUs. Savings per day = 24 x (list price - node price) per spot GPU. Lost
//!   work is paid at the unit's own prices. The interval that loses least is Young/Daly's
//!   sqrt(2 x write time x mean time between interruptions), for the class's most
//!   exposed gang.
//! - **Checkpoints.** Every gang of a class with a checkpoint `size` writes it to the
//!   storage serving its first node. Worst case, every gang on that storage writes at
//!   once (jobs started together checkpoint in step) and the storage shares its write
//!   bandwidth evenly between their nodes: a gang gets `bandwidth x its nodes / nodes
//!   writing`. Its NICs bound it too (`nics` count x speed per node). Write time = size /
//!   the smaller of the two (the limit that binds); GPUs idle while it writes, so the
//!   idle share = write time / (interval + write time).

use super::accounting::round4;
use super::{Placement, WorkloadPlacement};
use crate::diag::Diagnostic;
use crate::model::{Cluster, NodeIdx, Workload, WorkloadKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Spot and checkpoint figures of a placement (absent when no class is on spot and no
/// class declares a checkpoint size).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Economics {
    /// Per class with GPUs on spot nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spot: Vec<SpotClass>,
    /// Per training class with a checkpoint `size` and placed gangs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<CheckpointClass>,
}

/// What spot capacity saves and what its interruptions cost one class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpotClass {
    pub class: String,
    /// GPU-equivalents of the class on spot nodes.
    pub gpus_on_spot: f64,
    /// Expected interruptions per day hitting the class's units.
    pub interruptions_per_day: f64,
    /// Declared checkpoint interval (seconds; absent for inference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_every_s: Option<u64>,
    pub restart_s: u64,
    /// GPU-hours of work lost per day (redone after interruptions).
    pub lost_gpu_hours_per_day: f64,
    /// What the lost work costs per day at the nodes' prices (absent without prices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_cost_per_day: Option<f64>,
    /// Savings per day against the GPU models' list prices (absent without prices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_per_day: Option<f64>,
    /// Young/Daly interval for the most exposed gang (seconds; absent without a write
    /// time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimal_checkpoint_s: Option<u64>,
}

impl SpotClass {
    /// Whether the lost work costs more than spot saves.
    pub fn loses_money(&self) -> bool {
        matches!((self.lost_cost_per_day, self.savings_per_day), (Some(l), Some(s)) if l > s)
    }
}

/// Which limit sets a checkpoint's write time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteLimit {
    /// The storage's write bandwidth, shared by every gang writing at once.
    Storage,
    /// The gang's own NICs.
    Nic,
}

impl WriteLimit {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WriteLimit::Storage => "storage",
            WriteLimit::Nic => "nic",
        }
    }
}

/// How long one class's checkpoints take and the GPU time they idle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointClass {
    pub class: String,
    pub gangs: u32,
    pub size_bytes: u64,
    pub every_s: u64,
    /// The storage its slowest gang writes to (absent: no storage serves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Nodes writing to that storage at once (every checkpointing gang's).
    pub nodes_writing: u32,
    /// Write time of the slowest gang, seconds.
    pub write_s: f64,
    pub limit: WriteLimit,
    /// Share of GPU time idle on checkpoints, percent.
    pub idle_pct: f64,
    /// The class's threshold (`checkpoint max-idle`), percent.
    pub max_idle_pct: f64,
}

impl CheckpointClass {
    pub(crate) fn too_idle(&self) -> bool {
        self.idle_pct > self.max_idle_pct + 1e-9
    }
}

/// One interruptible unit: its nodes (with the GPU-equivalents on each).
struct Unit {
    nodes: Vec<(NodeIdx, String, f64)>,
}

impl Unit {
    fn gpus(&self) -> f64 {
        self.nodes.iter().map(|(_, _, g)| g).sum()
    }
}

/// The units of one class: its gangs, else its GPUs per node.
fn units(c: &Cluster, w: &Workload, wp: &WorkloadPlacement) -> Vec<Unit> {
    let model_of = |ni: NodeIdx, gi: u32| c.gpu_model_name(ni, gi).unwrap_or_default().to_string();
    let mut out = Vec::new();
    for g in &wp.gangs {
        let mut nodes = Vec::new();
        for ng in &g.nodes {
            if let Some(&ni) = c.node_index.get(&ng.node) {
                for &gi in &ng.gpus {
                    nodes.push((ni, model_of(ni, gi), 1.0));
                }
            }
        }
        out.push(Unit { nodes });
    }
    // Other classes: GPU-equivalents per node.
    let mut per_node: BTreeMap<(NodeIdx, String), f64> = BTreeMap::new();
    for m in &wp.mig_instances {
        if let Some(&ni) = c.node_index.get(&m.node) {
            let model = model_of(ni, m.gpu);
            let frac = c
                .models
                .get(&model)
                .and_then(|gm| gm.mig_profile(&m.profile).zip(gm.mig))
                .map(|(p, s)| p.memory_slices as f64 / s.memory_slices.max(1) as f64)
                .unwrap_or(1.0);
            *per_node.entry((ni, model)).or_default() += frac;
        }
    }
    for sh in &wp.shares {
        if let Some(&ni) = c.node_index.get(&sh.node) {
            *per_node.entry((ni, model_of(ni, sh.gpu))).or_default() += 1.0;
        }
    }
    let share = w.packed_milli_per_gpu() as f64 / 1000.0;
    for pk in &wp.packed {
        if let Some(&ni) = c.node_index.get(&pk.node) {
            for &gi in &pk.gpus {
                *per_node.entry((ni, model_of(ni, gi))).or_default() += pk.replicas as f64 * share;
            }
        }
    }
    for ((ni, model), g) in per_node {
        out.push(Unit {
            nodes: vec![(ni, model, g.min(c.nodes[ni].gpus.len() as f64))],
        });
    }
    out
}

/// Interruptions per hour of a unit: the rates of its distinct spot nodes added up.
fn unit_rate(c: &Cluster, u: &Unit) -> f64 {
    let mut nodes: Vec<NodeIdx> = u
        .nodes
        .iter()
        .map(|(n, _, _)| *n)
        .filter(|n| c.node_spot(*n))
        .collect();
    nodes.dedup();
    nodes
        .iter()
        .map(|n| c.nodes[*n].interruptions.unwrap_or(0.0))
        .sum()
}

/// The figures of a placement on cluster `c` (the user's model, names restored).
pub fn compute(c: &Cluster, p: &Placement) -> Option<Economics> {
    let writes = checkpoint_writes(c, p);
    let mut e = Economics::default();
    for wp in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        if let Some(cp) = checkpoint_class(w, wp, &writes) {
            e.checkpoints.push(cp);
        }
        if let Some(sc) = spot_class(c, w, wp, &writes) {
            e.spot.push(sc);
        }
    }
    (!e.spot.is_empty() || !e.checkpoints.is_empty()).then_some(e)
}

/// Per (class, replica): checkpoint write time in seconds, the limit, the storage and
/// the nodes writing to it.
type Writes = BTreeMap<(String, u32), (f64, WriteLimit, Option<String>, u32)>;

fn checkpoint_writes(c: &Cluster, p: &Placement) -> Writes {
    // Gangs that write checkpoints: (class, replica, size, nodes, storage index).
    let mut gangs = Vec::new();
    for wp in &p.workloads {
        let Some(w) = c.workloads.iter().find(|w| w.name == wp.name) else {
            continue;
        };
        let Some(size) = w.checkpoint_size.filter(|_| w.checkpoint.is_some()) else {
            continue;
        };
        for g in &wp.gangs {
            let nodes: Vec<NodeIdx> = g
                .nodes
                .iter()
                .filter_map(|ng| c.node_index.get(&ng.node).copied())
                .collect();
            let storage = nodes.first().and_then(|&n| {
                let s = c.storage_of(n)?;
                c.storages.iter().position(|x| std::ptr::eq(x, s))
            });
            gangs.push((w.name.clone(), g.replica, size, nodes, storage));
        }
    }
    let mut writing: BTreeMap<usize, u32> = BTreeMap::new();
    for (_, _, _, nodes, st) in &gangs {
        if let Some(s) = st {
            *writing.entry(*s).or_default() += nodes.len() as u32;
        }
    }
    let mut out = Writes::new();
    for (class, replica, size, nodes, st) in gangs {
        let bytes = size.0 as f64;
        let n = nodes.len().max(1) as f64;
        // Bytes per second.
        let storage = st.map(|s| {
            let total = writing[&s].max(1) as f64;
            (c.storages[s].write_bandwidth.0 as f64 / 8.0 * n / total, s)
        });
        let nic: Option<f64> = nodes
            .iter()
            .map(|&ni| c.node_nic_bandwidth(ni).map(|b| b.0 as f64 / 8.0))
            .sum();
        let (rate, limit) = match (storage, nic) {
            (Some((s, _)), Some(k)) if k < s => (k, WriteLimit::Nic),
            (Some((s, _)), _) => (s, WriteLimit::Storage),
            (None, Some(k)) => (k, WriteLimit::Nic),
            (None, None) => continue,
        };
        if rate <= 0.0 {
            continue;
        }
        let name = st.map(|s| c.storages[s].name.clone());
        let nodes_writing = st.map(|s| writing[&s]).unwrap_or(nodes.len() as u32);
        out.insert((class, replica), (bytes / rate, limit, name, nodes_writing));
    }
    out
}

fn checkpoint_class(
    w: &Workload,
    wp: &WorkloadPlacement,
    writes: &Writes,
) -> Option<CheckpointClass> {
    let size = w.checkpoint_size?;
    let every = w.checkpoint?;
    // The slowest gang (first by replica among equals).
    let (write, limit, storage, nodes_writing) = wp
        .gangs
        .iter()
        .filter_map(|g| writes.get(&(w.name.clone(), g.replica)))
        .fold(
            None::<&(f64, WriteLimit, Option<String>, u32)>,
            |best, x| match best {
                Some(b) if b.0 >= x.0 => Some(b),
                _ => Some(x),
            },
        )?
        .clone();
    let every_s = every.0 as f64;
    let idle = if every_s + write > 0.0 {
        write / (every_s + write)
    } else {
        0.0
    };
    Some(CheckpointClass {
        class: w.name.clone(),
        gangs: wp.gangs.len() as u32,
        size_bytes: size.0,
        every_s: every.0,
        storage,
        nodes_writing,
        write_s: round4(write),
        limit,
        idle_pct: round4(100.0 * idle),
        max_idle_pct: round4(100.0 * w.max_checkpoint_idle()),
    })
}

fn spot_class(
    c: &Cluster,
    w: &Workload,
    wp: &WorkloadPlacement,
    writes: &Writes,
) -> Option<SpotClass> {
    let units = units(c, w, wp);
    let on_spot: f64 = units
        .iter()
        .flat_map(|u| &u.nodes)
        .filter(|(n, _, _)| c.node_spot(*n))
        .map(|(_, _, g)| g)
        .sum();
    if on_spot <= 0.0 {
        return None;
    }
    let interval_h = match w.kind {
        WorkloadKind::Training => w.checkpoint.map(|d| d.0 as f64 / 3600.0).unwrap_or(0.0),
        _ => 0.0,
    };
    let restart_h = w.restart_time().0 as f64 / 3600.0;
    let mut per_day = 0.0;
    let mut lost = 0.0;
    let mut lost_cost = Some(0.0);
    let mut savings = Some(0.0);
    // Most exposed gang: (rate, replica).
    let mut worst: Option<(f64, u32)> = None;
    for (i, u) in units.iter().enumerate() {
        let rate = unit_rate(c, u);
        if !u.nodes.iter().any(|(n, _, _)| c.node_spot(*n)) {
            continue;
        }
        let l = 24.0 * rate * (interval_h / 2.0 + restart_h) * u.gpus();
        per_day += 24.0 * rate;
        lost += l;
        // Lost work at the unit's average GPU price.
        let price: Option<f64> = u
            .nodes
            .iter()
            .map(|(n, m, g)| c.gpu_price(*n, m).map(|p| p * g))
            .sum();
        lost_cost = lost_cost
            .zip(price)
            .map(|(x, p)| x + l * p / u.gpus().max(1e-9));
        for (n, m, g) in &u.nodes {
            if c.node_spot(*n) {
                let saved = c
                    .list_price(m)
                    .zip(c.gpu_price(*n, m))
                    .map(|(list, own)| 24.0 * (list - own) * g);
                savings = savings.zip(saved).map(|(x, s)| x + s);
            }
        }
        if let Some(g) = wp.gangs.get(i) {
            if worst.is_none_or(|(r, _)| rate > r) {
                worst = Some((rate, g.replica));
            }
        }
    }
    let optimal = worst.and_then(|(rate, replica)| {
        let (write, ..) = writes.get(&(w.name.clone(), replica))?;
        (rate > 0.0).then(|| (2.0 * write * (3600.0 / rate)).sqrt().round() as u64)
    });
    Some(SpotClass {
        class: w.name.clone(),
        gpus_on_spot: round4(on_spot),
        interruptions_per_day: round4(per_day),
        checkpoint_every_s: (w.kind == WorkloadKind::Training)
            .then_some(w.checkpoint.map(|d| d.0))
            .flatten(),
        restart_s: w.restart_time().0,
        lost_gpu_hours_per_day: round4(lost),
        lost_cost_per_day: lost_cost.map(round4),
        savings_per_day: savings.map(round4),
        optimal_checkpoint_s: optimal,
    })
}

pub(crate) const GP930: &str = "GP930";
pub(crate) const GP931: &str = "GP931";

/// Warnings about the figures: a class on spot that loses more than it saves (GP930), a
/// class idle on checkpoints longer than its `max-idle` (GP931). Spanned on the class's
/// `checkpoint` (else the class).
pub fn warnings(c: &Cluster, p: &Placement) -> Vec<Diagnostic> {
    let Some(e) = &p.economics else {
        return Vec::new();
    };
    let span_of = |class: &str| {
        c.workloads
            .iter()
            .find(|w| w.name == class)
            .map(|w| w.checkpoint_span.unwrap_or(w.span))
    };
    let mut out = Vec::new();
    for s in e.spot.iter().filter(|s| s.loses_money()) {
        let optimal = s
            .optimal_checkpoint_s
            .map(|t| format!("; Young/Daly puts the interval that loses least at {}s", t))
            .unwrap_or_default();
        let d = Diagnostic::warning(
            GP930,
            format!(
                "`{}` loses ${:.2} a day to spot interruptions ({:.1} GPU-hours redone), more than the ${:.2} spot saves{optimal}",
                s.class,
                s.lost_cost_per_day.unwrap_or(0.0),
                s.lost_gpu_hours_per_day,
                s.savings_per_day.unwrap_or(0.0)
            ),
        )
        .with_help(
            "checkpoint more often, shorten `restart`, or keep the class off spot nodes with `spot #false`",
        );
        out.push(match span_of(&s.class) {
            Some(sp) => d.at(sp, "interruptions cost more than spot saves"),
            None => d,
        });
    }
    for k in e.checkpoints.iter().filter(|k| k.too_idle()) {
        let why = match k.limit {
            WriteLimit::Storage => format!(
                "storage {} is shared by {} nodes writing at once",
                crate::diag::quoted(k.storage.as_deref().unwrap_or("-")),
                k.nodes_writing
            ),
            WriteLimit::Nic => "the gang's NICs are the limit".to_string(),
        };
        let help = match k.limit {
            WriteLimit::Storage => {
                "add write bandwidth or a `storage` per leaf or pool, checkpoint less often or smaller, or raise `max-idle`"
            }
            WriteLimit::Nic => {
                "faster NICs toward storage, checkpoint less often or smaller (sharded or asynchronous writes), or raise `max-idle`"
            }
        };
        let d = Diagnostic::warning(
            GP931,
            format!(
                "`{}` idles {:.1}% of its GPU time writing checkpoints ({:.0}s per write; {why}), above its {:.1}%",
                k.class, k.idle_pct, k.write_s, k.max_idle_pct
            ),
        )
        .with_help(help);
        out.push(match span_of(&k.class) {
            Some(sp) => d.at(sp, "checkpoints idle the GPUs too long"),
            None => d,
        });
    }
    out
}
