//! Slurm nodes as slurmctld sees them once slurmd registers: the counts of slurm.conf
//! `Gres=` must equal what gres.conf defines for the node, and no count may exceed the
//! hardware (GPUs, MIG devices the plan creates, hardware threads, memory), or slurmd
//! refuses or drains the node. Then no node is asked for more than it has: GRES per
//! type, shards per GPU (from ONE GPU each; a GPU given as `gpu` is not also shards),
//! CPUs (whole cores under `CR_Core`), memory (a job without `--mem` takes the whole
//! node when memory is consumable and no default is set).

use super::super::mig::planned;
use super::super::{Invariant, Sink, Target};
use super::Use;
use super::conf::{Conf, GresKey, GresLine, device_index};
use crate::model::Cluster;
use crate::placement::Placement;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) struct View {
    pub valid: bool,
    pub gres: BTreeMap<GresKey, u64>,
    pub mig_types: BTreeSet<String>,
    /// GPU index -> shards (`shard`) and MPS shares (`mps`).
    pub shards: BTreeMap<u32, u64>,
    pub mps: BTreeMap<u32, u64>,
    pub cpus: Option<u32>,
    pub threads_per_core: u32,
    pub real_memory: Option<u64>,
    pub features: BTreeSet<String>,
}

impl View {
    /// Whole-GPU GRES types (not MIG devices).
    pub(crate) fn whole_types(&self) -> BTreeSet<&str> {
        self.gres
            .keys()
            .filter(|(n, t)| n == "gpu" && !self.mig_types.contains(t))
            .map(|(_, t)| t.as_str())
            .collect()
    }

    pub(crate) fn whole_gpus(&self) -> u64 {
        self.gres
            .iter()
            .filter(|((n, t), _)| n == "gpu" && !self.mig_types.contains(t))
            .map(|(_, c)| c)
            .sum()
    }
}

/// Whether a GRES type names a MIG profile (`1g.10gb`, `nvidia_a100_3g.20gb`).
pub(crate) fn is_profile(t: &str) -> bool {
    let b = t.as_bytes();
    (1..b.len()).any(|i| {
        b[i] == b'g'
            && b[i - 1].is_ascii_digit()
            && t[i + 1..].starts_with('.')
            && t[i + 2..].contains("gb")
    })
}

const FILE: &str = "slurm/slurm.conf";

type Fail<'a> = &'a mut dyn FnMut(Invariant, &str, String);

/// The node views of slurm.conf, each checked against gres.conf and the hardware.
pub(crate) fn views(
    conf: &Conf,
    gres: &[GresLine],
    c: &Cluster,
    plan: &Placement,
    sink: &mut Sink,
) -> BTreeMap<String, View> {
    let mut out = BTreeMap::new();
    for (name, n) in &conf.nodes {
        let id = format!("NodeName={name}");
        let mut fail =
            |inv: Invariant, file: &str, m: String| sink.push(Target::Slurm, inv, (&id, file), m);
        let Some(model) = c.node(name) else {
            let msg = format!("slurm.conf defines node {name}, which the cluster does not declare");
            fail(Invariant::Reference, FILE, msg);
            continue;
        };
        let lines: Vec<&GresLine> = gres
            .iter()
            .filter(|g| g.nodes.as_ref().is_none_or(|s| s.contains(name)))
            .collect();
        let mut v = view(n, &lines);
        if !lines.iter().any(|g| g.autodetect) {
            consistent(&mut v, name, &lines, &mut fail);
            device_types((name, model), &lines, c, &mut fail);
        }
        drains(&mut v, (name, model), c, plan, &mut fail);
        mig_devices(&v, name, plan, &mut fail);
        out.insert(name.clone(), v);
    }
    out
}

fn view(n: &super::conf::Node, lines: &[&GresLine]) -> View {
    let mut mig_types: BTreeSet<String> = lines
        .iter()
        .filter(|g| g.mig)
        .map(|g| g.key.1.clone())
        .collect();
    mig_types.extend(
        n.gres
            .keys()
            .filter(|(g, t)| g == "gpu" && is_profile(t))
            .map(|(_, t)| t.clone()),
    );
    View {
        valid: true,
        gres: n.gres.clone(),
        mig_types,
        shards: per_gpu(lines, "shard"),
        mps: per_gpu(lines, "mps"),
        cpus: n.cpus,
        threads_per_core: n.threads_per_core,
        real_memory: n.real_memory,
        features: n.features.clone(),
    }
}

