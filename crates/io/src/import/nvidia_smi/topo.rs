//! `gpuplan import nvidia-smi-topo FILE`: the `nvidia-smi topo -m` matrix.
//!
//! Read: the header (GPU and NIC columns, then `CPU Affinity`, `NUMA Affinity`,
//! `GPU NUMA ID`), one row per GPU and per NIC, and the optional `NIC Legend`. Lines
//! before the header (a shell prompt, the command) and after the matrix (the legend) are
//! skipped. Cells are `X`, `NV#`, `PIX`, `PXB`, `PHB`, `NODE`, `SYS` (`SOC` in old
//! drivers).
//!
//! Derived: NVLink domains (connected components over `NV#` cells), NUMA groups (a GPU's
//! `NUMA Affinity`; a NIC joins the NUMA node of the GPUs it reaches without `SYS`), PCIe
//! switches (components over `PIX`/`PXB`, with at least one GPU).
//!
//! Strictness: every GPU row must be complete (a missing row or cell is `GP711`, an
//! unreadable cell `GP712`): a GPU's links cannot be known otherwise. NIC rows repeat what
//! the GPU rows say (plus NIC-to-NIC relations), so a missing or cut NIC row is a `GP713`
//! warning and the row is not used.

use crate::diag::Diagnostic;
use crate::discover::derive::{self, PcieGroup, UnionFind};
use crate::discover::{GP710, GP711, GP712, GP713, GP714, GpuFacts, Inventory, Naming, NicFacts};
use crate::source::{FileId, SourceMap, Span};

/// One matrix cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Link {
    Itself,
    /// NVLink with this many links.
    Nv(u32),
    Pix,
    Pxb,
    Phb,
    Node,
    Sys,
}

impl Link {
    fn parse(s: &str) -> Option<Link> {
        Some(match s {
            "X" => Link::Itself,
            "PIX" => Link::Pix,
            "PXB" => Link::Pxb,
            "PHB" => Link::Phb,
            "NODE" => Link::Node,
            "SYS" | "SOC" => Link::Sys,
            _ => {
                let n = s.strip_prefix("NV")?;
                if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                Link::Nv(n.parse().ok()?)
            }
        })
    }
    fn pcie_switch(self) -> bool {
        matches!(self, Link::Pix | Link::Pxb)
    }
}

/// The matrix as read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Matrix {
    pub gpus: usize,
    /// NIC column names (`NIC0`, `mlx4_0`).
    pub nics: Vec<String>,
    /// Per GPU: its cells (GPUs then NICs), CPU affinity, NUMA affinity.
    pub gpu_rows: Vec<GpuRow>,
    /// Per NIC: its cells, when its row was complete.
    pub nic_rows: Vec<Option<Vec<Link>>>,
    /// `NIC0` -> `mlx5_0` from the NIC legend.
    pub nic_devices: Vec<Option<String>>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct GpuRow {
    pub cells: Vec<Link>,
    pub cpu_affinity: Option<String>,
    pub numa: Option<u32>,
}

/// Splits `line` (starting at byte `base`) into cells with their offsets. `header`: cells
/// are separated by tabs or by two or more spaces (header names contain single spaces);
/// otherwise by any whitespace (no cell of a row contains a space).
fn cells(line: &str, base: usize, header: bool) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() {
            let b = bytes[i];
            let sep = if header {
                b == b'\t'
                    || (b == b' ' && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace()))
            } else {
                b.is_ascii_whitespace()
            };
            if sep {
                break;
            }
            i += 1;
        }
        if i > start {
            out.push((base + start, line[start..i].trim_end()));
        }
    }
    out
}

const AFFINITY: [&str; 3] = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"];

struct Reader<'a> {
    file: FileId,
    text: &'a str,
    diags: Vec<Diagnostic>,
}

impl Reader<'_> {
    fn span(&self, offset: usize, len: usize) -> Span {
        Span::new(self.file, offset, len)
    }
    fn err(&mut self, code: &'static str, msg: String, at: Span, label: &str) {
        self.diags.push(Diagnostic::error(code, msg).at(at, label));
    }
}

/// Lines with their byte offsets.
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut off = 0;
    for l in text.split_inclusive('\n') {
        out.push((off, l.trim_end_matches(['\n', '\r'])));
        off += l.len();
    }
    out
}

