//! IMEX for Slurm jobs on multi-node NVLink domains (GB200/GB300 NVL72 racks). A job
//! whose nodes span several trays of one domain shares GPU memory over NVLink only
//! through an IMEX channel; Slurm's `switch/nvidia_imex` plugin (added in Slurm 24.05,
//! SchedMD/slurm `src/plugins/switch/nvidia_imex`, commit bd7f94a "Add
//! switch/nvidia_imex plugin") allocates one channel per job on all of its nodes
//! (`slurm.conf(5)`, SwitchParameters: `imex_channel_count`, default 2048; per segment
//! with `--network=unique-channel-per-segment` from 25.11, which gpuplan does not need:
//! a gang stays in one domain). Below 24.05 there is no such plugin: GP940.

use crate::diag::Diagnostic;
pub(super) use crate::render::facts::dra::one_domain;
use crate::render::facts::{ClassFacts, Facts};

/// GP940: the declared Slurm has no `switch/nvidia_imex`.
pub(crate) const GP940: &str = "GP940";
/// The first Slurm with `switch/nvidia_imex`.
pub(crate) const SLURM_IMEX: &[u32] = &[24, 5];

/// Whether some gang of class `c` is on several nodes of one multi-node NVLink domain.
pub(super) fn class_needs_imex(f: &Facts, c: &ClassFacts) -> bool {
    f.plan
        .workloads
        .iter()
        .filter(|w| w.name == c.name)
        .flat_map(|w| &w.gangs)
        .any(|g| one_domain(f.c, g.nodes.iter().map(|n| n.node.as_str())))
}

/// Whether slurm.conf enables `switch/nvidia_imex`: some Slurm class has a
/// multi-node NVLink gang and the Slurm named has the plugin; GP940 when it has not.
pub(super) fn enabled(f: &Facts, warnings: &mut Vec<Diagnostic>) -> bool {
    let classes: Vec<&str> = f
        .classes
        .iter()
        .filter(|c| c.kind == "training" && class_needs_imex(f, c))
        .map(|c| c.name.as_str())
        .collect();
    if classes.is_empty() {
        return false;
    }
    if f.slurm_version.as_slice() >= SLURM_IMEX {
        return true;
    }
    warnings.push(
        Diagnostic::warning(
            GP940,
            format!(
                "Slurm {} has no switch/nvidia_imex (24.05+): the jobs of {} span several nodes of a multi-node NVLink domain and get no IMEX channel from Slurm, so their GPUs cannot share memory over NVLink",
                super::version_text(&f.slurm_version),
                classes.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ),
        )
        .with_help("declare Slurm 24.05 or newer (`cluster { slurm version=\"24.05\" }`): slurm.conf then sets SwitchType=switch/nvidia_imex; or give the jobs IMEX channels with your own prolog"),
    );
    false
}
