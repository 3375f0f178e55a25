//! KAI's workload objects: per gang of a training group, a PodGroup and its pods; a
//! Deployment for replicas. Every pod is scheduled by `kai-scheduler` in its team's
//! queue; shared and fractional replicas ask `gpu-fraction` / `gpu-memory` instead of a
//! GPU resource (docs/gpu-sharing of KAI-Scheduler).

use super::super::facts::{Ask, ClassFacts, Facts, GroupFacts, NodeFacts, SHARED_RESOURCE};
use super::super::{run, workload};
use super::{QUEUE_LABEL, SCHEDULER, TopologyCtx, Use, constraint, gpus_text};
use crate::diag::Diagnostic;
use minijinja::Environment;
use serde::Serialize;
use std::collections::BTreeMap;

/// The annotation tying a pod to its PodGroup (`PodGroupAnnotationForPod`).
const POD_GROUP: &str = "pod-group-name";
/// A share of one GPU's memory (`GpuFraction`), e.g. `"0.25"`.
const GPU_FRACTION: &str = "gpu-fraction";
/// GPU memory in MiB (`GpuMemory`).
const GPU_MEMORY: &str = "gpu-memory";
/// `preemptible` / `non-preemptible` on a PodGroup's top owner (`PreemptibilityLabelKey`).
const PREEMPTIBILITY: &str = "kai.scheduler/preemptibility";

const MIB: u64 = 1 << 20;

pub(super) struct Workloads<'a> {
    pub f: &'a Facts<'a>,
    pub env: &'a Environment<'a>,
    pub topologies: &'a [TopologyCtx],
    pub use_of: &'a BTreeMap<String, Use>,
}

/// One gang: its PodGroup and its pods (laid out already).
#[derive(Serialize)]
struct Gang {
    name: String,
    pods: Vec<String>,
}

#[derive(Serialize)]
struct PodGroupCtx<'a> {
    header: String,
    about: String,
    namespace: &'a str,
    labels: Vec<(String, String)>,
    queue: &'a str,
    priority: &'a str,
    min_member: u32,
    preemptibility: &'static str,
    topology: Option<(String, Option<String>, Option<String>)>,
    gangs: Vec<Gang>,
}

impl Workloads<'_> {
    /// The objects of one group, as one file.
    pub(crate) fn object(&self, c: &ClassFacts, g: &GroupFacts) -> Result<String, Diagnostic> {
        let preempt = self.preemptibility(c);
        let mut pod = self.pod(c, g);
        pod.labels
            .push((PREEMPTIBILITY.to_string(), preempt.to_string()));
        pod.labels.sort();
        if c.kind == "training" {
            return self.gangs(c, g, pod, preempt);
        }
        let labels = [
            (QUEUE_LABEL.to_string(), c.team.clone()),
            (PREEMPTIBILITY.to_string(), preempt.to_string()),
        ];
        pod.labels
            .retain(|(k, _)| k != PREEMPTIBILITY && k != QUEUE_LABEL);
        let o = workload::object(self.f, self.env, c, g, pod, &labels, false)?;
        run(self.env, "k8s/workload.yaml.j2", &o)
    }

    /// What runs above the team's guarantee may be reclaimed (KAI admits a
    /// non-preemptible job only within its queue's quota): a class is preemptible when
    /// it says so, or when its team is planned above its guarantee.
    fn preemptibility(&self, c: &ClassFacts) -> &'static str {
        let within = self
            .f
            .teams
            .iter()
            .find(|t| t.name == c.team)
            .is_some_and(|t| {
                self.use_of
                    .get(&c.team)
                    .is_none_or(|u| u.whole <= t.guarantee as u64)
            });
        if c.preemptible || !within {
            "preemptible"
        } else {
            "non-preemptible"
        }
    }

    /// The pod template: KAI's scheduler and queue, and a GPU share as KAI asks it.
    fn pod<'c>(&self, c: &'c ClassFacts, g: &'c GroupFacts) -> workload::PodCtx<'c> {
        let mut pod = workload::pod(self.f, c, g);
        pod.scheduler_name = Some(SCHEDULER);
        pod.labels.push((QUEUE_LABEL.to_string(), c.team.clone()));
        if let Ask::Shared { thousandths, .. } = &g.ask {
            pod.limits.retain(|(r, _)| r != SHARED_RESOURCE);
            let fraction = self
                .f
                .c
                .workloads
                .iter()
                .find(|w| w.name == c.name)
                .is_some_and(|w| w.gpu_milli.is_some());
            let share = match c.gpu_memory {
                Some(m) if !fraction => (GPU_MEMORY, m.div_ceil(MIB).to_string()),
                _ => (GPU_FRACTION, gpus_text(*thousandths as u64)),
            };
            pod.annotations.push((share.0.to_string(), share.1));
        }
        pod.annotations.sort();
        pod
    }

    /// A training group: a PodGroup per gang, each with its pods.
    fn gangs(
        &self,
        c: &ClassFacts,
        g: &GroupFacts,
        pod: workload::PodCtx,
        preemptibility: &'static str,
    ) -> Result<String, Diagnostic> {
        let nodes: Vec<&NodeFacts> = self.f.nodes_named(&g.nodes).collect();
        let topology = (g.pods > 1)
            .then(|| constraint(self.f, self.topologies, c, &nodes))
            .flatten();
        let mut gangs = Vec::new();
        for k in 1..=g.count {
            let name = if g.count == 1 {
                g.name.clone()
            } else {
                format!("{}-{k}", g.name)
            };
            let mut pods = Vec::new();
            for i in 0..g.pods {
                let mut p = workload::pod(self.f, c, g);
                p.labels = pod.labels.clone();
                p.annotations = pod.annotations.clone();
                p.annotations.push((POD_GROUP.to_string(), name.clone()));
                p.annotations.sort();
                p.scheduler_name = pod.scheduler_name;
                let text = workload::pod_yaml(self.env, &p, 0)?;
                let head = format!(
                    "metadata:\n  name: {name}-worker-{i}\n  namespace: {}\n",
                    c.team
                );
                pods.push(text.replacen("metadata:\n", &head, 1));
            }
            gangs.push(Gang { name, pods });
        }
        let mut labels = vec![
            ("app.kubernetes.io/name".to_string(), g.name.clone()),
            (workload::CLASS_LABEL.to_string(), c.name.clone()),
            (QUEUE_LABEL.to_string(), c.team.clone()),
        ];
        labels.sort();
        let ctx = PodGroupCtx {
            header: self.f.header(),
            about: workload::describe(c, g),
            namespace: &c.team,
            labels,
            queue: &c.team,
            priority: &c.priority,
            min_member: g.pods,
            preemptibility,
            topology,
            gangs,
        };
        run(self.env, "kai/podgroup.yaml.j2", &ctx)
    }
}
