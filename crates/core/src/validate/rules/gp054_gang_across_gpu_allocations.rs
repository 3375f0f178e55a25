//! GP054: a multi-pod gang class that may land on DRA and device-plugin nodes.
use super::prelude::*;
use crate::model::WorkloadKind;

pub(crate) static RULE: Rule = Rule {
    code: "GP054",
    name: "gang-across-gpu-allocations",
    severity: Severity::Error,
    summary: "a training class whose multi-pod gangs may land on both DRA and device-plugin nodes",
    docs: r#"
**What.** A training class whose gangs have several pods can be placed on nodes that
hand out GPUs through DRA (`gpu-allocation "dra"`) and on nodes that use NVIDIA's device
plugin: its scheduler owns both kinds and it accepts GPU models on both.

**Why.** All pods of a gang come from one pod template (one Job, one Volcano task), and
a template asks for GPUs one way: either an extended resource (`nvidia.com/gpu: 4`),
which only the device plugin advertises, or a resource claim, which only the DRA driver
serves. A gang the planner spreads over both kinds of nodes could not be written as one
object. Replica classes (inference, dev) are not affected: each pool gets its own
object.

**Example.**
```text
cluster "c" {
    scheduler "kueue"
    kubernetes version="1.34"
}
pool "gb-dra" mode="training" nodes="gb-[01-18]" gpu-allocation="dra"
pool "gb-plugin" mode="training" nodes="gb-[19-36]"
training "pretrain" team="t" priority="p" { gang gpus=64 gpus-per-node=4; }
```

**Fix.** Declare the same `gpu-allocation` on every pool the class can use, or narrow
the class's `models` to GPUs that sit on nodes of one kind.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.dra_declared() {
        return;
    }
    for w in &m.workloads {
        if w.kind != WorkloadKind::Training || m.gang_pods(w) < 2 {
            continue;
        }
        if m.class_allocations(w).len() < 2 {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "training `{}` runs gangs of {} pods and may land on DRA and on device-plugin nodes: one pod template cannot ask for GPUs both ways",
                    w.name,
                    m.gang_pods(w)
                ),
            )
            .at(decl.span, "gangs across GPU allocation modes")
            .with_help("declare the same `gpu-allocation` on every pool the class can use, or narrow its `models` to GPUs on nodes of one kind"),
        );
    }
}
