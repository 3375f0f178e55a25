//! Slurm: a `slurm.conf` fragment (GRES, cons_tres, explicit priority and preemption
//! plugins, topology plugin, `NodeName` and `PartitionName` lines), `gres.conf` (one
//! line per GPU group with its cores, one `MultipleFiles` line per MIG device),
//! `topology.conf` (`topology/tree` by default; `topology/block` with `BlockSizes` only
//! when the KDL names Slurm 24.05 or later), a `sacctmgr` script for QOS and team limits,
//! and an example batch script per training class.
//!
//! Default syntax is Slurm 22.05 (Debian 12), so nothing newer is emitted unless asked.
//! Node and GRES lines are in [`nodes`], the switch tree and blocks in [`topology`].

mod imex;
mod nodes;
mod topology;
mod topology_yaml;

use super::facts::{Ask, ClassFacts, Facts, GroupFacts};
use super::{Files, run};
use crate::diag::Diagnostic;
use crate::model::PoolMode;
use minijinja::{Environment, Value};
use nodes::{GresLine, NodeLine};
use serde::Serialize;
use std::collections::BTreeMap;
use topology::{Switch, Topology};

#[derive(Serialize)]
struct Partition {
    name: String,
    nodes: String,
    tier: u32,
    preempt_mode: &'static str,
    default: bool,
    /// `Topology=`: the topology.yaml topology of the partition (Slurm 25.05+).
    topology: Option<&'static str>,
}

#[derive(Serialize)]
struct Qos {
    name: String,
    priority: i64,
    preempts: String,
}

#[derive(Serialize)]
struct Account {
    name: String,
    parent: Option<String>,
    fairshare: u32,
    /// The team declares its weight (Fairshare = weight, not its guarantee).
    weighted: bool,
    /// `GrpTRES`: `gres/gpu=<ceiling>`, plus the shards / MPS percent the plan gives
    /// the team's classes.
    tres: String,
    qos: String,
    default_qos: Option<String>,
}

#[derive(Serialize)]
struct Ctx {
    header: String,
    version: String,
    cluster: String,
    topology_plugin: Option<&'static str>,
    /// `CR_CPU_Memory` when every node declares its memory, else `CR_CPU`.
    select: &'static str,
    gres_types: String,
    tres: String,
    nodes: Vec<NodeLine>,
    partitions: Vec<Partition>,
    gres: Vec<GresLine>,
    switches: Vec<Switch>,
    blocks: Vec<Switch>,
    block_size: u32,
    /// topology.yaml's topologies (Slurm 25.05+; empty before).
    topologies: Vec<topology_yaml::Named>,
    #[serde(skip)]
    pool_topology: BTreeMap<String, &'static str>,
    qos: Vec<Qos>,
    accounts: Vec<Account>,
    /// `SwitchType=switch/nvidia_imex`: every job gets an IMEX channel.
    imex: bool,
}

/// The batch script of one placement group: a job per gang or replica (an array when
/// the group has several).
#[derive(Serialize)]
struct JobCtx<'a> {
    header: &'a str,
    about: String,
    name: &'a str,
    class: &'a str,
    account: &'a str,
    qos: &'a str,
    partition: String,
    array: u32,
    nodes: u32,
    gres: Option<String>,
    cpus: Option<u64>,
    mem: Option<String>,
    gpu_memory: Option<String>,
    switches: bool,
    segment: bool,
    /// `--constraint`: the group's GPU model and pinned domain, and the capacity that
    /// keeps it off spot nodes (or its nodes on one capacity).
    constraint: Option<String>,
    requeue: bool,
    nccl: &'a [(String, String)],
    training: bool,
    /// Its gangs span several nodes of one multi-node NVLink domain and slurm.conf
    /// gives every job an IMEX channel.
    imex: bool,
}

