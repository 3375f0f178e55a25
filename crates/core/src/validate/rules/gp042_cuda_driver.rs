//! GP042: a class whose CUDA runtime the nodes' driver cannot run.
use super::prelude::*;
use crate::model::authority::CudaMisfit;
use crate::model::{Cluster, NodeIdx, Workload};

pub(crate) static RULE: Rule = Rule {
    code: "GP042",
    name: "cuda-driver",
    severity: Severity::Error,
    summary: "a class's `cuda` needs a newer driver than its nodes have, or is a release gpuplan does not know",
    docs: r#"
**What.** A class declares `cuda "X.Y"` (the CUDA runtime in its image) and the NVIDIA
driver declared for its nodes (`gpus ... driver=` in the node class, else `gpu-model ...
driver=`) is older than that runtime needs: an error when every node it may use is too
old, a warning naming the nodes the planner keeps it off when only some are. A CUDA
release missing from gpuplan's table is an error.

The rule (catalog/cuda.rs, with its sources): CUDA 11.x runs on drivers >= 450.80.02 and
12.x on >= 525.60.13 (CUDA minor version compatibility, NVIDIA's CUDA release notes);
13.x on the R580 branch (>= 580.65.06); older releases need the driver their toolkit
shipped with. Minor version compatibility does not cover applications that JIT-compile
PTX newer than the driver or use APIs added later: pin those to a newer `driver`.

Forward compatibility: a class whose image ships NVIDIA's `cuda-compat-X-Y` package
declares `cuda "X.Y" compat=#true`; it then also runs on an older driver when the GPU is
a data center part (every catalog model) and the driver's branch is one NVIDIA lists for
that package (CUDA Compatibility guide, e.g. 13.0 on R535 and R570, 12.4 on R535; New
Feature Branches and end-of-life branches are never listed). The hint says when
`compat=#true` would help, or why the declared one does not.

**Why.** A driver older than the runtime fails at launch with "CUDA driver version is
insufficient for CUDA runtime version": caught here, not on a node at 3 a.m.

**Example.**
```text
node-class "hgx" { gpus 8 model="h100-sxm5-80gb" driver="520.61.05"; }
training "llm" team="t" priority="p" { gang gpus=8; cuda "12.4"; }   // needs >= 525.60.13
```

**Fix.** Upgrade the driver (and declare it), build the image with an older CUDA, or
ship the forward-compatibility package and declare `compat=#true` where the branch is
supported.
"#,
    check: Some(check),
};

/// The fix: forward compatibility when it would run the class on those nodes, else a
/// driver upgrade or an older CUDA (saying why a declared `compat=#true` does not help).
fn compat_help(w: &Workload, major: u32, minor: u32, compat_helps: bool) -> String {
    let branches = crate::catalog::cuda::compat_branches(major, minor)
        .iter()
        .map(|b| format!("R{b}"))
        .collect::<Vec<_>>();
    let upgrade = "upgrade those nodes' driver and declare it (gpus driver=), or build the image with an older CUDA";
    if compat_helps && !w.cuda_compat {
        return format!(
            "{upgrade}; or ship NVIDIA's cuda-compat-{major}-{minor} package in the image and declare `cuda \"{major}.{minor}\" compat=#true` (forward compatibility runs it on those data center GPUs' {} driver)",
            branches.join("/")
        );
    }
    if w.cuda_compat {
        let on = if branches.is_empty() {
            "no driver branch".to_string()
        } else {
            format!(
                "only the {} branch(es), on data center GPUs",
                branches.join(", ")
            )
        };
        return format!(
            "{upgrade}; `compat=#true` does not help here: cuda-compat-{major}-{minor} supports {on}"
        );
    }
    upgrade.to_string()
}

/// The nodes a class may use: an accepted model, owned by its scheduler.
pub(super) fn candidates(m: &Cluster, w: &Workload) -> Vec<(NodeIdx, String)> {
    let a = m.authority_of(w);
    (0..m.nodes.len())
        .filter(|&n| a.is_none() || m.node_authority(n) == a)
        .filter_map(|n| {
            // The first model of the node the class accepts (a node may have several).
            let model = m.nodes[n]
                .usable_gpus()
                .filter_map(|g| g.model.clone())
                .find(|x| w.accepts(x))?;
            Some((n, model))
        })
        .collect()
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in m.workloads.iter().filter(|w| w.cuda.is_some()) {
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.cuda.as_ref().map(|c| c.span).unwrap_or(decl.span);
        let (major, minor) = w.cuda.expect("filtered");
        let nodes = candidates(m, w);
        let mut old: Vec<String> = Vec::new();
        let mut need = None;
        let mut unknown = false;
        // Whether forward compatibility would run the class on every too-old node.
        let mut compat_helps = true;
        for (n, model) in &nodes {
            match m.cuda_fit(w, model, m.node_driver(*n)) {
                Err(CudaMisfit::Driver { need: x }) => {
                    need = Some(x);
                    old.push(m.nodes[*n].name.clone());
                    compat_helps &= m
                        .node_driver(*n)
                        .is_some_and(|d| m.cuda_forward_compatible(w, model, d));
                }
                Err(CudaMisfit::Unknown) => unknown = true,
                _ => {}
            }
        }
        if unknown || (nodes.is_empty() && crate::catalog::cuda::min_driver(major, minor).is_none())
        {
            out.push(
                Diagnostic::error(RULE.code, format!("CUDA {major}.{minor} is not a release gpuplan knows"))
                    .at(span, "unknown CUDA release")
                    .with_help("write a released version, e.g. cuda \"12.4\" (the table is in docs/language.md)"),
            );
            continue;
        }
        if old.is_empty() {
            continue;
        }
        let need = crate::catalog::cuda::driver_text(&need.unwrap_or_default());
        let names = crate::units::compress_names(&old).join(", ");
        let d = if old.len() == nodes.len() {
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} `{}` needs CUDA {major}.{minor}, which needs driver >= {need}; every node it may use has an older one ({names})",
                    w.kind.as_str(),
                    w.name
                ),
            )
        } else {
            Diagnostic::warning(
                RULE.code,
                format!(
                    "{} `{}` needs CUDA {major}.{minor} (driver >= {need}): the planner keeps it off {names}",
                    w.kind.as_str(),
                    w.name
                ),
            )
        };
        out.push(
            d.at(span, format!("needs driver >= {need}"))
                .with_help(compat_help(w, major, minor, compat_helps)),
        );
    }
}
