//! `gpuplan report html`: the plan as one self-contained HTML page for reviewers: inline
//! CSS and SVG, a few lines of plain JavaScript (filtering the leaf list), no network.
//!
//! Sections: the solver line and the change summary; the fabric as tiles (one per leaf
//! switch, under its spine, coloured by the share of its GPUs in use; a drill-down per
//! leaf drawing its nodes, filled by use and outlined by pool mode, with the gangs that
//! span them as bars under the nodes); MIG layouts as slot diagrams (memory slices,
//! instances as blocks, one diagram per distinct layout with the GPUs that have it, and
//! one per GPU whose layout changes: kept, destroyed and created instances); teams as
//! bars (guarantee, ceiling, placed, cost per hour); headroom per tier; classes not fully
//! placed with their reasons; the rollout batches.
//!
//! Readable at 100,000 GPUs: nothing is drawn per GPU for the whole cluster (leaves are
//! tiles, nodes appear only in their leaf's drill-down, layouts are drawn once per
//! distinct layout). Deterministic: no timestamps or solve times, everything sorted by
//! name, so the same plan gives the same bytes.

use crate::catalog;
use crate::model::Cluster;
use crate::placement::{MigAction, Placement, PoolMode, WorkloadPlacement};
use crate::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Text for HTML and SVG: `&`, `<`, `>`, quotes escaped.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => {}
            c => out.push(c),
        }
    }
    out
}

/// A number as the plan prints it: integers without decimals, others with up to two.
fn num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{:.2}", x)
    }
}

/// Occupancy colour: light grey (empty) to deep blue (full).
fn use_color(frac: f64) -> String {
    let f = frac.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        lerp(233.0, 13.0),
        lerp(236.0, 71.0),
        lerp(239.0, 161.0)
    )
}

fn mode_color(m: PoolMode) -> &'static str {
    match m {
        PoolMode::WholeGpu => "#198754",
        PoolMode::Mig => "#fd7e14",
        PoolMode::TimeSlice => "#d63384",
        PoolMode::Mps => "#6f42c1",
    }
}

/// GPUs in use per node: touched by a gang, a MIG instance, a share or packed replicas.
fn used_gpus(p: &Placement) -> BTreeMap<&str, BTreeSet<u32>> {
    let mut used: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for w in &p.workloads {
        for g in &w.gangs {
            for n in &g.nodes {
                used.entry(&n.node)
                    .or_default()
                    .extend(n.gpus.iter().copied());
            }
        }
        for m in &w.mig_instances {
            used.entry(&m.node).or_default().insert(m.gpu);
        }
        for s in &w.shares {
            used.entry(&s.node).or_default().insert(s.gpu);
        }
        for x in &w.packed {
            used.entry(&x.node)
                .or_default()
                .extend(x.gpus.iter().copied());
        }
    }
    used
}

/// The page: everything the plan says, for a reviewer.
pub fn page(c: &Cluster, p: &Placement, plan: Option<&Plan>) -> String {
    let mut s = String::new();
    let title = format!("gpuplan plan: {}", p.cluster);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    let _ = writeln!(s, "<h1>{}</h1>", esc(&title));
    summary(&mut s, p, plan);
    fabric(&mut s, c, p);
    mig(&mut s, p, plan);
    teams(&mut s, p);
    headroom(&mut s, p);
    unplaced(&mut s, p);
    if let Some(plan) = plan {
        rollout(&mut s, plan);
    }
    let _ = write!(s, "<script>\n{JS}</script>\n</body>\n</html>\n");
    s
}

const CSS: &str = "body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#212529;max-width:1200px}\n\
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #dee2e6}\n\
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}\n\
.num{text-align:right}.muted{color:#6c757d}.bad{color:#b02a37}.ok{color:#146c43}\n\
.tiles{display:flex;flex-wrap:wrap;gap:6px;margin:6px 0}\n\
.spine{margin:8px 0;padding:6px;border:1px dashed #ced4da}\n\
details{margin:4px 0}summary{cursor:pointer;font-size:13px}\n\
svg text{font-family:Helvetica,Arial,sans-serif}\n\
.legend span{display:inline-block;margin-right:12px;font-size:12px}\n\
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}\n";

