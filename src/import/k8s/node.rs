//! One Node object's facts: its GPU model (catalog, `--model`, or a declared model), GPU
//! count and MIG layout, CPUs, memory, driver, taints and how its GPUs are used.

use super::read::{Locator, RawNode, Taint};
use super::{
    COUNT, DeclaredModel, FAMILY, GP733, GP734, GP735, GP736, GP737, GP739, GPU_RESOURCE, Hardware,
    MEMORY, Options, PRODUCT, REPLICAS, SHARING, mig,
};
use crate::catalog::{self, GpuSpec};
use crate::diag::Diagnostic;
use crate::import::names::sanitize;
use std::collections::BTreeMap;

/// What one GPU node turned into.
pub struct GpuNode<'a> {
    pub raw: &'a RawNode,
    pub hardware: Hardware,
    pub family: Option<String>,
    pub mig: Option<mig::Layout>,
    /// The pool mode its GPUs are used in now.
    pub mode: &'static str,
    pub taints: Vec<Taint>,
}

pub fn has_gpus(n: &RawNode) -> bool {
    n.labels.contains_key(PRODUCT)
        || n.capacity
            .get(GPU_RESOURCE)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|c| c > 0)
        || n.labels.get("nvidia.com/gpu.present").map(String::as_str) == Some("true")
}

pub struct Cx<'a> {
    pub loc: &'a Locator,
    pub opts: &'a Options,
    pub diags: &'a mut Vec<Diagnostic>,
    pub declared: BTreeMap<String, DeclaredModel>,
}

/// A node's GPU model: a catalog entry or a declared model's name.
enum Model {
    Catalog(&'static GpuSpec),
    Declared(String),
}

impl Model {
    fn name(&self) -> &str {
        match self {
            Model::Catalog(s) => s.id,
            Model::Declared(n) => n,
        }
    }
}

impl Cx<'_> {
    fn warn(&mut self, code: &'static str, n: &RawNode, key: &str, msg: String, help: &str) {
        let span = self.loc.key(n.index, key, &n.name);
        self.diags.push(
            Diagnostic::warning(code, msg)
                .at(span, "here")
                .with_help(help),
        );
    }

