//! Quotas admit what the plan gives each team: ResourceQuotas (the API server counts
//! every pod of a namespace, whatever scheduler placed it; a quota on `cpu`/`memory`
//! refuses pods that do not request them), Kueue ClusterQueues (per flavor and
//! resource: usage <= nominal + borrowingLimit; per cohort of the cohort tree: its
//! subtree's usage <= its subtree's nominal + its borrowingLimit, see
//! [`super::cohorts`]; every requested resource covered) and Volcano Queues (`capability`,
//! parents counting their children). The amounts are the planned units' (what the
//! carrying object asks, else what the plan gives), all running at once.

use super::kube::World;
use super::kueue::Kueue;
use super::objects::Object;
use super::quantity;
use super::usage::{Carried, Use};
use super::volcano::Volcano;
use super::{Invariant, Sink, Target};
use crate::model::Cluster;
use std::collections::{BTreeMap, BTreeSet};

type Sums = BTreeMap<String, (i128, BTreeSet<String>)>;

fn add(sums: &mut Sums, r: &str, v: i128, class: &str) {
    let e = sums.entry(r.to_string()).or_default();
    e.0 += v;
    e.1.insert(class.to_string());
}

fn who(classes: &BTreeSet<String>) -> String {
    classes.iter().cloned().collect::<Vec<_>>().join(", ")
}

pub(crate) fn check(
    world: &World,
    (kueue, volcano, kai): (&Kueue, &Volcano, &super::kai::Kai),
    c: &Cluster,
    carried: &[(Target, Carried)],
    sink: &mut Sink,
) {
    if world.k8s {
        if c.authorities_declared() {
            let all: Vec<(&Use, &[Object])> = carried
                .iter()
                .flat_map(|(_, k)| k.uses.iter().map(move |u| (u, k.objects.as_slice())))
                .collect();
            resource_quotas(world, &all, sink);
        } else {
            for (_, k) in carried {
                let one: Vec<(&Use, &[Object])> =
                    k.uses.iter().map(|u| (u, k.objects.as_slice())).collect();
                resource_quotas(world, &one, sink);
            }
        }
    }
    for (t, k) in carried {
        match t {
            Target::Kueue => cluster_queues(world, kueue, k, sink),
            Target::Kai => kai_queues(kai, c, k, sink),
            Target::Volcano => {
                volcano_queues(volcano, k, sink);
                volcano_hierarchy(volcano, sink);
            }
            _ => {}
        }
    }
}

fn namespace(u: &Use, objects: &[Object]) -> String {
    u.object
        .map_or_else(|| u.team.clone(), |i| objects[i].namespace.clone())
}

fn resource_quotas(world: &World, uses: &[(&Use, &[Object])], sink: &mut Sink) {
    let mut per_ns: BTreeMap<String, Sums> = BTreeMap::new();
    let mut bare: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (u, objects) in uses {
        let ns = namespace(u, objects);
        for p in &u.pods {
            for (r, v) in &p.requests {
                add(per_ns.entry(ns.clone()).or_default(), r, *v, &u.class);
            }
            // DRA: the API server counts each claim's devices per DeviceClass.
            for (class, v) in p.dra.iter().flat_map(|d| &d.classes) {
                let key = format!("{class}.deviceclass.resource.k8s.io/devices");
                add(per_ns.entry(ns.clone()).or_default(), &key, *v, &u.class);
            }
            for r in &p.unrequested {
                bare.entry((ns.clone(), r.clone()))
                    .or_default()
                    .insert(u.class.clone());
            }
        }
    }
    for d in world.all(Target::K8s, "", "ResourceQuota") {
        let hard = match super::yaml::quantities(&d.value, &["spec", "hard"]) {
            Ok(h) => h,
            Err(e) => {
                sink.push(Target::K8s, Invariant::Parse, (&d.id(), &d.file), e);
                continue;
            }
        };
        let empty = Sums::new();
        let sums = per_ns.get(&d.namespace).unwrap_or(&empty);
        for (key, limit) in hard {
            let r = key.strip_prefix("requests.").unwrap_or(&key);
            if r.starts_with("limits.") || r.contains("count/") || r == "pods" {
                continue;
            }
            if let Some(classes) = bare.get(&(d.namespace.clone(), r.to_string())) {
                let msg = format!(
                    "quota on {key}: pods of {} request no {r}, so the API server refuses them",
                    who(classes)
                );
                sink.push(Target::K8s, Invariant::Quota, (&d.id(), &d.file), msg);
            }
            if let Some((sum, classes)) = sums.get(r).filter(|(s, _)| *s > limit) {
                let msg = format!(
                    "namespace {}: the planned pods ask {} {r} (classes {}); the quota allows {}",
                    d.namespace,
                    quantity::show(*sum, r),
                    who(classes),
                    quantity::show(limit, r)
                );
                sink.push(Target::K8s, Invariant::Quota, (&d.id(), &d.file), msg);
            }
        }
    }
}

