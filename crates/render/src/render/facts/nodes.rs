//! Node facts: the pool, labels, taints, MIG configuration and device-plugin
//! configuration of every node the plan puts in a pool, and the pools they form.

use super::{
    ClassFacts, MIG_CONFIG_LABEL, MODEL_LABEL, NodeFacts, PLUGIN_CONFIG_LABEL, POOL_LABEL,
    PoolFacts, SCHEDULER_LABEL, Workloads, is_label_value, range, switch_tier_name, tier_label,
};
use crate::diag::Diagnostic;
use crate::model::{Cluster, Node, NodeClass, PoolMode, Taint};
use crate::placement::Placement;
use crate::render::GP910;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The MIG layout of one node: GPU index -> profiles (largest first, driver names).
pub type Layout = BTreeMap<u32, Vec<String>>;

/// Device-plugin configurations: name -> (sharing strategy, replicas).
type PluginConfigs = BTreeMap<String, (String, u32)>;

/// What [`build`] computes.
pub(super) struct Built {
    /// Sorted by name.
    pub nodes: Vec<NodeFacts>,
    /// mig-parted configurations: name -> layout.
    pub mig_configs: BTreeMap<String, Layout>,
    pub plugin_configs: PluginConfigs,
    /// Label values that are not valid Kubernetes label values (GP910), in the KDL's
    /// node order.
    pub errors: Vec<Diagnostic>,
}

/// The facts of every node the plan puts in a pool, with the MIG and device-plugin
/// configurations they select.
pub(super) fn build(c: &Cluster, plan: &Placement, workload: &Workloads) -> Built {
    let cx = NodeCx {
        c,
        pool_of: pools_by_node(plan),
        mig: MigConfigs::of(c, plan),
        share: super::sharing::sharing_by_node(c, plan, workload),
        slurm_share: super::sharing::slurm_sharing(c, plan, workload),
        capacity_declared: c.capacity_declared(),
    };
    let mut plugin_configs = PluginConfigs::new();
    plugin_configs.insert("default".into(), ("none".into(), 1));
    if !cx.mig.layouts.is_empty() {
        plugin_configs.insert("mig-mixed".into(), ("mig".into(), 1));
    }
    let mut errors = Vec::new();
    let mut nodes = Vec::with_capacity(cx.pool_of.len());
    for n in &c.nodes {
        let Some((pool, mode)) = cx.pool_of.get(n.name.as_str()) else {
            continue;
        };
        let facts = cx.node(n, pool, *mode, &mut plugin_configs);
        errors.extend(label_errors(n, &facts.labels));
        nodes.push(facts);
    }
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    Built {
        nodes,
        mig_configs: cx.mig.configs,
        plugin_configs,
        errors,
    }
}

/// Node -> (pool name, mode): the declared pool, or the mode's name when none.
fn pools_by_node(plan: &Placement) -> BTreeMap<&str, (&str, PoolMode)> {
    plan.pools
        .iter()
        .map(|p| {
            let name = p.pool.as_deref().unwrap_or(p.mode.as_str());
            (p.node.as_str(), (name, p.mode))
        })
        .collect()
}

/// The plan's MIG layouts, and the named mig-parted configurations they form.
struct MigConfigs<'a> {
    /// Node -> its layout.
    layouts: BTreeMap<&'a str, Layout>,
    /// Configuration name -> layout.
    configs: BTreeMap<String, Layout>,
    /// Node -> the name of its configuration.
    config_of: BTreeMap<&'a str, String>,
}

