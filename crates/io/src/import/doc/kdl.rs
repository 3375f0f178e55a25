//! The one KDL writer of the importers and `discover`: a [`Document`] as text in `gpuplan
//! fmt`'s layout ([`crate::fmt::generated`], issue 30). The only place that quotes a
//! value ([`crate::fmt::quote`]) or writes a comment ([`crate::fmt::comment`]) for them:
//! control characters in what an input said are escaped, never written raw.

use super::{
    Cluster, Cpu, Document, Fabric, GpuModel, Item, Layout, NodeClass, Nodes, Numa, Pool, Switch,
};
use crate::fmt::{comment, quote};
use std::fmt::Write;

const PAD: &str = "    ";

/// The document as KDL text, formatted as `gpuplan fmt` writes it (the text as written
/// when `fmt` refuses it: the caller says so, GP717).
pub(crate) fn write(doc: &Document) -> String {
    let mut s = String::new();
    for item in &doc.items {
        match item {
            Item::Comment(c) => note(&mut s, "", c),
            Item::Blank => s.push('\n'),
            Item::Cluster(c) => cluster(&mut s, c),
            Item::GpuModel(m) => gpu_model(&mut s, m),
            Item::NodeClass(c) => node_class(&mut s, c),
            Item::Nodes(n) => nodes(&mut s, n),
            Item::Pool(p) => pool(&mut s, p),
            Item::Fabric(f) => fabric(&mut s, f),
            Item::Mig(l) => mig(&mut s, l),
            Item::Team(t) => {
                let _ = writeln!(s, "team {} burst={}", quote(&t.name), t.burst);
            }
            Item::Priority(p) => {
                let _ = writeln!(s, "priority {} value={}", quote(&p.name), p.value);
            }
        }
    }
    crate::fmt::generated(&s).unwrap_or(s)
}

/// A whole comment line at `pad`.
fn note(s: &mut String, pad: &str, text: &str) {
    if text.is_empty() {
        let _ = writeln!(s, "{pad}//");
    } else {
        let _ = writeln!(s, "{pad}// {}", comment(text));
    }
}

/// Ends a line: with its trailing comment, if any.
fn end(s: &mut String, c: Option<&String>) {
    if let Some(c) = c {
        let _ = write!(s, "   // {}", comment(c));
    }
    s.push('\n');
}

/// ` key="value"` when there is a value.
fn prop(s: &mut String, key: &str, v: Option<&String>) {
    if let Some(v) = v {
        let _ = write!(s, " {key}={}", quote(v));
    }
}

fn cluster(s: &mut String, c: &Cluster) {
    let _ = write!(s, "cluster {}", quote(&c.name));
    match &c.scheduler {
        Some(sc) => {
            let _ = writeln!(s, " {{\n{PAD}scheduler {}\n}}", quote(sc));
        }
        None => s.push('\n'),
    }
}

fn gpu_model(s: &mut String, m: &GpuModel) {
    for n in &m.notes {
        note(s, "", n);
    }
    let _ = write!(s, "gpu-model {}", quote(&m.name));
    prop(s, "memory", m.memory.as_ref());
    if let Some(g) = m.nvlink_gen {
        let _ = write!(s, " nvlink-gen={g}");
    }
    prop(s, "product-name", m.product_name.as_ref());
    if m.mig_names.is_empty() {
        end(s, m.comment.as_ref());
        return;
    }
    s.push_str(" {");
    end(s, m.comment.as_ref());
    for (cat, drv) in &m.mig_names {
        let _ = writeln!(s, "{PAD}mig-name {} driver={}", quote(cat), quote(drv));
    }
    s.push_str("}\n");
}

fn node_class(s: &mut String, c: &NodeClass) {
    let _ = writeln!(s, "node-class {} {{", quote(&c.name));
    for n in &c.notes {
        note(s, PAD, n);
    }
    if let Some(cpu) = &c.cpu {
        cpu_line(s, cpu);
    }
    if let Some(m) = &c.memory {
        let _ = write!(s, "{PAD}memory {}", quote(&m.size));
        end(s, m.comment.as_ref());
    }
    for g in &c.gpus {
        let _ = write!(s, "{PAD}gpus {} model={}", g.count, quote(&g.model));
        prop(s, "driver", g.driver.as_ref());
        prop(s, "bus-ids", g.bus_ids.as_ref());
        s.push('\n');
    }
    for n in &c.gpu_notes {
        note(s, PAD, n);
    }
    for d in &c.nvlink_domains {
        let _ = write!(s, "{PAD}nvlink-domain gpus={}", quote(&d.gpus));
        end(s, d.comment.as_ref());
    }
    for n in &c.numa {
        numa(s, n);
    }
    for p in &c.pcie_switches {
        let _ = write!(s, "{PAD}pcie-switch {}", quote(&p.name));
        prop(s, "gpus", p.gpus.as_ref());
        prop(s, "nics", p.nics.as_ref());
        s.push('\n');
    }
    if let Some(n) = &c.nics {
        let _ = write!(s, "{PAD}nics {}", n.count);
        prop(s, "names", n.names.as_ref());
        end(s, n.comment.as_ref());
    }
    s.push_str("}\n");
}

