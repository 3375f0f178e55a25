//! `gpuplan import slurm DIR|slurm.conf`: a running Slurm cluster's configuration as
//! gpuplan's language (docs/import.md).
//!
//! Read: slurm.conf (`NodeName` lines with hostlists and `NodeName=DEFAULT`, CPUs,
//! boards, sockets, cores, threads, `RealMemory`, `Gres`; `PartitionName` lines;
//! `ClusterName`; `Include` files from the same folder), gres.conf next to it (GPU
//! types, device files and their `Cores`, MIG devices through `MultipleFiles`) and
//! topology.conf (tree switches, blocks). Written: the cluster with Slurm as its
//! scheduler, node classes grouped from identical hardware, `nodes` ranges (GPUs whose
//! device file is missing become `gpus-down`), the current MIG layouts, pools from
//! partitions and the fabric. What slurm.conf cannot tell (PCIe, NICs) is left out with
//! a comment naming the import that fills it.
//!
//! Decisions: a node in several partitions joins the pool of its first (the default
//! partition first, then by name), with a warning; a partition named like a pool mode
//! keeps that mode, others are `whole-gpu`. Without topology.conf (or for nodes it does
//! not list) one leaf holds the nodes, said in a comment, since gpuplan needs every node
//! under a leaf. A block (topology/block) of GB200/GB300 nodes is a multi-node NVLink
//! domain, other blocks are leaves. A GRES type that names only a family (`h100`: SXM,
//! PCIe, NVL...) maps to the family's catalog default with a warning.

pub mod conf;

use crate::catalog::{self, GpuSpec};
use crate::diag::Diagnostic;
use crate::discover::kdl::quote;
use crate::import::contract::Report;
use crate::source::{FileId, SourceMap, Span};
use conf::{Record, hostlist};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// GP741: a value cannot be read (a hostlist, a number, a GRES entry).
pub const GP741: &str = "GP741";
/// GP742: a GPU type maps to no catalog model; `--model TYPE=ID` is needed.
pub const GP742: &str = "GP742";
/// GP743: a node with GPUs cannot be described (several GPU models, no GPU count).
pub const GP743: &str = "GP743";
/// GP744: an assumption the reader should check (family alias, partitions, leaves).
pub const GP744: &str = "GP744";
/// GP745: MIG devices that cannot be told per GPU.
pub const GP745: &str = "GP745";
/// GP746: a part of topology.conf gpuplan cannot represent.
pub const GP746: &str = "GP746";
/// GP747: no slurm.conf, or it describes no node with GPUs.
pub const GP747: &str = "GP747";

/// The files of one import, loaded into the source map by the command.
pub struct Files {
    pub slurm: FileId,
    /// Files named by `Include` lines, found in the same folder.
    pub includes: Vec<FileId>,
    pub gres: Option<FileId>,
    pub topology: Option<FileId>,
}

/// `--model TYPE=ID` maps.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub models: Vec<(String, String)>,
}

/// One node as slurm.conf and gres.conf describe it.
#[derive(Clone, Debug)]
struct Node {
    name: String,
    span: Span,
    sockets: u32,
    cores: u32,
    threads: u32,
    memory_mib: Option<u64>,
    /// GRES `gpu` entries: (type, count).
    gres: Vec<(String, u32)>,
    /// The span of the line's `Gres=` pair.
    gres_span: Span,
}

/// A node's GPUs once the model is known.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hardware {
    model: String,
    gpus: u32,
    sockets: u32,
    cores: u32,
    threads: u32,
    memory_mib: Option<u64>,
    /// NUMA groups from gres.conf `Cores`: (GPU indices, cores).
    numa: Vec<(Vec<u32>, String)>,
}

/// Per node: the GPU devices gres.conf lists.
#[derive(Clone, Debug, Default)]
struct Devices {
    /// The GPU `Type`s gres.conf names for the node (AutoDetect writes the full model
    /// name, e.g. `nvidia_a100_80gb_pcie_1g.10gb`, where slurm.conf may say `1g.10gb`).
    types: BTreeSet<String>,
    /// Whole GPUs: index -> Cores.
    whole: BTreeMap<u32, Option<String>>,
    /// MIG devices: parent GPU index -> profiles.
    mig: BTreeMap<u32, Vec<String>>,
}

/// What the import saw of each node and why it left one out (for the contract's
/// [`Report`]).
#[derive(Default)]
struct Ledger {
    /// Every node of a `NodeName` line, with the GPUs its `Gres=` counts.
    seen: Vec<(String, u64)>,
    /// Why a node is not in the output: (code, reason).
    why: BTreeMap<String, (String, String)>,
}

impl Ledger {
    fn drop(&mut self, name: &str, code: &str, reason: String) {
        self.why
            .entry(name.to_string())
            .or_insert_with(|| (code.to_string(), reason));
    }
}

