//! Views of a [`Placement`]: the reviewable human plan ([`human`]) and the versioned
//! JSON ([`json`]). Views only render; they decide nothing. Plain ASCII, no colour,
//! deterministic.

use super::{Placement, PoolMode, WorkloadPlacement};
use crate::model::Cluster;
use crate::units::compress_names;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The plan as pretty JSON (with `format_version`), newline-terminated.
pub fn json(p: &Placement) -> String {
    crate::json::pretty_line(p)
}

fn num(x: f64) -> String {
    super::explain::fmt_num(x)
}

fn plural(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The solver's lines: admission against its bound, per level when there are several,
/// and the compaction stage.
fn solver_lines(s: &mut String, v: &super::SolverSummary) {
    let bound = match (v.bound, v.gap) {
        (Some(b), Some(g)) => format!("bound {b:.1} (gap {:.2}%)", g * 100.0),
        _ => "no bound".to_string(),
    };
    let _ = writeln!(
        s,
        "solver: {} {}, {:.1} GPU-equivalents admitted, {bound}, {:.2}s",
        v.name, v.status, v.objective, v.seconds
    );
    if let Some(note) = &v.note {
        let _ = writeln!(s, "  note: {note}");
    }
    if v.levels.len() > 1 || v.levels.iter().any(|l| l.gap > 0.0) {
        for l in &v.levels {
            let _ = writeln!(
                s,
                "  priority {} ({}): admitted {:.1}, bound {:.1}, gap {:.2}%",
                l.priority,
                l.names.join(", "),
                l.admitted,
                l.bound,
                l.gap * 100.0
            );
        }
    }
    if let Some(c) = &v.compaction {
        let _ = writeln!(
            s,
            "  compaction: objective {:.1}, bound {:.1}, gap {:.2}%",
            c.objective,
            c.bound,
            c.gap * 100.0
        );
    }
}

/// Above this many workload classes, the default view lists only the classes that are
/// not fully placed and sums the others per kind and priority (`--verbose` lists all).
pub(crate) const LIST_LIMIT: usize = 40;

/// Classes named on an authority's `classes:` line before `... and N more`.
const NAMES_LIMIT: usize = 12;

/// The plan as text for review, grouped on large clusters ([`human_detail`]).
pub fn human(p: &Placement, c: &Cluster) -> String {
    human_detail(p, c, false)
}

/// The plan as text for review. `verbose`: every class, every name, however many.
pub fn human_detail(p: &Placement, c: &Cluster, verbose: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "plan for cluster `{}`", p.cluster);
    solver_lines(&mut s, &p.solver);
    if let Some(m) = &p.moves {
        let _ = writeln!(
            s,
            "since the previous placement: {} gangs kept, {} moved; {} replicas kept, {} moved; {} nodes changed pool mode; {} GPUs change MIG layout",
            m.gangs_kept,
            m.gangs_moved,
            m.replicas_kept,
            m.replicas_moved,
            m.nodes_changed,
            m.mig_gpus_changed
        );
    }
    pools(&mut s, p, c);
    authorities(&mut s, p, verbose);
    let _ = writeln!(s, "\nworkloads");
    if verbose || p.workloads.len() <= LIST_LIMIT {
        for w in &p.workloads {
            workload(&mut s, w);
        }
    } else {
        workloads_grouped(&mut s, p);
    }
    mig_changes(&mut s, p);
    teams(&mut s, p);
    if let Some(e) = &p.economics {
        economics(&mut s, e);
    }
    let _ = writeln!(s, "\nheadroom (largest gang that still fits)");
    for h in &p.headroom {
        let _ = writeln!(
            s,
            "  {:<8} {:>5} GPUs{}",
            h.tier,
            h.largest_gang,
            h.domain
                .as_ref()
                .map(|d| format!(" in {d}"))
                .unwrap_or_default()
        );
    }
    let m = &p.summary;
    let _ = writeln!(
        s,
        "\nsummary: {} of {} GPUs allocated ({:.1}%){}",
        num(m.gpus_allocated),
        m.gpus_total,
        m.allocation_pct,
        m.cost_per_hour
            .map(|c| format!(", ${c:.2}/h"))
            .unwrap_or_default()
    );
    s
}

