//! The `slurm/` target: slurm.conf, gres.conf, topology.conf, sacctmgr.sh and the
//! batch scripts (every `*.sbatch` under `slurm/`), checked the way slurmctld, slurmd,
//! sbatch and slurmdbd would take them: units matched to scripts, nodes' GRES, CPUs and
//! memory, shards, MIG devices, account and QOS limits (`GrpTRES`: MIG devices count
//! as `gres/gpu`, shards as `gres/shard`), switches and references.

mod accounts;
mod conf;
mod fit;
mod jobs;
mod nodes;
mod topology_yaml;

use super::matching;
use super::units::{self, Unit};
use super::{Checked, Invariant, Sink, Target};
use crate::model::{Cluster, Workload};
use crate::placement::Placement;
use conf::GresKey;
use jobs::Job;
use std::collections::{BTreeMap, BTreeSet};

const T: Target = Target::Slurm;

/// One pod of a planned unit under Slurm: what its node is asked.
pub(crate) struct PodUse {
    pub node: String,
    pub gpus: Vec<u32>,
    pub gres: Vec<(GresKey, u64)>,
    pub cpus: u64,
    /// MiB (`None`: no `--mem`).
    pub mem: Option<u64>,
}

pub(crate) struct Use {
    pub class: String,
    pub job: Option<usize>,
    pub pods: Vec<PodUse>,
}

fn parse_errors(sink: &mut Sink, file: &str, errors: Vec<String>) {
    for e in errors {
        sink.push(T, Invariant::Parse, (file, file), e);
    }
}

pub(crate) fn check(
    files: &BTreeMap<String, String>,
    c: &Cluster,
    plan: &Placement,
    units: &BTreeMap<String, Vec<Unit>>,
    sink: &mut Sink,
) -> Checked {
    let text = |f: &str| files.get(f).map(String::as_str).unwrap_or("");
    let (conf, e) = conf::parse(text("slurm/slurm.conf"));
    parse_errors(sink, "slurm/slurm.conf", e);
    let (gres, e) = conf::parse_gres(text("slurm/gres.conf"));
    parse_errors(sink, "slurm/gres.conf", e);
    let (leaves, e) = conf::parse_topology(text("slurm/topology.conf"));
    parse_errors(sink, "slurm/topology.conf", e);
    // Slurm 25.05+ reads topology.yaml instead of topology.conf when it exists.
    let yaml = files.get("slurm/topology.yaml").map(|t| {
        let (y, e) = topology_yaml::parse(t);
        parse_errors(sink, "slurm/topology.yaml", e);
        y
    });
    if let Some(y) = &yaml {
        for (name, p) in &conf.partitions {
            if let Some(t) = p.topology.as_ref().filter(|t| !y.by_name.contains_key(*t)) {
                let msg = format!(
                    "partition `{name}` names topology `{t}`, which topology.yaml does not define"
                );
                sink.push(
                    T,
                    Invariant::Reference,
                    ("slurm/slurm.conf", "slurm/slurm.conf"),
                    msg,
                );
            }
        }
    }
    let (acct, e) = accounts::parse(text("slurm/sacctmgr.sh"));
    parse_errors(sink, "slurm/sacctmgr.sh", e);
    for f in ["slurm/slurm.conf", "slurm/gres.conf"] {
        if !files.contains_key(f) {
            sink.push(T, Invariant::Reference, (f, ""), format!("{f} is missing"));
        }
    }
    let views = nodes::views(&conf, &gres, c, plan, sink);
    let scripts = read_jobs(files, sink);
    let scope = fit::Scope {
        conf: &conf,
        views: &views,
        leaves: &leaves,
        yaml: yaml.as_ref(),
    };
    let by_class = classify(&scripts, c, units, sink);
    let mut summary = Checked {
        objects: scripts.len(),
        nodes: views.len(),
        ..Checked::default()
    };
    let mut uses = Vec::new();
    for (class, list) in units {
        let Some(w) = c.workloads.iter().find(|w| &w.name == class) else {
            continue;
        };
        if !super::owns(c, T, w) {
            continue;
        }
        summary.classes += 1;
        summary.units += list.len();
        let js = by_class.get(class).cloned().unwrap_or_default();
        match_class(&scope, w, list, (&js, &scripts), sink, &mut uses);
    }
    nodes::capacity(&conf, &views, &uses, sink);
    sharing(&views, units, c, sink);
    imex(&conf, c, units, sink);
    references(
        &conf,
        &acct,
        &scripts,
        files.contains_key("slurm/sacctmgr.sh"),
        sink,
    );
    quotas(&acct, &scripts, &uses, sink);
    summary
}

