//! GP015: an inference or dev footprint that no allowed profile or GPU can hold; a
//! training rank's `memory` that no acceptable GPU, or a GPU its `models` names, holds.
use super::prelude::*;
use crate::model::{Cluster, GpuModel, Isolation, Workload};
use crate::spec::{WorkloadDecl, WorkloadKind};
use crate::units::Bytes;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP015",
    name: "footprint-too-large",
    severity: Severity::Error,
    summary: "an inference or dev memory footprint is larger than every allowed MIG profile or GPU; a training rank's `memory` larger than every acceptable GPU or one its `models` names",
    docs: r#"
**What.** A replica's `memory` (plus the `mig headroom`) is larger than what its isolation
can give on every acceptable GPU model present in the cluster: the usable memory of the
largest allowed MIG profile (as `nvidia-smi mig -lgip` reports it, e.g. 39.50 GiB for an
H100 `3g.40gb`, not 40), or the GPU's memory times `gpus` for whole-GPU replicas.

A training class's `memory` is what one rank (one GPU of the gang) needs: the class is
planned only on GPU models whose memory holds it (the GPU's whole memory as
`nvidia-smi` reports it, e.g. 79.65 GiB for an H100 80GB; no MIG headroom, a rank has a
whole GPU). The rule fires when no GPU model on the cluster's nodes that the class
accepts holds it, and for each model its `models` names that cannot: a list that
contradicts the class's own `memory`.

**Why.** Such a replica can never be placed; better to learn it in review than from a
pending pod. A training model named in `models` that cannot hold a rank would never be
used: the list says one thing and `memory` another.

**Example.**
```text
inference "llama-70b-fp16" team="apps" priority="serving" {
    memory "140GiB"
    isolation "mig"
    models "h100-sxm5-80gb"
}
```

```text
training "pretrain" team="apps" priority="batch" {
    gang gpus=16
    memory "60GiB"
    models "a100-sxm4-40gb" "a100-sxm4-80gb"   // a 40 GB A100 holds no rank
}
```

**Fix.** Use whole GPUs (`isolation "whole-gpu"` with `gpus 2`), a larger model
(`h200-sxm-141gb`), quantise the model, or allow larger profiles in `mig allow`. For
training: drop the models that cannot hold a rank from `models`, accept a larger one, or
shard the model over more GPUs so that a rank needs less.
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
        let Some(decl) = decls.get(w.name.as_str()) else {
            continue;
        };
        let Some(mem) = decl.memory.as_ref() else {
            continue;
        };
        if w.kind == WorkloadKind::Training {
            check_training(m, decl, mem, out);
            continue;
        }
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

/// A training rank's `memory` against the GPU models: each model its `models` names must
/// hold it; without such a contradiction, some model on the cluster's nodes that it
/// accepts must.
fn check_training(m: &Cluster, d: &WorkloadDecl, mem: &Spanned<Bytes>, out: &mut Diagnostics) {
    let need = mem.value;
    let mut listed: Vec<&GpuModel> = Vec::new();
    for name in &d.models {
        let Some(md) = m.resolve_model(&name.value) else {
            continue; // GP006
        };
        listed.push(md);
        if md.memory.0 < need.0 {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "training `{}` needs {need} per GPU, but `{}` in its `models` has {}",
                        d.name.value,
                        md.name,
                        gib(md.memory)
                    ),
                )
                .at(name.span, format!("{} per GPU", gib(md.memory)))
                .with_related(mem.span, "one rank's memory")
                .with_help(
                    "drop it from `models`, or shard the model over more GPUs so that a rank needs less",
                ),
            );
        }
    }
    if listed.iter().any(|md| md.memory.0 < need.0) {
        return;
    }
    let present = m
        .models
        .values()
        .filter(|md| m.model_stats.contains_key(&md.name))
        .filter(|md| d.models.is_empty() || listed.iter().any(|l| l.name == md.name));
    let Some(best) = present.max_by(|a, b| a.memory.cmp(&b.memory).then(b.name.cmp(&a.name)))
    else {
        return; // no node has a model it accepts: nothing to compare with
    };
    if best.memory.0 < need.0 {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "training `{}` needs {need} per GPU, more than any GPU it may use has",
                    d.name.value
                ),
            )
            .at(
                mem.span,
                format!("the largest, `{}`, has {}", best.name, gib(best.memory)),
            )
            .with_help(
                "accept a GPU model with more memory, or shard the model over more GPUs so that a rank needs less",
            ),
        );
    }
}

/// Memory in GiB with two decimals (`79.65 GiB`), as the catalog's totals are not round.
fn gib(b: Bytes) -> String {
    format!("{:.2} GiB", b.gib())
}
