//! Dynamic Resource Allocation objects (docs/render.md, "Dynamic Resource
//! Allocation"): the DeviceClasses gpuplan narrows NVIDIA's DRA driver to
//! (`k8s/dra/deviceclasses.yaml`), and next to each workload object on DRA nodes what
//! its pods claim: a ResourceClaimTemplate (whole GPUs, MIG devices), or one shared
//! ResourceClaim with the driver's sharing configuration (a time-sliced or MPS GPU), and
//! a ComputeDomain for a gang on several nodes of one multi-node NVLink domain. The
//! facts are computed in `facts::dra`; this module lays them out.

use super::facts::dra::{DraGroup, DraSharing};
use super::facts::{ClassFacts, Facts, GroupFacts};
use super::{Target, run};
use crate::diag::Diagnostic;
use minijinja::Environment;
use serde::Serialize;

/// The name a pod gives its GPU claim.
pub(crate) const GPU_CLAIM: &str = "gpus";
/// The name a pod gives its ComputeDomain channel claim.
pub(crate) const CHANNEL_CLAIM: &str = "imex-channel";

/// One entry of a pod's `spec.resourceClaims`: a template (one claim per pod) or a
/// claim (shared by the pods that name it).
#[derive(Clone, Debug, Serialize)]
pub(super) struct ClaimRef {
    pub name: &'static str,
    pub template: Option<String>,
    pub claim: Option<String>,
}

/// What the pods of group `g` claim (none off DRA nodes).
pub(super) fn pod_claims(g: &GroupFacts) -> Vec<ClaimRef> {
    let Some(d) = &g.dra else {
        return Vec::new();
    };
    let mut out = vec![if d.sharing.is_some() {
        ClaimRef {
            name: GPU_CLAIM,
            template: None,
            claim: Some(g.name.clone()),
        }
    } else {
        ClaimRef {
            name: GPU_CLAIM,
            template: Some(g.name.clone()),
            claim: None,
        }
    }];
    if d.compute_domain.is_some() {
        out.push(ClaimRef {
            name: CHANNEL_CLAIM,
            template: Some(channel_template(&g.name)),
            claim: None,
        });
    }
    out
}

/// The channel ResourceClaimTemplate the DRA driver creates for ComputeDomain `name`.
pub(crate) fn channel_template(name: &str) -> String {
    format!("{name}-channel")
}

#[derive(Serialize)]
struct ClaimsCtx<'a> {
    name: &'a str,
    namespace: &'a str,
    labels: Vec<(String, String)>,
    pods: u32,
    classes: &'a [(String, String)],
    count: u32,
    sharing: Option<&'a DraSharing>,
    compute_domain: Option<u32>,
    gpu: Option<&'a (String, u32)>,
}

/// The documents that go before group `g`'s workload object in its file: its
/// ComputeDomain and its claim (template), each ending with `---`; empty off DRA nodes.
pub(super) fn documents(
    env: &Environment,
    c: &ClassFacts,
    g: &GroupFacts,
) -> Result<String, Diagnostic> {
    let Some(d) = &g.dra else {
        return Ok(String::new());
    };
    let DraGroup {
        classes,
        count,
        sharing,
        compute_domain,
        gpu,
        ..
    } = d;
    let ctx = ClaimsCtx {
        name: &g.name,
        namespace: &c.team,
        labels: vec![
            ("app.kubernetes.io/name".to_string(), g.name.clone()),
            (crate::names::CLASS_LABEL.to_string(), c.name.clone()),
        ],
        pods: g.count * g.pods,
        classes,
        count: *count,
        sharing: sharing.as_ref(),
        compute_domain: *compute_domain,
        gpu: gpu.as_ref(),
    };
    run(env, "k8s/dra/claims.yaml.j2", &ctx)
}

#[derive(Serialize)]
struct ClassesCtx<'a> {
    header: String,
    classes: &'a [super::facts::dra::DeviceClassFacts],
}

/// `k8s/dra/deviceclasses.yaml` when some group claims devices.
pub(super) fn deviceclasses(f: &Facts, env: &Environment) -> Result<Option<String>, Diagnostic> {
    if f.device_classes.is_empty() {
        return Ok(None);
    }
    let ctx = ClassesCtx {
        header: f.header(),
        classes: &f.device_classes,
    };
    run(env, "k8s/dra/deviceclasses.yaml.j2", &ctx).map(Some)
}

