//! The Kubernetes side of a rendered folder, read once: every object of `k8s/`,
//! `kueue/`, `volcano/` and `kai/` (all YAML files of each folder, classified by apiVersion and
//! kind, not by path), and the GPU nodes as the pods see them ([`nodes`](super::nodes)).

use super::mig;
use super::nodes::{self, Nodes};
use super::yaml::{self, Doc};
use super::{Invariant, Sink, Target};
use crate::model::Cluster;
use crate::placement::Placement;
use std::collections::BTreeMap;

pub(crate) struct World {
    /// Objects per folder.
    pub docs: BTreeMap<Target, Vec<Doc>>,
    pub nodes: Nodes,
    /// Whether `k8s/` is present (priority classes, namespaces and quotas live there).
    pub k8s: bool,
}

impl World {
    pub(crate) fn read(files: &BTreeMap<String, String>, c: &Cluster, sink: &mut Sink) -> World {
        let mut docs = BTreeMap::new();
        for t in [Target::K8s, Target::Kueue, Target::Volcano, Target::Kai] {
            let folder = t.folder();
            let mut list = Vec::new();
            let yamls = files
                .iter()
                .filter(|(p, _)| p.starts_with(&folder))
                .filter(|(p, _)| p.ends_with(".yaml") || p.ends_with(".yml"));
            for (path, text) in yamls {
                match yaml::objects(path, text) {
                    Ok(d) => list.extend(d),
                    Err(e) => sink.push(t, Invariant::Parse, (path, path), e),
                }
            }
            if files.keys().any(|p| p.starts_with(&folder)) {
                docs.insert(t, list);
            }
        }
        let k8s = docs.contains_key(&Target::K8s);
        // Node problems are reported under `k8s`, else the first folder present.
        let home = docs.keys().next().copied().unwrap_or(Target::K8s);
        let empty = Vec::new();
        let k8s_docs = docs.get(&Target::K8s).unwrap_or(&empty);
        let nodes = nodes::build(k8s_docs, files, c, home, sink);
        World { docs, nodes, k8s }
    }

    /// The objects of a folder with this API group and kind.
    pub(crate) fn all<'a>(
        &'a self,
        t: Target,
        group: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Doc> + 'a {
        self.docs
            .get(&t)
            .into_iter()
            .flatten()
            .filter(move |d| d.is(group, kind))
    }

    /// One named object (namespace empty for cluster-scoped kinds).
    pub(crate) fn find(
        &self,
        t: Target,
        (group, kind): (&str, &str),
        ns: &str,
        name: &str,
    ) -> Option<&Doc> {
        self.docs
            .get(&t)
            .into_iter()
            .flatten()
            .find(|d| d.is(group, kind) && d.name == name && d.namespace == ns)
    }

    /// A namespace's labels as the API server has them: the declared ones (from
    /// `k8s/namespaces.yaml`) and `kubernetes.io/metadata.name`.
    pub(crate) fn ns_labels(&self, ns: &str) -> BTreeMap<String, String> {
        let mut labels = self
            .find(Target::K8s, ("", "Namespace"), "", ns)
            .and_then(|d| yaml::string_map(&d.value, &["metadata", "labels"]).ok())
            .unwrap_or_default();
        labels.insert("kubernetes.io/metadata.name".into(), ns.to_string());
        labels
    }
}

/// The `k8s/` target: every Kubernetes node's selected config against the plan.
pub(crate) fn check_mig(world: &World, plan: &Placement, sink: &mut Sink) {
    for n in world.nodes.map.values() {
        if let Some(layout) = &n.mig {
            let file = &world.nodes.parted_file;
            mig::compare(
                sink,
                Target::K8s,
                (&n.name, &n.mig_config, file),
                layout,
                plan,
            );
        }
    }
}
