//! Views of a [`Plan`]: the reviewable text (changes with unified diffs, the closing
//! `Plan: N to add, M to change, K to destroy.` line, then the disruption section and
//! the rollout batches) and the versioned JSON. Colour only when asked (a terminal
//! without `NO_COLOR`); the text reads the same without it.

use super::{Action, Disruption, FileChange, Plan};
use crate::units::compress_names;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The plan as pretty JSON, newline-terminated.
pub fn json(p: &Plan) -> String {
    crate::json::pretty_line(p)
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
pub(crate) fn summary_line(p: &Plan) -> String {
    if !p.has_changes() {
        return "No changes. The applied state matches the configuration.".to_string();
    }
    let s = &p.summary;
    format!(
        "Plan: {} to add, {} to change, {} to destroy.",
        s.add, s.change, s.destroy
    )
}

/// Objects of one kind in a file are grouped from this many on (unless verbose).
pub(crate) const GROUP_MIN: usize = 4;

/// Files of one kind (action, folder, extension, reason) are grouped from this many on:
/// per-node scripts and per-class examples, not the handful of files of a target.
pub(crate) const FILE_GROUP_MIN: usize = 10;

/// Characters of names shown on a grouped objects line before `,... (N more)`.
const NAMES_WIDTH: usize = 100;

/// Changes, the closing line, then disruption and rollout; repeated changes grouped.
pub fn human(p: &Plan, color: bool) -> String {
    human_detail(p, color, false)
}

/// Changes, the closing line, then disruption and rollout. `verbose`: every file and
/// object on its own line, every diff; otherwise [`FILE_GROUP_MIN`] or more files of
/// one kind (same action, folder, extension and reason) become one line, and
/// [`GROUP_MIN`] or more objects of one kind in a file too (`+ 32 Node objects
/// dgx-[001-032]`).
pub fn human_detail(p: &Plan, color: bool, verbose: bool) -> String {
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
    for m in &p.moved {
        let line = format!(
            "~ {} `{}` renamed to `{}` (moved: it keeps what it held; objects named after it are renamed)",
            m.kind.as_str(),
            m.from,
            m.to
        );
        let _ = writeln!(s, "  {}", paint.action(Action::Update, &line));
        for (from, to) in renamed_files(p, m) {
            let _ = writeln!(s, "      {from} -> {to}");
        }
    }
    let unchanged = p
        .changes
        .iter()
        .filter(|c| c.action == Action::NoOp)
        .count();
    let changed: Vec<&FileChange> = p
        .changes
        .iter()
        .filter(|c| c.action != Action::NoOp)
        .collect();
    if verbose {
        for c in changed {
            file_change(&mut s, c, &paint, true);
        }
    } else {
        for group in file_groups(&changed) {
            if group.len() >= FILE_GROUP_MIN {
                grouped_files(&mut s, &group, &paint);
            } else {
                for c in group {
                    file_change(&mut s, c, &paint, false);
                }
            }
        }
    }
    if unchanged > 0 {
        let _ = writeln!(s, "  ({unchanged} files unchanged)");
    }
    let _ = writeln!(s, "\n{}", paint.bold(&summary_line(p)));
    disruption(&mut s, &p.disruption, p.prior_state.is_some(), &paint);
    s
}

/// The files a rename replaces: a deleted file and the created one whose path is the
/// same with a part (or a file name's stem) `from` replaced by `to`
/// (`k8s/workloads/embed.yaml -> k8s/workloads/embed-v2.yaml`).
fn renamed_files<'a>(p: &'a Plan, m: &crate::model::moved::Move) -> Vec<(&'a str, &'a str)> {
    let created: std::collections::BTreeSet<&str> = p
        .changes
        .iter()
        .filter(|c| c.action == Action::Create)
        .map(|c| c.path.as_str())
        .collect();
    let rename = |part: &str| match part.strip_prefix(m.from.as_str()) {
        Some("") => m.to.clone(),
        Some(rest) if rest.starts_with('.') => format!("{}{rest}", m.to),
        _ => part.to_string(),
    };
    p.changes
        .iter()
        .filter(|c| c.action == Action::Delete)
        .filter_map(|c| {
            let q: Vec<String> = c.path.split('/').map(rename).collect();
            let q = q.join("/");
            created.get(q.as_str()).map(|q| (c.path.as_str(), *q))
        })
        .collect()
}

