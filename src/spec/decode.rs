//! Decoding checked KDL nodes into spec declarations.

use super::language;
use super::reader::{GP002, GP005, NodeView};
use super::*;
use crate::suggest;

pub fn decode_document(
    doc: &kdl::KdlDocument,
    file: FileId,
    spec: &mut Spec,
    diags: &mut Diagnostics,
) {
    for node in doc.nodes() {
        let name = node.name().value();
        let Some(def) = language::def(name) else {
            let top: Vec<&str> = language::top_level().map(|d| d.name()).collect();
            let nested: Vec<&str> = language::NODES
                .iter()
                .filter(|d| d.id.contains('/') && d.name() == name)
                .map(|d| d.id.rsplit_once('/').map(|x| x.0).unwrap_or(""))
                .collect();
            let help = if let Some(parent) = nested.first() {
                format!("`{name}` belongs inside `{parent}`")
            } else {
                suggest::hint(name, top.iter().copied(), "top-level node")
            };
            diags.push(
                Diagnostic::error(GP002, format!("unknown top-level node `{name}`"))
                    .at(Span::from_miette(file, node.name().span()), "unknown node")
                    .with_help(help),
            );
            continue;
        };
        let v = NodeView::new(node, def, file);
        v.check(diags);
        decode_top(v, spec, diags);
    }
}

fn name_of(v: &NodeView) -> Option<S<String>> {
    v.arg_str(0)
}

fn labels(v: &NodeView) -> Vec<LabelDecl> {
    v.children_named("label")
        .iter()
        .filter_map(|c| {
            Some(LabelDecl {
                span: c.head_span(),
                key: c.arg_str(0)?,
                value: c.arg_str(1)?,
            })
        })
        .collect()
}

fn taints(v: &NodeView) -> Vec<TaintDecl> {
    v.children_named("taint")
        .iter()
        .filter_map(|c| {
            Some(TaintDecl {
                span: c.head_span(),
                key: c.arg_str(0)?,
                value: c.arg_str(1),
                effect: c.prop_str("effect"),
            })
        })
        .collect()
}

fn models(v: &NodeView) -> (Vec<S<String>>, Option<Span>) {
    match v.child("models") {
        Some(m) => (m.args_str(), Some(m.head_span())),
        None => (Vec::new(), None),
    }
}

