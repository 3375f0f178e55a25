//! Slurm: a `slurm.conf` fragment (GRES, cons_tres, explicit priority and preemption
//! plugins, topology plugin, `NodeName` and `PartitionName` lines), `gres.conf` (one
//! line per GPU group with its cores, one `MultipleFiles` line per MIG device),
//! `topology.conf` (`topology/tree` by default; `topology/block` with `BlockSizes` only
//! when the KDL names Slurm 24.05 or later), a `sacctmgr` script for QOS and team limits,
//! and an example batch script per training class.
//!
//! Default syntax is Slurm 22.05 (Debian 12), so nothing newer is emitted unless asked.
//! Node and GRES lines are in [`nodes`], the switch tree and blocks in [`topology`].

mod nodes;
mod topology;

use super::facts::{ClassFacts, Facts};
use super::{Files, run};
use crate::diag::Diagnostic;
use crate::model::PoolMode;
use minijinja::{Environment, Value};
use nodes::{GresLine, NodeLine};
use serde::Serialize;
use topology::{Switch, Topology};

#[derive(Serialize)]
struct Partition {
    name: String,
    nodes: String,
    tier: u32,
    preempt_mode: &'static str,
    default: bool,
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
    ceiling: u32,
    qos: String,
    default_qos: Option<String>,
}

#[derive(Serialize)]
struct Ctx {
    header: String,
    version: String,
    cluster: String,
    topology_plugin: Option<&'static str>,
    tres: String,
    nodes: Vec<NodeLine>,
    partitions: Vec<Partition>,
    gres: Vec<GresLine>,
    switches: Vec<Switch>,
    blocks: Vec<Switch>,
    block_size: u32,
    qos: Vec<Qos>,
    accounts: Vec<Account>,
}

#[derive(Serialize)]
struct JobCtx<'a> {
    header: &'a str,
    c: &'a ClassFacts,
    gres: String,
    switches: bool,
    segment: bool,
    /// `--constraint` keeping the job off spot nodes, or its nodes on one capacity.
    constraint: Option<String>,
}

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let block = f.slurm_version.as_slice() >= [24, 5].as_slice();
    let topo = topology::of(f, block);
    let use_block = block && !topo.blocks.is_empty();
    let ctx = context(f, topo, use_block);
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
    files.insert(
        "sacctmgr.sh".into(),
        run(env, "slurm/sacctmgr.sh.j2", &values)?,
    );
    for c in f.classes.iter().filter(|c| c.kind == "training") {
        files.insert(
            format!("examples/{}.sbatch", c.name),
            run(
                env,
                "slurm/job.sbatch.j2",
                &job_ctx(f, &ctx.header, c, &ctx),
            )?,
        );
    }
    Ok(files)
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
        tres: nodes::tres(&gres),
        nodes: nodes::node_lines(&f.nodes, &gres),
        partitions: partitions(f),
        gres: nodes::gres_lines(f),
        switches: topo.switches,
        blocks: if use_block { topo.blocks } else { Vec::new() },
        block_size: topo.block_size,
        qos: qos(f),
        accounts: accounts(f),
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

/// One account per team: fairshare = guarantee, GPU limit = ceiling, the QOS of the
/// team's priorities (the lowest as default).
fn accounts(f: &Facts) -> Vec<Account> {
    f.teams
        .iter()
        .map(|t| Account {
            name: t.name.clone(),
            parent: t.parent.clone(),
            fairshare: t.guarantee.max(1),
            ceiling: t.ceiling,
            qos: t.priorities.join(","),
            default_qos: t.priorities.last().cloned(),
        })
        .collect()
}

/// The example batch script of a training class: whole GPUs of its model per node, and
/// one switch (tree) or one segment (block) for a gang that must stay in a leaf or
/// NVLink domain, only when some of the class's candidate nodes (its partition and GPU
/// model) are under a switch of topology.conf, or in one of its blocks: Slurm cannot
/// honour `--switches` over nodes topology.conf does not list, and a node of another
/// family (an H100 node beside GB200 racks, blocks being NVLink domains) is in no block.
fn job_ctx<'a>(f: &Facts, header: &'a str, c: &'a ClassFacts, ctx: &Ctx) -> JobCtx<'a> {
    let t = c.model_short.as_deref().unwrap_or("gpu");
    let tight = matches!(c.required.as_deref(), Some("leaf") | Some("nvlink")) && c.pods > 1;
    let use_block = !ctx.blocks.is_empty();
    let block_tier = if f.tier("nvlink").is_some() {
        "nvlink"
    } else {
        "leaf"
    };
    // The class's candidate nodes: its partition and GPU model.
    let candidates = || {
        f.nodes
            .iter()
            .filter(|n| c.pool.as_ref().is_none_or(|p| &n.pool == p))
            .filter(|n| c.model.is_none() || n.model == c.model)
    };
    let reaches = |tier: &str| candidates().any(|n| n.domains.contains_key(tier));
    // Capacity features of the candidates (none unless some is spot).
    let capacities: std::collections::BTreeSet<&str> = candidates()
        .filter_map(|n| {
            n.labels
                .get(crate::names::CAPACITY_LABEL)
                .map(String::as_str)
        })
        .collect();
    let constraint = if !capacities.contains("spot") {
        None
    } else if !c.spot {
        // Only features some node has: sbatch refuses an unknown one.
        let other: Vec<&str> = capacities
            .iter()
            .copied()
            .filter(|k| *k != "spot")
            .collect();
        (!other.is_empty()).then(|| other.join("|"))
    } else if !c.straddle && capacities.len() > 1 {
        // Matching OR: every node of the job has the same one of them.
        Some(format!(
            "[{}]",
            capacities.iter().copied().collect::<Vec<_>>().join("|")
        ))
    } else {
        None
    };
    JobCtx {
        header,
        c,
        constraint,
        gres: format!("gpu:{t}:{}", c.per_pod),
        switches: tight && !use_block && !ctx.switches.is_empty() && reaches("leaf"),
        segment: tight && use_block && reaches(block_tier),
    }
}
