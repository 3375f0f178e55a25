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
//! left alone with GP761. Formatting is idempotent (`tests/fmt.rs` checks every example,
//! docs block and test corpus file).

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};
use kdl::{KdlDocument, KdlEntry, KdlIdentifier, KdlNode, KdlValue};
use std::fmt::Write as _;

mod decor;

/// GP760: a file `fmt` was given does not parse (the syntax diagnostics follow).
pub const GP760: &str = "GP760";
/// GP761: formatting would change what the file means or drop a comment.
pub const GP761: &str = "GP761";

const INDENT: &str = "    ";

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
    write_document(&doc, 0, true, &mut out);
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
/// are returned and the caller says so (GP708) and writes the text as generated.
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

/// A run of consecutive one-line nodes: their code and trailing comments, aligned when
/// written.
type Run = Vec<(String, String)>;

/// The decor before a node or at the end of a block, placed: `rest` ends the line
/// already written (the `{` line, or a line ended by `;`), `lines` are comment lines of
/// their own (`None`: one blank line) and `prefix` starts the line of the node that
/// follows.
#[derive(Default)]
struct Placed {
    rest: String,
    lines: Vec<Option<String>>,
    prefix: String,
}

/// Places line-level decor (see [`Placed`]). `first_is_rest`: the text before the first
/// newline ends a line already written; `before_node`: a node follows on the line after
/// the last newline. Comments keep the line they were on; runs of blank lines become one.
fn place(decor: &str, first_is_rest: bool, before_node: bool) -> Placed {
    let parts = decor::layout_lines(decor);
    let n = parts.len();
    let mut p = Placed::default();
    for (i, text) in parts.into_iter().enumerate() {
        let last = i + 1 == n;
        if last && before_node {
            p.prefix = text;
        } else if i == 0 && first_is_rest {
            p.rest = text;
        } else if !text.is_empty() {
            p.lines.push(Some(text));
        } else if !last && p.lines.last() != Some(&None) {
            p.lines.push(None);
        }
    }
    p
}

/// Writes the nodes of `doc` at `level`, with the comments around them. `top`: the
/// whole file (the text before its first node starts on a line of its own; in a block
/// it starts on the `{` line).
fn write_document(doc: &KdlDocument, level: usize, top: bool, out: &mut String) {
    let (mut leading, trailing) = doc.format().map_or((String::new(), String::new()), |f| {
        (f.leading.clone(), f.trailing.clone())
    });
    let mut at_line_start = top;
    // Nothing written yet in this block or file: blank lines here go.
    let mut started = false;
    let mut run: Run = Vec::new();
    for n in doc.nodes() {
        let f = n.format();
        leading.push_str(f.map_or("", |f| f.leading.as_str()));
        let placed = place(&std::mem::take(&mut leading), !at_line_start, true);
        end_line(&placed.rest, &mut run, out);
        if !placed.lines.is_empty() {
            flush_run(&mut run, out);
        }
        flush(placed.lines, level, started, out);
        let mut code = String::new();
        indent(level, &mut code);
        if !placed.prefix.is_empty() {
            code.push_str(&placed.prefix);
            code.push(' ');
        }
        let comment = write_node(n, level, &mut code);
        // Multi-line code or comments are not aligned with other lines.
        if code.contains('\n') || comment.contains('\n') {
            flush_run(&mut run, out);
            out.push_str(&code);
            if !comment.is_empty() {
                out.push(' ');
                out.push_str(&comment);
            }
            out.push('\n');
        } else {
            run.push((code, comment));
        }
        started = true;
        at_line_start = f.is_none_or(|f| f.terminator.ends_with('\n'));
    }
    // Without nodes, the leading decor is all there is.
    leading.push_str(&trailing);
    let mut placed = place(&leading, !at_line_start, false);
    end_line(&placed.rest, &mut run, out);
    flush_run(&mut run, out);
    while placed.lines.last() == Some(&None) {
        placed.lines.pop();
    }
    flush(placed.lines, level, started, out);
}

/// Ends the line last written with `rest` (comments that followed it on its line).
fn end_line(rest: &str, run: &mut Run, out: &mut String) {
    if rest.is_empty() {
        return;
    }
    if let Some((_, comment)) = run.last_mut() {
        if !comment.is_empty() {
            comment.push(' ');
        }
        comment.push_str(rest);
    } else {
        // The `{` line, or a node written on several lines.
        if out.ends_with('\n') {
            out.pop();
        }
        out.push(' ');
        out.push_str(rest);
        out.push('\n');
    }
}

/// Writes a run of one-line nodes, their trailing comments aligned two spaces after
/// the longest line that has one.
fn flush_run(run: &mut Run, out: &mut String) {
    let width = run
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(code, _)| code.chars().count())
        .max()
        .unwrap_or(0);
    for (code, comment) in run.drain(..) {
        out.push_str(&code);
        if !comment.is_empty() {
            for _ in code.chars().count()..width + 2 {
                out.push(' ');
            }
            out.push_str(&comment);
        }
        out.push('\n');
    }
}

