//! `gpuplan validate PATH...`

use super::Output;
use crate::cli::Format;
use crate::{load, validate};
use std::path::PathBuf;

pub(crate) fn run(paths: &[PathBuf], format: Format, out: &Output) -> u8 {
    let (sources, load_diags) = load::load_paths(paths);
    let mut outcome = validate::validate(&sources);
    let mut diags = load_diags;
    diags.append(&mut outcome.diagnostics);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let warnings = diags.len() - errors;
    out.diagnostics(&sources, &diags, format);
    if format == Format::Human {
        let files = sources.files().len();
        if errors == 0 {
            let summary = outcome
                .model
                .as_ref()
                .map(|m| {
                    format!(
                        ": {} nodes, {} GPUs{}, {} workload classes",
                        m.nodes.len(),
                        m.nodes.iter().map(|n| n.gpus.len()).sum::<usize>(),
                        mixed_summary(m),
                        m.workloads.len()
                    )
                })
                .unwrap_or_default();
            out.status(&format!(
                "valid: {files} file(s){summary}{}",
                if warnings > 0 {
                    format!(", {warnings} warning(s)")
                } else {
                    String::new()
                }
            ));
        } else {
            out.status(&format!(
                "invalid: {errors} error(s), {warnings} warning(s) in {files} file(s)"
            ));
        }
    }
    u8::from(errors > 0)
}

/// ` (mixed nodes: 8 a100-sxm4-80gb + 2 t4-16gb in class x; ...)` when a node class
/// carries GPUs of several models, else nothing.
fn mixed_summary(m: &crate::model::Cluster) -> String {
    let mixed: Vec<String> = m
        .classes
        .values()
        .filter(|c| c.is_mixed())
        .map(|c| format!("{} in class {}", c.gpus_text(), c.name))
        .collect();
    if mixed.is_empty() {
        String::new()
    } else {
        format!(" (mixed nodes: {})", mixed.join("; "))
    }
}
