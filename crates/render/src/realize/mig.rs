//! MIG: nvidia-mig-parted configs as MIG Manager applies them (reference
//! k8s-nvidia.md §1: each config a list of specs applied in order, a later spec
//! re-applying to the GPUs it matches; `devices: all` or indexes; `mig-enabled`,
//! `mig-devices: {profile: count}`), and the check that the config each node selects
//! creates exactly the planned layout of every usable GPU (`Placement::mig_layouts`).

use super::yaml::{self, at, str_at};
use super::{Checked, Invariant, Sink, Target};
use crate::model::Cluster;
use crate::placement::Placement;
use std::collections::BTreeMap;

/// A GPU's MIG devices (`None`: MIG disabled).
pub type Layout = Option<BTreeMap<String, u32>>;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Spec {
    /// `None`: `devices: all`.
    devices: Option<Vec<u32>>,
    enabled: bool,
    mig_devices: BTreeMap<String, u32>,
}

/// A mig-parted file: config name -> specs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parted {
    configs: BTreeMap<String, Vec<Spec>>,
}

/// Parses a mig-parted config file (`version: v1`).
pub(crate) fn parse(text: &str) -> Result<Parted, String> {
    let docs = yaml::documents(text)?;
    let [v] = docs.as_slice() else {
        return Err("a mig-parted config is one YAML document".into());
    };
    if str_at(v, &["version"]) != Some("v1") {
        return Err("a mig-parted config needs `version: v1`".into());
    }
    let configs = at(v, &["mig-configs"])
        .and_then(serde_yaml::Value::as_mapping)
        .ok_or("a mig-parted config needs `mig-configs`")?;
    let mut out = Parted::default();
    for (name, specs) in configs {
        let name = name.as_str().ok_or("a config name is not a string")?;
        let list = specs.as_sequence().filter(|s| !s.is_empty());
        let list = list.ok_or_else(|| format!("config `{name}` has no specs"))?;
        let parsed: Result<Vec<Spec>, String> = list.iter().map(spec).collect();
        let parsed = parsed.map_err(|e| format!("config `{name}`: {e}"))?;
        out.configs.insert(name.to_string(), parsed);
    }
    Ok(out)
}

fn spec(v: &serde_yaml::Value) -> Result<Spec, String> {
    let devices = match at(v, &["devices"]) {
        Some(serde_yaml::Value::String(s)) if s == "all" => None,
        Some(serde_yaml::Value::Sequence(s)) => Some(
            s.iter()
                .map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()))
                .collect::<Option<Vec<u32>>>()
                .ok_or("`devices` lists something that is not a GPU index")?,
        ),
        _ => return Err("`devices` must be `all` or a list of GPU indexes".into()),
    };
    let enabled = at(v, &["mig-enabled"])
        .and_then(serde_yaml::Value::as_bool)
        .ok_or("`mig-enabled` must be true or false")?;
    let mut mig_devices = BTreeMap::new();
    if let Some(m) = at(v, &["mig-devices"]).and_then(serde_yaml::Value::as_mapping) {
        for (p, n) in m {
            let (Some(p), Some(n)) = (p.as_str(), n.as_u64()) else {
                return Err("`mig-devices` must map profiles to counts".into());
            };
            let n = u32::try_from(n).map_err(|_| format!("`{p}`: count too large"))?;
            if n > 0 {
                mig_devices.insert(p.to_string(), n);
            }
        }
    }
    if !enabled && !mig_devices.is_empty() {
        return Err("`mig-devices` given with `mig-enabled: false`".into());
    }
    Ok(Spec {
        devices,
        enabled,
        mig_devices,
    })
}

impl Parted {
    /// The layout config `name` gives each of `gpus` (`None`: no such config).
    pub(crate) fn layout(&self, name: &str, gpus: &[u32]) -> Option<BTreeMap<u32, Layout>> {
        let specs = self.configs.get(name)?;
        let mut out: BTreeMap<u32, Layout> = gpus.iter().map(|g| (*g, None)).collect();
        for s in specs {
            for g in gpus {
                if s.devices.as_ref().is_none_or(|d| d.contains(g)) {
                    let l = s.enabled.then(|| s.mig_devices.clone());
                    out.insert(*g, l);
                }
            }
        }
        Some(out)
    }
}

/// The planned layout of every GPU of a node (profiles counted).
pub(crate) fn planned(plan: &Placement, node: &str) -> BTreeMap<u32, BTreeMap<String, u32>> {
    let mut out: BTreeMap<u32, BTreeMap<String, u32>> = BTreeMap::new();
    for l in plan.mig_layouts.iter().filter(|l| l.node == node) {
        let e = out.entry(l.gpu).or_default();
        for p in &l.profiles {
            *e.entry(p.clone()).or_default() += 1;
        }
    }
    out
}

