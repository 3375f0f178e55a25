//! Spec -> model resolution (best effort, reports nothing; see the module docs).

use super::*;
use crate::catalog;
use crate::source::Spanned;
use crate::spec::{
    ClassDecl, ClusterDecl, GpuModelDecl, LabelDecl, NodeOverrideDecl, NodesDecl, NumaDecl,
    PcieDecl, QuotaDecl, Spec, TaintDecl, WorkloadDecl,
};

type S<T> = Spanned<T>;

fn label_map(decls: &[LabelDecl], into: &mut BTreeMap<String, String>) {
    for l in decls {
        into.insert(l.key.value.clone(), l.value.value.clone());
    }
}

fn taint_list(decls: &[TaintDecl], into: &mut Vec<Taint>) {
    for t in decls {
        let taint = Taint {
            key: t.key.value.clone(),
            value: t.value.as_ref().map(|v| v.value.clone()),
            effect: t
                .effect
                .as_ref()
                .map(|e| e.value.clone())
                .unwrap_or_else(|| "NoSchedule".into()),
        };
        into.retain(|x| !(x.key == taint.key && x.effect == taint.effect));
        into.push(taint);
    }
    into.sort();
}

/// Canonical model name for a name as written: a declared `gpu-model` wins, then the
/// catalog (id or alias).
pub fn canonical_model(spec: &Spec, name: &str) -> Option<String> {
    if spec.gpu_models.iter().any(|m| m.name.value == name) {
        return Some(name.to_string());
    }
    catalog::lookup(name).map(|g| g.id.to_string())
}

/// A catalog model as the cluster sees it before any `gpu-model` overrides.
fn from_catalog(g: &'static catalog::GpuSpec) -> GpuModel {
    GpuModel {
        name: g.id.to_string(),
        catalog: Some(g),
        memory: crate::units::Bytes(g.memory_mib * crate::units::MIB),
        nvlink: g.nvlink,
        mig: g.mig,
        mig_capable: g.mig.is_some(),
        price_per_hour: None,
        driver_names: BTreeMap::new(),
        driver_branch: None,
        driver: None,
        short_name: g.short_name.to_string(),
        product_name: g.product_names.first().map(|s| s.to_string()),
        span: None,
    }
}

/// GPU models: declared ones (the first declaration of a name wins), then catalog
/// models referenced anywhere, materialised on demand.
fn build_models(spec: &Spec) -> BTreeMap<String, GpuModel> {
    let mut models = BTreeMap::new();
    for d in &spec.gpu_models {
        if !models.contains_key(&d.name.value) {
            models.insert(d.name.value.clone(), declared_model(d));
        }
    }
    for r in referenced_models(spec) {
        if models.contains_key(r) {
            continue;
        }
        if let Some(g) = catalog::lookup(r) {
            models
                .entry(g.id.to_string())
                .or_insert_with(|| from_catalog(g));
        }
    }
    models
}

/// A declared `gpu-model`: its catalog base (named by `base`, or its own name when that
/// is a catalog id) with what the declaration overrides.
fn declared_model(d: &GpuModelDecl) -> GpuModel {
    let name = d.name.value.clone();
    let base = d
        .base
        .as_ref()
        .and_then(|b| catalog::lookup(&b.value))
        .or_else(|| catalog::lookup(&name).filter(|g| g.id == name));
    let mut m = match base {
        Some(g) => {
            let mut m = from_catalog(g);
            m.name = name.clone();
            if d.base.is_some() {
                m.short_name = short_name(&name);
            }
            m
        }
        None => GpuModel {
            name: name.clone(),
            catalog: None,
            memory: d.memory.as_ref().map(|m| m.value).unwrap_or_default(),
            nvlink: None,
            mig: None,
            mig_capable: false,
            price_per_hour: None,
            driver_names: BTreeMap::new(),
            driver_branch: None,
            driver: None,
            short_name: short_name(&name),
            product_name: None,
            span: None,
        },
    };
    m.span = Some(d.span);
    if let Some(mem) = &d.memory {
        m.memory = mem.value;
    }
    apply_nvlink(d, &mut m);
    m.price_per_hour = d.price_per_hour.as_ref().map(|p| p.value);
    m.driver_branch = d.driver.as_ref().and_then(|v| v.value.first().copied());
    m.driver = d.driver.as_ref().map(|v| v.value.clone());
    if let Some(p) = &d.product_name {
        m.product_name = Some(p.value.clone());
    }
    for (profile, driver) in &d.mig_names {
        m.driver_names
            .insert(profile.value.clone(), driver.value.clone());
    }
    m
}