/// Many classes: one line per (kind, priority) with the fully placed classes summed, then
/// every class that is not fully placed in full (at most [`LIST_LIMIT`] of them).
fn workloads_grouped(s: &mut String, p: &Placement) {
    let full =
        |w: &WorkloadPlacement| w.unplaced.is_empty() && w.replicas_placed >= w.replicas_requested;
    let mut groups: std::collections::BTreeMap<(&str, &str), (u32, u32, f64)> =
        std::collections::BTreeMap::new();
    for w in p.workloads.iter().filter(|w| full(w)) {
        let g = groups
            .entry((w.kind.as_str(), w.priority.as_str()))
            .or_insert((0, 0, 0.0));
        g.0 += 1;
        g.1 += w.replicas_placed;
        g.2 += w.gpus_placed;
    }
    let fully: u32 = groups.values().map(|g| g.0).sum();
    let _ = writeln!(
        s,
        "  {fully} of {} classes fully placed, by kind and priority (--verbose lists each):",
        p.workloads.len()
    );
    for ((kind, priority), (n, replicas, gpus)) in &groups {
        let _ = writeln!(
            s,
            "    {kind}, priority {priority}: {}, {} placed, {} GPUs",
            plural(*n, "class", "classes"),
            plural(*replicas, "replica", "replicas"),
            num(*gpus)
        );
    }
    let short: Vec<&WorkloadPlacement> = p.workloads.iter().filter(|w| !full(w)).collect();
    if short.is_empty() {
        return;
    }
    let _ = writeln!(s, "  not fully placed:");
    for w in short.iter().take(LIST_LIMIT) {
        workload(s, w);
    }
    if short.len() > LIST_LIMIT {
        let _ = writeln!(
            s,
            "  ... and {} more classes not fully placed (--verbose lists them)",
            short.len() - LIST_LIMIT
        );
    }
}

/// Names, the first [`NAMES_LIMIT`] of them unless `verbose`.
fn names_line(names: &[String], verbose: bool) -> String {
    if verbose || names.len() <= NAMES_LIMIT {
        return names.join(", ");
    }
    format!(
        "{}, ... and {} more",
        names[..NAMES_LIMIT].join(", "),
        names.len() - NAMES_LIMIT
    )
}

/// Which scheduler owns which nodes, runs which classes, enforces which quota parts.
fn authorities(s: &mut String, p: &Placement, verbose: bool) {
    if p.authorities.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nauthorities (one scheduler per node)");
    for a in &p.authorities {
        let _ = writeln!(
            s,
            "  {:<11} {:>4} nodes {:>5} GPUs  {}",
            a.scheduler.as_str(),
            a.node_count,
            a.gpus,
            if a.nodes.is_empty() { "-" } else { &a.nodes }
        );
        if !a.pools.is_empty() {
            let _ = writeln!(s, "    pools: {}", a.pools.join(", "));
        }
        if !a.classes.is_empty() {
            let _ = writeln!(s, "    classes: {}", names_line(&a.classes, verbose));
        }
        for t in &a.teams {
            let _ = writeln!(
                s,
                "    team {}: guarantee {}, ceiling {}, placed {}",
                t.team,
                t.guarantee,
                t.ceiling,
                num(t.gpus_placed)
            );
        }
    }
}

fn pools(s: &mut String, p: &Placement, c: &Cluster) {
    let _ = writeln!(s, "\npools");
    for mode in PoolMode::ALL {
        let nodes: Vec<String> = p
            .pools
            .iter()
            .filter(|n| n.mode == mode)
            .map(|n| n.node.clone())
            .collect();
        if nodes.is_empty() {
            continue;
        }
        let gpus: usize = nodes
            .iter()
            .filter_map(|n| c.node(n))
            .map(|n| n.usable_gpus().count())
            .sum();
        let _ = writeln!(
            s,
            "  {:<11} {:>4} nodes {:>5} GPUs  {}",
            mode.as_str(),
            nodes.len(),
            gpus,
            compress_names(&nodes).join(",")
        );
    }
}

fn workload(s: &mut String, w: &WorkloadPlacement) {
    let _ = writeln!(
        s,
        "  {} ({}, team {}, priority {})",
        w.name, w.kind, w.team, w.priority
    );
    let mut line = format!(
        "    {}/{} replicas, {} GPU{}",
        w.replicas_placed,
        w.replicas_requested,
        num(w.gpus_placed),
        if w.gpus_placed == 1.0 { "" } else { "s" }
    );
    let mut nodes: BTreeSet<String> = BTreeSet::new();
    gangs_text(&mut line, &mut nodes, w);
    instances_text(&mut line, &mut nodes, w);
    let _ = writeln!(s, "{line}");
    if !nodes.is_empty() {
        let list: Vec<String> = nodes.into_iter().collect();
        let _ = writeln!(s, "    nodes: {}", compress_names(&list).join(","));
    }
    for u in &w.unplaced {
        let _ = writeln!(
            s,
            "    unplaced: {} ({}): {}",
            plural(u.replicas, "replica", "replicas"),
            u.reason,
            u.message
        );
    }
}

