//! GP019: MIG asked of GPUs that have no MIG.
use super::prelude::*;
use crate::model::Isolation;

pub(crate) static RULE: Rule = Rule {
    code: "GP019",
    name: "mig-without-mig-gpu",
    severity: Severity::Error,
    summary: "MIG requested on GPU models without MIG support (L40S, L4, T4, ...)",
    docs: r#"
**What.** An inference class with `isolation "mig"` (or a dev class sharing by `mig`)
whose acceptable GPU models in the cluster have no MIG; a `mig layout` on nodes whose GPUs
have no MIG; or a `pool` with `mode="mig"` containing such nodes. A node with GPUs of
several models (one `gpus` line per model) has MIG when one of its models has: in a MIG
pool, its other GPUs stay whole GPUs.

**Why.** MIG exists on A30, A100, H100, H200, B200, GB200 (and a few others), not on L40S,
L4 or T4. mig-parted would fail on the node.

**Example.**
```text
inference "chat" team="apps" priority="serving" {
    memory "12GiB"
    isolation "mig"
    models "l40s-48gb"
}
```

**Fix.** Use `isolation "time-slice"` or `"mps"` on those GPUs, or accept a MIG-capable
model.
"#,
    check: Some(check),
};

/// Names of the nodes among `nodes` none of whose GPUs has MIG (a mixed node's GPUs
/// of a model with MIG are enough).
fn without_mig(m: &crate::model::Cluster, nodes: &[usize]) -> Vec<String> {
    nodes
        .iter()
        .filter(|&&n| {
            let models: Vec<_> = m.nodes[n]
                .gpus
                .iter()
                .filter_map(|g| m.model_of(g))
                .collect();
            !models.is_empty() && models.iter().all(|md| md.mig.is_none())
        })
        .map(|&n| m.nodes[n].name.clone())
        .collect()
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in &m.workloads {
        let wants_mig = w.isolation == Some(Isolation::Mig) || w.share == Some(Isolation::Mig);
        if !wants_mig {
            continue;
        }
        let models = super::gp015_footprint_too_large::candidate_models(m, w);
        if models.is_empty() || models.iter().any(|md| md.mig.is_some()) {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl
            .isolation
            .as_ref()
            .or(decl.share.as_ref())
            .map(|s| s.span)
            .unwrap_or(decl.span);
        let names: Vec<&str> = models.iter().map(|md| md.name.as_str()).collect();
        out.push(
            Diagnostic::error(RULE.code, format!("{} `{}` asks for MIG, but none of its GPU models has MIG: {}", w.kind.as_str(), w.name, names.join(", ")))
                .at(span, "MIG requested here")
                .with_help("use \"time-slice\" or \"mps\" on these GPUs, or accept a MIG-capable model (A100, H100, H200, B200, ...)"),
        );
    }
    for l in &m.mig.layouts {
        let bad = without_mig(m, &l.nodes);
        if !bad.is_empty() {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "MIG layout on {} node(s) whose GPUs have no MIG: {}",
                        bad.len(),
                        crate::units::compress_names(&bad).join(", ")
                    ),
                )
                .at(l.span, "these GPUs cannot be partitioned")
                .with_help("restrict the layout's `nodes=` to MIG-capable nodes"),
            );
        }
    }
    for p in m.pools.iter().filter(|p| p.mode == "mig") {
        let bad = without_mig(m, &p.nodes);
        if !bad.is_empty() {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "MIG pool `{}` contains {} node(s) without MIG: {}",
                        p.name,
                        bad.len(),
                        crate::units::compress_names(&bad).join(", ")
                    ),
                )
                .at(p.span, "mode=\"mig\"")
                .with_help("move these nodes to a time-slice, mps or whole-gpu pool"),
            );
        }
    }
}