/// slurm.conf's `Gres=` counts must be what gres.conf defines, or slurmd refuses.
fn consistent(v: &mut View, name: &str, lines: &[&GresLine], fail: Fail) {
    let mut defined: BTreeMap<GresKey, u64> = BTreeMap::new();
    for g in lines.iter().filter(|g| !g.key.0.is_empty()) {
        *defined.entry(g.key.clone()).or_default() += g.count;
    }
    let keys: BTreeSet<GresKey> = defined.keys().chain(v.gres.keys()).cloned().collect();
    for k in keys {
        let a = v.gres.get(&k).copied().unwrap_or(0);
        let b = defined.get(&k).copied().unwrap_or(0);
        if a != b {
            v.valid = false;
            let what = if k.1.is_empty() {
                k.0.clone()
            } else {
                format!("{}:{}", k.0, k.1)
            };
            let msg = format!(
                "slurm.conf gives {name} {a} {what}, gres.conf defines {b}: slurmd refuses the node"
            );
            fail(Invariant::Capacity, "slurm/gres.conf", msg);
        }
    }
}

/// On a node with GPUs of several models, a whole-GPU GRES type that is one of their
/// models' names must be the model of the GPUs its `File=` lists: a job asking
/// `gpu:TYPE` gets those devices.
fn device_types(
    (name, node): (&str, &crate::model::Node),
    lines: &[&GresLine],
    c: &Cluster,
    fail: Fail,
) {
    let short_of = |x: &crate::model::Gpu| c.model_of(x).map(|m| m.short_name.as_str());
    let shorts: BTreeSet<&str> = node.gpus.iter().filter_map(short_of).collect();
    if shorts.len() < 2 {
        return;
    }
    for g in lines.iter().filter(|g| g.key.0 == "gpu" && !g.mig) {
        let t = g.key.1.as_str();
        if !shorts.contains(t) {
            continue;
        }
        for i in g.files.iter().filter_map(|f| device_index(f)) {
            let Some(s) = node.gpus.iter().find(|x| x.index == i).and_then(short_of) else {
                continue;
            };
            if s != t {
                let msg = format!(
                    "gres.conf gives {name}'s GPU {i}, a {s}, the type {t}: a job asking for gpu:{t} may get it"
                );
                fail(Invariant::Carried, "slurm/gres.conf", msg);
            }
        }
    }
}

fn per_gpu(lines: &[&GresLine], name: &str) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for g in lines
        .iter()
        .filter(|g| g.key.0 == name && !g.files.is_empty())
    {
        let each = g.count / g.files.len() as u64;
        for f in &g.files {
            if let Some(i) = device_index(f) {
                *out.entry(i).or_default() += each;
            }
        }
    }
    out
}

/// Counts above the hardware drain the node.
fn drains(
    v: &mut View,
    (name, node): (&str, &crate::model::Node),
    c: &Cluster,
    plan: &Placement,
    fail: Fail,
) {
    let layouts = planned(plan, name);
    let whole = node
        .usable_gpus()
        .filter(|g| !layouts.contains_key(&g.index))
        .count() as u64;
    let ni = c.node_index.get(name).copied().unwrap_or(0);
    let mut problems = Vec::new();
    if v.whole_gpus() > whole {
        let n = v.whole_gpus();
        problems.push(format!(
            "{n} whole GPUs; it has {whole} usable ones outside MIG"
        ));
    }
    if let (Some(cpus), Some(milli)) = (v.cpus, c.node_cpu_milli(ni)) {
        if cpus as u64 * 1000 > milli {
            problems.push(format!(
                "CPUs={cpus}; it has {} hardware threads",
                milli / 1000
            ));
        }
    }
    if let (Some(mem), Some(bytes)) = (v.real_memory, c.node_memory(ni)) {
        if mem > bytes / (1 << 20) {
            problems.push(format!(
                "RealMemory={mem}; it has {} MiB",
                bytes / (1 << 20)
            ));
        }
    }
    for p in problems {
        v.valid = false;
        let msg = format!("slurm.conf gives {name} {p}: slurmd drains it");
        fail(Invariant::Capacity, FILE, msg);
    }
}

/// The node's MIG device types must be the plan's layout on it.
fn mig_devices(v: &View, name: &str, plan: &Placement, fail: Fail) {
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for l in planned(plan, name).values() {
        for (p, n) in l {
            *want.entry(p.clone()).or_default() += *n as u64;
        }
    }
    let have: BTreeMap<String, u64> = v
        .gres
        .iter()
        .filter(|((g, t), _)| g == "gpu" && v.mig_types.contains(t))
        .map(|((_, t), n)| (t.clone(), *n))
        .collect();
    if have != want {
        let show = |m: &BTreeMap<String, u64>| {
            if m.is_empty() {
                return "none".to_string();
            }
            let parts: Vec<String> = m.iter().map(|(p, n)| format!("{p} x{n}")).collect();
            parts.join(", ")
        };
        let msg = format!(
            "{name} has MIG devices {} in slurm.conf; the plan creates {}",
            show(&have),
            show(&want)
        );
        fail(Invariant::Mig, FILE, msg);
    }
}

