//! `gpuplan import nvidia-smi FILE...`: the `nvidia-smi` outputs of one machine,
//! recognised and merged ([`crate::import::nvidia_smi`]), under the import contract
//! ([`super::finish`]). Dispatched from `commands/mod.rs`, so that
//! `commands/import.rs` (which it uses) does not depend on it.

use super::{Imported, Target, finish};
use crate::cli::Format;
use crate::commands::Output;
use crate::diag::Diagnostic;
use crate::discover::Naming;
use crate::import::nvidia_smi as smi;
use crate::source::SourceMap;
use std::path::PathBuf;

/// Reads the files, says what each was recognised as, merges them into one node.
pub(crate) fn run(files: &[PathBuf], naming: &Naming, to: &Target, out: &Output) -> u8 {
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
            ok.then(|| smi::render(inv, &header)),
            serde_json::to_value(inv).ok(),
        ),
        (None, Some(r)) => (
            ok.then(|| smi::lgip::render(r, &header)),
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
