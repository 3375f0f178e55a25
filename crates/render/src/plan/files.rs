//! Per-file and per-resource changes between the applied artifacts and the desired ones.
//!
//! A resource is one YAML document with a `kind` and a `metadata.name` (Kubernetes,
//! Volcano and Kueue objects), addressed `Kind/name` or `Kind/namespace/name`; any other
//! file (Slurm configuration, scripts, mig-parted config) is one resource by itself. The
//! summary counts resources, as Terraform does.

use crate::state::{Artifact, Artifacts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Create,
    Update,
    Delete,
    NoOp,
}

impl Action {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::NoOp => "no-op",
        }
    }

    /// The one-character marker of the human plan (`+`, `~`, `-`, ` `).
    pub(crate) fn marker(self) -> char {
        match self {
            Action::Create => '+',
            Action::Update => '~',
            Action::Delete => '-',
            Action::NoOp => ' ',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChange {
    /// `Kind/name` or `Kind/namespace/name`.
    pub address: String,
    pub action: Action,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Path relative to the output folder.
    pub path: String,
    pub action: Action,
    pub reason: String,
    pub before_sha256: Option<String>,
    pub after_sha256: Option<String>,
    /// The YAML documents of the file that change (empty for non-YAML files and no-ops).
    pub resources: Vec<ResourceChange>,
    /// Unified diff (`--- a/PATH`, `+++ b/PATH`), for updates only.
    pub diff: Option<String>,
}

/// The resources of a file: address -> document text. Non-YAML files and YAML documents
/// without a kind and a name give an empty map (the file is the resource).
pub(crate) fn resources(path: &str, text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
        return out;
    }
    let mut doc = String::new();
    let flush = |doc: &mut String, out: &mut BTreeMap<String, String>| {
        if let Some(a) = address(doc) {
            out.insert(a, std::mem::take(doc));
        }
        doc.clear();
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut doc, &mut out);
        } else {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    flush(&mut doc, &mut out);
    out
}

/// `Kind/name` or `Kind/namespace/name` of one YAML document (top-level `kind:`, and
/// `name:` / `namespace:` directly under a top-level `metadata:`).
fn address(doc: &str) -> Option<String> {
    let mut kind = None;
    let mut name = None;
    let mut namespace = None;
    let mut in_meta = false;
    for line in doc.lines() {
        if !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty() {
            in_meta = line.trim_end() == "metadata:";
            if let Some(k) = line.strip_prefix("kind:") {
                kind = Some(unquote(k));
            }
            continue;
        }
        if in_meta {
            let rest = line.strip_prefix("  ").unwrap_or("");
            if rest.starts_with(' ') {
                continue;
            }
            if let Some(n) = rest.strip_prefix("name:") {
                name.get_or_insert_with(|| unquote(n));
            } else if let Some(n) = rest.strip_prefix("namespace:") {
                namespace.get_or_insert_with(|| unquote(n));
            }
        }
    }
    let (kind, name) = (kind?, name?);
    Some(match namespace {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    })
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').trim_matches('\'').to_string()
}

fn resource_changes(path: &str, before: &str, after: &str) -> Vec<ResourceChange> {
    let b = resources(path, before);
    let a = resources(path, after);
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
    for k in keys {
        let action = match (b.get(k), a.get(k)) {
            (None, Some(_)) => Action::Create,
            (Some(_), None) => Action::Delete,
            (Some(x), Some(y)) if x != y => Action::Update,
            _ => continue,
        };
        out.push(ResourceChange {
            address: k.clone(),
            action,
        });
    }
    out
}

fn all_resources(path: &str, text: &str, action: Action) -> Vec<ResourceChange> {
    resources(path, text)
        .into_keys()
        .map(|address| ResourceChange { address, action })
        .collect()
}

