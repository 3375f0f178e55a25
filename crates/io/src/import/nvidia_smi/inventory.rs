//! One machine's [`Inventory`] (NVML `discover`, or the `nvidia-smi` importers) as a
//! [`Document`]: a `gpu-model` when the catalog lacks the model or the driver renames MIG
//! profiles, one `node-class`, one `nodes` line, and the observed MIG state as a `mig`
//! block of `layout ... current=#true` lines (what the GPUs have now, which the planner
//! keeps where it serves the plan: observed state is not a requirement; placements and
//! instance ids are in the comments and in the JSON output).

use crate::discover::{GpuFacts, Inventory};
use crate::import::doc::{
    Document, GpuDomain, GpuModel, Gpus, Item, Layout, Nics, NodeClass, Nodes, Numa, PcieSwitch,
};
use crate::units::format_index_set;
use std::collections::BTreeMap;

/// An index set as the text writes it, `None` when empty.
fn set(v: &[u32]) -> Option<String> {
    (!v.is_empty()).then(|| format_index_set(v))
}

/// The whole document.
pub(crate) fn document(inv: &Inventory, header: &str) -> Document {
    let mut d = Document::default();
    d.comments(header);
    for n in &inv.notes {
        d.comment(format!("note: {n}"));
    }
    d.blank();
    model(inv, &mut d);
    d.push(Item::NodeClass(class(inv)));
    d.blank();
    d.push(Item::Nodes(Nodes {
        pattern: inv.node.clone(),
        class: inv.class.clone(),
        ..Nodes::default()
    }));
    mig(inv, &mut d);
    d
}

/// The KDL text ([`crate::import::doc::kdl::write`]).
pub fn render(inv: &Inventory, header: &str) -> String {
    crate::import::doc::kdl::write(&document(inv, header))
}

fn model(inv: &Inventory, d: &mut Document) {
    let m = &inv.model;
    if m.catalog.is_none() {
        if let Some(mib) = m.memory_mib {
            d.push(Item::GpuModel(GpuModel {
                name: m.name.clone(),
                memory: Some(format!("{mib}MiB")),
                // Without NVLink the generation is known (0); with it, it is not.
                nvlink_gen: inv.nvlink_domains.is_empty().then_some(0),
                product_name: m.product_name.clone(),
                ..GpuModel::default()
            }));
            d.blank();
        }
        return;
    }
    if !inv.mig_names.is_empty() {
        d.push(Item::GpuModel(GpuModel {
            notes: vec!["The driver advertises these MIG profiles under other names:".into()],
            name: m.name.clone(),
            mig_names: inv.mig_names.clone(),
            ..GpuModel::default()
        }));
        d.blank();
    }
}

fn class(inv: &Inventory) -> NodeClass {
    // PCI bus ids (nvidia-smi -q -x, NVML) let NCCL's topology file match the GPUs.
    let bus_ids: Option<Vec<String>> = inv
        .gpus
        .iter()
        .map(|g| g.bus_id.as_deref().and_then(crate::units::normalize_bus_id))
        .collect();
    NodeClass {
        name: inv.class.clone(),
        gpus: vec![Gpus {
            count: inv.gpus.len() as u64,
            model: inv.model.name.clone(),
            bus_ids: bus_ids.filter(|b| !b.is_empty()).map(|b| b.join(",")),
            ..Gpus::default()
        }],
        nvlink_domains: inv
            .nvlink_domains
            .iter()
            .map(|d| GpuDomain {
                gpus: format_index_set(d),
                comment: inv
                    .nvlink_links
                    .map(|n| format!("NV{n} between every pair")),
            })
            .collect(),
        numa: inv
            .numa
            .iter()
            .map(|n| Numa {
                id: n.id,
                gpus: set(&n.gpus),
                nics: set(&n.nics),
                comment: n
                    .cpus
                    .as_ref()
                    .map(|c| format!("CPU affinity {c} (logical CPUs, not core ids)")),
                ..Numa::default()
            })
            .collect(),
        pcie_switches: inv
            .pcie_switches
            .iter()
            .map(|p| PcieSwitch {
                name: p.name.clone(),
                gpus: set(&p.gpus),
                nics: set(&p.nics),
            })
            .collect(),
        nics: nics(inv),
        ..NodeClass::default()
    }
}