/// `nvidia-smi topo -m` underlines its header with terminal escapes (`ESC[4m` ...
/// `ESC[0m`), also when its output goes to a file (recorded with driver 580.159,
/// `tests/fixtures/discover/fake-nvml/dev-h100-topo.txt`). Each escape sequence is read as
/// as many spaces, so offsets, and the spans of diagnostics, stay those of the file.
fn blank_escapes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\x1b') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut b = text.as_bytes().to_vec();
    let mut i = 0;
    while i < b.len() {
        match escape_len(&b[i..]) {
            Some(n) => {
                b[i..i + n].fill(b' ');
                i += n;
            }
            None => i += 1,
        }
    }
    // Only ASCII bytes were replaced by ASCII: still UTF-8.
    String::from_utf8(b).map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
}

/// Length of the CSI escape sequence (`ESC [` parameters, intermediates, final byte) at
/// the start of `b`, if one is there.
fn escape_len(b: &[u8]) -> Option<usize> {
    if !b.starts_with(b"\x1b[") {
        return None;
    }
    let params = b[2..]
        .iter()
        .take_while(|c| (0x30..=0x3f).contains(*c))
        .count();
    let inter = b[2 + params..]
        .iter()
        .take_while(|c| (0x20..=0x2f).contains(*c))
        .count();
    let end = 2 + params + inter;
    b.get(end)
        .filter(|c| (0x40..=0x7e).contains(*c))
        .map(|_| end + 1)
}

/// Reads the matrix; `None` when an error makes it unusable (diagnostics say why).
pub(crate) fn parse(sources: &SourceMap, file: FileId) -> (Option<Matrix>, Vec<Diagnostic>) {
    let Some(f) = sources.get(file) else {
        return (None, Vec::new());
    };
    let text = blank_escapes(&f.text);
    let mut r = Reader {
        file,
        text: &text,
        diags: Vec::new(),
    };
    let m = read(&mut r);
    let ok = !r.diags.iter().any(Diagnostic::is_error);
    (m.filter(|_| ok), r.diags)
}

/// The header line: its index in `all`, its cells, and how many of them are devices
/// (GPUs first, then NICs) and GPUs.
type Header<'a> = (usize, Vec<(usize, &'a str)>, usize, usize);

fn read_header<'a>(r: &mut Reader, all: &[(usize, &'a str)]) -> Option<Header<'a>> {
    let Some(h) = all.iter().position(|(_, l)| {
        l.starts_with([' ', '\t']) && cells(l, 0, true).first().is_some_and(|c| c.1 == "GPU0")
    }) else {
        let len = all.first().map_or(0, |l| l.1.len());
        r.err(
            GP710,
            "no `nvidia-smi topo -m` matrix found".into(),
            r.span(0, len),
            "expected a header line of columns `GPU0 GPU1 ... CPU Affinity`",
        );
        return None;
    };
    let (hoff, hline) = all[h];
    let header = cells(hline, hoff, true);
    let ndev = header
        .iter()
        .position(|c| AFFINITY.contains(&c.1))
        .unwrap_or(header.len());
    let mut gpus = 0;
    for (i, &(off, name)) in header[..ndev].iter().enumerate() {
        if name.starts_with("GPU") {
            if i != gpus || name != format!("GPU{gpus}") {
                r.err(
                    GP712,
                    format!("GPU column `{name}` out of order"),
                    r.span(off, name.len()),
                    &format!("expected `GPU{gpus}`"),
                );
                return None;
            }
            gpus += 1;
        }
    }
    Some((h, header, ndev, gpus))
}

fn read(r: &mut Reader) -> Option<Matrix> {
    let all = lines(r.text);
    let (h, header, ndev, gpus) = read_header(r, &all)?;
    let affinity: Vec<&str> = header[ndev..].iter().map(|c| c.1).collect();
    let names: Vec<&str> = header[..ndev].iter().map(|c| c.1).collect();
    let mut m = Matrix {
        gpus,
        nics: names[gpus..].iter().map(|s| s.to_string()).collect(),
        gpu_rows: vec![GpuRow::default(); gpus],
        nic_rows: vec![None; ndev - gpus],
        nic_devices: vec![None; ndev - gpus],
    };
    let mut seen = vec![false; ndev];
    let mut end: Option<Span> = None;
    let mut idx = h + 1;
    while idx < all.len() {
        let (off, line) = all[idx];
        idx += 1;
        let row = cells(line, off, false);
        let Some(&(loff, label)) = row.first() else {
            break;
        };
        let Some(d) = names.iter().position(|n| *n == label) else {
            end = Some(r.span(loff, line.trim().len()));
            break;
        };
        if seen[d] {
            r.err(
                GP712,
                format!("`{label}` has two rows"),
                r.span(loff, label.len()),
                "second row",
            );
            continue;
        }
        seen[d] = true;
        let line_end = r.span(off + line.len(), 0);
        if d < gpus {
            read_gpu_row(r, &mut m, d, &row[1..], ndev, &affinity, line_end);
        } else {
            m.nic_rows[d - gpus] = read_nic_row(r, label, &row[1..], ndev);
        }
    }
    read_nic_legend(&all[idx.saturating_sub(1)..], &mut m);
    report_missing_rows(r, &header[..ndev], gpus, &seen, end);
    check_symmetry(r, &m, &header);
    Some(m)
}

