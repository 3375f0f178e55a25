//! Drift: what nodes report against the declared MIG layout and the last applied one.
//!
//! Observations come one file per node: `NODE.json`, the JSON of `gpuplan discover
//! --format json` (or `gpuplan import nvidia-smi-xml --format json`), or `NODE.lgi.txt`,
//! the table `nvidia-smi mig -lgi` prints (read by the one parser of the `nvidia-smi mig`
//! tables, [`crate::import::nvidia_smi::mig`]). Parsing and comparing are pure; the
//! command reads the folder.

use crate::discover::GpuFacts;
use crate::import::nvidia_smi::mig::parse_instance_rows;
use crate::model::{Cluster, Node};
use crate::placement::GpuLayout;
use crate::plan::disruption::counted;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// GP926: an observation file cannot be read.
pub const GP926: &str = "GP926";

/// One GPU as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObservedGpu {
    /// `None`: unknown (an `-lgi` table lists only GPUs with instances).
    pub mig_enabled: Option<bool>,
    /// Profiles of the GPU instances (`?` plus memory when the source has no name).
    pub profiles: Vec<String>,
}

/// One node as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObservedNode {
    pub node: String,
    /// The file it was read from.
    pub source: String,
    /// `true` when every GPU of the node is listed (JSON); an `-lgi` table omits GPUs
    /// without instances.
    pub complete: bool,
    pub gpus: BTreeMap<u32, ObservedGpu>,
    /// The NVIDIA driver the node reports (discovery JSON), when known.
    pub driver: Option<String>,
}

#[derive(Deserialize)]
struct DiscoveryJson {
    node: String,
    gpus: Vec<GpuFacts>,
    #[serde(default)]
    system: Option<crate::discover::SystemInfo>,
}

/// Reads the JSON of `gpuplan discover --format json`, or of `gpuplan import
/// nvidia-smi... --format json` (the import contract's document: the node is its `read`).
pub fn parse_json(source: &str, text: &str) -> Result<ObservedNode, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let v = match v.get("read") {
        Some(read) if v.get("report").is_some() => read.clone(),
        _ => v,
    };
    let d: DiscoveryJson = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let gpus = d
        .gpus
        .iter()
        .map(|g| {
            let o = match &g.mig {
                Some(m) if m.current => ObservedGpu {
                    mig_enabled: Some(true),
                    profiles: m
                        .gpu_instances
                        .iter()
                        .map(|gi| match (&gi.profile, gi.memory_mib) {
                            (Some(p), _) => p.clone(),
                            (None, Some(mib)) => format!("?({mib}MiB)"),
                            (None, None) => "?".to_string(),
                        })
                        .collect(),
                },
                _ => ObservedGpu {
                    mig_enabled: Some(false),
                    profiles: Vec::new(),
                },
            };
            (g.index, o)
        })
        .collect();
    Ok(ObservedNode {
        node: d.node,
        source: source.to_string(),
        complete: true,
        gpus,
        driver: d.system.and_then(|s| s.driver_version),
    })
}

/// Reads an `nvidia-smi mig -lgi` table ([`parse_instance_rows`]) as an observation.
pub fn parse_lgi(node: &str, source: &str, text: &str) -> Result<ObservedNode, String> {
    let (lci, rows) = parse_instance_rows(text)?;
    if lci {
        return Err("this is `nvidia-smi mig -lci` (compute instances), not `mig -lgi`".into());
    }
    let mut gpus: BTreeMap<u32, ObservedGpu> = BTreeMap::new();
    for r in rows {
        let g = gpus.entry(r.gpu).or_default();
        g.mig_enabled = Some(true);
        g.profiles.push(r.profile);
    }
    Ok(ObservedNode {
        node: node.to_string(),
        source: source.to_string(),
        complete: false,
        gpus,
        driver: None,
    })
}

/// One difference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub node: String,
    pub gpu: Option<u32>,
    /// `observed` (a node differs from the plan or the state), `not-applied` (the
    /// configuration changed since the last apply; the node matches the state) or
    /// `driver` (the node runs another NVIDIA driver than declared).
    pub kind: String,
    pub observed: Option<Vec<String>>,
    pub declared: Option<Vec<String>>,
    pub applied: Option<Vec<String>>,
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub format_version: String,
    pub drift: bool,
    pub nodes_observed: usize,
    pub differences: Vec<Difference>,
    pub notes: Vec<String>,
}