/// Reads the files; the KDL text (or `None` when nothing could be imported), the
/// import report and the diagnostics.
pub fn import(
    sources: &SourceMap,
    files: &Files,
    opts: &Options,
    header: &str,
) -> (Option<String>, Report, Vec<Diagnostic>) {
    let mut ledger = Ledger::default();
    let (text, diags, imported) = read_all(sources, files, opts, header, &mut ledger);
    let mut report = Report::new("slurm");
    report.reconcile(&ledger.seen, &imported, &ledger.why);
    (text, report, diags)
}

fn read_all(
    sources: &SourceMap,
    files: &Files,
    opts: &Options,
    header: &str,
    ledger: &mut Ledger,
) -> (Option<String>, Vec<Diagnostic>, BTreeMap<String, u64>) {
    let mut diags = Vec::new();
    conf::reset_budget(crate::limits::current().names);
    let text = |f: FileId| sources.get(f).map_or("", |x| &*x.text).to_string();
    let mut records = conf::records(files.slurm, &text(files.slurm), &mut diags);
    for &f in &files.includes {
        records.extend(conf::records(f, &text(f), &mut diags));
    }
    let cluster = records
        .iter()
        .find_map(|r| r.value("clustername"))
        .map(|c| crate::import::names::sanitize(c, 40));
    let nodes = read_nodes(&records, &mut diags, ledger);
    if nodes.is_empty() {
        diags.push(
            Diagnostic::error(GP747, "slurm.conf declares no node with GPUs")
                .at(Span::new(files.slurm, 0, 0), "in this file")
                .with_help("give the cluster's slurm.conf (NodeName lines with Gres=gpu:...)"),
        );
        return (None, diags, BTreeMap::new());
    }
    let gres_records = files
        .gres
        .map(|f| conf::records(f, &text(f), &mut diags))
        .unwrap_or_default();
    let devices = read_gres(&gres_records, &nodes, &mut diags);
    let described = describe(&nodes, &devices, opts, &mut diags, ledger);
    let imported: BTreeMap<String, u64> = described
        .iter()
        .map(|d| (d.name.clone(), u64::from(d.hardware.gpus)))
        .collect();
    if described.is_empty() {
        return (None, diags, imported);
    }
    let partitions = partitions(&records, &described, &mut diags);
    let topo_records = files
        .topology
        .map(|f| conf::records(f, &text(f), &mut diags))
        .unwrap_or_default();
    let fabric = fabric(
        &topo_records,
        &described,
        files.topology.is_some(),
        &mut diags,
    );
    let out = render(header, cluster.as_deref(), &described, &partitions, &fabric);
    (Some(out), diags, imported)
}

fn number(r: &Record, key: &str, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    let p = r.get(key)?;
    match p.value.trim().parse::<u64>() {
        Ok(v) => Some(v),
        Err(_) => {
            diags.push(
                Diagnostic::warning(GP741, format!("`{}` is not a number; ignored", p.value))
                    .at(p.span, "not a number")
                    .with_help("Slurm takes whole numbers here"),
            );
            None
        }
    }
}

