//! GP009: a node cabled to two leaf switches.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP009",
    name: "node-in-two-leaves",
    severity: Severity::Error,
    summary: "a node is listed under more than one leaf switch",
    docs: r#"
**What.** Two `leaf` switches list the same node.

**Why.** The topology is a tree: a gang's locality (and Slurm's `topology.conf`, Volcano's
HyperNodes, Kueue's Topology) needs each node under exactly one leaf. Rail-optimized
fabrics, where each NIC of a node goes to a different rail switch, are written as one
`leaf` group with `rails=N`.

**Example.**
```text
fabric {
    leaf "leaf-a" nodes="dgx-[001-016]"
    leaf "leaf-b" nodes="dgx-[016-032]"   // dgx-016 again
}
```

**Fix.** Make the leaves' node ranges disjoint; for rail-optimized wiring use
`leaf "su1" nodes="dgx-[001-032]" rails=8`.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    // one diagnostic per (first leaf, second leaf) pair, naming the shared nodes
    let mut pairs: std::collections::BTreeMap<(usize, usize), Vec<String>> = Default::default();
    for n in &m.nodes {
        for w in n.leaves.windows(2) {
            pairs.entry((w[0], w[1])).or_default().push(n.name.clone());
        }
    }
    for ((a, b), names) in pairs {
        let (la, lb) = (&m.switches[a], &m.switches[b]);
        let span = cx
            .spec
            .switches
            .iter()
            .find(|s| s.name.value == lb.name)
            .and_then(|s| s.nodes.as_ref())
            .map(|n| n.span)
            .unwrap_or(lb.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} node(s) are under two leaf switches, `{}` and `{}`: {}",
                    names.len(),
                    la.name,
                    lb.name,
                    crate::units::compress_names(&names).join(", ")
                ),
            )
            .at(span, format!("also listed by `{}`", la.name))
            .with_related(la.span, "first leaf")
            .with_help("each node hangs under exactly one leaf; for rail-optimized wiring write one `leaf` group with `rails=N`"),
        );
    }
}
