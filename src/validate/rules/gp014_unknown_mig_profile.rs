//! GP014: a MIG profile name that the GPU model does not have.
use super::prelude::*;
use std::collections::BTreeSet;

pub static RULE: Rule = Rule {
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

**Fix.** Use the model's own names (`docs/catalog.md`). When a driver advertises a
different name (driver 535 showing `3g.39gb`), pin it:
`gpu-model "a100-sxm4-80gb" { mig-name "3g.40gb" driver="3g.39gb" }`.
"#,
    check: Some(check),
};

fn unknown(
    name: &Spanned<String>,
    model: &crate::model::GpuModel,
    ctx: &str,
    out: &mut Diagnostics,
) {
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

fn check(cx: &Ctx, out: &mut Diagnostics) {
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
    let mig_models: Vec<&crate::model::GpuModel> = m
        .models
        .values()
        .filter(|md| {
            md.mig.is_some()
                && m.nodes
                    .iter()
                    .any(|n| n.gpus.iter().any(|g| g.model.as_deref() == Some(&md.name)))
        })
        .collect();
    for a in &cx.spec.mig.allow {
        if !mig_models.is_empty()
            && !mig_models
                .iter()
                .any(|md| md.mig_profile(&a.value).is_some())
        {
            let names: BTreeSet<&str> = mig_models
                .iter()
                .flat_map(|md| md.profile_names())
                .collect();
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`{}` is not a MIG profile of any GPU model in the cluster",
                        a.value
                    ),
                )
                .at(a.span, "unknown profile")
                .with_help(crate::suggest::hint(
                    &a.value,
                    names.iter().copied(),
                    "profile",
                )),
            );
        }
    }
    for w in &cx.spec.workloads {
        let Some(p) = &w.profile else { continue };
        let Some(wm) = m.workloads.iter().find(|x| x.name == w.name.value) else {
            continue;
        };
        let candidates: Vec<&crate::model::GpuModel> = m
            .models
            .values()
            .filter(|md| md.mig.is_some() && wm.accepts(&md.name))
            .collect();
        if !candidates.is_empty()
            && !candidates
                .iter()
                .any(|md| md.mig_profile(&p.value).is_some())
        {
            let names: BTreeSet<&str> = candidates
                .iter()
                .flat_map(|md| md.profile_names())
                .collect();
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
                .with_help(crate::suggest::hint(
                    &p.value,
                    names.iter().copied(),
                    "profile",
                )),
            );
        }
    }
    for d in &cx.spec.gpu_models {
        let Some(model) = m.models.get(&d.name.value) else {
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
