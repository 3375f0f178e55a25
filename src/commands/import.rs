//! `gpuplan import <kind> FILE [--format kdl|json] [-o FILE]`: saved `nvidia-smi` outputs
//! into gpuplan's language. One variant of [`ImportKind`] per input kind.

use super::Output;
use crate::cli::{DataFormat, Format, ImportKind, NamingArgs};
use crate::diag::Diagnostic;
use crate::discover::{self, Naming, lgip, topo, xml};
use crate::source::{FileId, SourceMap};
use serde::Serialize;
use std::path::Path;

/// Node name of an imported node when `--node` is not given.
pub const DEFAULT_NODE: &str = "node-01";

/// GP704: the output file could not be written.
pub const GP704: &str = "GP704";

pub fn run(kind: &ImportKind, out: &Output) -> u8 {
    let args = match kind {
        ImportKind::NvidiaSmiTopo { args, .. }
        | ImportKind::NvidiaSmiXml { args, .. }
        | ImportKind::MigLgip { args, .. } => args,
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
    let (text, diags) = convert(kind, &sources, file, &header, args.format);
    out.diagnostics(&sources, &diags, Format::Human);
    match text {
        Some(t) => emit(out, args.out.as_deref(), &t),
        None => 1,
    }
}

fn kind_name(kind: &ImportKind) -> &'static str {
    match kind {
        ImportKind::NvidiaSmiTopo { .. } => "nvidia-smi-topo",
        ImportKind::NvidiaSmiXml { .. } => "nvidia-smi-xml",
        ImportKind::MigLgip { .. } => "mig-lgip",
    }
}

fn naming(n: &NamingArgs) -> Naming {
    Naming {
        node: n.node.clone().unwrap_or_else(|| DEFAULT_NODE.to_string()),
        class: n.class.clone(),
        model: n.model.clone(),
    }
}

/// The converted text (KDL or JSON) and the diagnostics; no text when an error was found.
pub fn convert(
    kind: &ImportKind,
    sources: &SourceMap,
    file: FileId,
    header: &str,
    format: DataFormat,
) -> (Option<String>, Vec<Diagnostic>) {
    let (inv, diags) = match kind {
        ImportKind::NvidiaSmiTopo { naming: n, .. } => topo::import(sources, file, &naming(n)),
        ImportKind::NvidiaSmiXml { naming: n, .. } => xml::import(sources, file, &naming(n)),
        ImportKind::MigLgip { model, .. } => {
            let (r, diags) = lgip::import(sources, file, model.as_deref());
            let text =
                r.filter(|_| !diags.iter().any(Diagnostic::is_error))
                    .map(|r| match format {
                        DataFormat::Kdl => lgip::render(&r, header),
                        DataFormat::Json => to_json(&r),
                    });
            return (text, diags);
        }
    };
    let text = inv
        .filter(|_| !diags.iter().any(Diagnostic::is_error))
        .map(|inv| match format {
            DataFormat::Kdl => discover::kdl::render(&inv, header),
            DataFormat::Json => to_json(&inv),
        });
    (text, diags)
}

pub(super) fn to_json<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes the output to stdout, or to `-o FILE` atomically.
pub(super) fn emit(out: &Output, path: Option<&Path>, text: &str) -> u8 {
    match path {
        None => {
            out.data(text);
            0
        }
        Some(p) => match super::plan::write_atomically(p, text) {
            Ok(()) => {
                out.status(&format!("wrote {}", p.display()));
                0
            }
            Err(e) => {
                let d = Diagnostic::error(GP704, format!("cannot write `{}`: {e}", p.display()));
                out.diagnostics(&SourceMap::new(), &[d], Format::Human);
                1
            }
        },
    }
}
