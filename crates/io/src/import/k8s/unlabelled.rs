//! A node with `nvidia.com/gpu` capacity but no `nvidia.com/gpu.product` label (the
//! device plugin runs, GPU Feature Discovery does not): its GPUs are imported as a
//! placeholder `gpu-model` ([`UNKNOWN_MODEL`], without memory, so `validate` refuses it
//! with GP006 until the user fills it in), flagged with GP733. `--model unknown-gpu=ID`
//! maps them. A node showing only MIG devices is left out: its physical GPUs cannot be
//! counted without GFD's labels.

use super::node::{Cx, Leave, Model};
use super::read::RawNode;
use super::text::shown;
use super::{DeclaredModel, GP733, GP734, GPU_RESOURCE, PRODUCT, count, mig};
use crate::catalog;
use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind};
use crate::import::names::sanitize;

/// The placeholder model of nodes without a product label, and the `--model` key that
/// maps it (`--model unknown-gpu=h100-sxm5-80gb`).
pub(crate) const UNKNOWN_MODEL: &str = "unknown-gpu";

const HELP: &str = "deploy GPU Feature Discovery (GPU Operator) and import again, or map the GPUs: `--model unknown-gpu=ID` (`gpuplan explain GP733`)";

impl Cx<'_> {
    /// The model of a GPU node without a product label: `--model unknown-gpu=ID`, else
    /// the placeholder; a node with MIG devices is left out.
    pub(super) fn unlabelled(&mut self, n: &RawNode) -> Result<Model, Leave> {
        if mig::has_totals(n) {
            let msg = format!(
                "node `{}` shows MIG devices but no `{PRODUCT}` label: how many GPUs hold them cannot be told, left out",
                n.name
            );
            self.warn(GP733, n, GPU_RESOURCE, msg.clone(), "deploy GPU Feature Discovery (GPU Operator), which labels the GPU model and count, or describe the node by hand");
            return Err(Leave::new(GP733, msg));
        }
        // No count (only `gpu.present=true`): left out before anything is declared.
        if count::count_of(n).is_err() {
            self.count(n)?;
        }
        let mapped = self
            .opts
            .models
            .iter()
            .find(|(p, _)| p == UNKNOWN_MODEL)
            .map(|(_, id)| id.clone());
        let Some(id) = mapped else {
            return Ok(self.placeholder(n, UNKNOWN_MODEL));
        };
        if let Some(s) = catalog::lookup(&id) {
            return Ok(Model::Catalog(s));
        }
        if sanitize(&id, 63) != id {
            let id = shown(&id);
            let msg = format!(
                "`--model {UNKNOWN_MODEL}={id}`: `{id}` is neither a catalog GPU model nor a model name (lowercase letters, digits and `-`)"
            );
            let span = self.loc.key(n.index, GPU_RESOURCE, &n.name);
            self.diags.push(
                Diagnostic::error(GP734, msg.clone())
                    .at(span, "GPUs of an unknown model")
                    .with_help(crate::suggest::hint(
                        &id,
                        catalog::all().iter().map(|g| g.id),
                        "catalog GPU model",
                    )),
            );
            return Err(Leave::new(GP734, msg));
        }
        Ok(self.placeholder(n, &id))
    }

    /// Declares `gpu-model NAME` without memory (once) and flags the node's GPUs.
    fn placeholder(&mut self, n: &RawNode, name: &str) -> Model {
        let msg = format!(
            "node `{}` has GPUs but no `{PRODUCT}` label: imported as gpu-model `{name}`, without memory (`validate` refuses it, GP006, until it is filled in)",
            n.name
        );
        self.warn(GP733, n, GPU_RESOURCE, msg, HELP);
        self.flags.push(Item::new(
            ItemKind::Gpus,
            n.name.clone(),
            GP733,
            format!("GPU model unknown (no `{PRODUCT}` label): imported as gpu-model `{name}`"),
        ));
        if !self.declared.contains_key(name) {
            self.flags.push(Item::new(
                ItemKind::GpuModel,
                name,
                GP733,
                "placeholder for GPUs without a product label: set memory=\"...\" (or base=\"...\"), or import again with `--model unknown-gpu=ID`".to_string(),
            ));
            self.declared.insert(
                name.to_string(),
                DeclaredModel {
                    name: name.to_string(),
                    memory_mib: None,
                    product: String::new(),
                },
            );
        }
        Model::Declared(name.to_string())
    }
}