/// Writes comment lines at `level` (each comment's first line indented, the rest of it
/// as written); blank lines at the start of a block or file (`!started`) are dropped.
/// Returns whether a line was written.
fn flush(lines: Vec<Option<String>>, level: usize, started: bool, out: &mut String) -> bool {
    let mut wrote = false;
    for l in lines {
        match l {
            Some(t) => {
                indent(level, out);
                out.push_str(&t);
            }
            None if !started && !wrote => continue,
            None => {}
        }
        out.push('\n');
        wrote = true;
    }
    wrote
}

fn indent(level: usize, out: &mut String) {
    for _ in 0..level {
        out.push_str(INDENT);
    }
}

/// Decor inside a line ([`decor::inline`]), continuation lines at `level + 1`.
fn inline_decor(decor: &str, level: usize) -> String {
    decor::inline(decor, &INDENT.repeat(level + 1)[1..])
}

/// Writes a node's code; returns its trailing comment (empty when none).
fn write_node(n: &KdlNode, level: usize, out: &mut String) -> String {
    if let Some(ty) = n.ty() {
        let _ = write!(out, "({})", ident(ty.value()));
    }
    out.push_str(&ident(n.name().value()));
    for e in n.entries() {
        write_entry(e, level, out);
    }
    let f = n.format();
    let inline = |s: &str| inline_decor(s, level);
    let before_children = f.map_or(String::new(), |f| inline(&f.before_children));
    push_inline(&before_children, out);
    if let Some(children) = n.children() {
        if children.nodes().is_empty() && comments(children).is_empty() {
            out.push_str(" {}");
        } else if written_inline(children) {
            out.push_str(" {");
            for c in children.nodes() {
                out.push(' ');
                // An inline block has no comments (`written_inline`).
                let _ = write_node(c, level + 1, out);
                out.push(';');
            }
            out.push_str(" }");
        } else {
            out.push_str(" {\n");
            write_document(children, level + 1, false, out);
            indent(level, out);
            out.push('}');
        }
    }
    let before_term = f.map_or(String::new(), |f| inline(&f.before_terminator));
    let terminator = f.map_or(String::new(), |f| {
        inline(f.terminator.trim_start_matches(';'))
    });
    let trailing = f.map_or(String::new(), |f| inline(&f.trailing));
    // A continuation at the end of the node leaves no spaces at the end of its line.
    [before_term, terminator, trailing]
        .into_iter()
        .map(|mut c| {
            if let Some(i) = c
                .rfind('\n')
                .filter(|&i| c[i + 1..].trim_matches(' ').is_empty())
            {
                c.truncate(i + 1);
            }
            c
        })
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Appends inline comments after a space.
fn push_inline(text: &str, out: &mut String) {
    if !text.is_empty() {
        out.push(' ');
        out.push_str(text);
    }
}

/// Whether a children block was written on one line with no comments.
fn written_inline(d: &KdlDocument) -> bool {
    let no_break = |s: &str| !s.contains('\n') && !s.contains('/');
    d.format()
        .is_none_or(|f| no_break(&f.leading) && no_break(&f.trailing))
        && d.nodes().iter().all(|n| {
            n.format().is_none_or(|f| {
                no_break(&f.leading)
                    && no_break(&f.terminator)
                    && no_break(&f.trailing)
                    && no_break(&f.before_terminator)
                    && no_break(&f.before_children)
            }) && n.entries().iter().all(|e| {
                e.format()
                    .is_none_or(|f| no_break(&f.leading) && no_break(&f.trailing))
            }) && n.children().is_none_or(written_inline)
        })
}

fn write_entry(e: &KdlEntry, level: usize, out: &mut String) {
    let f = e.format();
    let leading = f.map_or(String::new(), |f| inline_decor(&f.leading, level));
    push_inline(&leading, out);
    out.push(' ');
    if let Some(name) = e.name() {
        out.push_str(&ident(name.value()));
        out.push('=');
    }
    if let Some(ty) = e.ty() {
        let _ = write!(out, "({})", ident(ty.value()));
    }
    let repr = f.map(|f| f.value_repr.as_str()).unwrap_or("");
    match e.value() {
        KdlValue::String(s) => {
            if repr.starts_with('#') || repr.starts_with("\"\"\"") {
                out.push_str(repr);
            } else {
                out.push_str(&quote(s));
            }
        }
        KdlValue::Integer(_) | KdlValue::Float(_) if !repr.is_empty() => out.push_str(repr),
        v => {
            let _ = write!(out, "{v}");
        }
    }
    let trailing = f.map_or(String::new(), |f| inline_decor(&f.trailing, level));
    push_inline(&trailing, out);
}

/// A node name or property key: bare where KDL allows it.
fn ident(s: &str) -> String {
    KdlValue::String(s.to_string()).to_string()
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
