//! The `nvidia-smi` outputs of one machine: their parsers ([`topo`]: `topo -m`, [`xml`]:
//! `-q -x`, [`qtext`]: `-q`, [`mig`]: the `mig -lgip`, `-lgi` and `-lci` tables, [`sniff`]:
//! which output a text is), the `mig-lgip` profile check ([`lgip`]), and [`inventory`]:
//! one machine's [`Inventory`] (from these outputs or from NVML, `discover`) as a
//! [`crate::import::doc::Document`].
//!
//! `gpuplan import nvidia-smi FILE...`: the outputs in any order, each recognised from
//! its text ([`sniff`]), merged into one node; and [`other_output`], the check of the
//! specific importers.
//!
//! ```text
//! -q | -q -x ----------> GPUs (model, memory, bus ids, MIG mode and devices)
//! mig -lgi, mig -lci --> + MIG instances: profiles, ids, placements
//!                        --inventory--> node
//! topo -m -------------> + NVLink domains, NUMA, PCIe switches, NICs
//! mig -lgip -----------> + driver names of MIG profiles (`mig-name` pins)
//! ```
//!
//! Files that contradict each other (GPU counts, bus ids, an instance on a GPU the
//! report says has MIG off) are refused (`GP707`): they are not of one machine, or not
//! of one moment. A file that is none of these outputs is `GP706`.

use crate::diag::Diagnostic;
use crate::discover::profiles::{ObservedProfile, compare};
use crate::discover::{self, Inventory, Naming, Snapshot};
use crate::import::contract::{Item, ItemKind, Report};
use crate::source::{FileId, SourceMap};

pub mod inventory;
pub mod lgip;
mod merge;
pub mod mig;
pub mod qtext;
pub mod sniff;
pub mod topo;
pub mod xml;

pub use inventory::render;
use sniff::Kind;

pub use merge::GP707;
use merge::{Parsed, apply_instances, apply_topo, base, contradiction, first_line};

/// GP706: a file is none of the `nvidia-smi` outputs `import nvidia-smi` reads.
pub(crate) const GP706: &str = "GP706";
/// GP708: a file is another `nvidia-smi` output than the specific importer reads.
pub(crate) const GP708: &str = "GP708";
/// GP716: the files do not describe the node's GPUs (only MIG tables).
pub(crate) const GP716: &str = "GP716";

/// One input and what it was recognised as.
pub struct Input {
    pub file: FileId,
    pub kind: Kind,
}

/// What `import nvidia-smi` produced.
pub struct Outcome {
    pub inputs: Vec<Input>,
    pub inventory: Option<Inventory>,
    /// Only `mig -lgip` tables were given: the profile check.
    pub lgip: Option<lgip::LgipReport>,
    pub report: Report,
    pub diagnostics: Vec<Diagnostic>,
}

/// Recognises each file; GP706 for one that is no `nvidia-smi` output.
pub(crate) fn recognise(sources: &SourceMap, files: &[FileId]) -> (Vec<Input>, Vec<Diagnostic>) {
    let mut inputs = Vec::new();
    let mut diags = Vec::new();
    for &file in files {
        match sources.get(file).and_then(|f| sniff::sniff(&f.text)) {
            Some(kind) => inputs.push(Input { file, kind }),
            None => diags.push(
                Diagnostic::error(GP706, "this file is none of the `nvidia-smi` outputs gpuplan reads")
                    .at(first_line(sources, file), "not recognised")
                    .with_help("give the saved output of `nvidia-smi -q`, `nvidia-smi -q -x`, `nvidia-smi topo -m`, `nvidia-smi mig -lgip`, `nvidia-smi mig -lgi` or `nvidia-smi mig -lci`"),
            ),
        }
    }
    (inputs, diags)
}

/// Stores `value` as the one file of its kind; a second, different one is GP707.
fn once<T>(
    slot: &mut Option<(FileId, T)>,
    file: FileId,
    value: T,
    sources: &SourceMap,
    kind: Kind,
    diags: &mut Vec<Diagnostic>,
) {
    let text = |f: FileId| sources.get(f).map(|x| &*x.text);
    match slot {
        Some((first, _)) if text(*first) == text(file) => diags.push(
            Diagnostic::warning(
                GP707,
                format!(
                    "the same `{}` output is given twice; it is read once",
                    kind.command()
                ),
            )
            .at(first_line(sources, file), "a copy"),
        ),
        Some((first, _)) => diags.push(
            Diagnostic::error(
                GP707,
                format!(
                    "two different `{}` outputs: the files of one machine have one of each",
                    kind.command()
                ),
            )
            .at(first_line(sources, file), "the second")
            .with_related(first_line(sources, *first), "the first")
            .with_help("import each machine on its own (one `import nvidia-smi` per node)"),
        ),
        None => *slot = Some((file, value)),
    }
}

