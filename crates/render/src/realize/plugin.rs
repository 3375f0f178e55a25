//! The NVIDIA k8s-device-plugin as it advertises a node's GPUs
//! (/work/shared/reference/k8s-nvidia.md §4, §6; k8s-device-plugin v0.20.0):
//! `migStrategy` `none` (every GPU is `nvidia.com/gpu`), `single` (every GPU in MIG
//! with one profile: the MIG devices are `nvidia.com/gpu`; otherwise nothing),
//! `mixed` (non-MIG GPUs as `nvidia.com/gpu`, each MIG device as
//! `nvidia.com/mig-<profile>` with `+` written `.`); `sharing.timeSlicing|mps`
//! multiplies each listed resource by its `replicas` and, with `renameByDefault`,
//! advertises it as `<name>.shared` instead. Sharing applies to every GPU of the node.

use super::yaml::{self, at, seq_at, str_at};
use crate::model::Isolation;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strategy {
    None,
    Single,
    Mixed,
}

/// The `sharing` block of a config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sharing {
    /// Time-slicing or MPS.
    pub mode: Isolation,
    pub rename: bool,
    /// A request above 1 of a shared resource fails (MPS forces it unless set).
    pub fail_above_one: bool,
    /// Resource name -> replicas.
    pub replicas: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    pub strategy: Strategy,
    pub sharing: Option<Sharing>,
}

impl Default for Config {
    /// A device plugin started without a config.
    fn default() -> Self {
        Config {
            strategy: Strategy::None,
            sharing: None,
        }
    }
}

/// Parses one device-plugin config (`version: v1`).
pub(crate) fn parse(text: &str) -> Result<Config, String> {
    let docs = yaml::documents(text)?;
    let [v] = docs.as_slice() else {
        return Err("a device-plugin config is one YAML document".into());
    };
    if str_at(v, &["version"]) != Some("v1") {
        return Err("a device-plugin config needs `version: v1`".into());
    }
    let strategy = match str_at(v, &["flags", "migStrategy"]).unwrap_or("none") {
        "none" => Strategy::None,
        "single" => Strategy::Single,
        "mixed" => Strategy::Mixed,
        s => return Err(format!("unknown migStrategy `{s}`")),
    };
    let ts = at(v, &["sharing", "timeSlicing"]).filter(|x| !x.is_null());
    let mps = at(v, &["sharing", "mps"]).filter(|x| !x.is_null());
    let sharing = match (ts, mps) {
        (Some(_), Some(_)) => return Err("sharing has both timeSlicing and mps".into()),
        (Some(s), None) => Some(sharing(s, Isolation::TimeSlice)?),
        (None, Some(s)) => Some(sharing(s, Isolation::Mps)?),
        (None, None) => None,
    };
    Ok(Config { strategy, sharing })
}

fn sharing(s: &serde_yaml::Value, mode: Isolation) -> Result<Sharing, String> {
    let flag = |k: &str| at(s, &[k]).and_then(serde_yaml::Value::as_bool);
    let mut replicas = BTreeMap::new();
    for r in seq_at(s, &["resources"]) {
        let name = str_at(r, &["name"]).ok_or("a sharing resource has no name")?;
        let n = yaml::uint_at(r, &["replicas"])?
            .filter(|n| *n >= 1 && *n <= u32::MAX as u64)
            .ok_or_else(|| format!("sharing resource `{name}` has no valid replicas"))?;
        replicas.insert(name.to_string(), n as u32);
    }
    Ok(Sharing {
        mode,
        rename: flag("renameByDefault").unwrap_or(false),
        fail_above_one: flag("failRequestsGreaterThanOne").unwrap_or(mode == Isolation::Mps),
        replicas,
    })
}

/// The resource a MIG profile is advertised as under the mixed strategy.
pub(crate) fn mig_resource(profile: &str) -> String {
    format!("nvidia.com/mig-{}", profile.replace('+', "."))
}

