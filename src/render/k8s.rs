//! Kubernetes core objects: a Namespace and a ResourceQuota per team, a PriorityClass
//! per priority, the GPU nodes' labels and taints (as Node manifests and as a `kubectl`
//! script), the GPU Operator ConfigMaps (mig-parted and device-plugin configuration) and
//! one example manifest per workload class.

use super::facts::{ClassFacts, Facts, GPU_RESOURCE, SHARED_RESOURCE};
use super::{Files, run};
use crate::diag::Diagnostic;
use crate::model::Taint;
use minijinja::Environment;
use serde::Serialize;

#[derive(Serialize)]
struct Quota {
    team: String,
    /// resource -> hard limit (requests.<resource>)
    hard: Vec<(String, u32)>,
}

#[derive(Serialize)]
struct Ctx<'a> {
    header: String,
    teams: Vec<&'a str>,
    quotas: Vec<Quota>,
    priorities: &'a [super::facts::PriorityFacts],
    nodes: &'a [super::facts::NodeFacts],
}

#[derive(Serialize)]
struct WorkloadCtx<'a> {
    header: String,
    c: &'a ClassFacts,
    /// `Job` (training) or `Deployment`.
    kind: &'static str,
    pool_label: &'static str,
    tolerations: Vec<TolerationCtx>,
}

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

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let quotas = f
        .teams
        .iter()
        .map(|t| {
            let mut hard = vec![(GPU_RESOURCE.to_string(), t.ceiling)];
            if t.shared > 0 {
                hard.push((SHARED_RESOURCE.to_string(), t.shared));
            }
            hard.extend(t.mig.iter().map(|(k, v)| (k.clone(), *v)));
            hard.sort();
            Quota {
                team: t.name.clone(),
                hard,
            }
        })
        .collect();
    let ctx = Ctx {
        header: f.header(),
        teams: f.teams.iter().map(|t| t.name.as_str()).collect(),
        quotas,
        priorities: &f.priorities,
        nodes: &f.nodes,
    };
    let mut files = Files::new();
    for name in [
        "namespaces.yaml",
        "priorityclasses.yaml",
        "resourcequotas.yaml",
        "nodes.yaml",
        "label-nodes.sh",
    ] {
        files.insert(name.into(), run(env, &format!("k8s/{name}.j2"), &ctx)?);
    }
    files.insert(
        "gpu-operator.yaml".into(),
        run(
            env,
            "k8s/gpu-operator.yaml.j2",
            &super::mig::context(f, env)?,
        )?,
    );
    for c in &f.classes {
        let ctx = WorkloadCtx {
            header: f.header(),
            c,
            kind: if c.kind == "training" {
                "Job"
            } else {
                "Deployment"
            },
            pool_label: super::facts::POOL_LABEL,
            tolerations: tolerations(&c.tolerations),
        };
        files.insert(
            format!("workloads/{}.yaml", c.name),
            run(env, "k8s/workload.yaml.j2", &ctx)?,
        );
    }
    Ok(files)
}
