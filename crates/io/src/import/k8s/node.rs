//! One Node object's facts: its GPU model (catalog, `--model`, or a declared model), GPU
//! count and MIG layout, CPUs, memory, driver, taints and how its GPUs are used.

use super::read::{Locator, RawNode, Taint};
use super::{
    COUNT, DeclaredModel, FAMILY, GP723, GP736, GP737, GPU_RESOURCE, Hardware, Options, PRODUCT,
    REPLICAS, SHARING, count, mig, text,
};
use crate::catalog::GpuSpec;
use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind};
use crate::limits::MAX_GPUS_PER_NODE;
use std::collections::BTreeMap;

/// What one GPU node turned into.
pub(crate) struct GpuNode<'a> {
    pub raw: &'a RawNode,
    pub hardware: Hardware,
    pub family: Option<String>,
    pub mig: Option<mig::Layout>,
    /// The pool mode its GPUs are used in now.
    pub mode: &'static str,
    pub taints: Vec<Taint>,
}

/// A node's GPU model: a catalog entry or a declared model's name.
pub(crate) enum Model {
    Catalog(&'static GpuSpec),
    Declared(String),
}

impl Model {
    pub(crate) fn name(&self) -> &str {
        match self {
            Model::Catalog(s) => s.id,
            Model::Declared(n) => n,
        }
    }
}

/// Whether the node shows NVIDIA GPUs at all: a product label, `gpu.present=true`, a
/// GPU count above 0, or GPU or MIG device capacity.
pub(crate) fn has_gpus(n: &RawNode) -> bool {
    let positive = |v: Option<&String>| {
        v.and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|c| c > 0)
    };
    n.labels.contains_key(PRODUCT)
        || positive(n.capacity.get(GPU_RESOURCE))
        || positive(n.labels.get(COUNT))
        || n.labels.get("nvidia.com/gpu.present").map(String::as_str) == Some("true")
        || mig::has_totals(n)
}

pub(crate) struct Cx<'a> {
    pub loc: &'a Locator,
    pub opts: &'a Options,
    pub diags: &'a mut Vec<Diagnostic>,
    pub declared: BTreeMap<String, DeclaredModel>,
    /// In the output but to be completed or checked (the import report's `flagged`).
    pub flags: Vec<Item>,
    /// Not in the output and not a node (the import report's `left_out`: taints).
    pub lost: Vec<Item>,
}

/// Why a GPU node is left out: the code and the reason (its diagnostic says it too).
#[derive(Clone, Debug)]
pub(crate) struct Leave {
    pub code: &'static str,
    pub reason: String,
}

impl Leave {
    pub(crate) fn new(code: &'static str, reason: String) -> Self {
        Leave { code, reason }
    }
}

