//! Checked access to one KDL node against its [`NodeDef`].
//!
//! [`NodeView::check`] reports, once, everything structurally wrong with a node:
//! unknown properties and children (with a did-you-mean), missing or extra arguments,
//! values of the wrong type and malformed units. The typed getters afterwards return
//! `None` for anything already reported, so decoders stay short and never report twice.

use super::language::{self, NodeDef, Ty};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{FileId, Span, Spanned};
use crate::suggest;
use crate::units::{self, Bandwidth, Bytes, Duration};
use kdl::{KdlEntry, KdlNode, KdlValue};

pub const GP002: &str = "GP002";
pub const GP003: &str = "GP003";
pub const GP004: &str = "GP004";
pub const GP005: &str = "GP005";

#[derive(Clone, Copy)]
pub struct NodeView<'n> {
    pub node: &'n KdlNode,
    pub def: &'static NodeDef,
    pub file: FileId,
}

fn kind_of(v: &KdlValue) -> &'static str {
    match v {
        KdlValue::String(_) => "a string",
        KdlValue::Integer(_) => "an integer",
        KdlValue::Float(_) => "a number",
        KdlValue::Bool(_) => "a boolean",
        KdlValue::Null => "#null",
    }
}

fn expects(ty: Ty) -> &'static str {
    match ty {
        Ty::Int => "an integer",
        Ty::Number => "a number",
        Ty::Bool => "a boolean",
        _ => "a string",
    }
}

/// Checks a value against a type; returns the problem (code, message, hint).
fn check_value(ty: Ty, v: &KdlValue) -> Result<(), (&'static str, String, Option<String>)> {
    let wrong = || {
        let hint = match (ty, v) {
            (Ty::Int | Ty::Number, KdlValue::String(s)) if s.trim().parse::<f64>().is_ok() => {
                Some(format!("write the number without quotes: {}", s.trim()))
            }
            (Ty::Bool, KdlValue::String(s)) if s == "true" || s == "false" => {
                Some(format!("KDL v2 booleans are written #{s}"))
            }
            (Ty::Bytes, KdlValue::Integer(n)) => {
                Some(format!("write the size with a unit, e.g. \"{n}GiB\""))
            }
            (Ty::Duration, KdlValue::Integer(n)) => {
                Some(format!("write the duration with a unit, e.g. \"{n}m\""))
            }
            (Ty::Version, KdlValue::Float(f)) => Some(format!(
                "quote versions so that trailing zeros survive: \"{f}\""
            )),
            _ => None,
        };
        Err((
            GP004,
            format!(
                "expected {} ({}), found {}",
                expects(ty),
                ty.describe(),
                kind_of(v)
            ),
            hint,
        ))
    };
    match ty {
        Ty::Int => match v {
            KdlValue::Integer(n) if (0..=u32::MAX as i128).contains(n) => Ok(()),
            KdlValue::Integer(n) => Err((
                GP005,
                format!("{n} is out of range (0 to {})", u32::MAX),
                None,
            )),
            _ => wrong(),
        },
        Ty::Number => match v {
            KdlValue::Integer(n) if n.unsigned_abs() <= 1u128 << 53 => Ok(()),
            KdlValue::Float(f) if f.is_finite() => Ok(()),
            KdlValue::Integer(_) | KdlValue::Float(_) => {
                Err((GP005, "number out of range".into(), None))
            }
            _ => wrong(),
        },
        Ty::Bool => match v {
            KdlValue::Bool(_) => Ok(()),
            _ => wrong(),
        },
        _ => {
            let Some(s) = v.as_string() else {
                return wrong();
            };
            let bad = |m: String| Err((GP005, m, None));
            match ty {
                Ty::Bytes => units::parse_bytes(s).map(|_| ()).or_else(bad),
                Ty::Duration => units::parse_duration(s).map(|_| ()).or_else(bad),
                Ty::Bandwidth => units::parse_bandwidth(s).map(|_| ()).or_else(bad),
                Ty::Percent => units::parse_percent(s).map(|_| ()).or_else(bad),
                Ty::IndexSet => units::parse_index_set(s).map(|_| ()).or_else(bad),
                Ty::NamePattern => units::expand_names(s).map(|_| ()).or_else(bad),
                Ty::Version => parse_version(s).map(|_| ()).or_else(bad),
                Ty::Enum(vals) => {
                    if vals.contains(&s) {
                        Ok(())
                    } else {
                        Err((
                            GP005,
                            format!("`{s}` is not {}", ty.describe()),
                            Some(suggest::hint(s, vals.iter().copied(), "value")),
                        ))
                    }
                }
                Ty::Str | Ty::Ref(_) => {
                    if s.trim().is_empty() {
                        bad("empty name".into())
                    } else {
                        Ok(())
                    }
                }
                Ty::Int | Ty::Number | Ty::Bool => unreachable!(),
            }
        }
    }
}