impl<'a> MigConfigs<'a> {
    /// Names the layouts in node order: a layout seen before keeps its name, a new one
    /// is named by [`config_name`].
    fn of(c: &Cluster, plan: &'a Placement) -> Self {
        let mut layouts: BTreeMap<&str, Layout> = BTreeMap::new();
        for l in &plan.mig_layouts {
            layouts
                .entry(l.node.as_str())
                .or_default()
                .insert(l.gpu, l.profiles.clone());
        }
        let mut configs: BTreeMap<String, Layout> = BTreeMap::new();
        let mut config_of = BTreeMap::new();
        let mut mixed = 0;
        for (node, layout) in &layouts {
            let gpus = c.node(node).map(|n| n.gpus.len()).unwrap_or(0);
            let name = match configs.iter().find(|(_, l)| *l == layout) {
                Some((name, _)) => name.clone(),
                None => config_name(layout, gpus, &mut mixed),
            };
            configs.insert(name.clone(), layout.clone());
            config_of.insert(*node, name);
        }
        MigConfigs {
            layouts,
            configs,
            config_of,
        }
    }
}

/// The name of a new configuration: `all-<layout>` when every GPU of the node (it has
/// `gpus`) has the same layout and the name fits in a label value, else
/// `gpuplan-mixed-<n>` (`mixed` counts them).
fn config_name(layout: &Layout, gpus: usize, mixed: &mut u32) -> String {
    let first = layout.values().next().cloned().unwrap_or_default();
    let uniform = layout.len() == gpus && layout.values().all(|l| *l == first);
    if uniform && layout_token(&first).len() <= 58 {
        format!("all-{}", layout_token(&first))
    } else {
        *mixed += 1;
        format!("gpuplan-mixed-{mixed}")
    }
}

