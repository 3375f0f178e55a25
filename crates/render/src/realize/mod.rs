//! The realizability checker: do the rendered files make the schedulers carry out the
//! plan? It reads only the rendered folder (the way each scheduler reads it), the plan
//! (the intent) and the declared hardware (what each node physically has), and shares
//! no code with `render` nor its label constants: the keys of the contract are written
//! here again, so a renderer's typo shows (docs/render.md, "Realizability").
//!
//! Each target folder is checked on its own (`k8s/` gives the Node labels, taints and
//! device-plugin configs that `kueue/` and `volcano/` pods land on). Every planned unit
//! ([`units`]) must be matched to an object that can carry it (a b-matching where each
//! object holds as many units as its replicas or gangs, [`matching`]); then nodes,
//! shares, MIG layouts, quotas, topology and references are checked against what the
//! matched objects ask. Pure: files in, [`Report`] out.

mod capacity;
mod carry;
mod cohorts;
mod dra;
mod hostlist;
mod k8s;
mod kai;
mod kube;
mod kueue;
mod matching;
mod mig;
mod nodes;
mod objects;
mod plugin;
mod pods;
mod quantity;
mod quotas;
mod refs;
mod slurm;
mod units;
mod usage;
pub mod view;
mod volcano;
mod yaml;

use crate::model::Cluster;
use crate::placement::Placement;
use serde::Serialize;
use std::collections::BTreeMap;

/// Version of the JSON form of a [`Report`] (`check-render --format json`).
pub(crate) const FORMAT_VERSION: &str = "1";

/// A rendered target folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    K8s,
    Kueue,
    Volcano,
    Kai,
    Slurm,
    Mig,
}

impl Target {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Target::K8s => "k8s",
            Target::Kueue => "kueue",
            Target::Volcano => "volcano",
            Target::Kai => "kai",
            Target::Slurm => "slurm",
            Target::Mig => "mig",
        }
    }

    /// The folder's prefix in the rendered tree (`k8s/`).
    pub(crate) fn folder(self) -> String {
        format!("{}/", self.as_str())
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which promise of the rendered files a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// Every placed class a target owns has an object there, labelled with its class.
    Coverage,
    /// Every planned unit is matched to an object that can carry it: its nodes
    /// selected, taints tolerated, exactly the planned GPU resource and amount, the
    /// class's CPU and memory.
    Carried,
    /// No object asks for more than the plan gives its class.
    Excess,
    /// No node is asked for more than it advertises.
    Capacity,
    /// A shared slot gives each replica at least its planned share, with the class's
    /// sharing mode.
    Sharing,
    /// MIG configurations create exactly the planned layouts.
    Mig,
    /// Quotas admit what the plan gives each team.
    Quota,
    /// Gangs that must stay in one domain have all their nodes in one.
    Topology,
    /// A gang on several nodes of one multi-node NVLink domain has an IMEX channel: on
    /// DRA nodes a ComputeDomain's channel claim (numNodes its pods), under Slurm
    /// `switch/nvidia_imex` where the declared Slurm has it.
    Imex,
    /// Names resolve: priority classes, queues, flavors, accounts, QOS, partitions.
    Reference,
    /// A file cannot be read as its scheduler reads it.
    Parse,
}

impl Invariant {
    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::Coverage => "coverage",
            Invariant::Carried => "carried",
            Invariant::Excess => "excess",
            Invariant::Capacity => "capacity",
            Invariant::Sharing => "sharing",
            Invariant::Mig => "mig",
            Invariant::Quota => "quota",
            Invariant::Topology => "topology",
            Invariant::Imex => "imex",
            Invariant::Reference => "reference",
            Invariant::Parse => "parse",
        }
    }
}

/// One way the rendered files do not carry out the plan.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    pub target: Target,
    /// The rendered file (relative to the folder), empty when the problem is a file
    /// that is missing.
    pub file: String,
    /// The object concerned (`Deployment/search/chat-7b`, `slurm/workloads/x.sbatch`,
    /// `Node/h100-01`, `class/chat-7b`).
    pub object: String,
    pub invariant: Invariant,
    pub message: String,
}

