//! `gpuplan import nvidia-smi-xml FILE`: the `nvidia-smi -q -x` document.
//!
//! Read: `driver_version`, `cuda_version`, `attached_gpus`, and per `<gpu id="bus id">`
//! its `product_name`, `uuid`, `pci/pci_device_id`, `fb_memory_usage/total`,
//! `mig_mode/{current_mig,pending_mig}` and `mig_devices/mig_device` (GPU and compute
//! instance ids, memory). Text before the first `<` (a shell prompt) is skipped.
//!
//! Not in this document: NVLink (import `nvidia-smi topo -m` for domains), MIG profile
//! names and placements (`mig_device` has neither; the observed instances are listed
//! with their memory, no layout is guessed from it). A document that does not parse, or
//! has fewer `<gpu>` than `attached_gpus`, is truncated (`GP711`).

use crate::diag::Diagnostic;
use crate::discover::{
    GP710, GP711, GP712, GpuFacts, GpuInstanceFacts, Inventory, MigFacts, Naming, Snapshot,
    SystemInfo,
};
use crate::source::{FileId, SourceMap, Span};
use roxmltree::{Document, Node};

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| c.has_tag_name(name))
}

fn text<'a>(n: Node<'a, '_>, path: &[&str]) -> Option<&'a str> {
    let mut cur = n;
    for p in path {
        cur = child(cur, p)?;
    }
    cur.text()
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != "N/A")
}

/// Byte offset of a 1-based row/column (in characters) in `s`.
fn offset_of(s: &str, row: u32, col: u32) -> usize {
    let mut off = 0;
    for (i, line) in s.split_inclusive('\n').enumerate() {
        if i + 1 == row as usize {
            return off
                + line
                    .char_indices()
                    .nth(col.saturating_sub(1) as usize)
                    .map_or(line.len(), |(b, _)| b);
        }
        off += line.len();
    }
    s.len()
}

fn mib(s: &str) -> Option<u64> {
    s.strip_suffix("MiB")?.trim().parse().ok()
}

fn enabled(s: Option<&str>) -> Option<bool> {
    match s? {
        "Enabled" => Some(true),
        "Disabled" => Some(false),
        _ => None,
    }
}

/// Where the document starts: at `<?xml`, or at the first line that starts with `<`.
fn document_start(all: &str) -> Option<usize> {
    let first_tag = || {
        let mut off = 0;
        for l in all.split_inclusive('\n') {
            if l.trim_start().starts_with('<') {
                return Some(off + (l.len() - l.trim_start().len()));
            }
            off += l.len();
        }
        None
    };
    all.find("<?xml").or_else(first_tag)
}

/// GP711 for a document cut short, GP712 for one that does not parse; `start` is where
/// the document `xml` starts in the file's text `all`.
fn parse_error(e: roxmltree::Error, file: FileId, all: &str, start: usize) -> Diagnostic {
    let truncated = matches!(
        e,
        roxmltree::Error::UnexpectedEndOfStream | roxmltree::Error::UnclosedRootNode
    );
    if truncated {
        let last = all.trim_end().rfind('\n').map_or(0, |i| i + 1);
        let at = Span::new(file, last, all.trim_end().len() - last);
        return Diagnostic::error(
            GP711,
            "the XML document ends before its elements are closed: the input is truncated",
        )
        .at(at, "the document ends here")
        .with_help("import the complete output of `nvidia-smi -q -x`");
    }
    let p = e.pos();
    let at = Span::new(file, start + offset_of(&all[start..], p.row, p.col), 1);
    Diagnostic::error(GP712, format!("the XML does not parse: {e}")).at(at, "here")
}

/// The most XML nodes read: a 16-GPU `nvidia-smi -q -x` has about 10,000.
const MAX_XML_NODES: u32 = 1_000_000;

