//! Names that must resolve under a Kubernetes-family target: each pod's
//! `priorityClassName` (a PriorityClass of `k8s/`), each object's namespace (a
//! Namespace of `k8s/`), Kueue's `queue-name` (a LocalQueue of the namespace, whose
//! ClusterQueue exists and selects the namespace) and `priority-class` (a
//! WorkloadPriorityClass), each ClusterQueue's flavors and each flavor's Topology,
//! Volcano's queue and each Queue's parent.

use super::kube::World;
use super::kueue::Kueue;
use super::objects::Object;
use super::volcano::Volcano;
use super::{Invariant, Sink, Target};

pub(crate) fn check(
    t: Target,
    world: &World,
    (kueue, volcano, kai): (&Kueue, &Volcano, &super::kai::Kai),
    objects: &[Object],
    sink: &mut Sink,
) {
    for o in objects {
        let mut fail = |m: String| sink.push(t, Invariant::Reference, (&o.id, &o.file), m);
        common(world, o, &mut fail);
        match t {
            Target::Kueue => kueue_object(world, kueue, o, &mut fail),
            Target::Volcano => match &o.queue {
                None => fail("names no queue: it would run in Volcano's default queue".into()),
                Some(q) if !volcano.queues.contains_key(q) => {
                    fail(format!("queue `{q}` is not a Queue of volcano/"))
                }
                Some(_) => {}
            },
            Target::Kai => super::kai::references(kai, o.queue.as_deref(), &mut fail),
            _ => {}
        }
    }
    match t {
        Target::Kueue => kueue_objects(kueue, sink),
        Target::Volcano => volcano_queues(volcano, sink),
        Target::Kai => super::kai::queue_tree(kai, sink),
        _ => {}
    }
}

/// The namespace and the pods' priority classes (objects of `k8s/`).
fn common(world: &World, o: &Object, fail: &mut dyn FnMut(String)) {
    let ns = world.find(Target::K8s, ("", "Namespace"), "", &o.namespace);
    if world.k8s && ns.is_none() {
        fail(format!(
            "namespace `{}` is not among k8s/'s Namespaces",
            o.namespace
        ));
    }
    for pc in o.pods.iter().filter_map(|(p, _)| p.priority_class.as_ref()) {
        let class = ("scheduling.k8s.io", "PriorityClass");
        if world.find(Target::K8s, class, "", pc).is_none() {
            fail(format!(
                "priorityClassName `{pc}` is not a PriorityClass of k8s/"
            ));
        }
    }
}

fn volcano_queues(volcano: &Volcano, sink: &mut Sink) {
    for q in volcano.queues.values() {
        let missing = |p: &&String| !volcano.queues.contains_key(*p) && *p != "root";
        if let Some(p) = q.parent.as_ref().filter(missing) {
            let msg = format!("parent queue `{p}` is not a Queue of volcano/");
            sink.push(Target::Volcano, Invariant::Reference, (&q.id, &q.file), msg);
        }
    }
}

fn kueue_object(world: &World, kueue: &Kueue, o: &Object, fail: &mut dyn FnMut(String)) {
    match o.labels.get("kueue.x-k8s.io/queue-name") {
        None => fail("carries no kueue.x-k8s.io/queue-name label: Kueue does not manage it".into()),
        Some(q) => {
            if let Err(e) = kueue.cluster_queue(&o.namespace, q, &world.ns_labels(&o.namespace)) {
                fail(e);
            }
        }
    }
    if let Some(p) = o.labels.get("kueue.x-k8s.io/priority-class") {
        if !kueue.priorities.contains(p) {
            fail(format!(
                "kueue.x-k8s.io/priority-class `{p}` is not a WorkloadPriorityClass of kueue/"
            ));
        }
    }
}

fn kueue_objects(kueue: &Kueue, sink: &mut Sink) {
    super::cohorts::references(kueue, sink);
    for q in kueue.queues.values() {
        for f in q.groups.iter().flat_map(|g| &g.flavors) {
            if !kueue.flavors.contains_key(&f.name) {
                let msg = format!("flavor `{}` is not a ResourceFlavor of kueue/", f.name);
                sink.push(Target::Kueue, Invariant::Reference, (&q.id, &q.file), msg);
            }
        }
    }
    for (name, f) in &kueue.flavors {
        if let Some(t) = f
            .topology
            .as_ref()
            .filter(|t| !kueue.topologies.contains_key(*t))
        {
            let msg = format!("topologyName `{t}` is not a Topology of kueue/");
            sink.push(
                Target::Kueue,
                Invariant::Reference,
                (
                    &format!("ResourceFlavor/{name}"),
                    "kueue/resourceflavors.yaml",
                ),
                msg,
            );
        }
    }
}
