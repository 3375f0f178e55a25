//! GP038: team quotas that do not split cleanly per scheduler.
use super::prelude::*;
use crate::model::{Authority, Cluster, Quota, Team};
use crate::spec::TeamDecl;

pub(crate) static RULE: Rule = Rule {
    code: "GP038",
    name: "quota-authority",
    severity: Severity::Error,
    summary: "a team quota spans schedulers, its parts do not add up, or a part cannot be placed",
    docs: r#"
**What.** Each scheduler enforces its own part of a team's quota (Slurm QOS, Volcano
Queue, Kueue ClusterQueue, Kubernetes ResourceQuota). The parts come from
`quota scheduler="..." guarantee=N burst=M` lines, or, without such lines, all of the
team's quota goes to the one scheduler its classes (and its sub-teams' classes) run
under. This rule fires when:

* the team's classes run under several schedulers and no `quota scheduler=` line
  splits its quota;
* the `scheduler=` parts do not add up to the team's `guarantee` and ceiling (`burst`), or
  a scheduler its classes run under has no part;
* a `quota model=`/`pool=` line counts GPUs of nodes owned by several schedulers
  without naming one;
* a part guarantees more GPUs than that scheduler owns.

**Why.** Quotas counted by two schedulers are counted twice; a part larger than the
scheduler's nodes is a promise nobody can keep.

**Example.**
```text
team "ml" guarantee=32 burst=64 {
    quota scheduler="slurm" guarantee=16 burst=32
    quota scheduler="kueue" guarantee=8 burst=16     // 24 != 32
}
```

**Fix.** Write one `quota scheduler=...` line per scheduler the team's classes run under,
adding up to the team's guarantee and burst, each within that scheduler's GPUs.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.authorities_declared() {
        return;
    }
    for decl in &cx.spec.teams {
        let Some(team) = m.teams.get(&decl.name.value) else {
            continue;
        };
        if team.span != decl.span {
            continue;
        }
        let lines: Vec<&Quota> = team
            .quotas
            .iter()
            .filter(|q| q.scheduler.is_some() && q.model.is_none() && q.pool.is_none())
            .collect();
        split(m, team, decl, &lines, out);
        counted_twice(m, team, out);
        parts_owned(m, team, decl, &lines, out);
    }
}

/// `a and b`: the schedulers' names.
fn list(v: &[Authority]) -> String {
    v.iter()
        .map(|a| a.as_str())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// A team whose classes run under several schedulers splits its quota into scheduler
/// parts, one per scheduler, adding up to the team's guarantee and ceiling.
fn split(m: &Cluster, team: &Team, decl: &TeamDecl, lines: &[&Quota], out: &mut Diagnostics) {
    let classes = m.team_class_authorities(&team.name);
    let name = &team.name;
    if lines.is_empty() {
        if classes.len() > 1 && team.ceiling() > 0 {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "team `{name}` has classes under {}, but one quota: which scheduler enforces which part?",
                        list(&classes)
                    ),
                )
                .at(decl.name.span, "quota not split")
                .with_help(format!(
                    "split it: one `quota scheduler=\"{}\" guarantee=N burst=M` line per scheduler, adding up to guarantee={} burst={}",
                    classes[0],
                    team.guarantee,
                    team.ceiling()
                )),
            );
        }
    } else {
        let g: u32 = lines.iter().map(|q| q.guarantee).sum();
        let c: u32 = lines.iter().map(|q| q.ceiling()).sum();
        if g != team.guarantee || c != team.ceiling() {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "the scheduler parts of team `{name}` add up to guarantee {g}, ceiling {c}; the team has guarantee {}, ceiling {}",
                        team.guarantee,
                        team.ceiling()
                    ),
                )
                .at(lines[0].span, "parts")
                .with_related(decl.name.span, "the team's quota")
                .with_help("make the `quota scheduler=` lines add up to the team's guarantee and burst"),
            );
        }
        for a in &classes {
            if !lines.iter().any(|q| q.scheduler == Some(*a)) {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "classes of team `{name}` run under {a}, but the team has no {a} part"
                        ),
                    )
                    .at(decl.name.span, format!("no quota scheduler=\"{a}\""))
                    .with_help(format!("add quota scheduler=\"{a}\" guarantee=N burst=M")),
                );
            }
        }
    }
}

/// A model or pool quota without `scheduler=` that counts GPUs of two schedulers.
fn counted_twice(m: &Cluster, team: &Team, out: &mut Diagnostics) {
    let name = &team.name;
    for q in &team.quotas {
        if q.scheduler.is_none() && (q.model.is_some() || q.pool.is_some()) {
            let owners = m.quota_authorities(q);
            if owners.len() > 1 {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "a quota of team `{name}` counts GPUs owned by {}",
                            list(&owners)
                        ),
                    )
                    .at(q.span, "counted by two schedulers")
                    .with_help(format!(
                        "name the scheduler: scheduler=\"{}\" (one line per scheduler)",
                        owners[0]
                    )),
                );
            }
        }
    }
}

/// Each scheduler part's guarantee within the GPUs that scheduler owns.
fn parts_owned(m: &Cluster, team: &Team, decl: &TeamDecl, lines: &[&Quota], out: &mut Diagnostics) {
    let name = &team.name;
    for (a, part) in m.team_parts(team) {
        let have = m.authority_gpus(a, None);
        if part.guarantee > have {
            let span = lines
                .iter()
                .find(|q| q.scheduler == Some(a))
                .map(|q| q.span)
                .unwrap_or(decl.name.span);
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "team `{name}` is guaranteed {} GPUs under {a}, which owns {have}",
                        part.guarantee
                    ),
                )
                .at(span, "cannot be placed")
                .with_help(format!(
                    "lower the {a} part to at most {have}, or give {a} more nodes"
                )),
            );
        }
    }
}
