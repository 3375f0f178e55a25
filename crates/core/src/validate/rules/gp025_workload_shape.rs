//! GP025: an inference or dev class missing what sizes it, or with contradictory settings.
use super::prelude::*;
use crate::spec::{WorkloadDecl, WorkloadKind};

pub(crate) static RULE: Rule = Rule {
    code: "GP025",
    name: "workload-shape",
    severity: Severity::Error,
    summary: "zero replicas, an inference class without memory/profile/gpus, a dev class without `share`, or contradictory sharing settings",
    docs: r#"
**What.** `replicas=0`; an `inference` class with neither `memory` nor `profile` (MIG) nor
`gpus` (whole GPU); `profile` or `min-compute` with an isolation other than `mig`; `gpus`
above 1 with a sharing isolation; `gpus 0` (a CPU-only replica) without `requests`;
`fraction` outside 0%..100% (exclusive), or combined with `gpus` or MIG (with
`isolation "mps"` the fraction is carried by MPS, else by time-slicing); a `dev` class without `share`, or `per-gpu=0`;
training-only settings on other kinds and vice versa are rejected by the language itself.

**Why.** The planner sizes replicas from these values; without them it would have to guess.

**Example.**
```text
inference "chat" team="apps" priority="serving" replicas=8 {
    isolation "mig"
}
```

**Fix.** Give the footprint (`memory "18GiB"`) or an explicit `profile "2g.20gb"`.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for d in &cx.spec.workloads {
        let name = format!("{} `{}`", d.kind.as_str(), d.name.value);
        if let Some(r) = d.replicas.as_ref().filter(|r| r.value == 0) {
            out.push(
                Diagnostic::error(RULE.code, format!("{name} has 0 replicas"))
                    .at(r.span, "zero")
                    .with_help("remove the class, or give it at least one replica"),
            );
        }
        match d.kind {
            WorkloadKind::Inference => check_inference(d, &name, out),
            WorkloadKind::Dev => check_dev(d, &name, out),
            WorkloadKind::Training => {}
        }
    }
}

/// An inference class: its size, its isolation's settings, its GPUs and its share.
fn check_inference(d: &WorkloadDecl, name: &str, out: &mut Diagnostics) {
    let iso = d
        .isolation
        .as_ref()
        .map(|i| i.value.as_str())
        .unwrap_or("whole-gpu");
    if !d.memory_given
        && d.profile.is_none()
        && d.gpus_per_replica.is_none()
        && d.fraction.is_none()
    {
        out.push(
            Diagnostic::error(RULE.code, format!("{name} says nothing about its size"))
                .at(d.span, "needs `memory`, `profile` or `gpus`")
                .with_help("give the GPU memory one replica needs, e.g. memory \"18GiB\""),
        );
    }
    if iso != "mig" {
        mig_only_settings(d, name, iso, out);
    }
    gpus_per_replica(d, name, iso, out);
    if let Some(f) = &d.fraction {
        if let Some(p) = fraction_problem(d, f.value, iso) {
            out.push(
                Diagnostic::error(RULE.code, format!("{name}: {p}"))
                    .at(f.span, "GPU share")
                    .with_help(
                        "write e.g. fraction \"50%\" (isolation \"mps\" to share by MPS); \
                         use gpus N for whole GPUs, or isolation \"mig\" with memory for MIG",
                    ),
            );
        }
    }
}

/// `profile` and `min-compute` with an isolation `iso` other than MIG.
fn mig_only_settings(d: &WorkloadDecl, name: &str, iso: &str, out: &mut Diagnostics) {
    for (what, span) in [
        ("profile", d.profile.as_ref().map(|p| p.span)),
        ("min-compute", d.min_compute.as_ref().map(|p| p.span)),
    ] {
        if let Some(span) = span {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("{name} sets `{what}` but its isolation is `{iso}`"),
                )
                .at(span, "only meaningful with MIG")
                .with_help("add isolation \"mig\", or remove it"),
            );
        }
    }
}

/// `gpus`: several GPUs need whole GPUs; none needs CPU `requests`.
fn gpus_per_replica(d: &WorkloadDecl, name: &str, iso: &str, out: &mut Diagnostics) {
    let Some(g) = &d.gpus_per_replica else {
        return;
    };
    if g.value != 1 && iso != "whole-gpu" {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{name} asks for {} GPUs per replica with isolation `{iso}`",
                    g.value
                ),
            )
            .at(g.span, "whole GPUs per replica")
            .with_help("multi-GPU replicas need isolation \"whole-gpu\""),
        );
    }
    let requests = d.cpu_request.is_some() || d.memory_request.is_some();
    if g.value == 0 && !requests {
        out.push(
            Diagnostic::error(RULE.code, format!("{name} has gpus 0"))
                .at(g.span, "zero")
                .with_help(
                    "use at least 1, or give a CPU-only replica its \
                     `requests cpu=... memory=...`",
                ),
        );
    }
}

/// What is wrong with a `fraction` of `value` under isolation `iso`, if anything.
fn fraction_problem(d: &WorkloadDecl, value: f64, iso: &str) -> Option<String> {
    if value <= 0.0 || value >= 1.0 {
        Some("a share of one GPU is above 0% and below 100%".to_string())
    } else if d.gpus_per_replica.is_some() {
        Some("`fraction` and `gpus` both size the replica".to_string())
    } else if iso == "mig" {
        Some(format!(
            "`fraction` cannot be combined with isolation `{iso}`"
        ))
    } else {
        None
    }
}

/// A dev class: how its sessions share GPUs.
fn check_dev(d: &WorkloadDecl, name: &str, out: &mut Diagnostics) {
    if d.share.is_none() {
        out.push(
            Diagnostic::error(RULE.code, format!("{name} has no `share`"))
                .at(d.span, "how do sessions share GPUs?")
                .with_help("add e.g. share \"time-slice\" per-gpu=4"),
        );
    }
    if let Some(p) = d.per_gpu.as_ref().filter(|p| p.value == 0) {
        out.push(
            Diagnostic::error(RULE.code, format!("{name} shares 0 sessions per GPU"))
                .at(p.span, "zero")
                .with_help("use per-gpu=1 or more"),
        );
    }
}
