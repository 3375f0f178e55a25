//! Volcano's objects as the scheduler reads them (reference volcano.md §2, §5): Queues
//! (`capability` a hard cap, `parent` for hierarchical queues: a parent's usage
//! includes its children's) and HyperNodes (a tier; members are nodes by exact name,
//! regular expression or label selector, or child HyperNodes by name). A job with
//! `networkTopology: {mode: hard, highestTierAllowed: N}` must fit inside one HyperNode
//! of tier <= N.

use super::kube::World;
use super::yaml::{self, Doc, at, seq_at, str_at};
use super::{Invariant, Sink, Target};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) struct Queue {
    pub id: String,
    pub file: String,
    pub parent: Option<String>,
    pub capability: BTreeMap<String, i128>,
    pub deserved: BTreeMap<String, i128>,
    pub guarantee: BTreeMap<String, i128>,
}

pub(crate) struct HyperNode {
    pub tier: u64,
    pub nodes: BTreeSet<String>,
}

#[derive(Default)]
pub(crate) struct Volcano {
    pub queues: BTreeMap<String, Queue>,
    pub hypernodes: Vec<HyperNode>,
}

struct Raw {
    tier: u64,
    nodes: BTreeSet<String>,
    children: Vec<String>,
}

pub(crate) fn read(world: &World, sink: &mut Sink) -> Volcano {
    let t = Target::Volcano;
    let mut v = Volcano::default();
    for d in world.all(t, "scheduling.volcano.sh", "Queue") {
        let mut read =
            |path: &[&str]| yaml::quantities(&d.value, path).unwrap_or_else(|e| fail(sink, d, e));
        let capability = read(&["spec", "capability"]);
        let deserved = read(&["spec", "deserved"]);
        let guarantee = read(&["spec", "guarantee", "resource"]);
        v.queues.insert(
            d.name.clone(),
            Queue {
                id: d.id(),
                file: d.file.clone(),
                parent: str_at(&d.value, &["spec", "parent"]).map(String::from),
                capability,
                deserved,
                guarantee,
            },
        );
    }
    let mut raw = BTreeMap::new();
    for d in world.all(t, "topology.volcano.sh", "HyperNode") {
        match hypernode(d, world) {
            Ok(r) => {
                raw.insert(d.name.clone(), r);
            }
            Err(e) => fail::<()>(sink, d, e),
        }
    }
    for name in raw.keys() {
        let mut nodes = BTreeSet::new();
        collect(&raw, name, &mut nodes, &mut BTreeSet::new());
        v.hypernodes.push(HyperNode {
            tier: raw[name].tier,
            nodes,
        });
    }
    v
}

fn fail<T: Default>(sink: &mut Sink, d: &Doc, e: String) -> T {
    sink.push(Target::Volcano, Invariant::Parse, (&d.id(), &d.file), e);
    T::default()
}

/// Every node under a HyperNode (children followed once).
fn collect(
    raw: &BTreeMap<String, Raw>,
    name: &str,
    out: &mut BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) {
    if !seen.insert(name.to_string()) {
        return;
    }
    if let Some(r) = raw.get(name) {
        out.extend(r.nodes.iter().cloned());
        for c in &r.children {
            collect(raw, c, out, seen);
        }
    }
}

fn hypernode(d: &Doc, world: &World) -> Result<Raw, String> {
    let tier = yaml::uint_at(&d.value, &["spec", "tier"])?.ok_or("a HyperNode needs a tier")?;
    let mut r = Raw {
        tier,
        nodes: BTreeSet::new(),
        children: Vec::new(),
    };
    for m in seq_at(&d.value, &["spec", "members"]) {
        let sel = at(m, &["selector"]).ok_or("a member has no selector")?;
        let exact = str_at(sel, &["exactMatch", "name"]);
        match (str_at(m, &["type"]), exact) {
            (Some("HyperNode"), Some(name)) => r.children.push(name.to_string()),
            (Some("HyperNode"), None) => {
                return Err("a HyperNode member must name its child (exactMatch)".into());
            }
            (Some("Node"), Some(name)) => {
                r.nodes.insert(name.to_string());
            }
            (Some("Node"), None) => r.nodes.extend(matching(sel, world)?),
            _ => return Err("a member's type must be Node or HyperNode".into()),
        }
    }
    Ok(r)
}

/// Nodes a `regexMatch` or `labelMatch` selector picks among the Kubernetes nodes.
fn matching(sel: &serde_yaml::Value, world: &World) -> Result<Vec<String>, String> {
    let names = world.nodes.map.values();
    if let Some(p) = str_at(sel, &["regexMatch", "pattern"]) {
        let re = regex::RegexBuilder::new(p)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("regexMatch `{p}`: {e}"))?;
        return Ok(names
            .filter(|n| re.is_match(&n.name))
            .map(|n| n.name.clone())
            .collect());
    }
    if let Some(l) = at(sel, &["labelMatch"]) {
        let want = yaml::string_map(l, &["matchLabels"])?;
        if !seq_at(l, &["matchExpressions"]).is_empty() {
            return Err(
                "labelMatch matchExpressions are not read by this checker; use matchLabels".into(),
            );
        }
        return Ok(names
            .filter(|n| want.iter().all(|(k, v)| n.labels.get(k) == Some(v)))
            .map(|n| n.name.clone())
            .collect());
    }
    Err("a Node member needs exactMatch, regexMatch or labelMatch".into())
}

impl Volcano {
    /// Whether some HyperNode of tier <= `tier` holds every node.
    pub(crate) fn one_hypernode(&self, tier: u64, nodes: &[&str]) -> bool {
        self.hypernodes
            .iter()
            .filter(|h| h.tier <= tier)
            .any(|h| nodes.iter().all(|n| h.nodes.contains(*n)))
    }

    /// A queue and its ancestors (cycles stop).
    pub(crate) fn chain(&self, queue: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut next = self.queues.get_key_value(queue);
        while let Some((name, q)) = next {
            if out.contains(&name.as_str()) {
                break;
            }
            out.push(name);
            next = q
                .parent
                .as_deref()
                .and_then(|p| self.queues.get_key_value(p));
        }
        out
    }
}