const JS: &str = "(function(){\n\
  var f=document.getElementById('leaf-filter');\n\
  if(!f){return;}\n\
  f.addEventListener('input',function(){\n\
    var q=f.value.toLowerCase();\n\
    var items=document.querySelectorAll('[data-leaf]');\n\
    for(var i=0;i<items.length;i++){\n\
      var hit=items[i].getAttribute('data-leaf').toLowerCase().indexOf(q)>=0;\n\
      items[i].style.display=hit?'':'none';\n\
    }\n\
  });\n\
})();\n";

fn summary(s: &mut String, p: &Placement, plan: Option<&Plan>) {
    let v = &p.solver;
    let bound = match (v.bound, v.gap) {
        (Some(b), Some(g)) => format!(", bound {}, gap {:.2}%", num(b), g * 100.0),
        _ => ", no bound".to_string(),
    };
    let _ = writeln!(
        s,
        "<p id=\"solver\">solver: {} {}, {} GPU-equivalents admitted{}</p>",
        esc(&v.name),
        esc(&format!("{:?}", v.status).to_lowercase()),
        num(v.objective),
        esc(&bound)
    );
    if let Some(note) = &v.note {
        let _ = writeln!(s, "<p class=\"muted\">{}</p>", esc(note));
    }
    let m = &p.summary;
    let cost = m
        .cost_per_hour
        .map(|c| format!(", ${c:.2}/h"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "<p>{} of {} GPUs allocated ({:.1}%){}</p>",
        num(m.gpus_allocated),
        m.gpus_total,
        m.allocation_pct,
        esc(&cost)
    );
    if let Some(plan) = plan {
        let _ = writeln!(
            s,
            "<p id=\"changes\"><strong>{}</strong></p>",
            esc(&crate::plan::view::summary_line(plan))
        );
    }
}

/// A leaf (or the nodes under no leaf) with its nodes.
struct LeafView<'a> {
    name: String,
    /// `spine NAME` (with `, core NAME` above it), or empty.
    spine: String,
    nodes: Vec<&'a crate::model::Node>,
}

fn leaves(c: &Cluster) -> Vec<LeafView<'_>> {
    let mut by_leaf: BTreeMap<String, LeafView> = BTreeMap::new();
    for n in &c.nodes {
        let (name, spine) = match n.leaf() {
            Some(l) => {
                let sw = &c.switches[l];
                let spine = sw
                    .parent
                    .map(|x| {
                        let sp = &c.switches[x];
                        match sp.parent {
                            Some(core) => format!("{} (core {})", sp.name, c.switches[core].name),
                            None => sp.name.clone(),
                        }
                    })
                    .unwrap_or_default();
                (sw.name.clone(), spine)
            }
            None => ("(no leaf)".to_string(), String::new()),
        };
        by_leaf
            .entry(name.clone())
            .or_insert_with(|| LeafView {
                name,
                spine,
                nodes: Vec::new(),
            })
            .nodes
            .push(n);
    }
    let mut v: Vec<LeafView> = by_leaf.into_values().collect();
    for l in &mut v {
        l.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    }
    v
}

fn fabric(s: &mut String, c: &Cluster, p: &Placement) {
    let used = used_gpus(p);
    let views = leaves(c);
    fabric_legend(s);
    nvlink_table(s, c, &used);
    spine_tiles(s, &views, &used);
    leaf_details(s, c, p, &views, &used);
}

type Used<'a> = BTreeMap<&'a str, BTreeSet<u32>>;

/// GPUs in use of a leaf and its usable GPUs.
fn leaf_counts(l: &LeafView, used: &Used) -> (usize, usize) {
    let total: usize = l.nodes.iter().map(|n| n.usable_gpus().count()).sum();
    let busy: usize = l
        .nodes
        .iter()
        .map(|n| used.get(n.name.as_str()).map_or(0, BTreeSet::len))
        .sum();
    (busy, total)
}

