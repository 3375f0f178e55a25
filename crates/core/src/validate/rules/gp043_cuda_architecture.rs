//! GP043: a CUDA release older than the GPU architecture, or one that dropped it.
use super::prelude::*;
use crate::model::authority::CudaMisfit;

pub(crate) static RULE: Rule = Rule {
    code: "GP043",
    name: "cuda-architecture",
    severity: Severity::Error,
    summary: "a class's `cuda` predates, or dropped, the architecture of the GPUs it may use",
    docs: r#"
**What.** A class declares `cuda "X.Y"` older than the first release that supports the
architecture of the GPUs it may use: Ampere (sm_80) needs 11.0, Ada and Hopper (sm_89,
sm_90) 11.8, Blackwell (sm_100) 12.8. Or it declares a CUDA major that removed the
architecture: CUDA 13.0 dropped Maxwell, Pascal and Volta (P100, V100), so 12.x is the
last release for them. An error when it holds for every GPU model the class may use, a
warning naming the models the planner keeps it off otherwise.

**Why.** A runtime that does not know the architecture has no code for it: kernels fail
with "no kernel image is available for execution on the device". The same happens the
other way round: a CUDA 13 build carries no sm_70 code and its PTX cannot be compiled for
a V100.

**Example.**
```text
training "llm" team="t" priority="p" { gang gpus=8; cuda "11.4"; models "h100-sxm5-80gb"; }
```

**Fix.** Build the image with a CUDA release that supports the GPUs, or restrict the
class's `models` to GPUs its CUDA supports.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in m.workloads.iter().filter(|w| w.cuda.is_some()) {
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.cuda.as_ref().map(|c| c.span).unwrap_or(decl.span);
        let (major, minor) = w.cuda.expect("filtered");
        let models: std::collections::BTreeSet<String> = super::gp042_cuda_driver::candidates(m, w)
            .into_iter()
            .map(|(_, x)| x)
            .collect();
        let mut old: Vec<String> = Vec::new();
        let mut dropped: Vec<String> = Vec::new();
        let mut need = (0, 0);
        let mut last = u32::MAX;
        for model in &models {
            match m.cuda_fit(w, model, None) {
                Err(CudaMisfit::Architecture {
                    architecture,
                    need: n,
                }) => {
                    old.push(format!("{model} ({architecture})"));
                    need = need.max(n);
                }
                Err(CudaMisfit::Dropped {
                    architecture,
                    last_major,
                }) => {
                    dropped.push(format!("{model} ({architecture})"));
                    last = last.min(last_major);
                }
                _ => {}
            }
        }
        let all = old.len() + dropped.len() == models.len();
        let severity = |text: String| {
            if all {
                Diagnostic::error(RULE.code, text)
            } else {
                Diagnostic::warning(RULE.code, format!("{text}: the planner keeps it off them"))
            }
        };
        let what = format!("{} `{}`", w.kind.as_str(), w.name);
        if !old.is_empty() {
            let text = format!(
                "{what} is built with CUDA {major}.{minor}, older than {} needs ({}.{})",
                old.join(", "),
                need.0,
                need.1
            );
            out.push(
                severity(text)
                    .at(span, "CUDA too old for these GPUs")
                    .with_help(format!(
                        "build the image with CUDA {}.{} or newer, or restrict `models`",
                        need.0, need.1
                    )),
            );
        }
        if !dropped.is_empty() {
            let text = format!(
                "{what} is built with CUDA {major}.{minor}, which no longer supports {} \
                 (the last release for them is {last}.x)",
                dropped.join(", "),
            );
            out.push(
                severity(text)
                    .at(span, "CUDA too new for these GPUs")
                    .with_help(format!(
                        "build the image with CUDA {last}.x for these GPUs, or restrict `models`"
                    )),
            );
        }
    }
}
