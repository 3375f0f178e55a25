//! GP058: a class under KAI Scheduler belongs to a team that has child teams.
use super::prelude::*;
use crate::model::Authority;

pub(crate) static RULE: Rule = Rule {
    code: "GP058",
    name: "kai-parent-team-class",
    severity: Severity::Error,
    summary: "a class run by KAI Scheduler belongs to a team with child teams, whose queue KAI does not schedule",
    docs: r#"
**What.** A workload class runs under `kai` (KAI Scheduler), and its team is the
`parent` of other teams.

**Why.** gpuplan renders a KAI `Queue` per team, with `parentQueue` for the team tree
(a department above its projects). KAI schedules only leaf queues: a parent queue
divides its quota among its children and never runs a job of its own, so the class's
pods would wait forever.

**Example.**
```text
team "research" guarantee=32
team "nlp" parent="research" guarantee=16
inference "eval" team="research" priority="p" scheduler="kai" { gpus 1; }
```

**Fix.** Give the parent team's own work a child team (`team "research-ops"
parent="research"`) and move the class there, or run the class under another
scheduler.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.authorities_declared() {
        return;
    }
    for w in &m.workloads {
        if m.authority_of(w) != Some(Authority::Kai) {
            continue;
        }
        let kids: Vec<&str> = m
            .teams
            .values()
            .filter(|t| t.parent.as_deref() == Some(w.team.as_str()))
            .map(|t| t.name.as_str())
            .collect();
        if kids.is_empty() {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.team.as_ref().map(|t| t.span).unwrap_or(decl.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "`{}` runs under KAI in team `{}`, whose queue is the parent of {}: KAI schedules only leaf queues",
                    w.name,
                    w.team,
                    kids.join(", ")
                ),
            )
            .at(span, "a parent team's queue")
            .with_help("move the class to a child team (add one for the parent's own work), or run it under another scheduler"),
        );
    }
}