/// `NodeName` lines (with `NodeName=DEFAULT` applied) into nodes with GPUs, by name.
fn read_nodes(
    records: &[Record],
    diags: &mut Vec<Diagnostic>,
    ledger: &mut Ledger,
) -> BTreeMap<String, Node> {
    let mut defaults: BTreeMap<String, String> = BTreeMap::new();
    let mut out: BTreeMap<String, Node> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind() == "nodename") {
        let Some(names_pair) = r.get("nodename") else {
            continue;
        };
        if names_pair.value.eq_ignore_ascii_case("default") {
            for p in &r.pairs[1..] {
                defaults.insert(p.key.clone(), p.value.clone());
            }
            continue;
        }
        // The line with the defaults filled in.
        let mut full = r.clone();
        for (k, v) in &defaults {
            if full.get(k).is_none() {
                full.pairs.push(conf::Pair {
                    key: k.clone(),
                    value: v.clone(),
                    span: r.span,
                });
            }
        }
        let names = match hostlist(&names_pair.value) {
            Ok(n) => n,
            Err(e) => {
                diags.push(
                    Diagnostic::error(GP741, format!("NodeName `{}`: {e}", names_pair.value))
                        .at(names_pair.span, "this hostlist")
                        .with_help("write node names as Slurm hostlists, e.g. gpu[001-032]"),
                );
                continue;
            }
        };
        // The run's nodes limit, as `validate` would apply it to the output: an import
        // past it is refused here, before the work of describing every node.
        let limit = crate::limits::current().nodes;
        if (out.len() + names.len()) as u64 > limit {
            diags.push(
                Diagnostic::error(
                    GP741,
                    format!(
                        "NodeName `{}`: the site declares more than {limit} nodes (the nodes limit)",
                        names_pair.value
                    ),
                )
                .at(names_pair.span, "this hostlist goes past the limit")
                .with_help(crate::limits::hint("nodes")),
            );
            break;
        }
        let gres = gres_gpus(&full, diags);
        let whole: u64 = gres
            .iter()
            .filter(|(t, _)| catalog_mig_profile(t).is_none())
            .map(|(_, c)| u64::from(*c))
            .sum();
        for name in &names {
            ledger.seen.push((name.clone(), whole));
        }
        if gres.is_empty() {
            for name in &names {
                ledger.drop(name, GP747, "no `Gres=gpu` on its NodeName line".into());
            }
            continue;
        }
        let gres_span = full.get("gres").map_or(r.span, |p| p.span);
        let boards = number(&full, "boards", diags).unwrap_or(1).max(1);
        let sockets = number(&full, "socketsperboard", diags)
            .map(|s| s * boards)
            .or_else(|| number(&full, "sockets", diags));
        let cores = number(&full, "corespersocket", diags);
        let threads = number(&full, "threadspercore", diags).unwrap_or(1).max(1);
        let cpus = number(&full, "cpus", diags);
        let (sockets, cores, threads) = match (sockets, cores, cpus) {
            (Some(s), Some(c), _) => (s, c, threads),
            (None, Some(c), _) => (1, c, threads),
            (Some(s), None, Some(cpu)) => (s, (cpu / (s * threads)).max(1), threads),
            (None, None, Some(cpu)) => (1, cpu.max(1), 1),
            _ => (1, 1, 1),
        };
        let memory_mib = number(&full, "realmemory", diags).filter(|m| *m > 1);
        for name in names {
            if let Err(e) = crate::units::validate_node_name(&name) {
                ledger.drop(&name, GP741, e.to_string());
                diags.push(
                    Diagnostic::warning(GP741, format!("node `{name}` is left out: {e}"))
                        .at(names_pair.span, "in this hostlist")
                        .with_help("gpuplan node names are lowercase DNS labels"),
                );
                continue;
            }
            out.insert(
                name.clone(),
                Node {
                    name,
                    span: names_pair.span,
                    sockets: sockets as u32,
                    cores: cores as u32,
                    threads: threads as u32,
                    memory_mib,
                    gres: gres.clone(),
                    gres_span,
                },
            );
        }
    }
    out
}

/// The `gpu` entries of a line's `Gres=`: (type, count); an untyped entry has type "".
fn gres_gpus(r: &Record, diags: &mut Vec<Diagnostic>) -> Vec<(String, u32)> {
    let Some(p) = r.get("gres") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in p.value.split(',') {
        // gpu[:type]:count[(S:0-1)]
        let entry = entry.split('(').next().unwrap_or("").trim();
        let parts: Vec<&str> = entry.split(':').collect();
        if parts.first() != Some(&"gpu") {
            continue;
        }
        let (ty, count) = match parts.as_slice() {
            [_, count] => ("", *count),
            [_, ty, count] => (*ty, *count),
            _ => ("", ""),
        };
        match count.parse::<u32>() {
            Ok(n) if n > 0 => out.push((ty.to_string(), n)),
            Ok(_) => {}
            Err(_) => diags.push(
                Diagnostic::warning(
                    GP741,
                    format!("GRES entry `{entry}` has no GPU count; ignored"),
                )
                .at(p.span, "this Gres")
                .with_help("write it as gpu:TYPE:COUNT, e.g. gpu:h100:8"),
            ),
        }
    }
    out
}

