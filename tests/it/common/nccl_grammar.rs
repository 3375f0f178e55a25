//! NCCL's topology-file grammar (what `NCCL_TOPO_FILE` may hold), written from NCCL's
//! sources independently of gpuplan's generator (NVIDIA/nccl 5067397c: `src/graph/xml.cc`
//! parser and loaders, `src/graph/topo.cc` `ncclTopoAdd*` and its `kvDict*` tables,
//! `src/graph/xml.h`). [`check`] is strict: it refuses what NCCL would misread or
//! silently ignore, not only what NCCL rejects.
//!
//! - Elements and parents (`ncclTopoXmlLoad*` handlers; NCCL skips any other element):
//!   `system > cpu > (pci | nic)`, `pci > (pci | gpu | nic | pcilink)`,
//!   `gpu > (nvlink | c2c)`, `nic > net`.
//! - NCCL's reader (`xmlGetNode`, `xmlGetToken`, `xmlGetValue`): a start tag on one line,
//!   attributes separated by one space, values quoted, at most 255 characters, no entity
//!   decoding (`&amp;` stays `&amp;`), at most 16 attributes (`MAX_ATTR_COUNT`) and 640
//!   children (`MAX_SUBS`) per element.
//! - Bus ids are compared as strings (`xmlFindTagKv`) with the ids NCCL prints
//!   (`%04lx:%02lx:%02lx.%01lx`): `dddd:bb:dd.f`, lowercase hex.
//! - `link_speed`: a key of `kvDictPciGen`; `class`, `tclass`: `0x` and 6 hex digits;
//!   `arch`: `kvDictCpuArch`; `vendor`: `kvDictCpuVendor`.

use std::collections::{BTreeMap, BTreeSet};

/// PCIe link speeds NCCL's `kvDictPciGen` knows (topo.cc): sysfs spellings (the short
/// ones are kernel 5.6 and earlier).
pub const LINK_SPEEDS: &[&str] = &[
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

/// NVLink targets NCCL writes for an NVSwitch it cannot see (VMs, GB200 trays): NVML's
/// `FFFFFFFF:FF:FF.0` lowered, and NCCL's own sentinel (xml.cc).
pub const HIDDEN_NVSWITCH: &[&str] = &["fffffff:ff:ff.0", "fffffff:ffff:ff"];

const MAX_ATTRS: usize = 16;
const MAX_VALUE: usize = 255;
const MAX_SUBS: usize = 640;

fn hex(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// `dddd:bb:dd.f`, lowercase hex.
pub fn is_bus_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && [&s[0..4], &s[5..7], &s[8..10], &s[11..12]]
            .iter()
            .all(|x| hex(x))
}

/// `0x` and six lowercase hex digits.
fn is_class(s: &str) -> bool {
    s.strip_prefix("0x").is_some_and(|r| r.len() == 6 && hex(r))
}

fn is_uint(s: &str) -> bool {
    !s.is_empty() && s.len() <= 19 && s.bytes().all(|c| c.is_ascii_digit())
}

/// What `kvDictPciClass` makes of a class (its keys are prefixes).
fn kind(class: &str) -> &'static str {
    match class {
        "0x060400" | "0x080100" => "pci",
        "0x068000" => "nvs",
        "0x068001" => "cpu",
        c if c.starts_with("0x03") => "gpu",
        c if c.starts_with("0x02") => "nic",
        _ => "pci",
    }
}

/// The tags of `xml` as NCCL's reader sees them: each start tag on one line, attributes
/// separated by single spaces, values double-quoted without `&`, `<` or `>`.
fn check_lexically(xml: &str) -> Result<(), String> {
    let mut rest = xml;
    while let Some(i) = rest.find('<') {
        let tail = &rest[i..];
        let end = tail
            .find('>')
            .ok_or_else(|| "unterminated tag".to_string())?;
        let tag = &tail[1..end];
        rest = &tail[end + 1..];
        if tag.starts_with('/') {
            continue;
        }
        if tag.contains(['\n', '\r', '\t']) {
            return Err(format!(
                "<{tag}> spans lines or holds a tab: NCCL reads one line"
            ));
        }
        let body = tag.strip_suffix('/').unwrap_or(tag);
        let mut parts = body.splitn(2, ' ');
        let _name = parts.next().unwrap_or_default();
        let mut attrs = parts.next().unwrap_or_default();
        while !attrs.is_empty() {
            let eq = attrs
                .find("=\"")
                .ok_or_else(|| format!("<{tag}>: attribute without a double-quoted value"))?;
            let after = &attrs[eq + 2..];
            let close = after
                .find('"')
                .ok_or_else(|| format!("<{tag}>: unterminated value"))?;
            let value = &after[..close];
            if value.contains(['&', '<', '>']) {
                return Err(format!("<{tag}>: NCCL decodes no entity in {value:?}"));
            }
            if value.len() > MAX_VALUE {
                return Err(format!("<{tag}>: value over {MAX_VALUE} characters"));
            }
            attrs = &after[close + 1..];
            if !attrs.is_empty() {
                attrs = attrs
                    .strip_prefix(' ')
                    .filter(|a| !a.starts_with(' '))
                    .ok_or_else(|| format!("<{tag}>: attributes not separated by one space"))?;
            }
        }
    }
    Ok(())
}