/// Per (ClusterQueue, flavor, resource): usage, and the classes using it.
fn kueue_usage(
    world: &World,
    kueue: &Kueue,
    k: &Carried,
    sink: &mut Sink,
) -> BTreeMap<(String, String), Sums> {
    let mut usage: BTreeMap<(String, String), Sums> = BTreeMap::new();
    for u in &k.uses {
        let Some(o) = u.object.map(|i| &k.objects[i]) else {
            continue;
        };
        let queue = o
            .labels
            .get("kueue.x-k8s.io/queue-name")
            .map(String::as_str)
            .unwrap_or("");
        let ns = world.ns_labels(&o.namespace);
        let Ok((cq, q)) = kueue.cluster_queue(&o.namespace, queue, &ns) else {
            continue;
        };
        for p in &u.pods {
            let (Some(node), Some(tpl)) = (world.nodes.map.get(&p.node), &p.tpl) else {
                continue;
            };
            // On a DRA node Kueue charges a claim's devices to the resource its
            // Configuration maps their DeviceClass to (an unmapped class is not counted).
            let mut charged: Vec<(String, i128)> = Vec::new();
            match &p.dra {
                None => charged.extend(p.requests.iter().map(|(r, v)| (r.clone(), *v))),
                Some(d) => {
                    let host = p.requests.iter().filter(|(r, _)| !r.starts_with("dra:"));
                    charged.extend(host.map(|(r, v)| (r.clone(), *v)));
                    for (class, v) in &d.classes {
                        match kueue.device_classes.get(class) {
                            Some(r) => charged.push((r.clone(), *v)),
                            None => {
                                let msg = format!(
                                    "pods of `{}` claim DeviceClass {class}, which no deviceClassMappings of Kueue's Configuration maps: Kueue does not count them",
                                    u.class
                                );
                                sink.push(Target::Kueue, Invariant::Quota, (&q.id, &q.file), msg);
                            }
                        }
                    }
                }
            }
            for (r, v) in &charged {
                let r = r.as_str();
                match kueue.flavor(q, r, node, tpl) {
                    Ok(f) => add(
                        usage.entry((cq.to_string(), f.to_string())).or_default(),
                        r,
                        *v,
                        &u.class,
                    ),
                    Err(e) if e.contains("does not cover") => {
                        let msg = format!(
                            "{e}, which pods of `{}` ask: Kueue does not admit them",
                            u.class
                        );
                        sink.push(Target::Kueue, Invariant::Quota, (&q.id, &q.file), msg);
                    }
                    Err(_) => {}
                }
            }
        }
    }
    usage
}

fn cluster_queues(world: &World, kueue: &Kueue, k: &Carried, sink: &mut Sink) {
    let usage = kueue_usage(world, kueue, k, sink);
    for ((cq, flavor), sums) in &usage {
        let q = &kueue.queues[cq];
        let quota = q
            .groups
            .iter()
            .flat_map(|g| &g.flavors)
            .find(|f| &f.name == flavor);
        for (r, (sum, classes)) in sums {
            let Some(&(nominal, borrow)) = quota.and_then(|f| f.resources.get(r)) else {
                let msg = format!(
                    "flavor {flavor} lists no quota for {r}, which {} ask",
                    who(classes)
                );
                sink.push(Target::Kueue, Invariant::Quota, (&q.id, &q.file), msg);
                continue;
            };
            let limit = match (&q.cohort, borrow) {
                (None, _) => Some(nominal),
                (Some(_), Some(b)) => Some(nominal + b),
                (Some(_), None) => None,
            };
            if let Some(limit) = limit.filter(|l| sum > l) {
                let msg = format!(
                    "flavor {flavor}: the planned pods ask {} {r} (classes {}); nominal + borrowing allow {}",
                    quantity::show(*sum, r),
                    who(classes),
                    quantity::show(limit, r)
                );
                sink.push(Target::Kueue, Invariant::Quota, (&q.id, &q.file), msg);
            }
        }
    }
    super::cohorts::check(kueue, &usage, sink);
}

