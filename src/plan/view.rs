//! Views of a [`Plan`]: the reviewable text (changes with unified diffs, the closing
//! `Plan: N to add, M to change, K to destroy.` line, then the disruption section and
//! the rollout batches) and the versioned JSON. Colour only when asked (a terminal
//! without `NO_COLOR`); the text reads the same without it.

use super::{Action, Disruption, FileChange, Plan};
use crate::units::compress_names;
use std::fmt::Write;

/// The plan as pretty JSON, newline-terminated.
pub fn json(p: &Plan) -> String {
    format!("{}\n", serde_json::to_string_pretty(p).unwrap_or_default())
}

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn action(&self, a: Action, s: &str) -> String {
        match a {
            Action::Create => self.wrap("32", s),
            Action::Update => self.wrap("33", s),
            Action::Delete => self.wrap("31", s),
            Action::NoOp => s.to_string(),
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
}

/// The closing line, as Terraform prints it.
pub fn summary_line(p: &Plan) -> String {
    if !p.has_changes() {
        return "No changes. The applied state matches the configuration.".to_string();
    }
    let s = &p.summary;
    format!(
        "Plan: {} to add, {} to change, {} to destroy.",
        s.add, s.change, s.destroy
    )
}

/// Changes, the closing line, then disruption and rollout.
pub fn human(p: &Plan, color: bool) -> String {
    let paint = Paint(color);
    let mut s = String::new();
    let _ = writeln!(s, "{}", paint.bold("changes"));
    match &p.prior_state {
        None => {
            let _ = writeln!(s, "  compared with: no state (first apply)");
        }
        Some(st) => {
            let _ = writeln!(
                s,
                "  compared with: state serial {}, lineage {}",
                st.serial, st.lineage
            );
        }
    }
    let mut unchanged = 0;
    for c in &p.changes {
        if c.action == Action::NoOp {
            unchanged += 1;
            continue;
        }
        file_change(&mut s, c, &paint);
    }
    if unchanged > 0 {
        let _ = writeln!(s, "  ({unchanged} files unchanged)");
    }
    let _ = writeln!(s, "\n{}", paint.bold(&summary_line(p)));
    disruption(&mut s, &p.disruption, &paint);
    s
}

fn file_change(s: &mut String, c: &FileChange, paint: &Paint) {
    let head = format!("{} {}", c.action.marker(), c.path);
    let _ = writeln!(
        s,
        "  {} {} ({})",
        paint.action(c.action, &head),
        c.action.as_str(),
        c.reason
    );
    for r in &c.resources {
        let line = format!("{} {}", r.action.marker(), r.address);
        let _ = writeln!(
            s,
            "      {} {}",
            paint.action(r.action, &line),
            r.action.as_str()
        );
    }
    if let Some(d) = &c.diff {
        for line in d.lines() {
            let painted = if line.starts_with("+++") || line.starts_with("---") {
                paint.bold(line)
            } else if line.starts_with('+') {
                paint.wrap("32", line)
            } else if line.starts_with('-') {
                paint.wrap("31", line)
            } else if line.starts_with("@@") {
                paint.wrap("36", line)
            } else {
                line.to_string()
            };
            let _ = writeln!(s, "      {painted}");
        }
    }
}

fn nodes_text(n: &[crate::placement::NodeGpus]) -> String {
    n.iter()
        .map(|x| {
            let g: Vec<String> = x.gpus.iter().map(u32::to_string).collect();
            format!("{}[{}]", x.node, g.join(","))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn disruption(s: &mut String, d: &Disruption, paint: &Paint) {
    let _ = writeln!(s, "\n{}", paint.bold("disruption"));
    if d.is_empty() {
        let _ = writeln!(s, "  none: no running work is disrupted");
        return;
    }
    mig_changes(s, d);
    moved_gangs(s, d);
    lost_admission(s, d);
    disrupted_nodes(s, d);
    rollout(s, d);
}

fn counted_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        super::disruption::counted(v)
    }
}

fn mig_changes(s: &mut String, d: &Disruption) {
    if d.mig.is_empty() {
        return;
    }
    let _ = writeln!(s, "  MIG layout changes");
    for m in &d.mig {
        let _ = writeln!(
            s,
            "    {} GPU {} ({}): {} -> {}",
            m.node,
            m.gpu,
            m.model,
            super::disruption::counted(&m.before),
            super::disruption::counted(&m.after)
        );
        let mut needs = Vec::new();
        if m.drain {
            needs.push("drain");
        }
        if m.reset {
            needs.push("GPU reset (MIG mode changes)");
        }
        let _ = writeln!(
            s,
            "      keeps {}; destroys {}; creates {}; needs {}",
            counted_or_none(&m.kept),
            counted_or_none(&m.destroyed),
            counted_or_none(&m.created),
            if needs.is_empty() {
                "no drain".to_string()
            } else {
                needs.join(", ")
            }
        );
        for a in &m.affected {
            let _ = writeln!(
                s,
                "      evicts {} (priority {}, {})",
                a.workload, a.priority, a.priority_value
            );
        }
    }
}

fn moved_gangs(s: &mut String, d: &Disruption) {
    if d.gangs_moved.is_empty() {
        return;
    }
    let _ = writeln!(s, "  training gangs that move (restart from checkpoint)");
    for g in &d.gangs_moved {
        let _ = writeln!(
            s,
            "    {} replica {} (priority {}, {}): {} -> {}",
            g.workload,
            g.replica,
            g.priority,
            g.priority_value,
            nodes_text(&g.from),
            nodes_text(&g.to)
        );
    }
}

fn lost_admission(s: &mut String, d: &Disruption) {
    if d.admission_lost.is_empty() {
        return;
    }
    let _ = writeln!(s, "  workloads that lose admission");
    for a in &d.admission_lost {
        let _ = writeln!(
            s,
            "    {} (priority {}, {}): {} -> {} replicas ({})",
            a.workload, a.priority, a.priority_value, a.replicas_before, a.replicas_after, a.reason
        );
    }
}

fn disrupted_nodes(s: &mut String, d: &Disruption) {
    if d.nodes.is_empty() {
        return;
    }
    let _ = writeln!(s, "  nodes disrupted");
    for n in &d.nodes {
        let mut flags = Vec::new();
        if n.drain {
            flags.push("drain");
        }
        if n.reset {
            flags.push("GPU reset");
        }
        let _ = writeln!(
            s,
            "    {} (pool {}{}{}): {}",
            n.node,
            n.pool,
            n.priority
                .as_ref()
                .map(|p| format!(", highest priority hit {p}"))
                .unwrap_or_default(),
            if flags.is_empty() {
                String::new()
            } else {
                format!(", {}", flags.join(", "))
            },
            n.reasons.join("; ")
        );
    }
}

fn rollout(s: &mut String, d: &Disruption) {
    if d.rollout.is_empty() {
        return;
    }
    let limits: Vec<String> = d
        .max_disrupted
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    let _ = writeln!(
        s,
        "  rollout ({} batch{}; nodes disrupted at once per pool: {})",
        d.rollout.len(),
        if d.rollout.len() == 1 { "" } else { "es" },
        limits.join(", ")
    );
    for b in &d.rollout {
        let _ = writeln!(
            s,
            "    batch {}: {}",
            b.batch,
            compress_names(&b.nodes).join(",")
        );
    }
}
