//! The layout `fmt` writes (the rules are in [`crate::fmt`]'s documentation): nodes,
//! entries and blocks, and the decor between them placed by [`place`], each comment
//! kept whole ([`super::decor`]).

use super::{comments, decor, quote};
use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use std::fmt::Write as _;

const INDENT: &str = "    ";

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
pub(super) fn write_document(doc: &KdlDocument, level: usize, top: bool, out: &mut String) {
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
