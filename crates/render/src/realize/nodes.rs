//! The GPU nodes as Kubernetes pods see them: labels and taints from `k8s/nodes.yaml`
//! (plus `kubernetes.io/hostname`, which the kubelet sets), and what each node
//! advertises: the device plugin's resources for the config its
//! `nvidia.com/device-plugin.config` label selects (key `default` without one) over the
//! MIG layout its `nvidia.com/mig.config` label selects (MIG disabled without one),
//! on the GPUs the cluster declares usable; CPU and memory from the declared hardware
//! (absent: unlimited). The configs come from `k8s/gpu-operator.yaml`, else `mig/`.

use super::mig::{self, Layout, Parted};
use super::plugin::{self, Config, Sharing};
use super::pods::{self, Taint};
use super::yaml::{self, Doc};
use super::{Invariant, Sink, Target};
use crate::model::Cluster;
use std::collections::BTreeMap;

pub(crate) struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Resource -> amount in thousandths; `cpu`/`memory` absent when not declared.
    pub advertised: BTreeMap<String, i128>,
    pub sharing: Option<Sharing>,
    /// The device-plugin config in use.
    pub plugin: String,
    pub mig_config: String,
    /// Per usable GPU; `None` when the selected MIG config does not exist.
    pub mig: Option<BTreeMap<u32, Layout>>,
    /// The devices NVIDIA's DRA driver publishes, on a node the cluster hands out
    /// through DRA (`None`: a device-plugin node).
    pub devices: Option<super::dra::NodeDevices>,
}

pub(crate) struct Nodes {
    pub map: BTreeMap<String, Node>,
    pub parted_file: String,
    pub plugin_file: String,
}

struct Configs {
    parted: Parted,
    parted_file: String,
    plugins: BTreeMap<String, Config>,
    plugin_file: String,
}

/// Builds the view of every Kubernetes node of the cluster.
pub(crate) fn build(
    docs: &[Doc],
    files: &BTreeMap<String, String>,
    c: &Cluster,
    t: Target,
    sink: &mut Sink,
) -> Nodes {
    let configs = configs(docs, files, t, sink);
    let mut declared: BTreeMap<String, (BTreeMap<String, String>, Vec<Taint>)> = BTreeMap::new();
    for d in docs.iter().filter(|d| d.is("", "Node")) {
        match yaml::string_map(&d.value, &["metadata", "labels"]) {
            Ok(l) => {
                declared.insert(d.name.clone(), (l, pods::taints(&d.value)));
            }
            Err(e) => sink.push(t, Invariant::Parse, (&d.id(), &d.file), e),
        }
        if c.node(&d.name).is_none() {
            let msg = format!(
                "labels node `{}`, which the cluster does not declare",
                d.name
            );
            sink.push(t, Invariant::Reference, (&d.id(), &d.file), msg);
        }
    }
    let mut map = BTreeMap::new();
    for (i, n) in c.nodes.iter().enumerate() {
        if !super::node_of(c, true, i) {
            continue;
        }
        let (mut labels, taints) = declared.remove(&n.name).unwrap_or_default();
        labels.insert("kubernetes.io/hostname".into(), n.name.clone());
        let gpus: Vec<u32> = n.usable_gpus().map(|g| g.index).collect();
        let mut node = Node {
            name: n.name.clone(),
            labels,
            taints,
            advertised: BTreeMap::new(),
            sharing: None,
            plugin: String::new(),
            mig_config: String::new(),
            mig: None,
            devices: None,
        };
        advertise(&mut node, &gpus, &configs, t, sink);
        dra_devices(&mut node, c, i, t, sink);
        if let Some(cpu) = c.node_cpu_milli(i) {
            node.advertised.insert("cpu".into(), cpu as i128);
        }
        if let Some(m) = c.node_memory(i) {
            node.advertised.insert("memory".into(), m as i128 * 1000);
        }
        map.insert(n.name.clone(), node);
    }
    Nodes {
        map,
        parted_file: configs.parted_file,
        plugin_file: configs.plugin_file,
    }
}

/// The node's MIG layout and device-plugin resources, from its labels.
fn advertise(node: &mut Node, gpus: &[u32], k: &Configs, t: Target, sink: &mut Sink) {
    let id = format!("Node/{}", node.name);
    let mig_name = node.labels.get("nvidia.com/mig.config").cloned();
    let layout = match &mig_name {
        None => Some(gpus.iter().map(|g| (*g, None)).collect()),
        Some(name) => k.parted.layout(name, gpus),
    };
    if layout.is_none() {
        let name = mig_name.clone().unwrap_or_default();
        let msg = format!(
            "{} selects MIG config `{name}`, which {} lacks",
            node.name, k.parted_file
        );
        sink.push(t, Invariant::Mig, (&id, &k.parted_file), msg);
    }
    node.mig_config = mig_name.unwrap_or_else(|| "(none: MIG disabled)".into());
    node.mig = layout;
    let key = node.labels.get("nvidia.com/device-plugin.config").cloned();
    let cfg = match key.as_deref().map(|k2| (k2, k.plugins.get(k2))) {
        Some((_, Some(cfg))) => cfg.clone(),
        Some((name, None)) => {
            let msg = format!(
                "{} selects device-plugin config `{name}`, which {} lacks",
                node.name, k.plugin_file
            );
            sink.push(t, Invariant::Reference, (&id, &k.plugin_file), msg);
            k.plugins.get("default").cloned().unwrap_or_default()
        }
        None => k.plugins.get("default").cloned().unwrap_or_default(),
    };
    node.plugin = key.unwrap_or_else(|| "default".into());
    let gpus: BTreeMap<u32, Layout> = node
        .mig
        .clone()
        .unwrap_or_else(|| gpus.iter().map(|g| (*g, None)).collect());
    node.advertised = plugin::advertise(&cfg, &gpus);
    node.sharing = cfg.sharing;
}

