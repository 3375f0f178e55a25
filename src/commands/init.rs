//! `gpuplan init [DIR]`: a starter configuration and a `.gitignore` for the state folder.
//!
//! On a node where NVML loads, the hardware part is this node as `gpuplan discover`
//! reads it (one node class, one node, its MIG state); elsewhere it is a commented
//! example (two HGX H100 nodes) to replace. Either way the result validates, plans and
//! is `gpuplan fmt`-clean (`tests/it/init.rs`). Existing files are never overwritten:
//! `cluster.kdl` present is an error, a `.gitignore` gets the state line appended once.

use super::Output;
use crate::diag::Diagnostic;
use crate::discover::{self, Naming};
use std::path::Path;

/// GP763: `init` would overwrite a file, or cannot write one.
pub(crate) const GP763: &str = "GP763";

/// The starter configuration with example hardware.
pub(crate) const SKELETON: &str = include_str!("../../templates/init/skeleton.kdl");

const HARDWARE_START: &str =
    "// ---------------------------------------------------------------- hardware\n";
const PEOPLE_START: &str =
    "// ---------------------------------------------------------------- people\n";

/// The line `init` adds to `.gitignore`.
pub(crate) const GITIGNORE_LINE: &str = ".gpuplan/";

pub(crate) fn run(dir: &Path, no_discover: bool, out: &Output) -> u8 {
    let hardware = if no_discover {
        None
    } else {
        discovered_hardware(out)
    };
    let text = starter(hardware.as_ref());
    // Discovery's text and the skeleton joined: the canonical layout, as `fmt` writes it.
    let mut sources = crate::source::SourceMap::new();
    let id = sources.add("cluster.kdl", text.clone());
    let text = crate::fmt::format(id, &text).unwrap_or(text);
    let file = dir.join("cluster.kdl");
    if file.exists() {
        return out.fail(&[Diagnostic::error(
            GP763,
            format!(
                "`{}` exists; init writes a new configuration only",
                file.display()
            ),
        )
        .with_help("run `gpuplan init` in an empty folder, or give one: `gpuplan init DIR`")]);
    }
    if let Err(e) = crate::apply::write_atomically(&file, &text) {
        return out.fail(&[Diagnostic::error(
            GP763,
            format!("cannot write `{}`: {e}", file.display()),
        )
        .with_help("choose a folder you can write to")]);
    }
    out.status(&format!(
        "wrote {} ({})",
        file.display(),
        if hardware.is_some() {
            "hardware discovered on this node through NVML"
        } else {
            "example hardware: replace it with `gpuplan discover` or `gpuplan import`"
        }
    ));
    let ignore = dir.join(".gitignore");
    let old = std::fs::read_to_string(&ignore).unwrap_or_default();
    if !old.lines().any(|l| l.trim() == GITIGNORE_LINE) {
        let mut new = old.clone();
        if !new.is_empty() && !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str("# gpuplan's local state and lock (kept outside git: docs/ci.md)\n");
        new.push_str(GITIGNORE_LINE);
        new.push('\n');
        if let Err(e) = crate::apply::write_atomically(&ignore, &new) {
            return out.fail(&[Diagnostic::error(
                GP763,
                format!("cannot write `{}`: {e}", ignore.display()),
            )
            .with_help("choose a folder you can write to")]);
        }
        out.status(&format!("wrote {}", ignore.display()));
    }
    out.status(&format!(
        "next: gpuplan validate {d} && gpuplan plan {d}",
        d = dir.display()
    ));
    0
}

/// What discovery found on this node, if NVML loads and reads it.
pub(crate) struct Hardware {
    /// `gpuplan discover`'s KDL for this node.
    pub kdl: String,
    pub node: String,
    pub gpus: usize,
}

fn discovered_hardware(out: &Output) -> Option<Hardware> {
    let nvml = match discover::nvml::Nvml::load() {
        Ok(n) => n,
        Err(e) => {
            out.status(&format!(
                "no NVML on this machine ({}): writing example hardware",
                e.message
            ));
            return None;
        }
    };
    let snap = discover::collect(&nvml).ok()?;
    let node = super::support::host_name()
        .as_deref()
        .and_then(discover::derive::node_name)?;
    let naming = Naming {
        node: node.clone(),
        class: None,
        model: None,
    };
    let (inv, _) = discover::inventory("nvml", &snap, &naming).ok()?;
    let kdl = crate::import::nvidia_smi::render(&inv, "discovered by `gpuplan init` through NVML");
    Some(Hardware {
        kdl,
        node,
        gpus: inv.gpus.len(),
    })
}

/// The starter text: the skeleton, with its example hardware replaced by `hw`.
pub(crate) fn starter(hw: Option<&Hardware>) -> String {
    let Some(hw) = hw else {
        return SKELETON.to_string();
    };
    let (head, rest) = SKELETON
        .split_once(HARDWARE_START)
        .unwrap_or((SKELETON, ""));
    let (_, people) = rest.split_once(PEOPLE_START).unwrap_or(("", rest));
    let q = crate::fmt::quote;
    let gpus = hw.gpus.max(1);
    let people = people.replace(
        "team \"research\" guarantee=8 burst=16",
        &format!("team \"research\" guarantee={gpus} burst={gpus}"),
    );
    let people = people.replace(
        "gang gpus=8 gpus-per-node=8",
        &format!("gang gpus={gpus} gpus-per-node={gpus}"),
    );
    format!(
        "{head}{HARDWARE_START}\n{}\nfabric {{\n    leaf \"leaf-1\" nodes={}\n}}\n\n{PEOPLE_START}{people}",
        hw.kdl.trim_end(),
        q(&hw.node)
    )
}
