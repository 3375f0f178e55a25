//! `gpuplan fmt`: the canonical layout of a gpuplan file, like `terraform fmt`.
//!
//! The rules, which are all there is to the canonical form:
//! - one node per line, children indented by four spaces, `{` on the node's line and
//!   `}` on its own line; a block written on one line without comments stays on one line
//!   as `{ a; b; }`;
//! - one space between a node's name and each entry, none around `=`; line
//!   continuations (`\`) are joined;
//! - node names and property keys bare where KDL allows it, quoted otherwise; string
//!   values always quoted (raw `#"…"#` and multi-line `"""` strings stay as written);
//!   numbers as written (`1_000`, `0x10` keep their spelling); `#true`, `#false`, `#null`;
//! - nodes keep the order they were written in; comments stay where they were, each on
//!   its own line at the indentation of the node it precedes, or at the end of the line
//!   they ended; trailing comments of consecutive one-line nodes are aligned two spaces
//!   after the longest of those lines; runs of blank lines become one, none at the start
//!   of a block or a file, one newline at the end of the file.
//!
//! The formatter is pure ([`format`]) and refuses rather than guesses: the result is
//! parsed again and must give the same nodes, entries and values as the input, and the
//! same comments (compared without whitespace); otherwise the file is left alone with
//! GP761. Formatting is idempotent (`tests/fmt.rs` checks every example, docs block and
//! test corpus file).

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};
use kdl::{KdlDocument, KdlEntry, KdlIdentifier, KdlNode, KdlValue};
use std::fmt::Write as _;

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
    } else {
        format!("{trimmed}\n")
    };
    check_same(file, text, &doc, &formatted)?;
    Ok(formatted)
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
    if decor(before) != decor(&after) {
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

/// Every comment of a document, in order, without whitespace and line continuations.
fn decor(doc: &KdlDocument) -> String {
    fn squeeze(s: &str, out: &mut String) {
        out.extend(s.chars().filter(|c| !c.is_whitespace() && *c != '\\'));
    }
    fn node(n: &KdlNode, out: &mut String) {
        let f = n.format();
        if let Some(f) = f {
            for s in [&f.leading, &f.before_ty_name, &f.after_ty_name, &f.after_ty] {
                squeeze(s, out);
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
                    squeeze(s, out);
                }
            }
        }
        if let Some(f) = f {
            squeeze(&f.before_children, out);
        }
        if let Some(c) = n.children() {
            document(c, out);
        }
        if let Some(f) = f {
            squeeze(&f.before_terminator, out);
            squeeze(&f.terminator.replace(';', ""), out);
            squeeze(&f.trailing, out);
        }
    }
    fn document(d: &KdlDocument, out: &mut String) {
        if let Some(f) = d.format() {
            squeeze(&f.leading, out);
        }
        for n in d.nodes() {
            node(n, out);
        }
        if let Some(f) = d.format() {
            squeeze(&f.trailing, out);
        }
    }
    let mut out = String::new();
    document(doc, &mut out);
    out
}

