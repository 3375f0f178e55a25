//! Kubernetes core objects: a Namespace and a ResourceQuota per team, a PriorityClass
//! per priority, the GPU nodes' labels and taints (as Node manifests and as a `kubectl`
//! script), the GPU Operator ConfigMaps (mig-parted and device-plugin configuration) and
//! one workload object per placement group of every class it runs (`super::workload`).

use super::facts::{Facts, GPU_RESOURCE, NodeFacts, PriorityFacts, SHARED_RESOURCE};
use super::workload;
use super::{Files, quote, run, sh_word};
use crate::diag::Diagnostic;
use crate::model::Taint;
use minijinja::{Environment, Value};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Serialize)]
struct Quota {
    team: String,
    /// quota key (`requests.<resource>`, `<class>.deviceclass.resource.k8s.io/devices`)
    /// -> hard limit
    hard: Vec<(String, u32)>,
}

#[derive(Serialize)]
struct Ctx<'a> {
    header: String,
    teams: Vec<&'a str>,
    quotas: Vec<Quota>,
    priorities: &'a [PriorityFacts],
    nodes: Vec<NodeCtx<'a>>,
    /// Some quota counts DRA devices.
    dra_quota: bool,
}

/// What the node manifests and the labelling script say about a node. With thousands
/// of nodes these are the largest files, so the per-label and per-taint lines are
/// formatted here, in one pass, with the templates' own quoting ([`quote`],
/// [`sh_word`]); the templates lay out each node around them.
#[derive(Serialize)]
struct NodeCtx<'a> {
    name: &'a str,
    /// The name as one shell word.
    sh_name: Cow<'a, str>,
    /// nodes.yaml: `    key: "value"` per label, one per line.
    yaml_labels: String,
    /// nodes.yaml: a `    - key: ...` entry per taint, with its value and effect lines.
    yaml_taints: String,
    /// label-nodes.sh: ` key=value` per label, each one shell word.
    sh_labels: String,
    /// label-nodes.sh: ` key[=value]:effect` per taint, each one shell word.
    sh_taints: String,
}

impl<'a> NodeCtx<'a> {
    fn of(n: &'a NodeFacts) -> Self {
        NodeCtx {
            name: &n.name,
            sh_name: sh_word(&n.name),
            yaml_labels: yaml_labels(&n.labels),
            yaml_taints: yaml_taints(&n.taints),
            sh_labels: sh_labels(&n.labels),
            sh_taints: sh_taints(&n.taints),
        }
    }
}

/// nodes.yaml: `    key: "value"` per label.
fn yaml_labels(labels: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(labels.len() * 48);
    for (k, v) in labels {
        let _ = writeln!(out, "    {k}: {}", quote(v));
    }
    out
}

/// nodes.yaml: `    - key: k`, `      value: "v"` (when it has one) and
/// `      effect: e` per taint.
fn yaml_taints(taints: &[Taint]) -> String {
    let mut out = String::with_capacity(taints.len() * 80);
    for t in taints {
        let _ = writeln!(out, "    - key: {}", t.key);
        if let Some(v) = &t.value {
            let _ = writeln!(out, "      value: {}", quote(v));
        }
        let _ = writeln!(out, "      effect: {}", t.effect);
    }
    out
}

/// label-nodes.sh: ` key=value` per label, each one shell word.
fn sh_labels(labels: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(labels.len() * 40);
    for (k, v) in labels {
        out.push(' ');
        out.push_str(&sh_word(&format!("{k}={v}")));
    }
    out
}

/// label-nodes.sh: ` key=value:effect` (` key:effect` without a value) per taint,
/// each one shell word.
fn sh_taints(taints: &[Taint]) -> String {
    let mut out = String::new();
    for t in taints {
        let word = match &t.value {
            Some(v) => format!("{}={v}:{}", t.key, t.effect),
            None => format!("{}:{}", t.key, t.effect),
        };
        out.push(' ');
        out.push_str(&sh_word(&word));
    }
    out
}

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let ctx = Ctx {
        header: f.header(),
        teams: f.teams.iter().map(|t| t.name.as_str()).collect(),
        quotas: quotas(f),
        priorities: &f.priorities,
        nodes: f.nodes.iter().map(|n| NodeCtx::of(n)).collect(),
        dra_quota: f.teams.iter().any(|t| !t.dra.is_empty()),
    };
    let mut files = Files::new();
    // One conversion to template values serves every file.
    let values = Value::from_serialize(&ctx);
    for name in [
        "namespaces.yaml",
        "priorityclasses.yaml",
        "resourcequotas.yaml",
        "nodes.yaml",
        "label-nodes.sh",
    ] {
        files.insert(name.into(), run(env, &format!("k8s/{name}.j2"), &values)?);
    }
    files.insert(
        "gpu-operator.yaml".into(),
        run(
            env,
            "k8s/gpu-operator.yaml.j2",
            &super::mig::context(f, env)?,
        )?,
    );
    if let Some(text) = super::dra::deviceclasses(f, env)? {
        files.insert("dra/deviceclasses.yaml".into(), text);
    }
    files.extend(super::operator::render(f, env)?);
    files.extend(workload::render_all(
        f,
        env,
        "k8s/workload.yaml.j2",
        |c, g| workload::object(f, env, c, g, workload::pod(f, c, g), &[], false),
    )?);
    Ok(files)
}

/// One ResourceQuota per team: whole GPUs up to the ceiling, shared GPUs and MIG
/// instances up to what the plan gives the team, by resource name.
fn quotas(f: &Facts) -> Vec<Quota> {
    f.teams
        .iter()
        .map(|t| {
            let mut hard = vec![(GPU_RESOURCE.to_string(), t.ceiling)];
            if t.shared > 0 {
                hard.push((SHARED_RESOURCE.to_string(), t.shared));
            }
            hard.extend(t.mig.iter().map(|(k, v)| (k.clone(), *v)));
            // Extended resources are quota'd on their requests.
            for (k, _) in hard.iter_mut() {
                *k = format!("requests.{k}");
            }
            // DRA: devices per DeviceClass (the API server counts each claim's devices).
            hard.extend(
                t.dra
                    .iter()
                    .map(|(class, v)| (format!("{class}.deviceclass.resource.k8s.io/devices"), *v)),
            );
            hard.sort();
            Quota {
                team: t.name.clone(),
                hard,
            }
        })
        .collect()
}