/// `nvlink-gen` (0: none) and `nvlink-bandwidth` of a declared model.
fn apply_nvlink(d: &GpuModelDecl, m: &mut GpuModel) {
    let gbs = |bw: &S<Bandwidth>| (bw.value.0 / 8_000_000_000) as u32;
    if let Some(nv_gen) = &d.nvlink_gen {
        m.nvlink = (nv_gen.value != 0).then(|| NvlinkSpec {
            generation: nv_gen.value.min(255) as u8,
            links: 0,
            bandwidth_gbs: d.nvlink_bandwidth.as_ref().map(gbs).unwrap_or(0),
        });
    } else if let (Some(bw), Some(nv)) = (&d.nvlink_bandwidth, m.nvlink.as_mut()) {
        nv.bandwidth_gbs = gbs(bw);
    }
}

/// Model names as written by node classes, workloads and quotas, in that order.
fn referenced_models(spec: &Spec) -> Vec<&str> {
    let mut referenced: Vec<&str> = Vec::new();
    for c in &spec.classes {
        for m in c.gpus.iter().filter_map(|g| g.model.as_ref()) {
            referenced.push(&m.value);
        }
    }
    for w in &spec.workloads {
        referenced.extend(w.models.iter().map(|m| m.value.as_str()));
    }
    for t in &spec.teams {
        referenced.extend(
            t.quotas
                .iter()
                .filter_map(|q| q.model.as_ref())
                .map(|m| m.value.as_str()),
        );
    }
    referenced
}

/// `my-l40s-48gb` -> `my_l40s_48gb`: a name usable as a Slurm GRES type.
fn short_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A spanned value, or `default` when absent.
fn value_or<T: Copy>(v: Option<&S<T>>, default: T) -> T {
    v.map(|v| v.value).unwrap_or(default)
}

/// Copies an optional list value (index sets and the like).
fn list_of<T: Clone>(v: &Option<S<Vec<T>>>) -> Vec<T> {
    v.as_ref().map(|v| v.value.clone()).unwrap_or_default()
}

/// A node class: CPU, memory, GPUs (model by canonical name), NVLink domains, NUMA
/// nodes, PCIe switches, NICs, labels and taints.
fn build_class(spec: &Spec, d: &ClassDecl) -> NodeClass {
    let mut labels = BTreeMap::new();
    label_map(&d.labels, &mut labels);
    let mut taints = Vec::new();
    taint_list(&d.taints, &mut taints);
    let cpu = d.cpu.as_ref();
    let groups = gpu_groups(spec, d);
    let nics = d.nics.as_ref();
    NodeClass {
        name: d.name.value.clone(),
        span: d.span,
        cpu_declared: cpu.is_some(),
        sockets: value_or(cpu.and_then(|c| c.sockets.as_ref()), 1),
        cores_per_socket: value_or(cpu.and_then(|c| c.cores_per_socket.as_ref()), 1),
        threads_per_core: value_or(cpu.and_then(|c| c.threads_per_core.as_ref()), 1),
        memory: d.memory.as_ref().map(|m| m.value),
        gpu_count: groups.last().map_or(0, |g| g.first + g.count),
        gpu_model: groups.first().and_then(|g| g.model.clone()),
        gpu_groups: groups,
        nvlink_domains: d.nvlink_domains.iter().map(|s| s.value.clone()).collect(),
        numa: d.numa.iter().filter_map(numa).collect(),
        pcie_switches: d.pcie_switches.iter().filter_map(pcie_switch).collect(),
        nics: value_or(nics.and_then(|n| n.count.as_ref()), 0),
        nic_speed: nics.and_then(|n| n.speed.as_ref()).map(|s| s.value),
        nic_kind: nics.and_then(|n| n.kind.as_ref()).map(|s| s.value.clone()),
        nic_names: nics
            .and_then(|n| n.names.as_ref())
            .and_then(|p| crate::units::expand_pattern_list(&p.value).ok())
            .unwrap_or_default(),
        socket_ifname: nics
            .and_then(|n| n.socket_ifname.as_ref())
            .map(|s| s.value.clone()),
        gid_index: nics.and_then(|n| n.gid_index.as_ref()).map(|s| s.value),
        gpu_bus_ids: gpu_bus_ids(d),
        nic_bus_ids: bus_ids(nics.and_then(|n| n.bus_ids.as_ref())),
        driver: d
            .gpus
            .iter()
            .find_map(|g| g.driver.as_ref())
            .map(|d| d.value.clone()),
        capacity: capacity_terms(&d.capacity),
        labels,
        taints,
    }
}

