//! `gpuplan import mig-lgip FILE`: the `nvidia-smi mig -lgip` table of GPU-instance
//! profiles ([`super::mig`] reads it) checked against the catalog
//! ([`crate::discover::profiles`], shared with `discover`), as a [`Document`].
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

use super::mig::parse_lgip;
use crate::catalog::{self, GpuSpec};
use crate::diag::Diagnostic;
use crate::discover::profiles::{ObservedProfile, compare};
use crate::discover::{GP714, GP722};
use crate::import::doc::{Document, GpuModel, Item};
use crate::source::{FileId, SourceMap};
use serde::Serialize;

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
    let (rows, complete, mut diags) = parse_lgip(sources, file);
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
        format_version: crate::discover::FORMAT_VERSION,
        source: "mig-lgip",
        models: models.iter().map(|m| m.id).collect(),
        complete,
        profiles,
        mig_names: pins,
    };
    (Some(report), diags)
}

/// The comparison as comments, then one `gpu-model` per candidate model with the
/// `mig-name` pins (a `gpu-model` with a catalog id refines that model).
pub(crate) fn document(r: &LgipReport, header: &str) -> Document {
    let mut d = Document::default();
    d.comments(header);
    d.comment(format!(
        "{} profile row(s){}; compared with {}",
        r.profiles.len(),
        if r.complete {
            ""
        } else {
            " (the table is cut)"
        },
        r.models.join(" and ")
    ));
    if r.models.len() > 1 {
        d.comment("(these models have the same profiles; pass --model to keep one)");
    }
    d.comment("");
    d.comment("GPU  profile       ID  GiB      catalog");
    for p in &r.profiles {
        let status = match (p.catalog_name, p.catalog_memory_gib) {
            (None, _) => "unknown ID".to_string(),
            (Some(n), _) if n != p.observed.name => format!("renamed from {n}"),
            (Some(_), Some(m)) if p.observed.memory_gib.is_some_and(|o| (o - m).abs() > 0.005) => {
                format!("same name, catalog {m:.2} GiB")
            }
            _ => "same".into(),
        };
        d.comment(format!(
            "{:<4} {:<13} {:<3} {:<8} {status}",
            p.gpu,
            crate::fmt::comment(&p.observed.name),
            p.observed.id,
            p.observed
                .memory_gib
                .map(|m| format!("{m:.2}"))
                .unwrap_or_default()
        ));
    }
    d.blank();
    for m in &r.models {
        d.push(Item::GpuModel(GpuModel {
            name: m.to_string(),
            mig_names: r.mig_names.clone(),
            ..GpuModel::default()
        }));
    }
    d
}

/// The document as KDL ([`crate::import::doc::kdl::write`]).
pub fn render(r: &LgipReport, header: &str) -> String {
    crate::import::doc::kdl::write(&document(r, header))
}