/// KAI: each unit's GPUs (whole ones and shares) in its object's queue.
fn kai_queues(kai: &super::kai::Kai, c: &Cluster, k: &Carried, sink: &mut Sink) {
    let mut used = Vec::new();
    for u in &k.uses {
        let Some(o) = u.object.map(|i| &k.objects[i]) else {
            continue;
        };
        let Some(queue) = &o.queue else { continue };
        let milli: i128 = u
            .pods
            .iter()
            .map(|p| {
                let whole = p.requests.get("nvidia.com/gpu").copied().unwrap_or(0);
                let share = p
                    .tpl
                    .as_ref()
                    .and_then(|t| super::kai::share(t, c, &p.node).ok().flatten())
                    .unwrap_or(0);
                whole + share as i128
            })
            .sum();
        let preemptible = o.preemptible.unwrap_or(false);
        used.push((queue.clone(), milli, preemptible, u.class.clone()));
    }
    super::kai::queues(kai, &used, sink);
}

/// The hierarchy rules of Volcano's capacity plugin (reference volcano.md §2): a
/// child's capability within its parent's, the children's deserved and guarantee
/// within the parent's.
fn volcano_hierarchy(volcano: &Volcano, sink: &mut Sink) {
    let mut sums: BTreeMap<(&str, &str, &str), i128> = BTreeMap::new();
    for q in volcano.queues.values() {
        let Some(parent) = q.parent.as_ref().and_then(|p| volcano.queues.get(p)) else {
            continue;
        };
        for (r, cap) in &q.capability {
            if let Some(pc) = parent.capability.get(r).filter(|pc| cap > *pc) {
                let msg = format!(
                    "capability {} {r} exceeds its parent's {}: the capacity plugin's hierarchy refuses it",
                    quantity::show(*cap, r),
                    quantity::show(*pc, r)
                );
                sink.push(Target::Volcano, Invariant::Quota, (&q.id, &q.file), msg);
            }
        }
        let p = q.parent.as_deref().unwrap_or("");
        for (what, m) in [("deserved", &q.deserved), ("guarantee", &q.guarantee)] {
            for (r, v) in m {
                *sums.entry((p, what, r.as_str())).or_default() += v;
            }
        }
    }
    for ((p, what, r), sum) in sums {
        let parent = &volcano.queues[p];
        let own = if what == "deserved" {
            &parent.deserved
        } else {
            &parent.guarantee
        };
        if let Some(limit) = own.get(r).filter(|l| sum > **l) {
            let msg = format!(
                "its children's {what} add up to {} {r}, above its own {}: the capacity plugin's hierarchy refuses it",
                quantity::show(sum, r),
                quantity::show(*limit, r)
            );
            sink.push(
                Target::Volcano,
                Invariant::Quota,
                (&parent.id, &parent.file),
                msg,
            );
        }
    }
}

fn volcano_queues(volcano: &Volcano, k: &Carried, sink: &mut Sink) {
    let mut usage: BTreeMap<String, Sums> = BTreeMap::new();
    for u in &k.uses {
        let Some(o) = u.object.map(|i| &k.objects[i]) else {
            continue;
        };
        let queue = o.queue.clone().unwrap_or_else(|| "default".into());
        for q in volcano.chain(&queue) {
            for p in &u.pods {
                for (r, v) in &p.requests {
                    add(usage.entry(q.to_string()).or_default(), r, *v, &u.class);
                }
                // The capacity plugin counts DRA devices as `deviceclass/<class>`.
                for (class, v) in p.dra.iter().flat_map(|d| &d.classes) {
                    let key = format!("deviceclass/{class}");
                    add(usage.entry(q.to_string()).or_default(), &key, *v, &u.class);
                }
            }
        }
    }
    for (name, sums) in usage {
        let q = &volcano.queues[&name];
        for (r, (sum, classes)) in sums {
            if let Some(&cap) = q.capability.get(&r).filter(|c| sum > **c) {
                let msg = format!(
                    "the planned pods ask {} {r} (classes {}, children included); capability is {}",
                    quantity::show(sum, &r),
                    who(&classes),
                    quantity::show(cap, &r)
                );
                sink.push(Target::Volcano, Invariant::Quota, (&q.id, &q.file), msg);
            }
        }
    }
}
