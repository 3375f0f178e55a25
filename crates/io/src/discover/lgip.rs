//! `gpuplan import mig-lgip FILE`: the `nvidia-smi mig -lgip` table of GPU-instance
//! profiles, and the catalog check shared with `discover`.
//!
//! A profile row is `| GPU  MIG <name>  <ID>  <free>/<total>  <memory GiB>  ... |`; the
//! second line of each profile (CE, JPEG, OFA) and the borders are skipped. A row that
//! does not end with `|` was cut: it is reported (`GP713`) and not used. A table whose
//! last line is not a closing border was cut too: profiles after it are unknown, so
//! catalog profiles missing from it are not reported as missing.
//!
//! The check compares each profile, by its ID, with the catalog model's: another name is
//! a driver rename (`GP720`, pinned with `gpu-model { mig-name }` in the output), other
//! usable memory is `GP721`, an ID the catalog does not know (or a catalog profile a
//! complete table lacks) is `GP722`.

use super::{GP710, GP713, GP714, GP720, GP721, GP722};
use crate::catalog::{self, GpuSpec};
use crate::diag::Diagnostic;
use crate::source::{FileId, SourceMap, Span};
use serde::Serialize;
use std::fmt::Write;

/// A profile as the driver reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObservedProfile {
    pub id: u32,
    pub name: String,
    pub memory_gib: Option<f64>,
    #[serde(skip)]
    pub span: Option<Span>,
}

/// One profile of the table compared with the catalog.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub gpu: u32,
    #[serde(flatten)]
    pub observed: ObservedProfile,
    pub catalog_name: Option<&'static str>,
    pub catalog_memory_gib: Option<f64>,
}

/// What `import mig-lgip` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LgipReport {
    pub format_version: &'static str,
    pub source: &'static str,
    /// Catalog models the profiles were compared with (several when they cannot be told
    /// apart, e.g. H200 SXM and NVL).
    pub models: Vec<&'static str>,
    pub complete: bool,
    pub profiles: Vec<Row>,
    /// (catalog name, driver name) pins.
    pub mig_names: Vec<(String, String)>,
}

/// Compares observed profiles with a catalog model: the `mig-name` pins to write and the
/// differences as warnings.
pub(crate) fn compare(
    spec: &GpuSpec,
    observed: &[ObservedProfile],
) -> (Vec<(String, String)>, Vec<Diagnostic>) {
    let mut pins: Vec<(String, String)> = Vec::new();
    let mut diags = Vec::new();
    let Some(mig) = spec.mig else {
        return (pins, diags);
    };
    let mut seen = std::collections::BTreeSet::new();
    for o in observed {
        if !seen.insert((o.id, o.name.clone())) {
            continue;
        }
        let Some(cat) = mig.profiles.iter().find(|p| p.id == o.id) else {
            let mut d = Diagnostic::warning(
                GP722,
                format!(
                    "profile `{}` (ID {}) is not in the catalog for {}",
                    o.name, o.id, spec.id
                ),
            )
            .with_help("gpuplan cannot plan with it; report it so the catalog can learn it");
            if let Some(s) = o.span {
                d = d.at(s, "unknown profile ID");
            }
            diags.push(d);
            continue;
        };
        if cat.name != o.name {
            let mut d = Diagnostic::warning(
                GP720,
                format!("the driver calls {} `{}`; the catalog calls it `{}`", spec.id, o.name, cat.name),
            )
            .with_help(format!(
                "pin the driver's name so rendered resource names match the device plugin: `gpu-model \"{}\" {{ mig-name \"{}\" driver=\"{}\" }}` (the output has it)",
                spec.id, cat.name, o.name
            ));
            if let Some(s) = o.span {
                d = d.at(s, "driver name");
            }
            diags.push(d);
            if !pins.iter().any(|(c, _)| c == cat.name) {
                pins.push((cat.name.to_string(), o.name.clone()));
            }
        }
        // A value gpuplan knows for some driver (catalog::memory) is not news.
        if let Some(m) = o
            .memory_gib
            .filter(|m| !crate::catalog::memory::is_known_gib(mig, cat, *m))
        {
            let mut d = Diagnostic::warning(
                GP721,
                format!(
                    "`{}` on {} has {m:.2} GiB usable; the catalog says {:.2} GiB{}",
                    o.name,
                    spec.id,
                    cat.memory_gib,
                    if cat.memory_observed { "" } else { " (derived, not observed)" }
                ),
            )
            .with_help("right-sizing uses the catalog value; report the difference so the catalog can be corrected");
            if let Some(s) = o.span {
                d = d.at(s, "usable memory");
            }
            diags.push(d);
        }
    }
    (pins, diags)
}

/// One line of the table: the line without its end, its byte offset in the file, and
/// its trimmed text.
struct Line<'t> {
    line: &'t str,
    base: usize,
    t: &'t str,
}

