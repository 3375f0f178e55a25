//! The catalog check of MIG profiles as the driver reports them (`nvidia-smi mig
//! -lgip`, NVML): another name is a driver rename (`GP720`, pinned with `gpu-model {
//! mig-name }`), other usable memory is `GP721`, an ID the catalog does not know is
//! `GP722`. Shared by `discover` (NVML) and the `nvidia-smi` importers.

use super::{GP720, GP721, GP722};
use crate::catalog::GpuSpec;
use crate::diag::Diagnostic;
use crate::source::Span;
use serde::Serialize;

/// A profile as the driver reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObservedProfile {
    pub id: u32,
    pub name: String,
    pub memory_gib: Option<f64>,
    #[serde(skip)]
    pub span: Option<Span>,
}

/// Compares observed profiles with a catalog model: the `mig-name` pins to write and the
/// differences as warnings.
pub(crate) fn compare(
    spec: &GpuSpec,
    observed: &[ObservedProfile],
) -> (Vec<(String, String)>, Vec<Diagnostic>) {
    let mut pins: Vec<(String, String)> = Vec::new();
    let mut diags = Vec::new();
    let Some(mig) = spec.mig else {
        return (pins, diags);
    };
    let mut seen = std::collections::BTreeSet::new();
    for o in observed {
        if !seen.insert((o.id, o.name.clone())) {
            continue;
        }
        let Some(cat) = mig.profiles.iter().find(|p| p.id == o.id) else {
            let mut d = Diagnostic::warning(
                GP722,
                format!(
                    "profile `{}` (ID {}) is not in the catalog for {}",
                    o.name, o.id, spec.id
                ),
            )
            .with_help("gpuplan cannot plan with it; report it so the catalog can learn it");
            if let Some(s) = o.span {
                d = d.at(s, "unknown profile ID");
            }
            diags.push(d);
            continue;
        };
        if cat.name != o.name {
            let mut d = Diagnostic::warning(
                GP720,
                format!("the driver calls {} `{}`; the catalog calls it `{}`", spec.id, o.name, cat.name),
            )
            .with_help(format!(
                "pin the driver's name so rendered resource names match the device plugin: `gpu-model \"{}\" {{ mig-name \"{}\" driver=\"{}\" }}` (the output has it)",
                spec.id, cat.name, o.name
            ));
            if let Some(s) = o.span {
                d = d.at(s, "driver name");
            }
            diags.push(d);
            if !pins.iter().any(|(c, _)| c == cat.name) {
                pins.push((cat.name.to_string(), o.name.clone()));
            }
        }
        // A value gpuplan knows for some driver (catalog::memory) is not news.
        if let Some(m) = o
            .memory_gib
            .filter(|m| !crate::catalog::memory::is_known_gib(mig, cat, *m))
        {
            let mut d = Diagnostic::warning(
                GP721,
                format!(
                    "`{}` on {} has {m:.2} GiB usable; the catalog says {:.2} GiB{}",
                    o.name,
                    spec.id,
                    cat.memory_gib,
                    if cat.memory_observed { "" } else { " (derived, not observed)" }
                ),
            )
            .with_help("right-sizing uses the catalog value; report the difference so the catalog can be corrected");
            if let Some(s) = o.span {
                d = d.at(s, "usable memory");
            }
            diags.push(d);
        }
    }
    (pins, diags)
}
