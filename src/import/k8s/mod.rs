//! `gpuplan import k8s-nodes`: `kubectl get nodes -o json|yaml` into gpuplan's language.
//!
//! What a Node object says: the GPU model, count, memory and driver (GPU Feature
//! Discovery labels, `nvidia.com/gpu` capacity), CPUs and memory (`status.capacity`),
//! MIG state ([`mig`]), multi-node NVLink cliques and switch tiers from topology labels
//! ([`fabric`]), taints and node-pool labels. Nodes of identical hardware form one
//! `node-class`; their names are compressed into ranges. What it cannot say (NUMA,
//! PCIe, NICs, NVLink inside the node) is left to `import nvidia-smi-topo` / `discover`.

pub mod fabric;
pub mod mig;
pub mod read;
pub mod render;

use crate::catalog::{self, GpuSpec};
use crate::diag::Diagnostic;
use crate::source::{FileId, SourceMap};
use read::{Locator, RawNode, Taint};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// GP730: the input is not JSON or YAML.
pub const GP730: &str = "GP730";
/// GP731: the document is not a Node or a List of Nodes.
pub const GP731: &str = "GP731";
/// GP732: an item of the list is skipped (not a Node, no name, a bad or repeated name).
pub const GP732: &str = "GP732";
/// GP733: a node with GPUs but no `nvidia.com/gpu.product` label is left out.
pub const GP733: &str = "GP733";
/// GP734: a GPU product neither the catalog nor the labels describe.
pub const GP734: &str = "GP734";
/// GP735: a GPU product the catalog lacks is declared as a `gpu-model` from its labels.
pub const GP735: &str = "GP735";
/// GP736: MIG state that cannot be mapped to a layout of the catalog.
pub const GP736: &str = "GP736";
/// GP737: a label or capacity value that cannot be read.
pub const GP737: &str = "GP737";
/// GP738: topology labels that do not form a tree of switches.
pub const GP738: &str = "GP738";
/// GP739: a taint or pool label that cannot be carried over.
pub const GP739: &str = "GP739";

pub const PRODUCT: &str = "nvidia.com/gpu.product";
const COUNT: &str = "nvidia.com/gpu.count";
const MEMORY: &str = "nvidia.com/gpu.memory";
const FAMILY: &str = "nvidia.com/gpu.family";
const REPLICAS: &str = "nvidia.com/gpu.replicas";
const SHARING: &str = "nvidia.com/gpu.sharing-strategy";
const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// Label keys whose value names a node's pool, in the order they are tried.
pub const DEFAULT_POOL_LABELS: &[&str] = &[
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
];

/// The importer's options (the command line's flags).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--model PRODUCT=ID`: a `nvidia.com/gpu.product` value and the catalog id it is.
    pub models: Vec<(String, String)>,
    /// `--tier TIER=KEY`: the label key of a switch tier (`leaf`, `spine`, `core`); an
    /// empty key turns the tier off.
    pub tiers: Vec<(String, String)>,
    /// `--pool-label KEY`: keys naming pools (default [`DEFAULT_POOL_LABELS`]).
    pub pool_labels: Vec<String>,
}

/// A `gpu-model` declared for a product the catalog lacks.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DeclaredModel {
    pub name: String,
    pub memory_mib: u64,
    pub product: String,
}

/// Hardware that makes nodes one class.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Hardware {
    pub model: String,
    pub gpus: u32,
    pub cpus: Option<u32>,
    pub memory_gib: Option<u64>,
    pub driver: Option<String>,
}

/// One `node-class`.
#[derive(Clone, Debug, Serialize)]
pub struct Class {
    pub name: String,
    pub hardware: Hardware,
    /// The `nvidia.com/gpu.product` values of its nodes.
    pub products: BTreeSet<String>,
    pub family: Option<String>,
    /// The CUDA version the driver supports (`nvidia.com/cuda.runtime*`), when all agree.
    pub cuda: Option<String>,
    pub nodes: usize,
}

/// One `nodes` line: a name pattern, its class and taints.
#[derive(Clone, Debug, Serialize)]
pub struct Range {
    pub pattern: String,
    pub class: String,
    pub taints: Vec<Taint>,
}

/// One `pool`.
#[derive(Clone, Debug, Serialize)]
pub struct Pool {
    pub name: String,
    pub mode: &'static str,
    pub nodes: String,
    /// `key=value` of the label it comes from.
    pub label: String,
}

/// One `mig layout ... current=#true` line.
#[derive(Clone, Debug, Serialize)]
pub struct MigLine {
    pub layout: mig::Layout,
    pub nodes: String,
    pub config: Option<String>,
}