fn decode_top(v: NodeView, spec: &mut Spec, diags: &mut Diagnostics) {
    match v.def.id {
        "cluster" => {
            let Some(name) = name_of(&v) else { return };
            let ver = |n: &str| v.child(n).and_then(|c| c.prop_version("version"));
            spec.clusters.push(ClusterDecl {
                name,
                span: v.head_span(),
                slurm_version: ver("slurm"),
                kubernetes_version: ver("kubernetes"),
                volcano_version: ver("volcano"),
                kueue_version: ver("kueue"),
            });
        }
        "gpu-model" => {
            let Some(name) = name_of(&v) else { return };
            let mig_names = v
                .children_named("mig-name")
                .iter()
                .filter_map(|c| Some((c.arg_str(0)?, c.prop_str("driver")?)))
                .collect();
            spec.gpu_models.push(GpuModelDecl {
                name,
                span: v.head_span(),
                base: v.prop_str("base"),
                memory: v.prop_bytes("memory"),
                nvlink_gen: v.prop_u32("nvlink-gen"),
                nvlink_bandwidth: v.prop_bandwidth("nvlink-bandwidth"),
                price_per_hour: v.prop_f64("price-per-hour"),
                product_name: v.prop_str("product-name"),
                driver: v.prop_version("driver"),
                mig_names,
            });
        }
        "node-class" => {
            let Some(name) = name_of(&v) else { return };
            spec.classes.push(ClassDecl {
                name,
                span: v.head_span(),
                cpu: v.child("cpu").map(|c| CpuDecl {
                    span: c.head_span(),
                    sockets: c.prop_u32("sockets"),
                    cores_per_socket: c.prop_u32("cores-per-socket"),
                    threads_per_core: c.prop_u32("threads-per-core"),
                }),
                memory: v.child("memory").and_then(|c| c.arg_bytes(0)),
                gpus: v.child("gpus").map(|c| GpusDecl {
                    span: c.head_span(),
                    count: c.arg_u32(0),
                    model: c.prop_str("model"),
                }),
                nvlink_domains: v
                    .children_named("nvlink-domain")
                    .iter()
                    .filter_map(|c| c.prop_index_set("gpus"))
                    .collect(),
                numa: v
                    .children_named("numa")
                    .iter()
                    .map(|c| NumaDecl {
                        span: c.head_span(),
                        id: c.arg_u32(0),
                        gpus: c.prop_index_set("gpus"),
                        nics: c.prop_index_set("nics"),
                        cores: c.prop_index_set("cores"),
                    })
                    .collect(),
                pcie_switches: v
                    .children_named("pcie-switch")
                    .iter()
                    .map(|c| PcieDecl {
                        span: c.head_span(),
                        name: c.arg_str(0),
                        gpus: c.prop_index_set("gpus"),
                        nics: c.prop_index_set("nics"),
                    })
                    .collect(),
                nics: v.child("nics").map(|c| NicsDecl {
                    span: c.head_span(),
                    count: c.arg_u32(0),
                    speed: c.prop_bandwidth("speed"),
                    kind: c.prop_str("kind"),
                }),
                labels: labels(&v),
                taints: taints(&v),
            });
        }
        "nodes" => {
            let Some(names) = v.arg_names(0) else { return };
            let pattern = v.arg_str(0).map(|s| s.value).unwrap_or_default();
            let overrides = v
                .children_named("node")
                .iter()
                .filter_map(|c| {
                    Some(NodeOverrideDecl {
                        name: c.arg_str(0)?,
                        span: c.head_span(),
                        gpus_down: c.prop_index_set("gpus-down"),
                        cordon: c.prop_bool("cordon"),
                        labels: labels(c),
                        taints: taints(c),
                    })
                })
                .collect();
            spec.node_groups.push(NodesDecl {
                names,
                pattern,
                span: v.head_span(),
                class: v.prop_str("class"),
                labels: labels(&v),
                taints: taints(&v),
                overrides,
            });
        }
        "fabric" => {
            for c in v.children() {
                match c.def.name() {
                    "nvlink-domain" => {
                        if let Some(name) = c.arg_str(0) {
                            spec.mnnvl_domains.push(MnnvlDecl {
                                name,
                                span: c.head_span(),
                                nodes: c.prop_names("nodes"),
                            });
                        }
                    }
                    _ => decode_switch(c, None, spec),
                }
            }
        }
        "team" => {
            let Some(name) = name_of(&v) else { return };
            spec.teams.push(TeamDecl {
                name,
                span: v.head_span(),
                guarantee: v.prop_u32("guarantee"),
                burst: v.prop_u32("burst"),
                parent: v.prop_str("parent"),
                quotas: v
                    .children_named("quota")
                    .iter()
                    .map(|c| QuotaDecl {
                        span: c.head_span(),
                        model: c.prop_str("model"),
                        pool: c.prop_str("pool"),
                        guarantee: c.prop_u32("guarantee"),
                        burst: c.prop_u32("burst"),
                    })
                    .collect(),
            });
        }
        "priority" => {
            let Some(name) = name_of(&v) else { return };
            let mut preempts: Vec<S<String>> = v.prop_str("preempts").into_iter().collect();
            for c in v.children_named("preempts") {
                preempts.extend(c.args_str());
            }
            let value = v.prop_entry("value").and_then(|e| match e.value() {
                kdl::KdlValue::Integer(n) => Some((*n, v.entry_span(e))),
                _ => None,
            });
            let value = match value {
                Some((n, span)) if (i32::MIN as i128..=1_000_000_000).contains(&n) => {
                    Some(Spanned::new(n as i64, span))
                }
                Some((n, span)) => {
                    diags.push(
                        Diagnostic::error(GP005, format!("priority value {n} is out of range"))
                            .at(span, "out of range")
                            .with_help("priority values must lie between -2147483648 and 1000000000 (Kubernetes reserves larger values for system classes)"),
                    );
                    None
                }
                None => None,
            };
            spec.priorities.push(PriorityDecl {
                name,
                span: v.head_span(),
                value,
                preempts,
                never_preempts: v
                    .prop_str("preemption")
                    .map(|s| Spanned::new(s.value == "never", s.span)),
                description: v.prop_str("description"),
            });
        }
        "training" | "inference" | "dev" => {
            let Some(name) = name_of(&v) else { return };
            let kind = match v.def.id {
                "training" => WorkloadKind::Training,
                "inference" => WorkloadKind::Inference,
                _ => WorkloadKind::Dev,
            };
            let (models, models_span) = models(&v);
            let gang = v.child("gang");
            let topo = v.child("topology");
            let share = v.child("share");
            spec.workloads.push(WorkloadDecl {
                kind,
                name,
                span: v.head_span(),
                team: v.prop_str("team"),
                priority: v.prop_str("priority"),
                replicas: v.prop_u32("replicas"),
                models,
                models_span,
                gang_span: gang.map(|g| g.head_span()),
                gang_gpus: gang.and_then(|g| g.prop_u32("gpus")),
                gpus_per_node: gang.and_then(|g| g.prop_u32("gpus-per-node")),
                required_tier: topo.and_then(|t| t.prop_str("required")),
                preferred_tier: topo.and_then(|t| t.prop_str("preferred")),
                checkpoint: v.child("checkpoint").and_then(|c| c.prop_duration("every")),
                preemptible: v.child("preemptible").map(|c| {
                    c.arg_bool(0)
                        .unwrap_or_else(|| Spanned::new(true, c.head_span()))
                }),
                memory: v.child("memory").and_then(|c| c.arg_bytes(0)),
                memory_given: v.child("memory").is_some(),
                isolation: v.child("isolation").and_then(|c| c.arg_str(0)),
                profile: v.child("profile").and_then(|c| c.arg_str(0)),
                gpus_per_replica: v.child("gpus").and_then(|c| c.arg_u32(0)),
                min_compute: v.child("min-compute").and_then(|c| c.arg_u32(0)),
                share: share.and_then(|s| s.arg_str(0)),
                per_gpu: share.and_then(|s| s.prop_u32("per-gpu")),
                cpu_request: v.child("requests").and_then(|c| c.prop_f64("cpu")),
                memory_request: v.child("requests").and_then(|c| c.prop_bytes("memory")),
                fraction: v.child("fraction").and_then(|c| c.arg_percent(0)),
            });
        }
        "mig" => {
            spec.mig.span.get_or_insert(v.head_span());
            for c in v.children_named("allow") {
                spec.mig.allow.extend(c.args_str());
            }
            for c in v.children_named("layout") {
                let mut profiles = Vec::new();
                for a in c.args_str() {
                    match expand_profile_count(&a.value) {
                        Ok((p, n)) => profiles.extend(std::iter::repeat_n(Spanned::new(p, a.span), n)),
                        Err(m) => diags.push(
                            Diagnostic::error(GP005, m)
                                .at(a.span, "invalid count")
                                .with_help("write a profile, or a profile and a count: \"1g.10gb*4\" (at most 8)"),
                        ),
                    }
                }
                spec.mig.layouts.push(LayoutDecl {
                    span: c.head_span(),
                    nodes: c.prop_names("nodes"),
                    gpus: c.prop_index_set("gpus"),
                    profiles,
                    current: c.prop_bool("current"),
                });
            }
            if let Some(h) = v.child("headroom").and_then(|c| c.arg_percent(0)) {
                spec.mig.headroom = Some(h);
            }
        }
        "pool" => {
            let Some(name) = name_of(&v) else { return };
            spec.pools.push(PoolDecl {
                name,
                span: v.head_span(),
                mode: v.prop_str("mode"),
                nodes: v.prop_names("nodes"),
                max_disrupted: v.prop_u32("max-disrupted"),
            });
        }
        _ => {}
    }
}