fn fabric_legend(s: &mut String) {
    let _ = writeln!(s, "<h2>Fabric</h2>");
    let _ = writeln!(
        s,
        "<p class=\"legend\"><span><i class=\"sw\" style=\"background:{}\"></i>empty</span>\
         <span><i class=\"sw\" style=\"background:{}\"></i>half used</span>\
         <span><i class=\"sw\" style=\"background:{}\"></i>full</span> pool modes (node outline): {}</p>",
        use_color(0.0),
        use_color(0.5),
        use_color(1.0),
        PoolMode::ALL
            .iter()
            .map(|m| format!(
                "<span><i class=\"sw\" style=\"background:{}\"></i>{}</span>",
                mode_color(*m),
                m.as_str()
            ))
            .collect::<String>()
    );
}

/// Multi-node NVLink domains (GB200/GB300 racks) and their use.
fn nvlink_table(s: &mut String, c: &Cluster, used: &Used) {
    let domains: Vec<&crate::model::NvlinkDomain> =
        c.nvlink_domains.iter().filter(|d| d.multi_node).collect();
    if !domains.is_empty() {
        let _ = writeln!(
            s,
            "<table><tr><th>multi-node NVLink domain</th><th class=\"num\">GPUs in use</th></tr>"
        );
        let mut rows: Vec<(String, usize, usize)> = domains
            .iter()
            .map(|d| {
                let busy = d
                    .members
                    .iter()
                    .filter(|(n, g)| {
                        used.get(c.nodes[*n].name.as_str())
                            .is_some_and(|u| u.contains(g))
                    })
                    .count();
                (d.name.clone(), busy, d.members.len())
            })
            .collect();
        rows.sort();
        for (name, busy, total) in rows {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"num\">{busy}/{total}</td></tr>",
                esc(&name)
            );
        }
        let _ = writeln!(s, "</table>");
    }
}

/// Tiles: one per leaf, grouped by spine.
fn spine_tiles(s: &mut String, views: &[LeafView], used: &Used) {
    let mut spines: BTreeMap<&str, Vec<&LeafView>> = BTreeMap::new();
    for l in views {
        spines.entry(l.spine.as_str()).or_default().push(l);
    }
    for (spine, ls) in &spines {
        let label = if spine.is_empty() {
            "under no spine".to_string()
        } else {
            format!("spine {spine}")
        };
        let _ = writeln!(
            s,
            "<div class=\"spine\"><div class=\"muted\">{}</div>",
            esc(&label)
        );
        let width = 150;
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">",
            (width + 6) * ls.len().min(7),
            ls.len().div_ceil(7) * 56
        );
        for (i, l) in ls.iter().enumerate() {
            let (busy, total) = leaf_counts(l, used);
            let frac = if total == 0 {
                0.0
            } else {
                busy as f64 / total as f64
            };
            let (x, y) = ((i % 7) * (width + 6), (i / 7) * 56);
            let text = if frac > 0.55 { "#ffffff" } else { "#212529" };
            let _ = writeln!(
                s,
                "<g><title>{}: {busy} of {total} GPUs in use, {} nodes</title>\
                 <rect x=\"{x}\" y=\"{y}\" width=\"{width}\" height=\"50\" rx=\"4\" fill=\"{}\" stroke=\"#adb5bd\"/>\
                 <text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"{text}\">{}</text>\
                 <text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{text}\">{busy}/{total} GPUs</text></g>",
                esc(&l.name),
                l.nodes.len(),
                use_color(frac),
                x + 6,
                y + 18,
                esc(&l.name),
                x + 6,
                y + 38
            );
        }
        let _ = writeln!(s, "</svg></div>");
    }
}

/// Drill-down per leaf.
fn leaf_details(s: &mut String, c: &Cluster, p: &Placement, views: &[LeafView], used: &Used) {
    let modes: BTreeMap<&str, PoolMode> =
        p.pools.iter().map(|x| (x.node.as_str(), x.mode)).collect();
    let _ = writeln!(
        s,
        "<p><label>Filter leaves: <input id=\"leaf-filter\" type=\"search\" placeholder=\"leaf name\"></label></p>"
    );
    let gangs = gangs_by_leaf(c, p);
    let nvlink_names: Vec<String> = c.nvlink_domains.iter().map(|d| d.name.clone()).collect();
    for l in views {
        let (busy, total) = leaf_counts(l, used);
        let _ = writeln!(
            s,
            "<details data-leaf=\"{}\"><summary>{} ({} nodes, {busy}/{total} GPUs in use)</summary>",
            esc(&l.name),
            esc(&l.name),
            l.nodes.len()
        );
        leaf_svg(
            s,
            &nvlink_names,
            l,
            used,
            &modes,
            gangs.get(l.name.as_str()),
        );
        let _ = writeln!(s, "</details>");
    }
}

