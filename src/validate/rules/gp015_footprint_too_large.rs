//! GP015: an inference or dev footprint that no allowed profile or GPU can hold.
use super::prelude::*;
use crate::model::{Cluster, GpuModel, Isolation, Workload};
use crate::units::Bytes;

pub static RULE: Rule = Rule {
    code: "GP015",
    name: "footprint-too-large",
    severity: Severity::Error,
    summary: "an inference or dev memory footprint is larger than every allowed MIG profile or GPU",
    docs: r#"
**What.** A replica's `memory` (plus the `mig headroom`) is larger than what its isolation
can give on every acceptable GPU model present in the cluster: the usable memory of the
largest allowed MIG profile (as `nvidia-smi mig -lgip` reports it, e.g. 39.50 GiB for an
H100 `3g.40gb`, not 40), or the GPU's memory times `gpus` for whole-GPU replicas.

**Why.** Such a replica can never be placed; better to learn it in review than from a
pending pod.

**Example.**
```text
inference "llama-70b-fp16" team="apps" priority="serving" {
    memory "140GiB"
    isolation "mig"
    models "h100-sxm5-80gb"
}
```

**Fix.** Use whole GPUs (`isolation "whole-gpu"` with `gpus 2`), a larger model
(`h200-sxm-141gb`), quantise the model, or allow larger profiles in `mig allow`.
"#,
    check: Some(check),
};

/// Models present on at least one node and acceptable to the workload.
pub(crate) fn candidate_models<'a>(m: &'a Cluster, w: &Workload) -> Vec<&'a GpuModel> {
    m.models
        .values()
        .filter(|md| w.accepts(&md.name) && m.model_stats.contains_key(&md.name))
        .collect()
}

fn largest_profile(m: &Cluster, md: &GpuModel) -> Option<(String, f64)> {
    let spec = md.mig?;
    spec.profiles
        .iter()
        .filter(|p| {
            m.mig.allow.is_empty()
                || m.mig
                    .allow
                    .iter()
                    .any(|a| md.mig_profile(a).is_some_and(|q| q.name == p.name))
        })
        .map(|p| (md.profile_name(p.name).to_string(), p.memory_gib))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for (w, decl) in m.workloads.iter().filter_map(|w| {
        cx.spec
            .workloads
            .iter()
            .find(|d| d.name.value == w.name)
            .map(|d| (w, d))
    }) {
        let Some(mem) = &decl.memory else { continue };
        let models = candidate_models(m, w);
        if models.is_empty() {
            continue;
        }
        let iso = w.isolation.or(w.share).unwrap_or(Isolation::WholeGpu);
        // The headroom sizes MIG profiles; whole and shared GPUs are checked as written.
        let headroom = if iso == Isolation::Mig {
            m.mig.headroom
        } else {
            0.0
        };
        let need_gib = mem.value.gib() * (1.0 + headroom);
        let (best, what) = match iso {
            Isolation::Mig => {
                let best = models
                    .iter()
                    .filter_map(|md| {
                        largest_profile(m, md).map(|(p, g)| (g, format!("{p} on {}", md.name)))
                    })
                    .max_by(|a, b| a.0.total_cmp(&b.0));
                match best {
                    Some(b) => (
                        b.0,
                        format!(
                            "the largest allowed MIG profile is {} with {:.2} GiB usable",
                            b.1, b.0
                        ),
                    ),
                    None => continue, // no MIG model: GP019
                }
            }
            Isolation::WholeGpu => {
                let per = w.gpus_per_replica.max(1) as f64;
                let b = models
                    .iter()
                    .map(|md| (md.memory.gib() * per, md.name.clone()))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .unwrap_or((0.0, String::new()));
                (
                    b.0,
                    format!(
                        "{} x {} gives {:.1} GiB",
                        w.gpus_per_replica.max(1),
                        b.1,
                        b.0
                    ),
                )
            }
            Isolation::TimeSlice | Isolation::Mps => {
                let b = models
                    .iter()
                    .map(|md| (md.memory.gib(), md.name.clone()))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .unwrap_or((0.0, String::new()));
                (
                    b.0,
                    format!("the largest acceptable GPU, {}, has {:.1} GiB", b.1, b.0),
                )
            }
        };
        if need_gib > best + 1e-9 {
            let headroom = if m.mig.headroom > 0.0 {
                format!(
                    " ({} + {:.0}% headroom = {:.1} GiB)",
                    mem.value,
                    m.mig.headroom * 100.0,
                    need_gib
                )
            } else {
                String::new()
            };
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("{} `{}` needs {}{headroom} per replica, more than it can get", w.kind.as_str(), w.name, Bytes(mem.value.0)),
                )
                .at(mem.span, what)
                .with_help(match iso {
                    Isolation::Mig => "use whole GPUs (isolation \"whole-gpu\", `gpus N`), a GPU model with more memory, or allow larger profiles".to_string(),
                    _ => "give each replica more GPUs (`gpus N`) or accept a GPU model with more memory".to_string(),
                }),
            );
        }
    }
}
