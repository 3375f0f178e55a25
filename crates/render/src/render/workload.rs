//! The workload objects of the Kubernetes-side targets (plain Kubernetes, Kueue,
//! Volcano): one object per placement group ([`super::facts::GroupFacts`]), whose pods
//! select the group's nodes (scheduler, pool, GPU model, pinned domain; packed replicas
//! their nodes by name; shared replicas the nodes shared as the plan gives them),
//! tolerate their taints and ask for what the plan gives each pod: the GPU resource, and
//! the class's declared CPU and memory. The pod template is built here once and laid
//! out by `templates/k8s/pod.yaml.j2`; each target wraps it in its own object.

use super::facts::{ClassFacts, Facts, GroupFacts, MODEL_LABEL, PLUGIN_CONFIG_LABEL, POOL_LABEL};
use super::{Files, run};
use crate::diag::Diagnostic;
use crate::model::Taint;
use minijinja::Environment;
use serde::Serialize;

/// The label on every workload object and pod: the class it carries.
pub(crate) const CLASS_LABEL: &str = "gpuplan.io/class";
/// The annotation recording the GPU memory a replica needs (the GPU model selected
/// already holds it).
pub(crate) const GPU_MEMORY_ANNOTATION: &str = "gpuplan.io/gpu-memory";

#[derive(Serialize)]
pub(super) struct TolerationCtx {
    key: String,
    operator: &'static str,
    value: Option<String>,
    effect: String,
}

pub(super) fn tolerations(t: &[Taint]) -> Vec<TolerationCtx> {
    t.iter()
        .map(|t| TolerationCtx {
            key: t.key.clone(),
            operator: if t.value.is_some() { "Equal" } else { "Exists" },
            value: t.value.clone(),
            effect: t.effect.clone(),
        })
        .collect()
}

/// One node-affinity expression.
#[derive(Serialize)]
pub(super) struct Expr {
    key: String,
    operator: &'static str,
    values: Vec<String>,
}

/// A pod template: what [`pod`] computes and `k8s/pod.yaml.j2` lays out.
#[derive(Serialize)]
pub(super) struct PodCtx<'a> {
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub scheduler_name: Option<&'static str>,
    pub priority: &'a str,
    pub restart: Option<&'static str>,
    pub affinity: Vec<Expr>,
    pub tolerations: Vec<TolerationCtx>,
    pub image: String,
    pub env: &'a [(String, String)],
    pub nccl_mount: bool,
    /// resource -> quantity
    pub limits: Vec<(String, String)>,
    pub requests: Vec<(String, String)>,
    /// DRA: the pod's resource claims (its GPUs, its ComputeDomain channel), which the
    /// container uses instead of an extended resource.
    pub claims: Vec<super::dra::ClaimRef>,
}

