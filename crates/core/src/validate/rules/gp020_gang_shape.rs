//! GP020: a training gang whose shape cannot be placed on any node.
use super::prelude::*;
use crate::spec::WorkloadKind;

pub(crate) static RULE: Rule = Rule {
    code: "GP020",
    name: "gang-shape",
    severity: Severity::Error,
    summary: "a training class without a gang, or whose gpus-per-node does not divide the gang or exceeds every node",
    docs: r#"
**What.** A `training` class has no `gang`, a gang of 0 GPUs, `gpus-per-node=0`, a
`gpus-per-node` that does not divide the gang size, or a `gpus-per-node` larger than any
node of an acceptable GPU model has. (Without `gpus-per-node` a gang takes, on each
node, the most GPUs that divide it and fit the largest acceptable node.)

**Why.** A gang takes the same number of GPUs on each of its nodes (what launchers such as
`torchrun --nproc-per-node` assume, and what one Job, Volcano task or sbatch `--gres`
gives every pod); 12 GPUs at 8 per node is not a whole number of nodes.

**Example.**
```text
training "bert" team="nlp" priority="prod" {
    gang gpus=12 gpus-per-node=8
}
```

**Fix.** Make the gang a multiple of `gpus-per-node` (`gpus=16`), or change
`gpus-per-node` (`gpus-per-node=4`).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for d in cx
        .spec
        .workloads
        .iter()
        .filter(|d| d.kind == WorkloadKind::Training)
    {
        let Some(span) = d.gang_span else {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("training `{}` has no `gang`", d.name.value),
                )
                .at(d.span, "needs a gang")
                .with_help("add `gang gpus=N gpus-per-node=M` inside the training block"),
            );
            continue;
        };
        let Some(gpus) = &d.gang_gpus else { continue };
        if gpus.value == 0 {
            out.push(
                Diagnostic::error(RULE.code, format!("gang of `{}` has 0 GPUs", d.name.value))
                    .at(gpus.span, "empty gang")
                    .with_help("a gang has at least one GPU"),
            );
            continue;
        }
        let Some(gpn) = &d.gpus_per_node else {
            continue;
        };
        if gpn.value == 0 {
            out.push(
                Diagnostic::error(RULE.code, "gpus-per-node is 0")
                    .at(gpn.span, "must be at least 1")
                    .with_help("write the GPUs the gang uses on each node"),
            );
            continue;
        }
        if gpus.value % gpn.value != 0 {
            // The next whole number of nodes, else (past u32) the one below: in u64, as
            // a gang near u32::MAX GPUs overflowed here (found by tests/it/bounded.rs).
            let (g, n) = (u64::from(gpus.value), u64::from(gpn.value));
            let up = Some(g.div_ceil(n) * n)
                .filter(|&u| u <= u64::from(u32::MAX))
                .unwrap_or(g / n * n);
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "gang of {} GPUs is not a whole number of nodes at {} GPUs per node",
                        gpus.value, gpn.value
                    ),
                )
                .at(gpn.span, "does not divide the gang")
                .with_related(gpus.span, "gang size")
                .with_help(format!(
                    "use gpus={up}, or a gpus-per-node that divides {}",
                    gpus.value
                )),
            );
            continue;
        }
        let Some(w) = m.workloads.iter().find(|w| w.name == d.name.value) else {
            continue;
        };
        // Nodes carry one GPU model (their class's), so the per-model maximum is exact.
        let max_node = m
            .model_stats
            .iter()
            .filter(|(md, _)| w.accepts(md))
            .map(|(_, s)| s.max_per_node)
            .max()
            .unwrap_or(0);
        if max_node > 0 && gpn.value > max_node {
            out.push(
                Diagnostic::error(RULE.code, format!("gpus-per-node={} but no node has more than {max_node} usable GPUs of an acceptable model", gpn.value))
                    .at(gpn.span, "more than any node has")
                    .with_related(span, "gang")
                    .with_help(format!("use gpus-per-node={max_node} or less")),
            );
        }
    }
}
