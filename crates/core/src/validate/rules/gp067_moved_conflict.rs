//! GP067: `moved` renames that contradict each other: a cycle, or one name moved to two.
use super::prelude::*;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP067",
    name: "moved-conflict",
    severity: Severity::Error,
    summary: "`moved` renames form a cycle, or move one name to two new names",
    docs: r#"
**What.** Following `moved` renames from a name leads back to it (`a -> b`, `b -> a`), or
one old name is moved to two new names.

**Why.** A rename says what the old name is called now: a cycle has no "now", and two
targets would give what ran under the old name to two things at once.

**Example.**
```text
moved from="embed" to="embed-v2"
moved from="embed-v2" to="embed"
```

**Fix.** Keep one `moved` per old name, each pointing at the newer name; remove the one
that points back.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let mut edges: BTreeMap<&str, (&str, Span)> = BTreeMap::new();
    for m in &cx.spec.moves {
        let (Some(from), Some(to)) = (&m.from, &m.to) else {
            continue;
        };
        match edges.get(from.value.as_str()) {
            Some((other, first)) if *other != to.value => out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`{}` is moved to `{other}` and to `{}`",
                        from.value, to.value
                    ),
                )
                .at(m.span, "second target")
                .with_related(*first, "first target")
                .with_help("keep one `moved` for this old name"),
            ),
            Some(_) => {}
            None => {
                edges.insert(&from.value, (&to.value, m.span));
            }
        }
    }
    let mut reported = std::collections::BTreeSet::new();
    for (&start, &(_, span)) in &edges {
        let mut chain = vec![start];
        let mut at = start;
        while let Some((next, _)) = edges.get(at) {
            if *next == start {
                let mut key = chain.clone();
                key.sort();
                if reported.insert(key) {
                    chain.push(start);
                    out.push(
                        Diagnostic::error(
                            RULE.code,
                            format!("`moved` cycle: {}", chain.join(" -> ")),
                        )
                        .at(span, "leads back")
                        .with_help("remove the `moved` that points back to an older name"),
                    );
                }
                break;
            }
            if chain.contains(next) || chain.len() > edges.len() {
                break;
            }
            chain.push(next);
            at = next;
        }
    }
}
