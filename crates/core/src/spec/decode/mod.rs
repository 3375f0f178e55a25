//! Decoding checked KDL nodes into spec declarations: the hardware (`hardware`) and
//! the policy (`policy`).

mod hardware;
mod policy;
mod state;

use super::language;
use super::reader::{GP002, NodeView};
use super::*;
use crate::suggest;

/// Checks and decodes the top-level nodes of one parsed file into `spec`.
pub fn decode_document(
    doc: &kdl::KdlDocument,
    file: FileId,
    spec: &mut Spec,
    diags: &mut Diagnostics,
) {
    for node in doc.nodes() {
        let Some(def) = language::def(node.name().value()) else {
            diags.push(unknown_top_level(node, file));
            continue;
        };
        let v = NodeView::new(node, def, file);
        if def.id == "backend" {
            // Credentials written on a `backend` are GP065 (the rule), not GP003.
            let mut own = Diagnostics::new();
            v.check(&mut own);
            let secret = state::credential_spans(&v);
            diags.extend(own.into_iter().filter(|d| {
                !(d.code == super::reader::GP003 && d.span.is_some_and(|s| secret.contains(&s)))
            }));
        } else {
            v.check(diags);
        }
        decode_top(v, spec, diags);
    }
}

/// GP002 for a top-level node the language does not have: a child node written at the
/// top, or a misspelling.
fn unknown_top_level(node: &kdl::KdlNode, file: FileId) -> Diagnostic {
    let name = node.name().value();
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
    Diagnostic::error(GP002, format!("unknown top-level node `{name}`"))
        .at(Span::from_miette(file, node.name().span()), "unknown node")
        .with_help(help)
}

/// The node's first argument: the name of what it declares.
fn name_of(v: &NodeView) -> Option<S<String>> {
    v.arg_str(0)
}

/// `label "key" "value"` children.
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

/// `taint "key" ["value"] effect=...` children.
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

/// Decodes one checked top-level node into `spec`.
fn decode_top(v: NodeView, spec: &mut Spec, diags: &mut Diagnostics) {
    match v.def.id {
        "cluster" => spec.clusters.extend(cluster(&v)),
        "gpu-model" => spec.gpu_models.extend(hardware::gpu_model(&v)),
        "node-class" => spec.classes.extend(hardware::node_class(&v)),
        "nodes" => spec.node_groups.extend(hardware::nodes(&v)),
        "fabric" => hardware::fabric(&v, spec),
        "team" => spec.teams.extend(policy::team(&v, diags)),
        "priority" => {
            if let Some(p) = policy::priority(&v, diags) {
                spec.priorities.push(p);
            }
        }
        "training" | "inference" | "dev" => spec.workloads.extend(policy::workload(&v)),
        "mig" => policy::mig(&v, &mut spec.mig, diags),
        "pool" => spec.pools.extend(policy::pool(&v)),
        "storage" => spec.storages.extend(hardware::storage(&v)),
        "backend" => spec.backends.push(state::backend(&v)),
        "moved" => spec.moves.push(state::moved(&v)),
        _ => {}
    }
}

/// `cluster "name" { slurm version=... ... }`.
fn cluster(v: &NodeView) -> Option<ClusterDecl> {
    let name = name_of(v)?;
    let ver = |n: &str| v.child(n).and_then(|c| c.prop_version("version"));
    Some(ClusterDecl {
        name,
        span: v.head_span(),
        slurm_version: ver("slurm"),
        kubernetes_version: ver("kubernetes"),
        volcano_version: ver("volcano"),
        kueue_version: ver("kueue"),
        kai_version: ver("kai"),
        scheduler: v.child("scheduler").and_then(|c| c.arg_str(0)),
        gpu_allocation: v.child("gpu-allocation").and_then(|c| c.arg_str(0)),
    })
}
