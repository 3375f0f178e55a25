//! A local search on the dive's placement ([`super::dive`]): each replica left out
//! (largest GPU share first) is placed where it fits, else on a node once one replica
//! there moves to another node that holds it, else on a node emptied and refilled (its
//! replicas back on it where they fit, else elsewhere). Every step admits one more
//! replica and loses none, so the placement only gets better; the moves follow the
//! packing rules of [`crate::solve::pack::Bins`] and the team ceilings and quotas of the
//! ledger, and the result is checked as every seed is ([`super::seed::solution_of`]).
//! CPU-only classes are not the dive's (they are no item of the master): they never move.
//!
//! Decision: a bounded number of fit checks ([`WORK`]), not a clock, so the same input
//! gives the same plan on any machine. Measured on openb (docs/benchmarks.md): on
//! gpuspec33 and the cpu lists the dive's misses are replicas a fragment keeps out of a
//! node with room for them, which one move or a refill clears.

use super::master::Master;
use super::seed::{self, Replicas};
use crate::model::NodeIdx;
use crate::model::ledger::Ledger;
use crate::solve::pack::{self, Bins};
use std::collections::{BTreeMap, BTreeSet};

/// Fit checks the search may make in all.
const WORK: u64 = 400_000;

/// The placement's state during the search.
struct Search<'m, 'a> {
    m: &'m Master<'a>,
    bins: Bins,
    /// Replicas per node: (workload, GPU indexes).
    on: BTreeMap<NodeIdx, Vec<(usize, Vec<u32>)>>,
    /// The group of every node packed replicas may use.
    group_of: BTreeMap<NodeIdx, usize>,
    ledger: Ledger,
    /// Per workload looked at, per group: whether the group holds its item.
    holds: BTreeMap<usize, Vec<bool>>,
    work: u64,
}

/// Places more of the replicas `on` (counted by `ledger`) leaves out; returns the
/// replicas.
pub(super) fn improve(m: &Master, on: Replicas, ledger: Ledger) -> Replicas {
    let c = m.c;
    let group_of = seed::packed_nodes(m);
    let mut a = crate::solve::Assignment::default();
    let mut by_node: BTreeMap<NodeIdx, Vec<(usize, Vec<u32>)>> = BTreeMap::new();
    let mut placed: BTreeMap<usize, u32> = BTreeMap::new();
    for (w, n, gpus) in on {
        a.packed.push((w, n, gpus.clone(), 1));
        *placed.entry(w).or_default() += 1;
        by_node.entry(n).or_default().push((w, gpus));
    }
    let bins = Bins::new(c, &a, group_of.keys().copied());
    let mut s = Search {
        m,
        bins,
        on: by_node,
        group_of,
        ledger,
        holds: BTreeMap::new(),
        work: 0,
    };
    for w in pack::largest_first(c, m.p.packed.keys().copied()) {
        let Some(&col) = m.a.get(&w) else { continue };
        if c.workloads[w].packed_gpu_milli() == 0 {
            continue;
        }
        // At most what the stage allows (compaction fixes each class's admission).
        let most = (m.lp.hi[col].max(0.0).round() as u32).min(c.workloads[w].replicas);
        let left = most.saturating_sub(placed.get(&w).copied().unwrap_or(0));
        if left > 0 && s.work < WORK {
            s.fill(w, left);
        }
    }
    s.on.into_iter()
        .flat_map(|(n, list)| list.into_iter().map(move |(w, gpus)| (w, n, gpus)))
        .collect()
}

impl Search<'_, '_> {
    /// The GPU model of node `n`'s group.
    fn model(&self, n: NodeIdx) -> &str {
        &self.m.p.groups[self.group_of[&n]].model
    }

    /// Remembers, per group, whether it holds workload `w`'s item ([`seed::holding`];
    /// once per workload, for [`Search::relocate`]: the groups' item lists are long on
    /// lists with many classes).
    fn learn(&mut self, w: usize) {
        let m = self.m;
        self.holds.entry(w).or_insert_with(|| seed::holding(m, w));
    }

    /// Places up to `left` more replicas of `w`: each where it fits, else on a node one
    /// move clears ([`Search::clear_one`]), else on a node emptied and refilled
    /// ([`Search::refill`]). The nodes are looked at in order, and a node where a
    /// way failed is not looked at again for the class: each way passes over the nodes
    /// once per class (moves only fill other nodes, so a node rarely opens up later).
    fn fill(&mut self, w: usize, left: u32) {
        let nodes = seed::candidates(self.m, &self.group_of, w);
        let mut at = [0usize; 3];
        for _ in 0..left {
            let placed = (0..3).any(|way| {
                while at[way] < nodes.len() && self.work < WORK {
                    let n = nodes[at[way]];
                    if self.way(way, w, n) {
                        return true;
                    }
                    at[way] += 1;
                }
                false
            });
            // A replica that no way places ends its class (the others are the same).
            if !placed {
                return;
            }
        }
    }

