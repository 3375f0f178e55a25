//! `moved` renames, resolved: what each old name of a class, a node or a pool is called
//! now. The planner reads the previous placement through them (see
//! `placement::moved`), so a renamed thing counts as the same thing: its gangs, MIG
//! instances, shares and pool mode are kept, and the plan's disruption has nothing of
//! it. Pure; the rules GP066 and GP067 report what cannot be resolved.

use crate::spec::Spec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a `moved` renames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoveKind {
    /// A workload class (`training`, `inference`, `dev`).
    Class,
    Node,
    Pool,
}

impl MoveKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MoveKind::Class => "class",
            MoveKind::Node => "node",
            MoveKind::Pool => "pool",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<MoveKind> {
        match s {
            "class" => Some(MoveKind::Class),
            "node" => Some(MoveKind::Node),
            "pool" => Some(MoveKind::Pool),
            _ => None,
        }
    }
}

/// One resolved rename: `from` (a name the last apply may know) is `to` now, a name the
/// configuration declares (chains `a -> b`, `b -> c` resolve to `a -> c` and `b -> c`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Move {
    pub kind: MoveKind,
    pub from: String,
    pub to: String,
}

/// The names of one kind the configuration declares.
pub(crate) fn declared(spec: &Spec, kind: MoveKind) -> std::collections::BTreeSet<&str> {
    match kind {
        MoveKind::Class => spec
            .workloads
            .iter()
            .map(|w| w.name.value.as_str())
            .collect(),
        MoveKind::Node => spec
            .node_groups
            .iter()
            .flat_map(|g| g.names.value.iter().map(String::as_str))
            .collect(),
        MoveKind::Pool => spec.pools.iter().map(|p| p.name.value.as_str()).collect(),
    }
}

/// The kind of a `moved`: its `kind=`, else the one kind whose declarations hold `to`
/// (or, for a link of a chain, `from` of another move of that kind). `None` when it
/// cannot be told (GP066 says why).
pub(crate) fn kind_of(spec: &Spec, m: &crate::spec::MovedDecl) -> Option<MoveKind> {
    if let Some(k) = &m.kind {
        return MoveKind::parse(&k.value);
    }
    let to = &m.to.as_ref()?.value;
    let mut found = [MoveKind::Class, MoveKind::Node, MoveKind::Pool]
        .into_iter()
        .filter(|k| declared(spec, *k).contains(to.as_str()));
    match (found.next(), found.next()) {
        (Some(k), None) => Some(k),
        _ => None,
    }
}

/// Every rename, resolved to the declared name at the end of its chain; moves that
/// cannot be resolved (unknown kind, a cycle, a target not declared) are left out.
/// Sorted, so the result does not depend on the order of the files.
pub(crate) fn resolve(spec: &Spec) -> Vec<Move> {
    // Kind of a chain link: the kind of the move it leads to, when it names none.
    let mut edges: BTreeMap<(MoveKind, &str), &str> = BTreeMap::new();
    let mut pending = Vec::new();
    for m in &spec.moves {
        let (Some(from), Some(to)) = (&m.from, &m.to) else {
            continue;
        };
        match kind_of(spec, m) {
            Some(k) => {
                edges
                    .entry((k, from.value.as_str()))
                    .or_insert(to.value.as_str());
            }
            None => pending.push((from.value.as_str(), to.value.as_str())),
        }
    }
    // A link without a kind takes the kind of the move that starts at its target.
    for (from, to) in pending {
        let kinds: Vec<MoveKind> = edges
            .keys()
            .filter(|(_, f)| *f == to)
            .map(|(k, _)| *k)
            .collect();
        if let [k] = kinds.as_slice() {
            edges.entry((*k, from)).or_insert(to);
        }
    }
    let mut out = Vec::new();
    for &(kind, from) in edges.keys() {
        let names = declared(spec, kind);
        let mut at = from;
        let mut steps = 0;
        while let Some(next) = edges.get(&(kind, at)) {
            at = next;
            steps += 1;
            if steps > edges.len() {
                break; // a cycle (GP067)
            }
        }
        if steps <= edges.len() && at != from && names.contains(at) && !names.contains(from) {
            out.push(Move {
                kind,
                from: from.to_string(),
                to: at.to_string(),
            });
        }
    }
    out.sort();
    out
}