pub(super) fn render(
    f: &Facts,
    env: &Environment,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Files, Diagnostic> {
    warnings.extend(cpu_warning(f));
    let yaml = f.slurm_version.as_slice() >= topology_yaml::TOPOLOGY_YAML.as_slice();
    let block = !yaml && f.slurm_version.as_slice() >= [24, 5].as_slice();
    let topo = topology::of(f, block);
    let use_block = block && !topo.blocks.is_empty();
    let mut ctx = if yaml {
        let named = topology_yaml::of(f, &topo);
        let mut ctx = context(f, topo, false);
        ctx.topology_plugin = None;
        for p in &mut ctx.partitions {
            p.topology = named.of_pool.get(&p.name).copied();
        }
        ctx.pool_topology = named.of_pool;
        ctx.topologies = named.list;
        ctx
    } else {
        context(f, topo, use_block)
    };
    ctx.imex = imex::enabled(f, warnings);
    let mut files = Files::new();
    // One conversion to template values serves every file.
    let values = Value::from_serialize(&ctx);
    for name in ["slurm.conf", "gres.conf", "accounting.conf"] {
        files.insert(name.into(), run(env, &format!("slurm/{name}.j2"), &values)?);
    }
    if ctx.topology_plugin.is_some() {
        files.insert(
            "topology.conf".into(),
            run(env, "slurm/topology.conf.j2", &values)?,
        );
    }
    if !ctx.topologies.is_empty() {
        files.insert(
            "topology.yaml".into(),
            run(env, "slurm/topology.yaml.j2", &values)?,
        );
    }
    files.insert(
        "sacctmgr.sh".into(),
        run(env, "slurm/sacctmgr.sh.j2", &values)?,
    );
    for c in &f.classes {
        for g in &c.groups {
            files.insert(
                format!("workloads/{}.sbatch", g.name),
                run(
                    env,
                    "slurm/job.sbatch.j2",
                    &job_ctx(f, &ctx.header, c, g, &ctx),
                )?,
            );
        }
    }
    Ok(files)
}

/// GP919 where Slurm cannot carry the plan: nodes whose planned jobs (each at least
/// one CPU, packed ones their requests) need more CPUs than the node has. Only without
/// declared authorities: the planner counts Slurm's job CPUs for Slurm classes.
fn cpu_warning(f: &Facts) -> Option<Diagnostic> {
    if f.c.authorities_declared() {
        return None;
    }
    let mut need: std::collections::BTreeMap<&str, u64> = Default::default();
    let cpus = |c: &ClassFacts| c.cpu_milli.div_ceil(1000).max(1);
    for w in &f.plan.workloads {
        let Some(c) = f.classes.iter().find(|c| c.name == w.name) else {
            continue;
        };
        let jobs = w
            .gangs
            .iter()
            .flat_map(|g| g.nodes.iter().map(|n| (n.node.as_str(), 1)))
            .chain(w.mig_instances.iter().map(|i| (i.node.as_str(), 1)))
            .chain(
                w.shares
                    .iter()
                    .map(|s| (s.node.as_str(), s.replicas as u64)),
            )
            .chain(
                w.packed
                    .iter()
                    .map(|p| (p.node.as_str(), p.replicas as u64)),
            );
        for (node, k) in jobs {
            *need.entry(node).or_insert(0) += k * cpus(c);
        }
    }
    let over: Vec<String> = f
        .nodes
        .iter()
        .filter(|n| {
            let has = (n.sockets * n.cores_per_socket * n.threads_per_core) as u64;
            need.get(n.name.as_str()).is_some_and(|k| *k > has)
        })
        .map(|n| n.name.clone())
        .collect();
    (!over.is_empty()).then(|| {
        Diagnostic::warning(
            super::GP919,
            format!(
                "target `slurm` cannot carry the plan on {}: its jobs there need more CPUs than the node has (every Slurm job takes at least one CPU)",
                super::facts::range(&over)
            ),
        )
        .with_help("declare the scheduler (`cluster { scheduler \"slurm\" }`): the plan then counts Slurm's job CPUs; or declare the node class's real `cpu`")
    })
}

/// The context of the configuration files; `use_block`: blocks replace the switch tree.
fn context(f: &Facts, topo: Topology, use_block: bool) -> Ctx {
    let topology_plugin = if use_block {
        Some("topology/block")
    } else if !topo.switches.is_empty() {
        Some("topology/tree")
    } else {
        None
    };
    let gres = nodes::node_gres_all(&f.nodes);
    Ctx {
        header: f.header(),
        version: version_text(&f.slurm_version),
        cluster: f.c.name.to_lowercase(),
        topology_plugin,
        select: if f.nodes.iter().all(|n| n.memory_mib.is_some()) {
            "CR_CPU_Memory"
        } else {
            "CR_CPU"
        },
        gres_types: nodes::gres_types(&f.nodes),
        tres: nodes::tres(&gres),
        nodes: nodes::node_lines(&f.nodes, &gres),
        partitions: partitions(f),
        gres: nodes::gres_lines(f),
        switches: topo.switches,
        blocks: if use_block { topo.blocks } else { Vec::new() },
        block_size: topo.block_size,
        topologies: Vec::new(),
        pool_topology: BTreeMap::new(),
        qos: qos(f),
        accounts: accounts(f),
        imex: false,
    }
}

/// `22.05` (major and minor, the minor on two digits), or the parts as given.
fn version_text(v: &[u32]) -> String {
    match v {
        [a, b, ..] => format!("{a}.{b:02}"),
        _ => v.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
    }
}

/// One partition per pool. The default is the largest whole-GPU pool (22.05 logs an
/// error without one); PriorityTier follows the highest priority placed in the pool.
fn partitions(f: &Facts) -> Vec<Partition> {
    let default = f
        .pools
        .iter()
        .max_by(|a, b| {
            (a.mode == PoolMode::WholeGpu, a.nodes.len())
                .cmp(&(b.mode == PoolMode::WholeGpu, b.nodes.len()))
                .then(b.name.cmp(&a.name))
        })
        .map(|p| p.name.as_str());
    f.pools
        .iter()
        .map(|p| Partition {
            default: Some(p.name.as_str()) == default,
            name: p.name.clone(),
            nodes: p.range.clone(),
            tier: p.rank.max(1),
            preempt_mode: if p.preemptible { "REQUEUE" } else { "OFF" },
            topology: None,
        })
        .collect()
}

/// One QOS per priority, with the priorities it preempts.
fn qos(f: &Facts) -> Vec<Qos> {
    f.priorities
        .iter()
        .map(|p| Qos {
            name: p.name.clone(),
            priority: p.value.max(0),
            preempts: p.preempts.join(","),
        })
        .collect()
}

/// One account per team: fairshare = its weight, else its guarantee, GPU limit = ceiling, the QOS of the
/// team's priorities (the lowest as default).
fn accounts(f: &Facts) -> Vec<Account> {
    f.teams
        .iter()
        .map(|t| Account {
            name: t.name.clone(),
            parent: t.parent.clone(),
            fairshare: t.weight.unwrap_or(t.guarantee).max(1),
            weighted: t.weight.is_some(),
            tres: account_tres(f, t),
            qos: t.priorities.join(","),
            default_qos: t.priorities.last().cloned(),
        })
        .collect()
}

/// An account's `GrpTRES`: whole GPUs up to the team's ceiling; Slurm counts a MIG
/// device as one `gres/gpu`, so the MIG devices the plan gives the team's classes (and
/// its sub-teams': a parent account's limit covers its children's jobs) are added, and
/// each MIG type is limited to them (`gres/gpu:<profile>`); and the shards / MPS units
/// its classes' shared replicas are planned to take.
fn account_tres(f: &Facts, t: &super::facts::TeamFacts) -> String {
    let mut units: std::collections::BTreeMap<String, u64> = Default::default();
    let mut mig = 0u64;
    for c in f
        .classes
        .iter()
        .filter(|c| f.c.team_chain(&c.team).iter().any(|x| x.name == t.name))
    {
        for g in &c.groups {
            match &g.ask {
                Ask::Mig { profile } => {
                    mig += g.count as u64;
                    *units.entry(format!("gres/gpu:{profile}")).or_insert(0) += g.count as u64;
                }
                Ask::Shared { thousandths, .. } => {
                    let kind = gres(f, g).and_then(|s| s.split(':').next().map(str::to_string));
                    let key = if kind.as_deref() == Some("mps") {
                        "gres/mps"
                    } else {
                        "gres/shard"
                    };
                    *units.entry(key.to_string()).or_insert(0) +=
                        g.count as u64 * *thousandths as u64;
                }
                _ => {}
            }
        }
    }
    let mut parts = vec![format!("gres/gpu={}", t.ceiling as u64 + mig)];
    parts.extend(units.iter().map(|(k, v)| format!("{k}={v}")));
    parts.join(",")
}

/// The batch script of a group: its partition (the pool), one node per pod, the GRES
/// each pod asks (whole GPUs of its model, a MIG device, or shards / MPS percent of one
/// GPU), the class's CPUs and memory, one switch (tree) or one segment (block) for a
/// gang pinned to a leaf or NVLink domain when its nodes are under a switch of
/// topology.conf (or in a block), and `--constraint` on the GPU model, the pinned
/// domain and the capacity.
fn job_ctx<'a>(
    f: &Facts,
    header: &'a str,
    c: &'a ClassFacts,
    g: &'a GroupFacts,
    ctx: &Ctx,
) -> JobCtx<'a> {
    let group_nodes = || f.nodes_named(&g.nodes);
    let tight = g
        .pin
        .as_ref()
        .is_some_and(|p| p.tier == "leaf" || p.tier == "nvlink");
    let use_block = !ctx.blocks.is_empty();
    let block_tier = if f.tier("nvlink").is_some() {
        "nvlink"
    } else {
        "leaf"
    };
    let reaches = |tier: &str| group_nodes().all(|n| n.domains.contains_key(tier));
    // topology.yaml (25.05+): the topology of the group's partitions decides.
    let named = |name: &str| {
        !ctx.pool_topology.is_empty()
            && g.pools
                .iter()
                .all(|p| ctx.pool_topology.get(p).copied() == Some(name))
    };
    let (switches, segment) = if ctx.topologies.is_empty() {
        (
            tight && !use_block && !ctx.switches.is_empty() && reaches("leaf"),
            tight && use_block && reaches(block_tier),
        )
    } else {
        (
            tight && named(topology_yaml::TREE) && reaches("leaf"),
            tight && named(topology_yaml::BLOCK) && reaches("nvlink"),
        )
    };
    JobCtx {
        header,
        about: super::workload::describe(c, g),
        name: &g.name,
        class: &c.name,
        account: &c.team,
        qos: &c.priority,
        partition: g.pools.join(","),
        array: g.count,
        nodes: g.pods,
        gres: gres(f, g),
        cpus: (c.cpu_milli > 0).then(|| c.cpu_milli.div_ceil(1000)),
        mem: memory(f, c, g).map(|m| format!("{m}M")),
        gpu_memory: c.gpu_memory.map(super::workload::memory_quantity),
        switches,
        segment,
        constraint: constraint(f, c, g),
        requeue: c.preemptible,
        nccl: &g.nccl,
        training: c.kind == "training",
        imex: ctx.imex
            && c.kind == "training"
            && g.pods > 1
            && imex::one_domain(f.c, g.nodes.iter().map(String::as_str)),
    }
}

