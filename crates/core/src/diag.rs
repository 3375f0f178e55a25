//! The one diagnostic type.
//!
//! Every user-facing problem, from a KDL syntax error to a stale plan, is a
//! [`Diagnostic`]: a stable code (`GP0xx`, documented in `docs/rules.md`), a severity,
//! a message, a primary span in the user's file, optional secondary labels and a hint.
//! [`Report`] renders them for humans (through `miette`) and as JSON.

use crate::source::{SourceMap, Span};
use serde::Serialize;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A secondary location with a short text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// Where the problem is; `None` only for problems with no input location
    /// (an unreadable path, an empty configuration).
    pub span: Option<Span>,
    /// Text shown at the primary span.
    pub label: String,
    pub related: Vec<Label>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span: None,
            label: String::new(),
            related: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    pub fn at(mut self, span: Span, label: impl Into<String>) -> Self {
        self.span = Some(span);
        self.label = label.into();
        self
    }

    pub fn with_related(mut self, span: Span, text: impl Into<String>) -> Self {
        self.related.push(Label {
            span,
            text: text.into(),
        });
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A user-supplied name as a message shows it: in backticks when it is plain text,
/// escaped in double quotes when it holds line breaks, control characters or backticks
/// (so a message never spans lines or hides what the file says).
pub fn quoted(s: &str) -> String {
    if s.chars().any(|c| c.is_control() || c == '`') || s.is_empty() {
        format!("{s:?}")
    } else {
        format!("`{s}`")
    }
}

/// An ordered collection of diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Diagnostics::default()
    }

    pub(crate) fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub(crate) fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(other);
    }

    pub(crate) fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Sorted by file, position, code and message, duplicates removed: the same input
    /// always yields the same report, whatever order rules ran in.
    pub(crate) fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.items.sort_by(|a, b| {
            let ka = (
                a.span.map(|s| (s.file, s.offset, s.len)),
                a.code,
                &a.message,
            );
            let kb = (
                b.span.map(|s| (s.file, s.offset, s.len)),
                b.code,
                &b.message,
            );
            ka.cmp(&kb)
        });
        self.items.dedup();
        self.items
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

/// A diagnostic bound to its source text, ready for `miette` to render.
pub(crate) struct Rendered<'a> {
    diag: &'a Diagnostic,
    source: Option<Window>,
    /// The message, label, related texts and hint with control characters escaped.
    message: String,
    help: Option<String>,
}

impl<'a> Rendered<'a> {
    pub(crate) fn new(diag: &'a Diagnostic, sources: &SourceMap) -> Self {
        let source = diag.span.and_then(|s| sources.get(s.file)).map(|f| Window {
            name: printable(&f.path),
            file: f.clone(),
            // A file that is not valid KDL may be anything (a pasted secret, a
            // foreign file): its diagnostics quote the offending span, no line.
            span_only: SPAN_ONLY.contains(&diag.code),
        });
        Rendered {
            diag,
            source,
            message: printable(&diag.message),
            help: diag.help.as_deref().map(printable),
        }
    }

    /// A label's span as drawn: inside its file, on its first line and at most
    /// [`MAX_LABEL_BYTES`] long (a span over a whole file would be quoted whole).
    fn drawn(&self, s: Span) -> (usize, usize) {
        let Some(w) = &self.source else {
            return (s.offset, s.len);
        };
        let text = &*w.file.text;
        let start = floor_char(text, s.offset.min(text.len()));
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let mut end = s
            .offset
            .saturating_add(s.len)
            .min(line_end)
            .min(start + MAX_LABEL_BYTES)
            .max(start);
        end = ceil_char(text, end);
        (start, end - start)
    }
}

/// Codes whose source may be anything but KDL (GP001, a KDL syntax error): their
/// snippets quote the offending span only, never a line.
const SPAN_ONLY: &[&str] = &["GP001"];

