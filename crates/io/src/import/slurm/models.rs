//! GRES GPU types to GPU models: `--model TYPE=ID` first (a catalog id, or the name of a
//! model the user declares), then the catalog; a type the catalog does not know is
//! declared as a `gpu-model` named after it (memory only when the type says it, e.g.
//! `rtx_a6000_48gb`; else a placeholder `validate` refuses with GP006 until it is
//! filled), flagged in the import report, never a reason to leave nodes out.

use super::{GP742, GP744, GP749, Options};
use crate::catalog;
use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind};
use crate::source::Span;
use std::collections::{BTreeMap, BTreeSet};

/// A GPU model declared by the import for a GRES type outside the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Declared {
    pub(super) name: String,
    /// The GRES type it comes from, as slurm.conf writes it.
    pub(super) slurm_type: String,
    /// Per GPU, when the type names it (`..._48gb`).
    pub(super) memory_gib: Option<u64>,
}

/// Resolves GRES types, remembering what it declared and what the user must check.
#[derive(Default)]
pub(super) struct Resolver {
    warned: BTreeSet<String>,
    /// Models to write as `gpu-model` declarations, by name.
    pub(super) declared: BTreeMap<String, Declared>,
    /// What the report flags (declared models, models named by `--model` that the
    /// catalog lacks).
    pub(super) flags: Vec<Item>,
}

/// The model name for an untyped `gpu:N` GRES that no `--model gpu=ID` maps.
pub(super) const UNTYPED: &str = "untyped-gpu";

