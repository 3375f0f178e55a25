//! `gpuplan fmt`: the canonical layout of a gpuplan file, like `terraform fmt`.
//!
//! The rules, which are all there is to the canonical form:
//! - one node per line, children indented by four spaces, `{` on the node's line and
//!   `}` on its own line; a block written on one line without comments stays on one line
//!   as `{ a; b; }`;
//! - one space between a node's name and each entry, none around `=`; line
//!   continuations (`\`) are joined, but for one holding a `//` comment, which stays;
//! - node names and property keys bare where KDL allows it, quoted otherwise; string
//!   values always quoted (raw `#"…"#` and multi-line `"""` strings stay as written);
//!   numbers as written (`1_000`, `0x10` keep their spelling); `#true`, `#false`, `#null`;
//! - nodes keep the order they were written in;
//! - comments (`//`, `/* */`, `/-`) are kept byte for byte, inner lines and trailing
//!   spaces included: only the indentation of a comment's first line may change. Each
//!   stays on the line it was on: on a line of its own at the indentation of the node
//!   that follows, before the node it preceded on its line, or at the end of the line
//!   it ended (a `{` line, or a node's line, whose `;` goes); trailing comments of
//!   consecutive one-line nodes are aligned two spaces after the longest of those lines
//!   (a comment of several lines is not aligned, one space after its node);
//! - runs of blank lines become one, none at the start of a block or a file, one newline
//!   at the end of the file; a file whose first line ends with CRLF is written with CRLF.
//!
//! The formatter is pure ([`format`]) and refuses rather than guesses: the result is
//! parsed again and must give the same nodes, entries and values as the input, and the
//! same comments, compared byte for byte ([`decor`] cuts them out); otherwise the file is
//! left alone with GP761. Formatting is idempotent (`tests/it/fmt.rs` checks every example,
//! docs block and test corpus file).

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};
use kdl::{KdlDocument, KdlIdentifier, KdlNode};
use std::fmt::Write as _;

mod decor;
mod layout;

/// GP760: a file `fmt` was given does not parse (the syntax diagnostics follow).
pub(crate) const GP760: &str = "GP760";
/// GP761: formatting would change what the file means or drop a comment.
pub(crate) const GP761: &str = "GP761";

/// The canonical form of `text` (file `file`, for diagnostics).
pub fn format(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
    let doc = crate::spec::parse_one(file, text).map_err(|mut diags| {
        diags.insert(
            0,
            Diagnostic::error(GP760, "the file does not parse, so it is not formatted")
                .at(Span::new(file, 0, 0), "in this file")
                .with_help("fix the syntax errors below, then run `gpuplan fmt` again"),
        );
        diags
    })?;
    let mut out = String::new();
    layout::write_document(&doc, 0, true, &mut out);
    // One newline at the end, none before the first node.
    let trimmed = out.trim_matches('\n');
    let formatted = if trimmed.is_empty() {
        String::new()
    } else if crlf(text) {
        with_crlf(&format!("{trimmed}\n"))
    } else {
        format!("{trimmed}\n")
    };
    check_same(file, text, &doc, &formatted)?;
    Ok(formatted)
}

/// KDL that gpuplan generates (an importer's or `discover`'s output) in the canonical
/// layout, so that what gpuplan writes passes `gpuplan fmt --check` (issue 30). Generators
/// write text that parses; should `fmt` refuse it all the same (a bug), its diagnostics
/// are returned and the caller says so (GP717) and writes the text as generated.
pub fn generated(text: &str) -> Result<String, Vec<Diagnostic>> {
    let mut sources = crate::source::SourceMap::new();
    let file = sources.add("generated.kdl", text.to_string());
    format(file, text)
}

/// Whether the file's first line ends with CRLF: then every line `fmt` writes does.
fn crlf(text: &str) -> bool {
    text.find('\n').is_some_and(|i| text[..i].ends_with('\r'))
}

/// `text` with every LF not already after a CR written as CRLF (comments copied from a
/// CRLF file already have CRLF inside).
fn with_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut prev = '\0';
    for c in text.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// Refuses a result that does not mean what the input meant.
fn check_same(
    file: FileId,
    text: &str,
    before: &KdlDocument,
    formatted: &str,
) -> Result<(), Vec<Diagnostic>> {
    let refuse = |why: &str| {
        vec![
            Diagnostic::error(
                GP761,
                format!("formatting would change this file ({why}), so it is left as it is"),
            )
            .at(Span::new(file, 0, text.len().min(1)), "this file")
            .with_help(
                "please report it with the file; meanwhile format it by hand or skip it \
                 (`gpuplan fmt` only writes results that parse to the same nodes and comments)",
            ),
        ]
    };
    let Ok(after) = KdlDocument::parse_v2(formatted) else {
        return Err(refuse("the result does not parse"));
    };
    if outline(before) != outline(&after) {
        return Err(refuse("nodes, entries or values differ"));
    }
    if comments(before) != comments(&after) {
        return Err(refuse("comments differ"));
    }
    Ok(())
}