/// The kind of a file change: action, folder, extension and reason.
fn file_kind(c: &FileChange) -> (Action, &str, &str, &str) {
    let (dir, name) = c.path.rsplit_once('/').unwrap_or(("", &c.path));
    let ext = name.rsplit_once('.').map_or("", |x| x.1);
    (c.action, dir, ext, c.reason.as_str())
}

/// Consecutive changes of one kind (the changes are sorted by path, so a folder's files
/// are together), in order.
fn file_groups<'a>(changes: &[&'a FileChange]) -> Vec<Vec<&'a FileChange>> {
    let mut out: Vec<Vec<&FileChange>> = Vec::new();
    for c in changes {
        match out.last_mut() {
            Some(g) if file_kind(g[0]) == file_kind(c) => g.push(c),
            _ => out.push(vec![c]),
        }
    }
    out
}

/// `+ 127 files mig/{dgx-[031-032],hgx-[001-125]}.sh create (reason)`, with the objects they hold summed
/// per kind; diffs of grouped updates are left to `--verbose`.
fn grouped_files(s: &mut String, group: &[&FileChange], paint: &Paint) {
    let first = group[0];
    let (action, dir, ext, reason) = file_kind(first);
    let stems: Vec<String> = group
        .iter()
        .map(|c| {
            let name = c.path.rsplit_once('/').map_or(c.path.as_str(), |x| x.1);
            let stem = if ext.is_empty() {
                name
            } else {
                name.strip_suffix(&format!(".{ext}")).unwrap_or(name)
            };
            stem.to_string()
        })
        .collect();
    let names = format!("{{{}}}", names_shown(&stems));
    let pattern = match (dir, ext) {
        ("", "") => names,
        ("", e) => format!("{names}.{e}"),
        (d, "") => format!("{d}/{names}"),
        (d, e) => format!("{d}/{names}.{e}"),
    };
    let head = format!("{} {} files {pattern}", action.marker(), group.len());
    let _ = writeln!(
        s,
        "  {} {} ({reason})",
        paint.action(action, &head),
        action.as_str()
    );
    let resources: Vec<&super::ResourceChange> =
        group.iter().flat_map(|c| c.resources.iter()).collect();
    resource_lines(s, &resources, paint, false);
    if group.iter().any(|c| c.diff.is_some()) {
        let _ = writeln!(s, "      (diffs of these files: --verbose)");
    }
}

/// The objects of a file; [`GROUP_MIN`] or more of one kind and action become one line
/// unless `verbose`: `+ 32 Node objects dgx-[001-032]`, with `in namespace N` when they
/// share one and `namespace/name` names when they do not.
fn resource_lines(s: &mut String, rs: &[&super::ResourceChange], paint: &Paint, verbose: bool) {
    // (action, kind) -> (namespace, name), kinds in first-seen order.
    type Key = (Action, String);
    let mut order: Vec<Key> = Vec::new();
    let mut members: std::collections::BTreeMap<Key, Vec<(String, String)>> =
        std::collections::BTreeMap::new();
    for r in rs {
        let parts: Vec<&str> = r.address.splitn(3, '/').collect();
        let (kind, ns, name) = match parts.as_slice() {
            [k, n, x] => (*k, *n, *x),
            [k, x] => (*k, "", *x),
            _ => ("", "", r.address.as_str()),
        };
        let key = (r.action, kind.to_string());
        if !members.contains_key(&key) {
            order.push(key.clone());
        }
        members
            .entry(key)
            .or_default()
            .push((ns.to_string(), name.to_string()));
    }
    for key in order {
        let list = &members[&key];
        let (action, kind) = &key;
        if verbose || list.len() < GROUP_MIN || kind.is_empty() {
            for (ns, name) in list {
                let address = match (kind.is_empty(), ns.is_empty()) {
                    (true, _) => name.clone(),
                    (false, true) => format!("{kind}/{name}"),
                    (false, false) => format!("{kind}/{ns}/{name}"),
                };
                let line = format!("{} {address}", action.marker());
                let _ = writeln!(
                    s,
                    "      {} {}",
                    paint.action(*action, &line),
                    action.as_str()
                );
            }
            continue;
        }
        let namespaces: BTreeSet<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
        let (within, names): (String, Vec<String>) = match namespaces.len() {
            1 if !list[0].0.is_empty() => (
                format!(" in namespace {}", list[0].0),
                list.iter().map(|(_, x)| x.clone()).collect(),
            ),
            1 => (String::new(), list.iter().map(|(_, x)| x.clone()).collect()),
            n => (
                format!(" in {n} namespaces"),
                list.iter().map(|(ns, x)| format!("{ns}/{x}")).collect(),
            ),
        };
        let line = format!(
            "{} {} {kind} objects{within} {}",
            action.marker(),
            list.len(),
            names_shown(&names)
        );
        let _ = writeln!(
            s,
            "      {} {}",
            paint.action(*action, &line),
            action.as_str()
        );
    }
}