/// Writes the nodes of `doc` at `level`, with the comments around them. `top`: the
/// whole file (the text before its first node starts on a line of its own; in a block
/// it starts on the `{` line).
fn write_document(doc: &KdlDocument, level: usize, top: bool, out: &mut String) {
    let (leading, trailing) = doc.format().map_or((String::new(), String::new()), |f| {
        (f.leading.clone(), f.trailing.clone())
    });
    let mut lines = Vec::new();
    let mut at_line_start = top;
    comment_lines(&leading, !at_line_start, &mut lines);
    if leading.contains('\n') {
        at_line_start = true;
    }
    // Consecutive one-line nodes: their trailing comments are aligned.
    let mut run: Vec<(String, String)> = Vec::new();
    for n in doc.nodes() {
        let f = n.format();
        comment_lines(
            f.map_or("", |f| f.leading.as_str()),
            !at_line_start,
            &mut lines,
        );
        if !lines.is_empty() {
            flush_run(&mut run, out);
        }
        // Blank lines at the start of a block or file go.
        while lines.first() == Some(&None) && out_ends_block_start(out, top) {
            lines.remove(0);
        }
        flush(&lines, level, out);
        lines.clear();
        let mut code = String::new();
        indent(level, &mut code);
        let comment = write_node(n, level, &mut code);
        if code.contains('\n') {
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
        at_line_start = f.is_none_or(|f| f.terminator.ends_with('\n'));
    }
    flush_run(&mut run, out);
    comment_lines(&trailing, !at_line_start, &mut lines);
    while lines.first() == Some(&None) && out_ends_block_start(out, top) {
        lines.remove(0);
    }
    while lines.last() == Some(&None) {
        lines.pop();
    }
    flush(&lines, level, out);
}

/// Writes a run of one-line nodes, their trailing comments aligned two spaces after
/// the longest line that has one.
fn flush_run(run: &mut Vec<(String, String)>, out: &mut String) {
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

/// Whether nothing but the opening of a block (or of the file) was written yet.
fn out_ends_block_start(out: &str, top: bool) -> bool {
    if top {
        out.trim().is_empty()
    } else {
        out.ends_with("{\n")
    }
}

/// Appends the comment lines of a decor string to `lines`, `None` for one blank line
/// (runs collapsed). The text after the last newline is the indentation of what follows
/// (or, when it holds a comment, a line of its own). `first_is_rest`: the text before
/// the first newline ends a line already written (the `{` line, or a line ended by `;`),
/// so it is a blank line only if it holds nothing at all.
fn comment_lines(decor: &str, first_is_rest: bool, lines: &mut Vec<Option<String>>) {
    let parts: Vec<&str> = decor.split('\n').collect();
    let n = parts.len();
    for (i, p) in parts.iter().enumerate() {
        let t = p.trim();
        let last = i + 1 == n;
        if !t.is_empty() {
            lines.push(Some(t.to_string()));
        } else if !(last || i == 0 && first_is_rest) && lines.last() != Some(&None) {
            lines.push(None);
        }
    }
}

fn flush(lines: &[Option<String>], level: usize, out: &mut String) {
    for l in lines {
        if let Some(t) = l {
            indent(level, out);
            out.push_str(t);
        }
        out.push('\n');
    }
}

fn indent(level: usize, out: &mut String) {
    for _ in 0..level {
        out.push_str(INDENT);
    }
}

/// Comments written inline (inside a line): kept, with one space before; line
/// continuations and surrounding whitespace dropped.
fn inline_decor(decor: &str) -> String {
    let mut s = String::new();
    let mut chars = decor.chars().peekable();
    let mut in_line_comment = false;
    while let Some(c) = chars.next() {
        if in_line_comment {
            s.push(c);
            if c == '\n' {
                in_line_comment = false;
            }
            continue;
        }
        if c == '/' && chars.peek() == Some(&'/') {
            in_line_comment = true;
            s.push(c);
            continue;
        }
        if c == '\\' {
            // A line continuation: `\`, optional spaces and a comment, a newline.
            continue;
        }
        s.push(c);
    }
    let collapsed: Vec<&str> = s.split_whitespace().collect();
    if s.contains("//") || s.contains("/*") || s.contains("/-") {
        // Keep line comments' newlines (they end the comment).
        let mut out = String::new();
        for (i, line) in s.split('\n').enumerate() {
            let t = line.split_whitespace().collect::<Vec<_>>().join(" ");
            if t.is_empty() {
                continue;
            }
            if i > 0 && !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&t);
        }
        out
    } else {
        collapsed.join(" ")
    }
}

/// Writes a node's code; returns its trailing comment (empty when none).
fn write_node(n: &KdlNode, level: usize, out: &mut String) -> String {
    if let Some(ty) = n.ty() {
        let _ = write!(out, "({})", ident(ty.value()));
    }
    out.push_str(&ident(n.name().value()));
    for e in n.entries() {
        write_entry(e, out);
    }
    let f = n.format();
    let before_children = f.map_or(String::new(), |f| inline_decor(&f.before_children));
    if !before_children.is_empty() {
        out.push(' ');
        out.push_str(&before_children);
    }
    if let Some(children) = n.children() {
        if children.nodes().is_empty() && decor(children).is_empty() {
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
    let before_term = f.map_or(String::new(), |f| inline_decor(&f.before_terminator));
    let terminator = f.map_or(String::new(), |f| {
        inline_decor(f.terminator.trim_start_matches(';'))
    });
    let trailing = f.map_or(String::new(), |f| inline_decor(&f.trailing));
    [before_term, terminator, trailing]
        .into_iter()
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
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

fn write_entry(e: &KdlEntry, out: &mut String) {
    let f = e.format();
    let leading = f.map_or(String::new(), |f| inline_decor(&f.leading));
    out.push(' ');
    if !leading.is_empty() {
        out.push_str(&leading);
        out.push(' ');
    }
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
    let trailing = f.map_or(String::new(), |f| inline_decor(&f.trailing));
    if !trailing.is_empty() {
        out.push(' ');
        out.push_str(&trailing);
    }
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

    #[test]
    fn syntax_errors_are_refused_with_a_code() {
        let mut sources = crate::source::SourceMap::new();
        let f = sources.add("t.kdl", "a {".to_string());
        let err = format(f, "a {").expect_err("does not parse");
        assert_eq!(err[0].code, GP760);
        assert!(err.len() > 1);
    }
}
