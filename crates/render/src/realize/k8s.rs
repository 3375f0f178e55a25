//! One Kubernetes-family target (`k8s/`, `kueue/`, `volcano/`): its workload objects
//! matched to the plan's units class by class (coverage, carried, excess), then the
//! nodes' capacity and shares ([`capacity`](super::capacity)) and the references.

use super::carry::{self, Scope};
use super::matching;
use super::objects::{self, Object};
use super::units::Unit;
use super::usage::{Carried, DraUse, PodUse, Use};
use super::{Checked, Invariant, Sink, Target};
use crate::model::{Cluster, Workload};
use std::collections::BTreeMap;

pub(crate) fn check_target(
    s: &Scope,
    c: &Cluster,
    units: &BTreeMap<String, Vec<Unit>>,
    sink: &mut Sink,
) -> (Checked, Carried) {
    let t = s.t;
    let docs = s.world.docs.get(&t).map(Vec::as_slice).unwrap_or(&[]);
    let objects = objects::read(t, docs, sink);
    let by_class = classify(t, &objects, c, units, sink);
    let mut summary = Checked {
        objects: objects.len(),
        nodes: s.world.nodes.map.len(),
        ..Checked::default()
    };
    let mut uses = Vec::new();
    for (class, list) in units {
        let Some(w) = c.workloads.iter().find(|w| &w.name == class) else {
            continue;
        };
        if !super::owns(c, t, w) {
            continue;
        }
        summary.classes += 1;
        summary.units += list.len();
        let objs = by_class.get(class).cloned().unwrap_or_default();
        match_class(s, w, list, (&objs, &objects), sink, &mut uses);
    }
    super::capacity::check_kube(t, s.world, &uses, sink);
    if t == Target::Kai {
        super::kai::capacity(s.world, c, &uses, sink);
    }
    (summary, Carried { objects, uses })
}

/// Objects by class (`gpuplan.io/class`; an unlabelled object whose name is a class's
/// is taken as that class's, and reported); objects of classes the target does not
/// carry are excess.
fn classify(
    t: Target,
    objects: &[Object],
    c: &Cluster,
    units: &BTreeMap<String, Vec<Unit>>,
    sink: &mut Sink,
) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, o) in objects.iter().enumerate() {
        let at = (o.id.as_str(), o.file.as_str());
        let class = match o.class() {
            Some(k) => k.to_string(),
            None if c.workloads.iter().any(|w| w.name == o.name) => {
                let msg = format!(
                    "carries no gpuplan.io/class label (taken as class `{}` by its name)",
                    o.name
                );
                sink.push(t, Invariant::Coverage, at, msg);
                o.name.clone()
            }
            None => {
                sink.push(
                    t,
                    Invariant::Coverage,
                    at,
                    "carries no gpuplan.io/class label: no class is carried by it".into(),
                );
                continue;
            }
        };
        for (p, _) in &o.pods {
            if p.labels.get("gpuplan.io/class") != Some(&class) {
                let msg = format!("its pod template is not labelled gpuplan.io/class: {class}");
                sink.push(t, Invariant::Coverage, at, msg);
            }
        }
        let owned = c
            .workloads
            .iter()
            .find(|w| w.name == class)
            .is_some_and(|w| super::owns(c, t, w));
        if (!owned || !units.contains_key(&class)) && o.capacity > 0 {
            let msg = format!(
                "asks for {} unit(s) of class `{class}`, which the plan does not place under {t}",
                o.capacity
            );
            sink.push(t, Invariant::Excess, at, msg);
            continue;
        }
        out.entry(class).or_default().push(i);
    }
    out
}

fn match_class(
    s: &Scope,
    w: &Workload,
    units: &[Unit],
    (objs, objects): (&[usize], &[Object]),
    sink: &mut Sink,
    uses: &mut Vec<Use>,
) {
    let t = s.t;
    let caps: Vec<u32> = objs.iter().map(|&i| objects[i].capacity).collect();
    let mut can = |u: usize, k: usize| carry::carry(s, &objects[objs[k]], &units[u], w);
    let m = matching::assign(units.len(), &caps, &mut can);
    for (u, a) in m.assigned.iter().enumerate() {
        let object = a.map(|k| objs[k]).or(objs.first().copied());
        uses.push(demand(
            s,
            w,
            &units[u],
            object.map(|i| &objects[i]),
            (a.is_some(), object),
        ));
    }
    if objs.is_empty() {
        let msg = format!(
            "class `{}` has {} planned unit(s) and no object in {}",
            w.name,
            units.len(),
            t.folder()
        );
        sink.push(
            t,
            Invariant::Coverage,
            (&format!("class/{}", w.name), ""),
            msg,
        );
        return;
    }
    report_unmatched(t, w, units, &m, (objs, objects), sink);
    let cap: u64 = caps.iter().map(|&c| c as u64).sum();
    if cap > units.len() as u64 {
        let list: Vec<String> = objs
            .iter()
            .map(|&i| format!("{} ({})", objects[i].id, objects[i].capacity))
            .collect();
        let first = &objects[objs[0]];
        let msg = format!(
            "objects of class `{}` ask for {cap} unit(s): {}; the plan gives it {}",
            w.name,
            list.join(", "),
            units.len()
        );
        sink.push(t, Invariant::Excess, (&first.id, &first.file), msg);
    }
}