/// Gangs per leaf: (class, replica, node positions within the leaf).
fn gangs_by_leaf<'a>(
    c: &'a Cluster,
    p: &'a Placement,
) -> BTreeMap<String, Vec<(String, Vec<&'a str>)>> {
    let leaf_of: BTreeMap<&str, String> = c
        .nodes
        .iter()
        .map(|n| {
            let l = n
                .leaf()
                .map(|l| c.switches[l].name.clone())
                .unwrap_or_else(|| "(no leaf)".to_string());
            (n.name.as_str(), l)
        })
        .collect();
    let mut out: BTreeMap<String, Vec<(String, Vec<&str>)>> = BTreeMap::new();
    for w in &p.workloads {
        for g in &w.gangs {
            if g.nodes.len() < 2 {
                continue;
            }
            let mut per_leaf: BTreeMap<&String, Vec<&str>> = BTreeMap::new();
            for n in &g.nodes {
                if let Some(l) = leaf_of.get(n.node.as_str()) {
                    per_leaf.entry(l).or_default().push(&n.node);
                }
            }
            for (l, nodes) in per_leaf {
                out.entry(l.clone())
                    .or_default()
                    .push((format!("{} #{}", w.name, g.replica), nodes));
            }
        }
    }
    out
}

/// One leaf's nodes (filled by use, outlined by pool mode) and its multi-node gangs as
/// bars under the nodes they span.
fn leaf_svg(
    s: &mut String,
    nvlink_names: &[String],
    l: &LeafView,
    used: &BTreeMap<&str, BTreeSet<u32>>,
    modes: &BTreeMap<&str, PoolMode>,
    gangs: Option<&Vec<(String, Vec<&str>)>>,
) {
    const PER_ROW: usize = 16;
    const W: usize = 60;
    let rows = l.nodes.len().div_ceil(PER_ROW).max(1);
    let gang_rows = gangs.map_or(0, Vec::len);
    let height = rows * 46 + gang_rows * 14 + 8;
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\">",
        PER_ROW.min(l.nodes.len().max(1)) * (W + 4)
    );
    let mut pos: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, n) in l.nodes.iter().enumerate() {
        let (x, y) = ((i % PER_ROW) * (W + 4), (i / PER_ROW) * 46);
        pos.insert(n.name.as_str(), (x, y));
        let total = n.usable_gpus().count();
        let busy = used.get(n.name.as_str()).map_or(0, BTreeSet::len);
        let frac = if total == 0 {
            0.0
        } else {
            busy as f64 / total as f64
        };
        let (stroke, mode) = modes
            .get(n.name.as_str())
            .map_or(("#adb5bd", "no pool"), |m| (mode_color(*m), m.as_str()));
        let nvl = if n.mnnvl.is_empty() {
            String::new()
        } else {
            format!(
                ", NVLink domain {}",
                n.mnnvl
                    .iter()
                    .map(|d| nvlink_names.get(*d).map_or("?", String::as_str))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let _ = writeln!(
            s,
            "<g><title>{}: {busy}/{total} GPUs in use, {mode}{nvl}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"40\" rx=\"3\" fill=\"{}\" stroke=\"{stroke}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"9\" fill=\"{}\">{}</text>\
             <text x=\"{}\" y=\"{}\" font-size=\"9\" fill=\"{}\">{busy}/{total}</text></g>",
            esc(&n.name),
            use_color(frac),
            x + 3,
            y + 14,
            if frac > 0.55 { "#ffffff" } else { "#212529" },
            esc(&n.name),
            x + 3,
            y + 30,
            if frac > 0.55 { "#ffffff" } else { "#212529" },
        );
    }
    for (k, (name, nodes)) in gangs.into_iter().flatten().enumerate() {
        let xs: Vec<usize> = nodes
            .iter()
            .filter_map(|n| pos.get(n))
            .map(|p| p.0)
            .collect();
        let (Some(&lo), Some(&hi)) = (xs.iter().min(), xs.iter().max()) else {
            continue;
        };
        let y = rows * 46 + k * 14;
        let _ = writeln!(
            s,
            "<g><title>gang {} on {} nodes</title><rect x=\"{lo}\" y=\"{y}\" width=\"{}\" height=\"10\" rx=\"2\" fill=\"#0d6efd\" opacity=\"0.7\"/></g>",
            esc(name),
            nodes.len(),
            hi + W - lo
        );
    }
    let _ = writeln!(s, "</svg>");
}

/// How the instances of a layout are drawn: all as planned, or against the instances
/// that stay (`kept`, a multiset of profile names): those are kept, the others `other`
/// (created in the new layout, destroyed in the old one).
enum Marks<'a> {
    Planned,
    Against {
        kept: &'a [String],
        other: &'static str,
    },
}