/// A class's `gpus` lines as index groups, in order; the total is capped at
/// `MAX_INDEX + 1` (GP047 reports more).
fn gpu_groups(spec: &Spec, d: &ClassDecl) -> Vec<GpuGroup> {
    let cap = crate::units::MAX_INDEX + 1;
    let mut first = 0u32;
    let mut out = Vec::new();
    for g in &d.gpus {
        let count = g.count.as_ref().map_or(0, |c| c.value).min(cap - first);
        out.push(GpuGroup {
            model: g
                .model
                .as_ref()
                .and_then(|m| canonical_model(spec, &m.value)),
            first,
            count,
        });
        first += count;
    }
    out
}

/// The declared GPU bus ids of every `gpus` line, in index order; empty unless every
/// line with GPUs declares them.
fn gpu_bus_ids(d: &ClassDecl) -> Vec<String> {
    let mut out = Vec::new();
    for g in &d.gpus {
        let ids = bus_ids(g.bus_ids.as_ref());
        if ids.is_empty() && g.count.as_ref().is_some_and(|c| c.value > 0) {
            return Vec::new();
        }
        out.extend(ids);
    }
    out
}

/// A class's or range's `capacity`, `price-per-hour` and `interruptions`.
fn capacity_terms(d: &crate::spec::CapacityDecl) -> CapacityTerms {
    CapacityTerms {
        capacity: d.capacity.as_ref().and_then(|c| Capacity::parse(&c.value)),
        price_per_hour: d.price_per_hour.as_ref().map(|p| p.value),
        interruptions: d.interruptions.as_ref().map(|r| r.value),
    }
}

/// A class's NUMA node; `None` without an id.
fn numa(n: &NumaDecl) -> Option<Numa> {
    Some(Numa {
        id: n.id.as_ref()?.value,
        gpus: list_of(&n.gpus),
        nics: list_of(&n.nics),
        cores: list_of(&n.cores),
    })
}

/// A class's PCIe switch; `None` without a name.
fn pcie_switch(p: &PcieDecl) -> Option<PcieSwitch> {
    Some(PcieSwitch {
        name: p.name.as_ref()?.value.clone(),
        gpus: list_of(&p.gpus),
        nics: list_of(&p.nics),
    })
}