/// The longest span a label draws, in bytes.
pub(crate) const MAX_LABEL_BYTES: usize = 160;
/// The most bytes of a line shown on either side of a label.
const WINDOW_BYTES: usize = 120;
/// A line longer than this is shown as a window around the label, without context.
const MAX_LINE_BYTES: usize = 240;

/// A user string as one line of a terminal or log shows it: control characters (line
/// breaks, escape sequences, NUL) and Unicode bidirectional overrides escaped, so a
/// message never spans lines, moves the cursor or hides what the file says.
pub(crate) fn printable(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

fn floor_char(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The source miette reads snippets from: one file, read through its line index (no
/// scan from the start per snippet) and cut to a window around the label when lines are
/// long, so a line of 70,000 columns neither floods the terminal nor overflows miette's
/// column arithmetic; with `span_only`, nothing but the label's own bytes.
struct Window {
    name: String,
    file: std::sync::Arc<crate::source::SourceFile>,
    span_only: bool,
}

impl miette::SourceCode for Window {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let f = &*self.file;
        let text = &*f.text;
        let off = floor_char(text, span.offset());
        let end = ceil_char(text, span.offset().saturating_add(span.len()).max(off));
        let (line, col) = f.line_col(off);
        let (line, col) = (line - 1, col - 1);
        let line_start = f.line_start(line);
        let line_end = f.line_end(line);
        let contents = |start: usize, stop: usize, first: usize, column: usize, count: usize| {
            let contents: Box<dyn miette::SpanContents<'a> + 'a> =
                Box::new(miette::MietteSpanContents::new_named(
                    self.name.clone(),
                    &text.as_bytes()[start..stop],
                    (start, stop - start).into(),
                    first,
                    column,
                    count,
                ));
            Ok(contents)
        };
        if before == 0 || self.span_only {
            // The label's own bytes: the location of a label, or all a foreign file shows.
            let stop = if self.span_only {
                end.min(line_end)
            } else {
                end
            };
            return contents(off, stop.max(off), line, col, line + 1);
        }
        let first = line.saturating_sub(before);
        // The span may cover several lines (miette asks for two merged snippets at once).
        let end_line = f.line_col(end.saturating_sub(1).max(off)).0 - 1;
        let last = (end_line + after).min(f.line_count() - 1);
        let long = (first..=last).any(|l| f.line_end(l) - f.line_start(l) > MAX_LINE_BYTES);
        if long {
            let start = floor_char(text, off.saturating_sub(WINDOW_BYTES).max(line_start));
            let stop = ceil_char(
                text,
                end.min(line_end).saturating_add(WINDOW_BYTES).min(line_end),
            );
            return contents(start, stop.max(start), line, 0, line + 1);
        }
        let (start, stop) = (f.line_start(first), f.line_end(last));
        // miette's own count: the lines from the start of the file to the end of the
        // window (it merges two snippets when one reaches the next).
        contents(start, stop, first, 0, last + 1)
    }
}

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rendered<'_> {}

impl miette::Diagnostic for Rendered<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.diag.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diag.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let primary = self.diag.span?;
        let mut labels = vec![miette::LabeledSpan::new_primary_with_span(
            Some(printable(&self.diag.label)).filter(|l| !l.is_empty()),
            self.drawn(primary),
        )];
        // miette draws labels of one source only: related labels in other files are
        // listed in the help text instead (see `related_elsewhere`).
        for l in self
            .diag
            .related
            .iter()
            .filter(|l| l.span.file == primary.file)
        {
            labels.push(miette::LabeledSpan::new_with_span(
                Some(printable(&l.text)),
                self.drawn(l.span),
            ));
        }
        Some(Box::new(labels.into_iter()))
    }
}

/// The most diagnostics [`Report::human`] renders; the rest are counted.
pub(crate) const MAX_HUMAN_DIAGNOSTICS: usize = 200;

