//! `gpuplan check-render DIR PLAN|PATH... [--format json]`: reads a rendered folder
//! (regular files only, no link followed, bounded) and checks that it carries out the
//! plan ([`crate::realize`]): a saved plan reopened as `show` and `report` reopen it,
//! or the configuration planned as `render` plans it (planning is deterministic, so
//! `render X --out-dir D` then `check-render D X` agree). Exit 0 when realizable, 1
//! with violations or errors.

use super::Output;
use crate::cli::{CheckRenderArgs, Format};
use crate::diag::Diagnostic;
use std::collections::BTreeMap;
use std::path::Path;

/// GP932: the rendered folder, or a file in it, cannot be read.
pub(crate) const GP932: &str = "GP932";
/// GP933: a rendered file cannot be parsed as its scheduler reads it.
pub(crate) const GP933: &str = "GP933";

/// Folders deeper than this are not read (the renderers write two levels).
const MAX_DEPTH: usize = 8;
/// The most files read from one folder.
const MAX_FILES: usize = 100_000;

pub(crate) fn run(a: &CheckRenderArgs, out: &Output) -> u8 {
    let files = match read_dir(&a.dir) {
        Ok(f) => f,
        Err(d) => return out.fail(&d),
    };
    let (model, placement) =
        match super::support::planning::model_and_placement(&a.paths, &a.solve, &a.state, out) {
            Ok(x) => x,
            Err(code) => return code,
        };
    let report = crate::realize::check(&files, &model, &placement);
    let parse: Vec<Diagnostic> = report
        .violations
        .iter()
        .filter(|v| v.invariant == crate::realize::Invariant::Parse)
        .map(|v| {
            Diagnostic::error(GP933, format!("{}: {}: {}", v.file, v.object, v.message)).with_help(
                "re-render the folder; if it was rendered by this gpuplan, the renderer has a bug",
            )
        })
        .collect();
    out.diagnostics(&crate::source::SourceMap::new(), &parse, Format::Human);
    match a.format {
        Format::Json => out.data(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )),
        Format::Human => out.data(&crate::realize::view::human(&report)),
    }
    u8::from(!report.realizable)
}

fn cannot(path: &Path, why: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        GP932,
        format!(
            "cannot read the rendered folder at {}: {why}",
            path.display()
        ),
    )
    .with_help("pass the folder `gpuplan render ... --out-dir DIR` wrote")
}

/// Every regular file under `dir` (relative path with `/` -> text), except the
/// `.gpuplan-render` marker and `fabric/`; links, special files, unreadable or
/// non-UTF-8 files are errors.
pub(crate) fn read_dir(dir: &Path) -> Result<BTreeMap<String, String>, Vec<Diagnostic>> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| vec![cannot(dir, e)])?;
    if !meta.is_dir() {
        return Err(vec![cannot(dir, "not a folder (a link is not followed)")]);
    }
    let mut files = BTreeMap::new();
    let mut errors = Vec::new();
    let mut budget = crate::limits::current().input_bytes;
    walk(dir, "", 0, (&mut files, &mut errors), &mut budget);
    if errors.is_empty() {
        Ok(files)
    } else {
        Err(errors)
    }
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    (files, errors): (&mut BTreeMap<String, String>, &mut Vec<Diagnostic>),
    budget: &mut u64,
) {
    // A spent input budget stops the walk: every later file would say the same.
    let spent = |errors: &Vec<Diagnostic>| errors.iter().any(|d| d.message.contains("input-bytes"));
    if spent(errors) {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return errors.push(cannot(dir, e)),
    };
    let mut list: Vec<_> = entries.flatten().collect();
    list.sort_by_key(|e| e.file_name());
    for e in list {
        let path = e.path();
        let Some(name) = e.file_name().to_str().map(String::from) else {
            errors.push(cannot(&path, "the name is not UTF-8"));
            continue;
        };
        let rel = format!("{prefix}{name}");
        if rel == ".gpuplan-render" || rel == "fabric" {
            continue;
        }
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() && depth < MAX_DEPTH {
            walk(
                &path,
                &format!("{rel}/"),
                depth + 1,
                (files, errors),
                budget,
            );
        } else if kind.is_dir() {
            errors.push(cannot(
                &path,
                format!("folders nest deeper than {MAX_DEPTH} levels"),
            ));
        } else if files.len() >= MAX_FILES {
            return errors.push(cannot(dir, format!("more than {MAX_FILES} files")));
        } else {
            match crate::load::read_file(&path, crate::load::Links::Refuse, budget) {
                Ok(text) => {
                    files.insert(rel, text);
                }
                Err(d) => {
                    let help = if d.message.contains("input-bytes") {
                        "a large cluster's rendered folder can pass the default: raise it, e.g. `--limit input-bytes=268435456`"
                    } else {
                        "a rendered folder holds regular UTF-8 files only; render it again"
                    };
                    errors.push(Diagnostic {
                        code: GP932,
                        help: Some(help.into()),
                        ..d
                    });
                    if spent(errors) {
                        return;
                    }
                }
            }
        }
    }
}