/// Everything the import found.
#[derive(Clone, Debug, Serialize)]
pub struct Import {
    pub models: Vec<DeclaredModel>,
    pub classes: Vec<Class>,
    pub ranges: Vec<Range>,
    pub pools: Vec<Pool>,
    pub fabric: fabric::Fabric,
    pub mig: Vec<MigLine>,
    /// Nodes without NVIDIA GPUs, left out.
    pub without_gpus: Vec<String>,
}

/// What one GPU node turned into.
struct GpuNode<'a> {
    raw: &'a RawNode,
    hardware: Hardware,
    family: Option<String>,
    mig: Option<mig::Layout>,
    mode: &'static str,
    taints: Vec<Taint>,
}

/// Reads the file and maps it; `None` when nothing could be read.
pub fn import(
    sources: &SourceMap,
    file: FileId,
    opts: &Options,
) -> (Option<Import>, Vec<Diagnostic>) {
    let text = sources.get(file).map_or("", |f| &f.text);
    let (raw, loc, mut diags) = read::nodes(text, file);
    if diags.iter().any(Diagnostic::is_error) {
        return (None, diags);
    }
    let raw = unique_valid_names(raw, &loc, &mut diags);
    let mut cx = Cx {
        loc: &loc,
        opts,
        diags: &mut diags,
        declared: BTreeMap::new(),
    };
    let mut gpu_nodes = Vec::new();
    let mut without_gpus = Vec::new();
    for n in &raw {
        if !has_gpus(n) {
            without_gpus.push(n.name.clone());
            continue;
        }
        if let Some(g) = cx.gpu_node(n) {
            gpu_nodes.push(g);
        }
    }
    let models: Vec<DeclaredModel> = cx.declared.into_values().collect();
    gpu_nodes.sort_by(|a, b| a.raw.name.cmp(&b.raw.name));
    let (classes, class_of) = classes(&gpu_nodes);
    let nodes: Vec<&RawNode> = gpu_nodes.iter().map(|g| g.raw).collect();
    let fab = fabric::build(&nodes, &loc, opts, &mut diags);
    let pools = pools(&gpu_nodes, &loc, opts, &mut diags);
    let imp = Import {
        models,
        ranges: ranges(&gpu_nodes, &class_of),
        classes,
        pools,
        fabric: fab,
        mig: mig_lines(&gpu_nodes),
        without_gpus,
    };
    (Some(imp), diags)
}

/// Drops nodes whose names gpuplan cannot use or that repeat, with GP732.
fn unique_valid_names(
    raw: Vec<RawNode>,
    loc: &Locator,
    diags: &mut Vec<Diagnostic>,
) -> Vec<RawNode> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for n in raw {
        let why = match crate::units::validate_node_name(&n.name) {
            Err(e) => Some(e),
            Ok(()) if !seen.insert(n.name.clone()) => {
                Some(format!("node `{}` is listed twice", n.name))
            }
            Ok(()) => None,
        };
        match why {
            Some(why) => diags.push(
                Diagnostic::warning(GP732, format!("node skipped: {why}"))
                    .at(loc.node(n.index, &n.name), "this node")
                    .with_help("node names must be lowercase DNS names, each once"),
            ),
            None => out.push(n),
        }
    }
    out
}

fn has_gpus(n: &RawNode) -> bool {
    n.labels.contains_key(PRODUCT)
        || n.capacity
            .get(GPU_RESOURCE)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|c| c > 0)
        || n.labels.get("nvidia.com/gpu.present").map(String::as_str) == Some("true")
}

struct Cx<'a> {
    loc: &'a Locator,
    opts: &'a Options,
    diags: &'a mut Vec<Diagnostic>,
    declared: BTreeMap<String, DeclaredModel>,
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

    fn gpu_node<'n>(&mut self, n: &'n RawNode) -> Option<GpuNode<'n>> {
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
                Some((q / (1024.0 * 1024.0 * 1024.0)).floor() as u64)
            }
            _ => {
                let msg = format!("memory capacity `{v}` of node `{}` cannot be read", n.name);
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
fn cuda_runtime(n: &RawNode) -> Option<String> {
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
fn model_name(product: &str) -> String {
    let s = sanitize(product, 63);
    let s = s.strip_prefix("nvidia-").unwrap_or(&s).to_string();
    if catalog::lookup(&s).is_some() {
        format!("{s}-gfd")
    } else {
        s
    }
}

/// Lowercase letters, digits and single `-`, at most `max` characters, never empty.
pub fn sanitize(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(max);
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "x".into() } else { out }
}

/// `base`, or `base-2`, `base-3`... : the first not yet in `used` (which then holds it).
pub fn unique(base: &str, used: &mut BTreeSet<String>) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while !used.insert(name.clone()) {
        name = format!("{base}-{k}");
        k += 1;
    }
    name
}

