//! A cheap scan of KDL text, before the KDL parser runs: children blocks, block
//! comments and slashdash chains with their depths. Strings and comments are skipped
//! roughly; the scan only has to be right for files that nest deeply, which are never
//! valid configurations, and for finding where top-level nodes end, which the parse of
//! each piece double-checks (see `parse`).
//!
//! [`nesting_guard`] rejects input nested too deeply for the (recursive) KDL parser;
//! [`top_level_ends`] lists where top-level nodes with a children block end.

use super::{GP001, clamp_to_chars};
use crate::diag::Diagnostic;
use crate::source::{FileId, Span};

/// How deeply children blocks, block comments and slashdash chains may nest. The
/// language never nests deeper than 4; the KDL parser recurses on each level and would
/// overflow the stack on a few thousand.
pub const MAX_NESTING: usize = 64;

/// What the scanner meets, with where (byte offset) and how deep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// `/*`, opening the `depth`-th nested block comment.
    Comment { at: usize, depth: usize },
    /// `/-`, the `chain`-th in a row.
    Slashdash { at: usize, chain: usize },
    /// `{`, opening the `depth`-th nested children block.
    Open { at: usize, depth: usize },
    /// `}` closing a children block, leaving `depth` open.
    Close { at: usize, depth: usize },
    /// `}` with no open block, the `count`-th such.
    Stray { at: usize, count: usize },
}

/// Walks the bytes of a KDL text, reporting [`Event`]s.
struct Scanner<'t> {
    b: &'t [u8],
    i: usize,
    /// Open children blocks.
    braces: usize,
    /// Open block comments (they nest).
    comments: usize,
    /// Slashdashes since the last token that ends a chain.
    slashdashes: usize,
    /// Unmatched `}` so far.
    stray: usize,
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Scanner {
            b: text.as_bytes(),
            i: 0,
            braces: 0,
            comments: 0,
            slashdashes: 0,
            stray: 0,
        }
    }

    /// The next event, or `None` at the end of the text.
    fn next_event(&mut self) -> Option<Event> {
        while self.i < self.b.len() {
            let event = if self.comments > 0 {
                self.step_in_comment()
            } else {
                self.step()
            };
            if event.is_some() {
                return event;
            }
        }
        None
    }

    /// One step inside a block comment: only `/*` and `*/` count there.
    fn step_in_comment(&mut self) -> Option<Event> {
        let (b, i) = (self.b, self.i);
        if b[i..].starts_with(b"/*") {
            self.comments += 1;
            self.i += 2;
            return Some(Event::Comment {
                at: i,
                depth: self.comments,
            });
        }
        if b[i..].starts_with(b"*/") {
            self.comments -= 1;
            self.i += 2;
        } else {
            self.i += 1;
        }
        None
    }

    /// One step outside comments: one token, roughly.
    fn step(&mut self) -> Option<Event> {
        let (b, i) = (self.b, self.i);
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'*') => {
                self.comments += 1;
                self.i += 2;
                Some(Event::Comment {
                    at: i,
                    depth: self.comments,
                })
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                self.skip_line_comment();
                None
            }
            b'/' if b.get(i + 1) == Some(&b'-') => {
                self.slashdashes += 1;
                self.i += 2;
                Some(Event::Slashdash {
                    at: i,
                    chain: self.slashdashes,
                })
            }
            b'"' => {
                self.skip_string();
                self.slashdashes = 0;
                None
            }
            b'#' => {
                self.skip_hashes();
                self.slashdashes = 0;
                None
            }
            b'{' => {
                self.braces += 1;
                self.i += 1;
                Some(Event::Open {
                    at: i,
                    depth: self.braces,
                })
            }
            b'}' => Some(self.close()),
            c if c.is_ascii_whitespace() => {
                self.i += 1;
                None
            }
            _ => {
                self.slashdashes = 0;
                self.i += 1;
                None
            }
        }
    }

    /// `//`: up to (not past) the end of the line.
    fn skip_line_comment(&mut self) {
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            self.i += 1;
        }
    }

    /// A quoted string: skip to the closing quote, honouring escapes.
    fn skip_string(&mut self) {
        let b = self.b;
        self.i += 1;
        while self.i < b.len() && b[self.i] != b'"' {
            self.i += if b[self.i] == b'\\' { 2 } else { 1 };
        }
        self.i += 1;
    }

    /// `#`s: a keyword (`#true`) or a raw string, which ends at a quote followed by as
    /// many `#`.
    fn skip_hashes(&mut self) {
        let b = self.b;
        let start = self.i;
        while self.i < b.len() && b[self.i] == b'#' {
            self.i += 1;
        }
        let hashes = self.i - start;
        if b.get(self.i) != Some(&b'"') {
            return;
        }
        self.i += 1;
        while self.i < b.len()
            && !(b[self.i] == b'"'
                && b.len() - (self.i + 1) >= hashes
                && b[self.i + 1..self.i + 1 + hashes]
                    .iter()
                    .all(|c| *c == b'#'))
        {
            self.i += 1;
        }
        self.i += 1 + hashes;
    }

    /// `}`: closes a block, or is stray (kdl recovers from each by recursing once more).
    fn close(&mut self) -> Event {
        let at = self.i;
        self.slashdashes = 0;
        self.i += 1;
        if self.braces == 0 {
            self.stray += 1;
            Event::Stray {
                at,
                count: self.stray,
            }
        } else {
            self.braces -= 1;
            Event::Close {
                at,
                depth: self.braces,
            }
        }
    }
}