/// `--mem` of one pod of a group, in MiB: the class's `requests memory=`, else its share
/// of the node's memory in proportion to its share of the node's GPUs (or, CPU-only,
/// of its CPUs), on the group's smallest node. Slurm gives a job without `--mem` all of
/// a node's memory when memory is a consumable resource, so every job says how much.
/// None where nodes declare no memory (then memory is not consumable).
fn memory(f: &Facts, c: &ClassFacts, g: &GroupFacts) -> Option<u64> {
    if c.memory > 0 {
        return Some(c.memory.div_ceil(1 << 20));
    }
    f.nodes_named(&g.nodes)
        .map(|n| {
            let mem = n.memory_mib? as f64;
            let gpus = n.gpus.len().max(1) as f64;
            let share = match &g.ask {
                Ask::Whole { gpus: k } => *k as f64 / gpus,
                Ask::Mig { profile } => mig_share(f, n, profile) / gpus,
                Ask::Shared { thousandths, .. } => *thousandths as f64 / 1000.0 / gpus,
                Ask::Cpu => {
                    let cpus = (n.sockets * n.cores_per_socket * n.threads_per_core) as f64;
                    (c.cpu_milli as f64 / 1000.0 / cpus.max(1.0)).min(1.0)
                }
            };
            Some((mem * share).floor().max(1.0) as u64)
        })
        .min()
        .flatten()
}

