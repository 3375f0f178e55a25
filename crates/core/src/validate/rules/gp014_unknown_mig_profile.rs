//! GP014: a MIG profile name that the GPU model does not have.
use super::prelude::*;
use crate::model::GpuModel;
use std::collections::BTreeSet;

pub(crate) static RULE: Rule = Rule {
    code: "GP014",
    name: "unknown-mig-profile",
    severity: Severity::Error,
    summary: "a MIG profile that does not exist for the GPU model (or its driver)",
    docs: r#"
**What.** A profile in a `mig layout`, `mig allow`, an inference `profile` or a
`gpu-model`'s `mig-name` does not exist for the GPU model(s) concerned. Profile names
carry the model's memory size: `3g.40gb` exists on an A100 80GB and an H100 80GB, but an
H100 NVL calls the same shape `3g.47gb` and an H200 `3g.71gb`.

**Why.** mig-parted and the device plugin reject unknown names on the node, and resource
names such as `nvidia.com/mig-3g.40gb` would never be advertised.

**Example.**
```text
mig {
    layout "3g.47gb" "3g.47gb" nodes="h100-01"   // an H100 80GB
}
```

Driver versions: when a `gpu-model` declares the driver its nodes run
(`driver="520.61.05"`), a profile named for that model in a layout, `mig allow` or an
inference `profile` must exist in that driver branch: `1g.10gb` on an A100 40GB needs
R525, `1g.6gb+me` on an A30 R470 and `2g.12gb+me` R525; and a driver older than the
model's first MIG branch (A100 R450, A30 R460, H100 R525, H200 R550, B200 R570) has no
profile at all when MIG is used on that model (right-sizing and the packing skip such
profiles too). Without `driver`, versions are checked on
the node: `mig/<node>.sh` checks the branch and that `nvidia-smi mig -lgip` offers every
planned profile before touching a GPU.

**Fix.** Use the model's own names (`docs/catalog.md`). When a driver advertises a
different name (driver 535 showing `3g.39gb`), pin it:
`gpu-model "a100-sxm4-80gb" { mig-name "3g.40gb" driver="3g.39gb" }`. For a profile
newer than the driver, upgrade the driver (and `driver=`) or use another profile.
"#,
    check: Some(check),
};

fn unknown(name: &Spanned<String>, model: &GpuModel, ctx: &str, out: &mut Diagnostics) {
    let names = model.profile_names();
    out.push(
        Diagnostic::error(
            RULE.code,
            format!(
                "`{}` is not a MIG profile of {} ({ctx})",
                name.value, model.name
            ),
        )
        .at(name.span, "unknown profile")
        .with_help(crate::suggest::hint(
            &name.value,
            names.iter().copied(),
            &format!("{} profile", model.name),
        )),
    );
}

/// The profile names written for `model`: layouts covering its GPUs, `mig allow` entries
/// it has, explicit inference profiles of classes that accept it.
fn names_for<'a>(cx: &'a Ctx, model: &GpuModel) -> Vec<&'a Spanned<String>> {
    let m = cx.model;
    let mut out: Vec<&Spanned<String>> = Vec::new();
    for (l, decl) in m.mig.layouts.iter().zip(&cx.spec.mig.layouts) {
        let on_model = l.nodes.iter().any(|&n| {
            m.nodes[n].gpus.iter().any(|g| {
                (l.gpus.is_empty() || l.gpus.contains(&g.index))
                    && g.model.as_deref() == Some(model.name.as_str())
            })
        });
        if on_model {
            out.extend(decl.profiles.iter());
        }
    }
    out.extend(
        cx.spec
            .mig
            .allow
            .iter()
            .filter(|a| model.mig_profile(&a.value).is_some()),
    );
    for w in &cx.spec.workloads {
        let accepts = cx
            .workload(&w.name.value)
            .is_some_and(|x| x.accepts(&model.name));
        if let Some(p) = w.profile.as_ref().filter(|_| accepts) {
            out.push(p);
        }
    }
    out
}

/// Whether MIG is used on `model`: a layout or a MIG pool on its nodes, or a MIG class
/// that accepts it.
fn mig_used(cx: &Ctx, model: &GpuModel) -> bool {
    let m = cx.model;
    let on_model = |n: usize| {
        m.nodes[n]
            .gpus
            .iter()
            .any(|g| g.model.as_deref() == Some(model.name.as_str()))
    };
    m.mig
        .layouts
        .iter()
        .any(|l| l.nodes.iter().any(|&n| on_model(n)))
        || m.pools
            .iter()
            .any(|p| p.mode == "mig" && p.nodes.iter().any(|&n| on_model(n)))
        || m.workloads.iter().any(|w| {
            (w.isolation == Some(crate::model::Isolation::Mig)
                || w.share == Some(crate::model::Isolation::Mig))
                && w.accepts(&model.name)
        })
}