/// The first Slurm with `switch/nvidia_imex` (slurm.conf(5); SchedMD/slurm commit
/// bd7f94a, 24.05).
const SLURM_IMEX: &[u32] = &[24, 5];

/// A gang on several nodes of one multi-node NVLink domain gets an IMEX channel from
/// `SwitchType=switch/nvidia_imex` (one per job, on all its nodes), where the declared
/// Slurm has the plugin; an older Slurm has no way to give one (gpuplan warned, GP940).
fn imex(conf: &conf::Conf, c: &Cluster, units: &BTreeMap<String, Vec<Unit>>, sink: &mut Sink) {
    if c.slurm_version.as_slice() < SLURM_IMEX
        || conf.switch_type.as_deref() == Some("switch/nvidia_imex")
    {
        return;
    }
    for (class, list) in units {
        let Some(w) = c.workloads.iter().find(|w| &w.name == class) else {
            continue;
        };
        if !super::owns(c, T, w) {
            continue;
        }
        let spanning = list
            .iter()
            .find_map(|u| super::dra::nvlink_domain(c, &u.nodes()).map(|d| (u, d)));
        if let Some((u, domain)) = spanning {
            let msg = format!(
                "the plan's {} of `{class}` spans {} nodes of multi-node NVLink domain {domain}, and slurm.conf sets no SwitchType=switch/nvidia_imex: the job gets no IMEX channel",
                u.what,
                u.pods.len()
            );
            sink.push(
                T,
                Invariant::Imex,
                ("slurm/slurm.conf", "slurm/slurm.conf"),
                msg,
            );
        }
    }
}

fn read_jobs(files: &BTreeMap<String, String>, sink: &mut Sink) -> Vec<Job> {
    let mut out = Vec::new();
    for (path, text) in files
        .iter()
        .filter(|(p, _)| p.starts_with("slurm/") && p.ends_with(".sbatch"))
    {
        match jobs::parse(path, text) {
            Ok(j) => out.push(j),
            Err(e) => sink.push(T, Invariant::Parse, (path, path), e),
        }
    }
    out
}

/// Scripts by class (`--comment=gpuplan.io/class=`; a script without one whose
/// `--job-name` is a class is taken as that class's, and reported).
fn classify(
    scripts: &[Job],
    c: &Cluster,
    units: &BTreeMap<String, Vec<Unit>>,
    sink: &mut Sink,
) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, j) in scripts.iter().enumerate() {
        let at = (j.file.as_str(), j.file.as_str());
        let class = match (&j.class, &j.name) {
            (Some(k), _) => k.clone(),
            (None, Some(n)) if c.workloads.iter().any(|w| &w.name == n) => {
                sink.push(T, Invariant::Coverage, at, format!("has no --comment=gpuplan.io/class=<class> (taken as class `{n}` by its --job-name)"));
                n.clone()
            }
            _ => {
                sink.push(
                    T,
                    Invariant::Coverage,
                    at,
                    "has no --comment=gpuplan.io/class=<class>: no class is carried by it".into(),
                );
                continue;
            }
        };
        let owned = c
            .workloads
            .iter()
            .find(|w| w.name == class)
            .is_some_and(|w| super::owns(c, T, w));
        if !owned || !units.contains_key(&class) {
            sink.push(T, Invariant::Excess, at, format!("submits {} job(s) of class `{class}`, which the plan does not place under slurm", j.array));
            continue;
        }
        out.entry(class).or_default().push(i);
    }
    out
}

