//! GP007: two declarations with the same name.
use super::prelude::*;
use crate::spec::ClassDecl;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP007",
    name: "duplicate-name",
    severity: Severity::Error,
    summary: "two declarations of the same kind share a name (nodes, classes, switches, teams, ...)",
    docs: r#"
**What.** Two node classes, GPU models, nodes (also across name ranges), switches, NVLink
domains, teams, priorities, workloads, pools, PCIe switches or NUMA ids of one class have
the same name; or `cluster` is declared more than once.

**Why.** Names are how everything else refers to a declaration; with two, a reference
would be ambiguous and one of them silently ignored.

**Example.**
```text
nodes "dgx-[001-016]" class="dgx-h100"
nodes "dgx-[016-032]" class="dgx-h100"   // dgx-016 twice
```

**Fix.** Rename or remove one of them; for node ranges, make the ranges disjoint.
"#,
    check: Some(check),
};

/// Reports every name of `items` declared before (`kind`: what they name).
fn dup<'a>(kind: &str, items: impl IntoIterator<Item = (&'a str, Span)>, out: &mut Diagnostics) {
    let mut first: BTreeMap<&str, Span> = BTreeMap::new();
    for (name, span) in items {
        match first.get(name) {
            Some(f) => out.push(
                Diagnostic::error(RULE.code, format!("{kind} `{name}` is declared twice"))
                    .at(span, "second declaration")
                    .with_related(*f, "first declared here")
                    .with_help(format!("{kind} names must be unique; rename or remove one")),
            ),
            None => {
                first.insert(name, span);
            }
        }
    }
}

/// The names of `items`, with where each was written.
fn names<'a, T>(
    items: &'a [T],
    name: impl Fn(&'a T) -> &'a Spanned<String>,
) -> impl Iterator<Item = (&'a str, Span)> {
    items.iter().map(move |x| {
        let n = name(x);
        (n.value.as_str(), n.span)
    })
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let s = cx.spec;
    if s.clusters.len() > 1 {
        for c in &s.clusters[1..] {
            out.push(
                Diagnostic::error(RULE.code, "`cluster` is declared more than once")
                    .at(c.span, "second `cluster`")
                    .with_related(s.clusters[0].span, "first declared here")
                    .with_help("keep one `cluster` node for the whole configuration"),
            );
        }
    }
    dup("gpu-model", names(&s.gpu_models, |m| &m.name), out);
    dup("node class", names(&s.classes, |c| &c.name), out);
    dup_nodes(cx, out);
    dup("switch", names(&s.switches, |x| &x.name), out);
    dup("NVLink domain", names(&s.mnnvl_domains, |x| &x.name), out);
    dup("team", names(&s.teams, |x| &x.name), out);
    dup("priority", names(&s.priorities, |x| &x.name), out);
    dup("workload", names(&s.workloads, |x| &x.name), out);
    dup("pool", names(&s.pools, |x| &x.name), out);
    for c in &s.classes {
        dup_class_parts(c, out);
        dup_gpu_models(s, c, out);
    }
    for g in &s.node_groups {
        dup("node override", names(&g.overrides, |o| &o.name), out);
    }
}

/// PCIe switch names and NUMA ids within one node class.
fn dup_class_parts(c: &ClassDecl, out: &mut Diagnostics) {
    dup(
        "PCIe switch",
        c.pcie_switches
            .iter()
            .filter_map(|p| p.name.as_ref())
            .map(|n| (n.value.as_str(), n.span)),
        out,
    );
    let ids: Vec<(String, Span)> = c
        .numa
        .iter()
        .filter_map(|n| n.id.as_ref())
        .map(|i| (i.value.to_string(), i.span))
        .collect();
    dup("NUMA node", ids.iter().map(|(n, s)| (n.as_str(), *s)), out);
}

/// Two `gpus` lines of one node class with the same GPU model (by canonical name, so
/// a catalog alias and its id are the same model).
fn dup_gpu_models(s: &crate::spec::Spec, c: &ClassDecl, out: &mut Diagnostics) {
    let mut first: BTreeMap<String, Span> = BTreeMap::new();
    for m in c.gpus.iter().filter_map(|g| g.model.as_ref()) {
        let key = crate::model::canonical_model(s, &m.value).unwrap_or_else(|| m.value.clone());
        match first.get(&key) {
            Some(f) => out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "GPU model `{}` has two `gpus` lines in node class `{}`",
                        m.value, c.name.value
                    ),
                )
                .at(m.span, "second line of this model")
                .with_related(*f, "first line of this model")
                .with_help(
                    "a node class has one `gpus` line per GPU model: add the counts up in one line",
                ),
            ),
            None => {
                first.insert(key, m.span);
            }
        }
    }
}

/// Nodes are reported once per pair of overlapping ranges, not once per name.
fn dup_nodes(cx: &Ctx, out: &mut Diagnostics) {
    let mut first: BTreeMap<&str, Span> = BTreeMap::new();
    let mut pairs: BTreeMap<(Span, Span), Vec<String>> = BTreeMap::new();
    for g in &cx.spec.node_groups {
        for n in &g.names.value {
            match first.get(n.as_str()) {
                Some(f) => pairs.entry((g.names.span, *f)).or_default().push(n.clone()),
                None => {
                    first.insert(n, g.names.span);
                }
            }
        }
    }
    for ((second, first), names) in pairs {
        let list = crate::units::compress_names(&names).join(", ");
        let d = Diagnostic::error(
            RULE.code,
            format!("{} node name(s) declared twice: {list}", names.len()),
        )
        .at(second, "declares nodes again");
        let d = if first == second {
            d
        } else {
            d.with_related(first, "first declared here")
        };
        out.push(d.with_help("every node must be declared once; make the name ranges disjoint"));
    }
}