impl Line<'_> {
    /// Byte offset of the first non-blank character.
    fn start(&self) -> usize {
        self.base + (self.line.len() - self.line.trim_start().len())
    }
}

/// Reads the table; `None` when no profile row was found.
pub(crate) fn parse(
    sources: &SourceMap,
    file: FileId,
) -> (Vec<(u32, ObservedProfile)>, bool, Vec<Diagnostic>) {
    let Some(f) = sources.get(file) else {
        return (Vec::new(), false, Vec::new());
    };
    let text: &str = &f.text;
    let mut rows = Vec::new();
    let mut diags = Vec::new();
    let mut last_table_line: Option<(usize, &str)> = None;
    let mut off = 0;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        let l = Line {
            line,
            base: off,
            t: line.trim(),
        };
        off += raw.len();
        if l.t.starts_with('|') || l.t.starts_with('+') {
            last_table_line = Some((l.start(), l.t));
        }
        let Some(body) = l.t.strip_prefix('|') else {
            continue;
        };
        let toks: Vec<&str> = body.split_whitespace().collect();
        let is_row =
            toks.len() >= 2 && toks[0].bytes().all(|b| b.is_ascii_digit()) && toks[1] == "MIG";
        if !is_row {
            continue;
        }
        match profile_row(file, &l, &toks) {
            Some(r) => rows.push(r),
            None => diags.push(
                Diagnostic::warning(
                    GP713,
                    "this profile row is cut or unreadable and is not used",
                )
                .at(
                    Span::new(file, l.start(), l.t.len()),
                    "expected `| GPU MIG <name> <ID> <free>/<total> <GiB> ... |`",
                )
                .with_help("import the complete output of `nvidia-smi mig -lgip`"),
            ),
        }
    }
    let complete = last_table_line.is_some_and(|(_, l)| is_closing_border(l));
    diags.extend(table_problem(
        file,
        text,
        rows.is_empty(),
        complete,
        last_table_line,
    ));
    (rows, complete, diags)
}

/// A profile row's GPU and profile; `None` when the row is cut or unreadable.
fn profile_row(file: FileId, l: &Line, toks: &[&str]) -> Option<(u32, ObservedProfile)> {
    if !l.t.ends_with('|') || toks.len() < 7 {
        return None;
    }
    let gpu: u32 = toks[0].parse().ok()?;
    let name = toks[2].to_string();
    let id: u32 = toks[3].parse().ok()?;
    let (free, total) = toks[4].split_once('/')?;
    free.parse::<u32>().ok()?;
    total.parse::<u32>().ok()?;
    let mem: f64 = toks[5].parse().ok()?;
    let name_at = l.line.find(&name).map_or(l.start(), |i| l.base + i);
    Some((
        gpu,
        ObservedProfile {
            id,
            memory_gib: Some(mem),
            span: Some(Span::new(file, name_at, name.len())),
            name,
        },
    ))
}

/// `+-----+`: the border that closes a complete table.
fn is_closing_border(l: &str) -> bool {
    l.len() >= 2
        && l.starts_with('+')
        && l.ends_with('+')
        && l[1..l.len() - 1].bytes().all(|b| b == b'-')
}

/// GP710 for a text without profile rows; GP713 for a table cut after its last line
/// (`last`: its offset and text).
fn table_problem(
    file: FileId,
    text: &str,
    no_rows: bool,
    complete: bool,
    last: Option<(usize, &str)>,
) -> Option<Diagnostic> {
    if no_rows {
        return Some(
            Diagnostic::error(GP710, "no `nvidia-smi mig -lgip` profile rows found").at(
                Span::new(file, 0, text.lines().next().map_or(0, str::len)),
                "expected rows like `|   0  MIG 1g.10gb  19  7/7  9.75 ... |`",
            ),
        );
    }
    let (at, l) = last.filter(|_| !complete)?;
    Some(
        Diagnostic::warning(
            GP713,
            "the table is cut: profiles after the last complete row are unknown",
        )
        .at(Span::new(file, at, l.len()), "the table stops here")
        .with_help("import the complete output of `nvidia-smi mig -lgip` to compare every profile"),
    )
}

/// Catalog models whose profiles best match the rows: most (ID, name) matches, then
/// most memory matches.
fn candidates(rows: &[(u32, ObservedProfile)]) -> Vec<&'static GpuSpec> {
    let score = |spec: &GpuSpec| -> (usize, usize) {
        let Some(mig) = spec.mig else { return (0, 0) };
        let mut names = 0;
        let mut mem = 0;
        for (_, o) in rows {
            if let Some(p) = mig
                .profiles
                .iter()
                .find(|p| p.id == o.id && p.name == o.name)
            {
                names += 1;
                if o.memory_gib
                    .is_some_and(|m| (m - p.memory_gib).abs() <= 0.005)
                {
                    mem += 1;
                }
            }
        }
        (names, mem)
    };
    let best = catalog::all().iter().map(score).max().unwrap_or((0, 0));
    if best.0 == 0 {
        return Vec::new();
    }
    catalog::all().iter().filter(|s| score(s) == best).collect()
}