/// The share of one GPU a MIG profile takes: its memory slices over the GPU's.
fn mig_share(f: &Facts, n: &super::facts::NodeFacts, profile: &str) -> f64 {
    // The node's model with this profile (a node may have GPUs of several models).
    n.model
        .iter()
        .chain(n.gpu_models.values().map(|m| &m.0))
        .filter_map(|m| f.c.models.get(m))
        .find_map(|m| {
            let spec = m.mig?;
            let p = m.mig_profile(profile)?;
            Some(p.memory_slices as f64 / spec.memory_slices.max(1) as f64)
        })
        .unwrap_or(1.0)
}

/// The `--gres` of one pod of a group: `gpu:<model>:<n>`, `gpu:<profile>:1`, or
/// `shard:<thousandths>` (`mps:<thousandths>` on nodes shared by MPS).
fn gres(f: &Facts, g: &GroupFacts) -> Option<String> {
    match &g.ask {
        // A gang over nodes of several GPU models asks for untyped GPUs.
        Ask::Whole { gpus } => match g.model_shorts.as_slice() {
            [t] => Some(format!("gpu:{t}:{gpus}")),
            _ => Some(format!("gpu:{gpus}")),
        },
        Ask::Mig { profile } => Some(format!("gpu:{profile}:1")),
        Ask::Shared { thousandths, .. } => {
            let mps = f
                .nodes_named(&g.nodes)
                .all(|n| nodes::sharing_gres(f, n) == Some("mps"));
            let kind = if mps { "mps" } else { "shard" };
            Some(format!("{kind}:{thousandths}"))
        }
        Ask::Cpu => None,
    }
}