fn parse_all(sources: &SourceMap, inputs: &[Input], diags: &mut Vec<Diagnostic>) -> Parsed {
    let mut p = Parsed::default();
    for i in inputs {
        let f = i.file;
        match i.kind {
            Kind::Query => {
                let (r, d) = qtext::parse(sources, f);
                diags.extend(d);
                if let Some(r) = r {
                    once(&mut p.query, f, r, sources, i.kind, diags);
                }
            }
            Kind::QueryXml => {
                let (s, d) = xml::parse(sources, f);
                diags.extend(d);
                if let Some(s) = s {
                    once(&mut p.xml, f, s, sources, i.kind, diags);
                }
            }
            Kind::Topo => {
                let (m, d) = topo::parse(sources, f);
                diags.extend(d);
                if let Some(m) = m {
                    once(&mut p.topo, f, m, sources, i.kind, diags);
                }
            }
            Kind::Lgip => {
                let (rows, _, d) = mig::parse_lgip(sources, f);
                diags.extend(d);
                once(&mut p.lgip, f, rows, sources, i.kind, diags);
            }
            Kind::Lgi | Kind::Lci => {
                let text = sources.get(f).map_or("", |x| &*x.text);
                match mig::parse_instance_rows(text) {
                    Ok((_, rows)) => {
                        let slot = if i.kind == Kind::Lci {
                            &mut p.lci
                        } else {
                            &mut p.lgi
                        };
                        once(slot, f, rows, sources, i.kind, diags);
                    }
                    Err(e) => diags.push(
                        Diagnostic::error(
                            discover::GP712,
                            format!("cannot read this `{}` table: {e}", i.kind.command()),
                        )
                        .at(first_line(sources, f), "this table"),
                    ),
                }
            }
        }
    }
    p
}

/// Reads and merges the files of one machine.
pub fn import(sources: &SourceMap, files: &[FileId], naming: &Naming) -> Outcome {
    let (inputs, mut diags) = recognise(sources, files);
    let mut report = Report::new("nvidia-smi");
    for i in &inputs {
        report.input(
            sources.get(i.file).map_or("", |f| f.path.as_str()),
            i.kind.command(),
        );
    }
    let mut out = Outcome {
        inputs: Vec::new(),
        inventory: None,
        lgip: None,
        report,
        diagnostics: Vec::new(),
    };
    if diags.iter().any(Diagnostic::is_error) {
        out.inputs = inputs;
        out.diagnostics = diags;
        return out;
    }
    let mut p = parse_all(sources, &inputs, &mut diags);
    out.inputs = inputs;
    if diags.iter().any(Diagnostic::is_error) {
        out.diagnostics = diags;
        return out;
    }
    let inv = match base(&mut p, sources, &mut diags) {
        Some(b) => from_report(b, &mut p, sources, naming, &mut out.report, &mut diags),
        None if p.topo.is_some() && !diags.iter().any(Diagnostic::is_error) => {
            from_topo(&mut p, naming, &mut out.report, &mut diags)
        }
        None => None,
    };
    finish(sources, p, inv, naming, &mut out, &mut diags);
    out.diagnostics = diags;
    out
}

/// The node from the reports' GPUs (`seen`: the GPUs they count, with those left out),
/// the MIG tables' instances and the matrix's wiring.
fn from_report(
    (mut snap, seen, left_out): (Snapshot, u32, Vec<qtext::LeftOut>),
    p: &mut Parsed,
    sources: &SourceMap,
    naming: &Naming,
    report: &mut Report,
    diags: &mut Vec<Diagnostic>,
) -> Option<Inventory> {
    apply_instances(&mut snap, true, p.lgi.take(), p.lci.take(), diags);
    report.saw_node(u64::from(seen));
    for l in &left_out {
        let item = Item::new(
            ItemKind::Gpus,
            naming.node.clone(),
            qtext::GP709,
            l.reason.clone(),
        );
        report.leave_out(item.gpus(u64::from(l.gpus)));
    }
    match discover::inventory("nvidia-smi", &snap, naming) {
        Ok((mut inv, d)) => {
            diags.extend(d);
            match &p.topo {
                Some((f, m)) => apply_topo(&mut inv, *f, m, sources, diags),
                None => inv.notes.push(
                    "no `nvidia-smi topo -m` was given: NVLink domains, NUMA and NICs are unknown"
                        .into(),
                ),
            }
            Some(inv)
        }
        Err(d) => {
            diags.push(d);
            None
        }
    }
}

