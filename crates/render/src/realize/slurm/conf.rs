//! `slurm.conf`, `gres.conf` and `topology.conf` as slurmctld and slurmd read them
//! (reference slurm.md §2-§4): `#` comments, `\` continuations, case-insensitive keys,
//! `NodeName=DEFAULT` defaults; node CPUs, threads, `RealMemory` (MiB), `Gres=`
//! (`name[:type]:count`), `Features`; partitions and their nodes; gres.conf lines
//! (`File=` ranges count one GRES per device, `MultipleFiles=` one MIG device, `Count=`
//! shards or MPS shares per GPU file); topology.conf leaf switches (`Nodes=`).

use super::super::hostlist;
use std::collections::{BTreeMap, BTreeSet};

/// (GRES name, type; empty when untyped).
pub(crate) type GresKey = (String, String);

#[derive(Clone, Debug, Default)]
pub(crate) struct Node {
    pub cpus: Option<u32>,
    pub threads_per_core: u32,
    pub real_memory: Option<u64>,
    pub gres: BTreeMap<GresKey, u64>,
    pub features: BTreeSet<String>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Partition {
    pub nodes: BTreeSet<String>,
    pub default: bool,
    pub def_mem: bool,
    /// `Topology=`: its topology.yaml topology (25.05+).
    pub topology: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Conf {
    pub nodes: BTreeMap<String, Node>,
    pub partitions: BTreeMap<String, Partition>,
    pub gres_types: BTreeSet<String>,
    /// `SelectTypeParameters` makes memory consumable (`*_Memory`).
    pub memory: bool,
    /// `CR_Core*`: CPUs are allocated by whole cores.
    pub by_core: bool,
    /// `DefMemPerNode`/`DefMemPerCPU`/`DefMemPerGPU` set globally.
    pub def_mem: bool,
    /// `SwitchType`, lowercased (`switch/nvidia_imex`: every job gets an IMEX channel).
    pub switch_type: Option<String>,
}

/// Logical lines: comments removed, continuations joined, with their first line number.
pub(crate) fn lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut acc = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        if acc.is_empty() {
            start = i + 1;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(body) => acc.push_str(body),
            None => {
                acc.push_str(line);
                if !acc.trim().is_empty() {
                    out.push((start, acc.trim().to_string()));
                }
                acc.clear();
            }
        }
    }
    if !acc.trim().is_empty() {
        out.push((start, acc.trim().to_string()));
    }
    out
}

/// `key=value` words, keys lowercased (the first key is the line's kind).
pub(crate) fn pairs(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .map(|w| match w.split_once('=') {
            Some((k, v)) => (k.to_ascii_lowercase(), v.to_string()),
            None => (w.to_ascii_lowercase(), String::new()),
        })
        .collect()
}

/// One `Gres=` item: `gpu:h100:8`, `gpu:2`, `shard:1000`, `gpu:1g.10gb:7`.
pub(crate) fn gres_item(item: &str) -> Result<(GresKey, u64), String> {
    let parts: Vec<&str> = item.split(':').filter(|p| *p != "no_consume").collect();
    let count = |s: &str| -> Option<u64> {
        let (n, mult) = match s.char_indices().last() {
            Some((i, 'K' | 'k')) => (&s[..i], 1024),
            Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
            Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
            _ => (s, 1),
        };
        n.parse::<u64>().ok()?.checked_mul(mult)
    };
    let bad = || format!("`{item}` is not a GRES (name[:type]:count)");
    match parts.as_slice() {
        [name] if !name.is_empty() => Ok(((name.to_string(), String::new()), 1)),
        [name, x] => match count(x) {
            Some(n) => Ok(((name.to_string(), String::new()), n)),
            None => Ok(((name.to_string(), x.to_string()), 1)),
        },
        [name, t, n] => Ok(((name.to_string(), t.to_string()), count(n).ok_or_else(bad)?)),
        _ => Err(bad()),
    }
}

