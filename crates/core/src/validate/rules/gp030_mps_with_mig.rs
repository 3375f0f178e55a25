//! GP030: MPS sharing combined with MIG.
use super::prelude::*;
use crate::model::Isolation;

pub(crate) static RULE: Rule = Rule {
    code: "GP030",
    name: "mps-with-mig",
    severity: Severity::Error,
    summary: "an MPS class whose only nodes are MIG nodes, or a MIG layout on an MPS pool",
    docs: r#"
**What.** MPS combined with MIG, in the ways the language can say it:

* a class sharing by MPS (`share "mps"`, `isolation "mps"`) whose every node with an
  acceptable GPU model is a MIG node (a `pool mode="mig"` member or covered by a fixed
  `mig layout`);
* a fixed `mig layout` on a node of a `pool mode="mps"`.

An MPS class with an explicit MIG `profile` is already refused by `GP025` (a profile
needs `isolation "mig"`).

**Why.** The NVIDIA device plugin shares whole GPUs only with MPS: "MPS ... whole GPUs
only (`nvidia.com/gpu`), not with MIG" (`../shared/reference/k8s-nvidia.md`). gpuplan
plans a node either as MPS or as MIG, so such a class is never placed, and the pool and
the layout contradict each other.

**Example.**
```text
pool "inference" mode="mig" nodes="n-[01-04]"
dev "notebooks" team="t" priority="low" {
    share "mps" per-gpu=4
    memory "8GiB"
    models "h100-sxm5-80gb"     // every H100 node is a MIG node
}
```

**Fix.** Use `share "mig"` (each session its own instance) or `"time-slice"` on MIG
nodes, or leave some nodes out of the MIG pool for MPS.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let mig = super::gp026_training_on_mig::mig_nodes(m);
    let mut candidates = super::gp026_training_on_mig::Candidates::default();
    let mut all_mig: std::collections::BTreeMap<Vec<String>, bool> = Default::default();
    for w in m
        .workloads
        .iter()
        .filter(|w| w.isolation.or(w.share) == Some(Isolation::Mps))
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
        let span = decl
            .share
            .as_ref()
            .or(decl.isolation.as_ref())
            .map(|s| s.span)
            .unwrap_or(decl.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} `{}` shares by MPS, but all its nodes ({}) are MIG nodes",
                    w.kind.as_str(),
                    w.name,
                    crate::units::compress_names(&names).join(", ")
                ),
            )
            .at(span, "MPS requested here")
            .with_help("MPS shares whole GPUs only: use share \"mig\" or \"time-slice\" on MIG nodes, or keep some nodes out of MIG"),
        );
    }
    for (pool, span, nodes) in super::gp026_training_on_mig::layouts_in_pools(m, &["mps"]) {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "MIG layout on {} of MPS pool `{}`",
                    crate::units::compress_names(&nodes).join(", "),
                    pool.name
                ),
            )
            .at(span, "MIG on MPS nodes")
            .with_related(pool.span, "pool mode=\"mps\"")
            .with_help("MPS shares whole GPUs only: remove these nodes from the layout or from the MPS pool"),
        );
    }
}
