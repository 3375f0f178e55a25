//! Reading `kubectl get nodes -o json|yaml`: the document (JSON or YAML), the Node
//! objects in it, and where each node and key sits in the text (for spans).

use super::{GP730, GP731, GP732};
use crate::diag::Diagnostic;
use crate::source::{FileId, Span};
use serde_json::Value;
use std::collections::BTreeMap;

/// A taint of `spec.taints`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

/// What gpuplan reads of one Node object.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct RawNode {
    /// Position among the input's Nodes (for spans).
    #[serde(skip)]
    pub index: usize,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub capacity: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
}

/// The Nodes of a document, where they are, what was skipped and how many skipped
/// items were Nodes (objects of kind `Node`, or of no kind, without a name).
pub(crate) struct Read {
    pub nodes: Vec<RawNode>,
    pub loc: Locator,
    pub diags: Vec<Diagnostic>,
    /// Items that look like Nodes but cannot be read (no `metadata`, no name):
    /// (position in the list, why).
    pub unreadable: Vec<(usize, String)>,
}

/// Parses the text: the Nodes it holds, with diagnostics for what it skips, and which
/// skipped items were Nodes.
pub(crate) fn read(text: &str, file: FileId) -> Read {
    let (nodes, loc, diags, unreadable) = parse_nodes(text, file);
    Read {
        nodes,
        loc,
        diags,
        unreadable,
    }
}

type Parsed = (Vec<RawNode>, Locator, Vec<Diagnostic>, Vec<(usize, String)>);

fn parse_nodes(text: &str, file: FileId) -> Parsed {
    let mut diags = Vec::new();
    let doc = match parse(text) {
        Ok(v) => v,
        Err(e) => {
            let d = syntax_error(file, e);
            return (Vec::new(), Locator::whole(text, file), vec![d], Vec::new());
        }
    };
    let items: Vec<&Value> = match items(&doc) {
        Some(v) => v,
        None => {
            let d = Diagnostic::error(
                GP731,
                "the input is not a Kubernetes Node nor a List of Nodes",
            )
            .at(
                Span::new(file, 0, first_line_len(text)),
                "expected `kind: List` with `items`, or `kind: Node`",
            )
            .with_help("give the output of `kubectl get nodes -o json` (or `-o yaml`)");
            return (Vec::new(), Locator::whole(text, file), vec![d], Vec::new());
        }
    };
    let loc = Locator::new(text, file, items.len());
    let mut out = Vec::new();
    let mut unreadable = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match node(i, item) {
            Ok(n) => out.push(n),
            Err((is_node, why)) => {
                if is_node {
                    unreadable.push((i, why.clone()));
                }
                diags.push(
                    Diagnostic::warning(
                        GP732,
                        format!("item {} of the list is skipped: {why}", i + 1),
                    )
                    .at(loc.item(i), "this item")
                    .with_help("give the Node objects as `kubectl get nodes -o json` prints them"),
                );
            }
        }
    }
    (out, loc, diags, unreadable)
}

fn first_line_len(text: &str) -> usize {
    text.lines().next().map_or(0, str::len)
}

/// A syntax error: where, in which language, what.
type SyntaxError = (usize, &'static str, String);

/// JSON when the text starts with `{` or `[`, YAML otherwise (YAML 1.2 reads JSON too,
/// but serde_json's errors are better for JSON).
fn parse(text: &str) -> Result<Value, SyntaxError> {
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        serde_json::from_str::<Value>(text)
            .map_err(|e| (offset_of(text, e.line(), e.column()), "JSON", e.to_string()))
    } else {
        serde_yaml::from_str::<Value>(text).map_err(|e| {
            let off = e.location().map_or(0, |l| l.index());
            (off.min(text.len()), "YAML", e.to_string())
        })
    }
}

fn syntax_error(file: FileId, (off, what, msg): SyntaxError) -> Diagnostic {
    Diagnostic::error(GP730, format!("the input cannot be read as {what}: {msg}"))
        .at(Span::new(file, off, 0), "here")
        .with_help("give the whole output of `kubectl get nodes -o json` (or `-o yaml`)")
}