/// Resolves a spec into a cluster model. Never fails; unresolvable parts are skipped.
pub fn build(spec: &Spec) -> Cluster {
    let models = build_models(spec);
    let mut classes = BTreeMap::new();
    for d in &spec.classes {
        classes
            .entry(d.name.value.clone())
            .or_insert_with(|| build_class(spec, d));
    }
    let nodes = build_nodes(spec, &classes);
    let node_index: BTreeMap<String, NodeIdx> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let header = spec.clusters.first();
    let version = |v: fn(&ClusterDecl) -> &Option<S<Vec<u32>>>| {
        header.and_then(|c| v(c).as_ref()).map(|v| v.value.clone())
    };
    let mut cluster = Cluster {
        name: header
            .map(|c| c.name.value.clone())
            .unwrap_or_else(|| "gpuplan".into()),
        slurm_version: version(|c| &c.slurm_version).unwrap_or_else(|| DEFAULT_SLURM.to_vec()),
        kubernetes_version: version(|c| &c.kubernetes_version),
        volcano_version: version(|c| &c.volcano_version),
        kueue_version: version(|c| &c.kueue_version),
        kai_version: version(|c| &c.kai_version),
        scheduler: header
            .and_then(|c| c.scheduler.as_ref())
            .and_then(|s| Authority::parse(&s.value)),
        gpu_allocation: header
            .and_then(|c| c.gpu_allocation.as_ref())
            .and_then(|s| super::Allocation::parse(&s.value)),
        models,
        classes,
        nodes,
        node_index,
        switches: Vec::new(),
        nvlink_domains: Vec::new(),
        teams: BTreeMap::new(),
        priorities: Vec::new(),
        workloads: Vec::new(),
        mig: MigPolicy::default(),
        pools: Vec::new(),
        storages: Vec::new(),
        moves: super::moved::resolve(spec),
        topology: Topology::default(),
        model_stats: BTreeMap::new(),
        any_spot: false,
        model_drivers: BTreeMap::new(),
        owners: Vec::new(),
        owner_list: Vec::new(),
        pool_at: Vec::new(),
        model_owners: BTreeMap::new(),
        class_owners: Vec::new(),
    };
    build_fabric(spec, &mut cluster);
    build_nvlink(spec, &mut cluster);
    build_policy(spec, &mut cluster);
    cluster.refresh();
    cluster
}

/// Nodes of every `nodes` range, with their overrides applied: the first declaration of
/// a name wins; sorted by name for determinism.
fn build_nodes(spec: &Spec, classes: &BTreeMap<String, NodeClass>) -> Vec<Node> {
    // Which range declares each name first, in name order.
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, g) in spec.node_groups.iter().enumerate() {
        for name in &g.names.value {
            first.entry(name).or_insert(i);
        }
    }
    let templates: Vec<Node> = spec
        .node_groups
        .iter()
        .map(|g| range_template(g, classes))
        .collect();
    let mut nodes: Vec<Node> = first
        .into_iter()
        .map(|(name, i)| Node {
            name: name.to_string(),
            ..templates[i].clone()
        })
        .collect();
    for o in spec.node_groups.iter().flat_map(|g| &g.overrides) {
        if let Ok(i) = nodes.binary_search_by(|n| n.name.as_str().cmp(&o.name.value)) {
            apply_override(o, &mut nodes[i]);
        }
    }
    nodes
}

/// What every node of a range shares (all but its name): class, labels, taints, GPUs.
fn range_template(g: &NodesDecl, classes: &BTreeMap<String, NodeClass>) -> Node {
    let class_name = g
        .class
        .as_ref()
        .map(|c| c.value.clone())
        .unwrap_or_default();
    let class = classes.get(&class_name);
    let mut labels = class.map(|c| c.labels.clone()).unwrap_or_default();
    label_map(&g.labels, &mut labels);
    let mut taints = class.map(|c| c.taints.clone()).unwrap_or_default();
    taint_list(&g.taints, &mut taints);
    let terms = capacity_terms(&g.capacity).over(class.map(|c| c.capacity).unwrap_or_default());
    Node {
        name: String::new(),
        span: g.names.span,
        class: class_name,
        gpus: class.map(class_gpus).unwrap_or_default(),
        labels,
        taints,
        leaves: Vec::new(),
        mnnvl: Vec::new(),
        cordon: false,
        capacity: terms.capacity.unwrap_or_default(),
        price_per_hour: terms.price_per_hour,
        interruptions: terms.interruptions,
    }
}

/// The GPUs of a node of class `c`, with their NUMA node, PCIe switch and rail.
fn class_gpus(c: &NodeClass) -> Vec<Gpu> {
    (0..c.gpu_count)
        .map(|i| {
            let pcie = c.pcie_switches.iter().find(|p| p.gpus.contains(&i));
            Gpu {
                index: i,
                model: c.model_of(i).map(str::to_string),
                nvlink_domain: None,
                numa: c.numa.iter().find(|n| n.gpus.contains(&i)).map(|n| n.id),
                pcie_switch: pcie.map(|p| p.name.clone()),
                rail: pcie
                    .and_then(|p| p.nics.first().copied())
                    .or_else(|| (i < c.nics).then_some(i)),
                down: false,
            }
        })
        .collect()
}

