//! GP035: a multi-pod gang under plain kube-scheduler.
use super::prelude::*;
use crate::model::{Authority, ClassAuthority, WorkloadKind};

pub(crate) static RULE: Rule = Rule {
    code: "GP035",
    name: "gang-without-gang-admission",
    severity: Severity::Error,
    summary: "a training gang of several pods can only run where plain `kubernetes` schedules",
    docs: r#"
**What.** A training class whose gang spans several pods (nodes) is pinned to
`scheduler="kubernetes"`, or every node with a GPU model it accepts is owned by plain
`kubernetes`.

**Why.** kube-scheduler places pods one at a time: half a gang can start and hold its
GPUs while waiting forever for the other half. Gangs need admission that is
all-or-nothing: Kueue (one Workload for all pod sets), Volcano (PodGroup `minMember`),
KAI Scheduler (PodGroup `minMember`) or Slurm (one job).

**Example.**
```text
training "llm" team="t" priority="high" scheduler="kubernetes" {
    gang gpus=32 gpus-per-node=8     // 4 pods
}
```

**Fix.** Run the class under `kueue`, `volcano`, `kai` or `slurm` (`scheduler="kueue"`), or own
some of its nodes with such a scheduler (`pool ... scheduler="volcano"`).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.authorities_declared() {
        return;
    }
    for w in m
        .workloads
        .iter()
        .filter(|w| w.kind == WorkloadKind::Training)
    {
        let stuck = match m.class_authority(w) {
            ClassAuthority::Resolved(Authority::Kubernetes) => true,
            ClassAuthority::None => m
                .candidate_authorities(w)
                .iter()
                .all(|a| *a == Authority::Kubernetes),
            _ => false,
        };
        if !stuck || m.candidate_authorities(w).is_empty() && w.scheduler.is_none() {
            continue;
        }
        let pods = m.gang_pods(w);
        if pods <= 1 {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.scheduler.as_ref().map(|s| s.span).unwrap_or(decl.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "training `{}` is a gang of {pods} pods, but only plain kube-scheduler can run it, which has no gang admission",
                    w.name
                ),
            )
            .at(span, "no all-or-nothing admission here")
            .with_help("run it under a scheduler with gang admission: scheduler=\"kueue\", \"volcano\", \"kai\" or \"slurm\""),
        );
    }
}