impl Resolver {
    /// The model id (a catalog id or a declared name) of GRES type `ty`; `None` only
    /// when `--model` maps it to something that cannot be a gpuplan name (GP749).
    pub(super) fn resolve(
        &mut self,
        ty: &str,
        opts: &Options,
        span: Span,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<String> {
        let base = model_part(ty);
        let key = if base.is_empty() { "gpu" } else { base };
        if let Some((_, id)) = opts.models.iter().find(|(t, _)| t == key || t == ty) {
            return self.mapped(key, id, diags);
        }
        let found = (!base.is_empty())
            .then(|| catalog::identify(base))
            .flatten();
        match found {
            Some(g) => {
                self.family(base, g.id, span, diags);
                Some(g.id.to_string())
            }
            None => Some(self.declare(key, span, diags)),
        }
    }

    /// `--model KEY=ID`: a catalog model, or a name the user declares (flagged).
    fn mapped(&mut self, key: &str, id: &str, diags: &mut Vec<Diagnostic>) -> Option<String> {
        if let Some(g) = catalog::lookup(id) {
            return Some(g.id.to_string());
        }
        if let Err(why) = crate::names::dns_label(id, 63) {
            if self.warned.insert(format!("bad {id}")) {
                diags.push(
                    Diagnostic::error(
                        GP749,
                        format!("`--model {key}={id}`: `{id}` is neither a catalog model nor a valid model name ({why})"),
                    )
                    .with_help("name a model of docs/catalog.md (e.g. `tesla-m60-8gb` if it were there), or the name of a `gpu-model` you declare: lowercase letters, digits and `-`"),
                );
            }
            return None;
        }
        if self.warned.insert(format!("mapped {id}")) {
            diags.push(
                Diagnostic::warning(
                    GP742,
                    format!("`--model {key}={id}`: `{id}` is not in the catalog; it is used as the name of a model you declare"),
                )
                .with_help(format!("declare it next to the import: gpu-model \"{id}\" memory=\"...\" (or base=\"CATALOG-ID\")")),
            );
            self.flags.push(Item::new(
                ItemKind::GpuModel,
                id,
                GP742,
                format!("`--model {key}={id}` names no catalog model: declare `gpu-model \"{id}\"` with its memory"),
            ));
        }
        Some(id.to_string())
    }

    /// A family alias (`h100`: SXM, PCIe, NVL...) maps to the catalog's default, with
    /// a warning.
    fn family(&mut self, base: &str, id: &str, span: Span, diags: &mut Vec<Diagnostic>) {
        let family: Vec<&str> = catalog::all()
            .iter()
            .filter(|x| x.short_name.eq_ignore_ascii_case(base))
            .map(|x| x.id)
            .collect();
        if family.len() > 1 && self.warned.insert(base.to_string()) {
            diags.push(
                Diagnostic::warning(
                    GP744,
                    format!(
                        "GPU type `{base}` names a family ({}); `{id}` is assumed",
                        family.join(", ")
                    ),
                )
                .at(span, "this GPU type")
                .with_help(format!(
                    "if the nodes have another part, pass `--model {base}=ID`"
                )),
            );
        }
    }

    /// A `gpu-model` for a type the catalog lacks, named after the type.
    fn declare(&mut self, key: &str, span: Span, diags: &mut Vec<Diagnostic>) -> String {
        let name = declared_name(key);
        if self.declared.contains_key(&name) {
            return name;
        }
        let memory_gib = memory_of(key);
        let what = if key == "gpu" {
            "an untyped GPU GRES (`gpu:N`)".to_string()
        } else {
            format!("GPU type `{key}`")
        };
        let memory = match memory_gib {
            Some(g) => format!("{g}GiB from its name"),
            None => "memory unknown: set it in the declaration".into(),
        };
        diags.push(
            Diagnostic::warning(
                GP742,
                format!("{what} is not in the catalog: declared as gpu-model `{name}` ({memory})"),
            )
            .at(span, "this Gres")
            .with_help(format!(
                "fill in the declared model, or map the type to a catalog model with `--model {key}=ID` (docs/catalog.md)"
            )),
        );
        let reason = match memory_gib {
            Some(_) => format!(
                "GRES type `{key}` is not in the catalog: declared with the memory its name gives; check it"
            ),
            None => format!(
                "GRES type `{key}` is not in the catalog: declared without memory; set memory= (or base=) before `validate` accepts it"
            ),
        };
        self.flags
            .push(Item::new(ItemKind::GpuModel, name.clone(), GP742, reason));
        self.declared.insert(
            name.clone(),
            Declared {
                name: name.clone(),
                slurm_type: key.to_string(),
                memory_gib,
            },
        );
        name
    }
}

/// The declared model's name: the GRES type as a gpuplan name (a DNS label); a name
/// the catalog already uses gets `-slurm`, so that a declaration never refines a
/// catalog model by accident.
pub(super) fn declared_name(key: &str) -> String {
    if key == "gpu" {
        return UNTYPED.to_string();
    }
    let s = crate::import::names::sanitize(key, 56);
    if catalog::lookup(&s).is_some() {
        format!("{s}-slurm")
    } else {
        s
    }
}

/// GPU memory named by a GRES type: a `NNgb` word (`nvidia_rtx_a6000_48gb` -> 48).
pub(super) fn memory_of(ty: &str) -> Option<u64> {
    ty.split(['_', '-', '.'])
        .filter_map(|w| {
            w.to_ascii_lowercase()
                .strip_suffix("gb")?
                .parse::<u64>()
                .ok()
        })
        .find(|g| (1..=4096).contains(g))
}

/// The MIG profile of a GRES type like `a100_3g.40gb`, `nvidia_a100_1g.10gb`, or a
/// bare `1g.10gb`.
pub(super) fn catalog_mig_profile(ty: &str) -> Option<String> {
    let profile = ty.rsplit_once('_').map_or(ty, |(_, p)| p);
    let (g, rest) = profile.split_once("g.")?;
    let ok = !g.is_empty() && g.bytes().all(|c| c.is_ascii_digit()) && rest.contains("gb");
    ok.then(|| profile.to_string())
}

/// The GPU model part of a MIG GRES type (`a100` of `a100_3g.40gb`; empty for a bare
/// profile).
pub(super) fn model_part(ty: &str) -> &str {
    match catalog_mig_profile(ty) {
        Some(p) => ty
            .strip_suffix(p.as_str())
            .map_or(ty, |x| x.trim_end_matches('_')),
        None => ty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_memory_from_gres_types() {
        assert_eq!(declared_name("m60"), "m60");
        assert_eq!(declared_name("RTX_3090"), "rtx-3090");
        assert_eq!(declared_name("gpu"), UNTYPED);
        assert_eq!(memory_of("nvidia_rtx_a6000_48gb"), Some(48));
        assert_eq!(memory_of("m60"), None);
        assert_eq!(memory_of("x_99999999999999999999gb"), None);
    }
}
