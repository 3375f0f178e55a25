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
mod describe;
mod doc;
mod gres;
mod models;
mod nodes;
mod partitions;
mod topology;

use crate::diag::Diagnostic;
use crate::import::contract::Report;
use crate::source::{FileId, SourceMap, Span};
use std::collections::BTreeMap;

/// GP741: a value cannot be read (a hostlist, a number, a GRES entry).
pub(crate) const GP741: &str = "GP741";
/// GP742: a GPU type maps to no catalog model; `--model TYPE=ID` is needed.
pub(crate) const GP742: &str = "GP742";
/// GP744: an assumption the reader should check (family alias, partitions, leaves).
pub(crate) const GP744: &str = "GP744";
/// GP745: MIG devices that cannot be told per GPU.
pub(crate) const GP745: &str = "GP745";
/// GP746: a part of topology.conf gpuplan cannot represent.
pub(crate) const GP746: &str = "GP746";
/// GP747: no slurm.conf, or it describes no node with GPUs.
pub(crate) const GP747: &str = "GP747";
/// GP752: nodes without GPU information: imported with CPUs, memory, partitions and
/// switches; their GPU count is unknown (flagged).
pub(crate) const GP752: &str = "GP752";
/// GP753: gres.conf and slurm.conf disagree about a node's GPUs.
pub(crate) const GP753: &str = "GP753";
/// GP754: a hostlist names nodes no NodeName line declares.
pub(crate) const GP754: &str = "GP754";
/// GP755: topology.conf puts a node under two switches.
pub(crate) const GP755: &str = "GP755";
/// GP756: every node of slurm.conf is left out.
pub(crate) const GP756: &str = "GP756";
/// GP749: `--model TYPE=ID` names neither a catalog model nor a valid model name.
pub(crate) const GP749: &str = "GP749";

/// The files of one import, loaded into the source map by the command.
pub struct Files {
    pub slurm: FileId,
    /// Files named by `Include` lines, found in the same folder.
    /// Files named by `Include` lines (nested too), found in the same folder: (the
    /// file name, its file); their records take the place of the `Include` line.
    pub includes: Vec<(String, FileId)>,
    pub gres: Option<FileId>,
    pub topology: Option<FileId>,
}

/// `--model TYPE=ID` maps.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub models: Vec<(String, String)>,
}

/// What the import saw of each node and why it left one out (for the contract's
/// [`Report`]).
#[derive(Default)]
struct Ledger {
    /// Every node of a `NodeName` line, with the GPUs its `Gres=` counts.
    pub(super) seen: Vec<(String, u64)>,
    /// Why a node is not in the output: (code, reason).
    pub(super) why: BTreeMap<String, (String, String)>,
    /// In the output, to be completed or checked (declared models...).
    flags: Vec<crate::import::contract::Item>,
    /// Not in the output and not a node (a switch...).
    left: Vec<crate::import::contract::Item>,
}

