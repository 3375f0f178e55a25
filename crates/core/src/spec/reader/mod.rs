//! Checked access to one KDL node against its [`NodeDef`].
//!
//! [`NodeView::check`] reports, once, everything structurally wrong with a node:
//! unknown properties and children (with a did-you-mean), missing or extra arguments,
//! values of the wrong type and malformed units. The typed getters afterwards return
//! `None` for anything already reported, so decoders stay short and never report twice.

mod check;
mod value;

pub use value::parse_version;

use super::language::{self, NodeDef, Ty};
use crate::source::{FileId, Span, Spanned};
use crate::units::{self, Bandwidth, Bytes, Duration};
use kdl::{KdlEntry, KdlNode, KdlValue};
use value::check_value;

pub(crate) const GP002: &str = "GP002";
pub(crate) const GP003: &str = "GP003";
pub(crate) const GP004: &str = "GP004";
pub(crate) const GP005: &str = "GP005";

#[derive(Clone, Copy)]
pub(crate) struct NodeView<'n> {
    pub node: &'n KdlNode,
    pub def: &'static NodeDef,
    pub file: FileId,
}

/// The definition of a child named `name` under `parent`.
fn child_def(parent: &NodeDef, name: &str) -> Option<&'static NodeDef> {
    parent
        .children
        .iter()
        .filter(|id| id.rsplit('/').next() == Some(name))
        .find_map(|id| language::def(id))
}

impl<'n> NodeView<'n> {
    pub(crate) fn new(node: &'n KdlNode, def: &'static NodeDef, file: FileId) -> Self {
        NodeView { node, def, file }
    }

    fn span_of(&self, s: miette::SourceSpan) -> Span {
        Span::from_miette(self.file, s)
    }

    /// The node's name.
    pub(crate) fn name_span(&self) -> Span {
        self.span_of(self.node.name().span())
    }

    /// The node's name and entries, without its children block.
    pub(crate) fn head_span(&self) -> Span {
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

    pub(crate) fn entry_span(&self, e: &KdlEntry) -> Span {
        self.span_of(e.span())
    }

    pub(crate) fn args(&self) -> impl Iterator<Item = &'n KdlEntry> {
        self.node.entries().iter().filter(|e| e.name().is_none())
    }