/// One node-name pattern for a set of names: its compressed range when there is one,
/// else the names as alternatives after their common prefix (`gke-pool-[0k2d,7qxz]`).
/// An alternative must not be empty nor read as a range (`1-01`): the prefix shrinks
/// until none is.
pub fn one_pattern(names: &[String]) -> String {
    let compressed = crate::units::compress_names(names);
    if let [one] = compressed.as_slice() {
        return one.clone();
    }
    let mut sorted = names.to_vec();
    sorted.sort();
    sorted.dedup();
    let first = sorted.first().map_or("", String::as_str);
    let mut len = sorted.iter().fold(first.len(), |l, n| {
        l.min(
            first
                .bytes()
                .zip(n.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        )
    });
    let bad = |item: &str| {
        item.is_empty()
            || item
                .split_once('-')
                .is_some_and(|(a, _)| !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()))
    };
    while len > 0 && sorted.iter().any(|n| bad(&n[len..])) {
        len -= 1;
    }
    let items: Vec<&str> = sorted.iter().map(|n| &n[len..]).collect();
    format!("{}[{}]", &first[..len], items.join(","))
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

/// Classes of identical hardware, named `<model short name>-x<gpus>` (deduplicated in
/// the order of their hardware), and each node's class.
fn classes(nodes: &[GpuNode]) -> (Vec<Class>, BTreeMap<String, String>) {
    let mut by_hw: BTreeMap<&Hardware, Vec<&GpuNode>> = BTreeMap::new();
    for g in nodes {
        by_hw.entry(&g.hardware).or_default().push(g);
    }
    let mut used = BTreeSet::new();
    let mut classes = Vec::new();
    let mut class_of = BTreeMap::new();
    for (hw, members) in by_hw {
        let short = catalog::lookup(&hw.model).map_or(hw.model.as_str(), |s| s.short_name);
        let name = unique(&sanitize(&format!("{short}-x{}", hw.gpus), 50), &mut used);
        for g in &members {
            class_of.insert(g.raw.name.clone(), name.clone());
        }
        let families: BTreeSet<&String> =
            members.iter().filter_map(|g| g.family.as_ref()).collect();
        let cudas: BTreeSet<String> = members.iter().filter_map(|g| cuda_runtime(g.raw)).collect();
        classes.push(Class {
            name,
            hardware: hw.clone(),
            products: members
                .iter()
                .filter_map(|g| g.raw.labels.get(PRODUCT).cloned())
                .collect(),
            family: (families.len() == 1)
                .then(|| families.into_iter().next().cloned())
                .flatten(),
            cuda: (cudas.len() == 1)
                .then(|| cudas.into_iter().next())
                .flatten(),
            nodes: members.len(),
        });
    }
    classes.sort_by(|a, b| a.name.cmp(&b.name));
    (classes, class_of)
}

/// `nodes` lines: nodes of one class and the same taints, compressed into ranges; the
/// names no range holds share one line (`gke-pool-a1b2-[0k2d,7qxz]`).
fn ranges(nodes: &[GpuNode], class_of: &BTreeMap<String, String>) -> Vec<Range> {
    let mut groups: BTreeMap<(&str, &[Taint]), Vec<String>> = BTreeMap::new();
    for g in nodes {
        let class = class_of.get(&g.raw.name).map_or("", String::as_str);
        groups
            .entry((class, &g.taints))
            .or_default()
            .push(g.raw.name.clone());
    }
    let mut out = Vec::new();
    for ((class, taints), names) in groups {
        let (ranged, single): (Vec<String>, Vec<String>) = crate::units::compress_names(&names)
            .into_iter()
            .partition(|p| p.contains('['));
        let rest = (!single.is_empty()).then(|| one_pattern(&single));
        for pattern in ranged.into_iter().chain(rest) {
            out.push(Range {
                pattern,
                class: class.to_string(),
                taints: taints.to_vec(),
            });
        }
    }
    out.sort_by(|a, b| (&a.class, &a.pattern).cmp(&(&b.class, &b.pattern)));
    out
}

/// Pools from the first pool label each node has.
fn pools(
    nodes: &[GpuNode],
    loc: &Locator,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Pool> {
    let keys: Vec<&str> = if opts.pool_labels.is_empty() {
        DEFAULT_POOL_LABELS.to_vec()
    } else {
        opts.pool_labels.iter().map(String::as_str).collect()
    };
    let mut groups: BTreeMap<(&str, &str), Vec<&GpuNode>> = BTreeMap::new();
    for g in nodes {
        if let Some((k, v)) = keys
            .iter()
            .find_map(|k| g.raw.labels.get(*k).map(|v| (*k, v.as_str())))
        {
            groups.entry((k, v)).or_default().push(g);
        }
    }
    let mut used = BTreeSet::new();
    let mut out = Vec::new();
    for ((key, value), members) in groups {
        let name = unique(&sanitize(value, 63), &mut used);
        let modes: BTreeSet<&str> = members.iter().map(|g| g.mode).collect();
        let mode = match modes.iter().next() {
            Some(m) if modes.len() == 1 => *m,
            _ => {
                let first = members[0].raw;
                diags.push(
                    Diagnostic::warning(GP739, format!("the nodes of pool `{name}` ({key}={value}) use their GPUs in different ways ({}): the pool is written as whole-gpu", modes.iter().copied().collect::<Vec<_>>().join(", ")))
                        .at(loc.key(first.index, key, &first.name), "here")
                        .with_help("review the pool's mode"),
                );
                "whole-gpu"
            }
        };
        let names: Vec<String> = members.iter().map(|g| g.raw.name.clone()).collect();
        out.push(Pool {
            name,
            mode,
            nodes: one_pattern(&names),
            label: format!("{key}={value}"),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `mig layout ... current=#true` lines: nodes of one layout.
fn mig_lines(nodes: &[GpuNode]) -> Vec<MigLine> {
    let mut groups: BTreeMap<(&mig::Layout, Option<&String>), Vec<String>> = BTreeMap::new();
    for g in nodes {
        if let Some(l) = &g.mig {
            groups
                .entry((l, g.raw.labels.get(mig::CONFIG)))
                .or_default()
                .push(g.raw.name.clone());
        }
    }
    groups
        .into_iter()
        .map(|((layout, config), names)| MigLine {
            layout: layout.clone(),
            nodes: one_pattern(&names),
            config: config.cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_pattern_is_one_expandable_pattern() {
        for set in [
            &["dgx-001", "dgx-002", "dgx-003"][..],
            &["gke-pool-4f1c-0k2d", "gke-pool-4f1c-7qxz"],
            &["gb200-r1-01", "gb200-r1-02", "gb200-r2-01"],
            &["node", "node1", "node2"],
            &["a", "b"],
        ] {
            let p = one_pattern(&names(set));
            let mut got = crate::units::expand_names(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
            got.sort();
            let mut want = names(set);
            want.sort();
            assert_eq!(got, want, "{p}");
        }
        assert_eq!(one_pattern(&names(&["dgx-01", "dgx-02"])), "dgx-[01-02]");
        assert_eq!(
            one_pattern(&names(&["gke-p-0k2d", "gke-p-7qxz"])),
            "gke-p-[0k2d,7qxz]"
        );
    }

    #[test]
    fn quantities_and_names() {
        assert_eq!(quantity("192"), Some(192.0));
        assert_eq!(quantity("191450m").map(f64::floor), Some(191.0));
        assert_eq!(quantity("2Ki"), Some(2048.0));
        assert_eq!(quantity("1.5Gi"), Some(1.5 * 1073741824.0));
        assert_eq!(quantity("lots"), None);
        assert_eq!(quantity("-1"), None);
        assert_eq!(sanitize("NVIDIA-RTX-A6000", 63), "nvidia-rtx-a6000");
        assert_eq!(sanitize("__", 63), "x");
        assert_eq!(model_name("NVIDIA-RTX-A6000"), "rtx-a6000");
        let mut used = BTreeSet::new();
        assert_eq!(unique("h100-x8", &mut used), "h100-x8");
        assert_eq!(unique("h100-x8", &mut used), "h100-x8-2");
    }

    #[test]
    fn locator_finds_items_and_keys() {
        let json = "{\"kind\":\"List\",\"items\":[\n{\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"n1\"}},\n{\"metadata\":{\"labels\":{\"a\":\"2\"},\"name\":\"n2\"}}]}";
        let mut sources = SourceMap::new();
        let file = sources.add("x.json", json);
        let (nodes, loc, diags) = read::nodes(json, file);
        assert!(diags.is_empty());
        assert_eq!(nodes.len(), 2);
        let span = loc.key(1, "a", "n2");
        assert_eq!(sources.snippet(span), "\"a\":\"2\"");
        assert_eq!(sources.snippet(loc.node(0, "n1")), "n1");
        let yaml = "items:\n- metadata:\n    name: n1\n    labels:\n      a: \"1\"\n- metadata:\n    name: n2\n    labels:\n      a: \"2\"\n";
        let file = sources.add("x.yaml", yaml);
        let (nodes, loc, diags) = read::nodes(yaml, file);
        assert!(diags.is_empty());
        assert_eq!(nodes.len(), 2);
        assert_eq!(sources.snippet(loc.key(1, "a", "n2")), "a: \"2\"");
    }
}
