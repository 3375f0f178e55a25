//! `nvidia-smi -q`: the text report (the form users most often have; `-q -x` is its XML).
//!
//! The report is an indented tree of `Key : Value` lines and section titles: a header
//! (`Driver Version`, `CUDA Version`, `Attached GPUs`), then one block per GPU opened
//! by `GPU <bus id>` at the left margin. Read per GPU: `Product Name`, `GPU UUID`,
//! `MIG Mode/Current` and `/Pending`, `PCI/Device Id`, `PCI/Bus Id`,
//! `FB Memory Usage/Total`, and each `MIG Device` (GPU and compute instance ids, memory;
//! inside `MIG Devices` in older drivers, straight under the GPU in later ones): what the
//! `-q -x` reader ([`super::xml`]) reads.
//!
//! Robust to the differences between drivers: keys are matched without regard to case
//! or to the number of spaces (`Virtualization mode` in R396, `Virtualization Mode`
//! since), the `:` column moves, values may contain colons (bus ids, times), Windows line
//! ends and a shell prompt before the report are accepted, sections that drivers added or
//! renamed are skipped.
//!
//! What the report does not have, or that is unknown: NVLink (import `topo -m` with it),
//! MIG profile names and placements (import `mig -lgi` with it), the GPU index when the
//! report was made with `-i` (GPUs are numbered in the order listed).
//!
//! Losses are never silent: fewer GPU blocks than `Attached GPUs` (`-i`, or a cut file),
//! or a block cut before its end, leave those GPUs out with `GP709`, which the import
//! contract reports; conflicting duplicate keys and duplicate GPUs are `GP715`; values
//! that cannot be read are `GP712`.

use crate::diag::{Diagnostic, quoted};
use crate::discover::{GP710, GP712, GpuFacts, GpuInstanceFacts, MigFacts, Snapshot, SystemInfo};
use crate::source::{FileId, SourceMap, Span};
use std::collections::BTreeMap;

/// GP709: GPUs the output counts (`Attached GPUs`) but does not describe are left out.
pub(crate) const GP709: &str = "GP709";
/// GP715: a GPU listed twice, or one key with two different values.
pub(crate) const GP715: &str = "GP715";

/// The most GPUs one report may have (the largest single hosts have 16 to 20).
pub(crate) const MAX_GPUS: u32 = 1024;
/// The most MIG devices one GPU may list (7 GPU instances of up to 7 compute instances).
const MAX_MIG_DEVICES: usize = 64;
/// The most memory a GPU may report, in MiB (1 PiB): more is not a reading.
const MAX_MIB: u64 = 1 << 30;
/// The longest product name read.
const MAX_NAME: usize = 200;

/// GPUs of the report that are not in the snapshot, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// How many GPUs.
    pub gpus: u32,
    pub reason: String,
}

/// What the report says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub snapshot: Snapshot,
    /// `Attached GPUs`, when the header has it.
    pub attached: Option<u32>,
    pub left_out: Vec<LeftOut>,
}

impl Report {
    /// GPUs the report counts: `Attached GPUs`, or the blocks when the header lacks it.
    pub fn gpus_seen(&self) -> u32 {
        let listed =
            self.snapshot.gpus.len() as u32 + self.left_out.iter().map(|l| l.gpus).sum::<u32>();
        self.attached.unwrap_or(0).max(listed)
    }
}

/// One line: indentation, key, value (none for a section title) and the key's offset.
struct Line<'a> {
    indent: usize,
    key: &'a str,
    value: Option<&'a str>,
    span: Span,
}

/// `Key   : value`: the separator is the first `:` after a blank, so that colons in
/// values (bus ids, times) and in `GPU 00000000:18:00.0` are not taken for it.
fn split(line: &str) -> (&str, Option<&str>) {
    let b = line.as_bytes();
    let sep = (1..b.len()).find(|&i| b[i] == b':' && (b[i - 1] == b' ' || b[i - 1] == b'\t'));
    match sep {
        Some(i) => (line[..i].trim(), Some(line[i + 1..].trim())),
        None => (line.trim(), None),
    }
}

