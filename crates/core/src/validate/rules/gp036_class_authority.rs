//! GP036: a class whose scheduler is ambiguous, or owns no node it could use.
use super::prelude::*;
use crate::model::ClassAuthority;

pub(crate) static RULE: Rule = Rule {
    code: "GP036",
    name: "class-authority",
    severity: Severity::Error,
    summary: "a class could run under several schedulers, or its scheduler owns no node it accepts",
    docs: r#"
**What.** A workload class runs under exactly one scheduler: its `scheduler=`; else the
cluster's default `scheduler` when it owns a node with a GPU model the class accepts and
can run it; else the one authority owning nodes with a GPU model the class accepts. This
rule fires when that leaves several candidates (nodes of several authorities accept it,
none of them the default), or when the scheduler a class pins with `scheduler=` owns no
node with a GPU model the class accepts.

**Why.** A job is submitted to one scheduler. gpuplan never splits a class between
schedulers: each would need its own submission and its own quota, and a gang split
between two schedulers can never start.

**Example.**
```text
pool "hpc" mode="training" nodes="n-[01-02]" scheduler="slurm"
pool "k8s" mode="whole-gpu" nodes="n-[03-04]" scheduler="volcano"
inference "chat" team="t" priority="high" { gpus 1 }   // slurm or volcano?
```

A class whose `models` exist only on nodes of one pool's scheduler runs under that
scheduler, whatever the cluster's default.

**Fix.** Pin the class: `scheduler="volcano"`, or narrow its `models`, or declare the
cluster's default scheduler (it decides when it owns nodes the class accepts).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in &m.workloads {
        let cands = m.candidate_authorities(w);
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        match m.class_authority(w) {
            ClassAuthority::Ambiguous => {
                let names: Vec<&str> = cands
                    .iter()
                    .filter(|a| a.can_run(m, w))
                    .map(|a| a.as_str())
                    .collect();
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "{} `{}` could run under {}: which scheduler runs it?",
                            w.kind.as_str(),
                            w.name,
                            names.join(" or ")
                        ),
                    )
                    .at(decl.name.span, "no scheduler chosen")
                    .with_help(ambiguous_help(m, &names)),
                );
            }
            ClassAuthority::Resolved(a) if !cands.is_empty() && !cands.contains(&a) => {
                let span = decl.scheduler.as_ref().map(|s| s.span).unwrap_or(decl.span);
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "{} `{}` runs under {a}, but {a} owns no node with a GPU model it accepts (those are owned by {})",
                            w.kind.as_str(),
                            w.name,
                            cands.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    )
                    .at(span, format!("{a} here"))
                    .with_help("pin the class to a scheduler that owns such nodes, or move nodes into a pool that scheduler owns"),
                );
            }
            _ => {}
        }
    }
}

/// How to settle a class that several schedulers could run: pin it, or declare a default
/// (a declared default that owns none of its nodes does not decide).
fn ambiguous_help(m: &crate::model::Cluster, names: &[&str]) -> String {
    let first = names.first().copied().unwrap_or("kueue");
    match m.scheduler {
        Some(d) => format!(
            "pin it with scheduler=\"{first}\" (a class never spans two schedulers), or narrow its `models`; the cluster's default, {d}, owns no node with a GPU model it accepts"
        ),
        None => format!(
            "pin it with scheduler=\"{first}\" (a class never spans two schedulers), or declare the cluster's default scheduler"
        ),
    }
}