/// What a document means: node names, types, entries and children, in order.
fn outline(doc: &KdlDocument) -> Vec<String> {
    fn node(n: &KdlNode, depth: usize, out: &mut Vec<String>) {
        let entries: Vec<String> = n
            .entries()
            .iter()
            .map(|e| {
                format!(
                    "{:?}:{:?}={:?}",
                    e.name().map(KdlIdentifier::value),
                    e.ty().map(KdlIdentifier::value),
                    e.value()
                )
            })
            .collect();
        out.push(format!(
            "{depth} {:?} {:?} [{}] {}",
            n.ty().map(KdlIdentifier::value),
            n.name().value(),
            entries.join(", "),
            n.children().is_some()
        ));
        for c in n.children().map(KdlDocument::nodes).unwrap_or_default() {
            node(c, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    for n in doc.nodes() {
        node(n, 0, &mut out);
    }
    out
}

/// Every comment of a document, verbatim, in document order (slashdashed items
/// included; whitespace and line continuations between them are not comments).
fn comments(doc: &KdlDocument) -> Vec<String> {
    fn take(s: &str, out: &mut Vec<String>) {
        out.extend(decor::comments(s).map(str::to_string));
    }
    fn node(n: &KdlNode, out: &mut Vec<String>) {
        let f = n.format();
        if let Some(f) = f {
            for s in [&f.leading, &f.before_ty_name, &f.after_ty_name, &f.after_ty] {
                take(s, out);
            }
        }
        for e in n.entries() {
            if let Some(f) = e.format() {
                for s in [
                    &f.leading,
                    &f.before_ty_name,
                    &f.after_ty_name,
                    &f.after_ty,
                    &f.after_key,
                    &f.after_eq,
                    &f.trailing,
                ] {
                    take(s, out);
                }
            }
        }
        if let Some(f) = f {
            take(&f.before_children, out);
        }
        if let Some(c) = n.children() {
            document(c, out);
        }
        if let Some(f) = f {
            take(&f.before_terminator, out);
            take(&f.terminator, out);
            take(&f.trailing, out);
        }
    }
    fn document(d: &KdlDocument, out: &mut Vec<String>) {
        if let Some(f) = d.format() {
            take(&f.leading, out);
        }
        for n in d.nodes() {
            node(n, out);
        }
        if let Some(f) = d.format() {
            take(&f.trailing, out);
        }
    }
    let mut out = Vec::new();
    document(doc, &mut out);
    out
}

/// Text for a `//` comment of generated KDL: every character that KDL reads as a line
/// break (or that moves a terminal's cursor) escaped, so a label value or a file name
/// cannot end the comment and inject nodes (`team "x" guarantee=999`).
pub fn comment(s: &str) -> String {
    crate::diag::printable(s)
}

/// A string value, always quoted.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20
                || c == '\u{7f}'
                || c == '\u{feff}'
                || ('\u{200e}'..='\u{200f}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
                || ('\u{2028}'..='\u{2029}').contains(&c)
                || c == '\u{85}' =>
            {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(text: &str) -> String {
        let mut sources = crate::source::SourceMap::new();
        let f = sources.add("t.kdl", text.to_string());
        match format(f, text) {
            Ok(s) => s,
            Err(d) => panic!("{d:?}"),
        }
    }

    #[test]
    fn canonical_layout() {
        let input = "\n\n// header\n\n\nnode-class   dgx   {\n  gpus 8   model=h100 // inline\n\n\n  cpu sockets=2 \\\n      cores-per-socket=56\n}\ncluster c { scheduler kueue; }\nteam \"t\" guarantee=1_000 flag=#true\n";
        let want = "// header\n\nnode-class \"dgx\" {\n    gpus 8 model=\"h100\"  // inline\n\n    cpu sockets=2 cores-per-socket=56\n}\ncluster \"c\" { scheduler \"kueue\"; }\nteam \"t\" guarantee=1_000 flag=#true\n";
        assert_eq!(fmt(input), want);
        assert_eq!(fmt(want), want);
    }

    #[test]
    fn comments_everywhere_are_kept() {
        let input =
            "/* block */ a 1 /* mid */ 2 {\n    // first\n    b\n    /-c\n    // last\n}\n// end\n";
        let out = fmt(input);
        for c in [
            "/* block */",
            "/* mid */",
            "// first",
            "/-c",
            "// last",
            "// end",
        ] {
            assert!(out.contains(c), "{c} lost:\n{out}");
        }
        assert_eq!(fmt(&out), out);
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(fmt("\"my node\" \"x\"\n"), "\"my node\" \"x\"\n");
        assert_eq!(fmt("a #\"raw\\d\"#\n"), "a #\"raw\\d\"#\n");
        assert_eq!(fmt(""), "");
    }

    /// Issue 30: the safety check compares comments byte for byte (it used to compare
    /// them without whitespace, so a re-indented block comment passed).
    #[test]
    fn the_check_compares_comments_byte_for_byte() {
        let mut sources = crate::source::SourceMap::new();
        let text = "/* a\n   b */\nteam \"t\" // c  \n";
        let f = sources.add("t.kdl", text.to_string());
        let doc = crate::spec::parse_one(f, text).expect("parses");
        assert!(check_same(f, text, &doc, text).is_ok());
        for changed in [
            "/* a\nb */\nteam \"t\" // c  \n",
            "/* a\n   b */\nteam \"t\" // c\n",
            "/* a\n   b */\nteam \"t\" //  c  \n",
        ] {
            let err = check_same(f, text, &doc, changed).expect_err(changed);
            assert_eq!(err[0].code, GP761);
        }
    }

    #[test]
    fn syntax_errors_are_refused_with_a_code() {
        let mut sources = crate::source::SourceMap::new();
        let f = sources.add("t.kdl", "a {".to_string());
        let err = format(f, "a {").expect_err("does not parse");
        assert_eq!(err[0].code, GP760);
        assert!(err.len() > 1);
    }
}
