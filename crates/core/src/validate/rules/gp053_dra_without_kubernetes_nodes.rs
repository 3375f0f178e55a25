//! GP053: a DRA declaration that reaches no node whose scheduler takes GPUs through
//! resource claims (only Slurm or KAI Scheduler nodes).
use super::prelude::*;
use crate::model::{Allocation, Authority};

pub(crate) static RULE: Rule = Rule {
    code: "GP053",
    name: "dra-without-kubernetes-nodes",
    severity: Severity::Error,
    summary: "`gpu-allocation \"dra\"` on a pool (or cluster) whose nodes Slurm or KAI Scheduler owns",
    docs: r#"
**What.** A pool declares `gpu-allocation="dra"` while its nodes are owned by Slurm or
by KAI Scheduler (its `scheduler="slurm"` or `"kai"`, or the cluster's), or the cluster
declares `gpu-allocation "dra"` and Slurm or KAI owns every node.

**Why.** Dynamic Resource Allocation is how Kubernetes pods get devices: NVIDIA's DRA
driver publishes a node's GPUs as ResourceSlices and the kube-scheduler allocates them
to ResourceClaims. Slurm never reads any of it: its jobs get GPUs from gres.conf. KAI
Scheduler shares GPUs its own way (`gpu-fraction` and `gpu-memory` pods on a GPU that
the device plugin advertises whole and a reservation pod holds), and its DRA accounting
counts neither a ResourceClaim shared by several pods nor `firstAvailable` requests,
the two forms gpuplan's claims take for shared GPUs and groups over several models:
gpuplan keeps KAI's nodes on the device plugin. The declaration would change nothing,
which is most likely not what was meant (a pool meant for kube-scheduler, Kueue or
Volcano, or the wrong pool). A cluster-wide `gpu-allocation "dra"` with some Slurm or
KAI pools is fine: it applies to the other pools.

**Example.**
```text
pool "hpc" mode="training" nodes="hpc-[01-08]" scheduler="slurm" gpu-allocation="dra"
pool "research" mode="whole-gpu" nodes="gpu-[01-04]" scheduler="kai" gpu-allocation="dra"
```

**Fix.** Remove `gpu-allocation` from the Slurm or KAI pool, or give the pool to a
scheduler that hands out DRA claims (`scheduler="kueue"`, `"volcano"` or
`"kubernetes"`).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    // The scheduler of node `n` when it takes no GPUs through claims (Slurm, KAI).
    let owner = |n: usize| m.node_authority(n).filter(|a| !a.claims_gpus_through_dra());
    for p in &cx.spec.pools {
        let Some(a) = p.gpu_allocation.as_ref().filter(|a| a.value == "dra") else {
            continue;
        };
        let Some(pool) = m.pools.iter().find(|q| q.name == p.name.value) else {
            continue;
        };
        let owners: Option<Vec<Authority>> = pool.nodes.iter().map(|&n| owner(n)).collect();
        if let Some(owners) = owners.filter(|o| !o.is_empty()) {
            out.push(refusal(a.span, format!("pool `{}`", pool.name), &owners));
        }
    }
    for c in &cx.spec.clusters {
        let Some(a) = c.gpu_allocation.as_ref().filter(|a| a.value == "dra") else {
            continue;
        };
        let reaches = (0..m.nodes.len()).any(|n| m.node_allocation(n) == Allocation::Dra);
        let owners: Option<Vec<Authority>> = (0..m.nodes.len()).map(owner).collect();
        if let Some(owners) = owners.filter(|o| !o.is_empty() && !reaches) {
            out.push(refusal(
                a.span,
                format!("cluster `{}`", c.name.value),
                &owners,
            ));
        }
    }
}

fn refusal(span: Span, whose: String, owners: &[Authority]) -> Diagnostic {
    let kai = owners.contains(&Authority::Kai);
    let slurm = owners.contains(&Authority::Slurm);
    let (who, why, label) = match (slurm, kai) {
        (true, true) => (
            "Slurm and KAI Scheduler own",
            "Slurm hands out GPUs through gres.conf, and KAI shares the GPUs the device plugin advertises itself",
            "DRA on Slurm and KAI nodes",
        ),
        (false, true) => (
            "KAI Scheduler owns",
            "KAI shares the GPUs the device plugin advertises itself (gpu-fraction, gpu-memory) and does not count shared ResourceClaims",
            "DRA on KAI nodes",
        ),
        _ => (
            "Slurm owns",
            "Slurm hands out GPUs through gres.conf, never through resource claims",
            "DRA on Slurm nodes",
        ),
    };
    Diagnostic::error(
        RULE.code,
        format!("{whose} declares DRA, but {who} its nodes: {why}"),
    )
    .at(span, label)
    .with_help("remove `gpu-allocation` here, or give the nodes to a scheduler that hands out DRA claims (`scheduler=\"kueue\"`, `\"volcano\"` or `\"kubernetes\"`)")
}