fn cpu_line(s: &mut String, c: &Cpu) {
    let _ = write!(
        s,
        "{PAD}cpu sockets={} cores-per-socket={}",
        c.sockets, c.cores_per_socket
    );
    if let Some(t) = c.threads_per_core {
        let _ = write!(s, " threads-per-core={t}");
    }
    end(s, c.comment.as_ref());
}

fn numa(s: &mut String, n: &Numa) {
    let _ = write!(s, "{PAD}numa {}", n.id);
    prop(s, "gpus", n.gpus.as_ref());
    prop(s, "nics", n.nics.as_ref());
    prop(s, "cores", n.cores.as_ref());
    end(s, n.comment.as_ref());
}

fn nodes(s: &mut String, n: &Nodes) {
    let _ = write!(s, "nodes {} class={}", quote(&n.pattern), quote(&n.class));
    if n.labels.is_empty() && n.taints.is_empty() && n.down.is_empty() {
        s.push('\n');
        return;
    }
    s.push_str(" {\n");
    for (k, v) in &n.labels {
        let _ = writeln!(s, "{PAD}label {} {}", quote(k), quote(v));
    }
    for t in &n.taints {
        let _ = write!(s, "{PAD}taint {}", quote(&t.key));
        if let Some(v) = &t.value {
            let _ = write!(s, " {}", quote(v));
        }
        let _ = writeln!(s, " effect={}", quote(&t.effect));
    }
    for d in &n.down {
        let _ = write!(
            s,
            "{PAD}node {} gpus-down={}",
            quote(&d.name),
            quote(&d.gpus)
        );
        end(s, d.comment.as_ref());
    }
    s.push_str("}\n");
}

fn pool(s: &mut String, p: &Pool) {
    let _ = write!(
        s,
        "pool {} mode={} nodes={}",
        quote(&p.name),
        quote(&p.mode),
        quote(&p.nodes)
    );
    end(s, p.comment.as_ref());
}

/// The one fabric writer: NVLink domains across nodes, then the switch tree.
fn fabric(s: &mut String, f: &Fabric) {
    s.push_str("fabric {\n");
    for n in &f.notes {
        note(s, PAD, n);
    }
    for d in &f.nvlink {
        let _ = write!(
            s,
            "{PAD}nvlink-domain {} nodes={}",
            quote(&d.name),
            quote(&d.nodes)
        );
        end(s, d.comment.as_ref());
    }
    for n in &f.switch_notes {
        note(s, PAD, n);
    }
    for sw in &f.switches {
        switch(s, sw, 1);
    }
    s.push_str("}\n");
}

fn switch(s: &mut String, sw: &Switch, depth: usize) {
    let pad = PAD.repeat(depth);
    let _ = write!(s, "{pad}{} {}", sw.tier, quote(&sw.name));
    prop(s, "nodes", sw.nodes.as_ref());
    // A switch holds nodes (a leaf) or a block of the switches under it.
    if sw.nodes.is_some() && sw.children.is_empty() {
        end(s, sw.comment.as_ref());
        return;
    }
    s.push_str(" {");
    end(s, sw.comment.as_ref());
    for c in &sw.children {
        switch(s, c, depth + 1);
    }
    let _ = writeln!(s, "{pad}}}");
}