/// A `node` override: labels, taints, cordon and GPUs out of service.
fn apply_override(o: &NodeOverrideDecl, n: &mut Node) {
    label_map(&o.labels, &mut n.labels);
    taint_list(&o.taints, &mut n.taints);
    if let Some(c) = &o.cordon {
        n.cordon = c.value;
    }
    if let Some(down) = &o.gpus_down {
        for g in n.gpus.iter_mut() {
            if down.value.contains(&g.index) {
                g.down = true;
            }
        }
    }
}

/// Indexes of the nodes named in `names` that exist, in order.
fn node_indexes(c: &Cluster, names: &Option<S<Vec<String>>>) -> Vec<NodeIdx> {
    names
        .as_ref()
        .map(|n| {
            n.value
                .iter()
                .filter_map(|name| c.node_index.get(name).copied())
                .collect()
        })
        .unwrap_or_default()
}

/// Switches with their children and nodes; each node learns its leaves.
fn build_fabric(spec: &Spec, c: &mut Cluster) {
    for s in &spec.switches {
        let nodes = node_indexes(c, &s.nodes);
        c.switches.push(Switch {
            name: s.name.value.clone(),
            tier: s.tier,
            span: s.span,
            parent: s.parent,
            children: Vec::new(),
            nodes,
            rails: s.rails.as_ref().map(|r| r.value),
            link_speed: s.link_speed.as_ref().map(|l| l.value),
        });
    }
    for i in 0..c.switches.len() {
        if let Some(p) = c.switches[i].parent {
            c.switches[p].children.push(i);
        }
        if c.switches[i].tier == SwitchTier::Leaf {
            for n in c.switches[i].nodes.clone() {
                if !c.nodes[n].leaves.contains(&i) {
                    c.nodes[n].leaves.push(i);
                }
            }
        }
    }
}

/// NVLink domains: multi-node ones as declared, then node-local ones from the classes.
fn build_nvlink(spec: &Spec, c: &mut Cluster) {
    // Multi-node domains first: their members' GPUs all join them.
    for d in &spec.mnnvl_domains {
        let idx = c.nvlink_domains.len();
        let members = node_indexes(c, &d.nodes);
        let mut gpus = Vec::new();
        for &n in &members {
            if !c.nodes[n].mnnvl.is_empty() {
                c.nodes[n].mnnvl.push(idx);
                continue;
            }
            c.nodes[n].mnnvl.push(idx);
            for g in c.nodes[n].gpus.iter_mut() {
                g.nvlink_domain = Some(idx);
                gpus.push((n, g.index));
            }
        }
        c.nvlink_domains.push(NvlinkDomain {
            name: d.name.value.clone(),
            span: d.span,
            multi_node: true,
            members: gpus,
        });
    }
    for ni in 0..c.nodes.len() {
        if c.nodes[ni].mnnvl.is_empty() {
            node_local_nvlink(c, ni);
        }
    }
}

/// Node-local NVLink domains of node `ni`, from its class.
fn node_local_nvlink(c: &mut Cluster, ni: NodeIdx) {
    let Some(class) = c.classes.get(&c.nodes[ni].class) else {
        return;
    };
    let domains = class.nvlink_domains.clone();
    let span = class.span;
    for (k, set) in domains.iter().enumerate() {
        let idx = c.nvlink_domains.len();
        let mut members = Vec::new();
        for g in c.nodes[ni].gpus.iter_mut() {
            if set.contains(&g.index) && g.nvlink_domain.is_none() {
                g.nvlink_domain = Some(idx);
                members.push((ni, g.index));
            }
        }
        let name = if domains.len() == 1 {
            format!("{}/nvlink", c.nodes[ni].name)
        } else {
            format!("{}/nvlink{k}", c.nodes[ni].name)
        };
        c.nvlink_domains.push(NvlinkDomain {
            name,
            span,
            multi_node: false,
            members,
        });
    }
}

