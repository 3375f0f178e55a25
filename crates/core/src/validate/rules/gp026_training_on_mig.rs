//! GP026: a training class that could only run on MIG instances.
use super::prelude::*;
use crate::model::{Cluster, NodeIdx};
use crate::spec::WorkloadKind;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP026",
    name: "training-on-mig",
    severity: Severity::Error,
    summary: "a training class whose only nodes are MIG nodes, or a MIG layout on a training pool",
    docs: r#"
**What.** Training in gpuplan always takes whole GPUs (gangs); the language has no way
to give a `training` class a MIG profile. A training class still ends up "on MIG" in two
ways, both reported:

* every node with a GPU model the class accepts (`models`, or any model) is a MIG node:
  a member of a `pool mode="mig"`, or covered by a fixed `mig layout` (a node with a
  fixed layout on any of its GPUs is planned as a MIG node as a whole);
* a fixed `mig layout` partitions GPUs of a node in a `pool mode="training"`.

Nodes that are down or cordoned do not count as whole-GPU nodes.

**Why.** A MIG instance is at most one GPU, has no NVLink or peer-to-peer access to other
instances, and NCCL does not run collectives across MIG devices: a gang cannot run there.
The planner would leave the class unplaced with a capacity reason that hides the cause;
a layout on a training pool would be planned differently by the two solvers.

**Example.**
```text
pool "serving" mode="mig" nodes="n-[01-04]"
training "finetune" team="t" priority="high" {
    gang gpus=8
    models "h100-sxm5-80gb"     // every H100 node is in the MIG pool
}
```

**Fix.** Accept a GPU model that has whole-GPU nodes, take nodes out of the MIG pool
(or give them `pool mode="training"`), or remove the layout from the training pool.
"#,
    check: Some(check),
};

/// Nodes planned as MIG whatever the demand, with the reason: a `mig` pool or a fixed
/// `mig layout` on any of their GPUs.
pub(crate) fn mig_nodes(m: &Cluster) -> BTreeMap<NodeIdx, String> {
    let mut out = BTreeMap::new();
    for l in m.mig.layouts.iter().filter(|l| !l.current) {
        for &n in &l.nodes {
            out.entry(n)
                .or_insert_with(|| "a fixed `mig layout`".to_string());
        }
    }
    for p in m.pools.iter().filter(|p| p.mode == "mig") {
        for &n in &p.nodes {
            out.entry(n).or_insert_with(|| format!("pool `{}`", p.name));
        }
    }
    out
}

/// Nodes with at least one usable GPU of a model `accepts` takes.
pub(crate) fn candidate_nodes(m: &Cluster, accepts: impl Fn(&str) -> bool) -> Vec<NodeIdx> {
    m.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.usable_gpus()
                .any(|g| g.model.as_deref().is_some_and(&accepts))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The candidate nodes of workloads, computed once per accepted-model list (thousands of
/// classes share a handful of lists; each list costs a pass over every GPU).
#[derive(Default)]
pub(crate) struct Candidates {
    seen: std::collections::BTreeMap<Vec<String>, std::rc::Rc<Vec<NodeIdx>>>,
}

impl Candidates {
    pub(crate) fn of(
        &mut self,
        m: &Cluster,
        w: &crate::model::Workload,
    ) -> std::rc::Rc<Vec<NodeIdx>> {
        self.seen
            .entry(w.models.clone())
            .or_insert_with(|| std::rc::Rc::new(candidate_nodes(m, |model| w.accepts(model))))
            .clone()
    }
}

/// Pools whose nodes carry a fixed layout, per pool mode: (pool, layout span, nodes).
pub(crate) fn layouts_in_pools<'a>(
    m: &'a Cluster,
    modes: &[&str],
) -> Vec<(&'a crate::model::Pool, Span, Vec<String>)> {
    let mut out = Vec::new();
    for l in m.mig.layouts.iter().filter(|l| !l.current) {
        for p in m.pools.iter().filter(|p| modes.contains(&p.mode.as_str())) {
            let both: Vec<String> = l
                .nodes
                .iter()
                .filter(|n| p.nodes.contains(n))
                .map(|&n| m.nodes[n].name.clone())
                .collect();
            if !both.is_empty() {
                out.push((p, l.span, both));
            }
        }
    }
    out
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let mig = mig_nodes(m);
    let mut candidates = Candidates::default();
    let mut all_mig: std::collections::BTreeMap<Vec<String>, bool> = Default::default();
    for w in m
        .workloads
        .iter()
        .filter(|w| w.kind == WorkloadKind::Training)
    {
        let nodes = candidates.of(m, w);
        let only_mig = *all_mig
            .entry(w.models.clone())
            .or_insert_with(|| !nodes.is_empty() && nodes.iter().all(|n| mig.contains_key(n)));
        if !only_mig {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let names: Vec<String> = nodes.iter().map(|&n| m.nodes[n].name.clone()).collect();
        let mut why: Vec<&str> = nodes.iter().map(|n| mig[n].as_str()).collect();
        why.sort_unstable();
        why.dedup();
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "training `{}` could only run on MIG instances: its nodes {} are MIG nodes ({})",
                    w.name,
                    crate::units::compress_names(&names).join(", "),
                    why.join(", ")
                ),
            )
            .at(decl.models_span.unwrap_or(decl.span), "no whole-GPU node accepts this class")
            .with_help(
                "training gangs need whole GPUs: accept a GPU model with whole-GPU nodes, or move nodes out of the MIG pool or layout",
            ),
        );
    }
    for (pool, span, nodes) in layouts_in_pools(m, &["training"]) {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "MIG layout on {} of training pool `{}`",
                    crate::units::compress_names(&nodes).join(", "),
                    pool.name
                ),
            )
            .at(span, "partitions training GPUs")
            .with_related(pool.span, "pool mode=\"training\"")
            .with_help("training gangs need whole GPUs: remove these nodes from the layout or from the training pool"),
        );
    }
}