/// Reads the document into per-GPU facts.
pub(crate) fn parse(sources: &SourceMap, file: FileId) -> (Option<Snapshot>, Vec<Diagnostic>) {
    let Some(f) = sources.get(file) else {
        return (None, Vec::new());
    };
    let all: &str = &f.text;
    let Some(start) = document_start(all) else {
        let d = Diagnostic::error(GP710, "no XML document found").at(
            Span::new(file, 0, all.lines().next().map_or(0, str::len)),
            "expected the output of `nvidia-smi -q -x`",
        );
        return (None, vec![d]);
    };
    // nvidia-smi writes a DOCTYPE naming its external DTD and never declares entities:
    // an entity declaration is refused, so that one referenced 50,000 times (or nested)
    // cannot expand a small file into gigabytes.
    if let Some(at) = all[start..].find("<!ENTITY") {
        let d = Diagnostic::error(
            GP712,
            "the XML declares an entity (`<!ENTITY`); nvidia-smi never writes one",
        )
        .at(
            Span::new(file, start + at, "<!ENTITY".len()),
            "refused: entities are not expanded",
        )
        .with_help("import the unedited output of `nvidia-smi -q -x`");
        return (None, vec![d]);
    }
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: MAX_XML_NODES,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = match Document::parse_with_options(&all[start..], opts) {
        Ok(d) => d,
        Err(e) => return (None, vec![parse_error(e, file, all, start)]),
    };
    let span_of = |n: Node| {
        let r = n.range();
        Span::new(file, start + r.start, r.end - r.start)
    };
    let root = doc.root_element();
    if !root.has_tag_name("nvidia_smi_log") {
        let d = Diagnostic::error(
            GP710,
            format!(
                "the root element is `{}`, not `nvidia_smi_log`",
                root.tag_name().name()
            ),
        )
        .at(span_of(root), "expected the output of `nvidia-smi -q -x`");
        return (None, vec![d]);
    }
    let mut diags = Vec::new();
    let gpus: Vec<Node> = root.children().filter(|c| c.has_tag_name("gpu")).collect();
    if let Some(n) = child(root, "attached_gpus") {
        diags.extend(gpu_count_problem(n, gpus.len(), span_of(n)));
    }
    let mut facts = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        if text(*g, &["product_name"]).is_none() {
            diags.push(
                Diagnostic::error(GP711, format!("GPU {i} has no `product_name`"))
                    .at(span_of(*g), "this `<gpu>`"),
            );
            continue;
        }
        facts.push(gpu_facts(i as u32, *g));
    }
    if diags.iter().any(Diagnostic::is_error) {
        return (None, diags);
    }
    let snap = Snapshot {
        system: SystemInfo {
            driver_version: text(root, &["driver_version"]).map(String::from),
            cuda_version: text(root, &["cuda_version"]).map(String::from),
        },
        gpus: facts,
    };
    (Some(snap), diags)
}

/// `attached_gpus` (at `span`) against the `found` `<gpu>` elements: fewer means the
/// input was cut short (GP711).
fn gpu_count_problem(n: Node, found: usize, span: Span) -> Option<Diagnostic> {
    match n.text().map(str::trim).and_then(|t| t.parse::<usize>().ok()) {
        Some(k) if k != found => Some(
            Diagnostic::error(GP711, format!("`attached_gpus` is {k} but the document has {found} `<gpu>` element(s): the input is truncated"))
                .at(span, "GPU count")
                .with_help("import the complete output of `nvidia-smi -q -x`"),
        ),
        Some(_) => None,
        None => Some(Diagnostic::error(GP712, "cannot read `attached_gpus`").at(span, "expected a number")),
    }
}

fn gpu_facts(index: u32, g: Node) -> GpuFacts {
    let pci_device_id = text(g, &["pci", "pci_device_id"])
        .and_then(|s| {
            u32::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
        })
        .map(|v| (v >> 16) as u16);
    let mig = match (
        enabled(text(g, &["mig_mode", "current_mig"])),
        enabled(text(g, &["mig_mode", "pending_mig"])),
    ) {
        (Some(current), pending) => Some(MigFacts {
            current,
            pending: pending.unwrap_or(current),
            gpu_instances: mig_instances(g),
        }),
        _ => None,
    };
    GpuFacts {
        index,
        name: text(g, &["product_name"]).map(String::from),
        pci_device_id,
        bus_id: g.attribute("id").map(String::from),
        uuid: text(g, &["uuid"]).map(String::from),
        memory_mib: text(g, &["fb_memory_usage", "total"]).and_then(mib),
        mig,
        nvlinks: Vec::new(),
        numa_node: text(g, &["numa_node_id"]).and_then(|s| s.parse().ok()),
        cpu_affinity: None,
    }
}

fn mig_instances(g: Node) -> Vec<GpuInstanceFacts> {
    let mut out: Vec<GpuInstanceFacts> = Vec::new();
    let Some(devs) = child(g, "mig_devices") else {
        return out;
    };
    for d in devs.children().filter(|c| c.has_tag_name("mig_device")) {
        let Some(gi) = text(d, &["gpu_instance_id"]).and_then(|s| s.parse().ok()) else {
            continue;
        };
        let ci = text(d, &["compute_instance_id"]).and_then(|s| s.parse().ok());
        GpuInstanceFacts::record(&mut out, gi, ci, || {
            text(d, &["fb_memory_usage", "total"]).and_then(mib)
        });
    }
    out
}

/// Reads `FILE` and describes the node.
pub fn import(
    sources: &SourceMap,
    file: FileId,
    naming: &Naming,
) -> (Option<Inventory>, Vec<Diagnostic>) {
    let (snap, mut diags) = parse(sources, file);
    let Some(snap) = snap else {
        return (None, diags);
    };
    match crate::discover::inventory("nvidia-smi-xml", &snap, naming) {
        Ok((mut inv, d)) => {
            diags.extend(d);
            inv.notes.push("`nvidia-smi -q -x` does not show NVLink: import `nvidia-smi topo -m` for NVLink domains, NUMA and NICs".into());
            (Some(inv), diags)
        }
        Err(d) => {
            diags.push(d);
            (None, diags)
        }
    }
}