/// The policy: teams, priorities, workloads, MIG and pools.
fn build_policy(spec: &Spec, c: &mut Cluster) {
    build_teams(spec, c);
    build_priorities(spec, c);
    build_workloads(spec, c);
    build_mig(spec, c);
    build_pools(spec, c);
    build_storages(spec, c);
}

/// Storages with a resolved scope; one naming an unknown pool or leaf is left out
/// (GP046 reports it).
fn build_storages(spec: &Spec, c: &mut Cluster) {
    for s in &spec.storages {
        let Some(bw) = s.write_bandwidth.as_ref() else {
            continue;
        };
        let scope = match (&s.pool, &s.leaf) {
            (Some(_), Some(_)) => continue,
            (Some(p), None) => {
                if !c.pools.iter().any(|q| q.name == p.value) {
                    continue;
                }
                StorageScope::Pool(p.value.clone())
            }
            (None, Some(l)) => match c
                .switches
                .iter()
                .position(|sw| sw.name == l.value && sw.tier == SwitchTier::Leaf)
            {
                Some(i) => StorageScope::Leaf(i),
                None => continue,
            },
            (None, None) => StorageScope::Cluster,
        };
        c.storages.push(Storage {
            name: s.name.value.clone(),
            span: s.span,
            write_bandwidth: bw.value,
            scope,
        });
    }
}

/// Teams by name; the first declaration of a name wins.
fn build_teams(spec: &Spec, c: &mut Cluster) {
    for t in &spec.teams {
        c.teams.entry(t.name.value.clone()).or_insert_with(|| Team {
            name: t.name.value.clone(),
            span: t.span,
            guarantee: value_or(t.guarantee.as_ref(), 0),
            burst: t.burst.as_ref().map(|b| b.value),
            parent: t.parent.as_ref().map(|p| p.value.clone()),
            weight: t.weight.as_ref().map(|w| w.value),
            quotas: t.quotas.iter().map(|q| quota(spec, q)).collect(),
        });
    }
}

/// A team's per-model or per-pool quota; the model by its canonical name when known.
fn quota(spec: &Spec, q: &QuotaDecl) -> Quota {
    Quota {
        model: q
            .model
            .as_ref()
            .and_then(|m| canonical_model(spec, &m.value).or(Some(m.value.clone()))),
        pool: q.pool.as_ref().map(|p| p.value.clone()),
        guarantee: value_or(q.guarantee.as_ref(), 0),
        burst: q.burst.as_ref().map(|b| b.value),
        scheduler: authority(&q.scheduler),
        span: q.span,
    }
}

/// Priorities, highest first; the first declaration of a name wins.
fn build_priorities(spec: &Spec, c: &mut Cluster) {
    let mut seen = std::collections::BTreeSet::new();
    for p in &spec.priorities {
        if !seen.insert(p.name.value.clone()) {
            continue;
        }
        c.priorities.push(Priority {
            name: p.name.value.clone(),
            span: p.span,
            value: value_or(p.value.as_ref(), 0),
            preempts: p.preempts.iter().map(|x| x.value.clone()).collect(),
            never_preempts: p.never_preempts.as_ref().is_some_and(|n| n.value),
            description: p.description.as_ref().map(|d| d.value.clone()),
        });
    }
    c.priorities
        .sort_by(|a, b| b.value.cmp(&a.value).then(a.name.cmp(&b.name)));
}

/// Workloads by name; the first declaration of a name wins.
fn build_workloads(spec: &Spec, c: &mut Cluster) {
    let mut seen = std::collections::BTreeSet::new();
    for w in &spec.workloads {
        if seen.insert(w.name.value.clone()) {
            let mut w = workload(spec, w);
            narrow_to_memory(&c.models, &mut w);
            c.workloads.push(w);
        }
    }
    c.workloads.sort_by(|a, b| a.name.cmp(&b.name));
}

