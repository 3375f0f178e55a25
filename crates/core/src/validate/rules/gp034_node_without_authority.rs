//! GP034: a node no scheduler owns.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP034",
    name: "node-without-authority",
    severity: Severity::Error,
    summary: "authorities are declared, but some nodes have none",
    docs: r#"
**What.** Some pool or class names a `scheduler`, the cluster declares no default
`scheduler`, and nodes outside every pool with a `scheduler` are left without one.

**Why.** Every node must have exactly one scheduling authority: a node nobody owns is
rendered nowhere (its GPUs idle), and guessing one would hand it to a scheduler that
does not know about it.

**Example.**
```text
cluster "c"                                   // no default scheduler
pool "hpc" mode="training" nodes="n-[01-02]" scheduler="slurm"
nodes "n-[01-04]" class="hgx"                 // n-03, n-04: no scheduler
```

**Fix.** Declare the default, `cluster "c" { scheduler "kueue" }`, or put the nodes in a
pool with a `scheduler`.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.authorities_declared() || m.scheduler.is_some() {
        return;
    }
    for g in &cx.spec.node_groups {
        let orphans: Vec<String> = g
            .names
            .value
            .iter()
            .filter(|n| {
                m.node_index
                    .get(n.as_str())
                    .is_some_and(|&i| m.node_authority(i).is_none())
            })
            .cloned()
            .collect();
        if orphans.is_empty() {
            continue;
        }
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "no scheduler owns {}",
                    crate::units::compress_names(&orphans).join(", ")
                ),
            )
            .at(g.names.span, "these nodes have no scheduling authority")
            .with_help("declare the default, cluster \"NAME\" { scheduler \"...\" }, or put the nodes in a pool with scheduler=\"...\""),
        );
    }
}
