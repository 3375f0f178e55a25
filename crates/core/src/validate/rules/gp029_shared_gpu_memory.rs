//! GP029: replicas sharing one GPU whose footprints do not fit its memory together.
use super::prelude::*;
use crate::model::Isolation;
use crate::units::Bytes;

pub(crate) static RULE: Rule = Rule {
    code: "GP029",
    name: "shared-gpu-memory",
    severity: Severity::Warning,
    summary: "time-sliced replicas on one GPU need more memory together than it has, or an MPS replica more than its 1/N share",
    docs: r#"
**What.** A class shares GPUs (`share "time-slice"`/`"mps"` with `per-gpu=N`, or
`isolation "time-slice"`/`"mps"`) and, on one of its acceptable GPU models present in
the cluster:

* time-slicing: the replicas the planner puts on one GPU, `min(per-gpu, replicas)`,
  times the `memory` footprint exceed the GPU's memory;
* MPS: one replica's footprint exceeds `memory / per-gpu`, the share the device plugin's
  MPS daemon gives each client (`../shared/reference/k8s-nvidia.md`).

A replica larger than the whole GPU is `GP015`, not this rule.

**Why.** Time-slicing has no memory isolation: the replicas run in turn but their
allocations live side by side, so together they run out of memory at run time, one
CUDA out-of-memory error at a time. MPS on Kubernetes caps each client at 1/N of the
memory, so an oversized replica fails at start. It is a warning because footprints are
often upper bounds.

**Example.**
```text
dev "notebooks" team="t" priority="low" replicas=16 {
    share "time-slice" per-gpu=8
    memory "16GiB"              // 8 x 16 GiB = 128 GiB on an 80 GiB H100
    models "h100-sxm5-80gb"
}
```

**Fix.** Lower `per-gpu` to what fits (here 4: 79.65 GiB usable), lower the footprint, or use MIG
(`share "mig"`), which gives each replica its own memory.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in &m.workloads {
        let iso = w.isolation.or(w.share);
        if !matches!(iso, Some(Isolation::TimeSlice | Isolation::Mps)) {
            continue;
        }
        let (Some(mem), Some(decl)) = (w.memory, cx.workload_decl(&w.name)) else {
            continue;
        };
        let per_gpu = w.per_gpu.unwrap_or(1).max(1);
        let mps = iso == Some(Isolation::Mps);
        // Models a replica fits at all (larger footprints are GP015).
        let over: Vec<(String, String)> = super::gp015_footprint_too_large::candidate_models(m, w)
            .into_iter()
            .filter(|md| mem.0 <= md.memory.0)
            .filter_map(|md| {
                if mps {
                    let share = md.memory.0 / per_gpu as u64;
                    (mem.0 > share).then(|| {
                        (
                            md.name.clone(),
                            format!("1/{per_gpu} of {} is {}", md.memory, Bytes(share)),
                        )
                    })
                } else {
                    let n = per_gpu.min(w.replicas.max(1)) as u64;
                    (mem.0.saturating_mul(n) > md.memory.0).then(|| {
                        (
                            md.name.clone(),
                            format!(
                                "{n} x {} = {} on {}",
                                Bytes(mem.0),
                                Bytes(mem.0.saturating_mul(n)),
                                md.memory
                            ),
                        )
                    })
                }
            })
            .collect();
        let Some((model, detail)) = over.first() else {
            continue;
        };
        let span = decl.memory.as_ref().map(|x| x.span).unwrap_or(decl.span);
        let mut d = Diagnostic::warning(
            RULE.code,
            if mps {
                format!(
                    "{} `{}`: an MPS replica needs {}, more than its share of a {model} GPU ({detail})",
                    w.kind.as_str(),
                    w.name,
                    Bytes(mem.0)
                )
            } else {
                format!(
                    "{} `{}`: time-sliced replicas on one {model} GPU need more memory than it has ({detail}); time-slicing has no memory isolation",
                    w.kind.as_str(),
                    w.name
                )
            },
        )
        .at(span, "footprint per replica");
        if let Some(p) = &decl.per_gpu {
            d = d.with_related(p.span, "replicas per GPU");
        }
        let fit = |md_mem: u64| (md_mem / mem.0.max(1)).max(1);
        let most = m.models.get(model).map(|md| fit(md.memory.0)).unwrap_or(1);
        out.push(d.with_help(format!(
            "at most {most} such replicas fit one {model} GPU: lower per-gpu, the footprint, or use MIG instances"
        )));
    }
}