/// A training class with `memory` accepts only the GPU models one GPU of which holds a
/// rank ([`super::sizing::holds_rank`]), of those it lists (in its order) or of every
/// known model, so that the planner, the choice of its scheduler and the checker, which
/// all go by `models`, keep it off smaller GPUs. None left: [`super::NO_MODEL`] (GP015
/// says why).
fn narrow_to_memory(models: &BTreeMap<String, GpuModel>, w: &mut Workload) {
    if w.kind != WorkloadKind::Training || w.memory.is_none() {
        return;
    }
    // The class's own order (best first), else the models by name.
    let listed: Vec<&String> = if w.models.is_empty() {
        models.keys().collect()
    } else {
        w.models.iter().collect()
    };
    let fits: Vec<String> = listed
        .into_iter()
        .filter(|m| {
            models
                .get(*m)
                .is_some_and(|gm| super::sizing::holds_rank(w, gm))
        })
        .cloned()
        .collect();
    w.models = if fits.is_empty() {
        vec![super::NO_MODEL.to_string()]
    } else {
        fits
    };
}

/// One workload, with its models by canonical name and its requests in their units.
fn workload(spec: &Spec, w: &WorkloadDecl) -> Workload {
    let text = |v: &Option<S<String>>| v.as_ref().map(|t| t.value.clone());
    Workload {
        kind: w.kind,
        name: w.name.value.clone(),
        span: w.span,
        team: text(&w.team).unwrap_or_default(),
        priority: text(&w.priority).unwrap_or_default(),
        replicas: value_or(w.replicas.as_ref(), 1),
        scheduler: authority(&w.scheduler),
        cuda: w
            .cuda
            .as_ref()
            .and_then(|v| Some((*v.value.first()?, v.value.get(1).copied().unwrap_or(0)))),
        cuda_compat: w.cuda_compat.as_ref().is_some_and(|b| b.value),
        models: w
            .models
            .iter()
            .filter_map(|m| canonical_model(spec, &m.value))
            .collect(),
        gang_gpus: value_or(w.gang_gpus.as_ref(), 0),
        gpus_per_node: w.gpus_per_node.as_ref().map(|g| g.value),
        required_tier: w.required_tier.as_ref().and_then(|t| Tier::parse(&t.value)),
        preferred_tier: w
            .preferred_tier
            .as_ref()
            .and_then(|t| Tier::parse(&t.value)),
        checkpoint: w.checkpoint.as_ref().map(|c| c.value),
        checkpoint_span: w.checkpoint_span,
        checkpoint_size: w.checkpoint_size.as_ref().map(|c| c.value),
        restart: w.restart.as_ref().map(|c| c.value),
        max_idle: w.max_idle.as_ref().map(|c| c.value),
        preemptible: w.preemptible.as_ref().is_some_and(|p| p.value),
        spot: w.spot.as_ref().map(|s| s.value),
        straddle: w.straddle.as_ref().is_some_and(|s| s.value),
        memory: w.memory.as_ref().map(|m| m.value),
        isolation: w
            .isolation
            .as_ref()
            .and_then(|i| Isolation::parse(&i.value)),
        profile: text(&w.profile),
        gpus_per_replica: value_or(w.gpus_per_replica.as_ref(), 1),
        min_compute: w.min_compute.as_ref().map(|m| m.value),
        share: w.share.as_ref().and_then(|s| Isolation::parse(&s.value)),
        per_gpu: w.per_gpu.as_ref().map(|p| p.value),
        cpu_milli: w
            .cpu_request
            .as_ref()
            .map(|c| (c.value.max(0.0) * 1000.0).round() as u64)
            .unwrap_or(0),
        host_memory: value_or(w.memory_request.as_ref(), Bytes(0)),
        gpu_milli: w
            .fraction
            .as_ref()
            .map(|f| (f.value * 1000.0).round().clamp(0.0, 1000.0) as u32),
    }
}

