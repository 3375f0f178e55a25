//! A previous placement read through `moved` renames ([`renamed`]): the names of the
//! last apply become the names of the configuration, so that the planner keeps what a
//! renamed class, node or pool held (`solve::previous`) and the plan's disruption
//! compares the same things (`plan::disruption`). Which renames a placement needs
//! ([`applicable`]) is what the plan shows as renames.

use super::Placement;
use crate::model::moved::{Move, MoveKind};

/// Whether `p` has a class, a node or a pool called `name`.
pub(crate) fn holds(p: &Placement, kind: MoveKind, name: &str) -> bool {
    match kind {
        MoveKind::Class => p.workloads.iter().any(|w| w.name == name),
        MoveKind::Node => {
            p.pools.iter().any(|n| n.node == name)
                || p.mig_layouts.iter().any(|l| l.node == name)
                || p.workloads.iter().any(|w| {
                    w.gangs
                        .iter()
                        .any(|g| g.nodes.iter().any(|n| n.node == name))
                        || w.mig_instances.iter().any(|i| i.node == name)
                        || w.shares.iter().any(|s| s.node == name)
                        || w.packed.iter().any(|s| s.node == name)
                })
        }
        MoveKind::Pool => p.pools.iter().any(|n| n.pool.as_deref() == Some(name)),
    }
}

/// The renames `p` needs: its names hold the source, and not yet the target (after the
/// apply that carried a rename out, the placement has the new name and the `moved` is
/// a no-op).
pub fn applicable<'m>(p: &Placement, moves: &'m [Move]) -> Vec<&'m Move> {
    moves
        .iter()
        .filter(|m| holds(p, m.kind, &m.from) && !holds(p, m.kind, &m.to))
        .collect()
}

/// `p` with the [`applicable`] renames made, in the same order as a placement of the
/// new names would have them.
pub fn renamed(p: &Placement, moves: &[Move]) -> Placement {
    let moves = applicable(p, moves);
    let mut out = p.clone();
    if moves.is_empty() {
        return out;
    }
    let map = |kind: MoveKind, name: &mut String| {
        if let Some(m) = moves.iter().find(|m| m.kind == kind && m.from == *name) {
            *name = m.to.clone();
        }
    };
    let node = |n: &mut String| map(MoveKind::Node, n);
    for np in &mut out.pools {
        node(&mut np.node);
        if let Some(pool) = &mut np.pool {
            map(MoveKind::Pool, pool);
        }
    }
    for l in &mut out.mig_layouts {
        node(&mut l.node);
    }
    for c in &mut out.mig_changes {
        node(&mut c.node);
    }
    for w in &mut out.workloads {
        map(MoveKind::Class, &mut w.name);
        for g in &mut w.gangs {
            g.nodes.iter_mut().for_each(|n| node(&mut n.node));
        }
        w.mig_instances.iter_mut().for_each(|i| node(&mut i.node));
        w.shares.iter_mut().for_each(|s| node(&mut s.node));
        w.packed.iter_mut().for_each(|s| node(&mut s.node));
        w.mig_instances.sort();
        w.shares.sort();
        w.packed.sort();
    }
    for a in &mut out.authorities {
        a.classes.iter_mut().for_each(|c| map(MoveKind::Class, c));
        a.pools.iter_mut().for_each(|c| map(MoveKind::Pool, c));
        a.classes.sort();
        a.pools.sort();
    }
    out.pools.sort();
    out.mig_layouts
        .sort_by(|a, b| (&a.node, a.gpu).cmp(&(&b.node, b.gpu)));
    out.mig_changes
        .sort_by(|a, b| (&a.node, a.gpu).cmp(&(&b.node, b.gpu)));
    out.workloads.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// GP967: a `moved` whose source the previous placement does not have.
pub(crate) const GP967: &str = "GP967";

/// A warning (GP967) for each rename with nothing to rename: the previous placement
/// (`None`: there is none, a first apply) holds neither its source nor its target, and
/// no other rename to the same target applies (a link of a chain). At the `moved` line.
pub fn unused(
    spec: &crate::spec::Spec,
    moves: &[Move],
    previous: Option<&Placement>,
) -> Vec<crate::diag::Diagnostic> {
    let used = |m: &Move| {
        previous.is_some_and(|p| {
            holds(p, m.kind, &m.from)
                || holds(p, m.kind, &m.to)
                || moves
                    .iter()
                    .any(|o| o.kind == m.kind && o.to == m.to && holds(p, o.kind, &o.from))
        })
    };
    let mut out = Vec::new();
    for m in moves.iter().filter(|m| !used(m)) {
        let decl = spec
            .moves
            .iter()
            .find(|d| d.from.as_ref().is_some_and(|f| f.value == m.from));
        let what = match previous {
            Some(_) => "the last applied placement has no",
            None => "there is no applied placement yet, so there is no",
        };
        let mut d = crate::diag::Diagnostic::warning(
            GP967,
            format!(
                "`moved` from {} to {}: {what} {} {}, nothing to rename",
                crate::diag::quoted(&m.from),
                crate::diag::quoted(&m.to),
                m.kind.as_str(),
                crate::diag::quoted(&m.from)
            ),
        )
        .with_help(
            "check the old name against the state (`gpuplan state show`); remove the `moved` \
             once no state of an older name is left",
        );
        if let Some(decl) = decl {
            d = d.at(decl.span, "nothing to rename");
        }
        out.push(d);
    }
    out
}