/// Parses `22.05`, `1.31`, `0.19.2` into numeric parts.
pub fn parse_version(s: &str) -> Result<Vec<u32>, String> {
    let parts: Result<Vec<u32>, _> = s
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse::<u32>())
        .collect();
    match parts {
        Ok(v) if !v.is_empty() && v.len() <= 4 => Ok(v),
        _ => Err(format!("`{s}` is not a version like \"22.05\"")),
    }
}

/// The definition of a child named `name` under `parent`.
fn child_def(parent: &NodeDef, name: &str) -> Option<&'static NodeDef> {
    parent
        .children
        .iter()
        .filter_map(|d| language::def(d))
        .find(|d| d.name() == name)
}

impl<'n> NodeView<'n> {
    pub fn new(node: &'n KdlNode, def: &'static NodeDef, file: FileId) -> Self {
        NodeView { node, def, file }
    }

    fn span_of(&self, s: miette::SourceSpan) -> Span {
        Span::from_miette(self.file, s)
    }

    /// The node's name.
    pub fn name_span(&self) -> Span {
        self.span_of(self.node.name().span())
    }

    /// The node's name and entries, without its children block.
    pub fn head_span(&self) -> Span {
        let start = self.node.span().offset();
        let name_end = self.node.name().span().offset() + self.node.name().span().len();
        let end = self
            .node
            .entries()
            .iter()
            .map(|e| e.span().offset() + e.span().len())
            .max()
            .unwrap_or(name_end)
            .max(name_end);
        Span::new(self.file, start, end.saturating_sub(start))
    }

    pub fn entry_span(&self, e: &KdlEntry) -> Span {
        self.span_of(e.span())
    }

