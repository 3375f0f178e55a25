//! GP024: teams whose `parent` chain loops.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP024",
    name: "team-parent-cycle",
    severity: Severity::Error,
    summary: "team `parent` references form a cycle",
    docs: r#"
**What.** Following `parent=` from a team leads back to it.

**Why.** Hierarchical quotas (Volcano queue `parent`, Kueue cohort trees, Slurm account
trees) must be trees.

**Example.**
```text
team "a" parent="b"
team "b" parent="a"
```

**Fix.** Remove one `parent`, so that the hierarchy has a root.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let parent = |n: &str| {
        cx.spec
            .teams
            .iter()
            .find(|t| t.name.value == n)
            .and_then(|t| t.parent.as_ref())
    };
    let mut reported = std::collections::BTreeSet::new();
    for t in &cx.spec.teams {
        let mut chain = vec![t.name.value.clone()];
        let mut cur = t.parent.as_ref();
        while let Some(p) = cur {
            if p.value == t.name.value {
                let mut key = chain.clone();
                key.sort();
                if reported.insert(key) {
                    chain.push(p.value.clone());
                    out.push(
                        Diagnostic::error(
                            RULE.code,
                            format!("team parent cycle: {}", chain.join(" -> ")),
                        )
                        .at(p.span, "leads back")
                        .with_help("remove one `parent=` so that the team tree has a root"),
                    );
                }
                break;
            }
            if chain.contains(&p.value) || chain.len() > cx.spec.teams.len() {
                break; // a cycle not through `t`: reported from its own members
            }
            chain.push(p.value.clone());
            cur = parent(&p.value);
        }
    }
}