/// Parses slurm.conf; problems as `line N: ...`.
pub(crate) fn parse(text: &str) -> (Conf, Vec<String>) {
    let mut conf = Conf::default();
    let mut errors = Vec::new();
    let mut defaults = Node::default();
    let mut left = hostlist::MAX_NAMES;
    for (n, line) in lines(text) {
        let kv = pairs(&line);
        let r = match kv[0].0.as_str() {
            "nodename" => node_line(&kv, &mut conf, &mut defaults, &mut left),
            "partitionname" => partition_line(&kv, &mut conf, &mut left),
            _ => {
                global(&kv, &mut conf);
                Ok(())
            }
        };
        if let Err(e) = r {
            errors.push(format!("line {n}: {e}"));
        }
    }
    (conf, errors)
}

fn global(kv: &[(String, String)], conf: &mut Conf) {
    for (k, v) in kv {
        match k.as_str() {
            "grestypes" => conf
                .gres_types
                .extend(v.split(',').map(|s| s.trim().to_string())),
            "selecttypeparameters" => {
                conf.memory = v.to_ascii_lowercase().contains("memory");
                conf.by_core = v.to_ascii_lowercase().starts_with("cr_core");
            }
            "defmempernode" | "defmempercpu" | "defmempergpu" => conf.def_mem = true,
            "switchtype" => conf.switch_type = Some(v.to_ascii_lowercase()),
            _ => {}
        }
    }
}

fn node_line(
    kv: &[(String, String)],
    conf: &mut Conf,
    defaults: &mut Node,
    left: &mut usize,
) -> Result<(), String> {
    let mut node = defaults.clone();
    let (mut sockets, mut cores, mut threads) = (1u32, 1u32, 0u32);
    let num = |k: &str, v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{k}={v} is not a number"))
    };
    for (k, v) in &kv[1..] {
        match k.as_str() {
            "cpus" | "procs" => node.cpus = Some(num(k, v)? as u32),
            "sockets" | "socketsperboard" => sockets = num(k, v)? as u32,
            "corespersocket" => cores = num(k, v)? as u32,
            "threadspercore" => threads = num(k, v)? as u32,
            "realmemory" => node.real_memory = Some(num(k, v)?),
            "gres" => {
                node.gres.clear();
                for item in v.split(',').filter(|s| !s.is_empty()) {
                    let (key, n) = gres_item(item)?;
                    *node.gres.entry(key).or_default() += n;
                }
            }
            "features" | "feature" | "availablefeatures" => {
                node.features = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            _ => {}
        }
    }
    if threads > 0 {
        node.threads_per_core = threads;
    }
    node.threads_per_core = node.threads_per_core.max(1);
    if node.cpus.is_none() && kv.iter().any(|(k, _)| k == "corespersocket") {
        node.cpus = Some(sockets * cores * node.threads_per_core);
    }
    let names = &kv[0].1;
    if names.eq_ignore_ascii_case("default") {
        *defaults = node;
        return Ok(());
    }
    for name in hostlist::expand_within(names, left)? {
        conf.nodes.insert(name, node.clone());
    }
    Ok(())
}

fn partition_line(
    kv: &[(String, String)],
    conf: &mut Conf,
    left: &mut usize,
) -> Result<(), String> {
    let mut p = Partition::default();
    for (k, v) in &kv[1..] {
        match k.as_str() {
            "nodes" => {
                p.nodes = if v.eq_ignore_ascii_case("all") {
                    conf.nodes.keys().cloned().collect()
                } else {
                    hostlist::expand_within(v, left)?.into_iter().collect()
                }
            }
            "default" => p.default = v.eq_ignore_ascii_case("yes"),
            "defmempernode" | "defmempercpu" | "defmempergpu" => p.def_mem = true,
            "topology" => p.topology = Some(v.clone()),
            _ => {}
        }
    }
    if !kv[0].1.eq_ignore_ascii_case("default") {
        conf.partitions.insert(kv[0].1.clone(), p);
    }
    Ok(())
}

/// One gres.conf line.
#[derive(Clone, Debug, Default)]
pub(crate) struct GresLine {
    /// `None`: every node.
    pub nodes: Option<BTreeSet<String>>,
    pub key: GresKey,
    pub count: u64,
    /// Device files (`File=` expanded; the first of `MultipleFiles=`).
    pub files: Vec<String>,
    pub mig: bool,
    pub autodetect: bool,
}