/// One violation per (closest object, kind of reason) for the units left unmatched.
fn report_unmatched(
    t: Target,
    w: &Workload,
    units: &[Unit],
    m: &matching::Outcome,
    (objs, objects): (&[usize], &[Object]),
    sink: &mut Sink,
) {
    for (k, invariant, list) in m.unmatched() {
        let n = list.len();
        let first = list[0];
        let (o, text) = match (k, &m.reasons[first]) {
            (Some(k), Some((_, r))) => (
                &objects[objs[k]],
                format!("{} {}", objects[objs[k]].id, r.text),
            ),
            _ => {
                let cap: u32 = objs.iter().map(|&i| objects[i].capacity).sum();
                (
                    &objects[objs[0]],
                    format!("its objects carry {cap} unit(s) in all"),
                )
            }
        };
        let msg = format!(
            "{n} of {} planned unit(s) of class `{}` cannot be carried (first: {}): {text}",
            units.len(),
            w.name,
            units[first].what
        );
        sink.push(t, invariant, (&o.id, &o.file), msg);
    }
}

/// What a unit's pods ask: the carrying object's template, or the plan's amounts.
fn demand(
    s: &Scope,
    w: &Workload,
    u: &Unit,
    o: Option<&Object>,
    (matched, object): (bool, Option<usize>),
) -> Use {
    let tpl = o.and_then(|o| o.pods.first()).map(|(p, _)| p);
    let pods = u
        .pods
        .iter()
        .map(|p| {
            let devices = s
                .world
                .nodes
                .map
                .get(&p.node)
                .and_then(|n| n.devices.as_ref());
            let dra = devices.map(|d| dra_use(s, o.filter(|_| matched), p, d));
            let mut requests = match &dra {
                Some((r, _)) => r.clone(),
                None => carry::expected_for(s.t, &p.gpu),
            };
            let (cpu, mem) = super::units::host_needs(w);
            for (r, need) in [("cpu", cpu as i128), ("memory", mem as i128 * 1000)] {
                let asked = tpl
                    .filter(|_| matched)
                    .and_then(|t| t.requests.get(r).copied());
                let v = asked.unwrap_or(need);
                if v > 0 {
                    requests.insert(r.to_string(), v);
                }
            }
            PodUse {
                node: p.node.clone(),
                requests,
                unrequested: tpl.map(|t| t.unrequested.clone()).unwrap_or_default(),
                tpl: tpl.cloned(),
                gpus: p.gpus.clone(),
                gpu: p.gpu.clone(),
                dra: dra.map(|(_, d)| d),
            }
        })
        .collect();
    Use {
        class: w.name.clone(),
        team: w.team.clone(),
        object,
        pods,
    }
}

/// On a DRA node: the devices a planned pod takes (the plan's, a shared claim's one
/// device split over the pods of the object that reference it) and what its carrying
/// object's claims count per DeviceClass.
fn dra_use(
    s: &Scope,
    o: Option<&Object>,
    p: &super::units::Pod,
    devices: &super::dra::NodeDevices,
) -> (BTreeMap<String, i128>, DraUse) {
    let mut requests = carry::expected_dra(s.c, p);
    let claimed = o.and_then(|o| {
        let (tpl, _) = o.pods.first()?;
        s.dra
            .claimed(s.c, &o.namespace, tpl, devices)
            .ok()
            .map(|c| (o, c))
    });
    let Some((o, claimed)) = claimed else {
        // Not carried: a shared replica takes its planned share of the GPU.
        if let Some(m) = p.gpu.slot_milli() {
            requests.values_mut().for_each(|v| *v = m as i128);
        }
        return (requests, DraUse::default());
    };
    let mut out = DraUse {
        classes: claimed
            .classes
            .iter()
            .map(|(k, v)| (k.clone(), v * 1000))
            .collect(),
        shared: None,
    };
    if let Some((claim, sharing)) = claimed.shared {
        let pods = (o.capacity * o.unit_pods()).max(1);
        for v in requests.values_mut().chain(out.classes.values_mut()) {
            *v /= pods as i128;
        }
        out.shared = Some((claim, sharing, pods));
    }
    (requests, out)
}
