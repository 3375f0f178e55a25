//! topology.yaml as slurmctld 25.05+ reads it (topology.yaml(5)): a list of named
//! topologies, each `tree` (switches with `nodes` and `children`), `block`
//! (`block_sizes`, blocks with `nodes`) or `flat`; the first with `cluster_default:
//! true` serves the partitions that name none. When the file exists Slurm ignores
//! topology.conf. A partition's `Topology=` must name one of them.

use super::super::hostlist;
use std::collections::{BTreeMap, BTreeSet};

/// One topology's domains: the leaf switches (tree) or the blocks (block), each with
/// its nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Named {
    pub block: bool,
    pub domains: Vec<(String, BTreeSet<String>)>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Topologies {
    pub by_name: BTreeMap<String, Named>,
    pub default: Option<String>,
}

impl Topologies {
    /// The topology a partition uses: the one it names, else the cluster default.
    pub(crate) fn of<'a>(&'a self, named: Option<&'a str>) -> Option<(&'a str, &'a Named)> {
        let name = named.or(self.default.as_deref())?;
        self.by_name
            .get_key_value(name)
            .map(|(k, v)| (k.as_str(), v))
    }
}

/// The topologies of a topology.yaml, and what could not be read.
pub(crate) fn parse(text: &str) -> (Topologies, Vec<String>) {
    let mut t = Topologies::default();
    let mut errors = Vec::new();
    let doc: serde_yaml::Value = match serde_yaml::from_str(text) {
        Ok(v) => v,
        Err(e) => return (t, vec![format!("topology.yaml: {e}")]),
    };
    let Some(list) = doc.as_sequence() else {
        return (t, vec!["topology.yaml is not a list of topologies".into()]);
    };
    let mut left = hostlist::MAX_NAMES;
    for (i, item) in list.iter().enumerate() {
        match topology(item, &mut left) {
            Ok((name, default, named)) => {
                if default && t.default.is_none() {
                    t.default = Some(name.clone());
                }
                if t.by_name.insert(name.clone(), named).is_some() {
                    errors.push(format!("topology `{name}` is defined twice"));
                }
            }
            Err(e) => errors.push(format!("topology {}: {e}", i + 1)),
        }
    }
    (t, errors)
}

fn text(v: &serde_yaml::Value, key: &str) -> Option<String> {
    match v.get(key)? {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn topology(v: &serde_yaml::Value, left: &mut usize) -> Result<(String, bool, Named), String> {
    let name = text(v, "topology").ok_or("no `topology` name")?;
    let default = v
        .get("cluster_default")
        .and_then(serde_yaml::Value::as_bool)
        .unwrap_or(false);
    let kinds = ["tree", "block", "flat"]
        .iter()
        .filter(|k| v.get(**k).is_some())
        .count();
    if kinds != 1 {
        return Err(format!("`{name}` must be exactly one of tree, block, flat"));
    }
    let (block, list, key) = if let Some(tree) = v.get("tree") {
        (false, tree.get("switches"), "switch")
    } else if let Some(b) = v.get("block") {
        (true, b.get("blocks"), "block")
    } else {
        return Ok((name, default, Named::default()));
    };
    let mut domains = Vec::new();
    for d in list
        .and_then(serde_yaml::Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let dn = text(d, key).ok_or_else(|| format!("`{name}`: a {key} has no name"))?;
        if let Some(nodes) = text(d, "nodes") {
            let set = hostlist::expand_within(&nodes, left)
                .map_err(|e| format!("`{name}` {key} `{dn}`: {e}"))?;
            domains.push((dn, set.into_iter().collect()));
        }
    }
    Ok((name, default, Named { block, domains }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_and_block_topologies() {
        let text = "- topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n      - switch: l1\n        nodes: n[1-2]\n      - switch: s\n        children: l1\n- topology: nvlink\n  block:\n    block_sizes: [2]\n    blocks:\n      - block: b1\n        nodes: g[1-2]\n";
        let (t, e) = parse(text);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(t.default.as_deref(), Some("fabric"));
        let (name, tree) = t.of(None).unwrap();
        assert_eq!((name, tree.block, tree.domains.len()), ("fabric", false, 1));
        let (_, b) = t.of(Some("nvlink")).unwrap();
        assert!(b.block && b.domains[0].1.contains("g2"));
        assert!(t.of(Some("nope")).is_none());
        assert_eq!(parse("- topology: x\n").1.len(), 1);
    }
}
