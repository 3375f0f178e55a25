//! `gpuplan import <kind> FILE [--format kdl|json] [-o FILE]`: saved `nvidia-smi` and
//! `kubectl get nodes` outputs into gpuplan's language. One variant of [`ImportKind`] per input kind.

use super::Output;
use crate::cli::{DataFormat, Format, ImportKind, NamingArgs};
use crate::diag::Diagnostic;
use crate::discover::Naming;
use crate::import::contract::{self, JsonOut, Report};
use crate::import::k8s;
use crate::import::nvidia_smi::{self, lgip, topo, xml};
use crate::source::{FileId, SourceMap};
use serde::Serialize;
use std::path::Path;

/// Node name of an imported node when `--node` is not given.
pub(crate) const DEFAULT_NODE: &str = "node-01";

mod slurm_includes;
pub mod smi;

pub use super::support::GP704;
use super::support::{emit, to_json};

pub(crate) fn run(kind: &ImportKind, out: &Output) -> u8 {
    let args = match kind {
        ImportKind::NvidiaSmiTopo { args, .. }
        | ImportKind::NvidiaSmiXml { args, .. }
        | ImportKind::MigLgip { args, .. }
        | ImportKind::K8sNodes { args, .. } => args,
        // Dispatched to `import_smi` by `commands/mod.rs`.
        ImportKind::NvidiaSmi { .. } => return 1,
        ImportKind::Openb {
            nodes,
            pods,
            load,
            seed,
            per_pod,
            out_dir,
        } => return openb(nodes, pods, *load, *seed, *per_pod, out_dir, out),
        ImportKind::Slurm {
            path,
            models,
            format,
            out: file,
            partial,
        } => {
            let to = Target {
                format: *format,
                out: file.as_deref(),
                partial: *partial,
            };
            return slurm(path, models, &to, out);
        }
    };
    let mut sources = SourceMap::new();
    let file = match crate::load::read_one(&args.file) {
        Ok(text) => sources.add(args.file.to_string_lossy().replace('\\', "/"), text),
        Err(d) => {
            out.diagnostics(&sources, &[d], Format::Human);
            return 1;
        }
    };
    let header = format!(
        "gpuplan import {} {}",
        kind_name(kind),
        sources.get(file).map_or("", |f| f.path.as_str())
    );
    let imported = convert(kind, &sources, file, &header, args.format);
    let to = Target {
        format: args.format,
        out: args.out.as_deref(),
        partial: args.partial,
    };
    finish(out, &sources, imported, &to)
}

/// Where and how an import's output goes (`--format`, `-o`, `--partial`).
pub(crate) struct Target<'a> {
    pub format: DataFormat,
    pub out: Option<&'a Path>,
    pub partial: bool,
}

/// What an importer produced: the KDL (none after an error), what it read as JSON,
/// its report and its diagnostics.
pub(crate) struct Imported {
    pub kdl: Option<String>,
    pub read: Option<serde_json::Value>,
    pub report: Report,
    pub diagnostics: Vec<Diagnostic>,
}

impl Imported {
    /// An import that failed before reading anything.
    pub(crate) fn failed(importer: &str, diagnostics: Vec<Diagnostic>) -> Self {
        Imported {
            kdl: None,
            read: None,
            report: Report::new(importer),
            diagnostics,
        }
    }
}

/// The import contract at the command line (docs/import.md, "The contract"): the
/// diagnostics, then GP750 when part of the source is left out, then the summary on
/// stderr; the output is written only when nothing is left out, or with `--partial`
/// (headed by the list of what is missing, exit 2). `--format json` prints the report
/// and what was read, whatever was left out, with the same exit status.
pub(crate) fn finish(out: &Output, sources: &SourceMap, imported: Imported, to: &Target) -> u8 {
    let Imported {
        kdl,
        read,
        mut report,
        mut diagnostics,
    } = imported;
    report.finish();
    let failed = diagnostics.iter().any(Diagnostic::is_error);
    let has_output = !failed && kdl.is_some();
    let decision = report.decide(has_output, to.partial);
    if has_output && !report.complete() {
        diagnostics.push(loss(&report, to.partial));
    }
    // What is written: headed by what is missing (`--partial`), in `fmt`'s layout.
    let written = has_output && decision.write && to.format != DataFormat::Json;
    let kdl = kdl.filter(|_| written).map(|text| {
        let text = if report.complete() {
            text
        } else {
            format!("{}{text}", report.partial_comment())
        };
        let (text, refused) = tidy(text);
        diagnostics.extend(refused);
        text
    });
    out.diagnostics(sources, &diagnostics, Format::Human);
    if !failed || report.nodes.seen > 0 {
        out.status(report.summary(20).trim_end());
    }
    if to.format == DataFormat::Json {
        let doc = JsonOut {
            format_version: contract::FORMAT_VERSION,
            report: &report,
            read: read.as_ref(),
        };
        let rc = emit(out, to.out, &to_json(&doc));
        return if rc != 0 { rc } else { decision.exit };
    }
    match kdl {
        Some(text) => {
            let rc = emit(out, to.out, &text);
            if rc != 0 { rc } else { decision.exit }
        }
        None => decision.exit.max(1),
    }
}