    pub(crate) fn prop_entry(&self, key: &str) -> Option<&'n KdlEntry> {
        self.node
            .entries()
            .iter()
            .rev()
            .find(|e| e.name().is_some_and(|n| n.value() == key))
    }

    /// Child nodes with a known definition (unknown ones are reported by `check`).
    pub(crate) fn children(&self) -> Vec<NodeView<'n>> {
        self.known_children().collect()
    }

    /// [`NodeView::children`], without collecting them.
    fn known_children(&self) -> impl Iterator<Item = NodeView<'n>> + use<'n> {
        let (def, file) = (self.def, self.file);
        let nodes = self.node.children().map(|d| d.nodes()).unwrap_or_default();
        nodes.iter().filter_map(move |c| {
            child_def(def, c.name().value()).map(|d| NodeView::new(c, d, file))
        })
    }

    pub(crate) fn children_named(&self, name: &str) -> Vec<NodeView<'n>> {
        self.known_children()
            .filter(|c| c.def.name() == name)
            .collect()
    }

    /// The last child named `name`.
    pub(crate) fn child(&self, name: &str) -> Option<NodeView<'n>> {
        self.known_children()
            .filter(|c| c.def.name() == name)
            .last()
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

    /// Argument `i` for a getter that parses it as `parses`: when that is the
    /// argument's type, the parse is the check, so the value is not checked twice.
    fn parsed_arg(&self, i: usize, parses: Ty) -> Option<&'n KdlEntry> {
        if self.ty_of_arg(i)? == parses {
            self.args().nth(i)
        } else {
            self.valid_arg(i)
        }
    }

    /// Property `key` for a getter that parses it as `parses` (see
    /// [`NodeView::parsed_arg`]).
    fn parsed_prop(&self, key: &str, parses: Ty) -> Option<&'n KdlEntry> {
        if self.def.prop(key)?.ty == parses {
            self.prop_entry(key)
        } else {
            self.valid_prop(key)
        }
    }

    fn sp<T>(&self, e: &KdlEntry, v: T) -> Spanned<T> {
        Spanned::new(v, self.entry_span(e))
    }

    pub(crate) fn arg_str(&self, i: usize) -> Option<Spanned<String>> {
        let e = self.valid_arg(i)?;
        Some(self.sp(e, e.value().as_string()?.to_string()))
    }

    /// All arguments as strings (variadic nodes).
    pub(crate) fn args_str(&self) -> Vec<Spanned<String>> {
        (0..self.args().count())
            .filter_map(|i| self.arg_str(i))
            .collect()
    }

    pub(crate) fn arg_u32(&self, i: usize) -> Option<Spanned<u32>> {
        let e = self.parsed_arg(i, Ty::Int)?;
        Some(self.sp(e, u32::try_from(e.value().as_integer()?).ok()?))
    }

    pub(crate) fn arg_bool(&self, i: usize) -> Option<Spanned<bool>> {
        let e = self.parsed_arg(i, Ty::Bool)?;
        Some(self.sp(e, e.value().as_bool()?))
    }

    pub(crate) fn arg_bytes(&self, i: usize) -> Option<Spanned<Bytes>> {
        let e = self.parsed_arg(i, Ty::Bytes)?;
        Some(self.sp(e, units::parse_bytes(e.value().as_string()?).ok()?))
    }

    pub(crate) fn arg_percent(&self, i: usize) -> Option<Spanned<f64>> {
        let e = self.parsed_arg(i, Ty::Percent)?;
        Some(self.sp(e, units::parse_percent(e.value().as_string()?).ok()?))
    }

    pub(crate) fn prop_str(&self, key: &str) -> Option<Spanned<String>> {
        let e = self.valid_prop(key)?;
        Some(self.sp(e, e.value().as_string()?.to_string()))
    }

    pub(crate) fn prop_u32(&self, key: &str) -> Option<Spanned<u32>> {
        let e = self.parsed_prop(key, Ty::Int)?;
        Some(self.sp(e, u32::try_from(e.value().as_integer()?).ok()?))
    }

    pub(crate) fn prop_f64(&self, key: &str) -> Option<Spanned<f64>> {
        let e = self.valid_prop(key)?;
        let v = match e.value() {
            KdlValue::Integer(n) => *n as f64,
            KdlValue::Float(f) => *f,
            _ => return None,
        };
        Some(self.sp(e, v))
    }

    pub(crate) fn prop_bool(&self, key: &str) -> Option<Spanned<bool>> {
        let e = self.parsed_prop(key, Ty::Bool)?;
        Some(self.sp(e, e.value().as_bool()?))
    }

    pub(crate) fn prop_bytes(&self, key: &str) -> Option<Spanned<Bytes>> {
        let e = self.parsed_prop(key, Ty::Bytes)?;
        Some(self.sp(e, units::parse_bytes(e.value().as_string()?).ok()?))
    }

    pub(crate) fn prop_duration(&self, key: &str) -> Option<Spanned<Duration>> {
        let e = self.parsed_prop(key, Ty::Duration)?;
        Some(self.sp(e, units::parse_duration(e.value().as_string()?).ok()?))
    }

    pub(crate) fn prop_bandwidth(&self, key: &str) -> Option<Spanned<Bandwidth>> {
        let e = self.parsed_prop(key, Ty::Bandwidth)?;
        Some(self.sp(e, units::parse_bandwidth(e.value().as_string()?).ok()?))
    }

    pub(crate) fn prop_percent(&self, key: &str) -> Option<Spanned<f64>> {
        let e = self.parsed_prop(key, Ty::Percent)?;
        Some(self.sp(e, units::parse_percent(e.value().as_string()?).ok()?))
    }

    /// An event rate in events per hour.
    pub(crate) fn prop_rate(&self, key: &str) -> Option<Spanned<f64>> {
        let e = self.parsed_prop(key, Ty::Rate)?;
        Some(self.sp(e, units::parse_rate(e.value().as_string()?).ok()?))
    }

    pub(crate) fn prop_index_set(&self, key: &str) -> Option<Spanned<Vec<u32>>> {
        let e = self.parsed_prop(key, Ty::IndexSet)?;
        Some(self.sp(e, units::parse_index_set(e.value().as_string()?).ok()?))
    }

    /// A name pattern and its expansion.
    pub(crate) fn prop_names(&self, key: &str) -> Option<Spanned<Vec<String>>> {
        let e = self.parsed_prop(key, Ty::NamePattern)?;
        Some(self.sp(e, units::expand_names(e.value().as_string()?).ok()?))
    }

    pub(crate) fn arg_names(&self, i: usize) -> Option<Spanned<Vec<String>>> {
        let e = self.parsed_arg(i, Ty::NamePattern)?;
        Some(self.sp(e, units::expand_names(e.value().as_string()?).ok()?))
    }

    pub(crate) fn arg_version(&self, i: usize) -> Option<Spanned<Vec<u32>>> {
        let e = self.parsed_arg(i, Ty::Version)?;
        Some(self.sp(e, parse_version(e.value().as_string()?).ok()?))
    }

    pub(crate) fn prop_version(&self, key: &str) -> Option<Spanned<Vec<u32>>> {
        let e = self.parsed_prop(key, Ty::Version)?;
        Some(self.sp(e, parse_version(e.value().as_string()?).ok()?))
    }
}