/// Short text for a layout: `3g.40gb-2g.20gb-1g.10gbx2`.
fn layout_token(profiles: &[String]) -> String {
    let mut counts: Vec<(String, u32)> = Vec::new();
    for p in profiles {
        match counts.last_mut() {
            Some((q, n)) if q == p => *n += 1,
            _ => counts.push((p.clone(), 1)),
        }
    }
    counts
        .iter()
        .map(|(p, n)| {
            let p = p.replace('+', ".");
            if *n == 1 { p } else { format!("{p}x{n}") }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// What every node's facts are computed from.
struct NodeCx<'a> {
    c: &'a Cluster,
    pool_of: BTreeMap<&'a str, (&'a str, PoolMode)>,
    mig: MigConfigs<'a>,
    share: BTreeMap<&'a str, super::sharing::Sharing>,
    slurm_share: BTreeMap<&'a str, &'static str>,
    /// Whether any node declares its capacity (then every node is labelled with it).
    capacity_declared: bool,
}

impl NodeCx<'_> {
    /// The facts of node `n` in `pool`; registers its device-plugin configuration.
    fn node(
        &self,
        n: &Node,
        pool: &str,
        mode: PoolMode,
        plugin_configs: &mut PluginConfigs,
    ) -> NodeFacts {
        let c = self.c;
        let class = c.classes.get(&n.class);
        let model = n.gpus.iter().find_map(|g| g.model.clone());
        let spec = model.as_ref().and_then(|m| c.models.get(m));
        let domains = domains_of(c, n);
        let mig_config = self.mig.config_of.get(n.name.as_str()).cloned();
        let index = c.node_index.get(&n.name).copied();
        let dra = index.is_some_and(|i| c.node_allocation(i) == crate::model::Allocation::Dra);
        // No device plugin runs on a DRA node: it selects no plugin configuration.
        let plugin_config = if dra {
            "default".to_string()
        } else {
            self.plugin_config(n, mode, mig_config.is_some(), plugin_configs)
        };
        let authority = index.and_then(|i| c.node_authority(i));
        let mut labels = own_labels(n, class, pool, model.as_deref(), &domains);
        if let Some(a) = authority {
            labels.insert(SCHEDULER_LABEL.into(), a.as_str().into());
        }
        if self.capacity_declared {
            labels.insert(super::CAPACITY_LABEL.into(), n.capacity.as_str().into());
        }
        // The declared driver, which the GPU Operator's NVIDIADriver objects select.
        if let Some(d) = c.node_index.get(&n.name).and_then(|&i| c.node_driver(i)) {
            let text = crate::catalog::cuda::driver_text(d);
            labels.insert(crate::names::DRIVER_LABEL.into(), text);
        }
        if let Some(mc) = &mig_config {
            labels.insert(MIG_CONFIG_LABEL.into(), mc.clone());
        } else if spec.is_some_and(|m| m.mig_capable) {
            labels.insert(MIG_CONFIG_LABEL.into(), "all-disabled".into());
        }
        if dra {
            labels.insert(
                super::dra::DEVICE_PLUGIN_DEPLOY_LABEL.into(),
                "false".into(),
            );
        } else {
            labels.insert(PLUGIN_CONFIG_LABEL.into(), plugin_config.clone());
        }
        NodeFacts {
            name: n.name.clone(),
            authority,
            class: n.class.clone(),
            pool: pool.to_string(),
            mode,
            model_short: spec.map(|m| m.short_name.clone()),
            model,
            gpus: n.usable_gpus().map(|g| g.index).collect(),
            gpu_models: n
                .usable_gpus()
                .filter_map(|g| {
                    let m = c.models.get(g.model.as_deref()?)?;
                    Some((g.index, (m.name.clone(), m.short_name.clone())))
                })
                .collect(),
            domains,
            labels,
            taints: taints_of(n, class, pool, authority),
            mig_config,
            plugin_config,
            sockets: class.map(|c| c.sockets).unwrap_or(1).max(1),
            cores_per_socket: class.map(|c| c.cores_per_socket).unwrap_or(1).max(1),
            threads_per_core: class.map(|c| c.threads_per_core).unwrap_or(1).max(1),
            memory_mib: class.and_then(|c| c.memory).map(|m| m.mib()),
            mig: self
                .mig
                .layouts
                .get(n.name.as_str())
                .cloned()
                .unwrap_or_default(),
            slurm_sharing: self.slurm_share.get(n.name.as_str()).copied(),
            dra,
        }
    }

    /// The device-plugin configuration of a node: `time-slicing-<n>` / `mps-<n>` when it
    /// holds shared replicas (registered in `plugin_configs`), `mig-mixed` for a MIG
    /// node, else `default`.
    fn plugin_config(
        &self,
        n: &Node,
        mode: PoolMode,
        has_mig_config: bool,
        plugin_configs: &mut PluginConfigs,
    ) -> String {
        if let Some(s) = self.share.get(n.name.as_str()).filter(|s| s.replicas > 1) {
            let name = format!("{}-{}", s.strategy, s.replicas);
            plugin_configs.insert(name.clone(), (s.strategy.to_string(), s.replicas));
            name
        } else if has_mig_config || mode == PoolMode::Mig {
            // Registered here too: a MIG node without instances still selects it.
            plugin_configs.insert("mig-mixed".into(), ("mig".into(), 1));
            "mig-mixed".to_string()
        } else {
            "default".to_string()
        }
    }
}

/// Domain per tier name of a node: its multi-node NVLink domain and every switch from
/// its leaf up.
fn domains_of(c: &Cluster, n: &Node) -> BTreeMap<String, String> {
    let mut domains = BTreeMap::new();
    if let Some(d) = n.mnnvl.first() {
        domains.insert("nvlink".to_string(), c.nvlink_domains[*d].name.clone());
    }
    let mut sw = n.leaf();
    while let Some(s) = sw {
        let s = &c.switches[s];
        domains.insert(switch_tier_name(s.tier).to_string(), s.name.clone());
        sw = s.parent;
    }
    domains
}

