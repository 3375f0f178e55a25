//! GP023: priority classes whose order is ambiguous or contradicted.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP023",
    name: "priority-order",
    severity: Severity::Error,
    summary: "two priority classes share a value, a class preempts one that is not lower, or `preemption=\"never\"` with `preempts`",
    docs: r#"
**What.** Two `priority` classes have the same `value`; a class `preempts` a class whose
value is not lower than its own; or a class says `preemption="never"` and also lists
classes it preempts.

**Why.** The planner admits strictly by priority and renders the same order to Kubernetes
PriorityClasses, Kueue, Volcano and Slurm QOS; equal values make that order depend on
names, and preempting upwards inverts it.

**Example.**
```text
priority "prod" value=500
priority "batch" value=500
```

**Fix.** Give every class a distinct value; preempt only lower classes.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let ps = &cx.spec.priorities;
    for (i, p) in ps.iter().enumerate() {
        let Some(v) = &p.value else { continue };
        if let Some(q) = ps[..i].iter().find(|q| {
            q.value.as_ref().is_some_and(|x| x.value == v.value) && q.name.value != p.name.value
        }) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "priorities `{}` and `{}` both have value {}",
                        q.name.value, p.name.value, v.value
                    ),
                )
                .at(v.span, "same value")
                .with_related(
                    q.value.as_ref().map(|x| x.span).unwrap_or(q.span),
                    "first here",
                )
                .with_help("give each priority class a distinct value so the order is explicit"),
            );
        }
        for x in &p.preempts {
            if let Some(target) = ps.iter().find(|q| q.name.value == x.value) {
                if let Some(tv) = &target.value {
                    if tv.value >= v.value && target.name.value != p.name.value {
                        out.push(
                            Diagnostic::error(
                                RULE.code,
                                format!(
                                    "`{}` (value {}) preempts `{}` (value {}), which is not lower",
                                    p.name.value, v.value, x.value, tv.value
                                ),
                            )
                            .at(x.span, "preempts upwards")
                            .with_related(tv.span, "its value")
                            .with_help("a class may only preempt classes with a lower value"),
                        );
                    }
                }
            }
        }
        if let Some(n) = &p.never_preempts {
            if n.value && !p.preempts.is_empty() {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "`{}` says preemption=\"never\" but lists classes it preempts",
                            p.name.value
                        ),
                    )
                    .at(n.span, "never preempts")
                    .with_related(p.preempts[0].span, "yet preempts")
                    .with_help("remove one of the two"),
                );
            }
        }
    }
}
