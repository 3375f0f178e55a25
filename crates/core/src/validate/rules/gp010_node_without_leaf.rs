//! GP010: a node that no leaf switch lists, while a fabric is declared.
use super::prelude::*;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP010",
    name: "node-without-leaf",
    severity: Severity::Error,
    summary: "a fabric is declared but some nodes are under no leaf switch",
    docs: r#"
**What.** The configuration declares leaf switches, but some nodes are not listed by any.

**Why.** Topology-aware placement and the rendered topology (Slurm `topology.conf`
rejects unknown and missing nodes; Volcano HyperNodes would leave them out) need every
node in the tree. A configuration without any `fabric` is fine: all nodes are then one
flat domain.

**Example.**
```text
nodes "dgx-[001-032]" class="dgx-h100"
fabric {
    leaf "leaf-a" nodes="dgx-[001-016]"
}
```

**Fix.** Add the missing nodes to a leaf (`leaf "leaf-b" nodes="dgx-[017-032]"`).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m
        .switches
        .iter()
        .any(|s| s.tier == crate::spec::SwitchTier::Leaf)
    {
        return;
    }
    let mut by_decl: BTreeMap<Span, Vec<String>> = BTreeMap::new();
    for n in m.nodes.iter().filter(|n| n.leaves.is_empty()) {
        by_decl.entry(n.span).or_default().push(n.name.clone());
    }
    for (span, names) in by_decl {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} node(s) are under no leaf switch: {}",
                    names.len(),
                    crate::units::compress_names(&names).join(", ")
                ),
            )
            .at(span, "declared here, but no `leaf` lists them")
            .with_help("list them in a `leaf` of the `fabric`, e.g. leaf \"leaf-x\" nodes=\"...\""),
        );
    }
}