/// Lower case, blanks collapsed: `Virtualization  mode` = `virtualization mode`.
fn norm(key: &str) -> String {
    key.split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn lines(file: FileId, text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut off = 0;
    text.split_inclusive('\n').filter_map(move |raw| {
        let base = off;
        off += raw.len();
        let l = raw.trim_end_matches(['\n', '\r']);
        let body = l.trim_start();
        if body.is_empty() {
            return None;
        }
        let lead = &l[..l.len() - body.len()];
        let indent = lead.chars().map(|c| if c == '\t' { 8 } else { 1 }).sum();
        let (key, value) = split(body);
        Some(Line {
            indent,
            key,
            value,
            span: Span::new(file, base + lead.len(), body.len()),
        })
    })
}

/// One `GPU <bus id>` block as read.
#[derive(Default)]
struct Block {
    bus: String,
    span: Option<Span>,
    /// Normalised path below the block (`pci/bus id`) -> value and its line.
    fields: BTreeMap<String, (String, Span)>,
    mig: Vec<BTreeMap<String, (String, Span)>>,
    /// The block's last section, `Processes`, was reached.
    ended: bool,
}

/// The paths read from a GPU block (others are skipped, so memory stays bounded).
const GPU_KEYS: [&str; 7] = [
    "product name",
    "gpu uuid",
    "mig mode/current",
    "mig mode/pending",
    "pci/device id",
    "pci/bus id",
    "fb memory usage/total",
];
const MIG_KEYS: [&str; 3] = [
    "gpu instance id",
    "compute instance id",
    "fb memory usage/total",
];

struct Reader {
    blocks: Vec<Block>,
    header: BTreeMap<String, (String, Span)>,
    diags: Vec<Diagnostic>,
}

impl Reader {
    /// Records `value` at `path` of `map`; a second, different value is GP715.
    fn put(
        diags: &mut Vec<Diagnostic>,
        map: &mut BTreeMap<String, (String, Span)>,
        path: String,
        value: &str,
        span: Span,
    ) {
        match map.get(&path) {
            Some((v, _)) if v == value => {}
            Some((v, first)) => diags.push(
                Diagnostic::error(
                    GP715,
                    format!(
                        "`{path}` is given twice, as {} and as {}",
                        quoted(v),
                        quoted(value)
                    ),
                )
                .at(span, "second value")
                .with_related(*first, "first value")
                .with_help("import the unedited output of `nvidia-smi -q`"),
            ),
            None => {
                map.insert(path, (value.to_string(), span));
            }
        }
    }

    fn line(&mut self, l: &Line, stack: &mut Vec<(usize, String)>) {
        while stack.last().is_some_and(|(i, _)| *i >= l.indent) {
            stack.pop();
        }
        if l.indent == 0 {
            stack.clear();
            if l.value.is_none() {
                if let Some(bus) = l.key.strip_prefix("GPU ").map(str::trim) {
                    self.open_gpu(bus, l.span);
                    return;
                }
            }
            if let Some(v) = l.value {
                let k = norm(l.key);
                if ["driver version", "cuda version", "attached gpus"].contains(&k.as_str()) {
                    Self::put(&mut self.diags, &mut self.header, k, v, l.span);
                }
            }
            // Anything else at the margin ends the block (a prompt, another report).
            if !self.blocks.is_empty() && !l.key.starts_with("GPU ") {
                self.blocks.push(Block::default());
            }
            return;
        }
        let Some(b) = self.blocks.last_mut().filter(|b| b.span.is_some()) else {
            return;
        };
        let names: Vec<&str> = stack.iter().map(|(_, n)| n.as_str()).collect();
        let key = norm(l.key);
        if names.is_empty() && key == "processes" {
            b.ended = true;
        }
        match (names.as_slice(), l.value) {
            // `MIG Devices/MIG Device` (R450-R470), or `MIG Device` straight under the GPU
            // (later drivers: one section per MIG device, no `MIG Devices` around them).
            (["mig devices"] | [], None) if key == "mig device" => {
                if b.mig.len() >= MAX_MIG_DEVICES {
                    self.diags.push(
                        Diagnostic::error(
                            GP712,
                            format!("more than {MAX_MIG_DEVICES} MIG devices on one GPU"),
                        )
                        .at(l.span, "one too many"),
                    );
                } else {
                    b.mig.push(BTreeMap::new());
                }
            }
            (["mig devices", "mig device", rest @ ..] | ["mig device", rest @ ..], Some(v)) => {
                let path = rest
                    .iter()
                    .copied()
                    .chain([key.as_str()])
                    .collect::<Vec<_>>()
                    .join("/");
                if let (true, Some(m)) = (MIG_KEYS.contains(&path.as_str()), b.mig.last_mut()) {
                    Self::put(&mut self.diags, m, path, v, l.span);
                }
            }
            (_, Some(v)) => {
                let path = names
                    .iter()
                    .copied()
                    .chain([key.as_str()])
                    .collect::<Vec<_>>()
                    .join("/");
                if GPU_KEYS.contains(&path.as_str()) {
                    Self::put(&mut self.diags, &mut b.fields, path, v, l.span);
                }
            }
            _ => {}
        }
        if l.value.is_none() {
            stack.push((l.indent, key));
        }
    }

    fn open_gpu(&mut self, bus: &str, span: Span) {
        if self.blocks.iter().filter(|b| b.span.is_some()).count() >= MAX_GPUS as usize {
            if !self.diags.iter().any(|d| d.code == GP712) {
                self.diags.push(
                    Diagnostic::error(GP712, format!("more than {MAX_GPUS} GPU blocks"))
                        .at(span, "one too many"),
                );
            }
            return;
        }
        if let Some(first) = self
            .blocks
            .iter()
            .find(|b| b.bus == bus && b.span.is_some())
        {
            let d = Diagnostic::error(GP715, format!("GPU {} is listed twice", quoted(bus)))
                .at(span, "second block")
                .with_help("import the output of one `nvidia-smi -q` run, unedited");
            let d = match first.span {
                Some(s) => d.with_related(s, "first block"),
                None => d,
            };
            self.diags.push(d);
        }
        self.blocks.push(Block {
            bus: bus.to_string(),
            span: Some(span),
            ..Block::default()
        });
    }
}

/// Reads the report. `None` when it cannot be used (the diagnostics say why).
pub fn parse(sources: &SourceMap, file: FileId) -> (Option<Report>, Vec<Diagnostic>) {
    let Some(f) = sources.get(file) else {
        return (None, Vec::new());
    };
    let mut r = Reader {
        blocks: Vec::new(),
        header: BTreeMap::new(),
        diags: Vec::new(),
    };
    let mut stack = Vec::new();
    for l in lines(file, &f.text) {
        r.line(&l, &mut stack);
    }
    r.blocks.retain(|b| b.span.is_some());
    if r.blocks.is_empty() && !r.header.contains_key("attached gpus") {
        let first = f.text.lines().next().map_or(0, str::len);
        r.diags.push(
            Diagnostic::error(GP710, "no `Attached GPUs` line and no `GPU <bus id>` block").at(
                Span::new(file, 0, first),
                "expected the output of `nvidia-smi -q`",
            ),
        );
        return (None, r.diags);
    }
    let report = build(&mut r);
    let ok = !r.diags.iter().any(Diagnostic::is_error);
    (report.filter(|_| ok), r.diags)
}

fn build(r: &mut Reader) -> Option<Report> {
    let attached = match r.header.get("attached gpus") {
        None => None,
        Some((v, span)) => match v.parse::<u32>().ok().filter(|n| *n <= MAX_GPUS) {
            Some(n) => Some(n),
            None => {
                r.diags.push(
                    Diagnostic::error(
                        GP712,
                        format!("`Attached GPUs` is {}, not a GPU count", quoted(v)),
                    )
                    .at(*span, format!("expected a number up to {MAX_GPUS}")),
                );
                return None;
            }
        },
    };
    // A report that ends its blocks with `Processes` (every unfiltered one) ends every
    // block so: a block without it was cut.
    let ends = r.blocks.iter().any(|b| b.ended);
    let mut gpus = Vec::new();
    let mut left_out = Vec::new();
    for b in &r.blocks {
        let cut = ends && !b.ended;
        let why = if cut || !b.fields.contains_key("product name") {
            "is cut before its end"
        } else if value(&b.fields, "product name").is_none() {
            "has no product name (N/A): the GPU cannot be told"
        } else {
            ""
        };
        if !why.is_empty() {
            left_out.push(LeftOut {
                gpus: 1,
                reason: format!("the block of GPU {} {why}", quoted(&b.bus)),
            });
            continue;
        }
        if let Some(g) = gpu_facts(&mut r.diags, gpus.len() as u32, b) {
            gpus.push(g);
        }
    }
    let listed = r.blocks.len() as u32;
    match attached {
        Some(n) if n > listed => left_out.push(LeftOut {
            gpus: n - listed,
            reason: format!(
                "`Attached GPUs` is {n} but the output describes {listed} (made with `-i`, or cut)"
            ),
        }),
        Some(n) if n < listed => {
            if let Some((_, span)) = r.header.get("attached gpus") {
                r.diags.push(
                    Diagnostic::error(
                        GP715,
                        format!("`Attached GPUs` is {n} but the output has {listed} GPU blocks"),
                    )
                    .at(*span, "GPU count")
                    .with_help("import the output of one `nvidia-smi -q` run, unedited"),
                );
            }
        }
        _ => {}
    }
    let text = |k: &str| {
        r.header
            .get(k)
            .map(|(v, _)| v.clone())
            .filter(|v| v != "N/A" && !v.is_empty())
    };
    Some(Report {
        snapshot: Snapshot {
            system: SystemInfo {
                driver_version: text("driver version"),
                cuda_version: text("cuda version"),
            },
            gpus,
        },
        attached,
        left_out,
    })
}

fn value<'a>(m: &'a BTreeMap<String, (String, Span)>, k: &str) -> Option<(&'a str, Span)> {
    m.get(k)
        .map(|(v, s)| (v.as_str(), *s))
        .filter(|(v, _)| !v.is_empty() && *v != "N/A" && *v != "[N/A]")
}