/// The slot diagram of one layout: memory slices as columns, instances as blocks at
/// their start slots (as `nvidia-smi mig -cgi` would place them, largest first).
fn layout_svg(s: &mut String, spec: &'static catalog::MigSpec, profiles: &[String], marks: Marks) {
    const SLOT: usize = 40;
    let slots = spec.memory_slices as usize;
    let names: Vec<&str> = profiles.iter().map(String::as_str).collect();
    let width = slots * SLOT + 2;
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"44\" role=\"img\">"
    );
    for k in 0..slots {
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"2\" width=\"{SLOT}\" height=\"30\" fill=\"#f8f9fa\" stroke=\"#dee2e6\"/>\
             <text x=\"{}\" y=\"42\" font-size=\"8\" fill=\"#6c757d\">{k}</text>",
            1 + k * SLOT,
            4 + k * SLOT
        );
    }
    let mut left: Vec<&str> = match &marks {
        Marks::Against { kept, .. } => kept.iter().map(String::as_str).collect(),
        Marks::Planned => Vec::new(),
    };
    let mut mark = |name: &str| -> &'static str {
        match &marks {
            Marks::Planned => "planned",
            Marks::Against { other, .. } => match left.iter().position(|k| *k == name) {
                Some(i) => {
                    left.remove(i);
                    "kept"
                }
                None => other,
            },
        }
    };
    match catalog::fits(spec, &names) {
        Ok(placed) => {
            for (q, start) in &placed.instances {
                let x = 1 + *start as usize * SLOT;
                let w = q.memory_slices as usize * SLOT;
                let how = mark(q.name);
                let (fill, dash) = match how {
                    "created" => ("#d1e7dd", ""),
                    "destroyed" => ("#f8d7da", " stroke-dasharray=\"4 2\""),
                    _ => ("#cfe2ff", ""),
                };
                let _ = writeln!(
                    s,
                    "<g><title>{} at slot {start} ({})</title><rect x=\"{x}\" y=\"4\" width=\"{}\" height=\"26\" rx=\"3\" fill=\"{fill}\" stroke=\"#495057\"{dash}/>\
                     <text x=\"{}\" y=\"21\" font-size=\"9\">{}</text></g>",
                    esc(q.name),
                    how,
                    w.saturating_sub(2),
                    x + 3,
                    esc(q.name)
                );
            }
        }
        Err(e) => {
            let _ = writeln!(
                s,
                "<text x=\"4\" y=\"20\" font-size=\"10\" fill=\"#b02a37\">{}</text>",
                esc(&e.to_string())
            );
        }
    }
    let _ = writeln!(s, "</svg>");
}

