//! GP028: a fixed MIG layout on some GPUs of a node, with nothing said about the others.
use super::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) static RULE: Rule = Rule {
    code: "GP028",
    name: "partial-mig-layout",
    severity: Severity::Warning,
    summary: "fixed MIG layouts cover only some GPUs of a node that no pool pins: the other GPUs become MIG GPUs too",
    docs: r#"
**What.** Fixed `mig layout`s cover some, not all, usable GPUs of a node, and no `pool`
says what the node is for.

gpuplan plans one mode per node: a node with a fixed layout on any GPU is a MIG node, and
its other GPUs receive MIG layouts chosen by the planner (or stay idle). They never serve
training gangs or whole-GPU replicas. Writing a layout for GPUs 0-3 only usually means
"GPUs 4-7 stay whole", which is not what is planned: MIG and whole GPUs mixed on one node
without an explicit layout for every GPU. A node of a `mode="mig"` pool is not reported
(the pool already says every GPU is MIG); other pools are `GP026`, `GP027` and `GP030`.

**Why.** The intent is ambiguous, and the plan differs from the likely intent without a
word: capacity expected for training is not there.

**Example.**
```text
mig {
    layout "1g.10gb*7" nodes="n-01" gpus="0-3"
}
```

**Fix.** Give every GPU of the node a layout (`"7g.80gb"` is a MIG GPU used as one
instance), put the node in a `pool mode="mig"` to say the rest is the planner's to lay
out, or keep whole-GPU work on other nodes.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    // Usable GPUs covered per node, and the first layout that covers the node.
    let mut covered: BTreeMap<usize, (BTreeSet<u32>, Span)> = BTreeMap::new();
    for l in m.mig.layouts.iter().filter(|l| !l.current) {
        for &n in &l.nodes {
            let e = covered.entry(n).or_insert((BTreeSet::new(), l.span));
            for g in m.nodes[n].usable_gpus() {
                if l.gpus.is_empty() || l.gpus.contains(&g.index) {
                    e.0.insert(g.index);
                }
            }
        }
    }
    for (n, (gpus, span)) in covered {
        if m.pool_of(n).is_some() || gpus.is_empty() {
            continue;
        }
        let node = &m.nodes[n];
        let rest: Vec<u32> = node
            .usable_gpus()
            .map(|g| g.index)
            .filter(|g| !gpus.contains(g))
            .collect();
        if rest.is_empty() {
            continue;
        }
        let covered: Vec<u32> = gpus.into_iter().collect();
        out.push(
            Diagnostic::warning(
                RULE.code,
                format!(
                    "`{}`: MIG layout on GPUs {} only; GPUs {} get no whole-GPU work, the planner lays them out as MIG",
                    node.name,
                    crate::units::format_index_set(&covered),
                    crate::units::format_index_set(&rest)
                ),
            )
            .at(span, "covers part of the node")
            .with_help(format!(
                "give GPUs {} a layout too, or put `{}` in a pool mode=\"mig\" to leave them to the planner",
                crate::units::format_index_set(&rest),
                node.name
            )),
        );
    }
}
