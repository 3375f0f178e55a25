//! `gpuplan completions SHELL` and `gpuplan man -o DIR`: generated from the clap
//! definitions (clap_complete, clap_mangen), so they never drift from the commands.

use super::Output;
use crate::cli::Cli;
use crate::diag::Diagnostic;
use clap::CommandFactory;
use std::path::Path;

/// GP764: the man pages cannot be written.
pub(crate) const GP764: &str = "GP764";

pub(crate) fn completions(shell: clap_complete::Shell, out: &Output) -> u8 {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "gpuplan", &mut buf);
    out.data(&String::from_utf8_lossy(&buf));
    0
}

/// The man pages, by file name: `gpuplan.1`, then `gpuplan-<sub>.1` for every
/// subcommand and nested subcommand (`gpuplan-import-slurm.1`).
pub(crate) fn pages() -> Vec<(String, Vec<u8>)> {
    fn walk(cmd: clap::Command, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
        let name = if prefix.is_empty() {
            cmd.get_name().to_string()
        } else {
            format!("{prefix}-{}", cmd.get_name())
        };
        let mut buf = Vec::new();
        if clap_mangen::Man::new(cmd.clone().name(name.clone()))
            .render(&mut buf)
            .is_ok()
        {
            out.push((format!("{name}.1"), buf));
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                walk(sub.clone(), &name, out);
            }
        }
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(cmd, "", &mut out);
    out
}

pub(crate) fn man_pages(dir: &Path, out: &Output) -> u8 {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return out.fail(&[Diagnostic::error(
            GP764,
            format!("cannot create `{}`: {e}", dir.display()),
        )
        .with_help("choose a folder you can write to")]);
    }
    let pages = pages();
    for (name, text) in &pages {
        let path = dir.join(name);
        if let Err(e) = crate::apply::write_atomically(&path, &String::from_utf8_lossy(text)) {
            return out.fail(&[Diagnostic::error(
                GP764,
                format!("cannot write `{}`: {e}", path.display()),
            )
            .with_help("choose a folder you can write to")]);
        }
    }
    out.status(&format!(
        "wrote {} man pages into {}",
        pages.len(),
        dir.display()
    ));
    0
}
