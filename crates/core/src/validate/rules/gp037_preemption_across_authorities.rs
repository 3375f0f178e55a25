//! GP037: a priority that preempts classes another scheduler runs.
use super::prelude::*;
use crate::model::Authority;
use std::collections::BTreeSet;

pub(crate) static RULE: Rule = Rule {
    code: "GP037",
    name: "preemption-across-authorities",
    severity: Severity::Error,
    summary: "a priority `preempts` a class that runs under a scheduler none of its own classes runs under",
    docs: r#"
**What.** A priority lists another in `preempts`, and a class of the preempted priority
runs under a scheduler that no class of the preempting priority runs under.

**Why.** Preemption is a scheduler's act on its own nodes: Kueue cannot evict a Slurm
job, Slurm cannot evict a Volcano pod. Such a `preempts` entry promises something no
scheduler will do. (An implicit "every lower priority" is simply scoped per scheduler and
is not reported.)

**Example.**
```text
priority "urgent" value=1000 preempts="batch"
training "llm" team="t" priority="urgent" scheduler="kueue" { gang gpus=8 }
training "sweep" team="t" priority="batch" scheduler="slurm" { gang gpus=8 }
```

**Fix.** Run the classes under the same scheduler, or drop the priority from `preempts`.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.authorities_declared() {
        return;
    }
    let of = |prio: &str| -> BTreeSet<Authority> {
        m.workloads
            .iter()
            .filter(|w| w.priority == prio)
            .filter_map(|w| m.authority_of(w))
            .collect()
    };
    for p in &cx.spec.priorities {
        let mine = of(&p.name.value);
        if mine.is_empty() {
            continue;
        }
        for target in &p.preempts {
            for w in m.workloads.iter().filter(|w| w.priority == target.value) {
                let Some(a) = m.authority_of(w) else { continue };
                if mine.contains(&a) {
                    continue;
                }
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "priority `{}` preempts `{}`, but {} `{}` runs under {a} and no class of `{}` does: preemption cannot cross schedulers",
                            p.name.value,
                            target.value,
                            w.kind.as_str(),
                            w.name,
                            p.name.value
                        ),
                    )
                    .at(target.span, "preempts across schedulers")
                    .with_related(w.span, format!("runs under {a}"))
                    .with_help("run both classes under one scheduler, or remove this entry from `preempts`"),
                );
            }
        }
    }
}
