//! `gpuplan import k8s-nodes`: `kubectl get nodes -o json|yaml` into gpuplan's language.
//!
//! [`read`] parses the document and locates spans; [`node`] reads one Node's facts: the
//! GPU model, count, memory and driver (GPU Feature Discovery labels, `nvidia.com/gpu`
//! capacity), CPUs and memory (`status.capacity`),
//! MIG state ([`mig`]), multi-node NVLink cliques and switch tiers from topology labels
//! ([`fabric`]), taints and node-pool labels. Nodes of identical hardware form one
//! `node-class`; their names are compressed into ranges. What it cannot say (NUMA,
//! PCIe, NICs, NVLink inside the node) is left to `import nvidia-smi-topo` / `discover`.

pub mod count;
pub mod doc;
pub mod fabric;
pub mod facts;
pub mod group;
pub mod mig;
pub mod model;
pub mod node;
pub mod read;
pub mod text;
pub mod unlabelled;

use crate::diag::Diagnostic;
use crate::import::contract::{Item, ItemKind, Report};
use crate::source::{FileId, SourceMap};
use group::{classes, mig_lines, pools, ranges};
use node::{Cx, GpuNode, Leave, has_gpus};
use read::{Locator, RawNode, Taint};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// GP723: a node whose GPU count is more than one node holds
/// ([`crate::limits::MAX_GPUS_PER_NODE`]), left out.
pub(crate) const GP723: &str = "GP723";
/// GP730: the input is not JSON or YAML.
pub(crate) const GP730: &str = "GP730";
/// GP731: the document is not a Node or a List of Nodes.
pub(crate) const GP731: &str = "GP731";
/// GP732: an item of the list is skipped (not a Node, no name, a bad or repeated name).
pub(crate) const GP732: &str = "GP732";
/// GP733: a node with GPUs but no `nvidia.com/gpu.product` label: its GPUs imported as
/// the placeholder model `unknown-gpu` (flagged), or, with only MIG devices, left out.
pub(crate) const GP733: &str = "GP733";
/// GP734: a GPU product neither the catalog nor the labels describe (declared without
/// memory, for the user to fill in), or a `--model` id that cannot be a model name.
pub(crate) const GP734: &str = "GP734";
/// GP735: a GPU product the catalog lacks is declared as a `gpu-model` from its labels.
pub(crate) const GP735: &str = "GP735";
/// GP736: MIG state that cannot be mapped to a layout of the catalog.
pub(crate) const GP736: &str = "GP736";
/// GP737: a label or capacity value that cannot be read.
pub(crate) const GP737: &str = "GP737";
/// GP738: topology labels that do not form a tree of switches.
pub(crate) const GP738: &str = "GP738";
/// GP739: a taint or pool label that cannot be carried over.
pub(crate) const GP739: &str = "GP739";

pub(crate) const PRODUCT: &str = "nvidia.com/gpu.product";
pub(crate) const COUNT: &str = "nvidia.com/gpu.count";
pub(crate) const MEMORY: &str = "nvidia.com/gpu.memory";
pub(crate) const FAMILY: &str = "nvidia.com/gpu.family";
pub(crate) const REPLICAS: &str = "nvidia.com/gpu.replicas";
pub(crate) const SHARING: &str = "nvidia.com/gpu.sharing-strategy";
pub(crate) const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// Label keys whose value names a node's pool, in the order they are tried.
pub(crate) const DEFAULT_POOL_LABELS: &[&str] = &[
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
    /// From `nvidia.com/gpu.memory`; `None`: unknown, a placeholder the user fills in.
    pub memory_mib: Option<u64>,
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
    /// Node labels kept as they are: the NVLink clique (`nvidia.com/gpu.clique`), which
    /// a gang's pods select to stay in one rack's NVLink domain under DRA.
    pub labels: Vec<(String, String)>,
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
    /// Nodes without NVIDIA GPUs (imported as CPU-only classes).
    pub without_gpus: Vec<String>,
}