fn match_class(
    s: &fit::Scope,
    w: &Workload,
    list: &[Unit],
    (js, scripts): (&[usize], &[Job]),
    sink: &mut Sink,
    uses: &mut Vec<Use>,
) {
    let caps: Vec<u32> = js.iter().map(|&i| scripts[i].array).collect();
    let mut can = |u: usize, k: usize| fit::carry(s, &scripts[js[k]], &list[u], w);
    let m = matching::assign(list.len(), &caps, &mut can);
    for (u, a) in m.assigned.iter().enumerate() {
        let job = a.map(|k| js[k]);
        let first = job.or(js.first().copied());
        uses.push(demand(s, w, &list[u], job.map(|i| &scripts[i]), first));
    }
    if js.is_empty() {
        let msg = format!(
            "class `{}` has {} planned unit(s) and no batch script in slurm/",
            w.name,
            list.len()
        );
        sink.push(
            T,
            Invariant::Coverage,
            (&format!("class/{}", w.name), ""),
            msg,
        );
        return;
    }
    for (k, inv, us) in m.unmatched() {
        let first = us[0];
        let (file, text) = match (k, m.reason(first)) {
            (Some(k), Some(r)) => (scripts[js[k]].file.clone(), r.to_string()),
            _ => {
                let n: u32 = caps.iter().sum();
                (
                    scripts[js[0]].file.clone(),
                    format!("its scripts submit {n} job(s) in all"),
                )
            }
        };
        let (n, all) = (us.len(), list.len());
        let msg = format!(
            "{n} of {all} planned unit(s) of class `{}` cannot be carried (first: {}): {text}",
            w.name, list[first].what
        );
        sink.push(T, inv, (&file, &file), msg);
    }
    excess(w, list.len(), (js, scripts), sink);
}

/// Scripts that submit more jobs than the plan gives their class.
fn excess(w: &Workload, units: usize, (js, scripts): (&[usize], &[Job]), sink: &mut Sink) {
    let cap: u64 = js.iter().map(|&i| scripts[i].array as u64).sum();
    if cap > units as u64 {
        let names: Vec<String> = js
            .iter()
            .map(|&i| format!("{} ({})", scripts[i].file, scripts[i].array))
            .collect();
        let file = &scripts[js[0]].file;
        let msg = format!(
            "scripts of class `{}` submit {cap} job(s): {}; the plan gives it {units}",
            w.name,
            names.join(", "),
        );
        sink.push(T, Invariant::Excess, (file, file), msg);
    }
}

/// What a unit's nodes are asked: its job's, or what the plan gives.
fn demand(
    s: &fit::Scope,
    w: &Workload,
    u: &Unit,
    matched: Option<&Job>,
    job: Option<usize>,
) -> Use {
    let (cpu, mem) = units::host_needs(w);
    let pods = u
        .pods
        .iter()
        .map(|p| {
            let planned = s
                .views
                .get(&p.node)
                .map(|v| fit::expected(p, v))
                .unwrap_or_default();
            PodUse {
                node: p.node.clone(),
                gpus: p.gpus.clone(),
                gres: matched.map_or(planned, |j| j.gres.clone()),
                cpus: matched.map_or(cpu.div_ceil(1000).max(1), Job::cpus),
                mem: matched.map_or(Some(mem.div_ceil(1 << 20)), Job::mem),
            }
        })
        .collect();
    Use {
        class: w.name.clone(),
        job,
        pods,
    }
}

/// A shared slot's GPU must have shards (or MPS shares, for an MPS class).
fn sharing(
    views: &BTreeMap<String, nodes::View>,
    units: &BTreeMap<String, Vec<Unit>>,
    c: &Cluster,
    sink: &mut Sink,
) {
    for (class, list) in units {
        let Some(w) = c
            .workloads
            .iter()
            .find(|w| &w.name == class)
            .filter(|w| super::owns(c, T, w))
        else {
            continue;
        };
        for p in list.iter().flat_map(|u| &u.pods) {
            let (Some(v), Some(g)) = (views.get(&p.node), p.gpus.first()) else {
                continue;
            };
            let Some(((name, _), _)) = fit::slot_gres(&p.gpu, v, Some(*g)) else {
                continue;
            };
            let per = if name == "mps" { &v.mps } else { &v.shards };
            if per.get(g).copied().unwrap_or(0) == 0 {
                let msg = format!(
                    "GPU {g} of {} has no {name} in gres.conf, yet the plan puts shared replicas of `{}` there",
                    p.node, w.name
                );
                sink.push(
                    T,
                    Invariant::Sharing,
                    (&format!("NodeName={}", p.node), "slurm/gres.conf"),
                    msg,
                );
            }
        }
    }
}

