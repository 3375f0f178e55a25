//! Kueue's objects as Kueue reads them (reference kueue.md §2-§7): ResourceFlavors
//! (`nodeLabels`, `nodeTaints`, `topologyName`), ClusterQueues (`namespaceSelector`,
//! `cohortName`, `resourceGroups`: covered resources, flavors tried in order with
//! `nominalQuota` and `borrowingLimit`), Cohorts (their own `resourceGroups`: a pool on
//! top of their ClusterQueues' quotas), LocalQueues, Topologies (levels) and
//! WorkloadPriorityClasses. A pod's flavor for a resource is the first flavor of the
//! group covering it whose node labels the node carries and whose taints the pod
//! tolerates (Kueue adds the flavor's labels to the pod's node selector).

use super::kube::World;
use super::nodes::Node;
use super::pods::{self, Pod, Taint};
use super::yaml::{self, Doc, seq_at, str_at};
use super::{Invariant, Sink, Target};
use std::collections::{BTreeMap, BTreeSet};

const GROUP: &str = "kueue.x-k8s.io";

pub(crate) struct Flavor {
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub topology: Option<String>,
}

/// One flavor of a resource group: resource -> (nominal, borrowing limit).
pub(crate) struct FlavorQuota {
    pub name: String,
    pub resources: BTreeMap<String, (i128, Option<i128>)>,
}

pub(crate) struct Group {
    pub covered: Vec<String>,
    pub flavors: Vec<FlavorQuota>,
}

pub(crate) struct ClusterQueue {
    pub id: String,
    pub file: String,
    pub cohort: Option<String>,
    /// `matchLabels` of `namespaceSelector`; `None`: no selector (no namespace).
    pub namespaces: Option<BTreeMap<String, String>>,
    pub groups: Vec<Group>,
}

/// A Cohort object: its parent cohort and its own quota (a pool on top of its
/// ClusterQueues' and child cohorts').
#[derive(Default)]
pub(crate) struct Cohort {
    pub id: String,
    pub file: String,
    pub parent: Option<String>,
    pub groups: Vec<Group>,
}

#[derive(Default)]
pub(crate) struct Kueue {
    pub flavors: BTreeMap<String, Flavor>,
    pub queues: BTreeMap<String, ClusterQueue>,
    /// Cohort objects by name.
    pub cohorts: BTreeMap<String, Cohort>,
    /// (namespace, name) -> ClusterQueue.
    pub local: BTreeMap<(String, String), String>,
    pub topologies: BTreeMap<String, Vec<String>>,
    pub priorities: BTreeSet<String>,
    /// DRA: DeviceClass -> the resource Kueue charges its devices to (Kueue's own
    /// Configuration, `resources.deviceClassMappings`).
    pub device_classes: BTreeMap<String, String>,
}

pub(crate) fn read(world: &World, sink: &mut Sink) -> Kueue {
    let t = Target::Kueue;
    let mut k = Kueue::default();
    for d in world.all(t, "config.kueue.x-k8s.io", "Configuration") {
        for m in seq_at(&d.value, &["resources", "deviceClassMappings"]) {
            let Some(name) = str_at(m, &["name"]) else {
                fail::<()>(sink, d, "a deviceClassMapping has no name".into());
                continue;
            };
            for c in seq_at(m, &["deviceClassNames"])
                .iter()
                .filter_map(|c| c.as_str())
            {
                k.device_classes.insert(c.to_string(), name.to_string());
            }
        }
    }
    for d in world.all(t, GROUP, "ResourceFlavor") {
        let labels = yaml::string_map(&d.value, &["spec", "nodeLabels"]);
        let labels = labels.unwrap_or_else(|e| fail(sink, d, e));
        let taints = pods::taint_list(seq_at(&d.value, &["spec", "nodeTaints"]));
        let topology = str_at(&d.value, &["spec", "topologyName"]).map(String::from);
        k.flavors.insert(
            d.name.clone(),
            Flavor {
                labels,
                taints,
                topology,
            },
        );
    }
    for d in world.all(t, GROUP, "ClusterQueue") {
        match cluster_queue(d) {
            Ok(q) => {
                k.queues.insert(d.name.clone(), q);
            }
            Err(e) => fail(sink, d, e),
        }
    }
    for d in world.all(t, GROUP, "Cohort") {
        match groups(&d.value) {
            Ok(groups) => {
                let parent = str_at(&d.value, &["spec", "parentName"]).map(String::from);
                let cohort = Cohort {
                    id: d.id(),
                    file: d.file.clone(),
                    parent,
                    groups,
                };
                k.cohorts.insert(d.name.clone(), cohort);
            }
            Err(e) => fail(sink, d, e),
        }
    }
    for d in world.all(t, GROUP, "LocalQueue") {
        let cq = str_at(&d.value, &["spec", "clusterQueue"]).unwrap_or_default();
        k.local
            .insert((d.namespace.clone(), d.name.clone()), cq.to_string());
    }
    for d in world.all(t, GROUP, "Topology") {
        let levels = seq_at(&d.value, &["spec", "levels"]);
        let levels = levels
            .iter()
            .filter_map(|l| str_at(l, &["nodeLabel"]).map(String::from));
        k.topologies.insert(d.name.clone(), levels.collect());
    }
    k.priorities = world
        .all(t, GROUP, "WorkloadPriorityClass")
        .map(|d| d.name.clone())
        .collect();
    k
}

