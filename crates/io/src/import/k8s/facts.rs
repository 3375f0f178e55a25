//! A node's facts besides its GPUs: CPUs and memory (`status.capacity`), the driver
//! version (GFD's `nvidia.com/cuda.driver*` labels), the CUDA version it supports, and
//! taints; what cannot be read is flagged (GP737) or, for a taint, left out (GP739).

use super::node::Cx;
use super::read::{RawNode, Taint};
use super::{GP737, GP739, text};
use crate::import::contract::{Item, ItemKind};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// CPUs and memory beyond these are typos or attacks, not a node's.
const MAX_CPUS: f64 = 1_048_576.0;
const MAX_MEMORY_GIB: f64 = 1_048_576.0;

impl Cx<'_> {
    /// A field left out of the class (GP737): warned and flagged, the node imported.
    fn field_flag(&mut self, n: &RawNode, key: &str, msg: String, help: &str) {
        self.flags.push(Item::new(
            ItemKind::Node,
            n.name.clone(),
            GP737,
            format!("{msg}: {help}"),
        ));
        self.warn(GP737, n, key, msg, help);
    }

    pub(super) fn cpus(&mut self, n: &RawNode) -> Option<u32> {
        let v = n.capacity.get("cpu")?;
        match quantity(v) {
            Some(q) if (1.0..MAX_CPUS).contains(&q) => Some(q.floor() as u32),
            _ => {
                let msg = format!(
                    "CPU capacity `{}` of node `{}` cannot be read (or is out of range)",
                    text::shown(v),
                    n.name
                );
                self.field_flag(n, "cpu", msg, "the class is written without `cpu`");
                None
            }
        }
    }

    pub(super) fn memory(&mut self, n: &RawNode) -> Option<u64> {
        let v = n.capacity.get("memory")?;
        match quantity(v) {
            Some(q) if (GIB..MAX_MEMORY_GIB * GIB).contains(&q) => {
                Some(crate::import::memory::coarse_gib((q / GIB).floor() as u64))
            }
            _ => {
                let msg = format!(
                    "memory capacity `{}` of node `{}` cannot be read (or is under 1 GiB, or out of range)",
                    text::shown(v),
                    n.name
                );
                self.field_flag(n, "memory", msg, "the class is written without `memory`");
                None
            }
        }
    }

    /// The driver version: `nvidia.com/cuda.driver-version.full`, else its parts, else
    /// the older `nvidia.com/cuda.driver.major/minor/rev`.
    pub(super) fn driver(&mut self, n: &RawNode) -> Option<String> {
        let l = |k: &str| {
            n.labels
                .get(k)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let v = l("nvidia.com/cuda.driver-version.full").or_else(|| {
            [
                ("nvidia.com/cuda.driver-version.", "revision"),
                ("nvidia.com/cuda.driver.", "rev"),
            ]
            .iter()
            .find_map(|(p, rev)| {
                let major = l(&format!("{p}major"))?;
                let minor = l(&format!("{p}minor"))?;
                Some(match l(&format!("{p}{rev}")) {
                    Some(r) => format!("{major}.{minor}.{r}"),
                    None => format!("{major}.{minor}"),
                })
            })
        })?;
        let ok = v.split('.').count() <= 4
            && v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if !ok || v.len() > 32 {
            let msg = format!(
                "driver version `{}` of node `{}` cannot be read",
                text::shown(&v),
                n.name
            );
            self.field_flag(
                n,
                "nvidia.com/cuda.driver",
                msg,
                "the class is written without `driver`",
            );
            return None;
        }
        Some(v)
    }

    /// Taints but the kubelet's and node controller's own (`node.kubernetes.io/*`,
    /// `node.cloudprovider.kubernetes.io/*`), sorted.
    pub(super) fn taints(&mut self, n: &RawNode) -> Vec<Taint> {
        let mut out = Vec::new();
        for t in &n.taints {
            if t.key.starts_with("node.kubernetes.io/")
                || t.key.starts_with("node.cloudprovider.kubernetes.io/")
            {
                continue;
            }
            let why = if !matches!(
                t.effect.as_str(),
                "NoSchedule" | "PreferNoSchedule" | "NoExecute"
            ) {
                Some(format!(
                    "effect `{}` is not NoSchedule, PreferNoSchedule or NoExecute",
                    text::shown(&t.effect)
                ))
            } else if t.key.starts_with("gpuplan.io/") {
                Some("gpuplan sets `gpuplan.io/` taints itself".to_string())
            } else if crate::names::label_key(&t.key).is_err()
                || t.value
                    .as_deref()
                    .is_some_and(|v| !crate::names::is_label_value(v))
            {
                Some("its key or value is not a valid Kubernetes name".to_string())
            } else {
                None
            };
            match why {
                Some(why) => {
                    let key = text::shown(&t.key);
                    let msg = format!(
                        "taint `{key}` of node `{}` is not carried over: {why}",
                        n.name
                    );
                    self.warn(GP739, n, &t.key, msg, "add it by hand if it matters");
                    let item =
                        Item::new(ItemKind::Taint, format!("{key} on {}", n.name), GP739, why);
                    // gpuplan's own taints come back from `render`: not a loss.
                    if t.key.starts_with("gpuplan.io/") {
                        self.flags.push(item);
                    } else {
                        self.lost.push(item);
                    }
                }
                None => out.push(t.clone()),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// The CUDA version the driver supports: `nvidia.com/cuda.runtime-version.full`, else
/// `.major`/`.minor` of it or of the older `nvidia.com/cuda.runtime`.
pub(crate) fn cuda_runtime(n: &RawNode) -> Option<String> {
    let l = |k: &str| n.labels.get(k).filter(|s| !s.is_empty());
    if let Some(full) = l("nvidia.com/cuda.runtime-version.full") {
        return Some(full.clone());
    }
    [
        "nvidia.com/cuda.runtime-version.",
        "nvidia.com/cuda.runtime.",
    ]
    .iter()
    .find_map(|p| {
        Some(format!(
            "{}.{}",
            l(&format!("{p}major"))?,
            l(&format!("{p}minor"))?
        ))
    })
}

/// A Kubernetes quantity (`192`, `191450m`, `2113558232Ki`, `1.5Gi`, `2e3`) as a number.
pub(crate) fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("m", 0.001),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (num, mul) = SUFFIXES
        .iter()
        .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n, *m)))
        .unwrap_or((s, 1.0));
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mul)
}
