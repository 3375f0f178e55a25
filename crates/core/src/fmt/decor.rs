//! The decor of a KDL document (what kdl-rs keeps between nodes and entries: whitespace,
//! newlines, comments, `/-` slashdashed items, line continuations) as tokens, so that
//! `fmt` moves each comment whole and never edits its text.
//!
//! A comment token is the comment exactly as written: `// ...` without its newline,
//! `/* ... */` with its nested comments and its inner lines, or a slashdashed node,
//! entry or children block from `/-` to its end. Only the layout between tokens is
//! `fmt`'s to change.

/// KDL v2's newlines, longest first (`\r\n` before `\r`).
const NEWLINES: [&str; 8] = [
    "\r\n", "\r", "\n", "\u{85}", "\u{b}", "\u{c}", "\u{2028}", "\u{2029}",
];

/// KDL v2's unicode spaces.
const SPACES: [char; 18] = [
    '\u{9}', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}',
    '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}', '\u{200a}', '\u{202f}', '\u{205f}',
    '\u{3000}',
];

/// One piece of decor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A run of spaces and tabs.
    Space,
    /// One newline (any of KDL's).
    Newline,
    /// The `\` of a line continuation.
    Cont,
    /// A comment, verbatim (see the module documentation).
    Comment(&'a str),
    /// Any other character (a `;`, a byte-order mark), verbatim.
    Other(&'a str),
}

fn newline_len(s: &str) -> Option<usize> {
    NEWLINES
        .iter()
        .find(|n| s.starts_with(**n))
        .map(|n| n.len())
}

fn space_len(s: &str) -> Option<usize> {
    s.chars()
        .next()
        .filter(|c| SPACES.contains(c))
        .map(char::len_utf8)
}

/// Length of the `//` comment at the start of `s`, without its newline.
fn line_comment_len(s: &str) -> usize {
    s.char_indices()
        .find(|&(i, _)| newline_len(&s[i..]).is_some())
        .map_or(s.len(), |(i, _)| i)
}

/// Length of the `/* */` comment (nested ones included) at the start of `s`.
fn block_comment_len(s: &str) -> usize {
    let mut depth = 0usize;
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with("/*") {
            depth += 1;
            i += 2;
        } else if rest.starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    s.len()
}

/// Length of the quoted or raw string at the start of `s` (`"…"`, `"""…"""`, `#"…"#`,
/// `#"""…"""#`), or `None` when `s` does not start one (`#true`).
fn string_len(s: &str) -> Option<usize> {
    let hashes = s.bytes().take_while(|&b| b == b'#').count();
    let body = &s[hashes..];
    if !body.starts_with('"') {
        return None;
    }
    let quotes = if body.starts_with("\"\"\"") { 3 } else { 1 };
    let start = hashes + quotes;
    if hashes > 0 {
        let close = format!("{}{}", "\"".repeat(quotes), "#".repeat(hashes));
        return Some(
            s[start..]
                .find(&close)
                .map_or(s.len(), |j| start + j + close.len()),
        );
    }
    let close = &body[..quotes];
    let mut i = start;
    while i < s.len() {
        let rest = &s[i..];
        if let Some(escaped) = rest.strip_prefix('\\') {
            i += 1 + escaped.chars().next().map_or(0, char::len_utf8);
        } else if rest.starts_with(close) {
            return Some(i + quotes);
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    Some(s.len())
}

/// Length of the `\` line continuation at the start of `s`: the `\`, spaces, an optional
/// `//` comment and the newline.
fn escline_len(s: &str) -> usize {
    let mut i = 1;
    while let Some(n) = space_len(&s[i..]) {
        i += n;
    }
    if s[i..].starts_with("//") {
        i += line_comment_len(&s[i..]);
    }
    i + newline_len(&s[i..]).unwrap_or(0)
}

/// Length of the slashdashed item at the start of `s` (which starts with `/-`): the
/// space and comments after `/-`, then the node, entry or block it comments out, up to
/// a newline, `;` or `//` outside braces (trailing spaces not included).
fn slashdash_len(s: &str) -> usize {
    let mut i = 2;
    loop {
        let rest = &s[i..];
        let n = if let Some(n) = space_len(rest).or_else(|| newline_len(rest)) {
            n
        } else if rest.starts_with("//") {
            line_comment_len(rest)
        } else if rest.starts_with("/*") {
            block_comment_len(rest)
        } else if rest.starts_with('\\') {
            escline_len(rest)
        } else {
            break;
        };
        i += n;
    }
    let mut depth = 0usize;
    let mut end = i;
    while i < s.len() {
        let rest = &s[i..];
        let at_top = depth == 0;
        if at_top && (newline_len(rest).is_some() || rest.starts_with(';')) {
            break;
        }
        let n = if rest.starts_with("//") {
            if at_top {
                break;
            }
            line_comment_len(rest)
        } else if rest.starts_with("/*") {
            block_comment_len(rest)
        } else if let Some(n) = string_len(rest) {
            n
        } else if rest.starts_with('\\') {
            escline_len(rest)
        } else if let Some(n) = space_len(rest) {
            i += n;
            continue;
        } else {
            match rest.as_bytes()[0] {
                b'{' => depth += 1,
                b'}' if at_top => break,
                b'}' => depth -= 1,
                _ => {}
            }
            rest.chars().next().map_or(1, char::len_utf8)
        };
        i += n;
        end = i;
    }
    end
}

/// The tokens of a decor string, in order; their texts cover it exactly.
pub(crate) fn tokens(s: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        let (tok, n) = if let Some(n) = newline_len(rest) {
            (Tok::Newline, n)
        } else if space_len(rest).is_some() {
            let mut n = 0;
            while let Some(k) = space_len(&rest[n..]) {
                n += k;
            }
            (Tok::Space, n)
        } else if rest.starts_with("//") {
            let n = line_comment_len(rest);
            (Tok::Comment(&rest[..n]), n)
        } else if rest.starts_with("/*") {
            let n = block_comment_len(rest);
            (Tok::Comment(&rest[..n]), n)
        } else if rest.starts_with("/-") {
            let n = slashdash_len(rest);
            (Tok::Comment(&rest[..n]), n)
        } else if rest.starts_with('\\') {
            (Tok::Cont, 1)
        } else {
            let n = rest.chars().next().map_or(1, char::len_utf8);
            (Tok::Other(&rest[..n]), n)
        };
        out.push(tok);
        i += n;
    }
    out
}

/// The comments of a decor string, verbatim, in order.
pub(crate) fn comments(s: &str) -> impl Iterator<Item = &str> {
    tokens(s).into_iter().filter_map(|t| match t {
        Tok::Comment(c) => Some(c),
        _ => None,
    })
}

/// The decor between lines (a node's leading decor, a document's leading and
/// trailing decor) as lines of text: one per newline outside comments, plus the text
/// after the last newline. A line holds its comments one space apart (line
/// continuations dropped); an empty line holds none.
pub(crate) fn layout_lines(s: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    // After a `\`: its newline joins the lines, unless a `//` comment came first.
    let mut joining = false;
    for t in tokens(s) {
        match t {
            Tok::Space => {}
            Tok::Cont => joining = true,
            Tok::Newline if joining => joining = false,
            Tok::Newline => lines.push(std::mem::take(&mut line)),
            Tok::Comment(c) | Tok::Other(c) => {
                if c.starts_with("//") {
                    joining = false;
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(c);
            }
        }
    }
    lines.push(line);
    lines
}

/// Decor inside a line (around entries, before a block or the terminator): its
/// comments in order, one space apart, verbatim. A `//` comment inside a line
/// continuation keeps the continuation: `\ // note`, a newline and `cont`, the
/// indentation of the continued line less the one space that whatever follows is
/// written after. A `//` comment ending the line (a terminator) comes last, without its
/// newline.
pub(crate) fn inline(s: &str, cont: &str) -> String {
    let mut out = String::new();
    let mut in_cont = false;
    for t in tokens(s) {
        match t {
            Tok::Space => {}
            Tok::Cont => in_cont = true,
            Tok::Newline => in_cont = false,
            Tok::Comment(c) | Tok::Other(c) => {
                if !out.is_empty() {
                    out.push(' ');
                }
                if in_cont && c.starts_with("//") {
                    out.push_str("\\ ");
                    out.push_str(c);
                    out.push('\n');
                    out.push_str(cont);
                    in_cont = false;
                } else {
                    out.push_str(c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<&str> {
        comments(s).collect()
    }

    #[test]
    fn comments_are_whole() {
        assert_eq!(
            texts(" // a  \r\n  /* b\n   c */ x"),
            ["// a  ", "/* b\n   c */"]
        );
        assert_eq!(texts("/* a /* b */ c\n */"), ["/* a /* b */ c\n */"]);
        assert_eq!(texts("/* open"), ["/* open"]);
    }

    #[test]
    fn slashdash_items_end_at_the_end_of_what_they_comment_out() {
        assert_eq!(
            texts("/-a 1 \"}\\\"\" {\n  b\n}\n// c"),
            ["/-a 1 \"}\\\"\" {\n  b\n}", "// c"]
        );
        assert_eq!(texts(" /- x=#\"a\nb\"# "), ["/- x=#\"a\nb\"#"]);
        assert_eq!(texts("/-\n  node;"), ["/-\n  node"]);
        assert_eq!(
            texts("/-n \"\"\"\n  }\n  \"\"\" // c"),
            ["/-n \"\"\"\n  }\n  \"\"\"", "// c"]
        );
    }

    #[test]
    fn lines_and_inline_text() {
        assert_eq!(
            layout_lines(" // a\n\n  /* b\n c */ \\\n x"),
            ["// a", "", "/* b\n c */ x"]
        );
        assert_eq!(
            inline(" /* a */  \\ // b\n   ", "   "),
            "/* a */ \\ // b\n   "
        );
        assert_eq!(inline("\\ // b\n /* c */", "   "), "\\ // b\n    /* c */");
        assert_eq!(inline("// c\r\n", ""), "// c");
    }
}
