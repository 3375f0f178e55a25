//! GP048: a fraction of a GPU that the class's scheduler cannot carry.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP048",
    name: "fraction-carrier",
    severity: Severity::Error,
    summary: "a `fraction` above 50% under a Kubernetes scheduler, whose device plugin cannot give a replica more than half a shared GPU",
    docs: r#"
**What.** An `inference` class with a `fraction` above 50% runs under `kubernetes`,
`kueue` or `volcano`.

**Why.** On Kubernetes a fraction is carried by NVIDIA's device plugin: it shares every
GPU of a node by time-slicing or MPS with one replica count `R` (at least 2) and gives
each pod one of the `R` replicas, 1/`R` of the GPU (MPS enforces it as memory and thread
limits). No replica count gives a pod more than half a shared GPU, so a 60% replica
would be rendered as a whole GPU (over-asking) or as a half (under-provisioned). gpuplan
plans a fraction `f` on nodes shared `R <= 1/f` ways, with nothing asking for whole GPUs
beside it (docs/render.md, "Sharing"). Slurm carries any share (`gres/shard`), and so
does KAI Scheduler (`gpu-fraction`).

**Example.**
```text
inference "ocr" team="vision" priority="serving" replicas=6 scheduler="kubernetes" {
    fraction "60%"
}
```

**Fix.** Ask for a whole GPU (`gpus 1`), a fraction of at most 50%, or run the class
under Slurm (`scheduler="slurm"`) or KAI (`scheduler="kai"`), which carry any share.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in &m.workloads {
        let Some(milli) = w.gpu_milli.filter(|f| *f > 500 && *f < 1000) else {
            continue;
        };
        let Some(a) = m.authority_of(w).filter(|a| !a.shares_by_fraction()) else {
            continue;
        };
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.fraction.as_ref().map(|f| f.span).unwrap_or(decl.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} `{}` asks for {}% of a GPU under {a}: the device plugin gives a shared replica at most half a GPU",
                    w.kind.as_str(),
                    w.name,
                    milli as f64 / 10.0
                ),
            )
            .at(span, "more than half a GPU")
            .with_help("ask for gpus 1, a fraction of at most 50%, or run it under scheduler=\"slurm\" or \"kai\" (they carry any share)"),
        );
    }
}
