//! Slurm's configuration files as records: logical lines (comments dropped, `\`
//! continuations joined) of `Key=Value` pairs with their byte spans, keys compared
//! without case, as slurmctld reads them (slurm.conf(5), gres.conf(5), topology.conf(5)).

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};

/// One `Key=Value` pair: the key in lowercase, the value without quotes, the span of the
/// whole pair in its file.
#[derive(Clone, Debug)]
pub struct Pair {
    pub key: String,
    pub value: String,
    pub span: Span,
}

/// One logical line: its pairs and the span of the line.
#[derive(Clone, Debug)]
pub struct Record {
    pub pairs: Vec<Pair>,
    pub span: Span,
}

impl Record {
    /// The value of `key` (lowercase), the last one when repeated.
    pub fn get(&self, key: &str) -> Option<&Pair> {
        self.pairs.iter().rev().find(|p| p.key == key)
    }

    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).map(|p| p.value.as_str())
    }

    /// The first key of the line (`nodename`, `partitionname`, `switchname`...).
    pub fn kind(&self) -> &str {
        self.pairs.first().map_or("", |p| p.key.as_str())
    }
}

/// GP740: a line of a Slurm file cannot be read.
pub(crate) const GP740: &str = "GP740";

/// The records of one file; lines that are not `Key=Value` pairs are diagnostics
/// (GP740) and skipped.
pub fn records(file: FileId, text: &str, diags: &mut Vec<Diagnostic>) -> Vec<Record> {
    let mut out = Vec::new();
    for (start, line) in logical_lines(text) {
        let mut pairs = Vec::new();
        for (off, token) in tokens(&line) {
            let span = Span::new(file, start + off.min(line.len()), token.len());
            match token.split_once('=') {
                Some((k, v)) if !k.is_empty() => pairs.push(Pair {
                    key: k.to_ascii_lowercase(),
                    value: unquote(v),
                    span,
                }),
                _ => {
                    // `Include FILE` is the one line without `=` Slurm knows.
                    if pairs.is_empty() && token.eq_ignore_ascii_case("include") {
                        pairs.push(Pair {
                            key: "include".into(),
                            value: String::new(),
                            span,
                        });
                    } else if pairs.first().is_some_and(|p| p.key == "include") {
                        if let Some(p) = pairs.first_mut() {
                            p.value = unquote(token);
                        }
                    } else {
                        diags.push(
                            Diagnostic::warning(
                                GP740,
                                format!("`{token}` is not a `Key=Value` pair; the line is skipped"),
                            )
                            .at(span, "not Key=Value")
                            .with_help("Slurm's files are `Key=Value` pairs separated by spaces"),
                        );
                        pairs.clear();
                        break;
                    }
                }
            }
        }
        if !pairs.is_empty() {
            out.push(Record {
                span: Span::new(file, start, line.trim_end().len()),
                pairs,
            });
        }
    }
    out
}

fn unquote(v: &str) -> String {
    v.strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(v)
        .to_string()
}

/// Logical lines with the byte offset of their start: `#` starts a comment, a trailing
/// `\` joins the next line (the joined text keeps the offsets of the first line only
/// approximately: continuation text is appended after a space).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let line_start = offset;
        offset += raw.len();
        let body = raw.trim_end_matches(['\n', '\r']);
        let body = match body.find('#') {
            Some(i) => &body[..i],
            None => body,
        };
        let (body, more) = match body.trim_end().strip_suffix('\\') {
            Some(b) => (b, true),
            None => (body, false),
        };
        match current.as_mut() {
            Some((_, acc)) => {
                acc.push(' ');
                acc.push_str(body.trim());
            }
            None => current = Some((line_start, body.to_string())),
        }
        if !more {
            if let Some((s, l)) = current.take() {
                if !l.trim().is_empty() {
                    out.push((s, l));
                }
            }
        }
    }
    if let Some((s, l)) = current.take() {
        if !l.trim().is_empty() {
            out.push((s, l));
        }
    }
    out
}

/// Whitespace-separated tokens with their offsets; double quotes keep spaces.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match (c, start) {
            ('"', _) => {
                quoted = !quoted;
                start.get_or_insert(i);
            }
            (c, Some(s)) if c.is_whitespace() && !quoted => {
                out.push((s, &line[s..i]));
                start = None;
            }
            (c, None) if !c.is_whitespace() => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &line[s..]));
    }
    out
}

thread_local! {
    /// Names the hostlists of the import running on this thread may still expand to
    /// ([`reset_budget`]): 2.8 KB of hostlists must not take gigabytes.
    static NAMES_LEFT: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}

/// Starts an import's budget of hostlist names: the run's `names` limit
/// ([`crate::limits`]), shared by every hostlist of slurm.conf, gres.conf and
/// topology.conf.
pub(crate) fn reset_budget(names: u64) {
    NAMES_LEFT.with(|n| n.set(names));
}

/// Expands a Slurm hostlist (`gpu[001-032,040],login1`); `Err` with a reason when it
/// is malformed or when it goes past the import's names budget (counted before
/// anything is expanded).
pub fn hostlist(list: &str) -> Result<Vec<String>, String> {
    let count = crate::units::count_pattern_list(list);
    let left = NAMES_LEFT.with(|n| n.get());
    if count > left {
        return Err(format!(
            "expands to {count} names, past the import's names limit ({} names for all hostlists together; `--limit names=N` raises it)",
            crate::limits::current().names
        ));
    }
    NAMES_LEFT.with(|n| n.set(left - count));
    crate::units::expand_pattern_list(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_pairs_comments_continuations_and_quotes() {
        let text = "# comment\nNodeName=gpu[01-02] \\\n   CPUs=64 # trailing\nPartitionName=p Nodes=ALL Default=YES\nfoo bar\nInclude nodes.conf\nFeature=\"a b\"\n";
        let mut d = Vec::new();
        let r = records(FileId(0), text, &mut d);
        assert_eq!(r.len(), 4, "{r:?}");
        assert_eq!(r[0].kind(), "nodename");
        assert_eq!(r[0].value("cpus"), Some("64"));
        assert_eq!(r[1].value("default"), Some("YES"));
        assert_eq!(r[2].kind(), "include");
        assert_eq!(r[2].value("include"), Some("nodes.conf"));
        assert_eq!(r[3].value("feature"), Some("a b"));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, GP740);
    }

    #[test]
    fn hostlists() {
        assert_eq!(
            hostlist("gpu[01-02,05],login").unwrap(),
            ["gpu01", "gpu02", "gpu05", "login"]
        );
        assert!(hostlist("gpu[01-").is_err());
        reset_budget(1000);
        assert!(hostlist("a[0-999],b[0-999]").is_err());
        assert!(hostlist("a[0-998]").is_ok());
        assert!(hostlist("b[0-1]").is_err(), "the budget is shared");
        reset_budget(u64::MAX);
    }
}
