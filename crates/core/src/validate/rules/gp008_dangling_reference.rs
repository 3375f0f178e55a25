//! GP008: a reference to something that is not declared.
use super::prelude::*;
use crate::model::NodeIdx;
use crate::spec::{NodesDecl, Spec};
use crate::suggest;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) static RULE: Rule = Rule {
    code: "GP008",
    name: "dangling-reference",
    severity: Severity::Error,
    summary: "a reference to an undeclared node class, team, priority, pool or node",
    docs: r#"
**What.** A name refers to nothing: `nodes ... class=` an undeclared class, a workload's
`team=`/`priority=`, a `preempts` target, a team `parent`, a quota `pool`, or node names
in `fabric`, `pool`, `mig layout` or a `node` override that no `nodes` range declares.

**Why.** A dangling reference means part of the configuration is silently not applied:
a switch without its nodes, a workload without an owner.

**Example.**
```text
training "llama" team="nlp-team" priority="prod" { gang gpus=8 }
```
with `team "nlp"` declared.

**Fix.** Declare the missing item, or correct the name (the hint names the closest one).
"#,
    check: Some(check),
};

/// Reports `r` unless it names one of `known` (declarations of a `kind`); `what`
/// names the reference for the message, built only then.
fn missing(
    kind: &str,
    what: impl FnOnce() -> String,
    r: &Spanned<String>,
    known: &BTreeSet<&str>,
    out: &mut Diagnostics,
) {
    if known.contains(r.value.as_str()) {
        return;
    }
    out.push(
        Diagnostic::error(
            RULE.code,
            format!(
                "{} refers to {kind} `{}`, which is not declared",
                what(),
                r.value
            ),
        )
        .at(r.span, format!("no such {kind}"))
        .with_help(suggest::hint(&r.value, known.iter().copied(), kind)),
    );
}

/// Reports the names in `r` that no `nodes` range declares; `what` names the list.
fn missing_nodes(
    what: impl FnOnce() -> String,
    r: &Spanned<Vec<String>>,
    nodes: &BTreeMap<String, NodeIdx>,
    out: &mut Diagnostics,
) {
    let absent: Vec<String> = r
        .value
        .iter()
        .filter(|n| !nodes.contains_key(n.as_str()))
        .cloned()
        .collect();
    if absent.is_empty() {
        return;
    }
    let list = crate::units::compress_names(&absent);
    let help = match (
        absent.len(),
        suggest::did_you_mean(&absent[0], nodes.keys().map(String::as_str)),
    ) {
        (1, Some(s)) => format!("did you mean `{s}`?"),
        _ => "declare them with `nodes \"...\" class=\"...\"`, or correct the pattern".to_string(),
    };
    out.push(
        Diagnostic::error(
            RULE.code,
            format!(
                "{} names {} undeclared node(s): {}",
                what(),
                absent.len(),
                list.join(", ")
            ),
        )
        .at(r.span, "not declared by any `nodes` range")
        .with_help(help),
    );
}

/// The names declared, per kind of declaration.
struct Known<'a> {
    classes: BTreeSet<&'a str>,
    teams: BTreeSet<&'a str>,
    prios: BTreeSet<&'a str>,
    pools: BTreeSet<&'a str>,
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let s = cx.spec;
    let known = Known {
        classes: s.classes.iter().map(|c| c.name.value.as_str()).collect(),
        teams: s.teams.iter().map(|c| c.name.value.as_str()).collect(),
        prios: s.priorities.iter().map(|c| c.name.value.as_str()).collect(),
        pools: s.pools.iter().map(|c| c.name.value.as_str()).collect(),
    };
    for g in &s.node_groups {
        check_node_group(g, &known, out);
    }
    check_policy(s, &known, out);
    check_node_lists(s, &cx.model.node_index, out);
}

/// A `nodes` range: its class, and overrides of nodes inside the range.
fn check_node_group(g: &NodesDecl, known: &Known, out: &mut Diagnostics) {
    if let Some(c) = &g.class {
        let what = || format!("`nodes \"{}\"`", g.pattern);
        missing("node class", what, c, &known.classes, out);
    }
    if g.overrides.is_empty() {
        return;
    }
    let in_range: BTreeSet<&str> = g.names.value.iter().map(String::as_str).collect();
    for o in &g.overrides {
        if !in_range.contains(o.name.value.as_str()) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "override `node \"{}\"` is not in the range `{}`",
                        o.name.value, g.pattern
                    ),
                )
                .at(o.name.span, "not in this range")
                .with_help(suggest::hint(
                    &o.name.value,
                    in_range.iter().copied(),
                    "node of this range",
                )),
            );
        }
    }
}

/// References between policy declarations: team parents, quota pools, preempted
/// priorities, and workloads' teams and priorities.
fn check_policy(s: &Spec, known: &Known, out: &mut Diagnostics) {
    for t in &s.teams {
        let what = || format!("team `{}`", t.name.value);
        if let Some(p) = &t.parent {
            missing("team", what, p, &known.teams, out);
        }
        for q in &t.quotas {
            if let Some(p) = &q.pool {
                let what = || format!("a quota of team `{}`", t.name.value);
                missing("pool", what, p, &known.pools, out);
            }
        }
    }
    for p in &s.priorities {
        for x in &p.preempts {
            let what = || format!("priority `{}`", p.name.value);
            missing("priority", what, x, &known.prios, out);
        }
    }
    for w in &s.workloads {
        let what = || format!("{} `{}`", w.kind.as_str(), w.name.value);
        if let Some(t) = &w.team {
            missing("team", what, t, &known.teams, out);
        }
        if let Some(p) = &w.priority {
            missing("priority", what, p, &known.prios, out);
        }
    }
}

/// Node names listed by switches, NVLink domains, pools and MIG layouts.
fn check_node_lists(s: &Spec, nodes: &BTreeMap<String, NodeIdx>, out: &mut Diagnostics) {
    for sw in &s.switches {
        if let Some(n) = &sw.nodes {
            let what = || format!("{} `{}`", sw.tier.as_str(), sw.name.value);
            missing_nodes(what, n, nodes, out);
        }
    }
    for d in &s.mnnvl_domains {
        if let Some(n) = &d.nodes {
            let what = || format!("NVLink domain `{}`", d.name.value);
            missing_nodes(what, n, nodes, out);
        }
    }
    for p in &s.pools {
        if let Some(n) = &p.nodes {
            missing_nodes(|| format!("pool `{}`", p.name.value), n, nodes, out);
        }
    }
    for l in &s.mig.layouts {
        if let Some(n) = &l.nodes {
            missing_nodes(|| "a MIG layout".to_string(), n, nodes, out);
        }
    }
}
