//! GP008: a reference to something that is not declared.
use super::prelude::*;
use crate::suggest;
use std::collections::BTreeSet;

pub static RULE: Rule = Rule {
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

fn missing(
    kind: &str,
    what: &str,
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
                "{what} refers to {kind} `{}`, which is not declared",
                r.value
            ),
        )
        .at(r.span, format!("no such {kind}"))
        .with_help(suggest::hint(&r.value, known.iter().copied(), kind)),
    );
}

fn missing_nodes(
    what: &str,
    r: &Spanned<Vec<String>>,
    nodes: &BTreeSet<&str>,
    out: &mut Diagnostics,
) {
    let absent: Vec<String> = r
        .value
        .iter()
        .filter(|n| !nodes.contains(n.as_str()))
        .cloned()
        .collect();
    if absent.is_empty() {
        return;
    }
    let list = crate::units::compress_names(&absent);
    let help = match (
        absent.len(),
        suggest::did_you_mean(&absent[0], nodes.iter().copied()),
    ) {
        (1, Some(s)) => format!("did you mean `{s}`?"),
        _ => "declare them with `nodes \"...\" class=\"...\"`, or correct the pattern".to_string(),
    };
    out.push(
        Diagnostic::error(
            RULE.code,
            format!(
                "{what} names {} undeclared node(s): {}",
                absent.len(),
                list.join(", ")
            ),
        )
        .at(r.span, "not declared by any `nodes` range")
        .with_help(help),
    );
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let s = cx.spec;
    let classes: BTreeSet<&str> = s.classes.iter().map(|c| c.name.value.as_str()).collect();
    let teams: BTreeSet<&str> = s.teams.iter().map(|c| c.name.value.as_str()).collect();
    let prios: BTreeSet<&str> = s.priorities.iter().map(|c| c.name.value.as_str()).collect();
    let pools: BTreeSet<&str> = s.pools.iter().map(|c| c.name.value.as_str()).collect();
    let nodes: BTreeSet<&str> = cx.model.node_index.keys().map(String::as_str).collect();
    for g in &s.node_groups {
        if let Some(c) = &g.class {
            missing(
                "node class",
                &format!("`nodes \"{}\"`", g.pattern),
                c,
                &classes,
                out,
            );
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
    for t in &s.teams {
        if let Some(p) = &t.parent {
            missing("team", &format!("team `{}`", t.name.value), p, &teams, out);
        }
        for q in &t.quotas {
            if let Some(p) = &q.pool {
                missing(
                    "pool",
                    &format!("a quota of team `{}`", t.name.value),
                    p,
                    &pools,
                    out,
                );
            }
        }
    }
    for p in &s.priorities {
        for x in &p.preempts {
            missing(
                "priority",
                &format!("priority `{}`", p.name.value),
                x,
                &prios,
                out,
            );
        }
    }
    for w in &s.workloads {
        let what = format!("{} `{}`", w.kind.as_str(), w.name.value);
        if let Some(t) = &w.team {
            missing("team", &what, t, &teams, out);
        }
        if let Some(p) = &w.priority {
            missing("priority", &what, p, &prios, out);
        }
    }
    for sw in &s.switches {
        if let Some(n) = &sw.nodes {
            missing_nodes(
                &format!("{} `{}`", sw.tier.as_str(), sw.name.value),
                n,
                &nodes,
                out,
            );
        }
    }
    for d in &s.mnnvl_domains {
        if let Some(n) = &d.nodes {
            missing_nodes(&format!("NVLink domain `{}`", d.name.value), n, &nodes, out);
        }
    }
    for p in &s.pools {
        if let Some(n) = &p.nodes {
            missing_nodes(&format!("pool `{}`", p.name.value), n, &nodes, out);
        }
    }
    for l in &s.mig.layouts {
        if let Some(n) = &l.nodes {
            missing_nodes("a MIG layout", n, &nodes, out);
        }
    }
}