/// A cheap pre-scan that rejects input nested too deeply for the (recursive) KDL
/// parser, before it runs. Strings and comments are skipped roughly; the scan only has
/// to be right for files that nest deeply, which are never valid configurations.
pub fn nesting_guard(file: FileId, text: &str) -> Option<Diagnostic> {
    let mut scan = Scanner::new(text);
    while let Some(event) = scan.next_event() {
        let (at, len, what) = match event {
            Event::Comment { at, depth } if depth > MAX_NESTING => (at, 2, "block comments"),
            Event::Slashdash { at, chain } if chain > MAX_NESTING => {
                (at, 2, "slashdash comments (`/-`)")
            }
            Event::Open { at, depth } if depth > MAX_NESTING => (at, 1, "children blocks (`{`)"),
            Event::Stray { at, count } if count > MAX_NESTING => {
                return Some(too_many_stray(file, at));
            }
            _ => continue,
        };
        return Some(too_deep(file, text, at, len, what));
    }
    None
}

/// GP001 for `what` nested more than [`MAX_NESTING`] deep, at `at..at + len`.
fn too_deep(file: FileId, text: &str, at: usize, len: usize, what: &str) -> Diagnostic {
    let (offset, len) = clamp_to_chars(text, at, len);
    Diagnostic::error(
        GP001,
        format!("KDL syntax error: {what} nested more than {MAX_NESTING} levels deep"),
    )
    .at(Span::new(file, offset, len), "too deep")
    .with_help("the gpuplan language nests at most 4 levels; check for unbalanced `{`")
}

/// GP001 for more than [`MAX_NESTING`] unmatched `}`, at the last one.
fn too_many_stray(file: FileId, at: usize) -> Diagnostic {
    Diagnostic::error(
        GP001,
        format!("KDL syntax error: more than {MAX_NESTING} unmatched `}}`"),
    )
    .at(Span::new(file, at, 1), "no `{` opens this")
    .with_help("check for unbalanced braces")
}

/// Offsets where a top-level node with a children block ends and the next begins: just
/// after the newline that follows a `}` closing the last open block (spaces, tabs and
/// `\r` allowed between), when the next line starts with an ASCII letter. Text before
/// such an offset, if it parses, is a sequence of whole nodes (see `parse`).
pub(crate) fn top_level_ends(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut scan = Scanner::new(text);
    let mut ends = Vec::new();
    while let Some(event) = scan.next_event() {
        let Event::Close { at, depth: 0 } = event else {
            continue;
        };
        let mut j = at + 1;
        while j < b.len() && matches!(b[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        if b.get(j) == Some(&b'\n') && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic) {
            ends.push(j + 1);
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_ends_after_closing_braces() {
        let text = "a {\n    b\n}\nc \"}\\n\" {\n}\r\n/* }\nd */ e {\n}\n\nf {\n}\ng";
        let ends = top_level_ends(text);
        let starts: Vec<&str> = ends.iter().map(|&e| &text[e..e + 1]).collect();
        assert_eq!(starts, ["c", "g"]);
    }

    #[test]
    fn deep_blocks_are_rejected() {
        let deep = "a {".repeat(MAX_NESTING + 1);
        let d = nesting_guard(FileId(0), &deep).expect("too deep");
        assert!(d.message.contains("children blocks"), "{}", d.message);
        assert!(nesting_guard(FileId(0), &"a {".repeat(MAX_NESTING)).is_none());
        assert!(nesting_guard(FileId(0), &"}".repeat(MAX_NESTING + 1)).is_some());
    }
}
