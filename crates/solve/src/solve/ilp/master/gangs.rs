//! Gangs: per shape, the node items of each group (whole node-local gangs, shares of
//! multi-node gangs), the gangs `y(s, m, d)` per domain with their share rows and "at
//! least `j` gangs" columns `b(s, m, d, j)`, and admission `a(w)`.

use super::super::pattern::Item;
use super::super::problem::group_fits;
use super::{INF, Master, domain, need_nvlink, partial_size};
use std::collections::BTreeMap;

/// Per (mode, domain) of a shape: the nodes that may hold a share, and the most shares
/// one of them can hold.
type DomainNodes = BTreeMap<(usize, String), (u32, u32)>;

impl Master<'_> {
    /// Gang items per group, their domain rows, gang counts and admission.
    pub(super) fn gang_items(&mut self) {
        for si in 0..self.p.shapes.len() {
            let gang_row = self.lp.row(0.0, 0.0);
            self.gang_row.insert(si, gang_row);
            let dom_nodes = self.local_items(si);
            for ((mi, d), (nodes, max_per_node)) in dom_nodes {
                self.domain_gangs(si, mi, d, nodes, max_per_node);
            }
            self.share_items(si);
            let s = &self.p.shapes[si];
            for &w in &s.workloads {
                let a = self
                    .lp
                    .col(0.0, 0.0, self.c.workloads[w].replicas as f64, true);
                self.lp.set(gang_row, a, -1.0);
                self.a.insert(w, a);
            }
        }
    }

    /// The node-local items of shape `si` on the groups that can hold a whole gang, and
    /// the nodes of each domain that can hold a share of one.
    fn local_items(&mut self, si: usize) -> DomainNodes {
        let p = self.p;
        let s = &p.shapes[si];
        // Domain nodes per (mode, domain), for the groups that may hold a share.
        let mut dom_nodes = DomainNodes::new();
        for (mi, mode) in s.modes.iter().enumerate() {
            for (gi, g) in p.groups.iter().enumerate() {
                let smallest = partial_size(s).unwrap_or(s.per_node).min(s.per_node);
                if self.conv[gi].is_none()
                    || !s.models.contains(&g.model)
                    || !group_fits(g, mode, s.gpus, smallest)
                {
                    continue;
                }
                let local = mode.node_local || s.shares <= 1;
                match (local, domain(p, gi, si, mi)) {
                    (true, _) => {
                        if g.shape.gpus() >= s.gpus
                            && (!need_nvlink(mode) || g.shape.domains.iter().any(|d| *d >= s.gpus))
                        {
                            self.items[gi].push(Item::Local {
                                s: si as u32,
                                m: mi as u32,
                            });
                        }
                    }
                    (false, Some(d)) => {
                        let per = s.per_node.min(s.gpus);
                        // A node holds a full share, or the one smaller share.
                        if g.shape.gpus() < partial_size(s).unwrap_or(per).min(per) {
                            continue;
                        }
                        let e = dom_nodes.entry((mi, d)).or_default();
                        e.0 += g.nodes.len() as u32;
                        e.1 =
                            e.1.max(g.shape.gpus() / partial_size(s).unwrap_or(per).min(per));
                    }
                    (false, None) => {}
                }
            }
        }
        dom_nodes
    }

    /// The gangs of shape `si` in mode `mi` inside domain `d`, whose `nodes` hold at most
    /// `max_per_node` shares each: `y`, its share rows, and the "at least `j` gangs"
    /// columns and rows.
    fn domain_gangs(&mut self, si: usize, mi: usize, d: String, nodes: u32, max_per_node: u32) {
        let s = &self.p.shapes[si];
        if nodes < s.shares {
            return; // a gang needs `shares` distinct nodes
        }
        let gang_row = self.gang_row[&si];
        let j_max = max_per_node.max(1);
        let ub = (nodes * j_max / s.shares.max(1)) as f64;
        let y = self.lp.col(0.0, 0.0, ub, true);
        self.lp.set(gang_row, y, 1.0);
        let full = s.shares - u32::from(partial_size(s).is_some());
        let row = self.lp.row(0.0, 0.0);
        self.lp.set(row, y, -(full as f64));
        self.share_row.insert((si, mi, d.clone(), false), row);
        if partial_size(s).is_some() {
            let row = self.lp.row(0.0, 0.0);
            self.lp.set(row, y, -1.0);
            self.share_row.insert((si, mi, d.clone(), true), row);
        }
        for j in 2..=j_max {
            let b = self.lp.col(0.0, 0.0, 1.0, true);
            let r1 = self.lp.row(-INF, 0.0);
            self.lp.set(r1, b, -(nodes as f64));
            self.gr_row.insert((si, mi, d.clone(), j), r1);
            let r2 = self.lp.row(-INF, 0.0);
            self.lp.set(r2, b, j as f64);
            self.lp.set(r2, y, -1.0);
            self.b.insert((si, mi, d.clone(), j), b);
        }
        self.y.insert((si, mi, d), y);
    }

    /// Share items of shape `si` on the groups of every domain that has gangs (a share
    /// row).
    fn share_items(&mut self, si: usize) {
        let p = self.p;
        let s = &p.shapes[si];
        for (mi, _) in s.modes.iter().enumerate() {
            for gi in 0..p.groups.len() {
                let Some(d) = domain(p, gi, si, mi) else {
                    continue;
                };
                let smallest = partial_size(s).unwrap_or(s.per_node).min(s.per_node);
                if !self.share_row.contains_key(&(si, mi, d.clone(), false))
                    || self.conv[gi].is_none()
                    || !s.models.contains(&p.groups[gi].model)
                    || !group_fits(&p.groups[gi], &s.modes[mi], s.gpus, smallest)
                    || s.modes[mi].node_local
                    || s.shares <= 1
                {
                    continue;
                }
                let g = &p.groups[gi];
                if g.shape.gpus() >= s.per_node.min(s.gpus) {
                    self.items[gi].push(Item::Share {
                        s: si as u32,
                        m: mi as u32,
                        partial: false,
                    });
                }
                if let Some(ps) = partial_size(s) {
                    if g.shape.gpus() >= ps {
                        self.items[gi].push(Item::Share {
                            s: si as u32,
                            m: mi as u32,
                            partial: true,
                        });
                    }
                }
            }
        }
    }
}