fn fail<T: Default>(sink: &mut Sink, d: &Doc, e: String) -> T {
    sink.push(Target::Kueue, Invariant::Parse, (&d.id(), &d.file), e);
    T::default()
}

fn cluster_queue(d: &Doc) -> Result<ClusterQueue, String> {
    let v = &d.value;
    let namespaces = match yaml::at(v, &["spec", "namespaceSelector"]) {
        None | Some(serde_yaml::Value::Null) => None,
        Some(s) => Some(yaml::string_map(s, &["matchLabels"])?),
    };
    Ok(ClusterQueue {
        id: d.id(),
        file: d.file.clone(),
        cohort: str_at(v, &["spec", "cohortName"]).map(String::from),
        namespaces,
        groups: groups(v)?,
    })
}

/// The `spec.resourceGroups` of a ClusterQueue or Cohort.
fn groups(v: &serde_yaml::Value) -> Result<Vec<Group>, String> {
    let mut groups = Vec::new();
    for g in seq_at(v, &["spec", "resourceGroups"]) {
        let covered: Vec<String> = seq_at(g, &["coveredResources"])
            .iter()
            .filter_map(yaml::scalar)
            .collect();
        let mut flavors = Vec::new();
        for f in seq_at(g, &["flavors"]) {
            let name = str_at(f, &["name"])
                .ok_or("a flavor has no name")?
                .to_string();
            let mut resources = BTreeMap::new();
            for r in seq_at(f, &["resources"]) {
                let rn = str_at(r, &["name"]).ok_or("a flavor resource has no name")?;
                let q = |k: &str| {
                    yaml::at(r, &[k])
                        .and_then(yaml::scalar)
                        .map(|s| super::quantity::milli(&s))
                };
                let nominal = q("nominalQuota")
                    .flatten()
                    .ok_or_else(|| format!("`{rn}` has no valid nominalQuota"))?;
                let borrowing = match q("borrowingLimit") {
                    None => None,
                    Some(b) => {
                        Some(b.ok_or_else(|| format!("`{rn}`: borrowingLimit is not a quantity"))?)
                    }
                };
                resources.insert(rn.to_string(), (nominal, borrowing));
            }
            flavors.push(FlavorQuota { name, resources });
        }
        groups.push(Group { covered, flavors });
    }
    Ok(groups)
}

impl Kueue {
    /// The ClusterQueue a pod of namespace `ns` reaches through LocalQueue `queue`.
    pub(crate) fn cluster_queue(
        &self,
        ns: &str,
        queue: &str,
        ns_labels: &BTreeMap<String, String>,
    ) -> Result<(&str, &ClusterQueue), String> {
        let cq = self
            .local
            .get(&(ns.to_string(), queue.to_string()))
            .ok_or_else(|| format!("no LocalQueue `{queue}` in namespace `{ns}`"))?;
        let q = self.queues.get(cq).ok_or_else(|| {
            format!("LocalQueue `{ns}/{queue}` points to ClusterQueue `{cq}`, which kueue/ lacks")
        })?;
        match &q.namespaces {
            None => Err(format!(
                "ClusterQueue `{cq}` has no namespaceSelector: no namespace may submit to it"
            )),
            Some(sel) if sel.iter().any(|(k, v)| ns_labels.get(k) != Some(v)) => Err(format!(
                "ClusterQueue `{cq}`'s namespaceSelector does not select namespace `{ns}`"
            )),
            Some(_) => Ok((cq.as_str(), q)),
        }
    }

    /// The flavor a pod on `node` gets for `resource` in ClusterQueue `q`.
    pub(crate) fn flavor<'q>(
        &self,
        q: &'q ClusterQueue,
        resource: &str,
        node: &Node,
        pod: &Pod,
    ) -> Result<&'q str, String> {
        let group = q
            .groups
            .iter()
            .find(|g| g.covered.iter().any(|c| c == resource))
            .ok_or_else(|| format!("ClusterQueue {} does not cover {resource}", q.id))?;
        for f in &group.flavors {
            let Some(flavor) = self.flavors.get(&f.name) else {
                continue;
            };
            let labels = flavor
                .labels
                .iter()
                .all(|(k, v)| node.labels.get(k) == Some(v));
            if labels && pod.untolerated(&flavor.taints).is_none() {
                return Ok(&f.name);
            }
        }
        Err(format!(
            "no flavor of {} for {resource} selects node {} (with taints the pod tolerates)",
            q.id, node.name
        ))
    }
}