/// A missing GPU row is an error (its links are unknown); missing NIC rows are one
/// warning (only NIC-to-NIC relations are lost).
fn report_missing_rows(
    r: &mut Reader,
    devices: &[(usize, &str)],
    gpus: usize,
    seen: &[bool],
    end: Option<Span>,
) {
    for &(off, name) in devices[..gpus]
        .iter()
        .zip(seen)
        .filter(|(_, s)| !**s)
        .map(|(d, _)| d)
    {
        let mut diag = Diagnostic::error(
            GP711,
            format!("the matrix has no row for {name}: the input is truncated"),
        )
        .at(r.span(off, name.len()), "column without a row")
        .with_help("import the complete output of `nvidia-smi topo -m`");
        if let Some(e) = end {
            diag = diag.with_related(e, "the matrix stops here");
        }
        r.diags.push(diag);
    }
    let missing: Vec<(usize, &str)> = (gpus..devices.len())
        .filter(|&d| !seen[d])
        .map(|d| devices[d])
        .collect();
    let Some(&(off, first)) = missing.first() else {
        return;
    };
    if r.diags.iter().any(Diagnostic::is_error) {
        return;
    }
    let list = missing.iter().map(|m| m.1).collect::<Vec<_>>().join(", ");
    r.diags.push(
        Diagnostic::warning(
            GP713,
            format!("no rows for {list}: NIC-to-NIC relations are unknown"),
        )
        .at(r.span(off, first.len()), "column without a row")
        .with_help(
            "GPU-to-NIC relations are read from the GPU rows; nothing else depends on the NIC rows",
        ),
    );
}

/// GPU `g`'s row: its links to the `ndev` devices (the diagonal `X`), then its
/// `affinity` columns. A row cut short is reported at `line_end` and not used.
fn read_gpu_row(
    r: &mut Reader,
    m: &mut Matrix,
    g: usize,
    row: &[(usize, &str)],
    ndev: usize,
    affinity: &[&str],
    line_end: Span,
) {
    let links = gpu_links(r, g, row, ndev);
    if row.len() < ndev {
        r.err(
            GP711,
            format!(
                "GPU{g}'s row has {} of {ndev} cells: the input is truncated",
                row.len()
            ),
            line_end,
            "the row ends here",
        );
        return;
    }
    let rest: Vec<(usize, &str)> = row[ndev..].to_vec();
    let required = affinity.iter().filter(|a| **a != "GPU NUMA ID").count();
    if rest.len() < required {
        r.err(
            GP711,
            format!(
                "GPU{g}'s row lacks its {} value(s): the input is truncated",
                affinity[rest.len()..required].join(" and ")
            ),
            line_end,
            "the row ends here",
        );
        return;
    }
    let mut row_out = GpuRow {
        cells: links,
        ..GpuRow::default()
    };
    read_affinity(r, g, affinity, &rest, &mut row_out);
    m.gpu_rows[g] = row_out;
}

/// The link cells of GPU `g`'s row that read; the others are reported.
fn gpu_links(r: &mut Reader, g: usize, row: &[(usize, &str)], ndev: usize) -> Vec<Link> {
    let mut links = Vec::with_capacity(ndev);
    for (k, &(off, cell)) in row.iter().take(ndev).enumerate() {
        match Link::parse(cell) {
            Some(Link::Itself) if k != g => r.err(
                GP712,
                format!("`X` off the diagonal in GPU{g}'s row"),
                r.span(off, cell.len()),
                "only a GPU's own column is `X`",
            ),
            Some(l) if k == g && l != Link::Itself => r.err(
                GP712,
                format!("GPU{g}'s own column is not `X`"),
                r.span(off, cell.len()),
                "expected `X`",
            ),
            Some(l) => links.push(l),
            None => r.err(
                GP712,
                format!("cannot read `{cell}` in GPU{g}'s row"),
                r.span(off, cell.len()),
                "expected X, NV#, PIX, PXB, PHB, NODE or SYS",
            ),
        }
    }
    links
}

