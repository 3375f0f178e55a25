//! GP049: a Slurm node with fewer CPUs than the jobs its GPUs may hold.
use super::prelude::*;
use crate::model::sizing::{self, Usage};
use crate::model::{Authority, NodeIdx};
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP049",
    name: "slurm-job-cpus",
    severity: Severity::Error,
    summary: "a node Slurm schedules has fewer CPUs than the jobs its GPUs may hold (MIG instances, shared replicas): every Slurm job takes a CPU",
    docs: r#"
**What.** A node that Slurm schedules (its pool's or the cluster's scheduler is `slurm`)
has fewer CPUs (hardware threads of its node class's `cpu`) than the jobs its GPUs may
hold when split into the MIG instances or shared replicas of a class that may run there
(seven `1g.10gb` per H100, `per-gpu` time-slice replicas); or its class declares no
`cpu` (slurm.conf then says one CPU) while its GPUs may hold two jobs or more.

**Why.** gpuplan renders every MIG instance and shared replica as one Slurm job, and
Slurm gives every job at least one CPU: a node whose CPUs run out first runs fewer jobs
than the plan puts on it. Declared CPUs are also what slurm.conf says the node has. (The
planner counts a CPU for every Slurm gang pod and packed job itself; without a declared
scheduler, `render` warns where Slurm cannot carry the plan, GP919.)

**Example.**
```text
node-class "h100" {
    gpus 8 model="h100-sxm5-80gb"   // no `cpu`: Slurm sees one CPU
}
```

**Fix.** Declare the node class's real `cpu` (sockets, cores, threads); a GPU server has
far more CPUs than MIG instances.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    // One report per node class: the node of it that may hold the most jobs.
    let mut worst: BTreeMap<&str, (u64, u64, NodeIdx)> = BTreeMap::new();
    for (ni, node) in m.nodes.iter().enumerate() {
        if m.node_authority(ni) != Some(Authority::Slurm) || node.cordon {
            continue;
        }
        // Declared CPUs: the planner counts a CPU for every gang pod and packed job, so
        // only MIG instances and shared replicas are checked here. None declared: Slurm
        // sees one CPU (slurm.conf), so a node that may hold two jobs is refused.
        let (jobs, cpus) = match m.node_cpu_milli(ni) {
            Some(c) => (jobs_per_node(m, ni, false), c / 1000),
            None => (jobs_per_node(m, ni, true), 1),
        };
        if cpus < jobs && worst.get(node.class.as_str()).is_none_or(|w| w.0 < jobs) {
            worst.insert(&node.class, (jobs, cpus, ni));
        }
    }
    for (class, (jobs, cpus, ni)) in worst {
        let span = m
            .classes
            .get(class)
            .map(|k| k.span)
            .unwrap_or(m.nodes[ni].span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "node class `{class}` has {cpus} CPU(s), but Slurm may run {jobs} jobs on one of its nodes (e.g. `{}`: its GPUs' MIG instances or shared replicas, one job each)",
                    m.nodes[ni].name
                ),
            )
            .at(span, "fewer CPUs than jobs")
            .with_help("declare the class's real `cpu` (sockets, cores, threads): every Slurm job takes at least one CPU"),
        );
    }
}

/// The most jobs node `ni`'s GPUs may hold: per GPU, the most units one class that may
/// run there puts on it (MIG instances of its profile or of a fixed layout, shared
/// replicas; with `whole`, one for a whole GPU), over the node's usable GPUs. Packed
/// classes are planned with their CPUs already.
fn jobs_per_node(m: &crate::model::Cluster, ni: NodeIdx, whole: bool) -> u64 {
    let node = &m.nodes[ni];
    let mut total = 0u64;
    for g in node.usable_gpus() {
        let Some(model) = m.model_of(g) else { continue };
        let mut most = u64::from(whole);
        for w in m.workloads.iter().filter(|w| !w.packed()) {
            if m.authority_of(w).is_some_and(|a| a != Authority::Slurm)
                || !sizing::runs_on(m, w, model)
            {
                continue;
            }
            let k = match sizing::usage(w, node.gpus.len() as u32) {
                Usage::Mig => sizing::mig_profile(m, w, model).map_or(1, |p| p.max_count as u64),
                Usage::Shared { per_gpu, .. } => per_gpu as u64,
                _ => u64::from(whole),
            };
            most = most.max(k);
        }
        for l in m
            .mig
            .layouts
            .iter()
            .filter(|l| !l.current && l.nodes.contains(&ni))
        {
            if l.gpus.is_empty() || l.gpus.contains(&g.index) {
                most = most.max(l.profiles.len() as u64);
            }
        }
        total += most;
    }
    total
}
