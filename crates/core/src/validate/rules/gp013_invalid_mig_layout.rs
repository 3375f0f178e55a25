//! GP013: a MIG layout that the GPU's placement rules do not allow.
use super::prelude::*;
use crate::catalog::{self, MigProfile};
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP013",
    name: "invalid-mig-layout",
    severity: Severity::Error,
    summary: "a fixed MIG layout cannot be placed on the GPU's memory slices",
    docs: r#"
**What.** The profiles of a `mig layout` cannot all be created on one GPU of that model:
every GPU instance must start at one of its profile's allowed memory slices, instances
may not overlap, per-profile counts are limited, compute slices add up to at most 7 (4 on
A30), and at most one `+me` profile fits. The message names the instance that finds all
its start slots taken, and by what.

**Why.** `nvidia-smi` (and mig-parted) would fail on the node with "Insufficient
Resources", after the node was already drained. gpuplan checks offline, before merge.

**Example.** On an H100 80GB, two `3g.40gb` fill all 8 memory slices:
```text
mig {
    layout "3g.40gb" "3g.40gb" "1g.10gb" nodes="inf-01"
}
```

**Fix.** Drop or shrink an instance, e.g. `"3g.40gb" "2g.20gb" "1g.10gb*2"`; see
`docs/catalog.md` for each model's profiles and start slots.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for l in &m.mig.layouts {
        // Distinct MIG-capable models the layout lands on.
        let mut models: BTreeMap<&str, &crate::model::GpuModel> = BTreeMap::new();
        for &n in &l.nodes {
            for g in &m.nodes[n].gpus {
                if l.gpus.is_empty() || l.gpus.contains(&g.index) {
                    if let Some(model) = m.model_of(g).filter(|x| x.mig.is_some()) {
                        models.insert(&model.name, model);
                    }
                }
            }
        }
        for model in models.values() {
            let Some(spec) = model.mig else { continue };
            let profiles: Option<Vec<&'static MigProfile>> =
                l.profiles.iter().map(|p| model.mig_profile(p)).collect();
            let Some(profiles) = profiles else { continue }; // GP014 reports unknown names
            if profiles.is_empty() {
                continue;
            }
            if let Err(e) = catalog::placement::fits_profiles(spec, &profiles) {
                let list = l.profiles.join(" + ");
                out.push(
                    Diagnostic::error(RULE.code, format!("MIG layout {list} does not fit one {} GPU", model.name))
                        .at(l.span, e.to_string())
                        .with_help(format!(
                            "a {} has {} memory slices and {} compute slices; `gpuplan explain GP013` shows how placement works",
                            model.name, spec.memory_slices, spec.compute_slices
                        )),
                );
            }
        }
    }
}