/// Byte offset of a 1-based line and column (serde_json counts columns in bytes).
fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + col.saturating_sub(1)).min(text.len())
}

/// The Node objects of a document: a `List`/`NodeList`'s `items`, or one `Node`.
fn items(doc: &Value) -> Option<Vec<&Value>> {
    let obj = doc.as_object()?;
    match obj.get("items") {
        Some(Value::Array(a)) => Some(a.iter().collect()),
        Some(Value::Null) => Some(Vec::new()),
        Some(_) => None,
        None if obj.get("kind").and_then(Value::as_str) == Some("Node") => Some(vec![doc]),
        None => None,
    }
}

/// One item: a Node, or why not (and whether it is a Node all the same: one without
/// `metadata` or a name, which the import then lists as left out).
fn node(index: usize, v: &Value) -> Result<RawNode, (bool, String)> {
    let obj = v
        .as_object()
        .ok_or((false, "it is not an object".to_string()))?;
    if let Some(kind) = obj.get("kind").and_then(Value::as_str) {
        if kind != "Node" {
            return Err((false, format!("it is a `{kind}`, not a `Node`")));
        }
    }
    let meta = v
        .get("metadata")
        .ok_or((true, "it has no `metadata`".to_string()))?;
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .ok_or((true, "it has no `metadata.name`".to_string()))?
        .to_string();
    Ok(RawNode {
        index,
        name,
        labels: string_map(meta.get("labels")),
        capacity: string_map(v.get("status").and_then(|s| s.get("capacity"))),
        taints: taints(v.get("spec").and_then(|s| s.get("taints"))),
    })
}

/// A map of strings; numbers and booleans (unquoted YAML values) read as their text,
/// other values are left out.
fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    let Some(Value::Object(m)) = v else {
        return BTreeMap::new();
    };
    m.iter()
        .filter_map(|(k, v)| scalar(v).map(|s| (k.clone(), s)))
        .collect()
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn taints(v: Option<&Value>) -> Vec<Taint> {
    let Some(Value::Array(a)) = v else {
        return Vec::new();
    };
    a.iter()
        .filter_map(|t| {
            Some(Taint {
                key: t.get("key").and_then(scalar)?,
                value: t.get("value").and_then(scalar).filter(|s| !s.is_empty()),
                effect: t.get("effect").and_then(scalar).unwrap_or_default(),
            })
        })
        .collect()
}

/// Where the items of the list and their keys sit in the text: found by scanning the
/// text, not by the parser (serde keeps no positions). When the scan does not find one
/// region per item, every item's region is the whole text: spans are then less precise
/// but still point at a matching key.
pub(crate) struct Locator {
    text: String,
    file: FileId,
    regions: Vec<(usize, usize)>,
}

impl Locator {
    fn whole(text: &str, file: FileId) -> Self {
        Locator {
            text: text.to_string(),
            file,
            regions: Vec::new(),
        }
    }