/// A node's labels before its MIG and device-plugin configurations: the class's, the
/// node's own, then gpuplan's pool, model and fabric labels (later ones win).
fn own_labels(
    n: &Node,
    class: Option<&NodeClass>,
    pool: &str,
    model: Option<&str>,
    domains: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> =
        class.map(|cl| cl.labels.clone()).unwrap_or_default();
    labels.extend(n.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    labels.insert(POOL_LABEL.into(), pool.to_string());
    if let Some(m) = model {
        labels.insert(MODEL_LABEL.into(), m.to_string());
    }
    for (t, v) in domains {
        labels.insert(tier_label(t), v.clone());
    }
    labels
}

/// GP910 for every label whose value Kubernetes would refuse.
fn label_errors(n: &Node, labels: &BTreeMap<String, String>) -> Vec<Diagnostic> {
    labels
        .iter()
        .filter(|(_, v)| !is_label_value(v))
        .map(|(k, v)| {
            Diagnostic::error(
                GP910,
                format!(
                    "node `{}`: label `{k}={v}` is not a valid Kubernetes label value",
                    n.name
                ),
            )
            .at(n.span, "this node")
            .with_help("label values are at most 63 letters, digits, `-`, `_` and `.`")
        })
        .collect()
}

/// A node's taints, sorted and without duplicates: the class's, the node's own, and the
/// pool taint `gpuplan.io/pool=<pool>:NoSchedule`.
fn taints_of(
    n: &Node,
    class: Option<&NodeClass>,
    pool: &str,
    authority: Option<crate::model::Authority>,
) -> Vec<Taint> {
    let mut taints: Vec<Taint> = class.map(|c| c.taints.clone()).unwrap_or_default();
    taints.extend(n.taints.clone());
    // One scheduler's pods never land on another's nodes.
    if let Some(a) = authority {
        taints.push(Taint {
            key: SCHEDULER_LABEL.into(),
            value: Some(a.as_str().into()),
            effect: "NoSchedule".into(),
        });
    }
    // Only classes that may be interrupted run on spot nodes.
    if n.capacity == crate::model::Capacity::Spot {
        taints.push(super::spot_taint());
    }
    taints.push(Taint {
        key: POOL_LABEL.into(),
        value: Some(pool.to_string()),
        effect: "NoSchedule".into(),
    });
    taints.sort();
    taints.dedup();
    taints
}

/// The pools the nodes form, sorted by name: members, hostlist range, models, and the
/// highest priority rank and preemptibility of the classes placed in each.
pub(super) fn pools_of(
    nodes: &[Arc<NodeFacts>],
    classes: &[ClassFacts],
    rank_of: &dyn Fn(&str) -> u32,
) -> Vec<PoolFacts> {
    let mut pools: Vec<PoolFacts> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for n in nodes {
        match index.get(n.pool.as_str()) {
            Some(&i) => {
                let p = &mut pools[i];
                p.nodes.push(n.name.clone());
                if let Some(m) = &n.model {
                    if !p.models.contains(m) {
                        p.models.push(m.clone());
                    }
                }
                if let Some(cap) = n.labels.get(super::CAPACITY_LABEL) {
                    if !p.capacities.contains(cap) {
                        p.capacities.push(cap.clone());
                    }
                }
            }
            None => {
                index.insert(&n.pool, pools.len());
                pools.push(PoolFacts {
                    name: n.pool.clone(),
                    mode: n.mode,
                    nodes: vec![n.name.clone()],
                    range: String::new(),
                    models: n.model.iter().cloned().collect(),
                    capacities: n
                        .labels
                        .get(super::CAPACITY_LABEL)
                        .cloned()
                        .into_iter()
                        .collect(),
                    rank: 0,
                    preemptible: false,
                });
            }
        }
    }
    for p in &mut pools {
        p.range = range(&p.nodes);
        p.models.sort();
        p.capacities.sort();
        for cl in classes
            .iter()
            .filter(|cl| cl.groups.iter().any(|g| g.pools.contains(&p.name)))
        {
            p.rank = p.rank.max(rank_of(&cl.priority));
            p.preemptible |= cl.preemptible;
        }
    }
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    pools
}