/// The gangs of a class: how many, nodes each, leaves and NVLink domains spanned.
fn gangs_text(line: &mut String, nodes: &mut BTreeSet<String>, w: &WorkloadPlacement) {
    if w.gangs.is_empty() {
        return;
    }
    let max = |f: fn(&super::Span) -> u32| w.gangs.iter().map(|g| f(&g.span)).max().unwrap_or(0);
    let min = |f: fn(&super::Span) -> u32| w.gangs.iter().map(|g| f(&g.span)).min().unwrap_or(0);
    let n = max(|x| x.nodes);
    let each = if n == min(|x| x.nodes) {
        "each"
    } else {
        "up to"
    };
    let _ = write!(
        line,
        ", {}, {each} {}",
        plural(w.gangs.len() as u32, "gang", "gangs"),
        plural(n, "node", "nodes")
    );
    let leaves = max(|x| x.leaves);
    if leaves > 0 {
        let _ = write!(line, " under {}", plural(leaves, "leaf", "leaves"));
    }
    let nvl = max(|x| x.nvlink_domains);
    let _ = write!(line, ", {}", plural(nvl, "NVLink domain", "NVLink domains"));
    nodes.extend(
        w.gangs
            .iter()
            .flat_map(|g| g.nodes.iter().map(|n| n.node.clone())),
    );
}

/// MIG instances, shared GPUs and packed replicas of a class.
fn instances_text(line: &mut String, nodes: &mut BTreeSet<String>, w: &WorkloadPlacement) {
    if !w.mig_instances.is_empty() {
        let profiles: BTreeSet<&str> = w.mig_instances.iter().map(|m| m.profile.as_str()).collect();
        let gpus: BTreeSet<(&str, u32)> = w
            .mig_instances
            .iter()
            .map(|m| (m.node.as_str(), m.gpu))
            .collect();
        let _ = write!(
            line,
            ", MIG {} on {}",
            profiles.into_iter().collect::<Vec<_>>().join("+"),
            plural(gpus.len() as u32, "GPU", "GPUs")
        );
        nodes.extend(w.mig_instances.iter().map(|m| m.node.clone()));
    }
    if !w.shares.is_empty() {
        let most = w.shares.iter().map(|x| x.replicas).max().unwrap_or(0);
        let _ = write!(
            line,
            ", shared on {} (up to {most} per GPU)",
            plural(w.shares.len() as u32, "GPU", "GPUs")
        );
        nodes.extend(w.shares.iter().map(|x| x.node.clone()));
    }
    if !w.packed.is_empty() {
        let on: BTreeSet<&str> = w.packed.iter().map(|x| x.node.as_str()).collect();
        let gpus: BTreeSet<(&str, u32)> = w
            .packed
            .iter()
            .flat_map(|x| x.gpus.iter().map(move |g| (x.node.as_str(), *g)))
            .collect();
        let _ = write!(
            line,
            ", packed on {} ({})",
            plural(on.len() as u32, "node", "nodes"),
            plural(gpus.len() as u32, "GPU", "GPUs")
        );
        nodes.extend(w.packed.iter().map(|x| x.node.clone()));
    }
}

fn teams(s: &mut String, p: &Placement) {
    if p.teams.is_empty() {
        return;
    }
    let width = p
        .teams
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(s, "\nteams");
    let _ = writeln!(
        s,
        "  {:<width$}  guarantee  ceiling   placed   cost/h",
        "team"
    );
    for t in &p.teams {
        let _ = writeln!(
            s,
            "  {:<width$}  {:>9}  {:>7}  {:>7}  {:>7}",
            t.name,
            t.guarantee,
            t.ceiling,
            num(t.gpus_placed),
            t.cost_per_hour
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "-".to_string())
        );
    }
}

/// A duration in seconds as `1h30m`, `45m`, `12s`.
fn dur(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    if s == 0 && secs > 0.0 {
        return format!("{secs:.2}s");
    }
    if s < 60 {
        return format!("{s}s");
    }
    let (h, m) = (s / 3600, (s % 3600 + 30) / 60);
    let (h, m) = if m == 60 { (h + 1, 0) } else { (h, m) };
    match (h, m) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h{m}m"),
    }
}