/// Unified diff of two texts, three lines of context, plain.
pub(crate) fn unified(path: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

fn line_counts(before: &str, after: &str) -> (usize, usize) {
    let d = similar::TextDiff::from_lines(before, after);
    let mut add = 0;
    let mut del = 0;
    for c in d.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => add += 1,
            similar::ChangeTag::Delete => del += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (add, del)
}

/// One change per path in either set, sorted by path.
pub(crate) fn compare(prior: Option<&Artifacts>, desired: &Artifacts) -> Vec<FileChange> {
    let empty = Artifacts::new();
    let prior_map = prior.unwrap_or(&empty);
    let paths: std::collections::BTreeSet<&String> =
        prior_map.keys().chain(desired.keys()).collect();
    paths
        .into_iter()
        .map(|p| change(p, prior_map.get(p), desired.get(p), prior.is_none()))
        .collect()
}

fn change(path: &str, b: Option<&Artifact>, a: Option<&Artifact>, first: bool) -> FileChange {
    let (action, reason, resources, diff) = match (b, a) {
        (None, Some(a)) => (
            Action::Create,
            if first {
                "no state yet: first apply".to_string()
            } else {
                "new in the configuration".to_string()
            },
            all_resources(path, &a.text, Action::Create),
            None,
        ),
        (Some(b), None) => (
            Action::Delete,
            "no longer rendered from the configuration".to_string(),
            all_resources(path, &b.text, Action::Delete),
            None,
        ),
        (Some(b), Some(a)) if b.sha256 != a.sha256 => {
            let (add, del) = line_counts(&b.text, &a.text);
            (
                Action::Update,
                format!("content differs: {add} line(s) added, {del} removed"),
                resource_changes(path, &b.text, &a.text),
                Some(unified(path, &b.text, &a.text)),
            )
        }
        _ => (Action::NoOp, "unchanged".to_string(), Vec::new(), None),
    };
    FileChange {
        path: path.to_string(),
        action,
        reason,
        before_sha256: b.map(|x| x.sha256.clone()),
        after_sha256: a.map(|x| x.sha256.clone()),
        resources,
        diff,
    }
}

/// Counts resources: a file with YAML resources counts each changed one, any other
/// file counts as one.
pub(crate) fn summarize(changes: &[FileChange]) -> super::ChangeSummary {
    let mut s = super::ChangeSummary::default();
    let mut bump = |a: Action| match a {
        Action::Create => s.add += 1,
        Action::Update => s.change += 1,
        Action::Delete => s.destroy += 1,
        Action::NoOp => s.unchanged += 1,
    };
    for c in changes {
        if c.resources.is_empty() {
            bump(c.action);
        } else {
            for r in &c.resources {
                bump(r.action);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const Y: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels:\n    name: x\n---\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: gpu\ndata:\n  k: v\n";

    #[test]
    fn yaml_documents_are_resources() {
        let r = resources("k8s/x.yaml", Y);
        let keys: Vec<&String> = r.keys().collect();
        assert_eq!(keys, ["ConfigMap/gpu/cm", "Namespace/a"]);
        assert!(resources("slurm/slurm.conf", Y).is_empty());
    }

    #[test]
    fn changes_have_actions_reasons_and_diffs() {
        let mut before = Artifacts::new();
        before.insert("k8s/x.yaml".into(), Artifact::new(Y.into()));
        before.insert("gone.sh".into(), Artifact::new("echo\n".into()));
        before.insert("same.conf".into(), Artifact::new("a\n".into()));
        let mut after = Artifacts::new();
        after.insert(
            "k8s/x.yaml".into(),
            Artifact::new(Y.replace("k: v", "k: w")),
        );
        after.insert("same.conf".into(), Artifact::new("a\n".into()));
        after.insert("new.conf".into(), Artifact::new("b\n".into()));
        let c = compare(Some(&before), &after);
        let actions: Vec<(&str, Action)> = c.iter().map(|c| (c.path.as_str(), c.action)).collect();
        assert_eq!(
            actions,
            [
                ("gone.sh", Action::Delete),
                ("k8s/x.yaml", Action::Update),
                ("new.conf", Action::Create),
                ("same.conf", Action::NoOp)
            ]
        );
        assert_eq!(c[1].resources.len(), 1);
        assert_eq!(c[1].resources[0].address, "ConfigMap/gpu/cm");
        assert!(c[1].diff.as_ref().unwrap().contains("-  k: v\n+  k: w"));
        let s = summarize(&c);
        assert_eq!((s.add, s.change, s.destroy, s.unchanged), (1, 1, 1, 1));
    }
}