/// The affinity values after GPU `g`'s links: CPU and NUMA affinity (`N/A`: unknown).
fn read_affinity(
    r: &mut Reader,
    g: usize,
    affinity: &[&str],
    values: &[(usize, &str)],
    row_out: &mut GpuRow,
) {
    for (name, &(off, v)) in affinity.iter().zip(values) {
        let known = v != "N/A";
        let parsed = crate::units::parse_index_set(v);
        match (*name, known, parsed) {
            (_, false, _) => {}
            ("CPU Affinity", true, Ok(_)) => row_out.cpu_affinity = Some(v.to_string()),
            ("NUMA Affinity", true, Ok(ids)) => row_out.numa = (ids.len() == 1).then(|| ids[0]),
            (_, true, Ok(_)) => {}
            (_, true, Err(_)) => r.err(
                GP712,
                format!("cannot read {name} `{v}` of GPU{g}"),
                r.span(off, v.len()),
                "expected an index set or N/A",
            ),
        }
    }
}

fn read_nic_row(
    r: &mut Reader,
    label: &str,
    row: &[(usize, &str)],
    ndev: usize,
) -> Option<Vec<Link>> {
    let links: Vec<Option<Link>> = row.iter().take(ndev).map(|c| Link::parse(c.1)).collect();
    if links.len() == ndev && links.iter().all(Option::is_some) {
        return Some(links.into_iter().flatten().collect());
    }
    let bad = links.iter().position(Option::is_none);
    let (off, text) = match bad {
        Some(i) => (row[i].0, row[i].1),
        None => row.last().map_or((0, ""), |c| (c.0, c.1)),
    };
    r.diags.push(
        Diagnostic::warning(
            GP713,
            format!("{label}'s row is incomplete and is not used"),
        )
        .at(
            r.span(off, text.len()),
            if bad.is_some() {
                "cannot read this cell"
            } else {
                "the row ends here"
            },
        )
        .with_help(
            "GPU-to-NIC relations are read from the GPU rows; only NIC-to-NIC relations are lost",
        ),
    );
    None
}

/// `NIC Legend:` then lines `  NIC0: mlx5_0`.
fn read_nic_legend(rest: &[(usize, &str)], m: &mut Matrix) {
    let Some(start) = rest.iter().position(|(_, l)| l.trim() == "NIC Legend:") else {
        return;
    };
    for (_, l) in &rest[start + 1..] {
        if let Some((k, v)) = l.trim().split_once(':') {
            if let Some(i) = m.nics.iter().position(|n| n == k.trim()) {
                m.nic_devices[i] = Some(v.trim().to_string());
            }
        }
    }
}

fn check_symmetry(r: &mut Reader, m: &Matrix, header: &[(usize, &str)]) {
    for (a, row_a) in m.gpu_rows.iter().enumerate() {
        for (b, &(off, name)) in header.iter().enumerate().take(m.gpus).skip(a + 1) {
            let (x, y) = (row_a.cells.get(b), m.gpu_rows[b].cells.get(a));
            if let (Some(x), Some(y)) = (x, y) {
                if x != y {
                    r.err(
                        GP712,
                        format!("GPU{a} -> GPU{b} is {x:?} but GPU{b} -> GPU{a} is {y:?}"),
                        r.span(off, name.len()),
                        "the matrix is not symmetric",
                    );
                }
            }
        }
    }
}

