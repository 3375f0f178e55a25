//! Spec -> model resolution (best effort, reports nothing; see the module docs).

use super::*;
use crate::catalog;
use crate::spec::{LabelDecl, Spec, TaintDecl};

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

fn build_models(spec: &Spec) -> BTreeMap<String, GpuModel> {
    let mut models = BTreeMap::new();
    let from_catalog = |g: &'static catalog::GpuSpec| GpuModel {
        name: g.id.to_string(),
        catalog: Some(g),
        memory: crate::units::Bytes(g.memory_mib * crate::units::MIB),
        nvlink: g.nvlink,
        mig: g.mig,
        mig_capable: g.mig.is_some(),
        price_per_hour: None,
        driver_names: BTreeMap::new(),
        driver_branch: None,
        short_name: g.short_name.to_string(),
        product_name: g.product_names.first().map(|s| s.to_string()),
        span: None,
    };
    // Catalog models referenced anywhere are materialised on demand below; declared
    // models first.
    for d in &spec.gpu_models {
        let name = d.name.value.clone();
        if models.contains_key(&name) {
            continue;
        }
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
                short_name: short_name(&name),
                product_name: None,
                span: None,
            },
        };
        m.span = Some(d.span);
        if let Some(mem) = &d.memory {
            m.memory = mem.value;
        }
        if let Some(nv_gen) = &d.nvlink_gen {
            if nv_gen.value == 0 {
                m.nvlink = None;
            } else {
                let bw = d
                    .nvlink_bandwidth
                    .as_ref()
                    .map(|b| (b.value.0 / 8_000_000_000) as u32)
                    .unwrap_or(0);
                m.nvlink = Some(NvlinkSpec {
                    generation: nv_gen.value.min(255) as u8,
                    links: 0,
                    bandwidth_gbs: bw,
                });
            }
        } else if let (Some(bw), Some(nv)) = (&d.nvlink_bandwidth, m.nvlink.as_mut()) {
            nv.bandwidth_gbs = (bw.value.0 / 8_000_000_000) as u32;
        }
        m.price_per_hour = d.price_per_hour.as_ref().map(|p| p.value);
        m.driver_branch = d.driver.as_ref().and_then(|v| v.value.first().copied());
        if let Some(p) = &d.product_name {
            m.product_name = Some(p.value.clone());
        }
        for (profile, driver) in &d.mig_names {
            m.driver_names
                .insert(profile.value.clone(), driver.value.clone());
        }
        models.insert(name, m);
    }
    let mut referenced: Vec<&str> = Vec::new();
    for c in &spec.classes {
        if let Some(m) = c.gpus.as_ref().and_then(|g| g.model.as_ref()) {
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
    for r in referenced {
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

fn build_class(spec: &Spec, d: &crate::spec::ClassDecl) -> NodeClass {
    let mut labels = BTreeMap::new();
    label_map(&d.labels, &mut labels);
    let mut taints = Vec::new();
    taint_list(&d.taints, &mut taints);
    let cpu = d.cpu.as_ref();
    NodeClass {
        name: d.name.value.clone(),
        span: d.span,
        cpu_declared: cpu.is_some(),
        sockets: cpu
            .and_then(|c| c.sockets.as_ref())
            .map(|v| v.value)
            .unwrap_or(1),
        cores_per_socket: cpu
            .and_then(|c| c.cores_per_socket.as_ref())
            .map(|v| v.value)
            .unwrap_or(1),
        threads_per_core: cpu
            .and_then(|c| c.threads_per_core.as_ref())
            .map(|v| v.value)
            .unwrap_or(1),
        memory: d.memory.as_ref().map(|m| m.value),
        gpu_count: d
            .gpus
            .as_ref()
            .and_then(|g| g.count.as_ref())
            .map(|c| c.value.min(crate::units::MAX_INDEX + 1))
            .unwrap_or(0),
        gpu_model: d
            .gpus
            .as_ref()
            .and_then(|g| g.model.as_ref())
            .and_then(|m| canonical_model(spec, &m.value)),
        nvlink_domains: d.nvlink_domains.iter().map(|s| s.value.clone()).collect(),
        numa: d
            .numa
            .iter()
            .filter_map(|n| {
                Some(Numa {
                    id: n.id.as_ref()?.value,
                    gpus: n.gpus.as_ref().map(|v| v.value.clone()).unwrap_or_default(),
                    nics: n.nics.as_ref().map(|v| v.value.clone()).unwrap_or_default(),
                    cores: n
                        .cores
                        .as_ref()
                        .map(|v| v.value.clone())
                        .unwrap_or_default(),
                })
            })
            .collect(),
        pcie_switches: d
            .pcie_switches
            .iter()
            .filter_map(|p| {
                Some(PcieSwitch {
                    name: p.name.as_ref()?.value.clone(),
                    gpus: p.gpus.as_ref().map(|v| v.value.clone()).unwrap_or_default(),
                    nics: p.nics.as_ref().map(|v| v.value.clone()).unwrap_or_default(),
                })
            })
            .collect(),
        nics: d
            .nics
            .as_ref()
            .and_then(|n| n.count.as_ref())
            .map(|c| c.value)
            .unwrap_or(0),
        nic_speed: d
            .nics
            .as_ref()
            .and_then(|n| n.speed.as_ref())
            .map(|s| s.value),
        nic_kind: d
            .nics
            .as_ref()
            .and_then(|n| n.kind.as_ref())
            .map(|s| s.value.clone()),
        labels,
        taints,
    }
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

    // Nodes: first declaration of a name wins; sorted by name for determinism.
    let mut by_name: BTreeMap<String, Node> = BTreeMap::new();
    let mut overrides: Vec<&crate::spec::NodeOverrideDecl> = Vec::new();
    for g in &spec.node_groups {
        let class_name = g
            .class
            .as_ref()
            .map(|c| c.value.clone())
            .unwrap_or_default();
        let class = classes.get(&class_name);
        for name in &g.names.value {
            if by_name.contains_key(name) {
                continue;
            }
            let mut labels = class.map(|c| c.labels.clone()).unwrap_or_default();
            label_map(&g.labels, &mut labels);
            let mut taints = class.map(|c| c.taints.clone()).unwrap_or_default();
            taint_list(&g.taints, &mut taints);
            let gpus = class
                .map(|c| {
                    (0..c.gpu_count)
                        .map(|i| Gpu {
                            index: i,
                            model: c.gpu_model.clone(),
                            nvlink_domain: None,
                            numa: c.numa.iter().find(|n| n.gpus.contains(&i)).map(|n| n.id),
                            pcie_switch: c
                                .pcie_switches
                                .iter()
                                .find(|p| p.gpus.contains(&i))
                                .map(|p| p.name.clone()),
                            rail: c
                                .pcie_switches
                                .iter()
                                .find(|p| p.gpus.contains(&i))
                                .and_then(|p| p.nics.first().copied())
                                .or_else(|| (i < c.nics).then_some(i)),
                            down: false,
                        })
                        .collect()
                })
                .unwrap_or_default();
            by_name.insert(
                name.clone(),
                Node {
                    name: name.clone(),
                    span: g.names.span,
                    class: class_name.clone(),
                    gpus,
                    labels,
                    taints,
                    leaves: Vec::new(),
                    mnnvl: Vec::new(),
                    cordon: false,
                },
            );
        }
        overrides.extend(g.overrides.iter());
    }
    for o in overrides {
        if let Some(n) = by_name.get_mut(&o.name.value) {
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
    }
    let nodes: Vec<Node> = by_name.into_values().collect();
    let node_index: BTreeMap<String, NodeIdx> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let mut cluster = Cluster {
        name: spec
            .clusters
            .first()
            .map(|c| c.name.value.clone())
            .unwrap_or_else(|| "gpuplan".into()),
        slurm_version: spec
            .clusters
            .first()
            .and_then(|c| c.slurm_version.as_ref())
            .map(|v| v.value.clone())
            .unwrap_or_else(|| DEFAULT_SLURM.to_vec()),
        kubernetes_version: spec
            .clusters
            .first()
            .and_then(|c| c.kubernetes_version.as_ref())
            .map(|v| v.value.clone()),
        volcano_version: spec
            .clusters
            .first()
            .and_then(|c| c.volcano_version.as_ref())
            .map(|v| v.value.clone()),
        kueue_version: spec
            .clusters
            .first()
            .and_then(|c| c.kueue_version.as_ref())
            .map(|v| v.value.clone()),
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
        topology: Topology::default(),
        model_stats: BTreeMap::new(),
    };
    build_fabric(spec, &mut cluster);
    build_nvlink(spec, &mut cluster);
    build_policy(spec, &mut cluster);
    cluster.topology = Topology::build(&cluster);
    cluster.model_stats = model_stats(&cluster);
    cluster
}

fn build_fabric(spec: &Spec, c: &mut Cluster) {
    for s in &spec.switches {
        let nodes: Vec<NodeIdx> = s
            .nodes
            .as_ref()
            .map(|n| {
                n.value
                    .iter()
                    .filter_map(|name| c.node_index.get(name).copied())
                    .collect()
            })
            .unwrap_or_default();
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

fn build_nvlink(spec: &Spec, c: &mut Cluster) {
    // Multi-node domains first: their members' GPUs all join them.
    for d in &spec.mnnvl_domains {
        let idx = c.nvlink_domains.len();
        let members: Vec<NodeIdx> = d
            .nodes
            .as_ref()
            .map(|n| {
                n.value
                    .iter()
                    .filter_map(|name| c.node_index.get(name).copied())
                    .collect()
            })
            .unwrap_or_default();
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
    // Node-local domains from the class.
    for ni in 0..c.nodes.len() {
        if !c.nodes[ni].mnnvl.is_empty() {
            continue;
        }
        let Some(class) = c.classes.get(&c.nodes[ni].class) else {
            continue;
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
}

fn build_policy(spec: &Spec, c: &mut Cluster) {
    for t in &spec.teams {
        c.teams.entry(t.name.value.clone()).or_insert_with(|| Team {
            name: t.name.value.clone(),
            span: t.span,
            guarantee: t.guarantee.as_ref().map(|g| g.value).unwrap_or(0),
            burst: t.burst.as_ref().map(|b| b.value),
            parent: t.parent.as_ref().map(|p| p.value.clone()),
            quotas: t
                .quotas
                .iter()
                .map(|q| Quota {
                    model: q
                        .model
                        .as_ref()
                        .and_then(|m| canonical_model(spec, &m.value).or(Some(m.value.clone()))),
                    pool: q.pool.as_ref().map(|p| p.value.clone()),
                    guarantee: q.guarantee.as_ref().map(|g| g.value).unwrap_or(0),
                    burst: q.burst.as_ref().map(|b| b.value),
                    span: q.span,
                })
                .collect(),
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in &spec.priorities {
        if !seen.insert(p.name.value.clone()) {
            continue;
        }
        c.priorities.push(Priority {
            name: p.name.value.clone(),
            span: p.span,
            value: p.value.as_ref().map(|v| v.value).unwrap_or(0),
            preempts: p.preempts.iter().map(|x| x.value.clone()).collect(),
            never_preempts: p.never_preempts.as_ref().is_some_and(|n| n.value),
            description: p.description.as_ref().map(|d| d.value.clone()),
        });
    }
    c.priorities
        .sort_by(|a, b| b.value.cmp(&a.value).then(a.name.cmp(&b.name)));
    let mut seen = std::collections::BTreeSet::new();
    for w in &spec.workloads {
        if !seen.insert(w.name.value.clone()) {
            continue;
        }
        c.workloads.push(Workload {
            kind: w.kind,
            name: w.name.value.clone(),
            span: w.span,
            team: w.team.as_ref().map(|t| t.value.clone()).unwrap_or_default(),
            priority: w
                .priority
                .as_ref()
                .map(|t| t.value.clone())
                .unwrap_or_default(),
            replicas: w.replicas.as_ref().map(|r| r.value).unwrap_or(1),
            models: w
                .models
                .iter()
                .filter_map(|m| canonical_model(spec, &m.value))
                .collect(),
            gang_gpus: w.gang_gpus.as_ref().map(|g| g.value).unwrap_or(0),
            gpus_per_node: w.gpus_per_node.as_ref().map(|g| g.value),
            required_tier: w.required_tier.as_ref().and_then(|t| Tier::parse(&t.value)),
            preferred_tier: w
                .preferred_tier
                .as_ref()
                .and_then(|t| Tier::parse(&t.value)),
            checkpoint: w.checkpoint.as_ref().map(|c| c.value),
            preemptible: w.preemptible.as_ref().is_some_and(|p| p.value),
            memory: w.memory.as_ref().map(|m| m.value),
            isolation: w
                .isolation
                .as_ref()
                .and_then(|i| Isolation::parse(&i.value)),
            profile: w.profile.as_ref().map(|p| p.value.clone()),
            gpus_per_replica: w.gpus_per_replica.as_ref().map(|g| g.value).unwrap_or(1),
            min_compute: w.min_compute.as_ref().map(|m| m.value),
            share: w.share.as_ref().and_then(|s| Isolation::parse(&s.value)),
            per_gpu: w.per_gpu.as_ref().map(|p| p.value),
            cpu_milli: w
                .cpu_request
                .as_ref()
                .map(|c| (c.value.max(0.0) * 1000.0).round() as u64)
                .unwrap_or(0),
            host_memory: w
                .memory_request
                .as_ref()
                .map(|m| m.value)
                .unwrap_or(Bytes(0)),
            gpu_milli: w
                .fraction
                .as_ref()
                .map(|f| (f.value * 1000.0).round().clamp(0.0, 1000.0) as u32),
        });
    }
    c.workloads.sort_by(|a, b| a.name.cmp(&b.name));
    c.mig.allow = spec.mig.allow.iter().map(|a| a.value.clone()).collect();
    c.mig.allow.sort();
    c.mig.allow.dedup();
    c.mig.headroom = spec.mig.headroom.as_ref().map(|h| h.value).unwrap_or(0.0);
    for l in &spec.mig.layouts {
        c.mig.layouts.push(MigLayout {
            span: l.span,
            nodes: l
                .nodes
                .as_ref()
                .map(|n| {
                    n.value
                        .iter()
                        .filter_map(|name| c.node_index.get(name).copied())
                        .collect()
                })
                .unwrap_or_default(),
            gpus: l.gpus.as_ref().map(|g| g.value.clone()).unwrap_or_default(),
            profiles: l.profiles.iter().map(|p| p.value.clone()).collect(),
            profile_spans: l.profiles.iter().map(|p| p.span).collect(),
            current: l.current.as_ref().is_some_and(|c| c.value),
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in &spec.pools {
        if !seen.insert(p.name.value.clone()) {
            continue;
        }
        c.pools.push(Pool {
            name: p.name.value.clone(),
            span: p.span,
            mode: p.mode.as_ref().map(|m| m.value.clone()).unwrap_or_default(),
            nodes: p
                .nodes
                .as_ref()
                .map(|n| {
                    n.value
                        .iter()
                        .filter_map(|name| c.node_index.get(name).copied())
                        .collect()
                })
                .unwrap_or_default(),
            max_disrupted: p.max_disrupted.as_ref().map(|m| m.value),
        });
    }
    c.pools.sort_by(|a, b| a.name.cmp(&b.name));
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

impl Cluster {
    /// Recomputes what is derived from the nodes (topology domains, per-model counts)
    /// after they were changed in place, e.g. GPUs marked down.
    pub fn refresh(&mut self) {
        self.topology = Topology::build(self);
        self.model_stats = model_stats(self);
    }
}