fn references(
    conf: &conf::Conf,
    acct: &accounts::Accounting,
    scripts: &[Job],
    has_acct: bool,
    sink: &mut Sink,
) {
    let used: BTreeSet<&str> = conf
        .nodes
        .values()
        .flat_map(|n| n.gres.keys().map(|(g, _)| g.as_str()))
        .collect();
    for g in used.into_iter().filter(|g| !conf.gres_types.contains(*g)) {
        sink.push(
            T,
            Invariant::Reference,
            ("GresTypes", "slurm/slurm.conf"),
            format!("nodes have gres `{g}`, which GresTypes does not list"),
        );
    }
    for j in scripts {
        let mut fail = |m: String| sink.push(T, Invariant::Reference, (&j.file, &j.file), m);
        if let Err(e) = fit::partition(conf, j) {
            fail(e);
        }
        if !has_acct {
            continue;
        }
        match &j.account {
            None => fail(
                "names no --account: its jobs are charged to the user's default account".into(),
            ),
            Some(a) if !acct.accounts.contains_key(a) => {
                fail(format!("account `{a}` is not created in sacctmgr.sh"))
            }
            Some(a) => {
                let allowed = acct.allowed_qos(a);
                if let Some(q) = j
                    .qos
                    .as_ref()
                    .filter(|q| !allowed.is_empty() && !allowed.contains(*q))
                {
                    fail(format!(
                        "QOS `{q}` is not among account {a}'s QOS ({})",
                        allowed.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        if let Some(q) = j.qos.as_ref().filter(|q| !acct.qos.contains_key(*q)) {
            fail(format!("QOS `{q}` is not created in sacctmgr.sh"));
        }
    }
}

/// TRES -> amount asked, and the classes asking it.
type Tres = BTreeMap<String, (u64, BTreeSet<String>)>;

/// Account (and parents) and QOS `GrpTRES` against the planned units, all at once.
fn quotas(acct: &accounts::Accounting, scripts: &[Job], uses: &[Use], sink: &mut Sink) {
    let mut per: BTreeMap<(bool, String), Tres> = BTreeMap::new();
    for u in uses {
        let Some(j) = u.job.map(|i| &scripts[i]) else {
            continue;
        };
        let mut owners: Vec<(bool, String)> = j
            .account
            .iter()
            .flat_map(|a| acct.chain(a))
            .map(|a| (true, a.to_string()))
            .collect();
        owners.extend(j.qos.iter().map(|q| (false, q.clone())));
        for p in &u.pods {
            let mut tres: Vec<(String, u64)> = vec![("cpu".into(), p.cpus), ("node".into(), 1)];
            tres.extend(p.mem.map(|m| ("mem".into(), m)));
            for ((n, t), c) in &p.gres {
                tres.push((format!("gres/{n}"), *c));
                if !t.is_empty() {
                    tres.push((format!("gres/{n}:{t}"), *c));
                }
            }
            for o in &owners {
                let e = per.entry(o.clone()).or_default();
                for (k, v) in &tres {
                    let x = e.entry(k.clone()).or_default();
                    x.0 += v;
                    x.1.insert(u.class.clone());
                }
            }
        }
    }
    for ((is_account, name), sums) in per {
        let limits = if is_account {
            acct.accounts.get(&name).map(|a| &a.grp)
        } else {
            acct.qos.get(&name)
        };
        for (k, limit) in limits.into_iter().flatten() {
            let Some((sum, classes)) = sums.get(k).filter(|(s, _)| s > limit) else {
                continue;
            };
            let who = if is_account { "account" } else { "QOS" };
            let msg = format!(
                "{who} {name}: the planned jobs ask {k}={sum} (classes {}); GrpTRES allows {limit}",
                classes.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            sink.push(
                T,
                Invariant::Quota,
                (&format!("{who}/{name}"), "slurm/sacctmgr.sh"),
                msg,
            );
        }
    }
}
