//! GP021: team quotas that contradict themselves or their parent.
use super::prelude::*;
use crate::model::Team;
use crate::spec::{QuotaDecl, TeamDecl};

pub(crate) static RULE: Rule = Rule {
    code: "GP021",
    name: "team-quota-shape",
    severity: Severity::Error,
    summary: "a burst below its guarantee, children promised more than their parent, or a quota for neither model nor pool",
    docs: r#"
**What.** A team's (or quota's) `burst` is below its `guarantee`; the guarantees of a
team's children add up to more than its own guarantee, or a child's burst exceeds the
parent's; or a `quota` names neither a `model` nor a `pool` (or both), unless it is a
scheduler's part (`quota scheduler=... guarantee=N`, see GP038).

**Why.** Volcano's hierarchical queues and Kueue's cohorts reject such trees (children's
`deserved` may not exceed the parent's), and a ceiling below the guarantee is meaningless.

**Example.**
```text
team "research" guarantee=64
team "nlp" parent="research" guarantee=48
team "vision" parent="research" guarantee=32   // 80 > 64
```

**Fix.** Make children's guarantees fit inside the parent's, and every burst at least its
guarantee.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for t in &cx.spec.teams {
        check_team(t, out);
    }
    for parent in cx.model.teams.values() {
        let kids: Vec<&TeamDecl> = cx
            .spec
            .teams
            .iter()
            .filter(|t| t.parent.as_ref().is_some_and(|p| p.value == parent.name))
            .collect();
        if !kids.is_empty() {
            check_children(parent, &kids, out);
        }
    }
}

/// One team: its burst against its guarantee, and the shape of each of its quotas.
fn check_team(t: &TeamDecl, out: &mut Diagnostics) {
    if let (Some(g), Some(b)) = (&t.guarantee, &t.burst) {
        if b.value < g.value {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "team `{}` bursts to {} but is guaranteed {}",
                        t.name.value, b.value, g.value
                    ),
                )
                .at(b.span, "below the guarantee")
                .with_related(g.span, "guarantee")
                .with_help(format!(
                    "burst is the ceiling including the guarantee: use burst={} or more",
                    g.value
                )),
            );
        }
    }
    for q in &t.quotas {
        check_quota(t, q, out);
    }
}

/// A quota names exactly one of model and pool, and bursts to at least its guarantee.
fn check_quota(t: &TeamDecl, q: &QuotaDecl, out: &mut Diagnostics) {
    let scheduler_part = q.scheduler.is_some() && q.model.is_none() && q.pool.is_none();
    if q.model.is_some() == q.pool.is_some() && !scheduler_part {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "a quota of team `{}` must name exactly one of `model` or `pool`",
                    t.name.value
                ),
            )
            .at(q.span, "which GPUs does it count?")
            .with_help("write quota model=\"...\" guarantee=N, or quota pool=\"...\" guarantee=N (or quota scheduler=\"...\" guarantee=N for a scheduler's part)"),
        );
    }
    if let (Some(g), Some(b)) = (&q.guarantee, &q.burst) {
        if b.value < g.value {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("quota bursts to {} but guarantees {}", b.value, g.value),
                )
                .at(b.span, "below the guarantee")
                .with_help(format!("use burst={} or more", g.value)),
            );
        }
    }
}

/// A parent's guarantee covers its children's; no child bursts above its ceiling.
fn check_children(parent: &Team, kids: &[&TeamDecl], out: &mut Diagnostics) {
    let sum: u64 = kids
        .iter()
        .filter_map(|k| k.guarantee.as_ref())
        .map(|g| g.value as u64)
        .sum();
    if sum > parent.guarantee as u64 {
        let mut d = Diagnostic::error(RULE.code, format!("children of team `{}` are guaranteed {sum} GPUs, more than its own guarantee of {}", parent.name, parent.guarantee))
            .at(parent.span, format!("guarantees {}", parent.guarantee));
        for k in kids {
            if let Some(g) = &k.guarantee {
                d = d.with_related(g.span, format!("`{}` guaranteed {}", k.name.value, g.value));
            }
        }
        out.push(d.with_help("a parent's guarantee must cover its children's guarantees"));
    }
    let ceiling = parent.ceiling();
    for k in kids {
        let Some(b) = k
            .burst
            .as_ref()
            .filter(|b| b.value > ceiling && ceiling > 0)
        else {
            continue;
        };
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "team `{}` may burst to {}, above its parent `{}`'s ceiling of {}",
                    k.name.value, b.value, parent.name, ceiling
                ),
            )
            .at(b.span, "above the parent's ceiling")
            .with_related(parent.span, "parent")
            .with_help(format!("use burst={ceiling} or less")),
        );
    }
}
