//! `gpuplan import nvidia-smi FILE...`: the `nvidia-smi` outputs of one machine,
//! recognised and merged ([`crate::discover::smi`]), under the import contract
//! ([`super::import::finish`]). Also the check shared by the specific importers
//! (`nvidia-smi-topo`, `nvidia-smi-xml`, `mig-lgip`): a file of another kind is named.

use super::Output;
use super::import::{Imported, Target, canonical, finish};
use crate::cli::{Format, ImportKind};
use crate::diag::Diagnostic;
use crate::discover::{self, Naming, smi};
use crate::source::{FileId, SourceMap};
use std::path::PathBuf;

/// Reads the files, says what each was recognised as, merges them into one node.
pub fn run(files: &[PathBuf], naming: &Naming, to: &Target, out: &Output) -> u8 {
    let mut sources = SourceMap::new();
    let mut ids = Vec::new();
    for f in files {
        match crate::load::read_one(f) {
            Ok(text) => ids.push(sources.add(f.to_string_lossy().replace('\\', "/"), text)),
            Err(d) => {
                out.diagnostics(&sources, &[d], Format::Human);
                return 1;
            }
        }
    }
    let o = smi::import(&sources, &ids, naming);
    for i in &o.inputs {
        let path = sources.get(i.file).map_or("", |f| f.path.as_str());
        out.status(&format!(
            "{path}: recognised as `{}` ({})",
            i.kind.command(),
            i.kind.what()
        ));
    }
    let header = format!(
        "gpuplan import nvidia-smi {}",
        ids.iter()
            .filter_map(|i| sources.get(*i).map(|f| f.path.as_str()))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let ok = !o.diagnostics.iter().any(Diagnostic::is_error);
    let (kdl, read) = match (&o.inventory, &o.lgip) {
        (Some(inv), _) => (
            ok.then(|| canonical(&discover::kdl::render(inv, &header))),
            serde_json::to_value(inv).ok(),
        ),
        (None, Some(r)) => (
            ok.then(|| canonical(&discover::lgip::render(r, &header))),
            serde_json::to_value(r).ok(),
        ),
        (None, None) => (None, None),
    };
    let imported = Imported {
        kdl,
        read,
        report: o.report,
        diagnostics: o.diagnostics,
    };
    finish(out, &sources, imported, to)
}

/// GP708 when a specific `nvidia-smi` importer is given another `nvidia-smi` output
/// (`mig -lgi` to `import mig-lgip`): it says which one it is.
pub(super) fn other_output(
    kind: &ImportKind,
    sources: &SourceMap,
    file: FileId,
) -> Option<Diagnostic> {
    use crate::discover::sniff::{Kind, sniff};
    let expected = match kind {
        ImportKind::NvidiaSmiTopo { .. } => Kind::Topo,
        ImportKind::NvidiaSmiXml { .. } => Kind::QueryXml,
        ImportKind::MigLgip { .. } => Kind::Lgip,
        _ => return None,
    };
    let f = sources.get(file)?;
    let found = sniff(&f.text).filter(|k| *k != expected)?;
    let first = f.text.lines().next().map_or(0, str::len);
    Some(
        Diagnostic::error(
            discover::smi::GP708,
            format!(
                "this is `{}` ({}), not `{}`",
                found.command(),
                found.what(),
                expected.command()
            ),
        )
        .at(crate::source::Span::new(file, 0, first), "recognised from its text")
        .with_help(format!(
            "`gpuplan import nvidia-smi {}` reads it (give `nvidia-smi -q` of the same machine with it for the GPUs)",
            f.path
        )),
    )
}
