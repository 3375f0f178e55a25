//! GP033: no scheduling authority declared anywhere.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP033",
    name: "authority-undeclared",
    severity: Severity::Warning,
    summary: "no scheduler owns the nodes: every target renders every node",
    docs: r#"
**What.** No `scheduler` is declared: not in `cluster`, not on a `pool`, a class or a
quota. Reported once.

**Why.** Without an authority, `render --target all` writes Slurm partitions, Volcano
queues, Kueue flavors and Kubernetes quotas for the same nodes. Applied together, two
schedulers each believe they own every GPU, preemption cannot cross between them and
quotas are counted twice ("scheduler authority collapse"). gpuplan still renders as
before, so that one target can be rendered on its own.

**Example.**
```text
cluster "lab"            // no scheduler
```

**Fix.** Name the scheduler that owns the nodes: `cluster "lab" { scheduler "kueue" }`,
and `pool ... scheduler="slurm"` for the nodes another scheduler owns.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if m.authorities_declared() || m.nodes.is_empty() {
        return;
    }
    let span = cx
        .spec
        .clusters
        .first()
        .map(|c| c.span)
        .or_else(|| cx.spec.node_groups.first().map(|g| g.span));
    let Some(span) = span else { return };
    out.push(
        Diagnostic::warning(
            RULE.code,
            "no scheduling authority is declared: every target renders every node",
        )
        .at(span, "which scheduler owns these nodes?")
        .with_help(
            "declare one: cluster \"NAME\" { scheduler \"kueue\" } (or kubernetes, volcano, kai, slurm), and pool ... scheduler=\"...\" for nodes another scheduler owns",
        ),
    );
}
