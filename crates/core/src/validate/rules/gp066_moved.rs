//! GP066: a `moved` rename that cannot be resolved: its target is not declared, its
//! source still is, it names itself, or what it renames cannot be told.
use super::prelude::*;
use crate::model::moved::{self, MoveKind};

pub(crate) static RULE: Rule = Rule {
    code: "GP066",
    name: "moved",
    severity: Severity::Error,
    summary: "a `moved` rename whose target is not declared, whose source is still declared, or whose kind cannot be told",
    docs: r#"
**What.** `moved from="old" to="new"` says that the class, node or pool `old` of the last
apply is called `new` now. `new` must be declared (or be the `from` of another `moved`,
a chain), `old` must not be declared any more (of the same kind), the two must differ,
and the kind must be clear: what `to` names, or `kind="class"|"node"|"pool"` when a class,
a node and a pool share the name.

**Why.** A rename makes the planner read what ran under the old name as the new name's
(no eviction, no MIG change). If the old name is still declared, the two are different
things; if the new one is not, there is nothing to give the old one's GPUs to.

**Example.**
```text
inference "embed-v2" ...
moved from="embed" to="embed-v3"   // embed-v3 is not declared
```

**Fix.** Point `to` at the declared new name; remove the old declaration (or the `moved`,
if both are meant to exist); add `kind=` when the name is ambiguous.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let spec = cx.spec;
    let froms: Vec<&str> = spec
        .moves
        .iter()
        .filter_map(|m| m.from.as_ref().map(|f| f.value.as_str()))
        .collect();
    for m in &spec.moves {
        let (Some(from), Some(to)) = (&m.from, &m.to) else {
            continue; // GP004 reported the missing property
        };
        if from.value == to.value {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("`moved` renames `{}` to itself", from.value),
                )
                .at(m.span, "from and to are the same")
                .with_help("remove this `moved`"),
            );
            continue;
        }
        let Some(kind) = moved::kind_of(spec, m) else {
            let chained = froms.contains(&to.value.as_str());
            if m.kind.is_none() && chained {
                continue; // a link of a chain: its kind is the next link's
            }
            out.push(ambiguous_or_missing(spec, m, &to.value));
            continue;
        };
        let names = moved::declared(spec, kind);
        if !names.contains(to.value.as_str()) && !froms.contains(&to.value.as_str()) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`moved` target {} `{}` is not declared",
                        kind.as_str(),
                        to.value
                    ),
                )
                .at(to.span, "not declared")
                .with_help(format!(
                    "declare the {} `{}`, or point `to` at the new name",
                    kind.as_str(),
                    to.value
                )),
            );
        }
        if names.contains(from.value.as_str()) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`moved` source {} `{}` is still declared: a rename's old name must be gone",
                        kind.as_str(),
                        from.value
                    ),
                )
                .at(from.span, "still declared")
                .with_help("remove the old declaration, or remove the `moved` if both are meant to exist"),
            );
        }
    }
}

fn ambiguous_or_missing(
    spec: &crate::spec::Spec,
    m: &crate::spec::MovedDecl,
    to: &str,
) -> Diagnostic {
    let kinds: Vec<&str> = [MoveKind::Class, MoveKind::Node, MoveKind::Pool]
        .into_iter()
        .filter(|k| moved::declared(spec, *k).contains(to))
        .map(MoveKind::as_str)
        .collect();
    let label = if kinds.is_empty() {
        "not declared"
    } else {
        "which one?"
    };
    let d = if kinds.is_empty() {
        Diagnostic::error(
            RULE.code,
            format!("`moved` target `{to}` is not declared as a class, a node or a pool"),
        )
        .with_help("point `to` at the new name of the class, node or pool, as declared")
    } else {
        Diagnostic::error(
            RULE.code,
            format!(
                "`moved` target `{to}` names a {}: which one is renamed cannot be told",
                kinds.join(" and a ")
            ),
        )
        .with_help(format!("add `kind=\"{}\"` (or another of them)", kinds[0]))
    };
    let span = m.to.as_ref().map_or(m.span, |t| t.span);
    d.at(span, label)
}
