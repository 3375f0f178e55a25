//! [`NodeView::check`]: everything structurally wrong with a node, reported once.

use super::value::check_value;
use super::{GP002, GP003, GP004, NodeView, child_def};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::Span;
use crate::spec::language::{self, NodeDef, Ty};
use crate::suggest;
use kdl::{KdlEntry, KdlNode};

impl<'n> NodeView<'n> {
    /// Reports everything structurally wrong with this node and, recursively, its
    /// known children.
    pub(crate) fn check(&self, diags: &mut Diagnostics) {
        let ctx = self.context();
        self.check_type_annotation(&ctx, diags);
        self.check_args(&ctx, diags);
        self.check_props(&ctx, diags);
        self.check_children(&ctx, diags);
    }

    /// How messages name this node: `` `gpus` (in `node-class`) ``.
    fn context(&self) -> String {
        let def = self.def;
        if def.id.contains('/') {
            format!(
                "`{}` (in `{}`)",
                def.name(),
                def.id.rsplit_once('/').map(|x| x.0).unwrap_or("")
            )
        } else {
            format!("`{}`", def.name())
        }
    }

    /// A `(type)` annotation on the node is ignored, with a warning.
    fn check_type_annotation(&self, ctx: &str, diags: &mut Diagnostics) {
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
    }

    /// Each argument against its definition; extra and missing arguments.
    fn check_args(&self, ctx: &str, diags: &mut Diagnostics) {
        let def = self.def;
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
                    || format!("argument `{}` of {ctx}", adef.name),
                    diags,
                ),
                None => diags.push(self.unexpected_argument(e, ctx)),
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
    }

    /// GP004 for an argument beyond those the node takes.
    fn unexpected_argument(&self, e: &KdlEntry, ctx: &str) -> Diagnostic {
        let def = self.def;
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
        Diagnostic::error(GP004, format!("unexpected argument to {ctx}"))
            .at(self.entry_span(e), "not expected here")
            .with_help(hint)
    }

    /// Each property against its definition; unknown, repeated and missing ones.
    fn check_props(&self, ctx: &str, diags: &mut Diagnostics) {
        let def = self.def;
        let mut seen: Vec<&str> = Vec::new();
        for e in self.node.entries() {
            let Some(key) = e.name() else { continue };
            let key = key.value();
            let Some(pdef) = def.prop(key) else {
                diags.push(self.unknown_property(e, key, ctx));
                continue;
            };
            if seen.contains(&key) {
                diags.push(
                    Diagnostic::error(GP004, format!("property `{key}` is given twice on {ctx}"))
                        .at(self.entry_span(e), "second value")
                        .with_help("remove one of them; KDL would silently keep the last"),
                );
            }
            seen.push(key);
            self.check_entry(e, pdef.ty, || format!("property `{key}` of {ctx}"), diags);
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
    }

    /// GP003 for a property the node does not have, with a did-you-mean.
    fn unknown_property(&self, e: &KdlEntry, key: &str, ctx: &str) -> Diagnostic {
        let def = self.def;
        let names = def.props.iter().map(|p| p.name);
        Diagnostic::error(GP003, format!("unknown property `{key}` on {ctx}"))
            .at(self.entry_span(e), "unknown property")
            .with_help(if def.props.is_empty() {
                format!("{ctx} takes no properties")
            } else {
                suggest::hint(key, names, "property")
            })
    }

    /// Each child: unknown ones, repeated ones that may appear once, and, recursively,
    /// what is wrong inside the known ones.
    fn check_children(&self, ctx: &str, diags: &mut Diagnostics) {
        let Some(doc) = self.node.children() else {
            return;
        };
        let mut counts: Vec<(&str, Span)> = Vec::new();
        for c in doc.nodes() {
            let name = c.name().value();
            let Some(cdef) = child_def(self.def, name) else {
                diags.push(self.unknown_child(c, ctx));
                continue;
            };
            let view = NodeView::new(c, cdef, self.file);
            if !cdef.repeatable {
                if let Some((_, first)) = counts.iter().find(|(n, _)| *n == cdef.id) {
                    diags.push(
                        Diagnostic::error(GP004, format!("`{name}` may appear only once in {ctx}"))
                            .at(view.name_span(), "repeated")
                            .with_related(*first, "first here")
                            .with_help(format!("merge the two `{name}` nodes into one")),
                    );
                }
            }
            counts.push((cdef.id, view.name_span()));
            view.check(diags);
        }
    }

    /// GP002 for a child the node does not have: a top-level node written inside it,
    /// or a misspelling.
    fn unknown_child(&self, c: &KdlNode, ctx: &str) -> Diagnostic {
        let def: &NodeDef = self.def;
        let name = c.name().value();
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
        Diagnostic::error(GP002, format!("unknown node `{name}` in {ctx}"))
            .at(self.span_of(c.name().span()), "unknown node")
            .with_help(help)
    }

    /// Reports a value that does not fit its type; `what` names it, for the message.
    fn check_entry(
        &self,
        e: &KdlEntry,
        ty: Ty,
        what: impl FnOnce() -> String,
        diags: &mut Diagnostics,
    ) {
        if let Err((code, msg, hint)) = check_value(ty, e.value()) {
            let d = Diagnostic::error(code, format!("invalid {}: {msg}", what()))
                .at(self.entry_span(e), "invalid value");
            diags.push(d.with_help(hint.unwrap_or_else(|| format!("expected {}", ty.describe()))));
        }
    }
}