/// What the device plugin advertises for a node's GPUs, in thousandths: `gpus` is
/// every usable GPU with its MIG devices (`None`: MIG disabled).
pub(crate) fn advertise(
    cfg: &Config,
    gpus: &BTreeMap<u32, Option<BTreeMap<String, u32>>>,
) -> BTreeMap<String, i128> {
    let mut out: BTreeMap<String, i128> = BTreeMap::new();
    let mut add = |k: String, n: i128| *out.entry(k).or_default() += n * 1000;
    match cfg.strategy {
        Strategy::None => add("nvidia.com/gpu".into(), gpus.len() as i128),
        Strategy::Mixed => {
            for layout in gpus.values() {
                match layout {
                    None => add("nvidia.com/gpu".into(), 1),
                    Some(devices) => {
                        for (p, n) in devices {
                            add(mig_resource(p), *n as i128);
                        }
                    }
                }
            }
        }
        Strategy::Single => {
            let profiles: std::collections::BTreeSet<&String> = gpus
                .values()
                .flatten()
                .flat_map(|d| d.iter().filter(|(_, n)| **n > 0).map(|(p, _)| p))
                .collect();
            let all_mig = gpus
                .values()
                .all(|l| l.as_ref().is_some_and(|d| !d.is_empty()));
            if all_mig && profiles.len() == 1 {
                let n: u32 = gpus.values().flatten().flat_map(|d| d.values()).sum();
                add("nvidia.com/gpu".into(), n as i128);
            }
        }
    }
    out.retain(|_, n| *n > 0);
    let Some(s) = &cfg.sharing else { return out };
    let mut shared = BTreeMap::new();
    for (name, n) in out {
        match s.replicas.get(&name) {
            Some(r) if s.rename => {
                shared.insert(format!("{name}.shared"), n * *r as i128);
            }
            Some(r) => {
                shared.insert(name, n * *r as i128);
            }
            None => {
                shared.insert(name, n);
            }
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(mig: &[Option<&[(&str, u32)]>]) -> BTreeMap<u32, Option<BTreeMap<String, u32>>> {
        mig.iter()
            .enumerate()
            .map(|(i, l)| {
                let l = l.map(|d| d.iter().map(|(p, n)| (p.to_string(), *n)).collect());
                (i as u32, l)
            })
            .collect()
    }

    #[test]
    fn strategies_and_sharing() {
        let none = parse("version: v1\nflags: {migStrategy: none}\n").unwrap();
        let two = gpus(&[None, Some(&[("1g.10gb+me", 7)])]);
        assert_eq!(advertise(&none, &two)["nvidia.com/gpu"], 2000);
        let mixed = parse("version: v1\nflags: {migStrategy: mixed}\n").unwrap();
        let a = advertise(&mixed, &two);
        assert_eq!(
            (a["nvidia.com/gpu"], a["nvidia.com/mig-1g.10gb.me"]),
            (1000, 7000)
        );
        let single = parse("version: v1\nflags: {migStrategy: single}\n").unwrap();
        assert!(advertise(&single, &two).is_empty(), "a mix is invalid");
        let ts = "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n      - {name: nvidia.com/gpu, replicas: 4}\n";
        let ts = parse(ts).unwrap();
        let a = advertise(&ts, &gpus(&[None, None]));
        assert_eq!(a.get("nvidia.com/gpu"), None);
        assert_eq!(a["nvidia.com/gpu.shared"], 8000);
        let mps = parse("version: v1\nsharing:\n  mps:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 2}\n").unwrap();
        let s = mps.sharing.as_ref().unwrap();
        assert!(s.fail_above_one && !s.rename && s.mode == Isolation::Mps);
        assert_eq!(advertise(&mps, &gpus(&[None]))["nvidia.com/gpu"], 2000);
        assert!(parse("version: v2\n").is_err());
        assert!(parse("version: v1\nflags: {migStrategy: odd}\n").is_err());
    }
}