fn nics(inv: &Inventory) -> Option<Nics> {
    if inv.nics.is_empty() {
        return None;
    }
    let names = inv
        .nics
        .iter()
        .map(|n| match &n.device {
            Some(d) => format!("{}={d}", n.name),
            None => n.name.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    // The legend's RDMA device names, in NIC order, feed NCCL_IB_HCA (render fabric/).
    let devices: Option<Vec<&str>> = inv.nics.iter().map(|n| n.device.as_deref()).collect();
    Some(Nics {
        count: inv.nics.len(),
        names: devices.filter(|d| !d.is_empty()).map(|d| d.join(",")),
        comment: Some(format!(
            "{names}; NIC i is rail i: drop storage/management NICs"
        )),
    })
}

/// Profile names of one GPU's instances, largest first, as `mig layout` arguments.
fn layout_of(g: &GpuFacts) -> Option<Vec<String>> {
    let mig = g.mig.as_ref()?;
    if !mig.current || mig.gpu_instances.is_empty() {
        return None;
    }
    let mut names = Vec::new();
    for gi in &mig.gpu_instances {
        names.push((gi.size.unwrap_or(0), gi.profile.clone()?));
    }
    names.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut args: Vec<(String, usize)> = Vec::new();
    for (_, n) in names {
        match args.last_mut() {
            Some((last, k)) if *last == n => *k += 1,
            _ => args.push((n, 1)),
        }
    }
    Some(
        args.into_iter()
            .map(|(n, k)| if k == 1 { n } else { format!("{n}*{k}") })
            .collect(),
    )
}

fn placements(g: &GpuFacts) -> String {
    let Some(mig) = &g.mig else {
        return String::new();
    };
    let mut v: Vec<_> = mig.gpu_instances.iter().collect();
    v.sort_by_key(|gi| (gi.start, gi.id));
    v.iter()
        .map(|gi| {
            let name = gi.profile.as_deref().unwrap_or("?");
            match gi.start {
                Some(st) => format!("{name}@{st} (GI {})", gi.id),
                None => format!("{name} (GI {})", gi.id),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What one GPU's MIG state says, as comment lines.
fn mig_comments(g: &GpuFacts, layout: Option<&Vec<String>>, out: &mut Vec<String>) {
    let mig = g.mig.as_ref().expect("filtered");
    if mig.current != mig.pending {
        out.push(format!(
            "GPU {}: MIG mode {} now, {} after the next reset",
            g.index,
            on_off(mig.current),
            on_off(mig.pending)
        ));
    }
    match layout {
        Some(_) => out.push(format!("GPU {}: {}", g.index, placements(g))),
        None if mig.current && mig.gpu_instances.is_empty() => {
            out.push(format!("GPU {}: MIG enabled, no GPU instances", g.index));
        }
        None if mig.current => out.push(format!(
            "GPU {}: {} GPU instance(s) of unknown profile ({})",
            g.index,
            mig.gpu_instances.len(),
            mig.gpu_instances
                .iter()
                .map(|gi| match gi.memory_mib {
                    Some(m) => format!("GI {} {m} MiB", gi.id),
                    None => format!("GI {}", gi.id),
                })
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => {}
    }
}

fn mig(inv: &Inventory, d: &mut Document) {
    let mig_gpus: Vec<&GpuFacts> = inv
        .gpus
        .iter()
        .filter(|g| g.mig.as_ref().is_some_and(|m| m.current || m.pending))
        .collect();
    if mig_gpus.is_empty() {
        return;
    }
    let mut by_layout: BTreeMap<Vec<String>, Vec<u32>> = BTreeMap::new();
    let mut comments = Vec::new();
    for g in &mig_gpus {
        let layout = layout_of(g);
        mig_comments(g, layout.as_ref(), &mut comments);
        if let Some(l) = layout {
            by_layout.entry(l).or_default().push(g.index);
        }
    }
    d.blank();
    d.comment("Observed MIG state (what the drift check compares with):");
    for c in comments {
        d.comment(format!("  {c}"));
    }
    if by_layout.is_empty() {
        return;
    }
    let layouts = by_layout
        .into_iter()
        .map(|(profiles, gpus)| Layout {
            profiles,
            nodes: inv.node.clone(),
            gpus: Some(format_index_set(&gpus)),
            comment: None,
        })
        .collect();
    d.push(Item::Mig(layouts));
}

fn on_off(b: bool) -> &'static str {
    if b { "enabled" } else { "disabled" }
}
