//! Can this batch script carry this unit? A gang of `--nodes` nodes, each in its
//! partition and with the `--constraint` features, asking exactly the planned GRES
//! (`gpu:<type>:n` of a whole-GPU type of the node, `gpu:<profile>:1`, or the shards
//! of one GPU that make the planned share), the class's CPUs and memory; `--switches=1`
//! keeps all its nodes under one leaf switch of topology.conf.

use super::super::Invariant;
use super::super::matching::Reason;
use super::super::units::{self, Gpu, Unit};
use super::conf::{Conf, GresKey};
use super::jobs::{self, Job};
use super::nodes::View;
use crate::model::{Isolation, Workload};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) struct Scope<'a> {
    pub conf: &'a Conf,
    pub views: &'a BTreeMap<String, View>,
    pub leaves: &'a [(String, BTreeSet<String>)],
    /// topology.yaml, when the folder has one (Slurm then ignores topology.conf).
    pub yaml: Option<&'a super::topology_yaml::Topologies>,
}

fn carried(score: u8, text: String) -> Reason {
    Reason::new(Invariant::Carried, score, text)
}

/// The partition a job lands in: its own, else the default one.
pub(crate) fn partition<'a>(
    conf: &'a Conf,
    j: &Job,
) -> Result<(&'a str, &'a super::conf::Partition), String> {
    match &j.partition {
        Some(p) => conf
            .partitions
            .get_key_value(p)
            .map(|(k, v)| (k.as_str(), v))
            .ok_or_else(|| format!("partition `{p}` is not in slurm.conf")),
        None => conf
            .partitions
            .iter()
            .find(|(_, p)| p.default)
            .map(|(k, v)| (k.as_str(), v))
            .ok_or_else(|| "names no --partition and slurm.conf has no default one".to_string()),
    }
}

/// The GRES (shard or MPS name) a shared slot takes, and how many of that GPU's.
pub(crate) fn slot_gres(g: &Gpu, v: &View, gpu: Option<u32>) -> Option<(GresKey, u64)> {
    let Gpu::Slot { mode, .. } = g else {
        return None;
    };
    let mps = *mode == Some(Isolation::Mps);
    let per_gpu = gpu
        .and_then(|i| if mps { &v.mps } else { &v.shards }.get(&i).copied())
        .unwrap_or(1000);
    let n = (g.slot_milli()? as u64 * per_gpu).div_ceil(1000).max(1);
    let name = if mps { "mps" } else { "shard" };
    Some(((name.to_string(), String::new()), n))
}

/// What one pod must ask on its node, per GRES.
pub(crate) fn expected(p: &units::Pod, v: &View) -> Vec<(GresKey, u64)> {
    match &p.gpu {
        Gpu::None => vec![],
        Gpu::Whole(n) => {
            let types = v.whole_types();
            let t = if types.len() == 1 {
                types.into_iter().next().unwrap_or("")
            } else {
                ""
            };
            vec![(("gpu".into(), t.to_string()), *n as u64)]
        }
        Gpu::Mig(profile) => vec![(("gpu".into(), profile.clone()), 1)],
        Gpu::Slot { .. } => slot_gres(&p.gpu, v, p.gpus.first().copied())
            .into_iter()
            .collect(),
    }
}

fn show(g: &[(GresKey, u64)]) -> String {
    if g.is_empty() {
        return "no GPU GRES".into();
    }
    let parts: Vec<String> = g
        .iter()
        .map(|((n, t), c)| {
            if t.is_empty() {
                format!("{n}:{c}")
            } else {
                format!("{n}:{t}:{c}")
            }
        })
        .collect();
    parts.join(",")
}

pub(crate) fn carry(s: &Scope, j: &Job, u: &Unit, w: &Workload) -> Result<(), Reason> {
    let (lo, hi) = j.nodes;
    if lo != hi {
        let text = format!("asks {lo}-{hi} nodes: the gang's size is not fixed");
        return Err(carried(0, text));
    }
    if lo as usize != u.pods.len() {
        let text = format!(
            "runs a gang of {lo} node(s); the plan's {} has {}",
            u.what,
            u.pods.len()
        );
        return Err(carried(0, text));
    }
    let part = partition(s.conf, j).map_err(|e| carried(0, e))?;
    for p in &u.pods {
        let v = reach(s, j, part, &p.node).map_err(|e| carried(1, e))?;
        fits(j, p, v, w).map_err(|e| carried(4, format!("{e} (on {})", p.node)))?;
    }
    let nodes = u.nodes();
    if let Some(yaml) = s.yaml {
        return yaml_topology(yaml, part, j, &nodes);
    }
    let one_leaf = s
        .leaves
        .iter()
        .any(|(_, set)| nodes.iter().all(|n| set.contains(*n)));
    if j.switches == Some(1) && nodes.len() > 1 && !one_leaf {
        let text = format!(
            "asks --switches=1; no leaf switch of topology.conf holds {}",
            nodes.join(", ")
        );
        return Err(Reason::new(Invariant::Topology, 5, text));
    }
    Ok(())
}

