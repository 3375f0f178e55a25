//! How the imported nodes group: node classes of identical hardware, `nodes` lines per
//! class and taint set, pools from pool labels, and MIG layout lines.

use super::facts::cuda_runtime;
use super::node::GpuNode;
use super::read::{Locator, Taint};
use super::{
    Class, DEFAULT_POOL_LABELS, GP739, Hardware, MigLine, Options, PRODUCT, Pool, Range, mig,
};
use crate::catalog;
use crate::diag::Diagnostic;
use crate::import::names::{one_pattern, sanitize, unique};
use std::collections::{BTreeMap, BTreeSet};

/// Classes of identical hardware, named `<model short name>-x<gpus>` (deduplicated in
/// the order of their hardware), and each node's class.
pub(crate) fn classes(nodes: &[GpuNode]) -> (Vec<Class>, BTreeMap<String, String>) {
    let mut by_hw: BTreeMap<&Hardware, Vec<&GpuNode>> = BTreeMap::new();
    for g in nodes {
        by_hw.entry(&g.hardware).or_default().push(g);
    }
    let mut used = BTreeSet::new();
    let mut classes = Vec::new();
    let mut class_of = BTreeMap::new();
    for (hw, members) in by_hw {
        let base = if hw.gpus == 0 {
            // A CPU-only class: named after its CPUs when known.
            hw.cpus.map_or("cpu".to_string(), |c| format!("cpu-{c}c"))
        } else {
            let short = catalog::lookup(&hw.model).map_or(hw.model.as_str(), |s| s.short_name);
            format!("{short}-x{}", hw.gpus)
        };
        let name = unique(&sanitize(&base, 50), &mut used);
        for g in &members {
            class_of.insert(g.raw.name.clone(), name.clone());
        }
        let families: BTreeSet<&String> =
            members.iter().filter_map(|g| g.family.as_ref()).collect();
        let cudas: BTreeSet<String> = members.iter().filter_map(|g| cuda_runtime(g.raw)).collect();
        classes.push(Class {
            name,
            hardware: hw.clone(),
            products: members
                .iter()
                .filter_map(|g| g.raw.labels.get(PRODUCT).cloned())
                .collect(),
            family: (families.len() == 1)
                .then(|| families.into_iter().next().cloned())
                .flatten(),
            cuda: (cudas.len() == 1)
                .then(|| cudas.into_iter().next())
                .flatten(),
            nodes: members.len(),
        });
    }
    classes.sort_by(|a, b| a.name.cmp(&b.name));
    (classes, class_of)
}

/// `nodes` lines: nodes of one class and the same taints, compressed into ranges; the
/// names no range holds share one line (`gke-pool-a1b2-[0k2d,7qxz]`).
pub(crate) fn ranges(nodes: &[GpuNode], class_of: &BTreeMap<String, String>) -> Vec<Range> {
    type Key<'a> = (&'a str, &'a [Taint], Option<&'a String>);
    let mut groups: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    for g in nodes {
        let class = class_of.get(&g.raw.name).map_or("", String::as_str);
        let clique = g
            .raw
            .labels
            .get(super::fabric::CLIQUE)
            .filter(|v| !v.is_empty() && crate::names::is_label_value(v));
        groups
            .entry((class, &g.taints, clique))
            .or_default()
            .push(g.raw.name.clone());
    }
    let mut out = Vec::new();
    for ((class, taints, clique), names) in groups {
        let (ranged, single): (Vec<String>, Vec<String>) = crate::units::compress_names(&names)
            .into_iter()
            .partition(|p| p.contains('['));
        let rest = (!single.is_empty()).then(|| one_pattern(&single));
        for pattern in ranged.into_iter().chain(rest) {
            out.push(Range {
                pattern,
                class: class.to_string(),
                taints: taints.to_vec(),
                labels: clique
                    .map(|v| (super::fabric::CLIQUE.to_string(), v.clone()))
                    .into_iter()
                    .collect(),
            });
        }
    }
    out.sort_by(|a, b| (&a.class, &a.pattern).cmp(&(&b.class, &b.pattern)));
    out
}

/// Pools from the first pool label each node has.
pub(crate) fn pools(
    nodes: &[GpuNode],
    loc: &Locator,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Pool> {
    let keys: Vec<&str> = if opts.pool_labels.is_empty() {
        DEFAULT_POOL_LABELS.to_vec()
    } else {
        opts.pool_labels.iter().map(String::as_str).collect()
    };
    let mut groups: BTreeMap<(&str, &str), Vec<&GpuNode>> = BTreeMap::new();
    for g in nodes {
        if let Some((k, v)) = keys
            .iter()
            .find_map(|k| g.raw.labels.get(*k).map(|v| (*k, v.as_str())))
        {
            groups.entry((k, v)).or_default().push(g);
        }
    }
    let mut used = BTreeSet::new();
    let mut out = Vec::new();
    for ((key, value), members) in groups {
        let name = unique(&sanitize(value, 63), &mut used);
        let modes: BTreeSet<&str> = members.iter().map(|g| g.mode).collect();
        let mode = match modes.iter().next() {
            Some(m) if modes.len() == 1 => *m,
            _ => {
                let first = members[0].raw;
                diags.push(
                    Diagnostic::warning(GP739, format!("the nodes of pool `{name}` ({key}={value}) use their GPUs in different ways ({}): the pool is written as whole-gpu", modes.iter().copied().collect::<Vec<_>>().join(", ")))
                        .at(loc.key(first.index, key, &first.name), "here")
                        .with_help("review the pool's mode"),
                );
                "whole-gpu"
            }
        };
        let names: Vec<String> = members.iter().map(|g| g.raw.name.clone()).collect();
        out.push(Pool {
            name,
            mode,
            nodes: one_pattern(&names),
            label: format!("{key}={value}"),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `mig layout ... current=#true` lines: nodes of one layout.
pub(crate) fn mig_lines(nodes: &[GpuNode]) -> Vec<MigLine> {
    let mut groups: BTreeMap<(&mig::Layout, Option<&String>), Vec<String>> = BTreeMap::new();
    for g in nodes {
        if let Some(l) = &g.mig {
            groups
                .entry((l, g.raw.labels.get(mig::CONFIG)))
                .or_default()
                .push(g.raw.name.clone());
        }
    }
    groups
        .into_iter()
        .map(|((layout, config), names)| MigLine {
            layout: layout.clone(),
            nodes: one_pattern(&names),
            config: config.cloned(),
        })
        .collect()
}