/// GP717: `gpuplan fmt` refused an importer's output (a bug of the importer or of
/// `fmt`), which is written as generated.
pub(crate) const GP717: &str = "GP717";

/// An importer's output in `gpuplan fmt`'s layout (issue 30: what an import writes
/// passes `gpuplan fmt --check`); when `fmt` refuses it, the text as generated and GP717
/// saying why.
pub(super) fn tidy(text: String) -> (String, Option<Diagnostic>) {
    match crate::fmt::generated(&text) {
        Ok(t) => (t, None),
        Err(d) => {
            let why = d
                .first()
                .map_or(String::new(), |d| format!("{}: {}", d.code, d.message));
            let warning = Diagnostic::warning(
                GP717,
                format!("the output is written as generated: `gpuplan fmt` refused it ({why})"),
            )
            .with_help("please report it with the input; `gpuplan fmt --check` on the written file says what it cannot format");
            (text, Some(warning))
        }
    }
}

/// GP750: what was left out, as an error (nothing written) or, with `--partial`, a
/// warning (written, exit 2).
fn loss(report: &Report, partial: bool) -> Diagnostic {
    let what = format!(
        "{} node(s), {} GPU(s) and {} item(s) in all of the source are left out",
        report.nodes.left_out,
        report.gpus.left_out,
        report.left_out.len()
    );
    if partial {
        Diagnostic::warning(
            contract::GP750,
            format!("incomplete import written (--partial): {what}"),
        )
        .with_help("the output starts with the list of what is missing; the command exits 2")
    } else {
        Diagnostic::error(contract::GP750, format!("nothing written: {what}"))
            .with_help("fix what the diagnostics above say, or pass `--partial` to write what was imported with the list of what is missing (exit 2)")
    }
}

fn kind_name(kind: &ImportKind) -> &'static str {
    match kind {
        ImportKind::NvidiaSmiTopo { .. } => "nvidia-smi-topo",
        ImportKind::NvidiaSmiXml { .. } => "nvidia-smi-xml",
        ImportKind::MigLgip { .. } => "mig-lgip",
        ImportKind::NvidiaSmi { .. } => "nvidia-smi",
        ImportKind::Openb { .. } => "openb",
        ImportKind::K8sNodes { .. } => "k8s-nodes",
        ImportKind::Slurm { .. } => "slurm",
    }
}

pub use slurm_includes::GP748;

/// `gpuplan import slurm DIR|slurm.conf`: loads slurm.conf, its `Include` files (by
/// name, from the same folder: an include never reads outside it), gres.conf and
/// topology.conf beside it, and converts them ([`crate::import::slurm`]).
fn slurm(path: &Path, models: &[(String, String)], to: &Target, out: &Output) -> u8 {
    use crate::import::slurm as sl;
    let (dir, conf) = if path.is_dir() {
        (path.to_path_buf(), path.join("slurm.conf"))
    } else {
        (
            path.parent()
                .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf),
            path.to_path_buf(),
        )
    };
    let mut sources = SourceMap::new();
    let shown = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let slurm_text = match crate::load::read_one(&conf) {
        Ok(t) => t,
        Err(d) => {
            out.diagnostics(&sources, &[d], Format::Human);
            return 1;
        }
    };
    let slurm = sources.add(shown(&conf), slurm_text.clone());
    let mut diags = Vec::new();
    let includes = slurm_includes::load(&dir, slurm, &mut sources, &mut diags);
    let mut optional = |name: &str| {
        let f = dir.join(name);
        f.is_file()
            .then(|| crate::load::read_one(&f).ok())
            .flatten()
            .map(|t| sources.add(shown(&f), t))
    };
    let gres = optional("gres.conf");
    let topology = optional("topology.conf");
    let files = sl::Files {
        slurm,
        includes,
        gres,
        topology,
    };
    let header = format!("gpuplan import slurm {}", shown(path));
    let opts = sl::Options {
        models: models.to_vec(),
    };
    let (text, mut report, more) = sl::import(&sources, &files, &opts, &header);
    diags.extend(more);
    for (f, kind) in std::iter::once((files.slurm, "slurm.conf"))
        .chain(
            files
                .includes
                .iter()
                .map(|(_, f)| (*f, "slurm.conf Include")),
        )
        .chain(files.gres.map(|f| (f, "gres.conf")))
        .chain(files.topology.map(|f| (f, "topology.conf")))
    {
        report.input(sources.get(f).map_or("", |x| x.path.as_str()), kind);
    }
    let imported = Imported {
        kdl: text,
        read: None,
        report,
        diagnostics: diags,
    };
    finish(out, &sources, imported, to)
}