    /// Tries way `way` (see [`Search::fill`]) of placing one replica of `w` on `n`.
    fn way(&mut self, way: usize, w: usize, n: NodeIdx) -> bool {
        self.work += 1;
        if !seed::admits(&self.ledger, self.m, w, self.model(n)) {
            return false;
        }
        match way {
            0 => match self.bins.fits(self.m.c, w, n) {
                Some(gpus) => {
                    self.put(w, n, gpus);
                    true
                }
                None => false,
            },
            1 => self.clear_one(w, n),
            _ => self.refill(w, n),
        }
    }

    /// Makes room for `w` on `n` by taking every replica off it, placing `w`, then each
    /// replica taken off (largest first) back on `n` where it fits, else on another node
    /// ([`Search::relocate`]). False, and nothing changed, when `w` does not fit the
    /// empty node or a replica taken off finds no place.
    fn refill(&mut self, w: usize, n: NodeIdx) -> bool {
        let (c, m) = (self.m.c, self.m);
        let list = self.on.remove(&n).unwrap_or_default();
        let model_n = self.model(n).to_string();
        for (v, vg) in &list {
            self.bins.give_back(c, *v, n, vg);
            seed::remove(&mut self.ledger, m, *v, &model_n);
        }
        self.work += list.len() as u64 + 1;
        let Some(gpus) = self.bins.fits(c, w, n) else {
            self.restore(n, list, Vec::new());
            return false;
        };
        self.bins.place_exact(c, w, n, &gpus);
        seed::add(&mut self.ledger, m, w, &model_n);
        let mut done: Replicas = vec![(w, n, gpus)];
        let mut order: Vec<usize> = (0..list.len()).collect();
        order.sort_by_key(|&i| {
            let wl = &c.workloads[list[i].0];
            let size = (wl.packed_gpu_milli(), wl.cpu_milli, wl.host_memory.0);
            (std::cmp::Reverse(size), i)
        });
        for i in order {
            let v = list[i].0;
            self.work += 1;
            let back = seed::admits(&self.ledger, m, v, &model_n)
                .then(|| self.bins.fits(c, v, n))
                .flatten();
            let to = match back {
                Some(g) => {
                    self.bins.place_exact(c, v, n, &g);
                    Some((n, g))
                }
                None => self.relocate(v, n),
            };
            match to {
                Some((t, tg)) => {
                    let model_t = self.model(t).to_string();
                    seed::add(&mut self.ledger, m, v, &model_t);
                    done.push((v, t, tg));
                }
                None => {
                    self.restore(n, list, done);
                    return false;
                }
            }
        }
        for (v, t, g) in done {
            self.on.entry(t).or_default().push((v, g));
        }
        true
    }

    /// Undoes a [`Search::refill`] of node `n`: takes back the replicas `done` placed,
    /// then puts `list` back where it was.
    fn restore(&mut self, n: NodeIdx, list: Vec<(usize, Vec<u32>)>, done: Replicas) {
        let (c, m) = (self.m.c, self.m);
        for (v, t, g) in done.into_iter().rev() {
            self.bins.give_back(c, v, t, &g);
            let model_t = self.model(t).to_string();
            seed::remove(&mut self.ledger, m, v, &model_t);
        }
        let model_n = self.model(n).to_string();
        for (v, vg) in &list {
            self.bins.place_exact(c, *v, n, vg);
            seed::add(&mut self.ledger, m, *v, &model_n);
        }
        self.on.insert(n, list);
    }

    /// Moves one replica of node `n` to another node so that one of `w` fits `n`, and
    /// places it; false (and nothing changed) when no single move does.
    fn clear_one(&mut self, w: usize, n: NodeIdx) -> bool {
        let c = self.m.c;
        let mut tried: BTreeSet<(usize, &[u32])> = BTreeSet::new();
        let list = self.on.get(&n).cloned().unwrap_or_default();
        for (i, (v, vg)) in list.iter().enumerate() {
            if !tried.insert((*v, vg.as_slice())) {
                continue;
            }
            self.work += 1;
            self.bins.give_back(c, *v, n, vg);
            let Some(gpus) = self.bins.fits(c, w, n) else {
                self.bins.place_exact(c, *v, n, vg);
                continue;
            };
            self.bins.place_exact(c, w, n, &gpus);
            let model_n = self.model(n).to_string();
            seed::remove(&mut self.ledger, self.m, *v, &model_n);
            if let Some((t, tg)) = self.relocate(*v, n) {
                seed::add(&mut self.ledger, self.m, w, &model_n);
                let model_t = self.model(t).to_string();
                seed::add(&mut self.ledger, self.m, *v, &model_t);
                let at = self.on.entry(n).or_default();
                at.remove(i);
                at.push((w, gpus));
                self.on.entry(t).or_default().push((*v, tg));
                return true;
            }
            seed::add(&mut self.ledger, self.m, *v, &model_n);
            self.bins.give_back(c, w, n, &gpus);
            self.bins.place_exact(c, *v, n, vg);
        }
        false
    }

