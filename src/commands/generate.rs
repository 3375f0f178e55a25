//! `gpuplan generate superpod --gpus N [--mix M] [--seed S] [--classes K] [-o DIR]`

use super::{GP900, GP904, Output};
use crate::cli::{GenMix, GenerateKind};
use crate::diag::Diagnostic;
use crate::generate::{self, Mix, SuperpodOptions};
use std::path::Path;

pub(crate) fn run(what: GenerateKind, out: &Output) -> u8 {
    match what {
        GenerateKind::Superpod {
            gpus,
            mix,
            seed,
            classes,
            out_dir,
            force,
        } => {
            let opts = SuperpodOptions {
                gpus,
                mix: match mix {
                    GenMix::Training => Mix::Training,
                    GenMix::Inference => Mix::Inference,
                    GenMix::Mixed => Mix::Mixed,
                },
                seed,
                classes,
            };
            let (files, stats) = match generate::superpod_with_stats(&opts) {
                Ok(x) => x,
                Err(e) => {
                    return out.fail(&[Diagnostic::error(GP900, format!("cannot generate: {e}"))
                        .with_help("see `gpuplan generate superpod --help`")]);
                }
            };
            let summary = format!(
                "{} nodes, {} GPUs, {} leaves, {} spine group(s){}, {} teams, {} workload classes, demand {:.1}% of capacity",
                stats.nodes,
                stats.gpus,
                stats.leaves,
                stats.spines,
                if stats.cores > 0 { ", 1 core" } else { "" },
                stats.teams,
                stats.classes(),
                stats.demand_percent()
            );
            match out_dir {
                None => {
                    let mut text = String::new();
                    for (name, body) in &files {
                        text.push_str(&format!("// ==== {name} ====\n"));
                        text.push_str(body);
                        if !body.ends_with('\n') {
                            text.push('\n');
                        }
                    }
                    out.data(&text);
                    out.status(&format!("generated {summary}"));
                    0
                }
                Some(dir) => match write_files(&dir, &files, force) {
                    Ok(()) => {
                        out.status(&format!(
                            "wrote {} files to {}: {summary}",
                            files.len(),
                            dir.display()
                        ));
                        0
                    }
                    Err(d) => out.fail(&[*d]),
                },
            }
        }
    }
}

fn write_files(dir: &Path, files: &[(String, String)], force: bool) -> Result<(), Box<Diagnostic>> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Box::new(Diagnostic::error(
            GP904,
            format!("cannot {what} {}: {e}", p.display()),
        ))
    };
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Box::new(
                Diagnostic::error(
                    GP904,
                    format!("{} exists and is not a folder", dir.display()),
                )
                .with_help("choose another -o/--out-dir"),
            ));
        }
        let non_empty = std::fs::read_dir(dir)
            .map_err(|e| io("read", dir, e))?
            .next()
            .is_some();
        if non_empty && !force {
            return Err(Box::new(
                Diagnostic::error(GP904, format!("{} is not empty", dir.display()))
                    .with_help("choose an empty or new folder, or pass --force to overwrite"),
            ));
        }
    } else {
        std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    }
    for (name, body) in files {
        let p = dir.join(name);
        crate::apply::write_atomically(&p, body).map_err(|e| io("write", &p, e))?;
    }
    Ok(())
}