/// Under topology.yaml: `--switches=1` needs one leaf switch of the partition's tree
/// topology, and a `--segment` as large as the gang one block of its block topology.
fn yaml_topology(
    yaml: &super::topology_yaml::Topologies,
    (pname, p): (&str, &super::conf::Partition),
    j: &Job,
    nodes: &[&str],
) -> Result<(), Reason> {
    let fail = |text: String| Err(Reason::new(Invariant::Topology, 5, text));
    let whole_gang = j.segment.is_some_and(|s| s as usize >= nodes.len());
    if nodes.len() < 2 || (j.switches != Some(1) && !whole_gang) {
        return Ok(());
    }
    let Some((tname, t)) = yaml.of(p.topology.as_deref()) else {
        return fail(format!(
            "asks one domain, but partition `{pname}` has no topology of topology.yaml"
        ));
    };
    let one = t
        .domains
        .iter()
        .any(|(_, set)| nodes.iter().all(|n| set.contains(*n)));
    let (want_block, flag) = if whole_gang {
        (true, format!("--segment={}", j.segment.unwrap_or(0)))
    } else {
        (false, "--switches=1".to_string())
    };
    if t.block != want_block {
        let kind = if t.block { "block" } else { "tree" };
        return fail(format!(
            "asks {flag}, which the {kind} topology `{tname}` of partition `{pname}` does not apply"
        ));
    }
    if !one {
        let what = if want_block { "block" } else { "leaf switch" };
        return fail(format!(
            "asks {flag}; no {what} of topology `{tname}` holds {}",
            nodes.join(", ")
        ));
    }
    Ok(())
}

/// The node as the job can have it: in slurm.conf, up, in its partition, with its
/// features.
fn reach<'s>(
    s: &'s Scope,
    j: &Job,
    (pname, part): (&str, &super::conf::Partition),
    node: &str,
) -> Result<&'s View, String> {
    let v = s
        .views
        .get(node)
        .ok_or_else(|| format!("cannot reach {node}: not a node of slurm.conf"))?;
    if !v.valid {
        return Err(format!("cannot reach {node}: slurmd refuses or drains it"));
    }
    if !part.nodes.contains(node) {
        return Err(format!(
            "runs in partition {pname}, which does not hold {node}"
        ));
    }
    match j.constraint.as_deref() {
        Some(c) if !jobs::satisfies(c, &v.features) => Err(format!(
            "asks --constraint={c}, which {node} does not satisfy"
        )),
        _ => Ok(v),
    }
}

fn fits(j: &Job, p: &units::Pod, v: &View, w: &Workload) -> Result<(), String> {
    let have: Vec<(GresKey, u64)> = j
        .gres
        .iter()
        .filter(|((n, _), _)| matches!(n.as_str(), "gpu" | "shard" | "mps"))
        .cloned()
        .collect();
    let want = expected(p, v);
    let untyped_ok = matches!(p.gpu, Gpu::Whole(_))
        && v.mig_types.is_empty()
        && matches!(have.as_slice(), [((n, t), c)] if n == "gpu" && t.is_empty() && want.first().is_some_and(|w| w.1 == *c));
    let whole_typed = matches!(p.gpu, Gpu::Whole(_))
        && matches!(have.as_slice(), [((n, t), c)] if n == "gpu" && v.whole_types().contains(t.as_str()) && want.first().is_some_and(|w| w.1 == *c));
    if have != want && !untyped_ok && !whole_typed {
        return Err(format!(
            "asks --gres={} where the plan gives {}",
            show(&have),
            show(&want)
        ));
    }
    let (cpu, mem) = units::host_needs(w);
    let cpus = cpu.div_ceil(1000);
    if cpu > 0 && j.cpus() != cpus {
        return Err(format!(
            "asks {} CPUs per node where the class declares {cpus}",
            j.cpus()
        ));
    }
    let mib = mem.div_ceil(1 << 20);
    if mem > 0 && j.mem() != Some(mib) {
        let asked = j
            .mem()
            .map_or("no --mem".to_string(), |m| format!("--mem={m}M"));
        return Err(format!("asks {asked} where the class declares {mib} MiB"));
    }
    Ok(())
}
