//! Expanding the paths given on the command line into `*.kdl` files, and reading every
//! input file gpuplan reads (configurations, importers' sources, saved plans' inputs).
//!
//! A folder means all `*.kdl` files directly in it, in name order, merged into one
//! configuration; a file is read as it is. This is the only place input files are read.
//!
//! What a configuration may make gpuplan read (docs/ci.md, "Threat model"): only regular
//! files the user pointed at. A symbolic link is never followed in a configuration (a
//! pull request could otherwise point `zz.kdl` at `.git/config` or `/proc/self/environ`
//! and have the diagnostics quote it); a FIFO, socket or device is refused before a byte
//! is read (the file is opened non-blocking and checked with `fstat`, so it cannot be
//! swapped between the check and the read); bytes are counted while reading, against
//! the run's `input-bytes` limit ([`crate::limits`]), never trusted from metadata.
//! Importers follow a link the user names (`/etc/slurm/slurm.conf` is often one): their
//! input is the operator's own system, not a reviewed change.

use crate::diag::{Diagnostic, quoted};
use crate::source::SourceMap;
use std::io::Read;
use std::path::{Path, PathBuf};

pub(crate) const GP000: &str = "GP000";

/// Whether a path that is a symbolic link is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Configuration files: a link is refused (GP000).
    Refuse,
    /// A file the user named for an importer: a link to a regular file is read.
    Follow,
}

/// Reads every input file. Unreadable paths, links, special files, too many bytes and
/// non-UTF-8 files become diagnostics.
pub fn load_paths(paths: &[PathBuf]) -> (SourceMap, Vec<Diagnostic>) {
    let mut sources = SourceMap::new();
    let mut diags = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for p in paths {
        let is_dir = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        if is_dir {
            folder_files(p, &mut files, &mut diags);
        } else {
            files.push(p.clone());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut budget = crate::limits::current().input_bytes;
    for f in files {
        let key = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
        if !seen.insert(key) {
            continue;
        }
        match read_file(&f, Links::Refuse, &mut budget) {
            Ok(text) => {
                sources.add(display(&f), text);
            }
            Err(d) => {
                diags.push(d);
                // The input-bytes limit is spent: no later file can be read.
                if budget == 0 {
                    break;
                }
            }
        }
    }
    (sources, diags)
}

/// The `*.kdl` entries of a folder, in name order: links and special files among them
/// are diagnostics, never followed or opened.
fn folder_files(p: &Path, files: &mut Vec<PathBuf>, diags: &mut Vec<Diagnostic>) {
    let rd = match std::fs::read_dir(p) {
        Ok(rd) => rd,
        Err(e) => {
            diags.push(Diagnostic::error(
                GP000,
                format!("cannot read folder {}: {e}", shown(p)),
            ));
            return;
        }
    };
    let mut found: Vec<(PathBuf, std::fs::FileType)> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            Path::new(&e.file_name())
                .extension()
                .is_some_and(|x| x == "kdl")
        })
        .filter_map(|e| e.file_type().ok().map(|t| (e.path(), t)))
        .filter(|(_, t)| !t.is_dir())
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    if found.is_empty() {
        diags.push(
            Diagnostic::error(GP000, format!("no `*.kdl` files in folder {}", shown(p)))
                .with_help("a folder argument means all the `*.kdl` files directly inside it"),
        );
    }
    for (f, t) in found {
        if t.is_symlink() {
            diags.push(link_refused(&f));
        } else if !t.is_file() {
            diags.push(special_refused(&f));
        } else {
            files.push(f);
        }
    }
}

fn display(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// A path as a message shows it: escaped when it holds control characters.
fn shown(p: &Path) -> String {
    quoted(&display(p))
}

fn link_refused(f: &Path) -> Diagnostic {
    Diagnostic::error(
        GP000,
        format!(
            "{} is a symbolic link; gpuplan does not follow links in a configuration",
            shown(f)
        ),
    )
    .with_help(
        "keep the configuration's files in its folder as regular files (a link could make \
         gpuplan read, and quote, a file outside it)",
    )
}

fn special_refused(f: &Path) -> Diagnostic {
    Diagnostic::error(
        GP000,
        format!(
            "{} is not a regular file (a FIFO, socket or device); it was not read",
            shown(f)
        ),
    )
    .with_help("pass regular files, or a folder of them")
}

/// Reads one file the user named for an importer (or `fmt`): a regular file, a link to
/// one, within the run's `input-bytes` limit.
#[allow(clippy::result_large_err)] // one error per file read; boxing buys nothing here
pub fn read_one(f: &Path) -> Result<String, Diagnostic> {
    let mut budget = crate::limits::current().input_bytes;
    read_file(f, Links::Follow, &mut budget)
}

/// Reads one configuration file (never through a link), within the run's `input-bytes`
/// limit.
#[allow(clippy::result_large_err)]
pub fn read_config(f: &Path) -> Result<String, Diagnostic> {
    let mut budget = crate::limits::current().input_bytes;
    read_file(f, Links::Refuse, &mut budget)
}

/// Reads a regular file as UTF-8, at most `budget` bytes (which it decreases; to 0 when
/// the file goes past it).
#[allow(clippy::result_large_err)]
pub fn read_file(f: &Path, links: Links, budget: &mut u64) -> Result<String, Diagnostic> {
    let cannot = |e: std::io::Error| {
        Diagnostic::error(GP000, format!("cannot read {}: {e}", shown(f)))
            .with_help("check the path")
    };
    if links == Links::Refuse {
        let meta = std::fs::symlink_metadata(f).map_err(cannot)?;
        if meta.file_type().is_symlink() {
            return Err(link_refused(f));
        }
    }
    let file = open(f, links).map_err(|e| {
        if links == Links::Refuse && e.raw_os_error() == Some(libc::ELOOP) {
            link_refused(f)
        } else {
            cannot(e)
        }
    })?;
    // Checked on the open file: what is read is what was checked.
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(special_refused(f));
    }
    let mut bytes = Vec::new();
    file.take(budget.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > *budget {
        *budget = 0;
        let limit = crate::limits::current().input_bytes;
        return Err(Diagnostic::error(
            GP000,
            format!(
                "{} goes past the input-bytes limit: gpuplan reads at most {limit} bytes of input in one run",
                shown(f)
            ),
        )
        .with_help(crate::limits::hint("input-bytes")));
    }
    *budget -= bytes.len() as u64;
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            GP000,
            format!(
                "{} is not UTF-8 text (invalid byte at offset {})",
                shown(f),
                e.utf8_error().valid_up_to()
            ),
        )
        .with_help("KDL files must be UTF-8")
    })
}

/// Opens for reading without blocking on a FIFO or taking a terminal, and without
/// following a final link where links are refused.
#[cfg(unix)]
fn open(f: &Path, links: Links) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(f)
}

#[cfg(not(unix))]
fn open(f: &Path, _links: Links) -> std::io::Result<std::fs::File> {
    std::fs::File::open(f)
}
