//! MIG: layouts onto GPUs of MIG nodes, instances onto layouts.

use super::{Ctx, order};
use crate::catalog::MigProfile;
use crate::model::NodeIdx;
use crate::model::PoolMode;
use crate::solve::Assignment;
use std::collections::{BTreeMap, BTreeSet};

/// A GPU: its node and index.
type Gpu = (NodeIdx, u32);

/// Instance slots per profile: the GPUs whose layouts hold one, once per instance.
type Slots = BTreeMap<&'static str, Vec<Gpu>>;

/// MIG layouts onto the MIG nodes' GPUs (fixed ones, kept current ones, then the
/// chosen layouts on free GPUs first), and instances onto the layouts (each class first
/// on the GPUs it had).
pub(crate) fn place(cx: &Ctx, a: &mut Assignment) {
    let p = cx.m.p;
    for (&w, per) in &p.mig {
        for (m, q) in per {
            a.mig_profiles.insert((w, m.clone()), q.name);
        }
    }
    // Every model with chosen layouts, and every model with fixed ones: a fixed layout
    // stays on its GPU even where no class of the master uses MIG on that model.
    let mut models: BTreeSet<&str> = cx.m.layouts.keys().map(String::as_str).collect();
    for (n, g) in p.fixed_layouts.keys() {
        if let Some(m) = cx.m.c.nodes[*n]
            .gpus
            .iter()
            .find(|x| x.index == *g)
            .and_then(|x| x.model.as_deref())
        {
            models.insert(m);
        }
    }
    let none: Vec<Vec<&'static MigProfile>> = Vec::new();
    for m in models {
        let layouts = cx.m.layouts.get(m).unwrap_or(&none);
        // Instance slots per profile: fixed layouts first, then chosen layouts on free GPUs.
        let mut slots = fixed_slots(cx, m, a);
        let (gpus, kept) = free_and_kept(cx, m);
        lay_out(cx, m, layouts, gpus, &kept, &mut slots, a);
        instances(cx, m, slots, a);
    }
    a.mig_instances.sort();
}

/// The fixed layouts on usable GPUs of model `m`, into `a`; their instance slots.
fn fixed_slots(cx: &Ctx, m: &str, a: &mut Assignment) -> Slots {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut slots = Slots::new();
    for ((n, g), ls) in &p.fixed_layouts {
        if c.nodes[*n]
            .gpus
            .iter()
            .any(|x| x.index == *g && x.model.as_deref() == Some(m) && !x.down)
        {
            a.mig_layouts
                .insert((*n, *g), ls.iter().map(|q| q.name).collect());
            a.node_mode[*n] = Some(PoolMode::Mig);
            for q in ls {
                slots.entry(q.name).or_default().push((*n, *g));
            }
        }
    }
    slots
}

