//! Slurm: a `slurm.conf` fragment (GRES, cons_tres, explicit priority and preemption
//! plugins, topology plugin, `NodeName` and `PartitionName` lines), `gres.conf` (one
//! line per GPU group with its cores, one `MultipleFiles` line per MIG device),
//! `topology.conf` (`topology/tree` by default; `topology/block` with `BlockSizes` only
//! when the KDL names Slurm 24.05 or later), a `sacctmgr` script for QOS and team limits,
//! and an example batch script per training class.
//!
//! Default syntax is Slurm 22.05 (Debian 12), so nothing newer is emitted unless asked.

use super::facts::{Facts, NodeFacts, range};
use super::{Files, run};
use crate::diag::Diagnostic;
use crate::spec::SwitchTier;
use crate::units::format_index_set;
use minijinja::Environment;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct NodeLine {
    names: String,
    cpus: u32,
    sockets: u32,
    cores: u32,
    threads: u32,
    memory: Option<u64>,
    gres: String,
    features: String,
}

#[derive(Serialize)]
struct Partition {
    name: String,
    nodes: String,
    tier: u32,
    preempt_mode: &'static str,
    default: bool,
}

#[derive(Serialize)]
struct GresLine {
    nodes: String,
    kind: String,
    files: String,
    multiple: bool,
    cores: Option<String>,
}

#[derive(Serialize)]
struct Switch {
    name: String,
    nodes: Option<String>,
    switches: Option<String>,
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
    header: String,
    c: &'a super::facts::ClassFacts,
    gres: String,
    switches: bool,
    segment: bool,
}

/// The GRES type of a whole GPU of this node (the model's short name).
fn gpu_type(n: &NodeFacts) -> String {
    n.model_short.clone().unwrap_or_else(|| "gpu".into())
}