fn mig(s: &mut String, p: &Placement, plan: Option<&Plan>) {
    if p.mig_layouts.is_empty() && p.mig_changes.is_empty() {
        return;
    }
    let _ = writeln!(s, "<h2>MIG layouts</h2>");
    // One diagram per distinct (model, layout), with the GPUs that have it.
    let mut distinct: BTreeMap<(&str, Vec<String>), Vec<String>> = BTreeMap::new();
    for l in &p.mig_layouts {
        let mut profiles = l.profiles.clone();
        profiles.sort();
        distinct
            .entry((l.model.as_str(), profiles))
            .or_default()
            .push(format!("{}/{}", l.node, l.gpu));
    }
    let _ = writeln!(
        s,
        "<table><tr><th>model</th><th>layout</th><th>GPUs</th><th>slots</th></tr>"
    );
    for ((model, profiles), gpus) in &distinct {
        let Some(spec) = catalog_spec(model) else {
            continue;
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td title=\"{}\">{}</td><td>",
            esc(model),
            esc(&profiles.join(" + ")),
            esc(&shorten(gpus, 40)),
            gpus.len()
        );
        layout_svg(s, spec, profiles, Marks::Planned);
        let _ = writeln!(s, "</td></tr>");
    }
    let _ = writeln!(s, "</table>");
    let changed = layout_changes(p, plan);
    if !changed.is_empty() {
        changes_table(s, changed);
    }
}

/// Changes against the previous state (a plan's) or the current layouts, per GPU.
fn layout_changes<'a>(p: &'a Placement, plan: Option<&'a Plan>) -> Vec<LayoutChange<'a>> {
    match plan {
        Some(x) => x
            .disruption
            .mig
            .iter()
            .filter(|m| m.before != m.after)
            .map(|m| LayoutChange {
                gpu: format!("{}/{}", m.node, m.gpu),
                model: &m.model,
                before: &m.before,
                after: &m.after,
                kept: &m.kept,
            })
            .collect(),
        None => p
            .mig_changes
            .iter()
            .filter(|m| m.action != MigAction::Keep)
            .map(|m| LayoutChange {
                gpu: format!("{}/{}", m.node, m.gpu),
                model: &m.model,
                before: &m.current,
                after: &m.planned,
                kept: &m.surviving,
            })
            .collect(),
    }
}

/// The changed GPUs, each layout before and after.
fn changes_table(s: &mut String, changed: Vec<LayoutChange>) {
    let _ = writeln!(
        s,
        "<h3>Changes ({} GPUs): blue kept, green created, red dashed destroyed</h3>",
        changed.len()
    );
    let _ = writeln!(
        s,
        "<table><tr><th>GPU</th><th>before</th><th>after</th></tr>"
    );
    for m in changed {
        let Some(spec) = catalog_spec(m.model) else {
            continue;
        };
        let _ = write!(s, "<tr><td>{}</td><td>", esc(&m.gpu));
        layout_svg(
            s,
            spec,
            m.before,
            Marks::Against {
                kept: m.kept,
                other: "destroyed",
            },
        );
        let _ = write!(s, "</td><td>");
        layout_svg(
            s,
            spec,
            m.after,
            Marks::Against {
                kept: m.kept,
                other: "created",
            },
        );
        let _ = writeln!(s, "</td></tr>");
    }
    let _ = writeln!(s, "</table>");
}

/// One GPU whose MIG layout changes, from either kind of change record.
struct LayoutChange<'a> {
    gpu: String,
    model: &'a str,
    before: &'a [String],
    after: &'a [String],
    kept: &'a [String],
}

fn catalog_spec(model: &str) -> Option<&'static catalog::MigSpec> {
    catalog::lookup(model).and_then(|g| g.mig)
}

fn shorten(items: &[String], max: usize) -> String {
    if items.len() <= max {
        items.join(", ")
    } else {
        format!(
            "{}, ... ({} more)",
            items[..max].join(", "),
            items.len() - max
        )
    }
}