/// The GPUs of model `m`'s MIG nodes that the solution keeps at their current layout
/// (as many of each as it says, in name order), and the others without a fixed layout,
/// those without a current layout first (name order within each).
fn free_and_kept(cx: &Ctx, m: &str) -> (Vec<Gpu>, BTreeSet<Gpu>) {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut gpus: Vec<Gpu> = Vec::new();
    let mut kept: BTreeSet<Gpu> = BTreeSet::new();
    for (gi, g) in p.groups.iter().enumerate() {
        if g.model != m {
            continue;
        }
        let nodes: &[NodeIdx] = if g.fixed_mig {
            &g.nodes
        } else {
            cx.by_mode
                .get(&(gi, PoolMode::Mig))
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        // Current layouts kept: as many GPUs of each as the ILP keeps, in name order.
        for (ci, (layout, _)) in g.current.iter().enumerate() {
            let mut want = cx.m.k.get(&(gi, ci)).map(|v| cx.val(*v)).unwrap_or(0);
            for &n in nodes {
                for x in c.nodes[n].usable_gpus() {
                    if want > 0 && p.current_layouts.get(&(n, x.index)) == Some(layout) {
                        kept.insert((n, x.index));
                        want -= 1;
                    }
                }
            }
        }
        for &n in nodes {
            for x in c.nodes[n].usable_gpus() {
                if !p.fixed_layouts.contains_key(&(n, x.index)) && !kept.contains(&(n, x.index)) {
                    gpus.push((n, x.index));
                }
            }
        }
    }
    // New layouts go to GPUs without a current layout first, then to configured
    // GPUs the ILP gives up (name order within each).
    gpus.sort_by(|x, y| {
        (p.current_layouts.contains_key(x), &c.nodes[x.0].name, x.1).cmp(&(
            p.current_layouts.contains_key(y),
            &c.nodes[y.0].name,
            y.1,
        ))
    });
    (gpus, kept)
}

/// Kept layouts stay; the chosen `layouts` of model `m` go onto `gpus` in order (as
/// many of each as the solution says); a configured GPU no new layout needs keeps its
/// layout. Into `a` and `slots`.
fn lay_out(
    cx: &Ctx,
    m: &str,
    layouts: &[Vec<&'static MigProfile>],
    gpus: Vec<Gpu>,
    kept: &BTreeSet<Gpu>,
    slots: &mut Slots,
    a: &mut Assignment,
) {
    let p = cx.m.p;
    for &(n, g) in kept {
        let names: Vec<&'static str> = p.current_layouts[&(n, g)].iter().map(|q| q.name).collect();
        for q in &names {
            slots.entry(q).or_default().push((n, g));
        }
        a.mig_layouts.insert((n, g), names);
        a.node_mode[n] = Some(PoolMode::Mig);
    }
    let mut it = gpus.into_iter();
    for (li, l) in layouts.iter().enumerate() {
        let count =
            cx.m.z
                .get(&(m.to_string(), li))
                .map(|v| cx.val(*v))
                .unwrap_or(0);
        for _ in 0..count {
            let Some((n, g)) = it.next() else { break };
            let names: Vec<&'static str> = l.iter().map(|q: &&MigProfile| q.name).collect();
            for q in &names {
                slots.entry(q).or_default().push((n, g));
            }
            a.mig_layouts.insert((n, g), names);
            a.node_mode[n] = Some(PoolMode::Mig);
        }
    }
    // A configured GPU of a MIG node that no new layout needs keeps its layout: the
    // node script would not touch it anyway.
    for (n, g) in it {
        if let Some(ls) = p.current_layouts.get(&(n, g)) {
            let names: Vec<&'static str> = ls.iter().map(|q| q.name).collect();
            for q in &names {
                slots.entry(q).or_default().push((n, g));
            }
            a.mig_layouts.insert((n, g), names);
        }
    }
}

/// The MIG replicas of model `m` onto its instance slots, in admission order: first
/// back to the slots they had ([`reclaim`]), the rest from the front of each list.
fn instances(cx: &Ctx, m: &str, mut slots: Slots, a: &mut Assignment) {
    let (c, p) = (cx.m.c, cx.m.p);
    let ws = order(
        c,
        p.mig.keys().copied().filter(|w| p.mig[w].contains_key(m)),
    );
    let mut want: BTreeMap<usize, u64> = ws
        .iter()
        .map(|w| {
            let k =
                cx.m.r
                    .get(&(*w, m.to_string()))
                    .map(|v| cx.val(*v))
                    .unwrap_or(0);
            (*w, k)
        })
        .collect();
    let mut claimed = reclaim(cx, m, &ws, &mut want, &slots, a);
    let mut cursor: BTreeMap<&str, usize> = BTreeMap::new();
    for w in ws {
        let q = p.mig[&w][m].name;
        let list = slots.entry(q).or_default();
        let at = cursor.entry(q).or_default();
        for _ in 0..want[&w] {
            let slot = loop {
                let Some(x) = list.get(*at).copied() else {
                    break None;
                };
                *at += 1;
                match claimed.get_mut(&(q, x)) {
                    Some(k) if *k > 0 => *k -= 1,
                    _ => break Some(x),
                }
            };
            let Some((n, g)) = slot else { break };
            a.mig_instances.push((w, n, g, q));
        }
    }
}

/// With a previous placement, each class of `ws` (admission order) first takes back the
/// slots it had, within what it is `want`ed to get; returns the slots so claimed.
fn reclaim(
    cx: &Ctx,
    m: &str,
    ws: &[usize],
    want: &mut BTreeMap<usize, u64>,
    slots: &Slots,
    a: &mut Assignment,
) -> BTreeMap<(&'static str, Gpu), u32> {
    let (c, p) = (cx.m.c, cx.m.p);
    let mut claimed: BTreeMap<(&str, Gpu), u32> = BTreeMap::new();
    let Some(pv) = cx.prev.filter(|pv| !pv.mig_instances.is_empty()) else {
        return claimed;
    };
    let mut avail: BTreeMap<(&str, Gpu), u32> = BTreeMap::new();
    for (q, list) in slots {
        for x in list {
            *avail.entry((*q, *x)).or_default() += 1;
        }
    }
    let model = &c.models[m];
    for &w in ws {
        let q = p.mig[&w][m].name;
        for (n, g, prof) in pv.mig_instances.get(&w).map(Vec::as_slice).unwrap_or(&[]) {
            let left = want.get_mut(&w).unwrap();
            if *left == 0 {
                break;
            }
            if model.mig_profile(prof).map(|x| x.name) != Some(q) {
                continue;
            }
            if let Some(k) = avail.get_mut(&(q, (*n, *g))).filter(|k| **k > 0) {
                *k -= 1;
                *left -= 1;
                *claimed.entry((q, (*n, *g))).or_default() += 1;
                a.mig_instances.push((w, *n, *g, q));
            }
        }
    }
    claimed
}