/// Renders diagnostics for people (`miette` graphical, or plain without colour) and as JSON.
pub struct Report<'a> {
    pub sources: &'a SourceMap,
    pub diagnostics: &'a [Diagnostic],
}

/// One diagnostic in the JSON report (`--format json`).
#[derive(Serialize)]
pub struct JsonDiagnostic<'a> {
    pub code: &'a str,
    pub severity: Severity,
    /// Message, label, hint and related texts have their control characters escaped
    /// ([`printable`]) here too: a JSON consumer may print them.
    pub message: String,
    pub file: Option<&'a str>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub offset: Option<usize>,
    pub length: Option<usize>,
    pub label: Option<String>,
    pub help: Option<String>,
    pub related: Vec<JsonLabel<'a>>,
}

#[derive(Serialize)]
pub struct JsonLabel<'a> {
    pub file: Option<&'a str>,
    pub line: usize,
    pub column: usize,
    pub text: String,
}

impl<'a> Report<'a> {
    pub fn new(sources: &'a SourceMap, diagnostics: &'a [Diagnostic]) -> Self {
        Report {
            sources,
            diagnostics,
        }
    }

    /// Human rendering. `color` picks ANSI colours and Unicode art; without it the
    /// output is plain ASCII, stable for snapshots and logs.
    pub fn human(&self, color: bool) -> String {
        let handler = if color {
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode())
        } else {
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        }
        .with_width(100)
        .with_links(false);
        let mut out = String::new();
        // miette reads each snippet from the start of its file: rendering is capped so
        // that a file with a hundred thousand errors is reported in seconds, not hours.
        for d in self.diagnostics.iter().take(MAX_HUMAN_DIAGNOSTICS) {
            let r = Rendered::new(d, self.sources);
            let _ = handler.render_report(&mut out, &r);
            for l in self.related_elsewhere(d) {
                out.push_str(&format!("  = note: {}\n", printable(&l)));
            }
            out.push('\n');
        }
        if let Some(more) = self.diagnostics.len().checked_sub(MAX_HUMAN_DIAGNOSTICS) {
            if more > 0 {
                out.push_str(&format!(
                    "... and {more} more diagnostic(s) not shown (`--format json` lists all)\n\n"
                ));
            }
        }
        out
    }

    fn related_elsewhere(&self, d: &Diagnostic) -> Vec<String> {
        let Some(primary) = d.span else {
            return Vec::new();
        };
        d.related
            .iter()
            .filter(|l| l.span.file != primary.file)
            .map(|l| match self.sources.get(l.span.file) {
                Some(f) => {
                    let (line, col) = f.line_col(l.span.offset);
                    format!("{} ({}:{line}:{col})", l.text, f.path)
                }
                None => l.text.clone(),
            })
            .collect()
    }

    pub fn json_items(&self) -> Vec<JsonDiagnostic<'a>> {
        self.diagnostics
            .iter()
            .map(|d| {
                let file = d.span.and_then(|s| self.sources.get(s.file));
                let (line, column) = match (d.span, file) {
                    (Some(s), Some(f)) => {
                        let (l, c) = f.line_col(s.offset);
                        (Some(l), Some(c))
                    }
                    _ => (None, None),
                };
                JsonDiagnostic {
                    code: d.code,
                    severity: d.severity,
                    message: printable(&d.message),
                    file: file.map(|f| f.path.as_str()),
                    line,
                    column,
                    offset: d.span.map(|s| s.offset),
                    length: d.span.map(|s| s.len),
                    label: Some(printable(&d.label)).filter(|l| !l.is_empty()),
                    help: d.help.as_deref().map(printable),
                    related: d
                        .related
                        .iter()
                        .map(|l| {
                            let f = self.sources.get(l.span.file);
                            let (line, column) =
                                f.map(|f| f.line_col(l.span.offset)).unwrap_or((0, 0));
                            JsonLabel {
                                file: f.map(|f| f.path.as_str()),
                                line,
                                column,
                                text: printable(&l.text),
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }
}