fn teams(s: &mut String, p: &Placement) {
    if p.teams.is_empty() {
        return;
    }
    let _ = writeln!(s, "<h2>Teams</h2>");
    let max = p
        .teams
        .iter()
        .map(|t| {
            (t.ceiling as f64)
                .max(t.gpus_placed)
                .max(t.guarantee as f64)
        })
        .fold(1.0, f64::max);
    const W: f64 = 420.0;
    let _ = writeln!(
        s,
        "<table><tr><th>team</th><th class=\"num\">guarantee</th><th class=\"num\">ceiling</th><th class=\"num\">placed</th><th class=\"num\">cost/h</th><th>use</th></tr>"
    );
    for t in &p.teams {
        let x = |v: f64| (v / max * W).round();
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"16\" role=\"img\"><title>{}: placed {} of ceiling {}, guarantee {}</title>\
             <rect x=\"0\" y=\"2\" width=\"{}\" height=\"12\" fill=\"none\" stroke=\"#adb5bd\"/>\
             <rect x=\"0\" y=\"2\" width=\"{}\" height=\"12\" fill=\"#0d6efd\" opacity=\"0.75\"/>\
             <line x1=\"{}\" y1=\"0\" x2=\"{}\" y2=\"16\" stroke=\"#212529\" stroke-width=\"2\"/></svg></td></tr>",
            esc(&t.name),
            t.guarantee,
            t.ceiling,
            num(t.gpus_placed),
            t.cost_per_hour
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "-".to_string()),
            W as usize + 2,
            esc(&t.name),
            num(t.gpus_placed),
            t.ceiling,
            t.guarantee,
            x(t.ceiling as f64),
            x(t.gpus_placed),
            x(t.guarantee as f64),
            x(t.guarantee as f64)
        );
    }
    let _ = writeln!(
        s,
        "</table><p class=\"muted\">bar: placed GPUs; outline: ceiling; black line: guarantee</p>"
    );
}

fn headroom(s: &mut String, p: &Placement) {
    let _ = writeln!(
        s,
        "<h2>Headroom</h2><table><tr><th>tier</th><th class=\"num\">largest gang that still fits</th><th>where</th></tr>"
    );
    for h in &p.headroom {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&h.tier),
            h.largest_gang,
            esc(h.domain.as_deref().unwrap_or("-"))
        );
    }
    let _ = writeln!(s, "</table>");
}

fn unplaced(s: &mut String, p: &Placement) {
    let short: Vec<&WorkloadPlacement> = p
        .workloads
        .iter()
        .filter(|w| !w.unplaced.is_empty() || w.replicas_placed < w.replicas_requested)
        .collect();
    let _ = writeln!(s, "<h2>Workloads</h2>");
    let placed = p.workloads.len() - short.len();
    let _ = writeln!(
        s,
        "<p>{placed} of {} classes fully placed.</p>",
        p.workloads.len()
    );
    if short.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "<table><tr><th>class</th><th>kind</th><th>team</th><th class=\"num\">placed</th><th>why not all</th></tr>"
    );
    for w in short {
        let why: Vec<String> = w
            .unplaced
            .iter()
            .map(|u| format!("{} replicas: {}", u.replicas, u.message))
            .collect();
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}/{}</td><td class=\"bad\">{}</td></tr>",
            esc(&w.name),
            esc(&w.kind),
            esc(&w.team),
            w.replicas_placed,
            w.replicas_requested,
            esc(&why.join("; "))
        );
    }
    let _ = writeln!(s, "</table>");
}

fn rollout(s: &mut String, plan: &Plan) {
    let d = &plan.disruption;
    let _ = writeln!(s, "<h2>Disruption</h2>");
    if d.is_empty() {
        let none = if plan.prior_state.is_some() {
            "None: no work of the applied state moves, is evicted or loses admission, and no MIG instance is destroyed."
        } else {
            "None known: no applied state to compare with (first apply), and no declared current MIG layout loses an instance."
        };
        let _ = writeln!(s, "<p class=\"ok\">{none}</p>");
        return;
    }
    let _ = writeln!(
        s,
        "<p>{} MIG reconfigurations ({} MIG instances destroyed, {} with unknown users), {} gangs moved, {} replicas lose admission, {} nodes disrupted.</p>",
        d.mig.iter().filter(|m| m.before != m.after).count(),
        d.mig_instances_destroyed,
        d.instances_of_unknown_users(),
        d.gangs_moved.len(),
        d.admission_lost.len(),
        d.nodes.len()
    );
    if !d.rollout.is_empty() {
        let _ = writeln!(s, "<table><tr><th>batch</th><th>nodes</th></tr>");
        for b in &d.rollout {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td></tr>",
                b.batch,
                esc(&crate::units::compress_names(&b.nodes).join(","))
            );
        }
        let _ = writeln!(s, "</table>");
    }
}