/// Reads the table, compares it with the catalog and returns the report.
pub fn import(
    sources: &SourceMap,
    file: FileId,
    model: Option<&str>,
) -> (Option<LgipReport>, Vec<Diagnostic>) {
    let (rows, complete, mut diags) = parse(sources, file);
    if rows.is_empty() {
        return (None, diags);
    }
    let models: Vec<&'static GpuSpec> = match model {
        Some(m) => match catalog::lookup(m).filter(|s| s.mig.is_some()) {
            Some(s) => vec![s],
            None => {
                diags.push(
                    Diagnostic::error(GP714, format!("`{m}` is not a MIG-capable catalog model"))
                        .with_help("see docs/catalog.md for the catalog ids"),
                );
                return (None, diags);
            }
        },
        None => candidates(&rows),
    };
    if models.is_empty() {
        diags.push(
            Diagnostic::error(GP714, "no catalog model has these MIG profiles")
                .with_help("pass `--model` with the catalog id of the GPU (docs/catalog.md)"),
        );
        return (None, diags);
    }
    let observed: Vec<ObservedProfile> = rows.iter().map(|(_, o)| o.clone()).collect();
    let (pins, d) = compare(models[0], &observed);
    diags.extend(d);
    if complete {
        if let Some(mig) = models[0].mig {
            for p in mig
                .profiles
                .iter()
                .filter(|p| !observed.iter().any(|o| o.id == p.id))
            {
                diags.push(Diagnostic::warning(GP722, format!("the driver does not offer catalog profile `{}` (ID {}) of {}", p.name, p.id, models[0].id))
                    .with_help("plans that use it will fail on this driver; restrict profiles with `mig { allow ... }`"));
            }
        }
    }
    let spec = models[0].mig;
    let profiles = rows
        .into_iter()
        .map(|(gpu, o)| {
            let cat = spec.and_then(|m| m.profiles.iter().find(|p| p.id == o.id));
            Row {
                gpu,
                catalog_name: cat.map(|p| p.name),
                catalog_memory_gib: cat.map(|p| p.memory_gib),
                observed: o,
            }
        })
        .collect();
    let report = LgipReport {
        format_version: super::FORMAT_VERSION,
        source: "mig-lgip",
        models: models.iter().map(|m| m.id).collect(),
        complete,
        profiles,
        mig_names: pins,
    };
    (Some(report), diags)
}

/// KDL: the comparison as comments, then one `gpu-model` per candidate model with the
/// `mig-name` pins (a `gpu-model` with a catalog id refines that model).
pub fn render(r: &LgipReport, header: &str) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "// {}", crate::fmt::comment(line));
    }
    let _ = writeln!(
        s,
        "// {} profile row(s){}; compared with {}",
        r.profiles.len(),
        if r.complete {
            ""
        } else {
            " (the table is cut)"
        },
        r.models.join(" and ")
    );
    if r.models.len() > 1 {
        let _ = writeln!(
            s,
            "// (these models have the same profiles; pass --model to keep one)"
        );
    }
    let _ = writeln!(s, "//\n// GPU  profile       ID  GiB      catalog");
    for p in &r.profiles {
        let status = match (p.catalog_name, p.catalog_memory_gib) {
            (None, _) => "unknown ID".to_string(),
            (Some(n), _) if n != p.observed.name => format!("renamed from {n}"),
            (Some(_), Some(m)) if p.observed.memory_gib.is_some_and(|o| (o - m).abs() > 0.005) => {
                format!("same name, catalog {m:.2} GiB")
            }
            _ => "same".into(),
        };
        let _ = writeln!(
            s,
            "// {:<4} {:<13} {:<3} {:<8} {status}",
            p.gpu,
            crate::fmt::comment(&p.observed.name),
            p.observed.id,
            p.observed
                .memory_gib
                .map(|m| format!("{m:.2}"))
                .unwrap_or_default()
        );
    }
    s.push('\n');
    for m in &r.models {
        if r.mig_names.is_empty() {
            let _ = writeln!(s, "gpu-model {}", super::kdl::quote(m));
            continue;
        }
        let _ = writeln!(s, "gpu-model {} {{", super::kdl::quote(m));
        for (c, d) in &r.mig_names {
            let _ = writeln!(
                s,
                "    mig-name {} driver={}",
                super::kdl::quote(c),
                super::kdl::quote(d)
            );
        }
        s.push_str("}\n");
    }
    crate::fmt::generated(&s).unwrap_or(s)
}