fn money(x: Option<f64>) -> String {
    x.map(|v| format!("${v:.2}")).unwrap_or_else(|| "-".into())
}

/// Spot interruptions and checkpoint writes per class.
fn economics(s: &mut String, e: &super::economics::Economics) {
    if !e.spot.is_empty() {
        let _ = writeln!(
            s,
            "
spot capacity (per day)"
        );
        for c in &e.spot {
            let every = c
                .checkpoint_every_s
                .map(|t| format!("checkpoint every {}", dur(t as f64)))
                .unwrap_or_else(|| "no checkpoint (stateless)".into());
            let _ = writeln!(
                s,
                "  {}: {} GPUs on spot, {} interruptions, {}, restart {}",
                c.class,
                num(c.gpus_on_spot),
                num(c.interruptions_per_day),
                every,
                dur(c.restart_s as f64)
            );
            let _ = writeln!(
                s,
                "    lost {} GPU-hours ({}), saves {}{}",
                num(c.lost_gpu_hours_per_day),
                money(c.lost_cost_per_day),
                money(c.savings_per_day),
                if c.loses_money() {
                    ": loses more than it saves"
                } else {
                    ""
                }
            );
            if let Some(t) = c.optimal_checkpoint_s {
                let _ = writeln!(
                    s,
                    "    checkpoint interval that loses least (Young/Daly): {}",
                    dur(t as f64)
                );
            }
        }
    }
    if !e.checkpoints.is_empty() {
        let _ = writeln!(
            s,
            "
checkpoints (every gang writing at once)"
        );
        for c in &e.checkpoints {
            let _ = writeln!(
                s,
                "  {}: {} per gang every {}, {} to {} ({} nodes writing), {} limit: {} idle (max {}){}",
                c.class,
                decimal_size(c.size_bytes),
                dur(c.every_s as f64),
                dur(c.write_s),
                c.storage
                    .as_deref()
                    .map(crate::diag::quoted)
                    .unwrap_or_else(|| "(no storage declared)".into()),
                c.nodes_writing,
                c.limit.as_str(),
                pct(c.idle_pct),
                pct(c.max_idle_pct),
                if c.too_idle() { ": too idle" } else { "" }
            );
        }
    }
}

/// A size in decimal units as checkpoint sizes are usually written: `1.2TB`, `400GB`.
fn decimal_size(b: u64) -> String {
    let (v, unit) = match b {
        b if b >= 1_000_000_000_000 => (b as f64 / 1e12, "TB"),
        b if b >= 1_000_000_000 => (b as f64 / 1e9, "GB"),
        b if b >= 1_000_000 => (b as f64 / 1e6, "MB"),
        b => (b as f64, "B"),
    };
    let t = format!("{v:.2}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    format!("{t}{unit}")
}

fn pct(x: f64) -> String {
    let t = format!("{x:.1}");
    format!("{}%", t.strip_suffix(".0").unwrap_or(&t))
}

/// `1g.10gb x7 + 3g.40gb` style list.
fn profile_list(v: &[String]) -> String {
    let mut out: Vec<(String, u32)> = Vec::new();
    for p in v {
        match out.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => out.push((p.clone(), 1)),
        }
    }
    if out.is_empty() {
        return "none".into();
    }
    out.iter()
        .map(|(p, n)| {
            if *n == 1 {
                p.clone()
            } else {
                format!("{p} x{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Per GPU with a known current layout: kept, or which instances survive, are destroyed
/// and are created.
fn mig_changes(s: &mut String, p: &Placement) {
    if p.mig_changes.is_empty() {
        return;
    }
    let changed = p
        .mig_changes
        .iter()
        .filter(|c| c.action != super::MigAction::Keep)
        .count();
    let _ = writeln!(
        s,
        "\nMIG changes ({} of {} configured GPUs kept)",
        p.mig_changes.len() - changed,
        p.mig_changes.len()
    );
    for c in &p.mig_changes {
        let gpu = format!("{} gpu {}", c.node, c.gpu);
        match c.action.as_str() {
            "keep" => {
                let _ = writeln!(s, "  {gpu:<20} keep         {}", profile_list(&c.current));
            }
            action => {
                let _ = writeln!(
                    s,
                    "  {gpu:<20} {action:<12} destroy {}; keep {}; create {}",
                    profile_list(&c.destroyed),
                    profile_list(&c.surviving),
                    profile_list(&c.created)
                );
            }
        }
    }
}