    /// A node without NVIDIA GPUs: its CPUs, memory and taints (an import keeps every
    /// node; CPU-only classes may run there).
    pub fn cpu_node<'n>(&mut self, n: &'n RawNode) -> GpuNode<'n> {
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

    pub fn gpu_node<'n>(&mut self, n: &'n RawNode) -> Option<GpuNode<'n>> {
        let Some(product) = n.labels.get(PRODUCT) else {
            let msg = format!(
                "node `{}` has GPUs but no `{PRODUCT}` label: left out",
                n.name
            );
            self.warn(GP733, n, GPU_RESOURCE, msg, "deploy GPU Feature Discovery (GPU Operator), which labels the GPU model, or describe the node by hand");
            return None;
        };
        let model = self.model(n, product)?;
        let (gpus, layout) = self.gpus_and_mig(n, &model, product);
        if gpus == 0 {
            let msg = format!("node `{}`: the number of GPUs cannot be told", n.name);
            self.warn(
                GP737,
                n,
                COUNT,
                msg,
                "the node needs `nvidia.com/gpu.count` or `nvidia.com/gpu` capacity",
            );
            return None;
        }
        let hardware = Hardware {
            model: model.name().to_string(),
            gpus,
            cpus: self.cpus(n),
            memory_gib: self.memory(n),
            driver: self.driver(n),
        };
        let mode = mode(n, layout.is_some());
        Some(GpuNode {
            raw: n,
            hardware,
            family: n.labels.get(FAMILY).cloned(),
            mig: layout,
            mode,
            taints: self.taints(n),
        })
    }

    fn model(&mut self, n: &RawNode, product: &str) -> Option<Model> {
        if let Some((_, id)) = self
            .opts
            .models
            .iter()
            .find(|(p, _)| p == product || p == gpu_of(product))
        {
            return match catalog::lookup(id) {
                Some(s) => Some(Model::Catalog(s)),
                None => {
                    let span = self.loc.key(n.index, PRODUCT, &n.name);
                    self.diags.push(
                        Diagnostic::error(
                            GP734,
                            format!("`--model {product}={id}`: `{id}` is not a catalog GPU model"),
                        )
                        .at(span, "this product")
                        .with_help(crate::suggest::hint(
                            id,
                            catalog::all().iter().map(|g| g.id),
                            "catalog GPU model",
                        )),
                    );
                    None
                }
            };
        }
        if let Some(s) = catalog::identify(product) {
            return Some(Model::Catalog(s));
        }
        self.declare(n, product)
    }

    /// A `gpu-model` for a product the catalog lacks, from `nvidia.com/gpu.memory`.
    fn declare(&mut self, n: &RawNode, product: &str) -> Option<Model> {
        let memory = n
            .labels
            .get(MEMORY)
            .and_then(|m| m.trim().parse::<u64>().ok());
        let base = base_product(product).unwrap_or(product);
        let (Some(mib), None) = (memory.filter(|m| *m > 0), mig::single_profile(product)) else {
            let span = self.loc.key(n.index, PRODUCT, &n.name);
            self.diags.push(
                Diagnostic::error(GP734, format!("GPU `{product}` of node `{}` is not in the catalog and its memory is not labelled", n.name))
                    .at(span, "this product")
                    .with_help(format!("map it to a catalog model: `--model {base}=ID` (`gpuplan explain GP734`)")),
            );
            return None;
        };
        let name = model_name(base);
        if !self.declared.contains_key(&name) {
            let msg = format!(
                "GPU `{product}` is not in the catalog: declared as gpu-model `{name}` with {mib} MiB from `{MEMORY}`"
            );
            self.warn(GP735, n, PRODUCT, msg, "review the declared model, or map the product to a catalog model with `--model PRODUCT=ID`");
            self.declared.insert(
                name.clone(),
                DeclaredModel {
                    name: name.clone(),
                    memory_mib: mib,
                    product: base.to_string(),
                },
            );
        }
        Some(Model::Declared(name))
    }

    /// Physical GPUs and the per-GPU MIG layout (when MIG is configured and maps).
    fn gpus_and_mig(
        &mut self,
        n: &RawNode,
        model: &Model,
        product: &str,
    ) -> (u32, Option<mig::Layout>) {
        let count = self.count(n);
        let Model::Catalog(spec) = model else {
            return (count, None);
        };
        if mig::is_single(n) {
            let profile = mig::single_profile(product)
                .map(str::to_string)
                .or_else(|| mig::totals(n).into_keys().next());
            let result = match profile {
                Some(p) => mig::single(spec, &p, count),
                None => Err("the single strategy's MIG profile is not in the labels".into()),
            };
            return match result {
                Ok((gpus, layout)) => (gpus, Some(mig::args(&layout))),
                Err(why) => {
                    self.mig_warning(n, &why);
                    (0, None)
                }
            };
        }
        match mig::mixed(n, spec, count) {
            Ok(layout) => (count, layout.map(|l| mig::args(&l))),
            Err(why) => {
                self.mig_warning(n, &why);
                (count, None)
            }
        }
    }

    fn mig_warning(&mut self, n: &RawNode, why: &str) {
        let key = if n.labels.contains_key(mig::CONFIG) {
            mig::CONFIG
        } else {
            PRODUCT
        };
        let msg = format!("MIG state of node `{}` is left out: {why}", n.name);
        self.warn(GP736, n, key, msg, "record the layouts with `gpuplan discover` or `gpuplan import nvidia-smi-xml` on the node");
    }

    /// `nvidia.com/gpu.count`, else the `nvidia.com/gpu` capacity over the time-slicing
    /// replicas.
    fn count(&mut self, n: &RawNode) -> u32 {
        if let Some(v) = n.labels.get(COUNT) {
            match v.trim().parse::<u32>() {
                Ok(c) => return c,
                Err(_) => {
                    let msg = format!("`{COUNT}` of node `{}` is not a number: `{v}`", n.name);
                    self.warn(
                        GP737,
                        n,
                        COUNT,
                        msg,
                        "the `nvidia.com/gpu` capacity is used instead",
                    );
                }
            }
        }
        let cap = n
            .capacity
            .get(GPU_RESOURCE)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let replicas = n
            .labels
            .get(REPLICAS)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(1)
            .max(1);
        cap / replicas
    }

    fn cpus(&mut self, n: &RawNode) -> Option<u32> {
        let v = n.capacity.get("cpu")?;
        match quantity(v) {
            Some(q) if q >= 1.0 => Some(q.floor() as u32),
            _ => {
                let msg = format!("CPU capacity `{v}` of node `{}` cannot be read", n.name);
                self.warn(GP737, n, "cpu", msg, "the class is written without `cpu`");
                None
            }
        }
    }

    fn memory(&mut self, n: &RawNode) -> Option<u64> {
        let v = n.capacity.get("memory")?;
        match quantity(v) {
            Some(q) if q >= 1024.0 * 1024.0 * 1024.0 => {
                Some(coarse_gib((q / (1024.0 * 1024.0 * 1024.0)).floor() as u64))
            }
            _ => {
                let msg = format!(
                    "memory capacity `{v}` of node `{}` cannot be read (or is under 1 GiB)",
                    n.name
                );
                self.warn(
                    GP737,
                    n,
                    "memory",
                    msg,
                    "the class is written without `memory`",
                );
                None
            }
        }
    }

    /// The driver version: `nvidia.com/cuda.driver-version.full`, else its parts, else
    /// the older `nvidia.com/cuda.driver.major/minor/rev`.
    fn driver(&mut self, n: &RawNode) -> Option<String> {
        let l = |k: &str| {
            n.labels
                .get(k)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let v = l("nvidia.com/cuda.driver-version.full").or_else(|| {
            [
                ("nvidia.com/cuda.driver-version.", "revision"),
                ("nvidia.com/cuda.driver.", "rev"),
            ]
            .iter()
            .find_map(|(p, rev)| {
                let major = l(&format!("{p}major"))?;
                let minor = l(&format!("{p}minor"))?;
                Some(match l(&format!("{p}{rev}")) {
                    Some(r) => format!("{major}.{minor}.{r}"),
                    None => format!("{major}.{minor}"),
                })
            })
        })?;
        let ok = v.split('.').count() <= 4
            && v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if !ok {
            let msg = format!("driver version `{v}` of node `{}` cannot be read", n.name);
            self.warn(
                GP737,
                n,
                "nvidia.com/cuda.driver",
                msg,
                "the class is written without `driver`",
            );
            return None;
        }
        Some(v)
    }

    /// Taints but the kubelet's and node controller's own (`node.kubernetes.io/*`,
    /// `node.cloudprovider.kubernetes.io/*`), sorted.
    fn taints(&mut self, n: &RawNode) -> Vec<Taint> {
        let mut out = Vec::new();
        for t in &n.taints {
            if t.key.starts_with("node.kubernetes.io/")
                || t.key.starts_with("node.cloudprovider.kubernetes.io/")
            {
                continue;
            }
            let why = if !matches!(
                t.effect.as_str(),
                "NoSchedule" | "PreferNoSchedule" | "NoExecute"
            ) {
                Some(format!(
                    "effect `{}` is not NoSchedule, PreferNoSchedule or NoExecute",
                    t.effect
                ))
            } else if t.key.starts_with("gpuplan.io/") {
                Some("gpuplan sets `gpuplan.io/` taints itself".to_string())
            } else if crate::names::label_key(&t.key).is_err()
                || t.value
                    .as_deref()
                    .is_some_and(|v| !crate::names::is_label_value(v))
            {
                Some("its key or value is not a valid Kubernetes name".to_string())
            } else {
                None
            };
            match why {
                Some(why) => {
                    let msg = format!(
                        "taint `{}` of node `{}` is not carried over: {why}",
                        t.key, n.name
                    );
                    self.warn(GP739, n, &t.key, msg, "add it by hand if it matters");
                }
                None => out.push(t.clone()),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// The CUDA version the driver supports: `nvidia.com/cuda.runtime-version.full`, else
/// `.major`/`.minor` of it or of the older `nvidia.com/cuda.runtime`.
pub fn cuda_runtime(n: &RawNode) -> Option<String> {
    let l = |k: &str| n.labels.get(k).filter(|s| !s.is_empty());
    if let Some(full) = l("nvidia.com/cuda.runtime-version.full") {
        return Some(full.clone());
    }
    [
        "nvidia.com/cuda.runtime-version.",
        "nvidia.com/cuda.runtime.",
    ]
    .iter()
    .find_map(|p| {
        Some(format!(
            "{}.{}",
            l(&format!("{p}major"))?,
            l(&format!("{p}minor"))?
        ))
    })
}

/// The GPU of a product name: without GFD's `-SHARED` suffix (time-slicing) and
/// `-MIG-<profile>` suffix (single strategy).
fn gpu_of(product: &str) -> &str {
    let base = base_product(product).unwrap_or(product);
    match base.to_ascii_lowercase().find("-mig-") {
        Some(i) => &base[..i],
        None => base,
    }
}

/// The product without GFD's `-SHARED` suffix (time-slicing rename), when it has one.
fn base_product(product: &str) -> Option<&str> {
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

/// A Kubernetes quantity (`192`, `191450m`, `2113558232Ki`, `1.5Gi`, `2e3`) as a number.
pub fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("m", 0.001),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (num, mul) = SUFFIXES
        .iter()
        .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n, *m)))
        .unwrap_or((s, 1.0));
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mul)
}

/// GiB rounded down to a 32nd of their power of two (at least 1 GiB: 1829 -> 1824,
/// 251 -> 248, 31 -> 31), so that identical servers whose kernels reserve a little
/// more or less memory still form one class.
pub fn coarse_gib(gib: u64) -> u64 {
    let step = (1u64 << gib.max(1).ilog2()) / 32;
    match step {
        0 | 1 => gib,
        s => gib / s * s,
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
