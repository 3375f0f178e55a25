//! The human view of a [`Report`]: violations grouped by target, each with its
//! invariant, object and file, then what was checked (the JSON view is the report
//! itself, serialized).

use super::Report;
use std::fmt::Write;

pub fn human(r: &Report) -> String {
    let mut s = String::new();
    let mut last = None;
    for v in &r.violations {
        if last != Some(v.target) {
            let _ = writeln!(s, "{}/", v.target);
            last = Some(v.target);
        }
        let file = if v.file.is_empty() || v.file == v.object {
            String::new()
        } else {
            format!(" ({})", v.file)
        };
        let _ = writeln!(
            s,
            "  {}: {}{file}: {}",
            v.invariant.as_str(),
            v.object,
            v.message
        );
    }
    if !r.violations.is_empty() {
        s.push('\n');
    }
    for (t, c) in &r.checked {
        if *t == super::Target::Mig {
            let _ = writeln!(s, "{t}: {} nodes' MIG configs checked", c.nodes);
            continue;
        }
        let _ = writeln!(
            s,
            "{t}: {} classes, {} planned units, {} objects, {} nodes checked",
            c.classes, c.units, c.objects, c.nodes
        );
    }
    let verdict = if r.realizable {
        format!(
            "realizable: the rendered files carry out the plan for cluster `{}`",
            r.cluster
        )
    } else {
        format!("not realizable: {} violation(s)", r.violations.len())
    };
    let _ = writeln!(s, "{verdict}");
    s
}
