//! GP055: a GPU model on DRA nodes whose NVML product name is unknown.
use super::prelude::*;
use crate::model::Allocation;
use std::collections::BTreeSet;

pub(crate) static RULE: Rule = Rule {
    code: "GP055",
    name: "dra-model-without-product-name",
    severity: Severity::Error,
    summary: "a GPU model on DRA nodes with no NVML product name to select its devices by",
    docs: r#"
**What.** Nodes that hand out GPUs through DRA (`gpu-allocation "dra"`) have GPUs of a
model that is not in the catalog and whose `gpu-model` declares no `product-name`.

**Why.** Under DRA, gpuplan writes a DeviceClass per GPU model whose CEL selector picks
that model's devices by the attribute NVIDIA's DRA driver publishes for each GPU:
`productName`, the name NVML reports (`NVIDIA H100 80GB HBM3`). Without it the class
could only select every GPU, and a pod planned on one model could get another.

**Example.**
```text
gpu-model "rtx-4090" memory="24GiB"
```

**Fix.** Declare the product name as `nvidia-smi --query-gpu=name --format=csv` prints
it: `gpu-model "rtx-4090" memory="24GiB" product-name="NVIDIA GeForce RTX 4090"`.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    if !m.dra_declared() {
        return;
    }
    let mut seen = BTreeSet::new();
    for (n, node) in m.nodes.iter().enumerate() {
        if m.node_allocation(n) != Allocation::Dra {
            continue;
        }
        for g in node.usable_gpus() {
            let Some(model) = g.model.as_deref().and_then(|x| m.models.get(x)) else {
                continue;
            };
            if model.product_name.is_some() || !seen.insert(model.name.clone()) {
                continue;
            }
            let span = model.span.unwrap_or(node.span);
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "GPU model `{}` is on DRA node `{}` but has no product name: its DeviceClass cannot select its devices",
                        model.name, node.name
                    ),
                )
                .at(span, "no product-name")
                .with_help(format!(
                    "declare the name NVML reports (`nvidia-smi --query-gpu=name --format=csv`): gpu-model \"{}\" product-name=\"...\"",
                    model.name
                )),
            );
        }
    }
}