    fn new(text: &str, file: FileId, count: usize) -> Self {
        let t = text.trim_start();
        let starts = if t.starts_with('{') || t.starts_with('[') {
            json_item_starts(text)
        } else {
            yaml_item_starts(text)
        };
        let regions = if starts.len() == count && count > 0 {
            let mut r: Vec<(usize, usize)> = Vec::new();
            for (i, s) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(text.len());
                r.push((*s, end));
            }
            r
        } else {
            Vec::new()
        };
        Locator {
            text: text.to_string(),
            file,
            regions,
        }
    }

    fn region(&self, i: usize) -> (usize, usize) {
        self.regions.get(i).copied().unwrap_or((0, self.text.len()))
    }

    /// The first line of item `i`.
    pub(crate) fn item(&self, i: usize) -> Span {
        let (s, e) = self.region(i);
        let len = self.text[s..e].find('\n').unwrap_or(e - s);
        Span::new(self.file, s, len)
    }

    /// The node's name (after a `name` key) in item `i`, else its first line.
    pub(crate) fn node(&self, i: usize, name: &str) -> Span {
        if name.is_empty() {
            return self.item(i);
        }
        let (s, e) = self.region(i);
        let hay = &self.text[s..e];
        let mut from = 0;
        while let Some(p) = hay[from..].find(name) {
            let at = from + p;
            let line_start = hay[..at].rfind('\n').map_or(0, |x| x + 1);
            let before = hay[line_start..at].trim_end_matches(['"', '\'', ' ']);
            if before.ends_with("name\":") || before.ends_with("name:") {
                return Span::new(self.file, s + at, name.len());
            }
            from = at + name.len().max(1);
        }
        self.item(i)
    }

    /// A key (`nvidia.com/gpu.product`) followed by `:` in item `i`: the key and the
    /// rest of its line (the value), else the node.
    pub(crate) fn key(&self, i: usize, key: &str, name: &str) -> Span {
        if key.is_empty() {
            // An empty key (a taint's) is found everywhere: point at the node.
            return self.node(i, name);
        }
        let (s, e) = self.region(i);
        let hay = &self.text[s..e];
        let mut from = 0;
        while let Some(p) = hay[from..].find(key) {
            let at = from + p;
            let after = hay[at + key.len()..].trim_start_matches(['"', '\'']);
            let before_ok = at == 0
                || !hay[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '/' || c == '-');
            if before_ok && after.trim_start().starts_with(':') {
                let start = if hay[..at].ends_with(['"', '\'']) {
                    at - 1
                } else {
                    at
                };
                let end = value_end(hay, at + key.len());
                return Span::new(self.file, s + start, end - start);
            }
            from = at + key.len().max(1);
        }
        self.node(i, name)
    }
}

/// The end of the value after a key that ends at `from`: past its closing quote, or at
/// the first `,`, `}`, `]` or line end.
fn value_end(hay: &str, from: usize) -> usize {
    let b = hay.as_bytes();
    let mut i = from;
    // The key's closing quote, the colon and blanks.
    while i < b.len() && matches!(b[i], b'"' | b'\'' | b' ' | b'\t' | b':') {
        i += 1;
    }
    if i > 0 && i <= b.len() && matches!(b[i - 1], b'"' | b'\'') && i - 1 > from {
        let quote = b[i - 1];
        while i < b.len() && b[i] != quote && b[i] != b'\n' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        return (i + 1).min(b.len());
    }
    while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b'\n' | b'\r') {
        i += 1;
    }
    i.min(b.len())
}

/// Byte offsets where the elements of the top-level `"items"` array start (JSON).
fn json_item_starts(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut i) = (0usize, 0usize);
    let mut items_depth: Option<usize> = None;
    let mut last_string: (usize, usize) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                last_string = (start, i.min(b.len()));
            }
            b'[' | b'{' => {
                if items_depth == Some(depth) && b[i] == b'{' {
                    out.push(i);
                }
                if b[i] == b'[' && depth == 1 && &text[last_string.0..last_string.1] == "items" {
                    items_depth = Some(depth + 1);
                }
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if items_depth == Some(depth + 1) && b[i] == b']' {
                    items_depth = None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Byte offsets of the `- ` lines that start the entries of the top-level `items:`
/// sequence (YAML as kubectl prints it, or indented).
fn yaml_item_starts(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut in_items = false;
    let mut indent: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end();
        let lead = body.len() - body.trim_start().len();
        if !in_items {
            in_items = lead == 0 && body.starts_with("items:");
        } else if !body.trim().is_empty() && !body.trim_start().starts_with('#') {
            let dash = body.trim_start().starts_with("- ") || body.trim_start() == "-";
            match indent {
                None if dash => {
                    indent = Some(lead);
                    out.push(offset + lead);
                }
                Some(n) if dash && lead == n => out.push(offset + lead),
                Some(n) if lead < n || (lead == n && !dash) => break,
                None if lead == 0 => break,
                _ => {}
            }
        }
        offset += line.len();
    }
    out
}
