//! The names budget: every bracket pattern of a configuration (node ranges, leaf and pool
//! members, MIG layouts' nodes, NIC names) is counted before any is expanded, and a
//! configuration whose patterns expand to more names than the run's `names` limit
//! ([`crate::limits`]) is refused (GP047) before it is decoded: ten lines of
//! `nodes "x[1-100000]"` must not take gigabytes.

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};
use kdl::{KdlDocument, KdlValue};

pub const GP047: &str = "GP047";

/// GP047 at the entry that takes the names over `limit`, if any.
pub(crate) fn check(docs: &[(FileId, &KdlDocument)], limit: u64) -> Option<Diagnostic> {
    let mut total = 0u64;
    for (file, doc) in docs {
        if let Some(d) = walk(*file, doc, limit, &mut total) {
            return Some(d);
        }
    }
    None
}

fn walk(file: FileId, doc: &KdlDocument, limit: u64, total: &mut u64) -> Option<Diagnostic> {
    for node in doc.nodes() {
        for e in node.entries() {
            let KdlValue::String(s) = e.value() else {
                continue;
            };
            if !s.contains('[') {
                continue;
            }
            let n = crate::units::count_pattern_list(s);
            if n > crate::units::MAX_RANGE_NAMES as u64 {
                // One pattern past the per-pattern bound: refused as an invalid value
                // (GP005) where it is read, before anything is expanded.
                continue;
            }
            *total = total.saturating_add(n);
            if *total > limit {
                let span = Span::new(file, e.span().offset(), e.span().len());
                return Some(
                    Diagnostic::error(
                        GP047,
                        format!(
                            "the configuration's name patterns expand to more than {limit} names (the names limit)"
                        ),
                    )
                    .at(span, format!("this pattern adds {n} names"))
                    .with_help(crate::limits::hint("names")),
                );
            }
        }
        if let Some(children) = node.children() {
            if let Some(d) = walk(file, children, limit, total) {
                return Some(d);
            }
        }
    }
    None
}