fn layout_map(l: &[GpuLayout]) -> BTreeMap<(&str, u32), &[String]> {
    l.iter()
        .map(|x| ((x.node.as_str(), x.gpu), x.profiles.as_slice()))
        .collect()
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

fn shown(v: &[String]) -> String {
    format!("`{}`", counted(v))
}

/// The layouts one node's GPUs are compared with: declared, and applied (with a state).
struct Layouts<'a> {
    declared: BTreeMap<(&'a str, u32), &'a [String]>,
    applied: Option<BTreeMap<(&'a str, u32), &'a [String]>>,
}

impl Layouts<'_> {
    /// The declared profiles of a GPU, and the applied ones when there is a state.
    fn of(&self, node: &str, gpu: u32) -> (Vec<String>, Option<Vec<String>>) {
        let profiles = |l: &BTreeMap<(&str, u32), &[String]>| {
            l.get(&(node, gpu)).map_or_else(Vec::new, |p| p.to_vec())
        };
        (
            profiles(&self.declared),
            self.applied.as_ref().map(profiles),
        )
    }
}

/// Compares observations with the declared layouts and the applied ones (if any).
pub fn compare(
    c: &Cluster,
    declared: &[GpuLayout],
    applied: Option<&[GpuLayout]>,
    observed: &[ObservedNode],
) -> Report {
    let layouts = Layouts {
        declared: layout_map(declared),
        applied: applied.map(layout_map),
    };
    let mut out = Vec::new();
    let mut nodes: Vec<&ObservedNode> = observed.iter().collect();
    nodes.sort_by(|a, b| a.node.cmp(&b.node));
    for o in &nodes {
        let Some(n) = c.node(&o.node) else {
            out.push(Difference {
                node: o.node.clone(),
                gpu: None,
                kind: "observed".into(),
                observed: None,
                declared: None,
                applied: None,
                message: format!(
                    "node `{}` ({}) is not in the configuration",
                    o.node, o.source
                ),
            });
            continue;
        };
        out.extend(compare_driver(c, n, o));
        for g in n.usable_gpus() {
            out.extend(compare_gpu(n, g.index, o, &layouts));
        }
    }
    Report {
        format_version: "1".into(),
        drift: !out.is_empty(),
        nodes_observed: nodes.len(),
        differences: out,
        notes: notes(c, applied.is_some(), observed),
    }
}

/// The driver a node reports against the one declared for it (`gpus driver=` of its
/// class, else `gpu-model driver=`): an OS update that moved the driver is drift, since
/// the CUDA runtimes planned onto the node were checked against the declared one.
fn compare_driver(c: &Cluster, n: &Node, o: &ObservedNode) -> Option<Difference> {
    let seen = o.driver.as_deref()?;
    let idx = *c.node_index.get(&n.name)?;
    let want = crate::catalog::cuda::driver_text(c.node_driver(idx)?);
    let same = crate::spec::reader::parse_version(seen)
        .ok()
        .zip(crate::spec::reader::parse_version(&want).ok())
        .is_some_and(|(a, b)| a == b);
    if same {
        return None;
    }
    Some(Difference {
        node: n.name.clone(),
        gpu: None,
        kind: "driver".into(),
        observed: Some(vec![seen.to_string()]),
        declared: Some(vec![want.clone()]),
        applied: None,
        message: format!(
            "node `{}` runs NVIDIA driver {seen}, the configuration declares {want} ({}): classes' CUDA was checked against {want}",
            n.name, o.source
        ),
    })
}

/// GPU `gpu` of node `n` as observed in `o`, against its layouts; `None` when it
/// matches both.
fn compare_gpu(n: &Node, gpu: u32, o: &ObservedNode, layouts: &Layouts) -> Option<Difference> {
    let (want, had) = layouts.of(&n.name, gpu);
    let seen = match o.gpus.get(&gpu) {
        Some(x) => x.profiles.clone(),
        None if o.complete => {
            return Some(Difference {
                node: n.name.clone(),
                gpu: Some(gpu),
                kind: "observed".into(),
                observed: None,
                declared: Some(want),
                applied: had,
                message: format!(
                    "node `{}` GPU {} is not reported ({})",
                    n.name, gpu, o.source
                ),
            });
        }
        None => Vec::new(),
    };
    let matches_plan = sorted(&seen) == sorted(&want);
    let matches_state = had.as_ref().is_none_or(|h| sorted(h) == sorted(&seen));
    if matches_plan && matches_state {
        return None;
    }
    let kind = if !matches_plan && had.as_ref().is_some_and(|h| sorted(h) == sorted(&seen)) {
        "not-applied"
    } else {
        "observed"
    };
    let mut message = format!(
        "node `{}` GPU {} has {}, plan says {}",
        n.name,
        gpu,
        shown(&seen),
        shown(&want)
    );
    if let Some(h) = &had {
        if sorted(h) != sorted(&want) || !matches_state {
            message.push_str(&format!(", last applied {}", shown(h)));
        }
    }
    if kind == "not-applied" {
        message.push_str(" (not applied yet: `gpuplan plan` shows the change)");
    }
    Some(Difference {
        node: n.name.clone(),
        gpu: Some(gpu),
        kind: kind.into(),
        observed: Some(seen),
        declared: Some(want),
        applied: had,
        message,
    })
}

/// What the comparison could not check: nodes without an observation, a missing state.
fn notes(c: &Cluster, has_state: bool, observed: &[ObservedNode]) -> Vec<String> {
    let mut notes = Vec::new();
    let unobserved = c
        .nodes
        .iter()
        .filter(|n| !observed.iter().any(|o| o.node == n.name))
        .count();
    if unobserved > 0 {
        notes.push(format!(
            "{unobserved} of {} configured nodes have no observation and were not checked",
            c.nodes.len()
        ));
    }
    if !has_state {
        notes.push("no state: compared with the declared layout only".into());
    }
    notes
}

/// The report as text.
pub fn human(r: &Report) -> String {
    let mut s = String::new();
    for d in &r.differences {
        s.push_str(&format!("drift: {}\n", d.message));
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if r.drift {
        s.push_str(&format!(
            "\nDrift: {} difference(s) on {} observed node(s).\n",
            r.differences.len(),
            r.nodes_observed
        ));
    } else {
        s.push_str(&format!(
            "\nNo drift: {} observed node(s) match the plan and the state.\n",
            r.nodes_observed
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::import::nvidia_smi::mig::tests::LGI;

    #[test]
    fn lgi_tables_give_profiles_per_gpu() {
        let o = parse_lgi("n", "n.lgi.txt", LGI).unwrap();
        assert_eq!(o.gpus[&0].profiles, ["3g.40gb", "3g.40gb"]);
        assert_eq!(o.gpus[&3].profiles, ["1g.10gb"]);
        assert!(parse_lgi("n", "x", "hello").is_err());
        assert!(parse_lgi("n", "x", "No GPU instances found: Not Found").is_ok());
    }

    #[test]
    fn an_lci_table_is_not_an_observation_of_gpu_instances() {
        let table = crate::import::nvidia_smi::mig::tests::LCI;
        assert!(
            parse_lgi("n", "x", table).is_err(),
            "an -lci table is not an observation of GPU instances"
        );
    }

    #[test]
    fn discovery_json_gives_profiles_and_whole_gpus() {
        let j = r#"{"format_version": "1", "node": "n", "gpus": [
            {"index": 0, "mig": {"current": true, "pending": true, "gpu_instances": [
                {"id": 1, "profile": "3g.40gb"}, {"id": 2, "memory_mib": 40192}]}},
            {"index": 1, "mig": null}]}"#;
        let o = parse_json("n.json", j).unwrap();
        assert_eq!(o.gpus[&0].profiles, ["3g.40gb", "?(40192MiB)"]);
        assert_eq!(o.gpus[&1].mig_enabled, Some(false));
        assert!(o.complete);
        assert!(parse_json("x", "{").is_err());
    }
}
