//! GP006: a GPU model that is neither in the catalog nor declared.
use super::prelude::*;
use crate::catalog;

pub(crate) static RULE: Rule = Rule {
    code: "GP006",
    name: "unknown-gpu-model",
    severity: Severity::Error,
    summary: "a GPU model name that is neither a catalog id/alias nor a declared `gpu-model`",
    docs: r#"
**What.** A node class, workload, quota or `gpu-model base=` names a GPU model that the
built-in catalog does not know and no `gpu-model` declares; or a `gpu-model` that is not
in the catalog gives neither `base` nor `memory`, so nothing is known about it.

**Why.** Memory, NVLink and MIG geometry come from the model; planning on an unknown GPU
would be guessing.

**Example.**
```text
node-class "dgx" {
    gpus 8 model="h100-sxm-80gb"
}
```

**Fix.** Use a catalog id (`gpuplan explain` lists rules; `docs/catalog.md` lists models),
here `h100-sxm5-80gb`, or declare the model: `gpu-model "my-gpu" memory="48GiB"`.
"#,
    check: Some(check),
};

fn known(cx: &Ctx, name: &str) -> bool {
    cx.spec.gpu_models.iter().any(|m| m.name.value == name) || catalog::lookup(name).is_some()
}

fn candidates<'a>(cx: &'a Ctx) -> Vec<&'a str> {
    let mut v: Vec<&str> = catalog::all().iter().map(|g| g.id).collect();
    v.extend(cx.spec.gpu_models.iter().map(|m| m.name.value.as_str()));
    v
}

fn report(cx: &Ctx, name: &Spanned<String>, what: &str, out: &mut Diagnostics) {
    if known(cx, &name.value) {
        return;
    }
    let c = candidates(cx);
    out.push(
        Diagnostic::error(
            RULE.code,
            format!("unknown GPU model `{}` in {what}", name.value),
        )
        .at(
            name.span,
            "not in the catalog, and no `gpu-model` declares it",
        )
        .with_help(format!(
            "{}; or declare it: gpu-model \"{}\" memory=\"...\"",
            crate::suggest::hint(&name.value, c.iter().copied(), "model"),
            name.value
        )),
    );
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for m in &cx.spec.gpu_models {
        if let Some(b) = &m.base {
            if catalog::lookup(&b.value).is_none() {
                let c: Vec<&str> = catalog::all().iter().map(|g| g.id).collect();
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "`base` of gpu-model `{}` is not a catalog model",
                            m.name.value
                        ),
                    )
                    .at(b.span, "unknown base model")
                    .with_help(crate::suggest::hint(
                        &b.value,
                        c.iter().copied(),
                        "catalog model",
                    )),
                );
            }
        } else if catalog::lookup(&m.name.value).is_none_or(|g| g.id != m.name.value)
            && m.memory.is_none()
        {
            let c: Vec<&str> = catalog::all().iter().map(|g| g.id).collect();
            let hint = match crate::suggest::did_you_mean(&m.name.value, c.iter().copied()) {
                Some(s) => format!("to refine the catalog model write `gpu-model \"{s}\"`; to define a new model give memory=\"...\" (and base=\"...\" to copy MIG and NVLink)"),
                None => "give memory=\"...\" (and base=\"...\" to copy a catalog model's MIG and NVLink)".to_string(),
            };
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "gpu-model `{}` is not in the catalog and says nothing about itself",
                        m.name.value
                    ),
                )
                .at(m.name.span, "unknown model without `memory` or `base`")
                .with_help(hint),
            );
        }
    }
    for c in &cx.spec.classes {
        for m in c.gpus.iter().filter_map(|g| g.model.as_ref()) {
            report(cx, m, &format!("node class `{}`", c.name.value), out);
        }
    }
    for w in &cx.spec.workloads {
        for m in &w.models {
            report(
                cx,
                m,
                &format!("{} `{}`", w.kind.as_str(), w.name.value),
                out,
            );
        }
    }
    for t in &cx.spec.teams {
        for q in &t.quotas {
            if let Some(m) = &q.model {
                report(cx, m, &format!("a quota of team `{}`", t.name.value), out);
            }
        }
    }
}
