//! GP053: a DRA declaration that reaches no node a Kubernetes scheduler owns.
use super::prelude::*;
use crate::model::{Allocation, Authority};

pub static RULE: Rule = Rule {
    code: "GP053",
    name: "dra-without-kubernetes-nodes",
    severity: Severity::Error,
    summary: "`gpu-allocation \"dra\"` on a pool (or cluster) whose nodes Slurm owns",
    docs: r#"
**What.** A pool declares `gpu-allocation="dra"` while its nodes are owned by Slurm (its
`scheduler="slurm"`, or the cluster's), or the cluster declares `gpu-allocation "dra"`
and Slurm owns every node.

**Why.** Dynamic Resource Allocation is how Kubernetes pods get devices: NVIDIA's DRA
driver publishes a node's GPUs as ResourceSlices and the kube-scheduler allocates them
to ResourceClaims. Slurm never reads any of it: its jobs get GPUs from gres.conf. The
declaration would change nothing, which is most likely not what was meant (a pool meant
for Kubernetes, or the wrong pool).

**Example.**
```text
pool "hpc" mode="training" nodes="hpc-[01-08]" scheduler="slurm" gpu-allocation="dra"
```

**Fix.** Remove `gpu-allocation` from the Slurm pool, or give the pool to a Kubernetes
scheduler (`scheduler="kueue"`, `"volcano"` or `"kubernetes"`).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let slurm = |n: usize| m.node_authority(n) == Some(Authority::Slurm);
    for p in &cx.spec.pools {
        let Some(a) = p.gpu_allocation.as_ref().filter(|a| a.value == "dra") else {
            continue;
        };
        let Some(pool) = m.pools.iter().find(|q| q.name == p.name.value) else {
            continue;
        };
        if pool.nodes.is_empty() || !pool.nodes.iter().all(|&n| slurm(n)) {
            continue;
        }
        out.push(refusal(a.span, format!("pool `{}`", pool.name)));
    }
    for c in &cx.spec.clusters {
        let Some(a) = c.gpu_allocation.as_ref().filter(|a| a.value == "dra") else {
            continue;
        };
        let reaches = (0..m.nodes.len()).any(|n| m.node_allocation(n) == Allocation::Dra);
        if !m.nodes.is_empty() && !reaches && m.nodes.iter().enumerate().all(|(n, _)| slurm(n)) {
            out.push(refusal(a.span, format!("cluster `{}`", c.name.value)));
        }
    }
}

fn refusal(span: Span, whose: String) -> Diagnostic {
    Diagnostic::error(
        RULE.code,
        format!("{whose} declares DRA, but Slurm owns its nodes: Slurm hands out GPUs through gres.conf, never through resource claims"),
    )
    .at(span, "DRA on Slurm nodes")
    .with_help("remove `gpu-allocation` here, or give the nodes to a Kubernetes scheduler (`scheduler=\"kueue\"`, `\"volcano\"` or `\"kubernetes\"`)")
}