/// gres.conf: per node, its GPU device files (whole GPUs with `Cores`, MIG devices by
/// their parent GPU).
fn read_gres(
    records: &[Record],
    nodes: &BTreeMap<String, Node>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Devices> {
    let mut out: BTreeMap<String, Devices> = BTreeMap::new();
    for r in records {
        if r.value("name").is_none_or(|n| n != "gpu") {
            continue;
        }
        let targets: Vec<String> = match r.get("nodename") {
            Some(p) => match hostlist(&p.value) {
                Ok(n) => n,
                Err(e) => {
                    diags.push(
                        Diagnostic::warning(
                            GP741,
                            format!("gres.conf NodeName `{}`: {e}", p.value),
                        )
                        .at(p.span, "this hostlist")
                        .with_help("write node names as Slurm hostlists"),
                    );
                    continue;
                }
            },
            None => nodes.keys().cloned().collect(),
        };
        let ty = r.value("type").unwrap_or("");
        let files: Vec<String> = r
            .value("multiplefiles")
            .or_else(|| r.value("file"))
            .map(|f| crate::units::expand_pattern_list(f).unwrap_or_default())
            .unwrap_or_default();
        let indices: Vec<u32> = files.iter().filter_map(|f| gpu_index(f)).collect();
        let mig = catalog_mig_profile(ty);
        for t in targets.iter().filter(|t| nodes.contains_key(*t)) {
            let d = out.entry(t.clone()).or_default();
            if !ty.is_empty() {
                d.types.insert(ty.to_string());
            }
            match &mig {
                Some(profile) => {
                    // One MIG device per line; its parent is the GPU's own device file.
                    if let Some(&parent) = indices.first() {
                        let count = r
                            .value("count")
                            .and_then(|c| c.parse::<usize>().ok())
                            .unwrap_or(1);
                        for _ in 0..count {
                            d.mig.entry(parent).or_default().push(profile.clone());
                        }
                    }
                }
                None => {
                    for &i in &indices {
                        d.whole.insert(i, r.value("cores").map(str::to_string));
                    }
                }
            }
        }
    }
    out
}

/// `/dev/nvidia3` -> 3 (not `/dev/nvidiactl`, `/dev/nvidia-caps/...`).
fn gpu_index(file: &str) -> Option<u32> {
    file.strip_prefix("/dev/nvidia")?.parse().ok()
}

/// The MIG profile of a GRES type like `a100_3g.40gb`, `nvidia_a100_1g.10gb`, or a
/// bare `1g.10gb`.
fn catalog_mig_profile(ty: &str) -> Option<String> {
    let profile = ty.rsplit_once('_').map_or(ty, |(_, p)| p);
    let (g, rest) = profile.split_once("g.")?;
    let ok = !g.is_empty() && g.bytes().all(|c| c.is_ascii_digit()) && rest.contains("gb");
    ok.then(|| profile.to_string())
}

/// The GPU model part of a MIG GRES type (`a100` of `a100_3g.40gb`; empty for a bare
/// profile).
fn model_part(ty: &str) -> &str {
    match catalog_mig_profile(ty) {
        Some(p) => ty
            .strip_suffix(p.as_str())
            .map_or(ty, |x| x.trim_end_matches('_')),
        None => ty,
    }
}

/// Resolves a GRES type: `--model`, then the catalog; warns on a family alias.
fn resolve(
    ty: &str,
    opts: &Options,
    span: Span,
    diags: &mut Vec<Diagnostic>,
    warned: &mut BTreeSet<String>,
) -> Option<&'static GpuSpec> {
    let base = model_part(ty);
    let key = if base.is_empty() { "gpu" } else { base };
    if let Some((_, id)) = opts.models.iter().find(|(t, _)| t == key || t == ty) {
        return match catalog::lookup(id) {
            Some(g) => Some(g),
            None => {
                if warned.insert(format!("bad {id}")) {
                    diags.push(
                        Diagnostic::error(
                            GP742,
                            format!("`--model {key}={id}`: `{id}` is not a catalog model"),
                        )
                        .with_help("name a model of docs/catalog.md, e.g. h100-sxm5-80gb"),
                    );
                }
                None
            }
        };
    }
    let found = (!base.is_empty())
        .then(|| catalog::identify(base))
        .flatten();
    match found {
        Some(g) => {
            let family: Vec<&str> = catalog::all()
                .iter()
                .filter(|x| x.short_name.eq_ignore_ascii_case(base))
                .map(|x| x.id)
                .collect();
            if family.len() > 1 && warned.insert(base.to_string()) {
                diags.push(
                    Diagnostic::warning(
                        GP744,
                        format!(
                            "GPU type `{base}` names a family ({}); `{}` is assumed",
                            family.join(", "),
                            g.id
                        ),
                    )
                    .at(span, "this GPU type")
                    .with_help(format!(
                        "if the nodes have another part, pass `--model {base}=ID`"
                    )),
                );
            }
            Some(g)
        }
        None => {
            if warned.insert(format!("unknown {key}")) {
                let what = if base.is_empty() {
                    "an untyped GPU GRES (`gpu:N`)".to_string()
                } else {
                    format!("GPU type `{base}`")
                };
                diags.push(
                    Diagnostic::error(GP742, format!("{what} maps to no catalog model"))
                        .at(span, "this Gres")
                        .with_help(format!(
                            "pass `--model {key}=ID` with a model of docs/catalog.md, e.g. `--model {key}=a100-sxm4-80gb`"
                        )),
                );
            }
            None
        }
    }
}

/// A node described for gpuplan.
#[derive(Clone, Debug)]
struct Described {
    name: String,
    hardware: Hardware,
    down: Vec<u32>,
    /// MIG layouts per GPU index (current).
    mig: BTreeMap<u32, Vec<String>>,
}