impl Ledger {
    pub(super) fn drop(&mut self, name: &str, code: &str, reason: String) {
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
    for f in ledger.flags {
        report.flag(f);
    }
    for i in ledger.left {
        report.leave_out(i);
    }
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
    let records = with_includes(files.slurm, files, &text, &mut Vec::new(), &mut diags);
    let cluster = records
        .iter()
        .find_map(|r| r.value("clustername"))
        .map(|c| crate::import::names::sanitize(c, 40));
    let nodes = nodes::read_nodes(&records, &mut diags, ledger);
    if nodes.is_empty() {
        diags.push(
            Diagnostic::error(GP747, "slurm.conf declares no node")
                .at(Span::new(files.slurm, 0, 0), "in this file")
                .with_help("give the cluster's slurm.conf (its NodeName lines, or the file they are `Include`d from)"),
        );
        return (None, diags, BTreeMap::new());
    }
    let gres_records = files
        .gres
        .map(|f| conf::records(f, &text(f), &mut diags))
        .unwrap_or_default();
    let devices = gres::read_gres(&gres_records, &nodes, &mut diags);
    let mut resolver = models::Resolver::default();
    let described = describe::describe(&nodes, &devices, opts, &mut resolver, &mut diags, ledger);
    ledger.flags.append(&mut resolver.flags);
    unknown_gpus(&described, &mut diags, ledger);
    let imported: BTreeMap<String, u64> = described
        .iter()
        .map(|d| (d.name.clone(), u64::from(d.hardware.gpus)))
        .collect();
    if described.is_empty() {
        diags.push(all_left_out(files.slurm, ledger));
        return (None, diags, imported);
    }
    let mut partitions = partitions::partitions(&records, &nodes, &described, &mut diags);
    ledger.flags.append(&mut partitions.flags);
    let topo_records = files
        .topology
        .map(|f| conf::records(f, &text(f), &mut diags))
        .unwrap_or_default();
    let mut fabric = topology::fabric(
        &topo_records,
        &nodes,
        &described,
        files.topology.is_some(),
        &mut diags,
    );
    ledger.left.append(&mut fabric.left_out);
    let declared: Vec<models::Declared> = resolver.declared.into_values().collect();
    let out = crate::import::doc::kdl::write(&doc::document(
        header,
        cluster.as_deref(),
        &declared,
        &described,
        &partitions,
        &fabric,
    ));
    (Some(out), diags, imported)
}

/// One warning and one flagged item for the nodes imported without GPU information.
fn unknown_gpus(
    described: &[describe::Described],
    diags: &mut Vec<Diagnostic>,
    ledger: &mut Ledger,
) {
    let names: Vec<String> = described
        .iter()
        .filter(|d| d.unknown_gpus)
        .map(|d| d.name.clone())
        .collect();
    if names.is_empty() {
        return;
    }
    let list = crate::units::compress_names(&names).join(",");
    diags.push(
        Diagnostic::warning(
            GP752,
            format!(
                "{} node(s) have no `Gres=gpu` in slurm.conf and no GPU in gres.conf ({list}): imported with their CPUs, memory, partitions and switches; their GPU count is unknown",
                names.len()
            ),
        )
        .with_help("if they have GPUs, add `gpus N model=\"...\"` to their node-class (or `Gres=gpu:TYPE:N` to slurm.conf and import again)"),
    );
    ledger.flags.push(crate::import::contract::Item::new(
        crate::import::contract::ItemKind::Node,
        crate::import::names::one_pattern(&names),
        GP752,
        "no Gres=gpu nor gres.conf GPUs: imported without GPUs; GPU count unknown",
    ));
}

/// GP754: names of a hostlist that no `NodeName` line declares (slurmctld refuses
/// them); said once per hostlist, never dropped in silence.
fn undeclared(
    names: &[String],
    declared: impl Fn(&str) -> bool,
    what: &str,
    span: Span,
    diags: &mut Vec<Diagnostic>,
) {
    let missing: Vec<String> = names.iter().filter(|n| !declared(n)).cloned().collect();
    if missing.is_empty() {
        return;
    }
    diags.push(
        Diagnostic::warning(
            GP754,
            format!(
                "{what} names {} node(s) no NodeName line declares ({}); they are not imported",
                missing.len(),
                crate::units::compress_names(&missing).join(",")
            ),
        )
        .at(span, "these nodes are not declared")
        .with_help("declare them with a NodeName line, or remove them (slurmctld refuses undeclared nodes)"),
    );
}

/// GP756: the error when every node is left out, with the reasons by code.
fn all_left_out(file: FileId, ledger: &Ledger) -> Diagnostic {
    let mut by_code: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for (code, reason) in ledger.why.values() {
        let e = by_code.entry(code.as_str()).or_insert((0, reason.as_str()));
        e.0 += 1;
    }
    let why: Vec<String> = by_code
        .iter()
        .map(|(code, (n, reason))| format!("{n} by {code} ({reason})"))
        .collect();
    Diagnostic::error(
        GP756,
        format!(
            "every node of slurm.conf is left out, so nothing is written: {}",
            why.join("; ")
        ),
    )
    .at(Span::new(file, 0, 0), "in this file")
    .with_help("fix what the diagnostics above say (`gpuplan explain CODE`)")
}

/// The records of `file` with each `Include` line replaced by the records of the file it
/// names (nested, each file at most once on the way down: a cycle stops there), so that
/// `NodeName=DEFAULT` lines apply in the order slurmctld reads them.
fn with_includes(
    file: FileId,
    files: &Files,
    text: &dyn Fn(FileId) -> String,
    stack: &mut Vec<FileId>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<conf::Record> {
    stack.push(file);
    let mut out = Vec::new();
    for r in conf::records(file, &text(file), diags) {
        let included = (r.kind() == "include")
            .then(|| {
                let name = r.value("include")?.rsplit(['/', '\\']).next()?;
                files
                    .includes
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, f)| *f)
            })
            .flatten()
            .filter(|f| !stack.contains(f) && stack.len() <= 8);
        match included {
            Some(f) => out.extend(with_includes(f, files, text, stack, diags)),
            None => out.push(r),
        }
    }
    stack.pop();
    out
}