    pub fn args(&self) -> impl Iterator<Item = &'n KdlEntry> {
        self.node.entries().iter().filter(|e| e.name().is_none())
    }

    pub fn prop_entry(&self, key: &str) -> Option<&'n KdlEntry> {
        self.node
            .entries()
            .iter()
            .rev()
            .find(|e| e.name().is_some_and(|n| n.value() == key))
    }

    /// Child nodes with a known definition (unknown ones are reported by `check`).
    pub fn children(&self) -> Vec<NodeView<'n>> {
        let Some(doc) = self.node.children() else {
            return Vec::new();
        };
        doc.nodes()
            .iter()
            .filter_map(|c| {
                child_def(self.def, c.name().value()).map(|d| NodeView::new(c, d, self.file))
            })
            .collect()
    }

    pub fn children_named(&self, name: &str) -> Vec<NodeView<'n>> {
        self.children()
            .into_iter()
            .filter(|c| c.def.name() == name)
            .collect()
    }

    pub fn child(&self, name: &str) -> Option<NodeView<'n>> {
        self.children()
            .into_iter()
            .rev()
            .find(|c| c.def.name() == name)
    }

    /// Reports everything structurally wrong with this node and, recursively, its
    /// known children.
    pub fn check(&self, diags: &mut Diagnostics) {
        let def = self.def;
        let ctx = if def.id.contains('/') {
            format!(
                "`{}` (in `{}`)",
                def.name(),
                def.id.rsplit_once('/').map(|x| x.0).unwrap_or("")
            )
        } else {
            format!("`{}`", def.name())
        };
        if let Some(ty) = self.node.ty() {
            diags.push(
                Diagnostic::warning(
                    GP004,
                    format!("type annotation `({})` on {ctx} is ignored", ty.value()),
                )
                .at(self.span_of(ty.span()), "ignored")
                .with_help(
                    "gpuplan reads values by their position and name; remove the annotation",
                ),
            );
        }
        // Arguments.
        let args: Vec<&KdlEntry> = self.args().collect();
        let variadic = def.args.last().is_some_and(|a| a.variadic);
        for (i, e) in args.iter().enumerate() {
            let adef = def
                .args
                .get(i)
                .or(if variadic { def.args.last() } else { None });
            match adef {
                Some(adef) => self.check_entry(
                    e,
                    adef.ty,
                    &format!("argument `{}` of {ctx}", adef.name),
                    diags,
                ),
                None => {
                    let expect = if def.args.is_empty() {
                        "takes no arguments".to_string()
                    } else {
                        format!(
                            "takes {} argument(s): {}",
                            def.args.len(),
                            def.args
                                .iter()
                                .map(|a| format!("`{}`", a.name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    let hint = match e.value().as_string() {
                        Some(_) if !def.props.is_empty() => format!(
                            "{ctx} {expect}; properties are written key=value ({})",
                            def.props
                                .iter()
                                .map(|p| p.name)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        _ => format!("{ctx} {expect}"),
                    };
                    diags.push(
                        Diagnostic::error(GP004, format!("unexpected argument to {ctx}"))
                            .at(self.entry_span(e), "not expected here")
                            .with_help(hint),
                    );
                }
            }
        }
        for adef in def.args.iter().skip(args.len()).filter(|a| a.required) {
            if variadic && adef.variadic && !args.is_empty() && args.len() >= def.args.len() {
                continue;
            }
            diags.push(
                Diagnostic::error(
                    GP004,
                    format!("{ctx} is missing its `{}` argument", adef.name),
                )
                .at(self.head_span(), format!("needs `{}`", adef.name))
                .with_help(format!(
                    "`{}`: {} ({})",
                    adef.name,
                    adef.doc,
                    adef.ty.describe()
                )),
            );
        }
        // Properties.
        let mut seen: Vec<&str> = Vec::new();
        for e in self.node.entries() {
            let Some(key) = e.name() else { continue };
            let key = key.value();
            match def.prop(key) {
                Some(pdef) => {
                    if seen.contains(&key) {
                        diags.push(
                            Diagnostic::error(
                                GP004,
                                format!("property `{key}` is given twice on {ctx}"),
                            )
                            .at(self.entry_span(e), "second value")
                            .with_help("remove one of them; KDL would silently keep the last"),
                        );
                    }
                    seen.push(key);
                    self.check_entry(e, pdef.ty, &format!("property `{key}` of {ctx}"), diags);
                }
                None => {
                    let names = def.props.iter().map(|p| p.name);
                    let mut d =
                        Diagnostic::error(GP003, format!("unknown property `{key}` on {ctx}"))
                            .at(self.entry_span(e), "unknown property");
                    d = d.with_help(if def.props.is_empty() {
                        format!("{ctx} takes no properties")
                    } else {
                        suggest::hint(key, names, "property")
                    });
                    diags.push(d);
                }
            }
        }
        for pdef in def.props.iter().filter(|p| p.required) {
            if !seen.contains(&pdef.name) {
                diags.push(
                    Diagnostic::error(
                        GP004,
                        format!("{ctx} is missing the `{}` property", pdef.name),
                    )
                    .at(self.head_span(), format!("needs {}=...", pdef.name))
                    .with_help(format!(
                        "`{}`: {} ({})",
                        pdef.name,
                        pdef.doc,
                        pdef.ty.describe()
                    )),
                );
            }
        }
        // Children.
        let Some(doc) = self.node.children() else {
            return;
        };
        let mut counts: Vec<(&str, Span)> = Vec::new();
        for c in doc.nodes() {
            let name = c.name().value();
            match child_def(def, name) {
                Some(cdef) => {
                    let view = NodeView::new(c, cdef, self.file);
                    if !cdef.repeatable {
                        if let Some((_, first)) = counts.iter().find(|(n, _)| *n == cdef.id) {
                            diags.push(
                                Diagnostic::error(
                                    GP004,
                                    format!("`{name}` may appear only once in {ctx}"),
                                )
                                .at(view.name_span(), "repeated")
                                .with_related(*first, "first here")
                                .with_help(format!("merge the two `{name}` nodes into one")),
                            );
                        }
                    }
                    counts.push((cdef.id, view.name_span()));
                    view.check(diags);
                }
                None => {
                    let names = def
                        .children
                        .iter()
                        .filter_map(|d| language::def(d))
                        .map(|d| d.name());
                    let top = language::def(name).map(|d| d.name());
                    let help = if def.children.is_empty() {
                        format!("{ctx} has no children")
                    } else if let Some(t) = top {
                        format!("`{t}` is a top-level node, not a child of {ctx}")
                    } else {
                        suggest::hint(name, names, "child node")
                    };
                    diags.push(
                        Diagnostic::error(GP002, format!("unknown node `{name}` in {ctx}"))
                            .at(self.span_of(c.name().span()), "unknown node")
                            .with_help(help),
                    );
                }
            }
        }
    }

    fn check_entry(&self, e: &KdlEntry, ty: Ty, what: &str, diags: &mut Diagnostics) {
        if let Err((code, msg, hint)) = check_value(ty, e.value()) {
            let mut d = Diagnostic::error(code, format!("invalid {what}: {msg}"))
                .at(self.entry_span(e), "invalid value");
            if let Some(h) = hint {
                d = d.with_help(h);
            } else {
                d = d.with_help(format!("expected {}", ty.describe()));
            }
            diags.push(d);
        }
    }

    // ---- typed getters: None when absent or already reported as invalid ----

    fn ty_of_arg(&self, i: usize) -> Option<Ty> {
        let variadic = self.def.args.last().is_some_and(|a| a.variadic);
        self.def
            .args
            .get(i)
            .or(if variadic { self.def.args.last() } else { None })
            .map(|a| a.ty)
    }

    fn valid_arg(&self, i: usize) -> Option<&'n KdlEntry> {
        let e = self.args().nth(i)?;
        let ty = self.ty_of_arg(i)?;
        check_value(ty, e.value()).ok().map(|_| e)
    }

    fn valid_prop(&self, key: &str) -> Option<&'n KdlEntry> {
        let e = self.prop_entry(key)?;
        let ty = self.def.prop(key)?.ty;
        check_value(ty, e.value()).ok().map(|_| e)
    }

    fn sp<T>(&self, e: &KdlEntry, v: T) -> Spanned<T> {
        Spanned::new(v, self.entry_span(e))
    }

    pub fn arg_str(&self, i: usize) -> Option<Spanned<String>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, e.value().as_string()?.to_string()))
    }

    /// All arguments as strings (variadic nodes).
    pub fn args_str(&self) -> Vec<Spanned<String>> {
        (0..self.args().count())
            .filter_map(|i| self.arg_str(i))
            .collect()
    }

    pub fn arg_u32(&self, i: usize) -> Option<Spanned<u32>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, u32::try_from(e.value().as_integer()?).ok()?))
    }

    pub fn arg_bool(&self, i: usize) -> Option<Spanned<bool>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, e.value().as_bool()?))
    }

    pub fn arg_bytes(&self, i: usize) -> Option<Spanned<Bytes>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, units::parse_bytes(e.value().as_string()?).ok()?))
    }

    pub fn arg_percent(&self, i: usize) -> Option<Spanned<f64>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, units::parse_percent(e.value().as_string()?).ok()?))
    }

    pub fn prop_str(&self, key: &str) -> Option<Spanned<String>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, e.value().as_string()?.to_string()))
    }

    pub fn prop_u32(&self, key: &str) -> Option<Spanned<u32>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, u32::try_from(e.value().as_integer()?).ok()?))
    }

    pub fn prop_f64(&self, key: &str) -> Option<Spanned<f64>> {
        let e = self.valid_prop(key)?;
        let v = match e.value() {
            KdlValue::Integer(n) => *n as f64,
            KdlValue::Float(f) => *f,
            _ => return None,
        };
        Some(self.sp(e, v))
    }

    pub fn prop_bool(&self, key: &str) -> Option<Spanned<bool>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, e.value().as_bool()?))
    }

    pub fn prop_bytes(&self, key: &str) -> Option<Spanned<Bytes>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, units::parse_bytes(e.value().as_string()?).ok()?))
    }

    pub fn prop_duration(&self, key: &str) -> Option<Spanned<Duration>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, units::parse_duration(e.value().as_string()?).ok()?))
    }

    pub fn prop_bandwidth(&self, key: &str) -> Option<Spanned<Bandwidth>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, units::parse_bandwidth(e.value().as_string()?).ok()?))
    }

    pub fn prop_index_set(&self, key: &str) -> Option<Spanned<Vec<u32>>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, units::parse_index_set(e.value().as_string()?).ok()?))
    }

    /// A name pattern and its expansion.
    pub fn prop_names(&self, key: &str) -> Option<Spanned<Vec<String>>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, units::expand_names(e.value().as_string()?).ok()?))
    }

    pub fn arg_names(&self, i: usize) -> Option<Spanned<Vec<String>>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, units::expand_names(e.value().as_string()?).ok()?))
    }

    pub fn prop_version(&self, key: &str) -> Option<Spanned<Vec<u32>>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, parse_version(e.value().as_string()?).ok()?))
    }
}