/// `n`'s attribute `a`, which must be there.
fn need<'a>(n: &roxmltree::Node<'a, '_>, a: &str) -> Result<&'a str, String> {
    n.attribute(a)
        .ok_or_else(|| format!("<{}> without `{a}`", n.tag_name().name()))
}

/// Attribute `a` of `n` is there and a number.
fn uint(n: &roxmltree::Node, a: &str) -> Result<(), String> {
    let v = need(n, a)?;
    if is_uint(v) {
        Ok(())
    } else {
        Err(format!("<{}> {a}={v:?}: not a number", n.tag_name().name()))
    }
}

/// Attribute `a` of `n`, when there, is 0 or 1.
fn flag(n: &roxmltree::Node, a: &str) -> Result<(), String> {
    match n.attribute(a) {
        None | Some("0") | Some("1") => Ok(()),
        Some(v) => Err(format!("<{}> {a}={v:?}: not 0 or 1", n.tag_name().name())),
    }
}

/// What the elements seen so far declared.
#[derive(Default)]
struct Seen {
    /// pci bus id -> what the element is (its class's kind).
    pci: BTreeMap<String, &'static str>,
    numa: BTreeSet<String>,
    devs: BTreeSet<String>,
    nets: BTreeSet<String>,
    /// (gpu bus id, target, tclass)
    links: Vec<(String, String, String)>,
}

/// Checks `xml` against NCCL's topology grammar; `Err` names the first problem.
pub fn check(xml: &str) -> Result<(), String> {
    check_lexically(xml)?;
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "system" || root.attribute("version") != Some("1") {
        return Err("the root must be <system version=\"1\">".into());
    }
    let mut seen = Seen::default();
    for n in root.descendants().filter(|n| n.is_element()) {
        element(&n, &mut seen)?;
    }
    check_links(&seen)
}

/// One element: where it may be, its attributes and children.
fn element(n: &roxmltree::Node, seen: &mut Seen) -> Result<(), String> {
    let name = n.tag_name().name();
    let parent = n
        .parent_element()
        .map(|p| p.tag_name().name())
        .unwrap_or_default();
    let parents: &[&str] = match name {
        "system" => &[""],
        "cpu" => &["system"],
        "pci" => &["cpu", "pci"],
        "gpu" | "pcilink" => &["pci"],
        "nic" => &["cpu", "pci"],
        "nvlink" | "c2c" => &["gpu"],
        "net" => &["nic"],
        other => return Err(format!("unknown element <{other}>")),
    };
    if !parents.contains(&parent) {
        return Err(format!("<{name}> inside <{parent}>"));
    }
    if n.attributes().len() > MAX_ATTRS {
        return Err(format!("<{name}> has over {MAX_ATTRS} attributes"));
    }
    let kids: Vec<&str> = n
        .children()
        .filter(|k| k.is_element())
        .map(|k| k.tag_name().name())
        .collect();
    if kids.len() > MAX_SUBS {
        return Err(format!("<{name}> has over {MAX_SUBS} children"));
    }
    if n.children()
        .any(|k| k.is_text() && !k.text().unwrap_or("").trim().is_empty())
    {
        return Err(format!("<{name}> holds text"));
    }
    match name {
        "cpu" => cpu(n, seen),
        "pci" => pci(n, &kids, seen),
        "gpu" => gpu(n, seen),
        "nvlink" => nvlink(n, seen),
        "nic" if kids.is_empty() => Err("<nic> without <net>".into()),
        "net" => net(n, seen),
        _ => Ok(()),
    }
}

fn cpu(n: &roxmltree::Node, seen: &mut Seen) -> Result<(), String> {
    uint(n, "numaid")?;
    if !seen
        .numa
        .insert(n.attribute("numaid").unwrap_or_default().to_string())
    {
        return Err("cpu numaid repeated".into());
    }
    if let Some(a) = n.attribute("affinity") {
        if !a.split(',').all(|w| w.len() == 8 && hex(w)) {
            return Err(format!("cpu affinity {a:?}: not a cpumask"));
        }
    }
    let arch = need(n, "arch")?;
    if !["x86_64", "arm64", "ppc64"].contains(&arch) {
        return Err(format!("cpu arch {arch:?}"));
    }
    if let Some(v) = n.attribute("vendor") {
        if ![
            "GenuineIntel",
            "AuthenticAMD",
            "CentaurHauls",
            "  Shanghai  ",
        ]
        .contains(&v)
        {
            return Err(format!("cpu vendor {v:?}"));
        }
    }
    for a in ["familyid", "modelid"] {
        if n.attribute(a).is_some() {
            uint(n, a)?;
        }
    }
    Ok(())
}

