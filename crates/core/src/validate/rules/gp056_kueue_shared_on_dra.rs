//! GP056: a class under Kueue sharing GPUs that may land on DRA nodes.
use super::prelude::*;
use crate::model::sizing::{self, Usage};
use crate::model::{Allocation, Authority};

pub(crate) static RULE: Rule = Rule {
    code: "GP056",
    name: "kueue-shared-gpus-on-dra",
    severity: Severity::Error,
    summary: "a class under Kueue shares GPUs (time-slicing, MPS, a fraction) on nodes that hand out GPUs through DRA",
    docs: r#"
**What.** A class that shares GPUs (`share`/`isolation` `time-slice` or `mps`, or a
`fraction`) runs under Kueue and may land on nodes with `gpu-allocation "dra"`.

**Why.** Under DRA a GPU is shared by pods that reference one ResourceClaim (with the
driver's time-slicing or MPS configuration); a ResourceClaimTemplate gives every pod a
device of its own. Kueue accounts DRA devices only through ResourceClaimTemplates: its
documentation (concepts/dynamic_resource_allocation, Kueue 0.14 to 0.19) lists direct
`ResourceClaim` references and GPU time-slicing and MPS as unsupported, and such
workloads are never admitted. The plan's shared replicas would wait forever.

**Example.**
```text
cluster "c" {
    scheduler "kueue"
    kubernetes version="1.34"
    gpu-allocation "dra"
}
dev "notebooks" team="t" priority="p" replicas=8 { share "mps" per-gpu=4; }
```

**Fix.** Keep the shared classes on device-plugin nodes (a pool with
`gpu-allocation="device-plugin"` and the class's `models` there), run them under
`kubernetes` or `volcano`, or give each replica a MIG instance (`share "mig"`).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.dra_declared() {
        return;
    }
    for w in &m.workloads {
        if m.authority_of(w) != Some(Authority::Kueue) {
            continue;
        }
        let shares = match sizing::usage(w, 1) {
            Usage::Shared { .. } => true,
            Usage::Packed { milli } => milli % 1000 != 0,
            _ => false,
        };
        if !shares || !m.class_allocations(w).contains(&Allocation::Dra) {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl
            .share
            .as_ref()
            .or(decl.isolation.as_ref())
            .map(|s| s.span)
            .or(decl.fraction.as_ref().map(|f| f.span))
            .unwrap_or(decl.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} `{}` shares GPUs under Kueue and may land on DRA nodes: a shared GPU is one ResourceClaim referenced by several pods, which Kueue does not admit",
                    w.kind.as_str(),
                    w.name
                ),
            )
            .at(span, "shared GPUs under Kueue on DRA")
            .with_help("keep the class on device-plugin nodes (its `models`, or `gpu-allocation=\"device-plugin\"` on its pools), run it under `kubernetes` or `volcano`, or use MIG (`share \"mig\"`)"),
        );
    }
}
