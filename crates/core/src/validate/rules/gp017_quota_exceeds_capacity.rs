//! GP017 (warning): quotas promise more GPUs than the cluster has.
use super::prelude::*;
use crate::model::{Cluster, Team};
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP017",
    name: "quota-exceeds-capacity",
    severity: Severity::Warning,
    summary: "team guarantees add up to more GPUs than the cluster (or a model) has",
    docs: r#"
**What.** The guarantees of the top-level teams add up to more usable GPUs than the
cluster has; or the guarantees for one GPU model exceed that model's GPUs; or one team's
burst ceiling alone exceeds the cluster.

**Why.** A guarantee that cannot be honoured is not a guarantee: Kueue and Volcano would
admit by quota what can never be placed (kueue#4329, mlbatch#69). This is a warning
because over-subscription can be deliberate.

**Example.**
```text
team "nlp"    guarantee=200
team "vision" guarantee=100   // 300 guaranteed, 256 GPUs in the cluster
```

**Fix.** Lower the guarantees (keep the difference as `burst`) or add capacity.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let total = m.usable_gpu_count() as u64;
    let top: Vec<&Team> = m.teams.values().filter(|t| t.parent.is_none()).collect();
    check_total(cx, &top, total, out);
    check_per_model(m, &top, out);
    check_bursts(cx, total, out);
}

/// Top-level teams' guarantees against the cluster's usable GPUs.
fn check_total(cx: &Ctx, top: &[&Team], total: u64, out: &mut Diagnostics) {
    let sum: u64 = top.iter().map(|t| t.guarantee as u64).sum();
    if sum <= total {
        return;
    }
    let Some(last) = cx
        .spec
        .teams
        .iter()
        .rev()
        .find(|t| t.parent.is_none() && t.guarantee.is_some())
    else {
        return;
    };
    let mut d = Diagnostic::warning(
        RULE.code,
        format!("team guarantees add up to {sum} GPUs, but the cluster has {total} usable GPUs"),
    )
    .at(
        last.guarantee.as_ref().map(|g| g.span).unwrap_or(last.span),
        format!("guarantees total {sum}"),
    );
    for t in cx
        .spec
        .teams
        .iter()
        .filter(|t| t.parent.is_none() && t.name.value != last.name.value)
    {
        if let Some(g) = &t.guarantee {
            d = d.with_related(
                g.span,
                format!("{} guaranteed to `{}`", g.value, t.name.value),
            );
        }
    }
    out.push(d.with_help("lower guarantees (keep the rest as `burst`) or add nodes"));
}

/// Top-level teams' per-model quotas against the usable GPUs of each model.
fn check_per_model(m: &Cluster, top: &[&Team], out: &mut Diagnostics) {
    let mut by_model: BTreeMap<&str, (u64, Vec<Span>)> = BTreeMap::new();
    for t in top {
        for q in &t.quotas {
            if let Some(md) = &q.model {
                let e = by_model.entry(md).or_default();
                e.0 += q.guarantee as u64;
                e.1.push(q.span);
            }
        }
    }
    for (md, (sum, spans)) in by_model {
        let have = m.model_stats.get(md).map_or(0, |s| s.gpus as u64);
        if sum > have {
            let mut d = Diagnostic::warning(
                RULE.code,
                format!("guarantees for {md} add up to {sum} GPUs, but the cluster has {have}"),
            )
            .at(
                *spans.last().unwrap_or(&Span::default()),
                format!("{md} guarantees total {sum}"),
            );
            for s in &spans[..spans.len().saturating_sub(1)] {
                d = d.with_related(*s, "also guaranteed here");
            }
            out.push(d.with_help("lower the per-model guarantees or add GPUs of that model"));
        }
    }
}

/// Burst ceilings above the whole cluster.
fn check_bursts(cx: &Ctx, total: u64, out: &mut Diagnostics) {
    for t in &cx.spec.teams {
        let Some(b) = t
            .burst
            .as_ref()
            .filter(|b| b.value as u64 > total && total > 0)
        else {
            continue;
        };
        out.push(
            Diagnostic::warning(
                RULE.code,
                format!(
                    "team `{}` may burst to {} GPUs, but the cluster has {total}",
                    t.name.value, b.value
                ),
            )
            .at(b.span, "more than the cluster")
            .with_help(format!(
                "a burst ceiling above {total} has no effect; lower it to document the real ceiling"
            )),
        );
    }
}
