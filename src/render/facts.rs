//! [`Facts`]: the plan and the cluster turned into the vocabulary every target shares,
//! computed once so that the targets cannot disagree: pool names and members, the label
//! keys and values of every node, fabric tiers, quotas, priority order, MIG and sharing
//! configurations per node, and the per-class facts the example manifests need.
//!
//! Decisions that every target inherits (see `docs/render.md`):
//! - a node's pool is its declared `pool`, or its mode (`whole-gpu`, `mig`, ...) when it
//!   has none;
//! - node labels `gpuplan.io/{pool,gpu-model,leaf,spine,core,nvlink-domain}` and one taint
//!   `gpuplan.io/pool=<pool>:NoSchedule` per GPU node, on top of the KDL's own;
//! - resources: whole GPUs `nvidia.com/gpu`, MIG `nvidia.com/mig-<profile>` (`+` -> `.`,
//!   device plugin `mixed` strategy), shared GPUs `nvidia.com/gpu.shared` (device plugin
//!   `renameByDefault`, so that slices never count against whole-GPU quotas);
//! - a team's ceiling caps whole GPUs, its guarantee is what it is entitled to; MIG and
//!   shared quotas are the instances and replicas the plan gives the team's classes.

use super::{GP910, Options};
use crate::diag::Diagnostic;
use crate::model::PoolMode;
use crate::model::{Cluster, Taint, Tier};
use crate::placement::Placement;
use crate::spec::{SwitchTier, WorkloadKind};
use crate::units::compress_names;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub use crate::names::{
    LABEL_PREFIX, MIG_CONFIG_LABEL, MODEL_LABEL, PLUGIN_CONFIG_LABEL, POOL_LABEL,
};
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
pub const SHARED_RESOURCE: &str = "nvidia.com/gpu.shared";