/// `1g.10gb*4` -> ("1g.10gb", 4); `3g.40gb` -> ("3g.40gb", 1).
pub fn expand_profile_count(s: &str) -> Result<(String, usize), String> {
    match s.split_once('*') {
        None => Ok((s.trim().to_string(), 1)),
        Some((p, n)) => {
            let n: usize = n
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: the count after `*` must be a number"))?;
            if n == 0 || n > 8 {
                return Err(format!("`{s}`: a GPU holds 1 to 8 instances of a profile"));
            }
            Ok((p.trim().to_string(), n))
        }
    }
}

fn decode_switch(v: NodeView, parent: Option<usize>, spec: &mut Spec) {
    let Some(name) = v.arg_str(0) else { return };
    let tier = match v.def.name() {
        "core" => SwitchTier::Core,
        "spine" => SwitchTier::Spine,
        _ => SwitchTier::Leaf,
    };
    let idx = spec.switches.len();
    spec.switches.push(SwitchDecl {
        tier,
        name,
        span: v.head_span(),
        parent,
        nodes: v.prop_names("nodes"),
        rails: v.prop_u32("rails"),
        link_speed: v.prop_bandwidth("link-speed"),
    });
    for c in v.children() {
        decode_switch(c, Some(idx), spec);
    }
}
