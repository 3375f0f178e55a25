//! GP045: a class that asks for spot capacity but may not be interrupted, or that can
//! only run on spot nodes it may not use.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP045",
    name: "spot-class",
    severity: Severity::Error,
    summary: "a class asks for spot capacity but may not be interrupted, or every node it accepts is spot capacity it may not use",
    docs: r#"
**What.** Only classes that may be interrupted land on spot nodes: training that is
`preemptible` and `checkpoint`s, inference that is `preemptible` and not at the
cluster's highest priority; never dev sessions. An error when a class says `spot` (or
`spot #true`) but is not one of them, or when it is not and every node it could use is
spot (it could never be placed). `spot straddle=#true` lets a gang mix spot and other
nodes; without it a gang is all spot or all not.

**Why.** Spot capacity is taken back with little notice: a job that does not checkpoint
loses the whole run, user-facing inference at top priority drops requests.

**Example.**
```text
training "llm" team="t" priority="p" { gang gpus=16; spot; }   // neither preemptible nor checkpointing
```

**Fix.** Make the class `preemptible` and `checkpoint every="30m"`, or remove `spot`; give
a class that may not be interrupted some on-demand or reserved nodes.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in &m.workloads {
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let fit = m.spot_fit(w);
        let Some(why) = fit.reason() else {
            continue;
        };
        if let Some(s) = decl.spot.as_ref().filter(|s| s.value) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "{} `{}` asks for spot capacity, but {why}",
                        w.kind.as_str(),
                        w.name
                    ),
                )
                .at(s.span, "may not be interrupted")
                .with_help(hint(w.kind)),
            );
            continue;
        }
        // Only-spot candidates: nothing to scan without spot nodes.
        if !m.has_spot() {
            continue;
        }
        let nodes = super::gp042_cuda_driver::candidates(m, w);
        if !nodes.is_empty() && nodes.iter().all(|(n, _)| m.node_spot(*n)) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "{} `{}` may only run on spot nodes, but {why}: it can never be placed",
                        w.kind.as_str(),
                        w.name
                    ),
                )
                .at(decl.span, "every node it accepts is spot")
                .with_help(format!(
                    "give it on-demand or reserved nodes of a model it accepts, or {}",
                    hint(w.kind)
                )),
            );
        }
    }
}

fn hint(kind: crate::model::WorkloadKind) -> &'static str {
    match kind {
        crate::model::WorkloadKind::Training => {
            "make it `preemptible` with `checkpoint every=\"30m\"`, or remove `spot`"
        }
        crate::model::WorkloadKind::Inference => {
            "make it `preemptible` below the highest priority, or remove `spot`"
        }
        crate::model::WorkloadKind::Dev => "dev sessions never run on spot: remove `spot`",
    }
}