/// The features a group's nodes must have: the capacity (first: Slurm reads the
/// expression left to right, so `a|b&x` is `(a|b)&x`), its one GPU model, and the
/// domain its gangs are pinned to.
fn constraint(f: &Facts, c: &ClassFacts, g: &GroupFacts) -> Option<String> {
    let group_nodes = || f.nodes_named(&g.nodes);
    let mut parts: Vec<String> = Vec::new();
    // Capacity features of the group's pools (none unless some node is spot).
    let capacities: std::collections::BTreeSet<&str> = f
        .pools
        .iter()
        .filter(|p| g.pools.contains(&p.name))
        .flat_map(|p| p.capacities.iter().map(String::as_str))
        .collect();
    if capacities.contains("spot") {
        if !c.spot {
            // Only features some node has: sbatch refuses an unknown one.
            let other: Vec<&str> = capacities
                .iter()
                .copied()
                .filter(|k| *k != "spot")
                .collect();
            if !other.is_empty() {
                parts.push(other.join("|"));
            }
        } else if !c.straddle && capacities.len() > 1 && g.pods > 1 {
            // Matching OR: every node of the job has the same one of them.
            parts.push(format!(
                "[{}]",
                capacities.iter().copied().collect::<Vec<_>>().join("|")
            ));
        }
    }
    let pool_models: std::collections::BTreeSet<&str> = f
        .pools
        .iter()
        .filter(|p| g.pools.contains(&p.name))
        .flat_map(|p| p.models.iter().map(String::as_str))
        .collect();
    if let [m] = g.model_shorts.as_slice() {
        if pool_models.len() > 1 {
            parts.push(m.clone());
        }
    }
    if let Some(p) = &g.pin {
        if group_nodes().all(|n| n.domains.get(&p.tier) == Some(&p.value)) {
            parts.push(p.value.clone());
        }
    }
    (!parts.is_empty()).then(|| parts.join("&"))
}