/// No node asked for more than it has.
pub(crate) fn capacity(conf: &Conf, views: &BTreeMap<String, View>, uses: &[Use], sink: &mut Sink) {
    let mut per: BTreeMap<&str, Load> = BTreeMap::new();
    for u in uses {
        for p in &u.pods {
            let Some(v) = views.get(&p.node).filter(|v| v.valid) else {
                continue;
            };
            per.entry(&p.node).or_default().add(&u.class, p, conf, v);
        }
    }
    for (name, l) in per {
        let v = &views[name];
        let mut over = l.over_gres(v);
        over.extend(l.over_host(conf, v));
        for m in over {
            let classes: Vec<String> = l.classes.iter().cloned().collect();
            let msg = format!(
                "{name} is asked for {m} (classes on it: {})",
                classes.join(", ")
            );
            let at = (format!("NodeName={name}"), FILE);
            sink.push(Target::Slurm, Invariant::Capacity, (&at.0, at.1), msg);
        }
    }
}

#[derive(Default)]
struct Load {
    classes: BTreeSet<String>,
    gres: BTreeMap<GresKey, u64>,
    shards: BTreeMap<(String, u32), u64>,
    cpus: u64,
    mem: u64,
    pods: u64,
    /// Pods of jobs without `--mem`.
    whole_mem: u64,
}

fn gpus(m: &BTreeMap<GresKey, u64>, keep: impl Fn(&str) -> bool) -> u64 {
    m.iter()
        .filter(|((n, t), _)| n == "gpu" && keep(t))
        .map(|(_, c)| c)
        .sum()
}

impl Load {
    /// One pod's asks (its CPUs in whole cores under `CR_Core`).
    fn add(&mut self, class: &str, p: &super::PodUse, conf: &Conf, v: &View) {
        self.classes.insert(class.to_string());
        for ((n, t), c) in &p.gres {
            *self.gres.entry((n.clone(), t.clone())).or_default() += c;
            if let (true, Some(g)) = (n == "shard" || n == "mps", p.gpus.first()) {
                *self.shards.entry((n.clone(), *g)).or_default() += c;
            }
        }
        let tpc = v.threads_per_core.max(1) as u64;
        self.cpus += if conf.by_core {
            p.cpus.div_ceil(tpc) * tpc
        } else {
            p.cpus
        };
        self.mem += p.mem.unwrap_or(0);
        self.pods += 1;
        self.whole_mem += p.mem.is_none() as u64;
    }

    /// GRES past the node, in words: GPUs in all and per type, shards per GPU, GPUs
    /// given both whole and as shards.
    fn over_gres(&self, v: &View) -> Vec<String> {
        let mut out = Vec::new();
        let (asked, all) = (gpus(&self.gres, |_| true), gpus(&v.gres, |_| true));
        if asked > all {
            out.push(format!("{asked} gres/gpu; it has {all}"));
        }
        for ((n, t), c) in self.gres.iter().filter(|((_, t), _)| !t.is_empty()) {
            let have = v.gres.get(&(n.clone(), t.clone())).copied().unwrap_or(0);
            if *c > have {
                out.push(format!("{c} {n}:{t}; it has {have}"));
            }
        }
        for ((n, g), c) in &self.shards {
            let per = if n == "mps" { &v.mps } else { &v.shards };
            let have = per.get(g).copied().unwrap_or(0);
            if *c > have {
                out.push(format!("{c} {n} on GPU {g}; that GPU has {have}"));
            }
        }
        let whole = gpus(&self.gres, |t| !v.mig_types.contains(t));
        let shared = self
            .shards
            .keys()
            .map(|(_, g)| g)
            .collect::<BTreeSet<_>>()
            .len() as u64;
        if shared > 0 && whole + shared > v.whole_gpus() {
            let n = v.whole_gpus();
            out.push(format!(
                "{whole} whole GPUs plus {shared} GPU(s) given as shards; it has {n}"
            ));
        }
        out
    }

    /// CPUs and memory past the node (a job without `--mem` takes all of it when memory
    /// is consumable and no default is set).
    fn over_host(&self, conf: &Conf, v: &View) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(cpus) = v.cpus.filter(|c| self.cpus > *c as u64) {
            out.push(format!("{} CPUs; it has {cpus}", self.cpus));
        }
        if let Some(real) = v.real_memory.filter(|_| conf.memory) {
            if self.whole_mem > 0 && !conf.def_mem && self.pods > 1 {
                out.push(format!(
                    "{} jobs, {} of them without --mem (such a job takes all {real} MiB)",
                    self.pods, self.whole_mem
                ));
            } else if self.mem > real {
                out.push(format!("{} MiB of memory; it has {real}", self.mem));
            }
        }
        out
    }
}
