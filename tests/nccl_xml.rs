//! Every NCCL topology file gpuplan renders (`fabric/<class>/topo.xml`) is checked
//! against NCCL's grammar as NCCL's own sources define it (src/graph/xml.cc, xml.h,
//! topo.cc: the element tree `system > cpu > pci* > (gpu > nvlink*) | (nic > net+)`,
//! the attributes NCCL reads and their formats), written here independently of the
//! generator. The env files are checked too: one `KEY=VALUE` per line, NCCL names only.

mod common;

use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;
use std::collections::BTreeSet;
use std::path::Path;

/// PCIe link speeds NCCL's `kvDictPciGen` knows (topo.cc).
const LINK_SPEEDS: &[&str] = &[
    "2.5 GT/s",
    "5 GT/s",
    "8 GT/s",
    "16 GT/s",
    "32 GT/s",
    "2.5 GT/s PCIe",
    "5.0 GT/s PCIe",
    "8.0 GT/s PCIe",
    "16.0 GT/s PCIe",
    "32.0 GT/s PCIe",
    "64.0 GT/s PCIe",
];

fn is_hex(s: &str, prefix: bool) -> bool {
    let s = if prefix {
        match s.strip_prefix("0x") {
            Some(r) => r,
            None => return false,
        }
    } else {
        s
    };
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

/// `dddd:bb:dd.f`, lowercase hex.
fn is_bus_id(s: &str) -> bool {
    let p: Vec<&str> = s.split(':').collect();
    if p.len() != 3 || p[0].len() != 4 || p[1].len() != 2 {
        return false;
    }
    let Some((d, f)) = p[2].split_once('.') else {
        return false;
    };
    [p[0], p[1], d, f].iter().all(|x| is_hex(x, false)) && d.len() == 2 && f.len() == 1
}

fn is_uint(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

/// NCCL's topology grammar; `Err` names the first problem.
fn check(xml: &str) -> Result<(), String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "system" || root.attribute("version") != Some("1") {
        return Err("root must be <system version=\"1\">".into());
    }
    fn need<'a>(n: &roxmltree::Node<'a, '_>, a: &str) -> Result<&'a str, String> {
        n.attribute(a)
            .ok_or_else(|| format!("<{}> without `{a}`", n.tag_name().name()))
    }
    let mut busids = BTreeSet::new();
    let mut gpu_bus = BTreeSet::new();
    let mut devs = BTreeSet::new();
    let mut nets = BTreeSet::new();
    let mut links: Vec<(String, String)> = Vec::new();
    for n in root.descendants().filter(|n| n.is_element()) {
        let parent = n.parent_element().map(|p| p.tag_name().name().to_string());
        let name = n.tag_name().name();
        let allowed_parent: &[&str] = match name {
            "system" => &[],
            "cpu" => &["system"],
            "pci" => &["cpu", "pci"],
            "gpu" | "nic" => &["pci"],
            "nvlink" => &["gpu"],
            "net" => &["nic"],
            other => return Err(format!("unknown element <{other}>")),
        };
        if name != "system"
            && !parent
                .as_deref()
                .is_some_and(|p| allowed_parent.contains(&p))
        {
            return Err(format!("<{name}> inside <{}>", parent.unwrap_or_default()));
        }
        match name {
            "cpu" => {
                if !is_uint(need(&n, "numaid")?) {
                    return Err("cpu numaid".into());
                }
                if let Some(a) = n.attribute("affinity") {
                    if !a.split(',').all(|w| w.len() == 8 && is_hex(w, false)) {
                        return Err(format!("cpu affinity {a}"));
                    }
                }
                if let Some(a) = n.attribute("arch") {
                    if !["x86_64", "arm64", "ppc64"].contains(&a) {
                        return Err(format!("cpu arch {a}"));
                    }
                }
            }
            "pci" => {
                let b = need(&n, "busid")?;
                if !is_bus_id(b) || !busids.insert(b.to_string()) {
                    return Err(format!("pci busid {b} (bad or repeated)"));
                }
                if !is_hex(need(&n, "class")?, true) {
                    return Err("pci class".into());
                }
                if !LINK_SPEEDS.contains(&need(&n, "link_speed")?) {
                    return Err(format!("pci link_speed {:?}", n.attribute("link_speed")));
                }
                if !is_uint(need(&n, "link_width")?) {
                    return Err("pci link_width".into());
                }
                let kids: Vec<&str> = n
                    .children()
                    .filter(|k| k.is_element())
                    .map(|k| k.tag_name().name())
                    .collect();
                let class = n.attribute("class").unwrap();
                let ok = match class {
                    "0x060400" => kids.iter().all(|k| *k == "pci"),
                    "0x030200" | "0x030000" => kids == ["gpu"],
                    "0x020700" | "0x020000" => kids == ["nic"],
                    _ => false,
                };
                if !ok {
                    return Err(format!("pci {b} of class {class} holds {kids:?}"));
                }
                if kids == ["gpu"] {
                    gpu_bus.insert(b.to_string());
                }
            }
            "gpu" => {
                let d = need(&n, "dev")?;
                if !is_uint(d) || !devs.insert(d.to_string()) {
                    return Err(format!("gpu dev {d} (bad or repeated)"));
                }
                let sm = need(&n, "sm")?;
                if !is_uint(sm) || sm.parse::<u32>().unwrap() < 60 {
                    return Err(format!("gpu sm {sm}"));
                }
            }
            "nvlink" => {
                let t = need(&n, "target")?;
                let count = need(&n, "count")?;
                let tclass = need(&n, "tclass")?;
                if !is_bus_id(t) || !is_uint(count) || count == "0" {
                    return Err(format!("nvlink target {t} count {count}"));
                }
                if !["0x030200", "0x068000", "0x068001"].contains(&tclass) {
                    return Err(format!("nvlink tclass {tclass}"));
                }
                links.push((t.to_string(), tclass.to_string()));
            }
            "net" => {
                let nm = need(&n, "name")?;
                if !nets.insert(nm.to_string()) {
                    return Err(format!("net {nm} repeated"));
                }
                for a in ["dev", "speed", "port"] {
                    if !is_uint(need(&n, a)?) {
                        return Err(format!("net {a}"));
                    }
                }
            }
            _ => {}
        }
    }
    for (t, tclass) in links {
        if tclass == "0x030200" && !gpu_bus.contains(&t) {
            return Err(format!("nvlink to {t}, which is no GPU of the file"));
        }
    }
    Ok(())
}

fn rendered() -> Vec<(String, String)> {
    let mut dirs = common::examples();
    dirs.push("tests/fixtures/hetero-gb200-h100".into());
    let mut out = Vec::new();
    for d in dirs {
        let c = common::load_dir(Path::new(&d));
        let p = common::plan(&c, SolverKind::Ilp);
        let files = render::render(&c, &p, &[Target::Fabric], &render::Options::default())
            .unwrap()
            .files;
        for (path, text) in files {
            out.push((format!("{}: {path}", d.display()), text));
        }
    }
    out
}

#[test]
fn every_rendered_topology_file_follows_nccls_grammar() {
    let files = rendered();
    let xmls: Vec<&(String, String)> = files.iter().filter(|(p, _)| p.ends_with(".xml")).collect();
    assert!(xmls.len() >= 5, "{}", xmls.len());
    for (path, text) in xmls {
        check(text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"));
    }
}

#[test]
fn env_files_hold_nccl_variables_only() {
    let files = rendered();
    let mut topo_files = 0;
    for (path, text) in files.iter().filter(|(p, _)| p.ends_with("nccl.env")) {
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("{path}: {l}"));
            assert!(
                [
                    "NCCL_IB_HCA",
                    "NCCL_SOCKET_IFNAME",
                    "NCCL_IB_GID_INDEX",
                    "NCCL_TOPO_FILE"
                ]
                .contains(&k),
                "{path}: {k}"
            );
            assert!(
                !v.is_empty() && !v.contains(['$', '`', '"', ' ']),
                "{path}: {l}"
            );
            topo_files += (k == "NCCL_TOPO_FILE") as u32;
        }
    }
    // The fixture declares bus ids for its H100 class: there, and only there, the file
    // is pointed at.
    assert_eq!(topo_files, 1);
}

#[test]
fn the_checker_refuses_broken_files() {
    let good = "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\">\n    <pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n      <gpu dev=\"0\" sm=\"90\" gdr=\"1\">\n        <nvlink target=\"0000:ff:00.0\" count=\"18\" tclass=\"0x068000\"/>\n      </gpu>\n    </pci>\n  </cpu>\n</system>\n";
    check(good).unwrap();
    for (what, bad) in [
        ("missing sm", good.replace(" sm=\"90\"", "")),
        ("bad busid", good.replace("0000:11:00.0", "0:11:0.0")),
        ("unknown link speed", good.replace("32.0 GT/s PCIe", "32 Gbps")),
        ("nvlink to a missing GPU", good.replace("0x068000", "0x030200")),
        ("gpu outside pci", good.replace("<pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">", "<pci busid=\"0000:11:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">")),
        ("wrong root", good.replace("version=\"1\"", "version=\"2\"")),
    ] {
        assert!(check(&bad).is_err(), "accepted: {what}");
    }
}