/// A CPU quantity: whole cores (`4`) or millicores (`11500m`).
pub(crate) fn cpu_quantity(milli: u64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// A memory quantity in the largest binary unit that is exact (`12Gi`, `1536Mi`).
pub(crate) fn memory_quantity(bytes: u64) -> String {
    for (unit, size) in [
        ("Ti", 1u64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if bytes >= size && bytes % size == 0 {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

/// The pod template of group `g` of class `c`: node selection, tolerations and
/// resources (the target adds its own labels, annotations and scheduler name).
pub(super) fn pod<'a>(f: &Facts, c: &'a ClassFacts, g: &'a GroupFacts) -> PodCtx<'a> {
    let mut limits = Vec::new();
    let mut requests = Vec::new();
    // On DRA nodes the GPUs come from claims: no extended resource is advertised there.
    if let Some(r) = g.resource.as_ref().filter(|_| g.dra.is_none()) {
        limits.push((r.clone(), g.per_pod.to_string()));
    }
    if c.cpu_milli > 0 {
        requests.push(("cpu".to_string(), cpu_quantity(c.cpu_milli)));
    }
    if c.memory > 0 {
        let q = memory_quantity(c.memory);
        requests.push(("memory".to_string(), q.clone()));
        limits.push(("memory".to_string(), q));
    }
    limits.sort();
    let mut annotations = Vec::new();
    if let Some(m) = c.gpu_memory {
        annotations.push((GPU_MEMORY_ANNOTATION.to_string(), memory_quantity(m)));
    }
    PodCtx {
        labels: vec![
            (CLASS_LABEL.to_string(), c.name.clone()),
            ("app.kubernetes.io/name".to_string(), g.name.clone()),
        ],
        annotations,
        scheduler_name: None,
        priority: &c.priority,
        restart: (c.kind == "training").then_some("Never"),
        affinity: affinity(f, c, g),
        tolerations: tolerations(&g.tolerations),
        image: format!("registry.example.com/{}:latest", c.name),
        env: &g.nccl,
        nccl_mount: g.nccl_mount,
        limits,
        requests,
        claims: super::dra::pod_claims(g),
    }
}

/// The nodes a group's pods may use: its scheduler's, its pools and GPU models, the
/// domain its gangs are pinned to, the nodes packed replicas were packed on, and the
/// device-plugin configurations that share GPUs as the plan gives them.
fn affinity(f: &Facts, c: &ClassFacts, g: &GroupFacts) -> Vec<Expr> {
    let mut out = Vec::new();
    let mut add = |key: &str, values: Vec<String>| {
        if !values.is_empty() {
            out.push(Expr {
                key: key.to_string(),
                operator: "In",
                values,
            });
        }
    };
    if !f.serves.is_empty() {
        if let Some(a) = c.scheduler {
            add(super::facts::SCHEDULER_LABEL, vec![a.as_str().to_string()]);
        }
    }
    add(POOL_LABEL, g.pools.clone());
    add(MODEL_LABEL, g.models.clone());
    if let Some(p) = &g.pin {
        add(&p.label, vec![p.value.clone()]);
    }
    if let Some(clique) = g.dra.as_ref().and_then(|d| d.clique.clone()) {
        add(super::facts::dra::CLIQUE_LABEL, vec![clique]);
    }
    add("kubernetes.io/hostname", g.hosts.clone());
    add(PLUGIN_CONFIG_LABEL, g.plugin_configs.clone());
    out
}

/// The pod template laid out, indented by `indent` spaces (the object templates place
/// it under their `template:` key).
pub(super) fn pod_yaml(
    env: &Environment,
    pod: &PodCtx,
    indent: usize,
) -> Result<String, Diagnostic> {
    let text = run(env, "k8s/pod.yaml.j2", pod)?;
    let pad = " ".repeat(indent);
    Ok(text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// A `batch/v1` Job (a training group: one gang, a template submitted once per gang)
/// or an `apps/v1` Deployment (replicas), as `k8s/workload.yaml.j2` lays it out.
#[derive(Serialize)]
pub(super) struct ObjectCtx {
    header: String,
    about: String,
    kind: &'static str,
    name: String,
    namespace: String,
    labels: Vec<(String, String)>,
    /// Gangs the Job template is submitted for.
    gangs: u32,
    suspend: bool,
    pods: u32,
    replicas: u32,
    pod: String,
}

/// The plain object of group `g` with the pod template `pod` and the target's extra
/// object `labels`; `suspend` for a Job that Kueue admits.
pub(super) fn object(
    f: &Facts,
    env: &Environment,
    c: &ClassFacts,
    g: &GroupFacts,
    mut pod: PodCtx,
    labels: &[(String, String)],
    suspend: bool,
) -> Result<ObjectCtx, Diagnostic> {
    let job = c.kind == "training";
    pod.labels.extend(labels.iter().cloned());
    pod.labels.sort();
    let mut object_labels = vec![
        ("app.kubernetes.io/name".to_string(), g.name.clone()),
        (CLASS_LABEL.to_string(), c.name.clone()),
    ];
    object_labels.extend(labels.iter().cloned());
    object_labels.sort();
    Ok(ObjectCtx {
        header: f.header(),
        about: describe(c, g),
        kind: if job { "Job" } else { "Deployment" },
        name: g.name.clone(),
        namespace: c.team.clone(),
        labels: object_labels,
        gangs: if job { g.count } else { 1 },
        suspend,
        pods: g.pods,
        replicas: g.count * g.pods,
        pod: pod_yaml(env, &pod, 4)?,
    })
}

/// The header comment of a group's object: what it carries of its class.
pub(super) fn describe(c: &ClassFacts, g: &GroupFacts) -> String {
    let what = if c.kind == "training" {
        format!("{} gang(s) of {} pod(s) x {}", g.count, g.pods, ask_text(g))
    } else {
        format!("{} replica(s) x {}", g.count, ask_text(g))
    };
    let mut wheres = vec![format!("pool {}", g.pools.join(","))];
    if !g.models.is_empty() {
        wheres.push(format!("GPU model {}", g.models.join(",")));
    }
    if let Some(p) = &g.pin {
        wheres.push(format!("{} {}", p.tier, p.value));
    }
    format!(
        "Class `{}` ({}, team {}, priority {}): {what} in {}",
        c.name,
        c.kind,
        c.team,
        c.priority,
        wheres.join(", ")
    )
}

/// What one pod asks, in words.
fn ask_text(g: &GroupFacts) -> String {
    use super::facts::Ask;
    match &g.ask {
        Ask::Whole { gpus } => format!("{gpus} GPU(s)"),
        Ask::Mig { profile } => format!("one MIG {profile}"),
        Ask::Shared { thousandths, .. } => {
            format!("a shared GPU ({}%)", *thousandths as f64 / 10.0)
        }
        Ask::Cpu => "no GPU".to_string(),
    }
}

/// Renders one object per group of every class with `template`, at
/// `<folder>workloads/<object>.yaml`, through `ctx` (the target's object context).
pub(super) fn render_all<S: Serialize>(
    f: &Facts,
    env: &Environment,
    template: &str,
    ctx: impl Fn(&ClassFacts, &GroupFacts) -> Result<S, Diagnostic>,
) -> Result<Files, Diagnostic> {
    render_where(f, env, template, |_| true, ctx)
}

/// [`render_all`] for the groups `keep` accepts (a target that cannot carry some).
pub(super) fn render_where<S: Serialize>(
    f: &Facts,
    env: &Environment,
    template: &str,
    keep: impl Fn(&GroupFacts) -> bool,
    ctx: impl Fn(&ClassFacts, &GroupFacts) -> Result<S, Diagnostic>,
) -> Result<Files, Diagnostic> {
    let mut files = Files::new();
    for c in &f.classes {
        for g in c.groups.iter().filter(|g| g.k8s_carried && keep(g)) {
            let object = ctx(c, g)?;
            let mut text = super::dra::documents(env, c, g)?;
            text.push_str(&run(env, template, &object)?);
            files.insert(format!("workloads/{}.yaml", g.name), text);
        }
    }
    Ok(files)
}
