//! The tables of `nvidia-smi mig`: `-lgip` (GPU-instance profiles: [`parse_lgip`]),
//! `-lgi` and `-lci` (the GPU and compute instances that exist: [`parse_instance_rows`]),
//! read line by line with one tokenisation ([`lines`]: each line with its byte offset and
//! its trimmed text; a row's cells are the words between its `|` borders).
//! `import mig-lgip`, `import nvidia-smi` and `drift` read them here.

use crate::diag::Diagnostic;
use crate::discover::profiles::ObservedProfile;
use crate::discover::{GP710, GP713};
use crate::source::{FileId, SourceMap, Span};
use serde::Serialize;

/// One line of a table: the line without its end, its byte offset in the file, and
/// its trimmed text.
pub(crate) struct Line<'t> {
    line: &'t str,
    base: usize,
    t: &'t str,
}

impl<'t> Line<'t> {
    /// Byte offset of the first non-blank character.
    fn start(&self) -> usize {
        self.base + (self.line.len() - self.line.trim_start().len())
    }

    /// The words between the row's `|` borders.
    fn cells(&self) -> Vec<&'t str> {
        self.t.trim_matches('|').split_whitespace().collect()
    }
}

/// The lines of a text with their offsets (the tokenisation every `mig` table shares).
pub(crate) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut off = 0;
    text.split_inclusive('\n').map(move |raw| {
        let line = raw.trim_end_matches(['\n', '\r']);
        let l = Line {
            line,
            base: off,
            t: line.trim(),
        };
        off += raw.len();
        l
    })
}

/// Reads a `mig -lgip` table: its profile rows, whether it is complete, and what was
/// wrong with it (no rows at all is `GP710`).
pub(crate) fn parse_lgip(
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
    for l in lines(text) {
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

/// One row of an `nvidia-smi mig -lgi` table (a GPU instance) or of a `mig -lci` table
/// (a compute instance, with the GPU instance it is in).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct InstanceRow {
    pub gpu: u32,
    /// `-lci`: the GPU instance of the compute instance.
    pub gpu_instance: Option<u32>,
    /// The profile as the driver names it, without `MIG ` (`3g.40gb`, `1c.3g.40gb`).
    pub profile: String,
    pub profile_id: Option<u32>,
    /// The GPU instance (`-lgi`) or compute instance (`-lci`) id.
    pub id: Option<u32>,
    /// `Start:Size`, in memory slices (`-lgi`) or compute slices (`-lci`).
    pub placement: Option<(u32, u32)>,
    /// Byte offset of the row in its file.
    #[serde(skip)]
    pub offset: usize,
}

/// The most rows read from one table (8 GPUs of 7 instances of 7 compute instances).
const MAX_INSTANCE_ROWS: usize = 4096;

/// Reads the rows of an `nvidia-smi mig -lgi` table, `| GPU  MIG <profile>  <profile id>
/// <instance id>  <start>:<size> |`, or of a `mig -lci` table, `| GPU  <GI>  MIG
/// <profile>  <profile id>  <instance id>  <start>:<size> |`; the title line says which.
/// `Err` for a text that is neither, a GPU index that is not a number, or too many rows.
pub(crate) fn parse_instance_rows(text: &str) -> Result<(bool, Vec<InstanceRow>), String> {
    let mut rows = Vec::new();
    let mut title = None;
    for l in lines(text) {
        if l.line.contains("GPU instances") {
            title.get_or_insert(false);
        } else if l.line.contains("Compute instances") {
            title.get_or_insert(true);
        }
        let w = l.cells();
        // -lci rows have the GPU instance id before `MIG`.
        let m = match w.iter().position(|x| *x == "MIG") {
            Some(m @ (1 | 2)) if w.len() >= m + 5 && w[m + 4].contains(':') => m,
            _ => continue,
        };
        if rows.len() >= MAX_INSTANCE_ROWS {
            return Err(format!("more than {MAX_INSTANCE_ROWS} instance rows"));
        }
        let gpu: u32 = w[0]
            .parse()
            .map_err(|_| format!("`{}`: not a GPU index", w[0]))?;
        let num = |s: &str| s.parse::<u32>().ok();
        rows.push(InstanceRow {
            gpu,
            gpu_instance: if m == 2 { num(w[1]) } else { None },
            profile: w[m + 1].to_string(),
            profile_id: num(w[m + 2]),
            id: num(w[m + 3]),
            placement: w[m + 4]
                .split_once(':')
                .and_then(|(a, b)| Some((num(a)?, num(b)?))),
            offset: l.base,
        });
    }
    let empty =
        text.contains("No GPU instances found") || text.contains("No compute instances found");
    match title {
        Some(lci) => Ok((lci, rows)),
        None if empty => Ok((text.contains("No compute instances found"), rows)),
        None if !rows.is_empty() => Ok((rows.iter().any(|r| r.gpu_instance.is_some()), rows)),
        None => Err("not an `nvidia-smi mig -lgi` table (no `GPU instances` header)".into()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const LGI: &str = "+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 3g.40gb          9        2          4:4     |
+-------------------------------------------------------+
|   0  MIG 3g.40gb          9        1          0:4     |
+-------------------------------------------------------+
|   3  MIG 1g.10gb         19        9          2:1     |
+-------------------------------------------------------+
";

    /// `mig -lci` (the layout of its rows as the driver prints it; constructed): the GPU
    /// instance id comes before `MIG`.
    pub(crate) const LCI: &str = "+----+\n| Compute instances:  |\n|   0      1       MIG 1g.10gb          0         0          0:1     |\n+----+\n";

    #[test]
    fn instance_rows_of_lgi_and_lci_tables() {
        let (lci, rows) = parse_instance_rows(LGI).unwrap();
        assert!(!lci);
        assert!(
            rows.iter()
                .all(|r| r.gpu_instance.is_none() && r.id.is_some())
        );
        let (lci, rows) = parse_instance_rows(LCI).unwrap();
        assert!(lci);
        assert_eq!(rows[0].gpu_instance, Some(1));
        assert_eq!(rows[0].profile, "1g.10gb");
        assert_eq!(
            (rows[0].profile_id, rows[0].id, rows[0].placement),
            (Some(0), Some(0), Some((0, 1)))
        );
        assert!(parse_instance_rows("|   x  MIG 1g.10gb  19  9  2:1 |").is_err());
    }
}