/// The GPU Operator's label that keeps the device plugin off a node.
const DEPLOY_PLUGIN: &str = "nvidia.com/gpu.deploy.device-plugin";

/// A node without the device plugin (`nvidia.com/gpu.deploy.device-plugin=false`)
/// advertises no extended GPU resource; a DRA node offers its GPUs as the DRA driver
/// publishes them, and must run no device plugin (both would hand out the same GPUs).
fn dra_devices(node: &mut Node, c: &Cluster, i: usize, t: Target, sink: &mut Sink) {
    let plugin_off = node.labels.get(DEPLOY_PLUGIN).map(String::as_str) == Some("false");
    if plugin_off {
        node.advertised.retain(|k, _| !k.starts_with("nvidia.com/"));
        node.sharing = None;
    }
    if c.node_allocation(i) != crate::model::Allocation::Dra {
        return;
    }
    if !plugin_off {
        let msg = format!(
            "{} hands out GPUs through DRA but runs the device plugin too (no {DEPLOY_PLUGIN}=false label): both would give out the same GPUs",
            node.name
        );
        sink.push(
            t,
            Invariant::Capacity,
            (&format!("Node/{}", node.name), "k8s/nodes.yaml"),
            msg,
        );
    }
    let models: BTreeMap<u32, String> = c.nodes[i]
        .usable_gpus()
        .filter_map(|g| Some((g.index, g.model.clone()?)))
        .collect();
    let mig = node.mig.clone().unwrap_or_default();
    let devices = super::dra::NodeDevices::of(&node.name, &models, &mig);
    node.advertised.extend(devices.advertised());
    node.devices = Some(devices);
}

/// The mig-parted and device-plugin configs: the GPU Operator ConfigMaps of `k8s/`,
/// else the files of `mig/`.
fn configs(docs: &[Doc], files: &BTreeMap<String, String>, t: Target, sink: &mut Sink) -> Configs {
    let cm = |name: &str| {
        docs.iter()
            .find(|d| d.is("", "ConfigMap") && d.name == name)
    };
    let mut out = Configs {
        parted: Parted::default(),
        parted_file: "mig/mig-parted.yaml".into(),
        plugins: BTreeMap::new(),
        plugin_file: "mig/device-plugin/".into(),
    };
    let parted = match cm("gpuplan-mig-parted-config") {
        Some(d) => {
            let text = yaml::str_at(&d.value, &["data", "config.yaml"]).unwrap_or_default();
            Some((d.file.clone(), text.to_string()))
        }
        None => files
            .get("mig/mig-parted.yaml")
            .map(|text| ("mig/mig-parted.yaml".to_string(), text.clone())),
    };
    if let Some((file, text)) = parted {
        out.parted_file = file.clone();
        match mig::parse(&text) {
            Ok(p) => out.parted = p,
            Err(e) => {
                let at = ("ConfigMap/gpuplan-mig-parted-config", file.as_str());
                sink.push(t, Invariant::Parse, at, e);
            }
        }
    }
    if let Some(d) = cm("gpuplan-device-plugin-config") {
        out.plugin_file = d.file.clone();
    }
    for (key, text, file) in plugin_texts(cm("gpuplan-device-plugin-config"), files) {
        match plugin::parse(&text) {
            Ok(cfg) => {
                out.plugins.insert(key, cfg);
            }
            Err(e) => {
                let at = format!("device-plugin config `{key}`");
                sink.push(t, Invariant::Parse, (&at, &file), e);
            }
        }
    }
    out
}

/// (key, config text, file) of every device-plugin config: the ConfigMap's keys, else
/// the files of `mig/device-plugin/`.
fn plugin_texts(
    cm: Option<&Doc>,
    files: &BTreeMap<String, String>,
) -> Vec<(String, String, String)> {
    if let Some(d) = cm {
        let data = yaml::string_map(&d.value, &["data"]).unwrap_or_default();
        return data
            .into_iter()
            .map(|(k, v)| (k, v, d.file.clone()))
            .collect();
    }
    files
        .iter()
        .filter_map(|(p, text)| {
            let key = p
                .strip_prefix("mig/device-plugin/")?
                .strip_suffix(".yaml")?;
            Some((key.to_string(), text.clone(), p.clone()))
        })
        .collect()
}
