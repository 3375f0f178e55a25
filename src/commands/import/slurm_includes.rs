//! The `Include` files of a Slurm site for `gpuplan import slurm`: looked up by file
//! name in slurm.conf's folder only (an include never reads outside it, GP748), nested
//! includes followed, each file loaded once (a cycle ends there), at most
//! [`MAX_FILES`] files and [`MAX_DEPTH`] levels (GP757 past them).

use crate::diag::Diagnostic;
use crate::import::slurm::conf;
use crate::source::{FileId, SourceMap};
use std::path::Path;

/// GP748: a Slurm file cannot be read, or an `Include` leaves the folder.
pub const GP748: &str = "GP748";

/// GP757: `Include` files nested deeper, or more of them, than the import follows.
pub(crate) const GP757: &str = "GP757";

/// The most included files one import reads.
pub(crate) const MAX_FILES: usize = 64;
/// The most levels of `Include` inside included files.
pub(crate) const MAX_DEPTH: usize = 8;

/// Loads the includes of `slurm` (and of the files it includes) into `sources`: (the
/// name the `Include` line gives, as written, its file).
pub(crate) fn load(
    dir: &Path,
    slurm: FileId,
    sources: &mut SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(String, FileId)> {
    let mut out: Vec<(String, FileId)> = Vec::new();
    let mut queue = vec![(slurm, 0usize)];
    let mut scratch = Vec::new();
    while let Some((file, depth)) = queue.pop() {
        let text = sources
            .get(file)
            .map_or(String::new(), |f| f.text.to_string());
        for r in conf::records(file, &text, &mut scratch) {
            let Some(p) = r.get("include") else { continue };
            // Only the file name counts: includes are looked up beside slurm.conf.
            let name = Path::new(&p.value).file_name().map(Path::new);
            let Some(name) = name.filter(|n| !n.as_os_str().is_empty()) else {
                continue;
            };
            let key = name.to_string_lossy().to_string();
            if out.iter().any(|(n, _)| *n == key) {
                continue;
            }
            if depth >= MAX_DEPTH || out.len() >= MAX_FILES {
                diags.push(
                    Diagnostic::warning(
                        GP757,
                        format!("`Include {}`: past {MAX_DEPTH} levels or {MAX_FILES} files of includes; skipped", p.value),
                    )
                    .at(p.span, "this include")
                    .with_help("flatten the includes of the site into fewer files"),
                );
                continue;
            }
            let path = dir.join(name);
            match crate::load::read_one(&path) {
                Ok(t) => {
                    let id = sources.add(path.to_string_lossy().replace('\\', "/"), t);
                    out.push((key, id));
                    queue.push((id, depth + 1));
                }
                Err(_) => diags.push(
                    Diagnostic::warning(
                        GP748,
                        format!(
                            "`Include {}`: no `{}` beside slurm.conf; skipped",
                            p.value,
                            name.display()
                        ),
                    )
                    .at(p.span, "this include")
                    .with_help("copy the included file into the same folder as slurm.conf"),
                ),
            }
        }
    }
    out
}