    /// Places replica `v` on a node other than `from`, best fit
    /// ([`Bins::place_best_fit_in`]), within the ledger; returns where.
    fn relocate(&mut self, v: usize, from: NodeIdx) -> Option<(NodeIdx, Vec<u32>)> {
        self.learn(v);
        let holds = &self.holds[&v];
        let (m, ledger, group_of) = (self.m, &self.ledger, &self.group_of);
        let before = self.bins.looked;
        let to = self.bins.place_best_fit_in(m.c, v, |t| {
            t != from
                && group_of
                    .get(&t)
                    .is_some_and(|g| holds[*g] && seed::admits(ledger, m, v, &m.p.groups[*g].model))
        });
        self.work += 1 + self.bins.looked - before;
        to
    }

    /// Records one replica of `w` on `n` (GPUs `gpus`), taken from the bins.
    fn put(&mut self, w: usize, n: NodeIdx, gpus: Vec<u32>) {
        self.bins.place_exact(self.m.c, w, n, &gpus);
        let model = self.model(n).to_string();
        seed::add(&mut self.ledger, self.m, w, &model);
        self.on.entry(n).or_default().push((w, gpus));
    }
}

#[cfg(test)]
mod tests {
    use super::super::master::Master;
    use super::super::problem::Problem;
    use super::super::testing::cluster;
    use super::improve;
    use crate::model::Cluster;
    use crate::model::ledger::Ledger;

    fn w(c: &Cluster, name: &str) -> usize {
        c.workloads.iter().position(|x| x.name == name).unwrap()
    }

    fn n(c: &Cluster, name: &str) -> usize {
        c.nodes.iter().position(|x| x.name == name).unwrap()
    }

    /// (workload, node, GPUs) of a placement, sorted, by name.
    fn named(c: &Cluster, on: &[(usize, usize, Vec<u32>)]) -> Vec<(String, String, Vec<u32>)> {
        let mut v: Vec<_> = on
            .iter()
            .map(|(w, n, g)| {
                (
                    c.workloads[*w].name.clone(),
                    c.nodes[*n].name.clone(),
                    g.clone(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn one_move_makes_room_for_a_replica_left_out() {
        // GPU shares free: n-1 60% + 30%, n-2 30% + 60%: a third 70% fits no GPU until
        // the 40% on n-1's first GPU moves to n-2's second.
        let c = cluster(
            r#"
inference "big" team="t" priority="p" replicas=3 {
    fraction "70%"
    requests cpu=1 memory="1GiB"
}
inference "small" team="t" priority="p" replicas=2 {
    fraction "40%"
    requests cpu=1 memory="1GiB"
}
"#,
        );
        let p = Problem::build(&c, &Default::default());
        let m = Master::new(&c, &p);
        let (big, small, n1, n2) = (w(&c, "big"), w(&c, "small"), n(&c, "n-1"), n(&c, "n-2"));
        let on = vec![
            (small, n1, vec![0]),
            (big, n1, vec![1]),
            (big, n2, vec![0]),
            (small, n2, vec![1]),
        ];
        let out = improve(&m, on, Ledger::default());
        let s = |w: &str, n: &str, g: u32| (w.to_string(), n.to_string(), vec![g]);
        assert_eq!(
            named(&c, &out),
            vec![
                s("big", "n-1", 0),
                s("big", "n-1", 1),
                s("big", "n-2", 0),
                s("small", "n-2", 1),
                s("small", "n-2", 1),
            ]
        );
    }

    #[test]
    fn an_emptied_node_takes_a_larger_replica() {
        // A 30% fraction on every GPU: no GPU is whole, and no single move frees a node's
        // two. Emptying n-1 places the 2-GPU replica; its fractions move to n-2.
        let c = cluster(
            r#"
inference "pair" team="t" priority="p" replicas=1 {
    isolation "whole-gpu"
    gpus 2
    requests cpu=1 memory="1GiB"
}
inference "part" team="t" priority="p" replicas=4 {
    fraction "30%"
    requests cpu=1 memory="1GiB"
}
"#,
        );
        let p = Problem::build(&c, &Default::default());
        let m = Master::new(&c, &p);
        let (part, n1, n2) = (w(&c, "part"), n(&c, "n-1"), n(&c, "n-2"));
        let on = vec![
            (part, n1, vec![0]),
            (part, n1, vec![1]),
            (part, n2, vec![0]),
            (part, n2, vec![1]),
        ];
        let out = improve(&m, on, Ledger::default());
        let s = |w: &str, n: &str, g: &[u32]| (w.to_string(), n.to_string(), g.to_vec());
        assert_eq!(
            named(&c, &out),
            vec![
                s("pair", "n-1", &[0, 1]),
                s("part", "n-2", &[0]),
                s("part", "n-2", &[0]),
                s("part", "n-2", &[0]),
                s("part", "n-2", &[1]),
            ]
        );
    }
}
