//! GP046: storage declarations and checkpoint sizes without storage.
use super::prelude::*;
use crate::diag::quoted;

pub(crate) static RULE: Rule = Rule {
    code: "GP046",
    name: "storage",
    severity: Severity::Error,
    summary: "a storage names an unknown pool or leaf, both, or the same scope as another; a checkpoint size no storage serves",
    docs: r#"
**What.** `storage "NAME" write-bandwidth=...` serves the whole cluster, one `pool=`, or
one `leaf=` switch: an error when it names a pool or leaf the configuration lacks, both
at once, or the same scope as an earlier storage. A warning when a training class
declares a checkpoint `size` but no storage serves any node it may use (its write time is
then bounded by its NICs only).

**Why.** The plan computes each gang's checkpoint write time from the storage serving its
nodes; two storages for one scope, or none, leave that undefined.

**Example.**
```text
storage "lustre" write-bandwidth="200GB/s" pool="no-such-pool"
```

**Fix.** Name a declared pool or leaf (or neither, for the whole cluster), one storage per
scope; declare the storage checkpoints go to.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let spec = cx.spec;
    let mut scopes: std::collections::BTreeMap<(u8, String), &str> = Default::default();
    for s in &spec.storages {
        let scope = match (&s.pool, &s.leaf) {
            (Some(p), Some(l)) => {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!("storage {} names both a pool and a leaf", quoted(&s.name.value)),
                    )
                    .at(l.span, "one scope only")
                    .with_help("a storage serves the cluster, one pool, or one leaf: keep one of `pool` and `leaf`")
                    .with_related(p.span, "and a pool"),
                );
                continue;
            }
            (Some(p), None) => {
                if !spec.pools.iter().any(|q| q.name.value == p.value) {
                    out.push(unknown(
                        &s.name.value,
                        "pool",
                        p,
                        spec.pools.iter().map(|q| q.name.value.as_str()),
                    ));
                    continue;
                }
                (1, p.value.clone())
            }
            (None, Some(l)) => {
                let leaves = spec
                    .switches
                    .iter()
                    .filter(|w| w.tier == crate::spec::SwitchTier::Leaf);
                if !leaves.clone().any(|w| w.name.value == l.value) {
                    out.push(unknown(
                        &s.name.value,
                        "leaf",
                        l,
                        leaves.map(|w| w.name.value.as_str()),
                    ));
                    continue;
                }
                (2, l.value.clone())
            }
            (None, None) => (0, String::new()),
        };
        if let Some(first) = scopes.get(&scope) {
            let what = match scope.0 {
                0 => "the whole cluster".to_string(),
                1 => format!("pool {}", quoted(&scope.1)),
                _ => format!("leaf {}", quoted(&scope.1)),
            };
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("storage {} serves {what}, as {} already does", quoted(&s.name.value), quoted(first)),
                )
                .at(s.name.span, "a second storage for one scope")
                .with_help("one storage per scope: merge them (add their bandwidths) or scope one to a pool or leaf"),
            );
            continue;
        }
        scopes.insert(scope, &s.name.value);
    }
    let m = cx.model;
    for w in m.workloads.iter().filter(|w| w.checkpoint_size.is_some()) {
        let nodes = super::gp042_cuda_driver::candidates(m, w);
        if nodes.is_empty() || nodes.iter().any(|(n, _)| m.storage_of(*n).is_some()) {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl
            .checkpoint_size
            .as_ref()
            .map(|s| s.span)
            .unwrap_or(decl.span);
        out.push(
            Diagnostic::warning(
                RULE.code,
                format!(
                    "{} `{}` writes checkpoints of a declared size, but no `storage` serves its nodes: only its NICs bound the write time",
                    w.kind.as_str(),
                    w.name
                ),
            )
            .at(span, "written where?")
            .with_help("declare the storage checkpoints go to: storage \"NAME\" write-bandwidth=\"100GB/s\" (cluster-wide, or pool= / leaf=)"),
        );
    }
}

fn unknown<'a>(
    storage: &str,
    what: &str,
    name: &Spanned<String>,
    known: impl Iterator<Item = &'a str> + Clone,
) -> Diagnostic {
    Diagnostic::error(
        RULE.code,
        format!(
            "storage {} names {what} {}, which is not declared",
            quoted(storage),
            quoted(&name.value)
        ),
    )
    .at(name.span, format!("no such {what}"))
    .with_help(crate::suggest::hint(&name.value, known, what))
}