/// What was checked in one target folder.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// Placed classes the target owns.
    pub classes: usize,
    /// Their planned units (gangs, replicas, instances).
    pub units: usize,
    /// Workload objects read.
    pub objects: usize,
    /// Nodes whose advertisement was derived.
    pub nodes: usize,
}

/// The checker's answer.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub format_version: String,
    pub cluster: String,
    /// No violation.
    pub realizable: bool,
    /// Per target folder present.
    pub checked: BTreeMap<Target, Checked>,
    pub violations: Vec<Violation>,
}

/// Collects violations.
#[derive(Default)]
pub(crate) struct Sink {
    pub list: Vec<Violation>,
}

impl Sink {
    pub(crate) fn push(
        &mut self,
        target: Target,
        invariant: Invariant,
        (object, file): (&str, &str),
        message: String,
    ) {
        self.list.push(Violation {
            target,
            file: file.to_string(),
            object: object.to_string(),
            invariant,
            message,
        });
    }
}

/// Checks the rendered files (`path relative to the folder -> text`) against the plan
/// and the cluster. Files under `fabric/` and the `.gpuplan-render` marker are ignored.
pub fn check(files: &BTreeMap<String, String>, c: &Cluster, plan: &Placement) -> Report {
    let mut sink = Sink::default();
    let units = units::of(c, plan);
    let mut checked = BTreeMap::new();
    let present = |t: Target| files.keys().any(|p| p.starts_with(&t.folder()));
    let kube_targets: Vec<Target> = [Target::K8s, Target::Kueue, Target::Volcano, Target::Kai]
        .into_iter()
        .filter(|t| present(*t))
        .collect();
    if !kube_targets.is_empty() {
        let world = kube::World::read(files, c, &mut sink);
        let kq = kueue::read(&world, &mut sink);
        let vc = volcano::read(&world, &mut sink);
        let claims = dra::Dra::read(&world.docs, &mut sink);
        let ka = kai::read(&world, &mut sink);
        let mut carried = Vec::new();
        for t in &kube_targets {
            let scope = carry::Scope {
                t: *t,
                c,
                world: &world,
                kueue: &kq,
                volcano: &vc,
                dra: &claims,
                kai: &ka,
            };
            let (summary, k) = k8s::check_target(&scope, c, &units, &mut sink);
            refs::check(*t, &world, (&kq, &vc, &ka), &k.objects, &mut sink);
            checked.insert(*t, summary);
            carried.push((*t, k));
        }
        quotas::check(&world, (&kq, &vc, &ka), c, &carried, &mut sink);
        if present(Target::K8s) {
            kube::check_mig(&world, plan, &mut sink);
        }
    }
    if present(Target::Slurm) {
        let summary = slurm::check(files, c, plan, &units, &mut sink);
        checked.insert(Target::Slurm, summary);
    }
    if present(Target::Mig) {
        let summary = mig::check_folder(files, c, plan, &mut sink);
        checked.insert(Target::Mig, summary);
    }
    let mut violations = sink.list;
    violations.sort();
    violations.dedup();
    Report {
        format_version: FORMAT_VERSION.to_string(),
        cluster: c.name.clone(),
        realizable: violations.is_empty(),
        checked,
        violations,
    }
}

/// The classes a target renders: its scheduler's, or every class when no authority is
/// declared anywhere.
pub(crate) fn owns(c: &Cluster, t: Target, w: &crate::model::Workload) -> bool {
    use crate::model::Authority;
    if !c.authorities_declared() {
        // KAI renders only where it is declared (render::facts::Facts::scoped).
        return !matches!(t, Target::Mig | Target::Kai);
    }
    let a = c.authority_of(w);
    matches!(
        (t, a),
        (Target::K8s, Some(Authority::Kubernetes))
            | (Target::Kueue, Some(Authority::Kueue))
            | (Target::Volcano, Some(Authority::Volcano))
            | (Target::Kai, Some(Authority::Kai))
            | (Target::Slurm, Some(Authority::Slurm))
    )
}

/// Whether a node is one of the scheduler's nodes (every node when none is declared).
pub(crate) fn node_of(c: &Cluster, kube: bool, node: usize) -> bool {
    if !c.authorities_declared() {
        return true;
    }
    match c.node_authority(node) {
        Some(a) => a.kubernetes_managed() == kube,
        None => false,
    }
}
