//! Source files and spans.
//!
//! Every piece of user input is kept as a [`SourceFile`] in a [`SourceMap`]; everything
//! derived from it carries a [`Span`] (file + byte range), so any diagnostic, however
//! late, can point at the KDL line it came from.

use std::sync::Arc;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct Span {
    pub file: FileId,
    pub offset: usize,
    pub len: usize,
}

impl Span {
    pub fn new(file: FileId, offset: usize, len: usize) -> Self {
        Span { file, offset, len }
    }

    /// Converts a `miette` span of `file` into a [`Span`].
    pub(crate) fn from_miette(file: FileId, s: miette::SourceSpan) -> Self {
        Span::new(file, s.offset(), s.len())
    }
}

/// A value together with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub(crate) fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

/// One input file: its display path and its text.
#[derive(Debug)]
pub struct SourceFile {
    pub id: FileId,
    pub path: String,
    pub text: Arc<str>,
    /// Byte offset of the start of each line, for `line_col` in O(log n): a file with
    /// many diagnostics must not make reporting quadratic.
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        // Index of the last line starting at or before `offset` (line_starts[0] == 0).
        let idx = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let line = idx + 1;
        let line_start = self.line_starts[idx];
        let col = self
            .text
            .get(line_start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - line_start)
            + 1;
        (line, col)
    }
}

impl SourceFile {
    /// Number of lines (a file without a line break has one).
    pub(crate) fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset where 0-based line `line` starts (the end of the text past the last).
    pub(crate) fn line_start(&self, line: usize) -> usize {
        self.line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len())
    }

    /// Byte offset of the end of 0-based line `line`, before its line break (`\r\n` or
    /// `\n`).
    pub(crate) fn line_end(&self, line: usize) -> usize {
        let next = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |&n| n - 1);
        let start = self.line_start(line).min(next);
        if next > start && self.text.as_bytes()[next - 1] == b'\r' {
            next - 1
        } else {
            next
        }
    }
}

/// All input files of one run, in the order they were given.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<Arc<SourceFile>>,
}

impl SourceMap {
    pub fn new() -> Self {
        SourceMap::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, path: impl Into<String>, text: impl Into<Arc<str>>) -> FileId {
        let id = FileId(self.files.len() as u32);
        let text: Arc<str> = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        self.files.push(Arc::new(SourceFile {
            id,
            path: path.into(),
            text,
            line_starts,
        }));
        id
    }

    pub fn get(&self, id: FileId) -> Option<&Arc<SourceFile>> {
        self.files.get(id.0 as usize)
    }

    pub fn files(&self) -> &[Arc<SourceFile>] {
        &self.files
    }

    /// The text a span covers (empty when out of range).
    pub fn snippet(&self, span: Span) -> &str {
        self.get(span.file)
            .and_then(|f| f.text.get(span.offset..span.offset + span.len))
            .unwrap_or("")
    }
}