/// Reads the file and maps it (`None` when nothing could be read), with the import
/// report: every Node of the list imported or left out with its reason.
pub fn import(
    sources: &SourceMap,
    file: FileId,
    opts: &Options,
) -> (Option<Import>, Report, Vec<Diagnostic>) {
    let text = sources.get(file).map_or("", |f| &f.text);
    let mut report = Report::new("k8s-nodes");
    let read::Read {
        nodes: raw,
        loc,
        mut diags,
        unreadable,
    } = read::read(text, file);
    for (i, why) in unreadable {
        report.saw_node(0);
        report.leave_out(Item::new(
            ItemKind::Node,
            format!("item {} of the list", i + 1),
            GP732,
            why,
        ));
    }
    if diags.iter().any(Diagnostic::is_error) {
        return (None, report, diags);
    }
    let seen: Vec<(String, u64)> = raw
        .iter()
        .map(|n| (n.name.clone(), count::gpus_seen(n)))
        .collect();
    let (mut raw, mut why) = unique_valid_names(raw, &loc, &mut diags);
    // By name: what is first seen (a declared model's memory) and the order of the
    // diagnostics do not depend on the input's order.
    raw.sort_by(|a, b| a.name.cmp(&b.name));
    let mut cx = Cx {
        loc: &loc,
        opts,
        diags: &mut diags,
        declared: BTreeMap::new(),
        flags: Vec::new(),
        lost: Vec::new(),
    };
    let (gpu_nodes, without_gpus) = map_nodes(&mut cx, &raw, &mut why);
    let imported: BTreeMap<String, u64> = gpu_nodes
        .iter()
        .map(|g| (g.raw.name.clone(), u64::from(g.hardware.gpus)))
        .collect();
    report.reconcile(&seen, &imported, &why);
    for item in cx.flags.drain(..) {
        report.flag(item);
    }
    for item in cx.lost.drain(..) {
        report.leave_out(item);
    }
    let models: Vec<DeclaredModel> = cx.declared.into_values().collect();
    let (classes, class_of) = classes(&gpu_nodes);
    let (fab, pools) = fabric_and_pools(&gpu_nodes, &loc, opts, &mut report, &mut diags);
    let imp = Import {
        models,
        ranges: ranges(&gpu_nodes, &class_of),
        classes,
        pools,
        fabric: fab,
        mig: mig_lines(&gpu_nodes),
        without_gpus,
    };
    (Some(imp), report, diags)
}

/// Every readable Node mapped: GPU nodes (or why each is left out, into `why`) and
/// CPU-only nodes (with their names).
fn map_nodes<'n>(
    cx: &mut Cx,
    raw: &'n [RawNode],
    why: &mut Why,
) -> (Vec<GpuNode<'n>>, Vec<String>) {
    let mut gpu_nodes = Vec::new();
    let mut without_gpus = Vec::new();
    for n in raw {
        if !has_gpus(n) {
            without_gpus.push(n.name.clone());
            gpu_nodes.push(cx.cpu_node(n));
            continue;
        }
        match cx.gpu_node(n) {
            Ok(g) => gpu_nodes.push(g),
            Err(Leave { code, reason }) => {
                why.insert(n.name.clone(), (code.to_string(), reason));
            }
        }
    }
    (gpu_nodes, without_gpus)
}

/// The fabric and the pools of the imported nodes; what does not form a tree, nodes
/// under no leaf and pools of mixed modes flagged in the report.
fn fabric_and_pools(
    gpu_nodes: &[GpuNode],
    loc: &Locator,
    opts: &Options,
    report: &mut Report,
    diags: &mut Vec<Diagnostic>,
) -> (fabric::Fabric, Vec<Pool>) {
    let nodes: Vec<&RawNode> = gpu_nodes.iter().map(|g| g.raw).collect();
    let before = diags.len();
    let fab = fabric::build(&nodes, loc, opts, diags);
    flag_new(report, &diags[before..], GP738, ItemKind::Switch, "fabric");
    if !fab.outside.is_empty() {
        report.flag(Item::new(
            ItemKind::Switch,
            crate::import::names::one_pattern(&fab.outside),
            GP738,
            format!(
                "no leaf label: put under one leaf `{}` of their own; check where they are cabled",
                fabric::UNLABELLED
            ),
        ));
    }
    let before = diags.len();
    let pools = pools(gpu_nodes, loc, opts, diags);
    flag_new(report, &diags[before..], GP739, ItemKind::Pool, "pools");
    (fab, pools)
}