fn mig(s: &mut String, layouts: &[Layout]) {
    s.push_str("mig {\n");
    for l in layouts {
        let args: Vec<String> = l.profiles.iter().map(|p| quote(p)).collect();
        let _ = write!(
            s,
            "{PAD}layout {} nodes={}",
            args.join(" "),
            quote(&l.nodes)
        );
        prop(s, "gpus", l.gpus.as_ref());
        s.push_str(" current=#true");
        end(s, l.comment.as_ref());
    }
    s.push_str("}\n");
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::write;

    /// A document with every kind of item.
    fn every_item() -> Document {
        let mut d = Document::default();
        d.comments("gpuplan import test\nsecond line");
        d.comment("");
        d.comment("a control \u{7} character");
        d.blank();
        d.push(Item::Cluster(Cluster {
            name: "c".into(),
            scheduler: Some("slurm".into()),
        }));
        d.push(Item::GpuModel(GpuModel {
            notes: vec!["not in the catalog".into()],
            name: "m-x".into(),
            memory: Some("48GiB".into()),
            nvlink_gen: Some(0),
            product_name: Some("NVIDIA \"X\"".into()),
            comment: Some("check it".into()),
            ..GpuModel::default()
        }));
        d.push(Item::GpuModel(GpuModel {
            name: "h100-sxm5-80gb".into(),
            mig_names: vec![("1g.10gb".into(), "1g.12gb".into())],
            ..GpuModel::default()
        }));
        d.push(Item::NodeClass(class()));
        d.push(Item::Nodes(Nodes {
            pattern: "n[1-2]".into(),
            class: "k".into(),
            labels: vec![("a".into(), "b".into())],
            taints: vec![Taint {
                key: "t".into(),
                value: None,
                effect: "NoSchedule".into(),
            }],
            down: vec![NodeDown {
                name: "n2".into(),
                gpus: "3".into(),
                comment: None,
            }],
        }));
        d.push(Item::Pool(Pool {
            name: "p".into(),
            mode: "mig".into(),
            nodes: "n[1-2]".into(),
            comment: Some("partition p".into()),
        }));
        d.push(Item::Fabric(fabric()));
        d.push(Item::Mig(vec![Layout {
            profiles: vec!["3g.40gb".into(), "3g.40gb".into()],
            nodes: "n1".into(),
            gpus: Some("0-1".into()),
            comment: None,
        }]));
        d.push(Item::Team(Team {
            name: "t".into(),
            burst: 16,
        }));
        d.push(Item::Priority(Priority {
            name: "default".into(),
            value: 0,
        }));
        d
    }

    fn class() -> NodeClass {
        NodeClass {
            name: "k".into(),
            notes: vec!["2 node(s)".into()],
            cpu: Some(Cpu {
                sockets: 2,
                cores_per_socket: 8,
                threads_per_core: Some(2),
                comment: None,
            }),
            memory: Some(Memory {
                size: "512GiB".into(),
                comment: Some("rounded".into()),
            }),
            gpus: vec![Gpus {
                count: 8,
                model: "m-x".into(),
                driver: Some("550.54".into()),
                bus_ids: Some("0000:18:00.0".into()),
            }],
            gpu_notes: vec!["gpu note".into()],
            nvlink_domains: vec![GpuDomain {
                gpus: "0-7".into(),
                comment: Some("NV18".into()),
            }],
            numa: vec![Numa {
                id: 0,
                gpus: Some("0-3".into()),
                nics: Some("0".into()),
                cores: Some("0-31".into()),
                comment: None,
            }],
            pcie_switches: vec![PcieSwitch {
                name: "sw0".into(),
                gpus: Some("0,1".into()),
                nics: None,
            }],
            nics: Some(Nics {
                count: 1,
                names: Some("mlx5_0".into()),
                comment: Some("rails".into()),
            }),
        }
    }

    fn fabric() -> Fabric {
        Fabric {
            notes: vec!["first".into()],
            nvlink: vec![NodeDomain {
                name: "nvl-0".into(),
                nodes: "n[1-2]".into(),
                comment: None,
            }],
            switch_notes: vec!["tiers".into()],
            switches: vec![
                Switch {
                    tier: "spine".into(),
                    name: "s".into(),
                    nodes: None,
                    comment: Some("rack=s".into()),
                    children: vec![Switch {
                        tier: "leaf".into(),
                        name: "l".into(),
                        nodes: Some("n[1-2]".into()),
                        comment: None,
                        children: Vec::new(),
                    }],
                },
                Switch {
                    tier: "core".into(),
                    name: "empty".into(),
                    ..Switch::default()
                },
            ],
        }
    }

    const EVERY_ITEM: &str = r#"// gpuplan import test
// second line
//
// a control \u{7} character

cluster "c" {
    scheduler "slurm"
}
// not in the catalog
gpu-model "m-x" memory="48GiB" nvlink-gen=0 product-name="NVIDIA \"X\""  // check it
gpu-model "h100-sxm5-80gb" {
    mig-name "1g.10gb" driver="1g.12gb"
}
node-class "k" {
    // 2 node(s)
    cpu sockets=2 cores-per-socket=8 threads-per-core=2
    memory "512GiB"  // rounded
    gpus 8 model="m-x" driver="550.54" bus-ids="0000:18:00.0"
    // gpu note
    nvlink-domain gpus="0-7"  // NV18
    numa 0 gpus="0-3" nics="0" cores="0-31"
    pcie-switch "sw0" gpus="0,1"
    nics 1 names="mlx5_0"     // rails
}
nodes "n[1-2]" class="k" {
    label "a" "b"
    taint "t" effect="NoSchedule"
    node "n2" gpus-down="3"
}
pool "p" mode="mig" nodes="n[1-2]"  // partition p
fabric {
    // first
    nvlink-domain "nvl-0" nodes="n[1-2]"
    // tiers
    spine "s" { // rack=s
        leaf "l" nodes="n[1-2]"
    }
    core "empty" {}
}
mig {
    layout "3g.40gb" "3g.40gb" nodes="n1" gpus="0-1" current=#true
}
team "t" burst=16
priority "default" value=0
"#;

    #[test]
    fn every_kind_of_item_is_written() {
        let text = write(&every_item());
        assert_eq!(text, EVERY_ITEM, "{text}");
    }

    /// What the writer gives is KDL gpuplan reads back: it parses, and `fmt` leaves it
    /// as it is.
    #[test]
    fn the_text_parses_and_is_formatted() {
        let text = write(&every_item());
        assert!(::kdl::KdlDocument::parse_v2(&text).is_ok(), "{text}");
        assert_eq!(
            crate::fmt::generated(&text).ok().as_deref(),
            Some(&text[..])
        );
    }

    #[test]
    fn an_empty_document_is_empty() {
        assert_eq!(write(&Document::default()), "");
    }
}
