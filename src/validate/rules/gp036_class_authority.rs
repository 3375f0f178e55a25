//! GP036: a class whose scheduler is ambiguous, or owns no node it could use.
use super::prelude::*;
use crate::model::ClassAuthority;

pub static RULE: Rule = Rule {
    code: "GP036",
    name: "class-authority",
    severity: Severity::Error,
    summary: "a class could run under several schedulers, or its scheduler owns no node it accepts",
    docs: r#"
**What.** A workload class runs under exactly one scheduler: its `scheduler=`; else the
cluster's default `scheduler` when that can run it; else the one authority owning nodes
with a GPU model the class accepts. This rule fires when that leaves several candidates
(no default, and nodes of several authorities accept it), or when the chosen scheduler
owns no node with a GPU model the class accepts.

**Why.** A job is submitted to one scheduler. gpuplan never splits a class between
schedulers: each would need its own submission and its own quota, and a gang split
between two schedulers can never start.

**Example.**
```text
pool "hpc" mode="training" nodes="n-[01-02]" scheduler="slurm"
pool "k8s" mode="whole-gpu" nodes="n-[03-04]" scheduler="volcano"
inference "chat" team="t" priority="high" { gpus 1 }   // slurm or volcano?
```

**Fix.** Pin the class: `scheduler="volcano"`, or narrow its `models`, or declare the
cluster's default scheduler.
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
                    .with_help(format!(
                        "pin it with scheduler=\"{}\" (a class never spans two schedulers), or declare the cluster's default scheduler",
                        names.first().copied().unwrap_or("kueue")
                    )),
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
