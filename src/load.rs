//! Expanding the paths given on the command line into `*.kdl` files.
//!
//! A folder means all `*.kdl` files directly in it, in name order, merged into one
//! configuration; a file is read as it is. This is the only place input files are read.

use crate::diag::Diagnostic;
use crate::source::SourceMap;
use std::path::{Path, PathBuf};

pub const GP000: &str = "GP000";

/// Largest input file read (guards against feeding gpuplan a disk image).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads every input file. Unreadable paths and non-UTF-8 files become diagnostics.
pub fn load_paths(paths: &[PathBuf]) -> (SourceMap, Vec<Diagnostic>) {
    let mut sources = SourceMap::new();
    let mut diags = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for p in paths {
        if p.is_dir() {
            match std::fs::read_dir(p) {
                Ok(rd) => {
                    let mut found: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "kdl"))
                        .collect();
                    found.sort();
                    if found.is_empty() {
                        diags.push(
                            Diagnostic::error(
                                GP000,
                                format!("no `*.kdl` files in folder `{}`", p.display()),
                            )
                            .with_help(
                                "a folder argument means all the `*.kdl` files directly inside it",
                            ),
                        );
                    }
                    files.extend(found);
                }
                Err(e) => diags.push(Diagnostic::error(
                    GP000,
                    format!("cannot read folder `{}`: {e}", p.display()),
                )),
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for f in files {
        let key = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
        if !seen.insert(key) {
            continue;
        }
        match read_one(&f) {
            Ok(text) => {
                sources.add(display(&f), text);
            }
            Err(d) => diags.push(d),
        }
    }
    (sources, diags)
}

fn display(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

#[allow(clippy::result_large_err)] // one error per file read; boxing buys nothing here
pub(crate) fn read_one(f: &Path) -> Result<String, Diagnostic> {
    let meta = std::fs::metadata(f).map_err(|e| {
        Diagnostic::error(GP000, format!("cannot read `{}`: {e}", f.display()))
            .with_help("check the path")
    })?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(Diagnostic::error(
            GP000,
            format!(
                "`{}` is {} bytes; gpuplan reads files up to {MAX_FILE_BYTES} bytes",
                f.display(),
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(f)
        .map_err(|e| Diagnostic::error(GP000, format!("cannot read `{}`: {e}", f.display())))?;
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            GP000,
            format!(
                "`{}` is not UTF-8 text (invalid byte at offset {})",
                f.display(),
                e.utf8_error().valid_up_to()
            ),
        )
        .with_help("KDL files must be UTF-8")
    })
}