/// Parses gres.conf; problems as `line N: ...`.
pub(crate) fn parse_gres(text: &str) -> (Vec<GresLine>, Vec<String>) {
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let mut left = hostlist::MAX_NAMES;
    for (n, line) in lines(text) {
        match gres_line(&pairs(&line), &mut left) {
            Ok(Some(g)) => out.push(g),
            Ok(None) => {}
            Err(e) => errors.push(format!("line {n}: {e}")),
        }
    }
    (out, errors)
}

fn gres_line(kv: &[(String, String)], left: &mut usize) -> Result<Option<GresLine>, String> {
    let mut g = GresLine::default();
    let mut count = None;
    for (k, v) in kv {
        match k.as_str() {
            "nodename" => g.nodes = Some(hostlist::expand_within(v, left)?.into_iter().collect()),
            "name" => g.key.0 = v.clone(),
            "type" => g.key.1 = v.clone(),
            "file" => g.files = hostlist::expand_within(v, left)?,
            "multiplefiles" => {
                g.files = v.split(',').take(1).map(String::from).collect();
                g.mig = true;
            }
            "count" => {
                count = Some(
                    v.parse::<u64>()
                        .map_err(|_| format!("Count={v} is not a number"))?,
                )
            }
            "autodetect" => g.autodetect = !v.eq_ignore_ascii_case("off"),
            _ => {}
        }
    }
    if g.key.0.is_empty() {
        return if g.autodetect { Ok(Some(g)) } else { Ok(None) };
    }
    g.count = count.unwrap_or(if g.mig {
        1
    } else {
        g.files.len().max(1) as u64
    });
    Ok(Some(g))
}

/// The GPU index of a device file (`/dev/nvidia3` -> 3).
pub(crate) fn device_index(file: &str) -> Option<u32> {
    file.strip_prefix("/dev/nvidia")?.parse().ok()
}

/// topology.conf: leaf switches (those with `Nodes=`) and their nodes.
pub(crate) fn parse_topology(text: &str) -> (Vec<(String, BTreeSet<String>)>, Vec<String>) {
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let mut left = hostlist::MAX_NAMES;
    for (n, line) in lines(text) {
        let kv = pairs(&line);
        if kv[0].0 != "switchname" {
            continue;
        }
        if let Some((_, nodes)) = kv.iter().find(|(k, _)| k == "nodes") {
            match hostlist::expand_within(nodes, &mut left) {
                Ok(list) => out.push((kv[0].1.clone(), list.into_iter().collect())),
                Err(e) => errors.push(format!("line {n}: {e}")),
            }
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_conf_nodes_and_partitions() {
        let text = "SelectTypeParameters=CR_Core_Memory\nGresTypes=gpu,shard\nNodeName=DEFAULT ThreadsPerCore=2\nNodeName=n[1-2] SocketsPerBoard=2 CoresPerSocket=4 \\\n  RealMemory=1000 Gres=gpu:h100:2,shard:2000 Features=a,b # c\nPartitionName=p Nodes=n1 Default=YES\n";
        let (c, e) = parse(text);
        assert!(e.is_empty(), "{e:?}");
        let n = &c.nodes["n2"];
        assert_eq!(
            (n.cpus, n.threads_per_core, n.real_memory),
            (Some(16), 2, Some(1000))
        );
        assert_eq!(n.gres[&("gpu".into(), "h100".into())], 2);
        assert_eq!(n.gres[&("shard".into(), String::new())], 2000);
        assert!(c.memory && c.by_core && c.partitions["p"].default);
        assert!(parse("NodeName=n[1- CPUs=2\n").1.len() == 1);
    }

    #[test]
    fn gres_conf_lines() {
        let text = "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[0-3]\nNodeName=n1 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia4,/dev/nvidia-caps/nvidia-cap1\nName=shard Count=1000 File=/dev/nvidia5\n";
        let (g, e) = parse_gres(text);
        assert!(e.is_empty());
        assert_eq!(
            (g[0].count, g[1].count, g[1].mig, g[2].count),
            (4, 1, true, 1000)
        );
        assert!(g[2].nodes.is_none());
        assert_eq!(device_index(&g[2].files[0]), Some(5));
    }
}
