//! `gpuplan graph`: the topology as Graphviz DOT, from the petgraph model
//! ([`crate::model::topology`]), like `terraform graph`.
//!
//! Vertices: the cluster, every switch (core, spine, leaf: boxes), every node (its GPU
//! count and model), multi-node NVLink domains (hexagons, dashed edges to their member
//! nodes) and, with `gpus`, node-local NVLink domains and GPUs. With a placement, nodes
//! are filled by pool mode and every workload class is a note joined to the nodes it
//! landed on, the edge labelled with its GPUs there. Output is deterministic: vertices
//! and edges are written sorted by their identifiers, whatever the input order.
//!
//! No layout is computed here (no Rust-side Graphviz layout is good enough for a
//! topology of thousands of nodes): `gpuplan graph PATH | dot -Tsvg > topology.svg`.

use crate::model::Cluster;
use crate::model::topology::{Edge, Vertex};
use crate::placement::{Placement, PoolMode};
use crate::spec::SwitchTier;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What to draw besides the topology.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Node-local NVLink domains and GPUs as vertices (large: one per GPU).
    pub gpus: bool,
}

/// A DOT identifier or label: always quoted, escaped.
fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Fill colours of pool modes (placement view).
fn mode_color(m: PoolMode) -> &'static str {
    match m {
        PoolMode::WholeGpu => "#d1e7dd",
        PoolMode::Mig => "#fff3cd",
        PoolMode::TimeSlice => "#f8d7da",
        PoolMode::Mps => "#e2d9f3",
    }
}

/// The identifier of a vertex: `cluster`, `switch:NAME`, `node:NAME`, `nvlink:NAME`,
/// `gpu:NODE/INDEX`.
fn id(c: &Cluster, v: &Vertex) -> String {
    match v {
        Vertex::Cluster => "cluster".to_string(),
        Vertex::Switch(i) => format!("switch:{}", c.switches[*i].name),
        Vertex::Node(n) => format!("node:{}", c.nodes[*n].name),
        Vertex::Nvlink(d) => format!("nvlink:{}", c.nvlink_domains[*d].name),
        Vertex::Gpu(n, g) => format!("gpu:{}/{g}", c.nodes[*n].name),
    }
}