/// Profiles newer than the driver a `gpu-model` declares.
fn check_driver(cx: &Ctx, out: &mut Diagnostics) {
    for d in &cx.spec.gpu_models {
        let (Some(drv), Some(model)) = (&d.driver, cx.model.models.get(&d.name.value)) else {
            continue;
        };
        let Some(spec) = model.mig else { continue };
        let branch = drv.value.first().copied().unwrap_or(0);
        let version: Vec<String> = drv.value.iter().map(u32::to_string).collect();
        let version = version.join(".");
        if branch < spec.min_driver_branch() {
            if mig_used(cx, model) {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "driver {version} has no MIG profiles on {}: MIG needs {} or newer",
                            model.name, spec.min_driver
                        ),
                    )
                    .at(drv.span, "driver too old for MIG")
                    .with_help(format!(
                        "upgrade the nodes to {} or newer (and `driver=`), or do not use MIG on {}",
                        spec.min_driver, model.name
                    )),
                );
            }
            continue;
        }
        let mut seen = BTreeSet::new();
        for name in names_for(cx, model) {
            let Some(p) = model.mig_profile(&name.value) else {
                continue; // unknown names are reported above
            };
            let need = crate::catalog::profile_min_driver(spec, p.name);
            if branch < need && seen.insert(name.span) {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "`{}` does not exist on {} with driver {version}: it needs R{need} or newer",
                            name.value, model.name
                        ),
                    )
                    .at(name.span, format!("needs R{need}"))
                    .with_related(drv.span, "declared driver")
                    .with_help(format!(
                        "upgrade the driver to R{need} (and `driver=`), or use another profile"
                    )),
                );
            }
        }
    }
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    check_driver(cx, out);
    check_layouts(cx, out);
    check_allow(cx, out);
    check_workload_profiles(cx, out);
    check_mig_names(cx, out);
}

/// Profiles of each layout against the MIG-capable models of the GPUs it covers.
fn check_layouts(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for (i, l) in m.mig.layouts.iter().enumerate() {
        let mut models: BTreeSet<&str> = BTreeSet::new();
        for &n in &l.nodes {
            for g in &m.nodes[n].gpus {
                if l.gpus.is_empty() || l.gpus.contains(&g.index) {
                    if let Some(md) = m.model_of(g).filter(|x| x.mig.is_some()) {
                        models.insert(&md.name);
                    }
                }
            }
        }
        let Some(decl) = cx.spec.mig.layouts.get(i) else {
            continue;
        };
        for model in models.iter().filter_map(|n| m.models.get(*n)) {
            for p in &decl.profiles {
                if model.mig_profile(&p.value).is_none() {
                    unknown(p, model, "in a MIG layout", out);
                }
            }
        }
    }
}

/// `mig allow` entries: each a profile of some MIG-capable model on the nodes.
fn check_allow(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let mig_models: Vec<&GpuModel> = m
        .models
        .values()
        .filter(|md| {
            md.mig.is_some()
                && m.nodes
                    .iter()
                    .any(|n| n.gpus.iter().any(|g| g.model.as_deref() == Some(&md.name)))
        })
        .collect();
    if mig_models.is_empty() {
        return;
    }
    for a in &cx.spec.mig.allow {
        if !mig_models
            .iter()
            .any(|md| md.mig_profile(&a.value).is_some())
        {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`{}` is not a MIG profile of any GPU model in the cluster",
                        a.value
                    ),
                )
                .at(a.span, "unknown profile")
                .with_help(profile_hint(&a.value, &mig_models)),
            );
        }
    }
}

/// A did-you-mean among the profiles of `models`.
fn profile_hint(name: &str, models: &[&GpuModel]) -> String {
    let names: BTreeSet<&str> = models.iter().flat_map(|md| md.profile_names()).collect();
    crate::suggest::hint(name, names.iter().copied(), "profile")
}

/// An inference `profile`: one of the MIG-capable models the class accepts has it.
fn check_workload_profiles(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in &cx.spec.workloads {
        let Some(p) = &w.profile else { continue };
        let Some(wm) = cx.workload(&w.name.value) else {
            continue;
        };
        let candidates: Vec<&GpuModel> = m
            .models
            .values()
            .filter(|md| md.mig.is_some() && wm.accepts(&md.name))
            .collect();
        if !candidates.is_empty()
            && !candidates
                .iter()
                .any(|md| md.mig_profile(&p.value).is_some())
        {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "profile `{}` of {} `{}` exists on none of its GPU models",
                        p.value,
                        w.kind.as_str(),
                        w.name.value
                    ),
                )
                .at(p.span, "unknown profile")
                .with_help(profile_hint(&p.value, &candidates)),
            );
        }
    }
}

/// `mig-name` pins of a `gpu-model`: a profile of a model that has MIG.
fn check_mig_names(cx: &Ctx, out: &mut Diagnostics) {
    for d in &cx.spec.gpu_models {
        let Some(model) = cx.model.models.get(&d.name.value) else {
            continue;
        };
        for (profile, _) in &d.mig_names {
            match model.mig {
                Some(spec) if spec.profile(&profile.value).is_some() => {}
                Some(_) => unknown(profile, model, "in `mig-name`", out),
                None => out.push(
                    Diagnostic::error(RULE.code, format!("`mig-name` on {}, which has no MIG", model.name))
                        .at(profile.span, "no MIG on this model")
                        .with_help("remove the `mig-name`, or derive the model from a MIG-capable one with base=\"...\""),
                ),
            }
        }
    }
}
