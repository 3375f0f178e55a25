//! GP051: the `gpus` lines of a node class with several GPU models name different
//! drivers.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP051",
    name: "mixed-gpu-driver",
    severity: Severity::Error,
    summary: "two `gpus` lines of one node class name different NVIDIA drivers (a node runs one)",
    docs: r#"
**What.** A node class with GPUs of several models (one `gpus` line per model) gives
`driver=` on two lines with different versions.

**Why.** A node runs one NVIDIA kernel driver for all its GPUs, whatever their models.
gpuplan checks CUDA releases against the node's driver (GP042); with two versions it
would have to pick one silently.

**Example.**
```text
node-class "x" {
    gpus 8 model="a100-sxm4-80gb" driver="535.104.05"
    gpus 2 model="t4-16gb" driver="550.54.15"
}
```

**Fix.** Write the node's driver (`nvidia-smi` prints it) on one `gpus` line, or the
same version on each.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for c in &cx.spec.classes {
        let mut drivers = c.gpus.iter().filter_map(|g| g.driver.as_ref());
        let Some(first) = drivers.next() else {
            continue;
        };
        for d in drivers.filter(|d| d.value != first.value) {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "node class `{}` names two NVIDIA drivers; a node runs one",
                        c.name.value
                    ),
                )
                .at(d.span, "a second driver")
                .with_related(first.span, "the first driver")
                .with_help("write the node's driver (`nvidia-smi` prints it) on one `gpus` line, or the same version on each"),
            );
        }
    }
}