/// `gpu:h100:8,gpu:1g.10gb:14` for a node: whole GPUs by model, MIG devices by profile.
fn node_gres(n: &NodeFacts) -> String {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for g in &n.gpus {
        match n.mig.get(g) {
            Some(profiles) => {
                for p in profiles {
                    *counts.entry(p.clone()).or_insert(0) += 1;
                }
            }
            None => *counts.entry(gpu_type(n)).or_insert(0) += 1,
        }
    }
    counts
        .iter()
        .map(|(t, k)| format!("gpu:{t}:{k}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Groups nodes whose lines are identical: `key -> names`, in first-name order.
fn group<K: Ord + Clone>(nodes: &[NodeFacts], key: impl Fn(&NodeFacts) -> K) -> Vec<(K, String)> {
    let mut groups: BTreeMap<K, Vec<String>> = BTreeMap::new();
    for n in nodes {
        groups.entry(key(n)).or_default().push(n.name.clone());
    }
    let mut out: Vec<(K, Vec<String>)> = groups.into_iter().collect();
    out.sort_by(|a, b| a.1.first().cmp(&b.1.first()));
    out.into_iter()
        .map(|(k, names)| (k, range(&names)))
        .collect()
}

/// gres.conf lines of one node (without NodeName).
fn gres_lines(f: &Facts, n: &NodeFacts) -> Vec<(String, String, bool, Option<String>)> {
    let class = f.c.classes.get(&n.class);
    let numa_of = |g: u32| class.and_then(|c| c.numa.iter().find(|x| x.gpus.contains(&g)));
    let mut out = Vec::new();
    // Whole GPUs, grouped by NUMA node (one Cores= per group).
    let mut by_numa: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
    for g in n.gpus.iter().filter(|g| !n.mig.contains_key(g)) {
        by_numa
            .entry(numa_of(*g).map(|x| x.id))
            .or_default()
            .push(*g);
    }
    for (numa, gpus) in by_numa {
        let files = if gpus.len() == 1 {
            format!("/dev/nvidia{}", gpus[0])
        } else {
            format!("/dev/nvidia[{}]", format_index_set(&gpus))
        };
        let cores = numa
            .and_then(|id| class.and_then(|c| c.numa.iter().find(|x| x.id == id)))
            .filter(|x| !x.cores.is_empty())
            .map(|x| format_index_set(&x.cores));
        out.push((gpu_type(n), files, false, cores));
    }
    // MIG devices: GPU device file + GI and CI capability files. GI ids are the driver's
    // choice; gpuplan predicts them in creation order (largest first, from 1), which the
    // node script checks (see docs/render.md).
    for (g, profiles) in &n.mig {
        let cores = numa_of(*g)
            .filter(|x| !x.cores.is_empty())
            .map(|x| format_index_set(&x.cores));
        for (i, p) in profiles.iter().enumerate() {
            let gi = i as u32 + 1;
            let gi_minor = 3 + 135 * g + 9 * gi;
            let files = format!(
                "/dev/nvidia{g},/dev/nvidia-caps/nvidia-cap{gi_minor},/dev/nvidia-caps/nvidia-cap{}",
                gi_minor + 1
            );
            out.push((p.clone(), files, true, cores.clone()));
        }
    }
    out
}

fn topology(f: &Facts, block: bool) -> (Vec<Switch>, Vec<Switch>, u32) {
    let c = f.c;
    let in_plan = |ni: &usize| f.nodes.iter().any(|n| n.name == c.nodes[*ni].name);
    let mut switches = Vec::new();
    let mut top = Vec::new();
    for tier in [SwitchTier::Leaf, SwitchTier::Spine, SwitchTier::Core] {
        for s in c.switches.iter().filter(|s| s.tier == tier) {
            let nodes: Vec<String> = s
                .nodes
                .iter()
                .filter(|ni| in_plan(ni))
                .map(|ni| c.nodes[*ni].name.clone())
                .collect();
            let children: Vec<String> = s
                .children
                .iter()
                .map(|i| c.switches[*i].name.clone())
                .collect();
            if nodes.is_empty() && children.is_empty() {
                continue;
            }
            if s.parent.is_none() {
                top.push(s.name.clone());
            }
            switches.push(Switch {
                name: s.name.clone(),
                nodes: (!nodes.is_empty()).then(|| range(&nodes)),
                switches: (!children.is_empty()).then(|| range(&children)),
            });
        }
    }
    if top.len() > 1 {
        // Slurm cannot place a job over disconnected trees: join them under one root.
        switches.push(Switch {
            name: "gpuplan-root".into(),
            nodes: None,
            switches: Some(range(&top)),
        });
    }
    if !block {
        return (switches, Vec::new(), 0);
    }
    // Blocks: multi-node NVLink domains when the cluster has them, else leaf switches.
    let mut blocks: Vec<Switch> = Vec::new();
    let tier = if f.tier("nvlink").is_some() {
        "nvlink"
    } else {
        "leaf"
    };
    let mut doms: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for n in &f.nodes {
        if let Some(d) = n.domains.get(tier) {
            doms.entry(d.as_str()).or_default().push(n.name.clone());
        }
    }
    let size = doms.values().map(Vec::len).min().unwrap_or(1) as u32;
    for (d, nodes) in doms {
        blocks.push(Switch {
            name: d.to_string(),
            nodes: Some(range(&nodes)),
            switches: None,
        });
    }
    (switches, blocks, size)
}

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let v = &f.slurm_version;
    let block = v.as_slice() >= [24, 5].as_slice();
    let (switches, blocks, block_size) = topology(f, block);
    let use_block = block && !blocks.is_empty();
    let topology_plugin = if use_block {
        Some("topology/block")
    } else if !switches.is_empty() {
        Some("topology/tree")
    } else {
        None
    };
    let mut types: Vec<String> = f
        .nodes
        .iter()
        .flat_map(|n| {
            node_gres(n)
                .split(',')
                .filter_map(|g| g.split(':').nth(1).map(|t| format!("gres/gpu:{t}")))
                .collect::<Vec<_>>()
        })
        .collect();
    types.sort();
    types.dedup();
    let mut tres = vec!["gres/gpu".to_string()];
    tres.extend(types);

    let nodes = group(&f.nodes, |n| {
        let mut features = vec![n.pool.clone()];
        if let Some(m) = &n.model_short {
            features.push(m.clone());
        }
        if let Some(l) = n.domains.get("leaf") {
            features.push(l.clone());
        }
        (
            n.sockets,
            n.cores_per_socket,
            n.threads_per_core,
            n.memory_mib,
            node_gres(n),
            features.join(","),
        )
    })
    .into_iter()
    .map(
        |((sockets, cores, threads, memory, gres, features), names)| NodeLine {
            names,
            cpus: sockets * cores * threads,
            sockets,
            cores,
            threads,
            memory,
            gres,
            features,
        },
    )
    .collect();

    // Default partition: the largest whole-GPU pool (22.05 logs an error without one).
    let default = f
        .pools
        .iter()
        .max_by(|a, b| {
            (a.mode == "whole-gpu", a.nodes.len())
                .cmp(&(b.mode == "whole-gpu", b.nodes.len()))
                .then(b.name.cmp(&a.name))
        })
        .map(|p| p.name.clone());
    let partitions = f
        .pools
        .iter()
        .map(|p| Partition {
            default: Some(&p.name) == default.as_ref(),
            name: p.name.clone(),
            nodes: p.range.clone(),
            tier: p.rank.max(1),
            preempt_mode: if p.preemptible { "REQUEUE" } else { "OFF" },
        })
        .collect();

    let mut gres = Vec::new();
    for (lines, names) in group(&f.nodes, |n| gres_lines(f, n)) {
        for (kind, files, multiple, cores) in lines {
            gres.push(GresLine {
                nodes: names.clone(),
                kind,
                files,
                multiple,
                cores,
            });
        }
    }

    let qos = f
        .priorities
        .iter()
        .map(|p| Qos {
            name: p.name.clone(),
            priority: p.value.max(0),
            preempts: p.preempts.join(","),
        })
        .collect();
    let accounts = f
        .teams
        .iter()
        .map(|t| Account {
            name: t.name.clone(),
            parent: t.parent.clone(),
            fairshare: t.guarantee.max(1),
            ceiling: t.ceiling,
            qos: t.priorities.join(","),
            default_qos: t.priorities.last().cloned(),
        })
        .collect();
    let ctx = Ctx {
        header: f.header(),
        version: match v.as_slice() {
            [a, b, ..] => format!("{a}.{b:02}"),
            _ => v.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
        },
        cluster: f.c.name.to_lowercase(),
        topology_plugin,
        tres: tres.join(","),
        nodes,
        partitions,
        gres,
        switches,
        blocks: if use_block { blocks } else { Vec::new() },
        block_size,
        qos,
        accounts,
    };
    let mut files = Files::new();
    files.insert("slurm.conf".into(), run(env, "slurm/slurm.conf.j2", &ctx)?);
    files.insert("gres.conf".into(), run(env, "slurm/gres.conf.j2", &ctx)?);
    files.insert(
        "accounting.conf".into(),
        run(env, "slurm/accounting.conf.j2", &ctx)?,
    );
    if topology_plugin.is_some() {
        files.insert(
            "topology.conf".into(),
            run(env, "slurm/topology.conf.j2", &ctx)?,
        );
    }
    files.insert(
        "sacctmgr.sh".into(),
        run(env, "slurm/sacctmgr.sh.j2", &ctx)?,
    );
    for c in f.classes.iter().filter(|c| c.kind == "training") {
        let t = c.model_short.clone().unwrap_or_else(|| "gpu".into());
        let tight = matches!(c.required.as_deref(), Some("leaf") | Some("nvlink"));
        let jc = JobCtx {
            header: f.header(),
            c,
            gres: format!("gpu:{t}:{}", c.per_pod),
            switches: tight && c.pods > 1 && !use_block,
            segment: tight && c.pods > 1 && use_block,
        };
        files.insert(
            format!("examples/{}.sbatch", c.name),
            run(env, "slurm/job.sbatch.j2", &jc)?,
        );
    }
    Ok(files)
}