impl Cx<'_> {
    pub(super) fn warn(
        &mut self,
        code: &'static str,
        n: &RawNode,
        key: &str,
        msg: String,
        help: &str,
    ) {
        let span = self.loc.key(n.index, key, &n.name);
        self.diags.push(
            Diagnostic::warning(code, msg)
                .at(span, "here")
                .with_help(help),
        );
    }

    /// A node without NVIDIA GPUs: its CPUs, memory and taints (an import keeps every
    /// node; CPU-only classes may run there).
    pub(crate) fn cpu_node<'n>(&mut self, n: &'n RawNode) -> GpuNode<'n> {
        GpuNode {
            raw: n,
            hardware: Hardware {
                model: String::new(),
                gpus: 0,
                cpus: self.cpus(n),
                memory_gib: self.memory(n),
                driver: None,
            },
            family: None,
            mig: None,
            mode: "whole-gpu",
            taints: self.taints(n),
        }
    }

    pub(crate) fn gpu_node<'n>(&mut self, n: &'n RawNode) -> Result<GpuNode<'n>, Leave> {
        let (model, product) = match n.labels.get(PRODUCT) {
            Some(p) => (self.model(n, p)?, p.as_str()),
            None => (self.unlabelled(n)?, ""),
        };
        let (gpus, layout) = self.gpus_and_mig(n, &model, product)?;
        let hardware = Hardware {
            model: model.name().to_string(),
            gpus,
            cpus: self.cpus(n),
            memory_gib: self.memory(n),
            driver: self.driver(n),
        };
        let mode = mode(n, layout.is_some());
        Ok(GpuNode {
            raw: n,
            hardware,
            family: n.labels.get(FAMILY).cloned(),
            mig: layout,
            mode,
            taints: self.taints(n),
        })
    }

    /// Physical GPUs and the per-GPU MIG layout (when MIG is configured and maps). MIG
    /// state that does not map is flagged (GP736), the GPUs imported whole; only when
    /// the count itself cannot be told is the node left out.
    fn gpus_and_mig(
        &mut self,
        n: &RawNode,
        model: &Model,
        product: &str,
    ) -> Result<(u32, Option<mig::Layout>), Leave> {
        let count = self.count(n)?;
        if let Some(profile) = mig::single_profile(product) {
            // Single strategy, MIG applied: the count is of MIG devices.
            let result = match model {
                Model::Catalog(spec) => mig::single(spec, profile, count),
                Model::Declared(name) => Err(format!(
                    "`{name}` is not in the catalog, so how many {} devices one GPU holds is unknown (map the product with `--model`)",
                    text::shown(profile)
                )),
            };
            return match result {
                Ok((gpus, layout)) => Ok((self.bounded(n, gpus)?, Some(mig::args(&layout)))),
                Err(why) => {
                    let msg = format!(
                        "node `{}`: the GPU count cannot be told from {count} MIG device(s) of the single strategy: {why}",
                        n.name
                    );
                    self.warn(GP736, n, PRODUCT, msg.clone(), "record the layouts with `gpuplan discover` or `gpuplan import nvidia-smi-xml` on the node");
                    Err(Leave::new(GP736, msg))
                }
            };
        }
        let gpus = self.bounded(n, count)?;
        let result = match model {
            Model::Catalog(spec) => mig::mixed(n, spec, gpus),
            Model::Declared(_) if mig::has_totals(n) => Err(
                "the GPU model is not in the catalog, so its MIG devices cannot be checked"
                    .to_string(),
            ),
            Model::Declared(_) => Ok(None),
        };
        match result {
            Ok(layout) => Ok((gpus, layout.map(|l| mig::args(&l)))),
            Err(why) => {
                self.mig_flag(n, &why);
                Ok((gpus, None))
            }
        }
    }

    /// A MIG layout that cannot be carried: the node is imported with whole GPUs, the
    /// layout flagged.
    fn mig_flag(&mut self, n: &RawNode, why: &str) {
        let key = if n.labels.contains_key(mig::CONFIG) {
            mig::CONFIG
        } else {
            PRODUCT
        };
        let msg = format!("MIG state of node `{}` is left out: {why}", n.name);
        self.warn(GP736, n, key, msg, "record the layouts with `gpuplan discover` or `gpuplan import nvidia-smi-xml` on the node");
        self.flags.push(Item::new(
            ItemKind::MigLayout,
            n.name.clone(),
            GP736,
            why.to_string(),
        ));
    }

    /// A GPU count one node can hold ([`MAX_GPUS_PER_NODE`]), else the node is left out
    /// with GP723.
    fn bounded(&mut self, n: &RawNode, gpus: u64) -> Result<u32, Leave> {
        match u32::try_from(gpus) {
            Ok(g) if u64::from(g) <= MAX_GPUS_PER_NODE => Ok(g),
            _ => {
                let msg = format!(
                    "node `{}` would have {gpus} GPUs: more than one node holds ({MAX_GPUS_PER_NODE} at most)",
                    n.name
                );
                let key = count::key_of(n);
                self.warn(
                    GP723,
                    n,
                    key,
                    msg.clone(),
                    "check the label or capacity; describe the node by hand if it is right",
                );
                Err(Leave::new(GP723, msg))
            }
        }
    }

    /// The count of `nvidia.com/gpu.count`, else of the `nvidia.com/gpu` capacity over
    /// the time-slicing replicas ([`count::count_of`]); an unreadable label is a GP737
    /// warning, no count at all leaves the node out with GP737 at what is missing.
    pub(super) fn count(&mut self, n: &RawNode) -> Result<u64, Leave> {
        if let Some(v) = n.labels.get(COUNT) {
            if v.trim().parse::<u64>().is_err() {
                let msg = format!(
                    "`{COUNT}` of node `{}` is not a number: `{}`",
                    n.name,
                    text::shown(v)
                );
                self.warn(
                    GP737,
                    n,
                    COUNT,
                    msg,
                    "the `nvidia.com/gpu` capacity is used instead",
                );
            }
        }
        match count::count_of(n) {
            Ok(c) => Ok(c),
            Err((key, why)) => {
                let msg = format!(
                    "node `{}`: the number of GPUs cannot be told: {why}",
                    n.name
                );
                self.warn(
                    GP737,
                    n,
                    key,
                    msg.clone(),
                    "the node needs `nvidia.com/gpu.count` or `nvidia.com/gpu` capacity",
                );
                Err(Leave::new(GP737, msg))
            }
        }
    }
}

/// The pool mode a node's GPUs are used in now.
fn mode(n: &RawNode, mig: bool) -> &'static str {
    let sharing = n.labels.get(SHARING).map(String::as_str);
    let replicas = n
        .labels
        .get(REPLICAS)
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(1);
    let shared_product = n
        .labels
        .get(PRODUCT)
        .is_some_and(|p| p.ends_with("-SHARED"));
    if mig {
        "mig"
    } else if sharing == Some("mps") {
        "mps"
    } else if sharing == Some("time-slicing") || replicas > 1 || shared_product {
        "time-slice"
    } else {
        "whole-gpu"
    }
}