/// GP705: an openb CSV row that cannot be read.
pub(crate) const GP705: &str = "GP705";

/// GP705 at the row of an openb CSV file that cannot be read; exit code 1.
fn csv_error(
    out: &Output,
    sources: &mut SourceMap,
    path: &Path,
    text: &str,
    (line, msg): crate::import::openb::CsvError,
) -> u8 {
    let file = sources.add(path.to_string_lossy().replace('\\', "/"), text.to_string());
    let start: usize = text
        .lines()
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    let len = text.lines().nth(line.saturating_sub(1)).map_or(0, str::len);
    let d = Diagnostic::error(GP705, format!("{}: line {line}: {msg}", path.display()))
        .at(crate::source::Span::new(file, start, len), "this row")
        .with_help("give the CSV files of the trace as published (cluster-trace-gpu-v2023/csv)");
    out.diagnostics(sources, &[d], Format::Human);
    1
}

/// `gpuplan import openb`: reads both lists, samples, writes two KDL files.
fn openb(
    nodes: &Path,
    pods: &Path,
    load: f64,
    seed: u64,
    per_pod: bool,
    dir: &Path,
    out: &Output,
) -> u8 {
    use crate::import::openb as ob;
    let mut sources = SourceMap::new();
    let mut texts = Vec::new();
    for p in [nodes, pods] {
        match crate::load::read_one(p) {
            Ok(t) => texts.push(t),
            Err(d) => {
                out.diagnostics(&sources, &[d], Format::Human);
                return 1;
            }
        }
    }
    let ns = match ob::parse_nodes(&texts[0]) {
        Ok(n) => n,
        Err(e) => return csv_error(out, &mut sources, nodes, &texts[0], e),
    };
    let ps = match ob::parse_pods(&texts[1]) {
        Ok(p) => p,
        Err(e) => return csv_error(out, &mut sources, pods, &texts[1], e),
    };
    if !(load > 0.0 && load <= 10.0) {
        let d = Diagnostic::error(GP705, format!("--load {load} is out of range")).with_help(
            "give a multiple of the cluster's GPUs above 0, e.g. --load 1.0 (at most 10)",
        );
        out.diagnostics(&sources, &[d], Format::Human);
        return 1;
    }
    let name = |p: &Path| {
        p.file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned())
    };
    let command = format!(
        "gpuplan import openb --nodes {} --pods {} --load {load} --seed {seed}{}",
        name(nodes),
        name(pods),
        if per_pod { " --per-pod" } else { "" }
    );
    let files = match ob::convert(
        &ns,
        &ps,
        &ob::OpenbOptions {
            load,
            seed,
            aggregate: !per_pod,
            command,
        },
    ) {
        Ok(f) => f,
        Err(msg) => {
            let d = Diagnostic::error(GP705, msg)
                .with_help("lower --load, or give a pod list whose pods request more GPU");
            out.diagnostics(&sources, &[d], Format::Human);
            return 1;
        }
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        let d = Diagnostic::error(GP704, format!("cannot create {}: {e}", dir.display()))
            .with_help("choose a folder you can write to");
        out.diagnostics(&sources, &[d], Format::Human);
        return 1;
    }
    for (f, text) in files {
        let (text, refused) = tidy(text);
        out.diagnostics(&sources, refused.as_slice(), Format::Human);
        let rc = emit(out, Some(&dir.join(f)), &text);
        if rc != 0 {
            return rc;
        }
    }
    // Every node of the list is written (those without GPUs as CPU-only classes).
    let mut report = Report::new("openb");
    report.input(&nodes.to_string_lossy(), "openb node list");
    report.input(&pods.to_string_lossy(), "openb pod list (sampled)");
    for n in &ns {
        report.saw_node(u64::from(n.gpus));
        report.imported_node(u64::from(n.gpus));
    }
    out.status(report.summary(20).trim_end());
    0
}

