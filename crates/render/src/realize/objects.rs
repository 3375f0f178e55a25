//! Workload objects of a Kubernetes-family folder, classified by apiVersion and kind:
//! `apps/v1 Deployment` (`replicas` independent pods), `batch/v1 Job` (one gang of
//! `parallelism` pods, at most `completions`), `batch.volcano.sh/v1alpha1 Job` (one gang:
//! every task's replicas). A Job annotated `gpuplan.io/gangs: "k"` is a template
//! submitted k times (k gangs).

use super::pods::{self, Pod};
use super::yaml::{self, Doc, at, seq_at, str_at};
use super::{Invariant, Sink, Target};
use std::collections::BTreeMap;

/// The annotation a KAI pod names its PodGroup by.
pub(crate) const POD_GROUP: &str = "pod-group-name";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Deployment,
    Job,
    VolcanoJob,
    /// A KAI PodGroup (`scheduling.run.ai/v2alpha2`) with the pods that name it.
    KaiGang,
}

#[derive(Clone, Debug)]
pub(crate) struct Object {
    pub id: String,
    pub file: String,
    pub name: String,
    pub namespace: String,
    pub kind: Kind,
    pub labels: BTreeMap<String, String>,
    /// Units it carries: replicas (Deployment) or gangs.
    pub capacity: u32,
    /// Its pods form one gang (Jobs); a Deployment's pods are independent units.
    pub gang: bool,
    /// The pod templates of one unit and how many pods of each.
    pub pods: Vec<(Pod, u32)>,
    /// A batch Job with `suspend: true`.
    pub suspended: bool,
    /// Volcano: the queue (`spec.queue`, or the pod annotation), `minAvailable`, and
    /// `networkTopology` (mode, highestTierAllowed).
    pub queue: Option<String>,
    pub min_available: Option<u64>,
    pub network: Option<(String, Option<u64>)>,
    pub scheduler: Option<String>,
    /// KAI: the PodGroup's `topologyConstraint` (Topology, required level).
    pub kai_topology: Option<(String, Option<String>)>,
    /// KAI: `preemptible` (PodGroup `preemptibility`, or the Deployment's
    /// `kai.scheduler/preemptibility` label).
    pub preemptible: Option<bool>,
}

impl Object {
    /// Pods of one unit.
    pub(crate) fn unit_pods(&self) -> u32 {
        self.pods.iter().map(|(_, n)| n).sum()
    }

    /// The class named by `gpuplan.io/class`.
    pub(crate) fn class(&self) -> Option<&str> {
        self.labels.get("gpuplan.io/class").map(String::as_str)
    }
}

/// Every workload object of a folder; malformed ones are Parse violations.
pub(crate) fn read(t: Target, docs: &[Doc], sink: &mut Sink) -> Vec<Object> {
    let mut out = Vec::new();
    for d in docs {
        let kind = if d.is("apps", "Deployment") {
            Kind::Deployment
        } else if d.is("batch", "Job") {
            Kind::Job
        } else if d.is("batch.volcano.sh", "Job") {
            Kind::VolcanoJob
        } else if d.is("scheduling.run.ai", "PodGroup") {
            match kai_gang(d, docs) {
                Ok(o) => out.push(o),
                Err(e) => sink.push(t, Invariant::Parse, (&d.id(), &d.file), e),
            }
            continue;
        } else {
            continue;
        };
        match object(d, kind) {
            Ok(o) => out.push(o),
            Err(e) => sink.push(t, Invariant::Parse, (&d.id(), &d.file), e),
        }
    }
    out
}

