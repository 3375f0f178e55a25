//! `gpuplan fmt [--check] [--diff] [--recursive] PATH...`: rewrites gpuplan files in
//! their canonical layout ([`crate::fmt`]), like `terraform fmt`. `-` formats stdin to
//! stdout. Prints the name of every file it changed (or, with `--check`, would change);
//! exit 1 when `--check` finds one, or on any error.

use super::Output;
use crate::cli::{FmtArgs, Format};
use crate::diag::Diagnostic;
use crate::source::SourceMap;
use std::path::{Path, PathBuf};

/// GP762: a path given to `fmt` cannot be read or written.
pub(crate) const GP762: &str = "GP762";

pub(crate) fn run(a: &FmtArgs, out: &Output) -> u8 {
    if a.paths.iter().any(|p| p.as_os_str() == "-") {
        return stdin(a, out);
    }
    let files = match files(&a.paths, a.recursive) {
        Ok(f) => f,
        Err(d) => return out.fail(&[d]),
    };
    let mut sources = SourceMap::new();
    let mut failed = false;
    let mut changed = false;
    for path in files {
        let text = match crate::load::read_config(&path) {
            Ok(t) => t,
            Err(d) => {
                out.diagnostics(&sources, &[d], Format::Human);
                failed = true;
                continue;
            }
        };
        let name = path.to_string_lossy().replace('\\', "/");
        let id = sources.add(name.clone(), text.clone());
        let formatted = match crate::fmt::format(id, &text) {
            Ok(f) => f,
            Err(diags) => {
                out.diagnostics(&sources, &diags, Format::Human);
                failed = true;
                continue;
            }
        };
        if formatted == text {
            continue;
        }
        changed = true;
        if a.diff {
            out.data(&diff(&name, &text, &formatted));
        }
        if a.check {
            if !a.diff {
                out.data(&format!("{name}\n"));
            }
            continue;
        }
        match crate::apply::write_atomically(&path, &formatted) {
            Ok(()) => {
                if !a.diff {
                    out.data(&format!("{name}\n"));
                }
            }
            Err(e) => {
                let d = Diagnostic::error(GP762, format!("cannot write `{name}`: {e}"))
                    .with_help("check the file's permissions");
                out.diagnostics(&sources, &[d], Format::Human);
                failed = true;
            }
        }
    }
    u8::from(failed || (a.check && changed))
}

/// `gpuplan fmt -`: stdin to stdout (with `--check`, nothing is printed but the exit code).
fn stdin(a: &FmtArgs, out: &Output) -> u8 {
    use std::io::Read;
    if a.paths.len() > 1 {
        return out.fail(&[Diagnostic::error(
            GP762,
            "`-` (standard input) cannot be combined with other paths",
        )
        .with_help("format standard input on its own: `gpuplan fmt - < FILE`")]);
    }
    let mut text = String::new();
    if let Err(e) = std::io::stdin()
        .take(crate::limits::current().input_bytes)
        .read_to_string(&mut text)
    {
        return out.fail(&[
            Diagnostic::error(GP762, format!("cannot read standard input: {e}"))
                .with_help("give UTF-8 KDL text on standard input"),
        ]);
    }
    let mut sources = SourceMap::new();
    let id = sources.add("<stdin>", text.clone());
    match crate::fmt::format(id, &text) {
        Ok(f) => {
            if a.diff && f != text {
                out.data(&diff("<stdin>", &text, &f));
            } else if !a.check && !a.diff {
                out.data(&f);
            }
            u8::from(a.check && f != text)
        }
        Err(diags) => {
            out.diagnostics(&sources, &diags, Format::Human);
            1
        }
    }
}

/// A unified diff of one file, `git diff` style.
fn diff(name: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// The `*.kdl` files of the paths: files as given, folders' `*.kdl` files (with
/// `recursive`, in sub-folders too, hidden ones skipped), in name order, no repeats.
#[allow(clippy::result_large_err)] // one error ends the command
fn files(paths: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, recursive, &mut out)?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(
                Diagnostic::error(GP762, format!("`{}` does not exist", p.display()))
                    .with_help("give KDL files or folders holding them"),
            );
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    Ok(out)
}

#[allow(clippy::result_large_err)]
fn walk(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> Result<(), Diagnostic> {
    let rd = std::fs::read_dir(dir).map_err(|e| {
        Diagnostic::error(
            GP762,
            format!("cannot read folder `{}`: {e}", dir.display()),
        )
        .with_help("check the path and its permissions")
    })?;
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for e in entries {
        let hidden = e
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        // Symbolic links are not followed: a folder link could loop or leave the tree.
        let is_link = std::fs::symlink_metadata(&e).is_ok_and(|m| m.file_type().is_symlink());
        if e.is_dir() {
            if recursive && !hidden && !is_link {
                walk(&e, recursive, out)?;
            }
        } else if e.extension().is_some_and(|x| x == "kdl") && !is_link {
            out.push(e);
        }
    }
    Ok(())
}
