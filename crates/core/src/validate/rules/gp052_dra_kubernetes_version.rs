//! GP052: DRA declared while the cluster names no Kubernetes 1.34 or newer.
use super::prelude::*;
use crate::model::allocation::DRA_KUBERNETES;

pub(crate) static RULE: Rule = Rule {
    code: "GP052",
    name: "dra-needs-kubernetes-1.34",
    severity: Severity::Error,
    summary: "`gpu-allocation \"dra\"` while the cluster declares no Kubernetes 1.34 or newer",
    docs: r#"
**What.** The cluster or a pool declares `gpu-allocation "dra"`, and `cluster {
kubernetes version=... }` is missing or older than 1.34.

**Why.** With DRA, gpuplan renders `resource.k8s.io/v1` objects (DeviceClasses,
ResourceClaimTemplates, ResourceClaims) and pods that reference them instead of asking
for `nvidia.com/gpu`. The `v1` API of Dynamic Resource Allocation is served from
Kubernetes 1.34, when DRA became stable; an older API server refuses every one of these
objects (1.32 and 1.33 serve only `v1beta1`/`v1beta2`, behind feature gates), so the
rendered workloads could not even be created. gpuplan only emits syntax the declared
versions accept, so the version must be declared.

**Example.**
```text
cluster "c" {
    kubernetes version="1.31"
    gpu-allocation "dra"
}
```

**Fix.** Declare the Kubernetes release the cluster runs, 1.34 or newer
(`kubernetes version="1.34"`), or keep NVIDIA's device plugin (`gpu-allocation
"device-plugin"`, the default).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let declared = cx.model.kubernetes_version.as_deref();
    if declared.is_some_and(|v| v >= DRA_KUBERNETES) {
        return;
    }
    let has = match declared {
        Some(v) => format!(
            "declares Kubernetes {}",
            v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
        ),
        None => "declares no Kubernetes version".to_string(),
    };
    for (span, whose) in dra_declarations(cx.spec) {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!("{whose} hands out GPUs through DRA, which needs Kubernetes 1.34 or newer (resource.k8s.io/v1); the cluster {has}"),
            )
            .at(span, "DRA declared here")
            .with_help("declare the release the cluster runs, 1.34 or newer (`cluster { kubernetes version=\"1.34\" }`), or keep NVIDIA's device plugin (`gpu-allocation \"device-plugin\"`, the default)"),
        );
    }
}

/// Every `gpu-allocation "dra"` of the configuration: its span and whose it is.
pub(super) fn dra_declarations(spec: &crate::spec::Spec) -> Vec<(Span, String)> {
    let mut out = Vec::new();
    for c in &spec.clusters {
        if let Some(a) = c.gpu_allocation.as_ref().filter(|a| a.value == "dra") {
            out.push((a.span, format!("cluster `{}`", c.name.value)));
        }
    }
    for p in &spec.pools {
        if let Some(a) = p.gpu_allocation.as_ref().filter(|a| a.value == "dra") {
            out.push((a.span, format!("pool `{}`", p.name.value)));
        }
    }
    out
}