/// Flags what the diagnostics of `code` among `new` say (switches that do not form a
/// tree, pools of mixed modes): in the output, written as gpuplan can, to be checked.
fn flag_new(report: &mut Report, new: &[Diagnostic], code: &str, kind: ItemKind, name: &str) {
    for d in new.iter().filter(|d| d.code == code) {
        report.flag(Item::new(kind, name, code, d.message.clone()));
    }
}

/// Why nodes are left out, by name: (code, reason).
type Why = BTreeMap<String, (String, String)>;

/// Drops nodes whose names gpuplan cannot use or that repeat, with GP732, and says why.
fn unique_valid_names(
    raw: Vec<RawNode>,
    loc: &Locator,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<RawNode>, Why) {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut why = Why::new();
    for n in raw {
        let reason = match crate::units::validate_node_name(&n.name) {
            Err(e) => Some(e),
            Ok(()) if !seen.insert(n.name.clone()) => {
                Some(format!("node `{}` is listed twice", n.name))
            }
            Ok(()) => None,
        };
        match reason.map(|r| text::shown_up_to(&r, 300)) {
            Some(reason) => {
                diags.push(
                    Diagnostic::warning(GP732, format!("node skipped: {reason}"))
                        .at(loc.node(n.index, &n.name), "this node")
                        .with_help("node names must be lowercase DNS names, each once"),
                );
                why.entry(n.name.clone())
                    .or_insert_with(|| (GP732.into(), format!("node skipped: {reason}")));
            }
            None => out.push(n),
        }
    }
    (out, why)
}

#[cfg(test)]
mod tests {
    use super::facts::quantity;
    use super::model::model_name;
    use super::*;
    use crate::import::memory::coarse_gib;
    use crate::import::names::{one_pattern, sanitize, unique};

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
        assert_eq!(coarse_gib(1829), 1824);
        assert_eq!(coarse_gib(1830), 1824);
        assert_eq!(coarse_gib(251), 248);
        assert_eq!(coarse_gib(31), 31);
        assert_eq!(coarse_gib(1), 1);
        assert_eq!(sanitize("NVIDIA-RTX-A6000", 63), "nvidia-rtx-a6000");
        assert_eq!(sanitize("__", 63), "x");
        assert_eq!(model_name("NVIDIA-GeForce-RTX-4090"), "geforce-rtx-4090");
        // A declared name never takes a catalog alias (`rtx-a6000` is one).
        assert_eq!(model_name("NVIDIA-RTX-A6000"), "rtx-a6000-gfd");
        let mut used = BTreeSet::new();
        assert_eq!(unique("h100-x8", &mut used), "h100-x8");
        assert_eq!(unique("h100-x8", &mut used), "h100-x8-2");
    }

    #[test]
    fn locator_finds_items_and_keys() {
        let json = "{\"kind\":\"List\",\"items\":[\n{\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"n1\"}},\n{\"metadata\":{\"labels\":{\"a\":\"2\"},\"name\":\"n2\"}}]}";
        let mut sources = SourceMap::new();
        let file = sources.add("x.json", json);
        let read::Read {
            nodes, loc, diags, ..
        } = read::read(json, file);
        assert!(diags.is_empty());
        assert_eq!(nodes.len(), 2);
        let span = loc.key(1, "a", "n2");
        assert_eq!(sources.snippet(span), "\"a\":\"2\"");
        assert_eq!(sources.snippet(loc.node(0, "n1")), "n1");
        let yaml = "items:\n- metadata:\n    name: n1\n    labels:\n      a: \"1\"\n- metadata:\n    name: n2\n    labels:\n      a: \"2\"\n";
        let file = sources.add("x.yaml", yaml);
        let read::Read {
            nodes, loc, diags, ..
        } = read::read(yaml, file);
        assert!(diags.is_empty());
        assert_eq!(nodes.len(), 2);
        assert_eq!(sources.snippet(loc.key(1, "a", "n2")), "a: \"2\"");
    }
}