fn show(l: &Layout) -> String {
    match l {
        None => "MIG disabled".into(),
        Some(d) if d.is_empty() => "MIG enabled with no instances".into(),
        Some(d) => d
            .iter()
            .map(|(p, n)| {
                if *n == 1 {
                    p.clone()
                } else {
                    format!("{p} x{n}")
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Compares a node's configured GPUs with its plan; one violation per differing
/// (configured, planned) pair, naming the GPUs.
pub(crate) fn compare(
    sink: &mut Sink,
    t: Target,
    (node, config, file): (&str, &str, &str),
    configured: &BTreeMap<u32, Layout>,
    plan: &Placement,
) {
    let want = planned(plan, node);
    let mut groups: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
    for (g, have) in configured {
        let planned: Layout = want.get(g).cloned();
        if *have != planned {
            groups
                .entry((show(have), show(&planned)))
                .or_default()
                .push(*g);
        }
    }
    for ((have, planned), gpus) in groups {
        let gpus: Vec<String> = gpus.iter().map(u32::to_string).collect();
        sink.push(
            t,
            Invariant::Mig,
            (&format!("Node/{node}"), file),
            format!(
                "GPU {} of {node}: config `{config}` gives {have}; the plan has {planned}",
                gpus.join(", ")
            ),
        );
    }
}

/// Usable GPU indexes of every node, by name.
pub(crate) fn usable(c: &Cluster) -> BTreeMap<String, Vec<u32>> {
    c.nodes
        .iter()
        .map(|n| (n.name.clone(), n.usable_gpus().map(|g| g.index).collect()))
        .collect()
}

/// The `mig/` target: `mig-parted.yaml` with the config each node gets in
/// `node-configs.tsv` (every node of the cluster), and the device-plugin configs named
/// there.
pub(crate) fn check_folder(
    files: &BTreeMap<String, String>,
    c: &Cluster,
    plan: &Placement,
    sink: &mut Sink,
) -> Checked {
    let t = Target::Mig;
    let file = "mig/mig-parted.yaml";
    let Some(text) = files.get(file) else {
        sink.push(
            t,
            Invariant::Reference,
            ("mig-parted", ""),
            format!("{file} is missing"),
        );
        return Checked::default();
    };
    let parted = match parse(text) {
        Ok(p) => p,
        Err(e) => {
            sink.push(t, Invariant::Parse, ("mig-parted", file), e);
            return Checked::default();
        }
    };
    let configs = node_configs(files, sink);
    let gpus = usable(c);
    let mut nodes = 0;
    for (node, idx) in gpus.iter().filter(|(_, g)| !g.is_empty()) {
        nodes += 1;
        let (name, plugin) = configs.get(node).cloned().unwrap_or_default();
        if !plugin.is_empty() && !files.contains_key(&format!("mig/device-plugin/{plugin}.yaml")) {
            let msg = format!(
                "{node} selects device-plugin config `{plugin}`, which mig/device-plugin/ lacks"
            );
            sink.push(
                t,
                Invariant::Reference,
                (&format!("Node/{node}"), "mig/node-configs.tsv"),
                msg,
            );
        }
        let configured = if name.is_empty() {
            idx.iter().map(|g| (*g, None)).collect()
        } else if let Some(l) = parted.layout(&name, idx) {
            l
        } else {
            let msg = format!("{node} selects MIG config `{name}`, which {file} lacks");
            sink.push(t, Invariant::Mig, (&format!("Node/{node}"), file), msg);
            continue;
        };
        compare(sink, t, (node, &name, file), &configured, plan);
    }
    Checked {
        nodes,
        ..Checked::default()
    }
}

/// `mig/node-configs.tsv`: node -> (MIG config, device-plugin config).
fn node_configs(
    files: &BTreeMap<String, String>,
    sink: &mut Sink,
) -> BTreeMap<String, (String, String)> {
    let file = "mig/node-configs.tsv";
    let mut out = BTreeMap::new();
    let Some(text) = files.get(file) else {
        return out;
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        match cols.as_slice() {
            [node, mig, plugin] => {
                // `-`: no label (MIG disabled, the default device-plugin config).
                let none = |s: &str| {
                    if s == "-" {
                        String::new()
                    } else {
                        s.to_string()
                    }
                };
                out.insert(node.to_string(), (none(mig), none(plugin)));
            }
            _ => sink.push(
                Target::Mig,
                Invariant::Parse,
                ("node-configs", file),
                format!(
                    "line {} is not `node<TAB>mig-config<TAB>plugin-config`",
                    i + 1
                ),
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_specs_win_and_disabled_gpus_have_no_devices() {
        let p = parse(
            "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n    - devices: [1]\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n",
        )
        .unwrap();
        let l = p.layout("a", &[0, 1]).unwrap();
        assert_eq!(l[&0], None);
        assert_eq!(l[&1].as_ref().unwrap()["1g.10gb"], 7);
        assert!(p.layout("b", &[0]).is_none());
        assert!(parse("version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {x: 1}\n").is_err());
        assert!(
            parse(
                "version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: true\n"
            )
            .is_err()
        );
    }
}
