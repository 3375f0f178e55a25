//! GP018: priority classes that preempt each other in a cycle.
use super::prelude::*;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP018",
    name: "preemption-cycle",
    severity: Severity::Error,
    summary: "`preempts` relations form a cycle (a class can, through others, preempt itself)",
    docs: r#"
**What.** Following `preempts` from a priority class leads back to it: `a` preempts `b`
and `b` preempts `a`, or a longer loop, or a class preempting itself.

**Why.** With a cycle, two workloads can evict each other forever; no scheduler can honour
it, and Slurm's QOS `Preempt` lists would thrash.

**Example.**
```text
priority "prod" value=1000 preempts="batch"
priority "batch" value=100 preempts="prod"
```

**Fix.** Preemption goes from higher to lower classes only; remove the back edge.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let mut edges: BTreeMap<&str, Vec<&Spanned<String>>> = BTreeMap::new();
    for p in &cx.spec.priorities {
        edges
            .entry(&p.name.value)
            .or_default()
            .extend(p.preempts.iter());
    }
    let mut reported = std::collections::BTreeSet::new();
    for start in edges.keys().copied() {
        // DFS for a path back to `start`.
        let mut stack: Vec<(&str, Vec<&Spanned<String>>)> = vec![(start, Vec::new())];
        let mut seen = std::collections::BTreeSet::new();
        while let Some((cur, path)) = stack.pop() {
            for e in edges.get(cur).into_iter().flatten() {
                let mut p = path.clone();
                p.push(e);
                if e.value == start {
                    let mut names: Vec<&str> = vec![start];
                    names.extend(p.iter().map(|x| x.value.as_str()));
                    let mut key: Vec<&str> = names[..names.len() - 1].to_vec();
                    key.sort_unstable();
                    if reported.insert(key) {
                        let last = p[p.len() - 1];
                        let mut d = Diagnostic::error(
                            RULE.code,
                            format!("preemption cycle: {}", names.join(" -> ")),
                        )
                        .at(last.span, "closes the cycle");
                        for x in &p[..p.len() - 1] {
                            d = d.with_related(x.span, format!("preempts `{}`", x.value));
                        }
                        out.push(d.with_help("preemption must only go from higher to lower priority classes; remove one `preempts`"));
                    }
                } else if seen.insert(e.value.as_str()) {
                    stack.push((e.value.as_str(), p));
                }
            }
        }
    }
}