/// `81559 MiB` (also `MB`, written by old drivers); GP712 for anything else.
fn mib(diags: &mut Vec<Diagnostic>, v: Option<(&str, Span)>) -> Option<u64> {
    let (s, span) = v?;
    let n = s
        .strip_suffix("MiB")
        .or_else(|| s.strip_suffix("MB"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .filter(|n| *n <= MAX_MIB);
    if n.is_none() {
        diags.push(
            Diagnostic::error(GP712, format!("{} is not a memory size", quoted(s)))
                .at(span, "expected e.g. `81559 MiB`"),
        );
    }
    n
}

fn mig_mode(diags: &mut Vec<Diagnostic>, v: Option<(&str, Span)>) -> Option<bool> {
    let (s, span) = v?;
    match s.to_ascii_lowercase().as_str() {
        "enabled" => Some(true),
        "disabled" => Some(false),
        _ => {
            diags.push(
                Diagnostic::error(
                    GP712,
                    format!("MIG mode {} is neither Enabled nor Disabled", quoted(s)),
                )
                .at(span, "MIG mode"),
            );
            None
        }
    }
}

fn gpu_facts(diags: &mut Vec<Diagnostic>, index: u32, b: &Block) -> Option<GpuFacts> {
    let f = &b.fields;
    let (name, name_at) = value(f, "product name")?;
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        diags.push(
            Diagnostic::error(GP712, "the product name is not one nvidia-smi writes")
                .at(name_at, format!("at most {MAX_NAME} printable characters")),
        );
        return None;
    }
    let bus = value(f, "pci/bus id").map_or(b.bus.as_str(), |(v, _)| v);
    if crate::units::normalize_bus_id(bus).is_none() {
        let at = value(f, "pci/bus id").map_or(b.span, |(_, s)| Some(s));
        let mut d = Diagnostic::error(GP712, format!("{} is not a PCI bus id", quoted(bus)));
        if let Some(s) = at {
            d = d.at(s, "expected e.g. `00000000:18:00.0`");
        }
        diags.push(d);
        return None;
    }
    let pci_device_id = match value(f, "pci/device id") {
        None => None,
        Some((v, span)) => {
            let hex = v.trim_start_matches("0x").trim_start_matches("0X");
            match u32::from_str_radix(hex, 16) {
                Ok(id) if hex.len() <= 8 => Some((id >> 16) as u16),
                _ => {
                    diags.push(
                        Diagnostic::error(GP712, format!("{} is not a PCI device id", quoted(v)))
                            .at(span, "expected e.g. `0x233010DE`"),
                    );
                    return None;
                }
            }
        }
    };
    let current = mig_mode(diags, value(f, "mig mode/current"));
    let pending = mig_mode(diags, value(f, "mig mode/pending"));
    let mig = current.map(|current| MigFacts {
        current,
        pending: pending.unwrap_or(current),
        gpu_instances: mig_instances(diags, b),
    });
    Some(GpuFacts {
        index,
        name: Some(name.to_string()),
        pci_device_id,
        bus_id: Some(bus.to_string()),
        uuid: value(f, "gpu uuid").map(|(v, _)| v.to_string()),
        memory_mib: mib(diags, value(f, "fb memory usage/total")),
        mig,
        nvlinks: Vec::new(),
        numa_node: None,
        cpu_affinity: None,
    })
}

/// The GPU instances of a block's MIG devices (one MIG device per compute instance).
fn mig_instances(diags: &mut Vec<Diagnostic>, b: &Block) -> Vec<GpuInstanceFacts> {
    let mut out: Vec<GpuInstanceFacts> = Vec::new();
    for m in &b.mig {
        let id = |k: &str, diags: &mut Vec<Diagnostic>| {
            let (v, span) = value(m, k)?;
            let n = v.parse::<u32>().ok().filter(|n| *n < 1024);
            if n.is_none() {
                diags.push(
                    Diagnostic::error(GP712, format!("{} is not an instance id", quoted(v)))
                        .at(span, "expected a small number"),
                );
            }
            n
        };
        let Some(gi) = id("gpu instance id", diags) else {
            continue;
        };
        let ci = id("compute instance id", diags);
        GpuInstanceFacts::record(&mut out, gi, ci, || {
            mib(diags, value(m, "fb memory usage/total"))
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Option<Report>, Vec<Diagnostic>) {
        let mut sources = SourceMap::new();
        let id = sources.add("q.txt", text.to_string());
        parse(&sources, id)
    }

    /// Constructed (no published MIG-enabled `-q` text was found whole): the layout of
    /// the `MIG Devices` section as the driver prints it, with a prompt, Windows line
    /// ends and the key column of another driver.
    const MIG: &str = "$ nvidia-smi -q\r\n\r\nAttached GPUs : 1\r\nGPU 00000000:07:00.0\r\n    Product Name      : NVIDIA A100-SXM4-80GB\r\n    MIG Mode\r\n        Current       : Enabled\r\n        Pending       : Enabled\r\n    MIG Devices\r\n        MIG Device\r\n            Index                     : 0\r\n            GPU Instance ID           : 2\r\n            Compute Instance ID       : 0\r\n            Device Attributes\r\n                Shared\r\n                    Multiprocessor count : 42\r\n            FB Memory Usage\r\n                Total                 : 40192 MiB\r\n        MIG Device\r\n            Index                     : 1\r\n            GPU Instance ID           : 2\r\n            Compute Instance ID       : 1\r\n            FB Memory Usage\r\n                Total                 : 40192 MiB\r\n        MIG Device\r\n            Index                     : 2\r\n            GPU Instance ID           : 9\r\n            Compute Instance ID       : 0\r\n            FB Memory Usage\r\n                Total                 : 9728 MiB\r\n    PCI\r\n        Device Id     : 0x20B210DE\r\n        Bus Id        : 00000000:07:00.0\r\n    FB Memory Usage\r\n        Total         : 81920 MiB\r\n    Processes         : None\r\n";

    #[test]
    fn mig_devices_become_gpu_instances_with_their_compute_instances() {
        let (r, d) = read(MIG);
        let r = r.unwrap_or_else(|| panic!("{d:?}"));
        assert!(d.is_empty(), "{d:?}");
        let g = &r.snapshot.gpus[0];
        assert_eq!(
            g.memory_mib,
            Some(81920),
            "the GPU's memory, not a MIG device's"
        );
        assert_eq!(g.pci_device_id, Some(0x20b2));
        let m = g.mig.as_ref().unwrap();
        assert!(m.current && m.pending);
        let gis: Vec<(u32, Option<u64>, usize)> = m
            .gpu_instances
            .iter()
            .map(|gi| (gi.id, gi.memory_mib, gi.compute_instances.len()))
            .collect();
        assert_eq!(gis, vec![(2, Some(40192), 2), (9, Some(9728), 1)]);
    }

    #[test]
    fn keys_are_matched_without_case_or_spacing_and_values_keep_colons() {
        let (r, _) = read(
            "Attached GPUs : 2\nGPU 00000000:18:00.0\n    Product Name : N/A\nGPU 00000000:19:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n",
        );
        let r = r.unwrap();
        assert_eq!(
            (r.snapshot.gpus.len(), r.left_out.len()),
            (1, 1),
            "an N/A product name is left out, not dropped"
        );
        let text = "Attached GPUs : 1\nGPU 00000000:18:00.0\n    product   NAME : NVIDIA H100 80GB HBM3\n    Pci\n        BUS  id : 00000000:18:00.0\n    fb memory usage\n        TOTAL : 81559 MiB\n";
        let (r, d) = read(text);
        let g = &r.unwrap_or_else(|| panic!("{d:?}")).snapshot.gpus[0];
        assert_eq!(g.bus_id.as_deref(), Some("00000000:18:00.0"));
        assert_eq!(g.memory_mib, Some(81559));
    }

    #[test]
    fn unreadable_values_are_gp712_with_a_span() {
        for (from, to) in [
            ("81559 MiB", "99999999999999999999 MiB"),
            ("81559 MiB", "lots"),
            ("00000000:18:00.0\n    fb", "../../x\n    fb"),
        ] {
            let text = "Attached GPUs : 1\nGPU 00000000:18:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n    PCI\n        Bus Id : 00000000:18:00.0\n    fb memory usage\n        Total : 81559 MiB\n"
                .replace(from, to);
            let (r, d) = read(&text);
            assert!(r.is_none(), "{to}");
            assert!(
                d.iter().any(|d| d.code == GP712 && d.span.is_some()),
                "{to}: {d:?}"
            );
        }
        let (r, d) = read("Attached GPUs : 4294967296\n");
        assert!(r.is_none() && d[0].code == GP712);
    }
}