fn object(d: &Doc, kind: Kind) -> Result<Object, String> {
    let v = &d.value;
    let labels = yaml::string_map(v, &["metadata", "labels"])?;
    let annotations = yaml::string_map(v, &["metadata", "annotations"])?;
    let gangs = match annotations.get("gpuplan.io/gangs") {
        None => 1,
        Some(k) => k
            .parse::<u32>()
            .map_err(|_| format!("annotation gpuplan.io/gangs `{k}` is not a count"))?,
    };
    let count = |path: &[&str], default: u64| -> Result<u32, String> {
        let n = yaml::uint_at(v, path)?.unwrap_or(default);
        u32::try_from(n).map_err(|_| format!("`{}` is too large", path.join(".")))
    };
    let mut o = Object {
        id: d.id(),
        file: d.file.clone(),
        name: d.name.clone(),
        namespace: d.namespace.clone(),
        kind,
        labels,
        capacity: gangs,
        gang: true,
        pods: Vec::new(),
        suspended: at(v, &["spec", "suspend"]).and_then(serde_yaml::Value::as_bool) == Some(true),
        queue: str_at(v, &["spec", "queue"]).map(String::from),
        min_available: None,
        network: None,
        scheduler: str_at(v, &["spec", "schedulerName"]).map(String::from),
        kai_topology: None,
        preemptible: None,
    };
    match kind {
        Kind::Deployment => {
            o.capacity = count(&["spec", "replicas"], 1)?;
            o.gang = false;
            o.pods.push((template(v, &["spec", "template"])?, 1));
        }
        Kind::Job => {
            let parallelism = count(&["spec", "parallelism"], 1)?;
            let completions = count(&["spec", "completions"], u32::MAX as u64)?;
            o.pods.push((
                template(v, &["spec", "template"])?,
                parallelism.min(completions),
            ));
        }
        Kind::VolcanoJob => volcano(v, &mut o)?,
        Kind::KaiGang => {}
    }
    // KAI: the queue and preemptibility labels of the top owner.
    if o.queue.is_none() {
        o.queue = o.labels.get("kai.scheduler/queue").cloned();
    }
    o.preemptible = o
        .labels
        .get("kai.scheduler/preemptibility")
        .map(|p| p == "preemptible");
    if o.queue.is_none() {
        o.queue = o.pods.iter().find_map(|(p, _)| {
            p.annotations
                .get("scheduling.volcano.sh/queue-name")
                .cloned()
        });
    }
    Ok(o)
}

/// A KAI PodGroup and the pods of its namespace that name it (`pod-group-name`): one
/// gang of `minMember` pods.
fn kai_gang(d: &Doc, docs: &[Doc]) -> Result<Object, String> {
    let v = &d.value;
    let mut pods = Vec::new();
    for p in docs
        .iter()
        .filter(|p| p.is("", "Pod") && p.namespace == d.namespace)
    {
        let names = yaml::string_map(&p.value, &["metadata", "annotations"])?;
        if names.get(POD_GROUP) == Some(&d.name) {
            let mut pod = pods::parse(&p.value)?;
            pod.scheduler = str_at(&p.value, &["spec", "schedulerName"]).map(String::from);
            pods.push((pod, 1));
        }
    }
    let topology = at(v, &["spec", "topologyConstraint"]).and_then(|t| {
        let name = str_at(t, &["topology"])?.to_string();
        Some((
            name,
            str_at(t, &["requiredTopologyLevel"]).map(String::from),
        ))
    });
    Ok(Object {
        id: d.id(),
        file: d.file.clone(),
        name: d.name.clone(),
        namespace: d.namespace.clone(),
        kind: Kind::KaiGang,
        labels: yaml::string_map(v, &["metadata", "labels"])?,
        capacity: 1,
        gang: true,
        scheduler: pods.first().and_then(|(p, _)| p.scheduler.clone()),
        pods,
        suspended: false,
        queue: str_at(v, &["spec", "queue"]).map(String::from),
        min_available: yaml::uint_at(v, &["spec", "minMember"])?,
        network: None,
        kai_topology: topology,
        preemptible: str_at(v, &["spec", "preemptibility"]).map(|p| p == "preemptible"),
    })
}

fn template(v: &serde_yaml::Value, path: &[&str]) -> Result<Pod, String> {
    let t = at(v, path).ok_or_else(|| format!("no `{}`", path.join(".")))?;
    pods::parse(t)
}

fn volcano(v: &serde_yaml::Value, o: &mut Object) -> Result<(), String> {
    let tasks = seq_at(v, &["spec", "tasks"]);
    if tasks.is_empty() {
        return Err("a Volcano Job needs tasks".into());
    }
    for task in tasks {
        let n = yaml::uint_at(task, &["replicas"])?.unwrap_or(1);
        let n = u32::try_from(n).map_err(|_| "task replicas too large".to_string())?;
        o.pods.push((template(task, &["template"])?, n));
    }
    o.min_available = yaml::uint_at(v, &["spec", "minAvailable"])?;
    if let Some(nt) = at(v, &["spec", "networkTopology"]).filter(|x| !x.is_null()) {
        let mode = str_at(nt, &["mode"]).unwrap_or("hard").to_string();
        o.network = Some((mode, yaml::uint_at(nt, &["highestTierAllowed"])?));
    }
    Ok(())
}
