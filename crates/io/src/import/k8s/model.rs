//! A node's GPU model: `--model PRODUCT=ID`, the catalog, or a `gpu-model` declared for
//! a product the catalog lacks (with its memory when `nvidia.com/gpu.memory` says it,
//! else without, for the user to fill in: `validate` refuses it with GP006 until then).

use super::node::{Cx, Leave, Model};
use super::read::RawNode;
use super::text::shown;
use super::{DeclaredModel, GP734, GP735, MEMORY, PRODUCT, mig};
use crate::catalog;
use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind};
use crate::import::names::sanitize;

impl Cx<'_> {
    /// The model of `product`: `--model` first (a catalog id, or the name of a model
    /// the user declares), then the catalog, else a declared model.
    pub(super) fn model(&mut self, n: &RawNode, product: &str) -> Result<Model, Leave> {
        let mapped = self
            .opts
            .models
            .iter()
            .find(|(p, _)| p == product || p == gpu_of(product))
            .map(|(_, id)| id.clone());
        if let Some(id) = mapped {
            if let Some(s) = catalog::lookup(&id) {
                return Ok(Model::Catalog(s));
            }
            return self.mapped_to_declared(n, product, &id);
        }
        if let Some(s) = catalog::identify(product) {
            return Ok(Model::Catalog(s));
        }
        let base = gpu_of(product);
        Ok(self.declare(n, product, &model_name(base), base))
    }

    /// `--model PRODUCT=ID` with an `ID` the catalog lacks: a model of that name,
    /// declared here (the user's own model); an `ID` that cannot be a name is an error.
    fn mapped_to_declared(&mut self, n: &RawNode, product: &str, id: &str) -> Result<Model, Leave> {
        let span = self.loc.key(n.index, PRODUCT, &n.name);
        if sanitize(id, 63) != id {
            let (product, id) = (shown(product), shown(id));
            let msg = format!(
                "`--model {product}={id}`: `{id}` is neither a catalog GPU model nor a model name (lowercase letters, digits and `-`)"
            );
            self.diags.push(
                Diagnostic::error(GP734, msg.clone())
                    .at(span, "this product")
                    .with_help(crate::suggest::hint(
                        &id,
                        catalog::all().iter().map(|g| g.id),
                        "catalog GPU model",
                    )),
            );
            return Err(Leave::new(GP734, msg));
        }
        Ok(self.declare(n, product, id, gpu_of(product)))
    }

    /// Declares `gpu-model NAME` for `product` (once per name): with the memory of
    /// `nvidia.com/gpu.memory` (MiB; not for MIG devices, whose memory it is), else
    /// without memory, flagged for the user to fill in.
    fn declare(&mut self, n: &RawNode, product: &str, name: &str, base: &str) -> Model {
        if self.declared.contains_key(name) {
            return Model::Declared(name.to_string());
        }
        let memory = n
            .labels
            .get(MEMORY)
            .and_then(|m| m.trim().parse::<u64>().ok())
            .filter(|m| *m > 0 && *m < 1 << 30)
            .filter(|_| mig::single_profile(product).is_none());
        let near = crate::suggest::did_you_mean(name, catalog::all().iter().map(|g| g.id))
            .map(|s| format!(" (did you mean the catalog's `{s}`?)"))
            .unwrap_or_default();
        let (shown_product, shown_base) = (shown_up_to_200(product), shown_up_to_200(base));
        let (code, msg, help) = match memory {
            Some(mib) => (
                GP735,
                format!(
                    "GPU `{shown_product}` is not in the catalog: declared as gpu-model `{name}` with {mib} MiB from `{MEMORY}`{near}"
                ),
                "review the declared model, or map the product with `--model PRODUCT=ID`"
                    .to_string(),
            ),
            None => (
                GP734,
                format!(
                    "GPU `{shown_product}` of node `{}` is not in the catalog and its memory is not labelled: declared as gpu-model `{name}` without memory{near}",
                    n.name
                ),
                format!(
                    "fill in memory=\"...\" (or base=\"...\") in the output, where a comment says so, or map it: `--model {shown_base}=ID` (`gpuplan explain GP734`); until then `validate` refuses the model (GP006)"
                ),
            ),
        };
        self.warn(code, n, PRODUCT, msg.clone(), &help);
        let reason = if memory.is_some() {
            format!("declared from its labels ({msg}); review it")
        } else {
            "memory unknown: set memory=\"...\" (or base=\"...\") before `validate` accepts it"
                .to_string()
        };
        self.flags
            .push(Item::new(ItemKind::GpuModel, name, code, reason));
        self.declared.insert(
            name.to_string(),
            DeclaredModel {
                name: name.to_string(),
                memory_mib: memory,
                product: base.to_string(),
            },
        );
        Model::Declared(name.to_string())
    }
}

fn shown_up_to_200(v: &str) -> String {
    super::text::shown_up_to(v, 200)
}

/// The GPU of a product name: without GFD's `-SHARED` suffix (time-slicing) and
/// `-MIG-<profile>` suffix (single strategy).
pub(crate) fn gpu_of(product: &str) -> &str {
    let base = base_product(product).unwrap_or(product);
    match base.to_ascii_lowercase().find("-mig-") {
        Some(i) => &base[..i],
        None => base,
    }
}

/// The product without GFD's `-SHARED` suffix (time-slicing rename), when it has one.
pub(crate) fn base_product(product: &str) -> Option<&str> {
    product.strip_suffix("-SHARED")
}

/// A DNS-label name for a product: `NVIDIA-RTX-A6000` -> `rtx-a6000`.
pub fn model_name(product: &str) -> String {
    let s = sanitize(product, 63);
    let s = s.strip_prefix("nvidia-").unwrap_or(&s).to_string();
    if catalog::lookup(&s).is_some() {
        format!("{s}-gfd")
    } else {
        s
    }
}
