//! `mig/<node>.sh`: brings one node's GPUs to the planned MIG layout with `nvidia-smi`.
//!
//! The script checks the driver branch and that the driver offers every planned profile,
//! refuses to touch a GPU with running processes unless `--force`, enables MIG mode
//! where needed (and stops with exit 3 when the GPU needs a reset first), destroys only
//! the GPU instances whose profile is not planned, creates the missing ones largest
//! first with their default compute instance (`-cgi ... -C`; if the kept instances block
//! the placement it starts that GPU over), then reads the layout back with `-lgi` and
//! fails when it differs from the plan. `--dry-run` prints the changing commands
//! instead of running them. A second run finds nothing to do.

use super::facts::{Facts, NodeFacts};
use super::run;
use crate::diag::Diagnostic;
use minijinja::Environment;
use serde::Serialize;

#[derive(Serialize)]
struct Gpu {
    index: u32,
    /// Profiles largest first (creation order), comma-joined.
    create: String,
    /// Sorted, comma-joined: what `-lgi` must show afterwards.
    want: String,
}

#[derive(Serialize)]
struct Ctx {
    header: String,
    node: String,
    min_driver: u32,
    gpus: Vec<Gpu>,
}

pub(super) fn render(f: &Facts, n: &NodeFacts, env: &Environment) -> Result<String, Diagnostic> {
    let min_driver = n
        .model
        .as_ref()
        .and_then(|m| f.c.models.get(m))
        .and_then(|m| m.mig)
        .and_then(|m| m.min_driver.trim_start_matches('R').parse().ok())
        .unwrap_or(0);
    let gpus = n
        .mig
        .iter()
        .map(|(g, profiles)| {
            let mut sorted = profiles.clone();
            sorted.sort();
            Gpu {
                index: *g,
                create: profiles.join(","),
                want: sorted.join(","),
            }
        })
        .collect();
    let ctx = Ctx {
        header: f.header(),
        node: n.name.clone(),
        min_driver,
        gpus,
    };
    run(env, "mig/node.sh.j2", &ctx)
}
