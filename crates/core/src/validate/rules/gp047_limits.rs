//! GP047: the configuration is larger than the run's limits allow.
use super::prelude::*;
use crate::limits::{Limits, MAX_GPUS_PER_NODE};
use crate::spec::Spec;

pub(crate) static RULE: Rule = Rule {
    code: "GP047",
    name: "limits",
    severity: Severity::Error,
    summary: "the configuration goes past a bound on one run's work (names, nodes, GPUs, GPUs per node)",
    docs: r#"
**What.** The configuration's bracket patterns expand to more names than the `names`
limit, it declares more nodes than the `nodes` limit or more GPUs than the `gpus` limit,
or a node class declares more than 64 GPUs per node.

**Why.** Configuration arrives through pull requests: a few hundred bytes of
`nodes "x-[1-100000]"` lines must not make a CI job take gigabytes and minutes. The
limits are checked before anything is expanded or built, and each refusal names the
limit it hit. No server has more than 64 GPUs in one operating system image (16 on the
largest HGX/DGX boards, 20 single-width PCIe cards in the densest chassis): a larger
count is a typo, and is refused rather than clamped.

**Example.**
```text
node-class "dgx" { gpus 4294967295 model="h100-sxm5-80gb" }
nodes "x-[1-100000]" class="dgx"
```

**Fix.** Correct the number; for a trusted fleet that is really this large, raise the
limit on the command line (never in the KDL, which a pull request could edit):
`gpuplan plan --limit gpus=400000 --limit nodes=50000 cluster/`. docs/fuzzing.md lists
every limit and its default.
"#,
    check: None,
};

/// GP047 diagnostics of a decoded configuration, checked before the model is built
/// (the names themselves were bounded while decoding, see `spec::budget`).
pub(crate) fn check_spec(spec: &Spec, limits: &Limits) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in &spec.classes {
        let mut total = 0u64;
        for n in c.gpus.iter().filter_map(|g| g.count.as_ref()) {
            total += u64::from(n.value);
            if total > MAX_GPUS_PER_NODE {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "node class `{}` declares {total} GPUs per node; gpuplan accepts at most {MAX_GPUS_PER_NODE}",
                            c.name.value
                        ),
                    )
                    .at(n.span, format!("at most {MAX_GPUS_PER_NODE}"))
                    .with_help("count the GPUs one server has (`nvidia-smi -L` on the node)"),
                );
                break;
            }
        }
    }
    let gpus_of = |class: &str| {
        spec.classes
            .iter()
            .find(|c| c.name.value == class)
            .map_or(0, |c| u64::from(c.gpu_total()).min(MAX_GPUS_PER_NODE))
    };
    let (mut nodes, mut gpus) = (0u64, 0u64);
    for g in &spec.node_groups {
        let n = g.names.value.len() as u64;
        nodes += n;
        gpus += n * g.class.as_ref().map_or(0, |c| gpus_of(&c.value));
        let over = if nodes > limits.nodes {
            Some(("nodes", nodes, limits.nodes))
        } else if gpus > limits.gpus {
            Some(("gpus", gpus, limits.gpus))
        } else {
            None
        };
        if let Some((key, have, limit)) = over {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "the configuration declares more than {limit} {} (the {key} limit): {have} up to here",
                        if key == "nodes" { "nodes" } else { "GPUs" }
                    ),
                )
                .at(g.names.span, "this range goes past the limit")
                .with_help(crate::limits::hint(key)),
            );
            break;
        }
    }
    out
}
