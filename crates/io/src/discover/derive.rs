//! Pure derivations over discovered facts: the catalog model of a node's GPUs, NVLink
//! domains (connected components over active links), NUMA and PCIe groups, names.

use super::{GP702, GP714, GpuFacts};
use crate::catalog::{self, GpuSpec};
use crate::diag::Diagnostic;
use serde::Serialize;
use std::collections::BTreeMap;

/// The GPU model a node class names in `gpus model=`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelMatch {
    /// Name written in `gpus model=`.
    pub name: String,
    /// Catalog id, when the model is in the built-in catalog.
    pub catalog: Option<&'static str>,
    /// How it was found: `pci-device-id`, `product-name`, `--model`, or `declared` (not in
    /// the catalog: a `gpu-model` is declared from the product name and memory).
    pub matched_by: &'static str,
    /// For a declared model: its memory and product name.
    pub memory_mib: Option<u64>,
    pub product_name: Option<String>,
}

impl ModelMatch {
    pub(crate) fn spec(&self) -> Option<&'static GpuSpec> {
        self.catalog.and_then(catalog::lookup)
    }

    /// A model named on the command line (`--model`): a catalog id or alias, or a name
    /// the user declares in another file.
    pub(crate) fn named(name: &str) -> ModelMatch {
        match catalog::lookup(name) {
            Some(spec) => ModelMatch {
                name: spec.id.to_string(),
                catalog: Some(spec.id),
                matched_by: "--model",
                ..ModelMatch::default()
            },
            None => ModelMatch {
                name: name.to_string(),
                catalog: None,
                matched_by: "--model",
                ..ModelMatch::default()
            },
        }
    }
}

/// The catalog model of one GPU: by PCI device id, then by product name.
pub(crate) fn match_gpu(g: &GpuFacts) -> Option<(&'static GpuSpec, &'static str)> {
    if let Some(spec) = g.pci_device_id.and_then(catalog::lookup_pci) {
        return Some((spec, "pci-device-id"));
    }
    g.name
        .as_deref()
        .and_then(catalog::lookup_product)
        .map(|s| (s, "product-name"))
}

/// The one model of a node's GPUs. A GPU outside the catalog gets a declared model (with
/// a `GP702` warning); GPUs of different models are an error, as a node class has one.
pub(crate) fn match_node(gpus: &[GpuFacts]) -> Result<(ModelMatch, Vec<Diagnostic>), Diagnostic> {
    let mut found: BTreeMap<String, (ModelMatch, Vec<u32>)> = BTreeMap::new();
    let mut warnings = Vec::new();
    for g in gpus {
        let m = match match_gpu(g) {
            Some((spec, how)) => ModelMatch {
                name: spec.id.to_string(),
                catalog: Some(spec.id),
                matched_by: how,
                ..ModelMatch::default()
            },
            None => declared_model(g)?,
        };
        found
            .entry(m.name.clone())
            .or_insert_with(|| (m, Vec::new()))
            .1
            .push(g.index);
    }
    if found.len() > 1 {
        let list = found
            .iter()
            .map(|(n, (_, idx))| format!("{n} (GPUs {})", crate::units::format_index_set(idx)))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Diagnostic::error(
            GP714,
            format!("this node has GPUs of different models: {list}"),
        )
        .with_help("a node class has one GPU model; describe this node by hand"));
    }
    let Some((_, (m, _))) = found.into_iter().next() else {
        return Err(Diagnostic::error(GP714, "no GPUs were found")
            .with_help("check that the NVIDIA driver sees the GPUs (`nvidia-smi -L`)"));
    };
    if m.catalog.is_none() {
        warnings.push(
            Diagnostic::warning(
                GP702,
                format!(
                    "`{}` is not in the built-in catalog: a `gpu-model \"{}\"` is declared from what was read",
                    m.product_name.as_deref().unwrap_or("?"),
                    m.name
                ),
            )
            .with_help("without a catalog entry it has no MIG, NVLink generation or price; add them to the `gpu-model` as needed"),
        );
    }
    Ok((m, warnings))
}