pub(super) fn naming(n: &NamingArgs) -> Naming {
    Naming {
        node: n.node.clone().unwrap_or_else(|| DEFAULT_NODE.to_string()),
        class: n.class.clone(),
        model: n.model.clone(),
    }
}

/// Runs one of the single-file importers: its KDL (none after an error), what it read,
/// its report and diagnostics.
pub(crate) fn convert(
    kind: &ImportKind,
    sources: &SourceMap,
    file: FileId,
    header: &str,
    _format: DataFormat,
) -> Imported {
    let path = sources.get(file).map_or("", |f| f.path.as_str());
    if let Some(d) = other_output(kind, sources, file) {
        let mut imported = Imported::failed(kind_name(kind), vec![d]);
        imported.report.input(path, "another nvidia-smi output");
        return imported;
    }
    let (inv, diagnostics, what) = match kind {
        ImportKind::NvidiaSmiTopo { naming: n, .. } => {
            let (inv, d) = topo::import(sources, file, &naming(n));
            (inv, d, "nvidia-smi topo -m")
        }
        ImportKind::NvidiaSmiXml { naming: n, .. } => {
            let (inv, d) = xml::import(sources, file, &naming(n));
            (inv, d, "nvidia-smi -q -x")
        }
        ImportKind::MigLgip { model, .. } => {
            let (r, diagnostics) = lgip::import(sources, file, model.as_deref());
            let mut report = Report::new("mig-lgip");
            report.input(path, "nvidia-smi mig -lgip");
            let ok = !diagnostics.iter().any(Diagnostic::is_error);
            return Imported {
                kdl: r.as_ref().filter(|_| ok).map(|r| lgip::render(r, header)),
                read: r.as_ref().map(to_value),
                report,
                diagnostics,
            };
        }
        ImportKind::K8sNodes {
            models,
            tiers,
            pool_labels,
            ..
        } => {
            let opts = k8s::Options {
                models: models.clone(),
                tiers: tiers.clone(),
                pool_labels: pool_labels.clone(),
            };
            let (r, mut report, diagnostics) = k8s::import(sources, file, &opts);
            report.input(path, "kubectl get nodes");
            let ok = !diagnostics.iter().any(Diagnostic::is_error);
            return Imported {
                kdl: r
                    .as_ref()
                    .filter(|_| ok)
                    .map(|r| k8s::doc::render(r, header)),
                read: r.as_ref().map(to_value),
                report,
                diagnostics,
            };
        }
        ImportKind::Openb { .. } | ImportKind::Slurm { .. } | ImportKind::NvidiaSmi { .. } => {
            return Imported::failed(kind_name(kind), Vec::new());
        }
    };
    // One node: every GPU the output read is written (the readers refuse, with a code,
    // what they cannot describe).
    let mut report = Report::new(kind_name(kind));
    report.input(path, what);
    if let Some(inv) = &inv {
        let gpus = inv.gpus.len() as u64;
        report.saw_node(gpus);
        report.imported_node(gpus);
    }
    let ok = !diagnostics.iter().any(Diagnostic::is_error);
    Imported {
        kdl: inv
            .as_ref()
            .filter(|_| ok)
            .map(|inv| nvidia_smi::render(inv, header)),
        read: inv.as_ref().map(to_value),
        report,
        diagnostics,
    }
}

/// GP708 when a specific `nvidia-smi` importer is given another `nvidia-smi` output.
fn other_output(kind: &ImportKind, sources: &SourceMap, file: FileId) -> Option<Diagnostic> {
    use crate::import::nvidia_smi::sniff::Kind;
    let expected = match kind {
        ImportKind::NvidiaSmiTopo { .. } => Kind::Topo,
        ImportKind::NvidiaSmiXml { .. } => Kind::QueryXml,
        ImportKind::MigLgip { .. } => Kind::Lgip,
        _ => return None,
    };
    crate::import::nvidia_smi::other_output(expected, sources, file)
}

fn to_value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30: an import's output is written in `fmt`'s layout; if `fmt` refused it
    /// (a bug), it is written as generated and GP717 says why.
    #[test]
    fn output_is_tidied_or_gp708_says_why() {
        let (text, refused) = tidy("team   \"t\"    guarantee=1 // c\n".to_string());
        assert_eq!(text, "team \"t\" guarantee=1  // c\n");
        assert!(refused.is_none());
        let (text, refused) = tidy("team \"t\" {\n".to_string());
        assert_eq!(text, "team \"t\" {\n");
        let d = refused.expect("fmt refuses what does not parse");
        assert_eq!((d.code, d.is_error()), (GP717, false));
        assert!(d.message.contains("GP760"), "{}", d.message);
    }
}