/// Names compressed into ranges, cut after about [`NAMES_WIDTH`] characters.
fn names_shown(names: &[String]) -> String {
    let mut sorted = names.to_vec();
    sorted.sort();
    let ranges = compress_names(&sorted);
    let mut out = String::new();
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 && out.len() + r.len() > NAMES_WIDTH {
            let _ = write!(out, ",... ({} more)", ranges.len() - i);
            break;
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&cut_range(r));
    }
    out
}

/// A compressed range longer than [`NAMES_WIDTH`] cut at a comma: `eval-[0001,0003,...]`.
fn cut_range(r: &str) -> String {
    if r.len() <= NAMES_WIDTH || !r.ends_with(']') {
        return r.to_string();
    }
    let mut end = NAMES_WIDTH;
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    match r[..end].rfind(',') {
        Some(comma) if r[..comma].contains('[') => format!("{},...]", &r[..comma]),
        _ => r.to_string(),
    }
}

fn file_change(s: &mut String, c: &FileChange, paint: &Paint, verbose: bool) {
    let head = format!("{} {}", c.action.marker(), c.path);
    let _ = writeln!(
        s,
        "  {} {} ({})",
        paint.action(c.action, &head),
        c.action.as_str(),
        c.reason
    );
    let resources: Vec<&super::ResourceChange> = c.resources.iter().collect();
    resource_lines(s, &resources, paint, verbose);
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

/// The disruption section: a summary line, then each kind of disruption and the rollout.
/// With nothing, says what it compared (the state, the declared current MIG layouts):
/// gpuplan cannot see work it did not place.
fn disruption(s: &mut String, d: &Disruption, prior_state: bool, paint: &Paint) {
    let _ = writeln!(s, "\n{}", paint.bold("disruption"));
    if d.is_empty() {
        let none = if prior_state {
            "none: no work of the applied state moves, is evicted or loses admission, and no MIG instance is destroyed"
        } else {
            "none known: no applied state to compare with (first apply), and no declared current MIG layout loses an instance"
        };
        let _ = writeln!(s, "  {none}");
        return;
    }
    let _ = writeln!(s, "  {}", disruption_summary(d));
    mig_changes(s, d);
    moved_gangs(s, d);
    lost_admission(s, d);
    disrupted_nodes(s, d);
    rollout(s, d);
}

/// `2 nodes disrupted, 9 MIG instances destroyed (7 with unknown users), 1 gang moved`.
pub(crate) fn disruption_summary(d: &Disruption) -> String {
    let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let mut parts = vec![format!("{} disrupted", n(d.nodes.len(), "node", "nodes"))];
    if d.mig_instances_destroyed > 0 {
        let unknown = d.instances_of_unknown_users();
        let with = if unknown > 0 {
            format!(" ({unknown} with unknown users)")
        } else {
            String::new()
        };
        let destroyed = n(
            d.mig_instances_destroyed as usize,
            "MIG instance",
            "MIG instances",
        );
        parts.push(format!("{destroyed} destroyed{with}"));
    }
    if !d.gangs_moved.is_empty() {
        parts.push(format!("{} moved", n(d.gangs_moved.len(), "gang", "gangs")));
    }
    if !d.admission_lost.is_empty() {
        let classes = n(d.admission_lost.len(), "class loses", "classes lose");
        parts.push(format!("{classes} admission"));
    }
    parts.join(", ")
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
        if m.users_unknown {
            let _ = writeln!(
                s,
                "      users unknown: the current layout is declared (`current=#true`), not applied by gpuplan; workloads gpuplan does not manage may be using the destroyed instances"
            );
        }
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
