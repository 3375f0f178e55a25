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

    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(other);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Sorted by file, position, code and message, duplicates removed: the same input
    /// always yields the same report, whatever order rules ran in.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
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
pub struct Rendered<'a> {
    diag: &'a Diagnostic,
    source: Option<miette::NamedSource<std::sync::Arc<str>>>,
}

impl<'a> Rendered<'a> {
    pub fn new(diag: &'a Diagnostic, sources: &SourceMap) -> Self {
        let source = diag
            .span
            .and_then(|s| sources.get(s.file))
            .map(|f| miette::NamedSource::new(f.path.clone(), f.text.clone()).with_language("kdl"));
        Rendered { diag, source }
    }
}

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.diag.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
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
        self.diag
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let primary = self.diag.span?;
        let mut labels = vec![miette::LabeledSpan::new_primary_with_span(
            Some(self.diag.label.clone()).filter(|l| !l.is_empty()),
            (primary.offset, primary.len),
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
                Some(l.text.clone()),
                (l.span.offset, l.span.len),
            ));
        }
        Some(Box::new(labels.into_iter()))
    }
}

/// The most diagnostics [`Report::human`] renders; the rest are counted.
pub const MAX_HUMAN_DIAGNOSTICS: usize = 200;

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
    pub message: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub offset: Option<usize>,
    pub length: Option<usize>,
    pub label: Option<&'a str>,
    pub help: Option<&'a str>,
    pub related: Vec<JsonLabel<'a>>,
}

#[derive(Serialize)]
pub struct JsonLabel<'a> {
    pub file: Option<&'a str>,
    pub line: usize,
    pub column: usize,
    pub text: &'a str,
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
                out.push_str(&format!("  = note: {l}\n"));
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
                    message: &d.message,
                    file: file.map(|f| f.path.as_str()),
                    line,
                    column,
                    offset: d.span.map(|s| s.offset),
                    length: d.span.map(|s| s.len),
                    label: Some(d.label.as_str()).filter(|l| !l.is_empty()),
                    help: d.help.as_deref(),
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
                                text: &l.text,
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }
}