fn declared_model(g: &GpuFacts) -> Result<ModelMatch, Diagnostic> {
    let product = g.name.clone().unwrap_or_default();
    let name = kebab(product.trim_start_matches("NVIDIA ").trim());
    match (name.is_empty(), g.memory_mib) {
        (false, Some(mib)) if mib > 0 => Ok(ModelMatch {
            name,
            catalog: None,
            matched_by: "declared",
            memory_mib: Some(mib),
            product_name: Some(product),
        }),
        _ => Err(Diagnostic::error(
            GP714,
            format!(
                "GPU {} ({}) is not in the catalog and its {} unknown",
                g.index,
                if product.is_empty() { "no name" } else { &product },
                if name.is_empty() { "name is" } else { "memory is" }
            ),
        )
        .with_help("pass `--model NAME` with a catalog id (`gpuplan` docs/catalog.md) or a model you declare")),
    }
}

/// Lowercase letters and digits joined by single `-`.
pub(crate) fn kebab(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// A host name as a valid gpuplan node name (lowercase DNS labels), or `None`.
pub fn node_name(host: &str) -> Option<String> {
    let labels: Vec<String> = host
        .trim()
        .split('.')
        .map(kebab)
        .filter(|l| !l.is_empty())
        .collect();
    let name = labels.join(".");
    crate::units::validate_node_name(&name).ok().map(|_| name)
}

/// A PCI bus id in one canonical form (`00000000:18:00.0`): NVML and `nvidia-smi` print
/// 8-digit domains, `lspci` 4; case varies.
pub(crate) fn normalize_bus_id(s: &str) -> Option<String> {
    let s = s.trim();
    let (rest, func) = s.rsplit_once('.')?;
    let mut parts = rest.split(':').collect::<Vec<_>>();
    if parts.len() == 2 {
        parts.insert(0, "0");
    }
    let [dom, bus, dev] = parts.as_slice() else {
        return None;
    };
    let dom = u32::from_str_radix(dom, 16).ok()?;
    let bus = u8::from_str_radix(bus, 16).ok()?;
    let dev = u8::from_str_radix(dev, 16).ok()?;
    let func = u8::from_str_radix(func, 16).ok()?;
    Some(format!("{dom:08X}:{bus:02X}:{dev:02X}.{func:X}"))
}

/// Disjoint sets over `0..n`.
pub(crate) struct UnionFind(Vec<usize>);

impl UnionFind {
    pub(crate) fn new(n: usize) -> Self {
        UnionFind((0..n).collect())
    }
    pub(crate) fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.0[r] != r {
            r = self.0[r];
        }
        let mut y = x;
        while self.0[y] != r {
            let next = self.0[y];
            self.0[y] = r;
            y = next;
        }
        r
    }
    pub(crate) fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra.max(rb)] = ra.min(rb);
        }
    }
    /// The sets with at least `min` members among `0..limit`, each sorted, in order of
    /// their smallest member.
    pub(crate) fn groups(&mut self, limit: usize, min: usize) -> Vec<Vec<usize>> {
        let mut by_root: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for i in 0..limit {
            let r = self.find(i);
            by_root.entry(r).or_default().push(i);
        }
        let mut v: Vec<Vec<usize>> = by_root.into_values().filter(|g| g.len() >= min).collect();
        v.sort();
        v
    }
}

/// NVLink domains from NVML's link list: connected components over active links, where a
/// link joins a GPU to the device at its remote bus id (another GPU, or an NVSwitch that
/// other GPUs also reach). Components with fewer than two local GPUs are no domain.
pub(crate) fn nvlink_domains_from_links(gpus: &[GpuFacts]) -> Vec<Vec<u32>> {
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    let n = gpus.len();
    for (i, g) in gpus.iter().enumerate() {
        let key = g
            .bus_id
            .as_deref()
            .and_then(normalize_bus_id)
            .unwrap_or_else(|| format!("gpu#{i}"));
        // Two GPUs reporting one bus id (a damaged capture): the first keeps it.
        ids.entry(key).or_insert(i);
    }
    // Link ends that are not GPUs (NVSwitches) get indexes after the GPUs'.
    let mut next = n;
    let mut edges = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        for l in &g.nvlinks {
            let key = normalize_bus_id(&l.remote_bus_id).unwrap_or_else(|| l.remote_bus_id.clone());
            let j = *ids.entry(key).or_insert_with(|| {
                next += 1;
                next - 1
            });
            edges.push((i, j));
        }
    }
    let mut uf = UnionFind::new(next);
    for (a, b) in edges {
        uf.union(a, b);
    }
    uf.groups(n, 1)
        .into_iter()
        .filter(|g| g.len() >= 2)
        .map(|g| g.into_iter().map(|i| gpus[i].index).collect())
        .collect()
}

