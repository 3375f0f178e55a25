//! GP050: a node with GPUs of several models owned by a Kubernetes-family scheduler.
use super::prelude::*;
use std::collections::BTreeSet;

pub(crate) static RULE: Rule = Rule {
    code: "GP050",
    name: "mixed-gpus-on-kubernetes",
    severity: Severity::Error,
    summary: "nodes with GPUs of several models owned by kubernetes, kueue, volcano or kai, where a pod cannot choose the model it gets",
    docs: r#"
**What.** A node class has GPUs of several models (one `gpus` line per model) and some
of its nodes are owned by `kubernetes`, `kueue`, `volcano` or `kai` (their pool's
`scheduler=`, else the cluster's `scheduler`), or no scheduler is declared at all (then
every target, the Kubernetes ones included, renders every node).

**Why.** NVIDIA's device plugin advertises every GPU of a node as one resource,
`nvidia.com/gpu`, and labels the node with one product (`nvidia.com/gpu.product`). A pod
asks for a number of `nvidia.com/gpu` and gets whichever GPUs the plugin hands out: it
cannot ask for the A100s rather than the T4s, so a plan that puts a class on the GPUs of
one model could not be carried out. (Renaming the resources per model, or dynamic
resource allocation, would make it expressible; gpuplan does not render them yet.)
Slurm can: each model is a GRES type (`Gres=gpu:a100:8,gpu:t4:2`) and a job asks for
one (`--gres=gpu:a100:2`).

**Example.**
```text
cluster "c" { scheduler "kubernetes"; }
node-class "x" {
    gpus 8 model="a100-sxm4-80gb"
    gpus 2 model="t4-16gb"
}
nodes "x-[1-4]" class="x"
```

**Fix.** Give these nodes to Slurm (a pool with `scheduler="slurm"`), or declare only
the GPUs Kubernetes pods should get (one `gpus` line; the others left out of the
configuration, e.g. disabled on the node). Splitting the GPUs by model with MIG or DRA
is not supported yet.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let mut reported = BTreeSet::new();
    for (n, node) in m.nodes.iter().enumerate() {
        let Some(k) = m.classes.get(&node.class).filter(|k| k.is_mixed()) else {
            continue;
        };
        let owner = match m.node_authority(n) {
            Some(a) if a.kubernetes_managed() => a.as_str(),
            None if !m.authorities_declared() => "no scheduler declared (every target renders it)",
            _ => continue,
        };
        if !reported.insert((k.name.clone(), owner)) {
            continue;
        }
        let Some(decl) = cx.spec.classes.iter().find(|c| c.name.value == k.name) else {
            continue;
        };
        let span = decl.gpus.get(1).map_or(decl.span, |g| g.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "node class `{}` has GPUs of several models ({}) and its node `{}` is rendered for Kubernetes ({owner}): a pod cannot choose which model it gets",
                    k.name,
                    k.gpus_text(),
                    node.name
                ),
            )
            .at(span, "a second GPU model on the node")
            .with_help(HELP),
        );
    }
}

const HELP: &str = "the NVIDIA device plugin advertises one `nvidia.com/gpu` resource per node; give these nodes to Slurm (`scheduler \"slurm\"`, or a pool with scheduler=\"slurm\"), or declare only the GPUs pods should get (splitting GPUs by model with MIG or DRA is not supported yet)";