/// The topology (and the placement) as a DOT digraph.
pub fn dot(c: &Cluster, placement: Option<&Placement>, o: Options) -> String {
    let g = &c.topology.graph;
    let modes: BTreeMap<&str, PoolMode> = placement
        .map(|p| p.pools.iter().map(|x| (x.node.as_str(), x.mode)).collect())
        .unwrap_or_default();
    let mut vertices: BTreeMap<String, String> = BTreeMap::new();
    for v in g.node_indices() {
        let w = &g[v];
        let attrs = match w {
            Vertex::Gpu(..) if !o.gpus => continue,
            Vertex::Nvlink(d) if !o.gpus && !c.nvlink_domains[*d].multi_node => continue,
            _ => vertex_attrs(c, w, &modes),
        };
        vertices.insert(id(c, w), attrs);
    }
    let mut edges: BTreeSet<(String, String, &'static str)> = BTreeSet::new();
    for e in g.edge_indices() {
        let Some((a, b)) = g.edge_endpoints(e) else {
            continue;
        };
        let (ia, ib) = (id(c, &g[a]), id(c, &g[b]));
        if !vertices.contains_key(&ia) || !vertices.contains_key(&ib) {
            // A GPU under a hidden local domain hangs from its node instead.
            continue;
        }
        let style = match g[e] {
            Edge::Contains => "",
            Edge::NvlinkMember => " [style=dashed, color=\"#198754\"]",
        };
        edges.insert((ia, ib, style));
    }
    let mut s = String::new();
    let _ = writeln!(s, "// gpuplan graph: cluster `{}`", c.name);
    let _ = writeln!(s, "// render with: dot -Tsvg graph.dot > graph.svg");
    let _ = writeln!(s, "digraph {} {{", q(&c.name));
    s.push_str("  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
    s.push_str("  edge [arrowhead=none];\n");
    for (k, attrs) in &vertices {
        let _ = writeln!(s, "  {} [{attrs}];", q(k));
    }
    for (a, b, style) in &edges {
        let _ = writeln!(s, "  {} -> {}{style};", q(a), q(b));
    }
    if let Some(p) = placement {
        placement_layer(&mut s, p);
    }
    s.push_str("}\n");
    s
}

fn vertex_attrs(c: &Cluster, v: &Vertex, modes: &BTreeMap<&str, PoolMode>) -> String {
    match v {
        Vertex::Cluster => format!(
            "label={}, shape=doubleoctagon, style=bold",
            q(&format!("cluster {}", c.name))
        ),
        Vertex::Switch(i) => {
            let sw = &c.switches[*i];
            let (tier, color) = match sw.tier {
                SwitchTier::Core => ("core", "#adb5bd"),
                SwitchTier::Spine => ("spine", "#ced4da"),
                SwitchTier::Leaf => ("leaf", "#e9ecef"),
            };
            format!(
                "label={}, shape=box, style=filled, fillcolor=\"{color}\"",
                q(&format!("{tier} {}", sw.name))
            )
        }
        Vertex::Node(n) => {
            let node = &c.nodes[*n];
            let usable = node.usable_gpus().count();
            let model = node
                .gpus
                .first()
                .and_then(|g| c.gpu_model_name(*n, g.index))
                .unwrap_or_default();
            let mut label = format!("{}\n{usable} x {model}", node.name);
            if usable < node.gpus.len() {
                let _ = write!(label, " ({} down)", node.gpus.len() - usable);
            }
            match modes.get(node.name.as_str()) {
                Some(m) => {
                    let _ = write!(label, "\n{}", m.as_str());
                    format!(
                        "label={}, shape=ellipse, style=filled, fillcolor=\"{}\"",
                        q(&label),
                        mode_color(*m)
                    )
                }
                None => format!("label={}, shape=ellipse", q(&label)),
            }
        }
        Vertex::Nvlink(d) => {
            let dom = &c.nvlink_domains[*d];
            format!(
                "label={}, shape=hexagon, style=filled, fillcolor=\"#d1e7dd\"",
                q(&format!("NVLink {}\n{} GPUs", dom.name, dom.members.len()))
            )
        }
        Vertex::Gpu(_, g) => format!("label={}, shape=circle, fontsize=8", q(&g.to_string())),
    }
}

/// Workload classes as notes, joined to the nodes they landed on (GPUs per node).
fn placement_layer(s: &mut String, p: &Placement) {
    let mut classes: Vec<&crate::placement::WorkloadPlacement> = p.workloads.iter().collect();
    classes.sort_by(|a, b| a.name.cmp(&b.name));
    for w in classes {
        let mut per_node: BTreeMap<&str, f64> = BTreeMap::new();
        for gang in &w.gangs {
            for n in &gang.nodes {
                *per_node.entry(n.node.as_str()).or_default() += n.gpus.len() as f64;
            }
        }
        for m in &w.mig_instances {
            *per_node.entry(m.node.as_str()).or_default() += 0.0;
        }
        for x in &w.shares {
            *per_node.entry(x.node.as_str()).or_default() += 0.0;
        }
        for x in &w.packed {
            *per_node.entry(x.node.as_str()).or_default() += x.gpus.len() as f64;
        }
        let label = format!(
            "{} ({})\n{}/{} replicas, {} GPUs",
            w.name,
            w.kind,
            w.replicas_placed,
            w.replicas_requested,
            (w.gpus_placed * 1e4).round() / 1e4
        );
        let style = if w.replicas_placed < w.replicas_requested {
            "fillcolor=\"#f8d7da\""
        } else {
            "fillcolor=\"#ffffff\""
        };
        let _ = writeln!(
            s,
            "  {} [label={}, shape=note, style=filled, {style}];",
            q(&format!("class:{}", w.name)),
            q(&label)
        );
        for (node, gpus) in per_node {
            let label = if gpus > 0.0 {
                format!(" [label={}, color=\"#0d6efd\"]", q(&format!("{gpus}")))
            } else {
                " [color=\"#0d6efd\", style=dotted]".to_string()
            };
            let _ = writeln!(
                s,
                "  {} -> {}{label};",
                q(&format!("class:{}", w.name)),
                q(&format!("node:{node}"))
            );
        }
    }
}