/// One fabric tier that exists in this cluster (innermost first).
#[derive(Clone, Debug, Serialize)]
pub struct TierFacts {
    /// `nvlink`, `leaf`, `spine`, `core`.
    pub name: String,
    /// The node label that carries a node's domain of this tier.
    pub label: String,
    /// Volcano HyperNode tier number (1 = innermost).
    pub number: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct NodeFacts {
    pub name: String,
    pub class: String,
    pub pool: String,
    pub mode: String,
    pub model: Option<String>,
    pub model_short: Option<String>,
    /// Usable GPU indexes (`gpus-down` and cordoned nodes excluded).
    pub gpus: Vec<u32>,
    /// Domain per tier name (`leaf` -> switch name ...), for the tiers the node has.
    pub domains: BTreeMap<String, String>,
    /// Every label gpuplan sets on the node (KDL labels included), sorted.
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub mig_config: Option<String>,
    pub plugin_config: String,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub memory_mib: Option<u64>,
    /// MIG GPUs: index -> profiles (largest first, driver names).
    pub mig: BTreeMap<u32, Vec<String>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PoolFacts {
    pub name: String,
    pub mode: String,
    pub nodes: Vec<String>,
    /// `nodes` compressed into hostlist ranges, comma-joined.
    pub range: String,
    pub models: Vec<String>,
    /// Highest priority rank of the classes placed in the pool (0 = none).
    pub rank: u32,
    pub preemptible: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct TeamFacts {
    pub name: String,
    pub guarantee: u32,
    pub ceiling: u32,
    pub parent: Option<String>,
    /// Highest priority rank among the team's classes (0 = none).
    pub rank: u32,
    /// Priorities the team's classes use, highest first.
    pub priorities: Vec<String>,
    /// MIG resource name -> instances planned for the team's classes.
    pub mig: BTreeMap<String, u32>,
    /// Shared-GPU replicas planned for the team's classes.
    pub shared: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct PriorityFacts {
    pub name: String,
    pub value: i64,
    /// 1 = lowest.
    pub rank: u32,
    pub never: bool,
    /// Priorities this one may preempt (explicit list, or every lower one).
    pub preempts: Vec<String>,
    pub description: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ClassFacts {
    pub name: String,
    pub kind: String,
    pub team: String,
    pub priority: String,
    pub replicas: u32,
    pub replicas_placed: u32,
    pub pool: Option<String>,
    pub model: Option<String>,
    pub model_short: Option<String>,
    /// Resource each pod asks for, and how many.
    pub resource: String,
    pub per_pod: u32,
    /// Pods of one gang (training), 1 otherwise.
    pub pods: u32,
    pub gang_gpus: u32,
    pub preemptible: bool,
    /// Required / preferred tier (`nvlink`, `node`, `leaf`, ...).
    pub required: Option<String>,
    pub preferred: Option<String>,
    /// Where replica 0 landed at the required tier: (label, value).
    pub pin_label: Option<String>,
    pub pin_value: Option<String>,
    /// Taints the pods must tolerate (pool taint and the nodes' own).
    pub tolerations: Vec<Taint>,
}

pub struct Facts<'a> {
    pub c: &'a Cluster,
    pub plan: &'a Placement,
    pub slurm_version: Vec<u32>,
    pub nodes: Vec<NodeFacts>,
    pub pools: Vec<PoolFacts>,
    pub tiers: Vec<TierFacts>,
    pub teams: Vec<TeamFacts>,
    pub priorities: Vec<PriorityFacts>,
    pub classes: Vec<ClassFacts>,
    /// MIG configurations: name -> per-GPU layouts (gpu index -> profiles) of one node.
    pub mig_configs: BTreeMap<String, BTreeMap<u32, Vec<String>>>,
    /// Device-plugin configurations: name -> (sharing strategy, replicas).
    pub plugin_configs: BTreeMap<String, (String, u32)>,
}

/// `nvidia.com/mig-<profile>` with `+` written as `.` (device plugin naming).
pub fn mig_resource(profile: &str) -> String {
    format!("nvidia.com/mig-{}", profile.replace('+', "."))
}

pub use crate::names::{is_dns_label, is_label_value};

/// Hostlist ranges of names, comma-joined (`dgx-[001-016,018-032]`).
pub fn range(names: &[String]) -> String {
    compress_names(names).join(",")
}

fn tier_label(tier: &str) -> String {
    if tier == "nvlink" {
        format!("{LABEL_PREFIX}/nvlink-domain")
    } else {
        format!("{LABEL_PREFIX}/{tier}")
    }
}

fn switch_tier_name(t: SwitchTier) -> &'static str {
    match t {
        SwitchTier::Leaf => "leaf",
        SwitchTier::Spine => "spine",
        SwitchTier::Core => "core",
    }
}

/// Short text for a layout: `3g.40gb-2g.20gb-1g.10gbx2`.
fn layout_token(profiles: &[String]) -> String {
    let mut counts: Vec<(String, u32)> = Vec::new();
    for p in profiles {
        match counts.last_mut() {
            Some((q, n)) if q == p => *n += 1,
            _ => counts.push((p.clone(), 1)),
        }
    }
    counts
        .iter()
        .map(|(p, n)| {
            let p = p.replace('+', ".");
            if *n == 1 { p } else { format!("{p}x{n}") }
        })
        .collect::<Vec<_>>()
        .join("-")
}

impl<'a> Facts<'a> {
    pub fn build(
        c: &'a Cluster,
        plan: &'a Placement,
        opts: &Options,
    ) -> Result<Self, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let tiers = tiers_of(c);
        let pool_of: BTreeMap<&str, (String, PoolMode)> = plan
            .pools
            .iter()
            .map(|p| {
                let name = p
                    .pool
                    .clone()
                    .unwrap_or_else(|| p.mode.as_str().to_string());
                (p.node.as_str(), (name, p.mode))
            })
            .collect();

        // MIG layouts per node, and the named configurations they form.
        let mut mig: BTreeMap<&str, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
        for l in &plan.mig_layouts {
            mig.entry(l.node.as_str())
                .or_default()
                .insert(l.gpu, l.profiles.clone());
        }
        let mut mig_configs: BTreeMap<String, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
        let mut node_mig_config: BTreeMap<&str, String> = BTreeMap::new();
        let mut mixed = 0;
        for (node, layout) in &mig {
            let n = c.node(node).map(|n| n.gpus.len()).unwrap_or(0);
            let first = layout.values().next().cloned().unwrap_or_default();
            let uniform = layout.len() == n && layout.values().all(|l| *l == first);
            let name = match mig_configs.iter().find(|(_, l)| *l == layout) {
                Some((name, _)) => name.clone(),
                None if uniform && layout_token(&first).len() <= 58 => {
                    format!("all-{}", layout_token(&first))
                }
                None => {
                    mixed += 1;
                    format!("gpuplan-mixed-{mixed}")
                }
            };
            mig_configs.insert(name.clone(), layout.clone());
            node_mig_config.insert(node, name);
        }

        // Sharing factor per node (the device plugin applies one replica count per node).
        let mut node_share: BTreeMap<&str, (String, u32)> = BTreeMap::new();
        let workload: BTreeMap<&str, &crate::model::Workload> =
            c.workloads.iter().map(|w| (w.name.as_str(), w)).collect();
        for w in &plan.workloads {
            let Some(m) = workload.get(w.name.as_str()).copied() else {
                continue;
            };
            for s in &w.shares {
                let strategy = match m.share {
                    Some(crate::model::Isolation::Mps) => "mps",
                    _ => "time-slicing",
                };
                let e = node_share
                    .entry(s.node.as_str())
                    .or_insert((strategy.to_string(), 1));
                e.1 = e.1.max(m.per_gpu.unwrap_or(1));
            }
        }
        let mut plugin_configs: BTreeMap<String, (String, u32)> = BTreeMap::new();
        plugin_configs.insert("default".into(), ("none".into(), 1));
        if !mig.is_empty() {
            plugin_configs.insert("mig-mixed".into(), ("mig".into(), 1));
        }

        let mut nodes = Vec::new();
        for n in &c.nodes {
            let Some((pool, mode)) = pool_of.get(n.name.as_str()) else {
                continue;
            };
            let class = c.classes.get(&n.class);
            let gpus: Vec<u32> = n.usable_gpus().map(|g| g.index).collect();
            let model = n.gpus.iter().find_map(|g| g.model.clone());
            let model_short = model
                .as_ref()
                .and_then(|m| c.models.get(m))
                .map(|m| m.short_name.clone());
            let mut domains = BTreeMap::new();
            if let Some(d) = n.mnnvl.first() {
                domains.insert("nvlink".to_string(), c.nvlink_domains[*d].name.clone());
            }
            let mut sw = n.leaf();
            while let Some(s) = sw {
                let s = &c.switches[s];
                domains.insert(switch_tier_name(s.tier).to_string(), s.name.clone());
                sw = s.parent;
            }
            let mut labels: BTreeMap<String, String> = BTreeMap::new();
            if let Some(cl) = class {
                labels.extend(cl.labels.clone());
            }
            labels.extend(n.labels.clone());
            labels.insert(POOL_LABEL.into(), pool.clone());
            if let Some(m) = &model {
                labels.insert(MODEL_LABEL.into(), m.clone());
            }
            for (t, v) in &domains {
                labels.insert(tier_label(t), v.clone());
            }
            let mig_config = node_mig_config.get(n.name.as_str()).cloned();
            let plugin_config = if let Some((strategy, replicas)) = node_share.get(n.name.as_str())
            {
                let name = format!(
                    "{}-{replicas}",
                    if strategy == "mps" {
                        "mps"
                    } else {
                        "time-slicing"
                    }
                );
                plugin_configs.insert(name.clone(), (strategy.clone(), *replicas));
                name
            } else if mig_config.is_some() || *mode == PoolMode::Mig {
                "mig-mixed".to_string()
            } else {
                "default".to_string()
            };
            if let Some(mc) = &mig_config {
                labels.insert(MIG_CONFIG_LABEL.into(), mc.clone());
            } else if model
                .as_ref()
                .and_then(|m| c.models.get(m))
                .is_some_and(|m| m.mig_capable)
            {
                labels.insert(MIG_CONFIG_LABEL.into(), "all-disabled".into());
            }
            labels.insert(PLUGIN_CONFIG_LABEL.into(), plugin_config.clone());
            for (k, v) in &labels {
                if !is_label_value(v) {
                    errors.push(
                        Diagnostic::error(
                            GP910,
                            format!(
                                "node `{}`: label `{k}={v}` is not a valid Kubernetes label value",
                                n.name
                            ),
                        )
                        .at(n.span, "this node")
                        .with_help("label values are at most 63 letters, digits, `-`, `_` and `.`"),
                    );
                }
            }
            let mut taints: Vec<Taint> = class.map(|c| c.taints.clone()).unwrap_or_default();
            taints.extend(n.taints.clone());
            taints.push(Taint {
                key: POOL_LABEL.into(),
                value: Some(pool.clone()),
                effect: "NoSchedule".into(),
            });
            taints.sort();
            taints.dedup();
            nodes.push(NodeFacts {
                name: n.name.clone(),
                class: n.class.clone(),
                pool: pool.clone(),
                mode: mode.as_str().to_string(),
                model,
                model_short,
                gpus,
                domains,
                labels,
                taints,
                mig_config,
                plugin_config,
                sockets: class.map(|c| c.sockets).unwrap_or(1).max(1),
                cores_per_socket: class.map(|c| c.cores_per_socket).unwrap_or(1).max(1),
                threads_per_core: class.map(|c| c.threads_per_core).unwrap_or(1).max(1),
                memory_mib: class.and_then(|c| c.memory).map(|m| m.mib()),
                mig: mig.get(n.name.as_str()).cloned().unwrap_or_default(),
            });
        }
        nodes.sort_by(|a, b| a.name.cmp(&b.name));

        let priorities = priorities_of(c);
        let rank_of = |p: &str| {
            priorities
                .iter()
                .find(|x| x.name == p)
                .map(|x| x.rank)
                .unwrap_or(0)
        };
        let classes = classes_of(plan, &nodes, &tiers, &workload);

        let mut pools: Vec<PoolFacts> = Vec::new();
        for n in &nodes {
            match pools.iter_mut().find(|p| p.name == n.pool) {
                Some(p) => {
                    p.nodes.push(n.name.clone());
                    if let Some(m) = &n.model {
                        if !p.models.contains(m) {
                            p.models.push(m.clone());
                        }
                    }
                }
                None => pools.push(PoolFacts {
                    name: n.pool.clone(),
                    mode: n.mode.clone(),
                    nodes: vec![n.name.clone()],
                    range: String::new(),
                    models: n.model.iter().cloned().collect(),
                    rank: 0,
                    preemptible: false,
                }),
            }
        }
        for p in &mut pools {
            p.range = range(&p.nodes);
            p.models.sort();
            for cl in classes
                .iter()
                .filter(|cl| cl.pool.as_deref() == Some(&p.name))
            {
                p.rank = p.rank.max(rank_of(&cl.priority));
                p.preemptible |= cl.preemptible;
            }
        }
        pools.sort_by(|a, b| a.name.cmp(&b.name));

        let teams = teams_of(c, plan, &priorities, &rank_of);
        for t in &teams {
            if !is_dns_label(&t.name) {
                errors.push(team_name_error(c, &t.name));
            }
        }
        for p in &priorities {
            if !is_dns_label(&p.name) || p.value > 1_000_000_000 || p.value < -2_147_483_648 {
                errors.push(priority_error(c, p));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Facts {
            c,
            plan,
            slurm_version: opts
                .slurm_version
                .clone()
                .unwrap_or_else(|| c.slurm_version.clone()),
            nodes,
            pools,
            tiers,
            teams,
            priorities,
            classes,
            mig_configs,
            plugin_configs,
        })
    }

    pub fn tier(&self, name: &str) -> Option<&TierFacts> {
        self.tiers.iter().find(|t| t.name == name)
    }

    /// The innermost fabric tier at or above `name` that exists here.
    pub fn tier_at_least(&self, name: &str) -> Option<&TierFacts> {
        let want = Tier::parse(name)?;
        self.tiers
            .iter()
            .find(|t| Tier::parse(&t.name).is_some_and(|x| x >= want))
    }

    /// The header comment every file starts with.
    pub fn header(&self) -> String {
        format!(
            "generated by gpuplan {} from cluster `{}`; do not edit, re-render instead",
            env!("CARGO_PKG_VERSION"),
            self.c.name
        )
    }
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

fn tiers_of(c: &Cluster) -> Vec<TierFacts> {
    let mut names = Vec::new();
    if c.nvlink_domains.iter().any(|d| d.multi_node) {
        names.push("nvlink");
    }
    for t in [SwitchTier::Leaf, SwitchTier::Spine, SwitchTier::Core] {
        if c.switches.iter().any(|s| s.tier == t) {
            names.push(switch_tier_name(t));
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(i, n)| TierFacts {
            name: n.to_string(),
            label: tier_label(n),
            number: i as u32 + 1,
        })
        .collect()
}

fn priorities_of(c: &Cluster) -> Vec<PriorityFacts> {
    let mut ps: Vec<&crate::model::Priority> = c.priorities.iter().collect();
    ps.sort_by(|a, b| b.value.cmp(&a.value).then(a.name.cmp(&b.name)));
    let n = ps.len() as u32;
    ps.iter()
        .enumerate()
        .map(|(i, p)| {
            let preempts = if p.never_preempts {
                Vec::new()
            } else if !p.preempts.is_empty() {
                let mut v = p.preempts.clone();
                v.sort();
                v
            } else {
                let mut v: Vec<String> = c
                    .priorities
                    .iter()
                    .filter(|q| q.value < p.value)
                    .map(|q| q.name.clone())
                    .collect();
                v.sort();
                v
            };
            PriorityFacts {
                name: p.name.clone(),
                value: p.value,
                rank: n - i as u32,
                never: p.never_preempts,
                preempts,
                description: p.description.clone().unwrap_or_default(),
            }
        })
        .collect()
}

fn teams_of(
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
                shared += w.shares.iter().map(|s| s.replicas).sum::<u32>();
            }
            let used: BTreeSet<&str> = own.iter().map(|w| w.priority.as_str()).collect();
            TeamFacts {
                name: t.name.clone(),
                guarantee: t.guarantee,
                ceiling: t.ceiling(),
                parent: t.parent.clone(),
                rank: used.iter().map(|p| rank_of(p)).max().unwrap_or(0),
                priorities: priorities
                    .iter()
                    .filter(|p| used.contains(p.name.as_str()))
                    .map(|p| p.name.clone())
                    .collect(),
                mig,
                shared,
            }
        })
        .collect()
}

fn classes_of(
    plan: &Placement,
    nodes: &[NodeFacts],
    tiers: &[TierFacts],
    workload: &BTreeMap<&str, &crate::model::Workload>,
) -> Vec<ClassFacts> {
    let by_name: BTreeMap<&str, &NodeFacts> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let node = |n: &str| by_name.get(n).copied();
    // Tolerations per pool: every taint of its nodes (computed once, not per class).
    let mut pool_taints: BTreeMap<&str, Vec<Taint>> = BTreeMap::new();
    for n in nodes {
        pool_taints
            .entry(n.pool.as_str())
            .or_default()
            .extend(n.taints.iter().cloned());
    }
    for v in pool_taints.values_mut() {
        v.sort();
        v.dedup();
    }
    let mut out = Vec::new();
    for w in &plan.workloads {
        let Some(m) = workload.get(w.name.as_str()).copied() else {
            continue;
        };
        // Where the class runs: the first node of replica 0 / first instance / share.
        let first_node = w
            .gangs
            .first()
            .and_then(|g| g.nodes.first().map(|n| n.node.clone()))
            .or_else(|| w.mig_instances.first().map(|i| i.node.clone()))
            .or_else(|| w.shares.first().map(|s| s.node.clone()));
        let nf = first_node.as_deref().and_then(node);
        let (resource, per_pod) = if let Some(i) = w.mig_instances.first() {
            (mig_resource(&i.profile), 1)
        } else if !w.shares.is_empty() {
            (SHARED_RESOURCE.to_string(), 1)
        } else if m.kind == WorkloadKind::Training {
            let per_node = w
                .gangs
                .first()
                .and_then(|g| g.nodes.first())
                .map(|n| n.gpus.len() as u32)
                .unwrap_or_else(|| m.gpus_per_node.unwrap_or(m.gang_gpus.max(1)));
            (GPU_RESOURCE.to_string(), per_node.max(1))
        } else {
            (GPU_RESOURCE.to_string(), m.gpus_per_replica.max(1))
        };
        let pods = if m.kind == WorkloadKind::Training {
            w.gangs
                .first()
                .map(|g| g.nodes.len() as u32)
                .unwrap_or_else(|| m.gang_gpus.div_ceil(per_pod.max(1)))
                .max(1)
        } else {
            1
        };
        let required = m.required_tier.map(|t| t.as_str().to_string());
        let (pin_label, pin_value) = match (&required, nf) {
            (Some(t), Some(n)) if t == "node" => (
                Some("kubernetes.io/hostname".to_string()),
                Some(n.name.clone()),
            ),
            (Some(t), Some(n)) => {
                let want = Tier::parse(t);
                tiers
                    .iter()
                    .find(|x| Tier::parse(&x.name) >= want)
                    .and_then(|x| {
                        n.domains
                            .get(&x.name)
                            .map(|v| (Some(x.label.clone()), Some(v.clone())))
                    })
                    .unwrap_or((None, None))
            }
            _ => (None, None),
        };
        let tolerations: Vec<Taint> = nf
            .and_then(|n| pool_taints.get(n.pool.as_str()))
            .cloned()
            .unwrap_or_default();
        out.push(ClassFacts {
            name: w.name.clone(),
            kind: w.kind.clone(),
            team: w.team.clone(),
            priority: w.priority.clone(),
            replicas: w.replicas_requested,
            replicas_placed: w.replicas_placed,
            pool: nf.map(|n| n.pool.clone()),
            model: nf
                .and_then(|n| n.model.clone())
                .or_else(|| m.models.first().cloned()),
            model_short: nf.and_then(|n| n.model_short.clone()),
            resource,
            per_pod,
            pods,
            gang_gpus: m.gang_gpus,
            preemptible: m.preemptible,
            required,
            preferred: m.preferred_tier.map(|t| t.as_str().to_string()),
            pin_label,
            pin_value,
            tolerations,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