/// The node from the matrix alone (`--model` needed), with the MIG tables' instances.
fn from_topo(
    p: &mut Parsed,
    naming: &Naming,
    report: &mut Report,
    diags: &mut Vec<Diagnostic>,
) -> Option<Inventory> {
    let (_, m) = p.topo.as_ref()?;
    match topo::to_inventory(m, naming) {
        Ok(mut inv) => {
            inv.source = "nvidia-smi";
            report.saw_node(inv.gpus.len() as u64);
            let mut snap = Snapshot {
                system: inv.system.clone(),
                gpus: inv.gpus.clone(),
            };
            apply_instances(&mut snap, false, p.lgi.take(), p.lci.take(), diags);
            inv.gpus = snap.gpus;
            Some(inv)
        }
        Err(d) => {
            diags.push(d);
            None
        }
    }
}

/// The `mig -lgip` check on the node's model, the report's imported tallies.
fn finish(
    sources: &SourceMap,
    mut p: Parsed,
    inv: Option<Inventory>,
    naming: &Naming,
    out: &mut Outcome,
    diags: &mut Vec<Diagnostic>,
) {
    let failed = diags.iter().any(Diagnostic::is_error);
    let Some(mut inv) = inv else {
        if failed {
            leave_node_out(out, diags, naming);
            return;
        }
        match p.lgip.take() {
            Some((f, _)) if p.lgi.is_none() && p.lci.is_none() => {
                let (r, d) = lgip::import(sources, f, naming.model.as_deref());
                diags.extend(d);
                out.lgip = r;
            }
            _ => diags.push(
                Diagnostic::error(GP716, "these files do not describe the node's GPUs").with_help(
                    "add the output of `nvidia-smi -q` (or `nvidia-smi -q -x`) of the same machine",
                ),
            ),
        }
        return;
    };
    if let Some((f, rows)) = p.lgip.take() {
        if let Some(r) = rows.iter().find(|(g, _)| *g as usize >= inv.gpus.len()) {
            diags.push(contradiction(
                r.1.span.unwrap_or(first_line(sources, f)),
                format!(
                    "`mig -lgip` lists GPU {}, which the other files do not have",
                    r.0
                ),
            ));
        } else if let Some(spec) = inv.model.spec() {
            let observed: Vec<ObservedProfile> = rows.into_iter().map(|(_, o)| o).collect();
            let (pins, d) = compare(spec, &observed);
            let fresh: Vec<Diagnostic> = d
                .into_iter()
                .filter(|d| !diags.iter().any(|e| e.message == d.message))
                .collect();
            diags.extend(fresh);
            for pin in pins {
                if !inv.mig_names.contains(&pin) {
                    inv.mig_names.push(pin);
                }
            }
        }
    }
    if diags.iter().any(Diagnostic::is_error) {
        leave_node_out(out, diags, naming);
        return;
    }
    out.report.imported_node(inv.gpus.len() as u64);
    out.inventory = Some(inv);
}

/// The node seen but not written (an error): left out, with the first error's code.
fn leave_node_out(out: &mut Outcome, diags: &[Diagnostic], naming: &Naming) {
    if out.report.nodes.seen == 0 {
        return;
    }
    let Some(e) = diags.iter().find(|d| d.is_error()) else {
        return;
    };
    let gpus = out.report.gpus.seen - out.report.gpus.left_out;
    out.report.leave_out(
        Item::new(
            ItemKind::Node,
            naming.node.clone(),
            e.code,
            e.message.clone(),
        )
        .gpus(gpus),
    );
}

/// GP708 when a specific importer, which reads `expected`, is given another `nvidia-smi`
/// output (`mig -lgi` to `import mig-lgip`): it says which one it is.
pub fn other_output(expected: Kind, sources: &SourceMap, file: FileId) -> Option<Diagnostic> {
    let f = sources.get(file)?;
    let found = sniff::sniff(&f.text).filter(|k| *k != expected)?;
    Some(
        Diagnostic::error(
            GP708,
            format!(
                "this is `{}` ({}), not `{}`",
                found.command(),
                found.what(),
                expected.command()
            ),
        )
        .at(first_line(sources, file), "recognised from its text")
        .with_help(format!(
            "`gpuplan import nvidia-smi {}` reads it (give `nvidia-smi -q` of the same machine with it for the GPUs)",
            f.path
        )),
    )
}
