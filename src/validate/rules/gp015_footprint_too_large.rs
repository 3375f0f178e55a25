//! GP015: an inference or dev footprint that no allowed profile or GPU can hold.
use super::prelude::*;
use crate::model::{Cluster, GpuModel, Isolation, Workload};
use crate::spec::WorkloadDecl;
use crate::units::Bytes;
use std::collections::BTreeMap;

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
        .map(|p| {
            let gib = crate::model::sizing::usable_gib(m, md, p);
            (md.profile_name(p.name).to_string(), gib)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    // The first declaration of each name, which the model's workload comes from.
    let mut decls: BTreeMap<&str, &WorkloadDecl> = BTreeMap::new();
    for d in &cx.spec.workloads {
        decls.entry(d.name.value.as_str()).or_insert(d);
    }
    for w in &m.workloads {
        let Some(mem) = decls.get(w.name.as_str()).and_then(|d| d.memory.as_ref()) else {
            continue;
        };
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
        let Some((best, what)) = most_memory(m, w, &models, iso) else {
            continue; // no MIG model: GP019
        };
        if need_gib > best + 1e-9 {
            out.push(too_large(m, w, mem, need_gib, iso, what));
        }
    }
}

/// The most memory one replica of `w` can get under isolation `iso` from `models`, in
/// GiB, and how, for the message; `None` for MIG without a MIG-capable model.
fn most_memory(
    m: &Cluster,
    w: &Workload,
    models: &[&GpuModel],
    iso: Isolation,
) -> Option<(f64, String)> {
    // The most memory from `per` GPUs of one acceptable model, and that model.
    let largest_gpu = |per: f64| {
        models
            .iter()
            .map(|md| (md.memory.gib() * per, md.name.clone()))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap_or((0.0, String::new()))
    };
    Some(match iso {
        Isolation::Mig => {
            let b = models
                .iter()
                .filter_map(|md| {
                    largest_profile(m, md).map(|(p, g)| (g, format!("{p} on {}", md.name)))
                })
                .max_by(|a, b| a.0.total_cmp(&b.0))?;
            let what = format!(
                "the largest allowed MIG profile is {} with {:.2} GiB usable",
                b.1, b.0
            );
            (b.0, what)
        }
        Isolation::WholeGpu => {
            let per = w.gpus_per_replica.max(1);
            let (gib, name) = largest_gpu(per as f64);
            (gib, format!("{per} x {name} gives {gib:.1} GiB"))
        }
        Isolation::TimeSlice | Isolation::Mps => {
            let (gib, name) = largest_gpu(1.0);
            let what = format!("the largest acceptable GPU, {name}, has {gib:.1} GiB");
            (gib, what)
        }
    })
}

/// The diagnostic for a replica needing `need_gib` (memory `mem` plus headroom); `what`
/// says what it can get at most.
fn too_large(
    m: &Cluster,
    w: &Workload,
    mem: &Spanned<Bytes>,
    need_gib: f64,
    iso: Isolation,
    what: String,
) -> Diagnostic {
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
    Diagnostic::error(
        RULE.code,
        format!("{} `{}` needs {}{headroom} per replica, more than it can get", w.kind.as_str(), w.name, Bytes(mem.value.0)),
    )
    .at(mem.span, what)
    .with_help(match iso {
        Isolation::Mig => "use whole GPUs (isolation \"whole-gpu\", `gpus N`), a GPU model with more memory, or allow larger profiles".to_string(),
        _ => "give each replica more GPUs (`gpus N`) or accept a GPU model with more memory".to_string(),
    })
}
