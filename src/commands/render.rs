//! `gpuplan render PATH... --target T --out-dir DIR`: the `plan` pipeline, then the
//! renderers, then one atomic write of the output folder: every file goes into a
//! temporary folder next to DIR, which then replaces DIR by rename, so DIR is never
//! left half-written. A DIR that gpuplan did not write (no `.gpuplan-render` marker)
//! and that is not empty is never replaced.

// A render fails at most once per target, so a large error value costs nothing.
#![allow(clippy::result_large_err)]

use super::Output;
use super::output::{Progress, timings};
use crate::cli::{Format, RenderTarget, SolveArgs};
use crate::diag::Diagnostic;
use crate::pipeline::{self, Inputs};
use crate::render::{self, Target};
use std::path::{Path, PathBuf};

/// GP911: the output folder cannot be written or replaced.
pub(crate) const GP911: &str = "GP911";

pub(crate) struct Settings {
    pub paths: Vec<PathBuf>,
    pub targets: Vec<RenderTarget>,
    pub out_dir: PathBuf,
    pub slurm_version: Option<String>,
    pub solve: SolveArgs,
}

impl From<crate::cli::RenderArgs> for Settings {
    fn from(a: crate::cli::RenderArgs) -> Self {
        Settings {
            paths: a.paths,
            targets: a.target,
            out_dir: a.out_dir,
            slurm_version: a.slurm_version,
            solve: a.solve,
        }
    }
}

fn targets(sel: &[RenderTarget]) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for t in sel {
        match t {
            RenderTarget::All => out.extend(Target::ALL),
            RenderTarget::K8s => out.push(Target::K8s),
            RenderTarget::Volcano => out.push(Target::Volcano),
            RenderTarget::Kueue => out.push(Target::Kueue),
            RenderTarget::Kai => out.push(Target::Kai),
            RenderTarget::Slurm => out.push(Target::Slurm),
            RenderTarget::Mig => out.push(Target::Mig),
            RenderTarget::Fabric => out.push(Target::Fabric),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `22.05` -> `[22, 5]`.
fn parse_version(s: &str) -> Option<Vec<u32>> {
    s.split('.').map(|p| p.parse().ok()).collect()
}

pub(crate) fn run(s: &Settings, out: &Output) -> u8 {
    let slurm_version = match s.slurm_version.as_deref().map(|v| (v, parse_version(v))) {
        None => None,
        Some((_, Some(v))) => Some(v),
        Some((v, None)) => {
            return out.fail(&[
                Diagnostic::error(GP911, format!("`{v}` is not a Slurm version"))
                    .with_help("write it as `22.05` or `24.05`"),
            ]);
        }
    };
    let mut progress = Progress::new(out);
    let checked = match pipeline::check(
        Inputs::load(&s.paths),
        &super::settings(&s.solve),
        &mut |e| progress.event(e),
    ) {
        Ok(x) => x,
        Err(f) => return out.failed(&f),
    };
    timings(&checked.timings);
    let (sources, model, plan) = (&checked.sources, &checked.model, &checked.placement);
    // A target named on the command line that renders nothing deserves a warning.
    let warn_empty = !s.targets.iter().any(|t| matches!(t, RenderTarget::All));
    let opts = render::Options {
        slurm_version,
        warn_empty,
    };
    let rendered = match render::render(model, plan, &targets(&s.targets), &opts) {
        Ok(r) => r,
        Err(diags) => {
            out.diagnostics(sources, &diags, Format::Human);
            out.status("nothing written: the plan cannot be rendered");
            return 1;
        }
    };
    out.diagnostics(sources, &rendered.warnings, Format::Human);
    if let Err(e) = write_dir(&s.out_dir, &rendered.files) {
        return out.fail(&[e]);
    }
    out.status(&format!(
        "wrote {} files to {}",
        rendered.files.len(),
        s.out_dir.display()
    ));
    0
}

/// Writes `files` as the whole contents of `dir`, atomically (see the module docs and
/// [`crate::apply::write_dir`], which `apply` shares).
pub(crate) fn write_dir(dir: &Path, files: &render::Files) -> Result<(), Diagnostic> {
    crate::apply::write_dir(dir, files, &crate::apply::WriteOptions::default()).map_err(|mut d| {
        // An unsafe path keeps its own code (GP927); folder errors are render's GP911.
        if d.code == crate::apply::GP924 {
            d.code = GP911;
        }
        d
    })
}
