//! Renders one machine's [`Inventory`] (NVML `discover`, or the `nvidia-smi` importers)
//! as gpuplan KDL: a `gpu-model` when the catalog lacks the
//! model or the driver renames MIG profiles, one `node-class`, one `nodes` line, and the
//! observed MIG state as a `mig` block of `layout ... current=#true` lines (what the GPUs
//! have now, which the planner keeps where it serves the plan: observed state is not a
//! requirement; placements and instance ids are in the comments and in the JSON output).
//! The text is in `gpuplan fmt`'s layout ([`crate::fmt::generated`]).

use crate::discover::{GpuFacts, Inventory};
use crate::units::format_index_set;
use std::collections::BTreeMap;
use std::fmt::Write;

use crate::fmt::{comment, quote};

fn set(v: &[u32]) -> String {
    quote(&format_index_set(v))
}

/// The whole KDL document.
pub fn render(inv: &Inventory, header: &str) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "// {}", comment(line));
    }
    for n in &inv.notes {
        let _ = writeln!(s, "// note: {}", comment(n));
    }
    s.push('\n');
    render_model(inv, &mut s);
    render_class(inv, &mut s);
    let _ = writeln!(s, "nodes {} class={}", quote(&inv.node), quote(&inv.class));
    render_mig(inv, &mut s);
    // Trailing comments aligned as `gpuplan fmt` aligns them (issue 30).
    crate::fmt::generated(&s).unwrap_or(s)
}

fn render_model(inv: &Inventory, s: &mut String) {
    let m = &inv.model;
    if m.catalog.is_none() {
        if let Some(mib) = m.memory_mib {
            let _ = write!(
                s,
                "gpu-model {} memory={}",
                quote(&m.name),
                quote(&format!("{mib}MiB"))
            );
            // Without NVLink the generation is known (0); with it, it is not.
            if inv.nvlink_domains.is_empty() {
                s.push_str(" nvlink-gen=0");
            }
            if let Some(p) = &m.product_name {
                let _ = write!(s, " product-name={}", quote(p));
            }
            s.push_str("\n\n");
        }
        return;
    }
    if !inv.mig_names.is_empty() {
        let _ = writeln!(
            s,
            "// The driver advertises these MIG profiles under other names:"
        );
        let _ = writeln!(s, "gpu-model {} {{", quote(&m.name));
        for (cat, drv) in &inv.mig_names {
            let _ = writeln!(s, "    mig-name {} driver={}", quote(cat), quote(drv));
        }
        s.push_str("}\n\n");
    }
}

fn render_class(inv: &Inventory, s: &mut String) {
    let _ = writeln!(s, "node-class {} {{", quote(&inv.class));
    // PCI bus ids (nvidia-smi -q -x, NVML) let NCCL's topology file match the GPUs.
    let bus_ids: Option<Vec<String>> = inv
        .gpus
        .iter()
        .map(|g| g.bus_id.as_deref().and_then(crate::units::normalize_bus_id))
        .collect();
    let bus = bus_ids
        .filter(|b| !b.is_empty())
        .map(|b| format!(" bus-ids={}", quote(&b.join(","))))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "    gpus {} model={}{bus}",
        inv.gpus.len(),
        quote(&inv.model.name)
    );
    for d in &inv.nvlink_domains {
        let links = inv
            .nvlink_links
            .map(|n| format!("   // NV{n} between every pair"))
            .unwrap_or_default();
        let _ = writeln!(s, "    nvlink-domain gpus={}{links}", set(d));
    }
    for n in &inv.numa {
        let _ = write!(s, "    numa {}", n.id);
        if !n.gpus.is_empty() {
            let _ = write!(s, " gpus={}", set(&n.gpus));
        }
        if !n.nics.is_empty() {
            let _ = write!(s, " nics={}", set(&n.nics));
        }
        if let Some(c) = &n.cpus {
            let _ = write!(s, "   // CPU affinity {c} (logical CPUs, not core ids)");
        }
        s.push('\n');
    }
    for p in &inv.pcie_switches {
        let _ = write!(s, "    pcie-switch {}", quote(&p.name));
        if !p.gpus.is_empty() {
            let _ = write!(s, " gpus={}", set(&p.gpus));
        }
        if !p.nics.is_empty() {
            let _ = write!(s, " nics={}", set(&p.nics));
        }
        s.push('\n');
    }
    if !inv.nics.is_empty() {
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
        let names_prop = devices
            .filter(|d| !d.is_empty())
            .map(|d| format!(" names=\"{}\"", d.join(",")))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "    nics {}{names_prop}   // {names}; NIC i is rail i: drop storage/management NICs",
            inv.nics.len()
        );
    }
    s.push_str("}\n\n");
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

fn render_mig(inv: &Inventory, s: &mut String) {
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
        let mig = g.mig.as_ref().expect("filtered");
        if mig.current != mig.pending {
            comments.push(format!(
                "GPU {}: MIG mode {} now, {} after the next reset",
                g.index,
                on_off(mig.current),
                on_off(mig.pending)
            ));
        }
        match layout_of(g) {
            Some(l) => {
                by_layout.entry(l).or_default().push(g.index);
                comments.push(format!("GPU {}: {}", g.index, placements(g)));
            }
            None if mig.current && mig.gpu_instances.is_empty() => {
                comments.push(format!("GPU {}: MIG enabled, no GPU instances", g.index));
            }
            None if mig.current => comments.push(format!(
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
    let _ = writeln!(
        s,
        "\n// Observed MIG state (what the drift check compares with):"
    );
    for c in &comments {
        let _ = writeln!(s, "//   {c}");
    }
    if by_layout.is_empty() {
        return;
    }
    s.push_str("mig {\n");
    for (layout, gpus) in &by_layout {
        let args = layout
            .iter()
            .map(|a| quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(
            s,
            "    layout {args} nodes={} gpus={} current=#true",
            quote(&inv.node),
            set(gpus)
        );
    }
    s.push_str("}\n");
}

fn on_off(b: bool) -> &'static str {
    if b { "enabled" } else { "disabled" }
}