fn pci(n: &roxmltree::Node, kids: &[&str], seen: &mut Seen) -> Result<(), String> {
    let b = need(n, "busid")?;
    if !is_bus_id(b) {
        return Err(format!(
            "pci busid {b:?}: not dddd:bb:dd.f in lowercase hex"
        ));
    }
    let class = need(n, "class")?;
    if !is_class(class) {
        return Err(format!("pci class {class:?}"));
    }
    let speed = need(n, "link_speed")?;
    if !LINK_SPEEDS.contains(&speed) {
        return Err(format!("pci link_speed {speed:?}: unknown to NCCL"));
    }
    uint(n, "link_width")?;
    for a in ["vendor", "device", "subsystem_vendor", "subsystem_device"] {
        if let Some(v) = n.attribute(a) {
            if !v.strip_prefix("0x").is_some_and(|r| r.len() == 4 && hex(r)) {
                return Err(format!("pci {a} {v:?}"));
            }
        }
    }
    let k = kind(class);
    let ok = kids.iter().all(|c| match *c {
        "pci" => k == "pci",
        "gpu" => k == "gpu",
        "nic" => k == "nic",
        _ => true,
    });
    if !ok || kids.iter().filter(|c| **c == "nic").count() > 1 {
        return Err(format!("pci {b} of class {class} holds {kids:?}"));
    }
    if seen.pci.insert(b.to_string(), k).is_some() {
        return Err(format!("pci busid {b} repeated"));
    }
    Ok(())
}

fn gpu(n: &roxmltree::Node, seen: &mut Seen) -> Result<(), String> {
    uint(n, "dev")?;
    let d = n.attribute("dev").unwrap_or_default();
    if !seen.devs.insert(d.to_string()) {
        return Err(format!("gpu dev {d} repeated"));
    }
    uint(n, "sm")?;
    if n.attribute("rank").is_some() {
        uint(n, "rank")?;
    }
    flag(n, "gdr")?;
    Ok(())
}

fn nvlink(n: &roxmltree::Node, seen: &mut Seen) -> Result<(), String> {
    let t = need(n, "target")?;
    uint(n, "count")?;
    if n.attribute("count") == Some("0") {
        return Err(format!("nvlink to {t} with count 0"));
    }
    let tclass = need(n, "tclass")?;
    if !is_class(tclass) {
        return Err(format!("nvlink tclass {tclass:?}"));
    }
    let gpu_bus = n
        .parent_element()
        .and_then(|g| g.parent_element())
        .and_then(|p| p.attribute("busid"))
        .unwrap_or_default();
    seen.links
        .push((gpu_bus.to_string(), t.to_string(), tclass.to_string()));
    Ok(())
}

fn net(n: &roxmltree::Node, seen: &mut Seen) -> Result<(), String> {
    let nm = need(n, "name")?;
    if nm.is_empty() || !seen.nets.insert(nm.to_string()) {
        return Err(format!("net name {nm:?} empty or repeated"));
    }
    for a in ["dev", "speed", "port"] {
        uint(n, a)?;
    }
    flag(n, "gdr")?;
    for a in ["maxconn", "rail", "plane"] {
        if n.attribute(a).is_some() {
            uint(n, a)?;
        }
    }
    Ok(())
}

/// Every NVLink's target: a GPU of the file, an NVSwitch or a CPU, one class per target.
fn check_links(seen: &Seen) -> Result<(), String> {
    let (pci, links) = (&seen.pci, &seen.links);
    let mut nvs_targets = BTreeSet::new();
    for (from, t, tclass) in links {
        match kind(tclass) {
            "gpu" => {
                if pci.get(t) != Some(&"gpu") {
                    return Err(format!("nvlink from {from} to {t}: no GPU of the file"));
                }
                if t == from {
                    return Err(format!("nvlink from {from} to itself"));
                }
            }
            "nvs" => {
                // An NVSwitch is no pci element of NCCL's files: its id is a bus id no
                // device of the file has, or the hidden-switch sentinel.
                if !(is_bus_id(t) || HIDDEN_NVSWITCH.contains(&t.as_str())) {
                    return Err(format!("nvlink to NVSwitch {t:?}: not a bus id"));
                }
                if pci.get(t).is_some_and(|k| *k != "nvs") {
                    return Err(format!("nvlink to NVSwitch {t}, a {} of the file", pci[t]));
                }
                nvs_targets.insert(t.clone());
            }
            "cpu" => {}
            _ => return Err(format!("nvlink tclass {tclass}: no GPU, NVSwitch or CPU")),
        }
    }
    if let Some(t) = links
        .iter()
        .find(|(_, t, c)| kind(c) != "nvs" && nvs_targets.contains(t))
    {
        return Err(format!("nvlink target {} named with two classes", t.1));
    }
    Ok(())
}