fn describe(
    nodes: &BTreeMap<String, Node>,
    devices: &BTreeMap<String, Devices>,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
    ledger: &mut Ledger,
) -> Vec<Described> {
    let mut out = Vec::new();
    let mut warned = BTreeSet::new();
    let none = Devices::default();
    for n in nodes.values() {
        let mut models: BTreeSet<&'static str> = BTreeSet::new();
        let mut failed = false;
        let d = devices.get(&n.name).unwrap_or(&none);
        for (ty, _) in &n.gres {
            // A bare MIG profile (`1g.10gb`) names no model: gres.conf's full type of
            // the same profile does, when the node has one (AutoDetect=nvml writes it).
            let full = if model_part(ty).is_empty() {
                d.types
                    .iter()
                    .find(|t| {
                        !model_part(t).is_empty()
                            && catalog_mig_profile(t) == catalog_mig_profile(ty)
                    })
                    .map_or(ty.as_str(), String::as_str)
            } else {
                ty.as_str()
            };
            match resolve(full, opts, n.gres_span, diags, &mut warned) {
                Some(g) => {
                    models.insert(g.id);
                }
                None => failed = true,
            }
        }
        if failed {
            ledger.drop(&n.name, GP742, "a GPU type maps to no catalog model".into());
            continue;
        }
        if models.len() != 1 {
            ledger.drop(&n.name, GP743, "GPUs of several models".into());
            diags.push(
                Diagnostic::warning(
                    GP743,
                    format!(
                        "node `{}` has GPUs of several models ({}); it is left out",
                        n.name,
                        models.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                )
                .at(n.span, "declared here")
                .with_help(
                    "gpuplan describes one GPU model per node class; declare this node by hand",
                ),
            );
            continue;
        }
        let model = models.into_iter().next().unwrap_or_default().to_string();
        let has_mig = n.gres.iter().any(|(t, _)| catalog_mig_profile(t).is_some());
        let listed: BTreeSet<u32> = d.whole.keys().chain(d.mig.keys()).copied().collect();
        let whole_count: u32 = n
            .gres
            .iter()
            .filter(|(t, _)| catalog_mig_profile(t).is_none())
            .map(|(_, c)| c)
            .sum();
        let (gpus, down) = if let Some(&max) = listed.iter().max() {
            let down: Vec<u32> = (0..=max).filter(|i| !listed.contains(i)).collect();
            (max + 1, down)
        } else if has_mig {
            ledger.drop(
                &n.name,
                GP745,
                "MIG GRES that gres.conf does not place on GPUs".into(),
            );
            diags.push(
                Diagnostic::warning(
                    GP745,
                    format!(
                        "node `{}` has MIG GRES but gres.conf does not say which GPU holds which instance; it is left out",
                        n.name
                    ),
                )
                .at(n.span, "declared here")
                .with_help("give gres.conf with File/MultipleFiles lines, or import the node with `gpuplan import nvidia-smi-xml`"),
            );
            continue;
        } else {
            (whole_count, Vec::new())
        };
        let mig = mig_layouts(n, d, &model, diags);
        let numa = numa_groups(d, &down);
        out.push(Described {
            name: n.name.clone(),
            hardware: Hardware {
                model,
                gpus,
                sockets: n.sockets,
                cores: n.cores,
                threads: n.threads,
                memory_mib: n.memory_mib,
                numa,
            },
            down,
            mig,
        });
    }
    out
}

/// The MIG layouts gres.conf lists, checked by the catalog's placement rules.
fn mig_layouts(
    n: &Node,
    d: &Devices,
    model: &str,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<u32, Vec<String>> {
    let Some(spec) = catalog::lookup(model).and_then(|g| g.mig) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (gpu, profiles) in &d.mig {
        let names: Vec<String> = profiles
            .iter()
            .map(|p| {
                spec.profile_any_name(p)
                    .map_or(p.clone(), |q| q.name.to_string())
            })
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        match catalog::fits(spec, &refs) {
            Ok(_) => {
                let mut sorted = names.clone();
                sorted.sort();
                out.insert(*gpu, sorted);
            }
            Err(e) => diags.push(
                Diagnostic::warning(
                    GP745,
                    format!("node `{}` GPU {gpu}: MIG devices {} do not form a layout of {model} ({e}); left out", n.name, names.join(", ")),
                )
                .at(n.span, "declared here")
                .with_help("check gres.conf against `nvidia-smi mig -lgi` on the node"),
            ),
        }
    }
    out
}

/// NUMA groups: GPUs with the same `Cores`, in order of their first GPU. A GPU without
/// a device file (down) joins the group of its nearest listed neighbour below (else
/// above), so that a node with a failed GPU keeps its class (NUMA groups of GPU servers
/// are runs of consecutive GPUs).
fn numa_groups(d: &Devices, down: &[u32]) -> Vec<(Vec<u32>, String)> {
    let mut by_cores: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (i, cores) in &d.whole {
        match cores {
            Some(c) => by_cores.entry(c).or_default().push(*i),
            None => return Vec::new(),
        }
    }
    if by_cores.len() < 2 {
        return Vec::new();
    }
    let mut groups: Vec<(Vec<u32>, String)> = by_cores
        .into_iter()
        .map(|(c, g)| (g, c.to_string()))
        .collect();
    for &g in down {
        let near = |i: u32| groups.iter().position(|(v, _)| v.contains(&i));
        let below = (0..g).rev().find_map(near);
        let above = || (g + 1..g + 64).find_map(near);
        if let Some(k) = below.or_else(above) {
            groups[k].0.push(g);
            groups[k].0.sort_unstable();
        }
    }
    groups.sort();
    groups
}

/// Pools from partitions: node -> partition (first: default, then by name).
fn partitions(
    records: &[Record],
    nodes: &[Described],
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<String>> {
    let known: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let mut parts: Vec<(bool, String, Vec<String>, Span)> = Vec::new();
    for r in records.iter().filter(|r| r.kind() == "partitionname") {
        let Some(name) = r.value("partitionname") else {
            continue;
        };
        if name.eq_ignore_ascii_case("default") {
            continue;
        }
        let members = match r.value("nodes") {
            Some(v) if v.eq_ignore_ascii_case("all") => {
                known.iter().map(|s| s.to_string()).collect()
            }
            Some(v) => match hostlist(v) {
                Ok(n) => n,
                Err(e) => {
                    diags.push(
                        Diagnostic::warning(GP741, format!("partition `{name}` Nodes: {e}"))
                            .at(r.span, "this partition")
                            .with_help("write node names as Slurm hostlists"),
                    );
                    continue;
                }
            },
            None => Vec::new(),
        };
        let default = r
            .value("default")
            .is_some_and(|d| d.eq_ignore_ascii_case("yes"));
        parts.push((!default, name.to_string(), members, r.span));
    }
    parts.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut multi: BTreeSet<String> = BTreeSet::new();
    for (_, name, members, _) in &parts {
        for m in members.iter().filter(|m| known.contains(m.as_str())) {
            if owner.contains_key(m) {
                multi.insert(m.clone());
            } else {
                owner.insert(m.clone(), name.clone());
            }
        }
    }
    if !multi.is_empty() {
        let list: Vec<String> = multi.into_iter().collect();
        diags.push(
            Diagnostic::warning(
                GP744,
                format!(
                    "{} node(s) are in several partitions ({}); each joins the pool of its first (the default partition, then by name)",
                    list.len(),
                    crate::units::compress_names(&list).join(",")
                ),
            )
            .with_help("a gpuplan node is in one pool; partitions that overlap are Slurm's business"),
        );
    }
    let mut pools: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (node, part) in owner {
        pools.entry(part).or_default().push(node);
    }
    pools
}

/// The fabric: leaves (with spines and cores above) and multi-node NVLink domains.
#[derive(Default)]
struct Fabric {
    /// Switch name -> (tier, children switches, nodes).
    switches: BTreeMap<String, (u8, Vec<String>, Vec<String>)>,
    nvlink: Vec<(String, Vec<String>)>,
    /// Nodes under no leaf, put under one catch-all leaf.
    orphans: Vec<String>,
    no_topology: bool,
}

fn fabric(
    records: &[Record],
    nodes: &[Described],
    have_file: bool,
    diags: &mut Vec<Diagnostic>,
) -> Fabric {
    let known: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let multi_node: BTreeSet<&str> = nodes
        .iter()
        .filter(|n| n.hardware.model.starts_with("gb"))
        .map(|n| n.name.as_str())
        .collect();
    let mut f = Fabric {
        no_topology: !have_file,
        ..Fabric::default()
    };
    let expand = |r: &Record, key: &str, diags: &mut Vec<Diagnostic>| -> Vec<String> {
        let Some(p) = r.get(key) else {
            return Vec::new();
        };
        hostlist(&p.value).unwrap_or_else(|e| {
            diags.push(
                Diagnostic::warning(GP741, format!("`{}`: {e}", p.value))
                    .at(p.span, "this hostlist")
                    .with_help("write names as Slurm hostlists"),
            );
            Vec::new()
        })
    };
    let mut raw: BTreeMap<String, (Vec<String>, Vec<String>, Span)> = BTreeMap::new();
    for r in records {
        match r.kind() {
            "switchname" => {
                let name = crate::import::names::sanitize(r.value("switchname").unwrap_or(""), 63);
                let members: Vec<String> = expand(r, "nodes", diags)
                    .into_iter()
                    .filter(|n| known.contains(n.as_str()))
                    .collect();
                let children: Vec<String> = expand(r, "switches", diags)
                    .iter()
                    .map(|s| crate::import::names::sanitize(s, 63))
                    .collect();
                raw.insert(name, (children, members, r.span));
            }
            "blockname" => {
                let name = crate::import::names::sanitize(r.value("blockname").unwrap_or(""), 63);
                let members: Vec<String> = expand(r, "nodes", diags)
                    .into_iter()
                    .filter(|n| known.contains(n.as_str()))
                    .collect();
                if members.is_empty() {
                    continue;
                }
                if members.iter().all(|m| multi_node.contains(m.as_str())) {
                    f.nvlink.push((name.clone(), members.clone()));
                }
                raw.entry(format!("{name}-leaf"))
                    .or_insert((Vec::new(), members, r.span));
            }
            _ => {}
        }
    }
    // Heights: leaves 0, then 1 + the highest child.
    fn height(
        s: &str,
        raw: &BTreeMap<String, (Vec<String>, Vec<String>, Span)>,
        depth: usize,
    ) -> usize {
        match raw.get(s) {
            Some((children, _, _)) if !children.is_empty() && depth < 16 => children
                .iter()
                .map(|c| 1 + height(c, raw, depth + 1))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }
    let mut placed: BTreeSet<String> = BTreeSet::new();
    for (name, (children, members, span)) in &raw {
        let h = height(name, &raw, 0);
        if h > 2 {
            diags.push(
                Diagnostic::warning(
                    GP746,
                    format!("switch `{name}` is {h} levels above its nodes; gpuplan has leaf, spine and core, so it is left out"),
                )
                .at(*span, "this switch")
                .with_help("describe deeper fabrics by hand (docs/language.md `fabric`)"),
            );
            continue;
        }
        if !children.is_empty() && !members.is_empty() {
            diags.push(
                Diagnostic::warning(
                    GP746,
                    format!(
                        "switch `{name}` has both nodes and switches; its switches are ignored"
                    ),
                )
                .at(*span, "this switch")
                .with_help("a gpuplan leaf holds nodes, a spine holds leaves"),
            );
        }
        let children = if members.is_empty() {
            children.clone()
        } else {
            Vec::new()
        };
        let tier = if members.is_empty() { h as u8 } else { 0 };
        if tier == 0 {
            placed.extend(members.iter().cloned());
        }
        f.switches
            .insert(name.clone(), (tier, children, members.clone()));
    }
    f.orphans = known
        .iter()
        .filter(|n| !placed.contains(**n))
        .map(|n| n.to_string())
        .collect();
    if !f.orphans.is_empty() && have_file {
        diags.push(
            Diagnostic::warning(
                GP744,
                format!(
                    "{} node(s) are under no switch of topology.conf ({}); one leaf `unlisted` holds them",
                    f.orphans.len(),
                    crate::units::compress_names(&f.orphans).join(",")
                ),
            )
            .with_help("gpuplan needs every node under a leaf; put them where they are cabled"),
        );
    }
    f
}

/// The KDL document.
fn render(
    header: &str,
    cluster: Option<&str>,
    nodes: &[Described],
    pools: &BTreeMap<String, Vec<String>>,
    f: &Fabric,
) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "// {}", crate::fmt::comment(line));
    }
    s.push_str("//\n// slurm.conf does not say how GPUs, NICs and CPUs are wired: PCIe switches, compute\n");
    s.push_str(
        "// NICs and NVLink inside a node are left out. `gpuplan import nvidia-smi-topo` (or\n",
    );
    s.push_str("// `gpuplan discover` on one node of each class) fills them in.\n\n");
    let _ = writeln!(
        s,
        "cluster {} {{\n    scheduler \"slurm\"\n}}\n",
        quote(cluster.unwrap_or("slurm-cluster"))
    );
    // Classes from identical hardware, named after the model's short name and count.
    let mut classes: BTreeMap<&Hardware, Vec<&Described>> = BTreeMap::new();
    for n in nodes {
        classes.entry(&n.hardware).or_default().push(n);
    }
    let mut used = BTreeSet::new();
    let mut names: Vec<(String, &Hardware, Vec<&Described>)> = Vec::new();
    for (hw, members) in classes {
        let short = catalog::lookup(&hw.model).map_or("gpu", |g| g.short_name);
        let base = crate::import::names::sanitize(&format!("{short}-x{}", hw.gpus), 63);
        names.push((crate::import::names::unique(&base, &mut used), hw, members));
    }
    for (name, hw, members) in &names {
        let _ = writeln!(s, "node-class {} {{", quote(name));
        let _ = writeln!(
            s,
            "    cpu sockets={} cores-per-socket={} threads-per-core={}",
            hw.sockets, hw.cores, hw.threads
        );
        if let Some(m) = hw.memory_mib {
            let _ = writeln!(s, "    memory {}  // RealMemory", quote(&memory(m)));
        }
        let _ = writeln!(s, "    gpus {} model={}", hw.gpus, quote(&hw.model));
        for (i, (gpus, cores)) in hw.numa.iter().enumerate() {
            let _ = writeln!(
                s,
                "    numa {i} gpus={} cores={}  // gres.conf Cores",
                quote(&crate::units::format_index_set(gpus)),
                quote(cores)
            );
        }
        s.push_str("}\n\n");
        let list: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
        let down: Vec<&&Described> = members.iter().filter(|m| !m.down.is_empty()).collect();
        for pattern in crate::units::compress_names(&list) {
            // Expanded once per pattern: not once per down node.
            let names: std::collections::BTreeSet<String> = crate::units::expand_pattern(&pattern)
                .unwrap_or_default()
                .into_iter()
                .collect();
            let inside: Vec<&&&Described> =
                down.iter().filter(|m| names.contains(&m.name)).collect();
            if inside.is_empty() {
                let _ = writeln!(s, "nodes {} class={}", quote(&pattern), quote(name));
                continue;
            }
            let _ = writeln!(s, "nodes {} class={} {{", quote(&pattern), quote(name));
            for m in inside {
                let _ = writeln!(
                    s,
                    "    node {} gpus-down={}  // no device file in gres.conf",
                    quote(&m.name),
                    quote(&crate::units::format_index_set(&m.down))
                );
            }
            s.push_str("}\n");
        }
        s.push('\n');
    }
    let mut pool_names = BTreeSet::new();
    for (part, members) in pools {
        let pool = crate::import::names::unique(
            &crate::import::names::sanitize(part, 63),
            &mut pool_names,
        );
        let mode = match part.as_str() {
            "mig" | "time-slice" | "mps" | "training" | "whole-gpu" => part.as_str(),
            _ => {
                if members
                    .iter()
                    .any(|m| nodes.iter().any(|n| &n.name == m && !n.mig.is_empty()))
                {
                    "mig"
                } else {
                    "whole-gpu"
                }
            }
        };
        let _ = writeln!(
            s,
            "pool {} mode={} nodes={}  // partition {}",
            quote(&pool),
            quote(mode),
            quote(&crate::import::names::one_pattern(members)),
            crate::fmt::comment(part)
        );
    }
    if !pools.is_empty() {
        s.push('\n');
    }
    render_fabric(&mut s, f);
    let mig: Vec<&Described> = nodes.iter().filter(|n| !n.mig.is_empty()).collect();
    if !mig.is_empty() {
        s.push_str("\n// MIG as gres.conf lists it now: kept where it serves the plan.\nmig {\n");
        let mut lines: BTreeMap<(Vec<String>, Vec<u32>), Vec<String>> = BTreeMap::new();
        for n in mig {
            let mut by_layout: BTreeMap<&Vec<String>, Vec<u32>> = BTreeMap::new();
            for (g, l) in &n.mig {
                by_layout.entry(l).or_default().push(*g);
            }
            for (l, gpus) in by_layout {
                lines
                    .entry((l.clone(), gpus))
                    .or_default()
                    .push(n.name.clone());
            }
        }
        for ((layout, gpus), nodes) in lines {
            let profiles: Vec<String> = layout.iter().map(|p| quote(p)).collect();
            let _ = writeln!(
                s,
                "    layout {} nodes={} gpus={} current=#true",
                profiles.join(" "),
                quote(&crate::import::names::one_pattern(&nodes)),
                quote(&crate::units::format_index_set(&gpus))
            );
        }
        s.push_str("}\n");
    }
    s
}

fn memory(mib: u64) -> String {
    if mib % (1024 * 1024) == 0 {
        format!("{}TiB", mib / (1024 * 1024))
    } else if mib % 1024 == 0 {
        format!("{}GiB", mib / 1024)
    } else {
        format!("{mib}MiB")
    }
}

fn render_fabric(s: &mut String, f: &Fabric) {
    s.push_str("fabric {\n");
    if f.no_topology {
        s.push_str(
            "    // No topology.conf: one leaf holds every node. Describe the real switches.\n",
        );
    }
    for (name, members) in &f.nvlink {
        let _ = writeln!(
            s,
            "    nvlink-domain {} nodes={}  // topology.conf block",
            quote(name),
            quote(&crate::import::names::one_pattern(members))
        );
    }
    let is_child: BTreeSet<&String> = f.switches.values().flat_map(|(_, c, _)| c).collect();
    let roots: Vec<&String> = f
        .switches
        .keys()
        .filter(|k| !is_child.contains(k))
        .collect();
    for r in roots {
        switch(s, f, r, 1);
    }
    if !f.orphans.is_empty() {
        let name = if f.no_topology {
            "all-nodes"
        } else {
            "unlisted"
        };
        let _ = writeln!(
            s,
            "    leaf {} nodes={}",
            quote(name),
            quote(&crate::import::names::one_pattern(&f.orphans))
        );
    }
    s.push_str("}\n");
}

fn switch(s: &mut String, f: &Fabric, name: &str, depth: usize) {
    let Some((tier, children, members)) = f.switches.get(name) else {
        return;
    };
    let pad = "    ".repeat(depth);
    match tier {
        0 => {
            if !members.is_empty() {
                let _ = writeln!(
                    s,
                    "{pad}leaf {} nodes={}",
                    quote(name),
                    quote(&crate::import::names::one_pattern(members))
                );
            }
        }
        t => {
            let word = if *t == 1 { "spine" } else { "core" };
            // A spine (or core) with nothing under it is left out.
            if children.iter().all(|c| !f.switches.contains_key(c)) {
                return;
            }
            let _ = writeln!(s, "{pad}{word} {} {{", quote(name));
            for c in children {
                switch(s, f, c, depth + 1);
            }
            let _ = writeln!(s, "{pad}}}");
        }
    }
}