/// The MIG policy: allowed profiles (sorted, unique), headroom and layouts.
fn build_mig(spec: &Spec, c: &mut Cluster) {
    c.mig.allow = spec.mig.allow.iter().map(|a| a.value.clone()).collect();
    c.mig.allow.sort();
    c.mig.allow.dedup();
    c.mig.headroom = value_or(spec.mig.headroom.as_ref(), 0.0);
    for l in &spec.mig.layouts {
        let layout = MigLayout {
            span: l.span,
            nodes: node_indexes(c, &l.nodes),
            gpus: list_of(&l.gpus),
            profiles: l.profiles.iter().map(|p| p.value.clone()).collect(),
            profile_spans: l.profiles.iter().map(|p| p.span).collect(),
            current: l.current.as_ref().is_some_and(|c| c.value),
        };
        c.mig.layouts.push(layout);
    }
}

/// Pools by name; the first declaration of a name wins.
fn build_pools(spec: &Spec, c: &mut Cluster) {
    let mut seen = std::collections::BTreeSet::new();
    for p in &spec.pools {
        if !seen.insert(p.name.value.clone()) {
            continue;
        }
        let pool = Pool {
            name: p.name.value.clone(),
            span: p.span,
            mode: p.mode.as_ref().map(|m| m.value.clone()).unwrap_or_default(),
            nodes: node_indexes(c, &p.nodes),
            max_disrupted: p.max_disrupted.as_ref().map(|m| m.value),
            scheduler: authority(&p.scheduler),
            gpu_allocation: p
                .gpu_allocation
                .as_ref()
                .and_then(|s| super::Allocation::parse(&s.value)),
        };
        c.pools.push(pool);
    }
    c.pools.sort_by(|a, b| a.name.cmp(&b.name));
}

/// A `bus-ids=` list in NCCL's spelling; empty when absent or when any id is invalid.
pub(crate) fn bus_ids(v: Option<&S<String>>) -> Vec<String> {
    v.and_then(|s| {
        s.value
            .split(',')
            .map(crate::units::normalize_bus_id)
            .collect::<Option<Vec<_>>>()
    })
    .unwrap_or_default()
}

/// A `scheduler=` value as an authority (`None` when absent or not a known name).
fn authority(v: &Option<S<String>>) -> Option<Authority> {
    v.as_ref().and_then(|s| Authority::parse(&s.value))
}

fn model_stats(c: &Cluster) -> BTreeMap<String, ModelStats> {
    let mut out: BTreeMap<String, ModelStats> = BTreeMap::new();
    for n in &c.nodes {
        let mut per: BTreeMap<&str, u32> = BTreeMap::new();
        for g in n.usable_gpus() {
            if let Some(m) = &g.model {
                *per.entry(m).or_default() += 1;
            }
        }
        for (m, k) in per {
            let e = out.entry(m.to_string()).or_default();
            e.gpus += k;
            e.max_per_node = e.max_per_node.max(k);
        }
    }
    out
}

/// Per GPU model, the distinct drivers of the nodes with a usable GPU of it.
fn model_drivers(c: &Cluster) -> BTreeMap<String, Vec<Option<Vec<u32>>>> {
    let mut out: BTreeMap<String, Vec<Option<Vec<u32>>>> = BTreeMap::new();
    for (n, node) in c.nodes.iter().enumerate() {
        let driver = c.node_driver(n).map(<[u32]>::to_vec);
        let mut last = None;
        for m in node.usable_gpus().filter_map(|g| g.model.as_deref()) {
            // Once per run of a model (a node's GPUs mostly share one).
            if last == Some(m) {
                continue;
            }
            last = Some(m);
            let e = out.entry(m.to_string()).or_default();
            if !e.contains(&driver) {
                e.push(driver.clone());
                e.sort();
            }
        }
    }
    out
}

impl Cluster {
    /// Recomputes what is derived from the nodes (topology domains, per-model counts)
    /// after they were changed in place, e.g. GPUs marked down.
    pub fn refresh(&mut self) {
        self.topology = Topology::build(self);
        self.refresh_beside_topology();
    }

    /// [`Cluster::refresh`] but the topology, for a caller that has it already.
    pub(crate) fn refresh_beside_topology(&mut self) {
        self.model_stats = model_stats(self);
        self.any_spot = self.nodes.iter().any(|n| n.capacity == Capacity::Spot);
        self.model_drivers = model_drivers(self);
        self.refresh_authorities();
        self.round_scheduler_units();
    }
}