/// NVLink domains from GPU pairs known to share NVLink (a topology matrix's `NV#` cells).
pub(crate) fn nvlink_domains_from_pairs(n: usize, pairs: &[(usize, usize)]) -> Vec<Vec<u32>> {
    let mut uf = UnionFind::new(n);
    for &(a, b) in pairs {
        uf.union(a, b);
    }
    uf.groups(n, 2)
        .into_iter()
        .map(|g| g.into_iter().map(|i| i as u32).collect())
        .collect()
}

/// A NUMA node with its GPUs, NICs and the logical CPUs the GPUs are close to.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NumaGroup {
    pub id: u32,
    pub gpus: Vec<u32>,
    pub nics: Vec<u32>,
    /// Logical CPUs (CPU affinity), an index set; not core ids.
    pub cpus: Option<String>,
}

/// GPUs and NICs behind one PCIe switch.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PcieGroup {
    pub name: String,
    pub gpus: Vec<u32>,
    pub nics: Vec<u32>,
}

/// NUMA groups from each GPU's NUMA node and CPU affinity (NICs added by the caller).
pub(crate) fn numa_groups(gpus: &[GpuFacts]) -> Vec<NumaGroup> {
    let mut by_id: BTreeMap<u32, NumaGroup> = BTreeMap::new();
    for g in gpus {
        if let Some(id) = g.numa_node {
            let e = by_id.entry(id).or_insert_with(|| NumaGroup {
                id,
                ..NumaGroup::default()
            });
            e.gpus.push(g.index);
            if e.cpus.is_none() {
                e.cpus.clone_from(&g.cpu_affinity);
            }
        }
    }
    by_id.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::NvlinkFacts;

    fn gpu(i: u32, bus: &str, links: &[&str]) -> GpuFacts {
        GpuFacts {
            index: i,
            bus_id: Some(bus.into()),
            nvlinks: links
                .iter()
                .enumerate()
                .map(|(l, r)| NvlinkFacts {
                    link: l as u32,
                    remote_bus_id: (*r).into(),
                })
                .collect(),
            ..GpuFacts::default()
        }
    }

    #[test]
    fn gpus_on_one_nvswitch_form_one_domain() {
        let g = vec![
            gpu(0, "0000:18:00.0", &["00000000:A0:00.0", "00000000:A1:00.0"]),
            gpu(1, "00000000:2A:00.0", &["00000000:a1:00.0"]),
            gpu(2, "00000000:3A:00.0", &[]),
        ];
        assert_eq!(nvlink_domains_from_links(&g), vec![vec![0, 1]]);
    }

    #[test]
    fn nvlink_bridges_pair_gpus() {
        let g = vec![
            gpu(0, "00000000:01:00.0", &["00000000:02:00.0"]),
            gpu(1, "00000000:02:00.0", &["00000000:01:00.0"]),
            gpu(2, "00000000:03:00.0", &["00000000:04:00.0"]),
            gpu(3, "00000000:04:00.0", &["00000000:03:00.0"]),
        ];
        assert_eq!(nvlink_domains_from_links(&g), vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn bus_ids_and_names_normalize() {
        assert_eq!(
            normalize_bus_id("0000:1a:00.0").as_deref(),
            Some("00000000:1A:00.0")
        );
        assert_eq!(normalize_bus_id("garbage"), None);
        assert_eq!(
            node_name("DGX-01.Example.com").as_deref(),
            Some("dgx-01.example.com")
        );
        assert_eq!(node_name("__"), None);
        assert_eq!(kebab("NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
    }
}