/// The node described by a matrix.
// A failed derivation returns the one `Diagnostic` that explains it; boxing it buys
// nothing (as `discover`'s derivation).
#[allow(clippy::result_large_err)]
pub(crate) fn to_inventory(m: &Matrix, naming: &Naming) -> Result<Inventory, Diagnostic> {
    let Some(model_name) = &naming.model else {
        return Err(Diagnostic::error(
            GP714,
            "`nvidia-smi topo -m` does not say which GPU model this is",
        )
        .with_help(nv_hint(m)));
    };
    let model = derive::ModelMatch::named(model_name);
    let gpus: Vec<GpuFacts> = m
        .gpu_rows
        .iter()
        .enumerate()
        .map(|(i, row)| GpuFacts {
            index: i as u32,
            numa_node: row.numa,
            cpu_affinity: row.cpu_affinity.clone(),
            ..GpuFacts::default()
        })
        .collect();
    let mut pairs = Vec::new();
    let mut counts = std::collections::BTreeSet::new();
    for (a, row) in m.gpu_rows.iter().enumerate() {
        for (b, l) in row.cells.iter().enumerate().take(m.gpus) {
            if let Link::Nv(n) = l {
                pairs.push((a, b));
                counts.insert(*n);
            }
        }
    }
    let mut numa = derive::numa_groups(&gpus);
    let mut nics = Vec::new();
    for (j, name) in m.nics.iter().enumerate() {
        let near: std::collections::BTreeSet<u32> = m
            .gpu_rows
            .iter()
            .filter(|row| row.cells.get(m.gpus + j).is_some_and(|l| *l != Link::Sys))
            .filter_map(|row| row.numa)
            .collect();
        let numa_node = (near.len() == 1).then(|| *near.iter().next().unwrap_or(&0));
        if let Some(n) = numa_node {
            if let Some(g) = numa.iter_mut().find(|g| g.id == n) {
                g.nics.push(j as u32);
            }
        }
        nics.push(NicFacts {
            name: name.clone(),
            device: m.nic_devices[j].clone(),
            numa_node,
        });
    }
    let mut notes = Vec::new();
    if gpus.iter().any(|g| g.numa_node.is_none()) && !numa.is_empty() {
        notes.push(
            "some GPUs have no single NUMA node (N/A or several) and are in no `numa` group".into(),
        );
    }
    let class = naming
        .class
        .clone()
        .unwrap_or_else(|| format!("{}-x{}", model.name, m.gpus));
    Ok(Inventory {
        format_version: crate::discover::FORMAT_VERSION,
        source: "nvidia-smi-topo",
        node: naming.node.clone(),
        class,
        system: Default::default(),
        model,
        nvlink_domains: derive::nvlink_domains_from_pairs(m.gpus, &pairs),
        nvlink_links: (counts.len() == 1).then(|| *counts.iter().next().unwrap_or(&0)),
        numa: std::mem::take(&mut numa),
        pcie_switches: pcie_groups(m),
        nics,
        mig_names: Vec::new(),
        gpus,
        notes,
    })
}

/// GPUs and NICs joined by `PIX`/`PXB`; groups with a GPU and at least two members.
fn pcie_groups(m: &Matrix) -> Vec<PcieGroup> {
    let n = m.gpus + m.nics.len();
    let mut uf = UnionFind::new(n);
    for (a, row) in m.gpu_rows.iter().enumerate() {
        for (b, l) in row.cells.iter().enumerate() {
            if l.pcie_switch() {
                uf.union(a, b);
            }
        }
    }
    for (j, row) in m.nic_rows.iter().enumerate() {
        for (b, l) in row.iter().flatten().enumerate() {
            if l.pcie_switch() {
                uf.union(m.gpus + j, b);
            }
        }
    }
    uf.groups(n, 2)
        .into_iter()
        .filter(|g| g[0] < m.gpus)
        .enumerate()
        .map(|(k, g)| PcieGroup {
            name: format!("pcie{k}"),
            gpus: g
                .iter()
                .filter(|&&i| i < m.gpus)
                .map(|&i| i as u32)
                .collect(),
            nics: g
                .iter()
                .filter(|&&i| i >= m.gpus)
                .map(|&i| (i - m.gpus) as u32)
                .collect(),
        })
        .collect()
}

fn nv_hint(m: &Matrix) -> String {
    let nv = m
        .gpu_rows
        .iter()
        .flat_map(|r| &r.cells)
        .find_map(|l| if let Link::Nv(n) = l { Some(*n) } else { None });
    let what = match nv {
        Some(n) => format!("the GPUs share NV{n} links; "),
        None => "no NVLink; ".into(),
    };
    format!(
        "{what}pass `--model` with a catalog id (docs/catalog.md), e.g. `--model h100-sxm5-80gb`, or a model you declare in another file"
    )
}

/// Reads `FILE` and describes the node. Errors leave no inventory.
pub fn import(
    sources: &SourceMap,
    file: FileId,
    naming: &Naming,
) -> (Option<Inventory>, Vec<Diagnostic>) {
    let (m, mut diags) = parse(sources, file);
    let Some(m) = m else {
        return (None, diags);
    };
    match to_inventory(&m, naming) {
        Ok(inv) => (Some(inv), diags),
        Err(d) => {
            diags.push(d);
            (None, diags)
        }
    }
}