/// GP941: a gang on several nodes of one multi-node NVLink domain that a Kubernetes
/// target renders on device-plugin nodes (no ComputeDomain, no IMEX channel).
pub(crate) const GP941: &str = "GP941";
/// GP944: a GPU the plan shares between the replicas of several objects on a DRA node.
pub(crate) const GP944: &str = "GP944";

/// What the Kubernetes-side targets cannot carry about DRA and IMEX: GP941 per class
/// whose multi-node NVLink gangs land on device-plugin nodes, GP944 per GPU of a DRA
/// node shared by several objects' replicas (each object's ResourceClaim is a device of
/// its own).
pub(super) fn warnings(live: &[(Target, &Facts)]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (t, f) in live {
        if !matches!(t, Target::K8s | Target::Kueue | Target::Volcano) {
            continue;
        }
        for c in &f.classes {
            let unchanneled: Vec<&GroupFacts> = c
                .groups
                .iter()
                .filter(|g| g.dra.is_none() && c.kind == "training" && g.pods > 1)
                .filter(|g| super::facts::dra::one_domain(f.c, g.nodes.iter().map(String::as_str)))
                .collect();
            if !unchanneled.is_empty() {
                out.push(
                    Diagnostic::warning(
                        GP941,
                        format!(
                            "target `{}`: the gangs of `{}` span several nodes of one multi-node NVLink domain on device-plugin nodes, where no pod gets an IMEX channel: their traffic between trays falls back from NVLink to the network",
                            t.dir(),
                            c.name
                        ),
                    )
                    .with_help("hand out these nodes' GPUs through DRA (`gpu-allocation \"dra\"`, Kubernetes 1.34+): each gang then gets a ComputeDomain and its channel claim"),
                );
            }
        }
        out.extend(shared_conflicts(t, f));
        if *t == Target::Volcano {
            out.extend(volcano_quota(f));
        }
    }
    out
}

/// GP943: DRA is used under Volcano while the declared Volcano (or none) does not cap
/// DRA devices per queue.
pub(crate) const GP943: &str = "GP943";

fn volcano_quota(f: &Facts) -> Option<Diagnostic> {
    let uses = f
        .classes
        .iter()
        .flat_map(|c| &c.groups)
        .any(|g| g.dra.is_some());
    if !uses || super::facts::dra::volcano_counts_dra(f.c) {
        return None;
    }
    let named =
        f.c.volcano_version
            .as_deref()
            .map_or("names no Volcano version".to_string(), |v| {
                format!(
                    "names Volcano {}",
                    v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
                )
            });
    Some(
        Diagnostic::warning(
            GP943,
            format!("classes under Volcano claim GPUs through DRA and the cluster {named}: Volcano's queues cap DRA devices (`deviceclass/<class>` in capability) only from 1.15, so volcano/queues.yaml leaves them uncapped"),
        )
        .with_help("declare Volcano 1.15 or newer (`cluster { volcano version=\"1.15\" }`) to cap them per queue; the ResourceQuotas of k8s/ cap them per namespace either way"),
    )
}

/// GP944 per DRA GPU that the replicas of several objects share.
fn shared_conflicts(t: &Target, f: &Facts) -> Vec<Diagnostic> {
    let mut by_gpu: std::collections::BTreeMap<&(String, u32), Vec<&str>> = Default::default();
    for g in f.classes.iter().flat_map(|c| &c.groups) {
        if let Some(gpu) = g.dra.as_ref().and_then(|d| d.gpu.as_ref()) {
            by_gpu.entry(gpu).or_default().push(&g.name);
        }
    }
    by_gpu
        .into_iter()
        .filter(|(_, objects)| objects.len() > 1)
        .map(|((node, gpu), objects)| {
            Diagnostic::warning(
                GP944,
                format!(
                    "target `{}`: GPU {gpu} of DRA node {node} is shared by the replicas of {}: under DRA a GPU belongs to one ResourceClaim, so each object's claim waits for a GPU of its own",
                    t.dir(),
                    objects.join(", ")
                ),
            )
            .with_help("give the shared classes GPUs of their own (fewer replicas per node, or more nodes in the pool), or keep them on device-plugin nodes")
        })
        .collect()
}
