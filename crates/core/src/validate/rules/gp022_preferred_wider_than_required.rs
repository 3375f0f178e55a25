//! GP022: a preferred tier wider than the required one.
use super::prelude::*;
use crate::model::Tier;

pub(crate) static RULE: Rule = Rule {
    code: "GP022",
    name: "preferred-wider-than-required",
    severity: Severity::Error,
    summary: "a training class prefers a wider topology tier than it requires",
    docs: r#"
**What.** `topology preferred=` names a tier wider than (or equal to) `required=`, e.g.
`required="leaf" preferred="spine"`.

**Why.** The required tier already guarantees something tighter than the preference, so the
preference is meaningless; it is almost always the two values swapped.

**Example.**
```text
training "llama" team="nlp" priority="prod" {
    gang gpus=64 gpus-per-node=8
    topology required="leaf" preferred="spine"
}
```

**Fix.** Swap them: `required="spine" preferred="leaf"`.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for d in &cx.spec.workloads {
        let (Some(r), Some(p)) = (&d.required_tier, &d.preferred_tier) else {
            continue;
        };
        let (Some(rt), Some(pt)) = (Tier::parse(&r.value), Tier::parse(&p.value)) else {
            continue;
        };
        if pt >= rt {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`{}` prefers `{}` but already requires `{}`",
                        d.name.value, p.value, r.value
                    ),
                )
                .at(p.span, "not tighter than the required tier")
                .with_related(r.span, "required tier")
                .with_help(if pt > rt {
                    format!(
                        "did you swap them? required=\"{}\" preferred=\"{}\"",
                        p.value, r.value
                    )
                } else {
                    "drop `preferred`: it repeats the required tier".to_string()
                }),
            );
        }
    }
}
