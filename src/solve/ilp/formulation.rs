//! The ILP over the aggregated [`Problem`], built with good_lp.
//!
//! Variables (all integer): nodes per group and pool mode; gangs per shape and domain
//! (or per group, for gangs inside one node) and gang shares per group; admitted replicas
//! per workload; MIG layouts per GPU model (patterns, one count per valid maximal
//! layout); MIG and shared replicas per workload and model; shared GPUs per workload and
//! model; guaranteed usage per team.

use super::problem::{Problem, group_fits};
use crate::catalog::{self, MigProfile};
use crate::model::Cluster;
use crate::placement::PoolMode;
use good_lp::{Expression, ProblemVariables, Variable, variable};
use std::collections::{BTreeMap, BTreeSet};

/// A variable and its column index in the HiGHS model.
pub type Col = (Variable, usize);

/// What the current stage optimises.
#[derive(Clone, Debug)]
pub enum Objective {
    /// Maximise admitted GPU-equivalents of these workloads (one priority level), plus
    /// `weight` times those of the lower-priority workloads (a small weight: it only
    /// steers the solution towards admitting them too, so later stages can be skipped).
    Admit(Vec<usize>, Vec<usize>, f64),
    /// Minimise topology spread, pattern count and fragmentation.
    Compact,
}

pub struct Formulation {
    pub vars: ProblemVariables,
    cols: usize,
    pub n: BTreeMap<(usize, PoolMode), Col>,
    /// Node-local gangs: (shape, mode, group).
    pub y_local: BTreeMap<(usize, usize, usize), Col>,
    /// Domain gangs: (shape, mode, domain).
    pub y_dom: BTreeMap<(usize, usize, String), Col>,
    /// Gang shares: (shape, mode, group).
    pub x: BTreeMap<(usize, usize, usize), Col>,
    /// Admitted replicas (gangs for gang workloads).
    pub a: BTreeMap<usize, Col>,
    /// MIG layouts per model: (model, layout index).
    pub z: BTreeMap<(String, usize), Col>,
    pub layouts: BTreeMap<String, Vec<Vec<&'static MigProfile>>>,
    /// GPUs that keep their current MIG layout: (group, index into `Group::current`).
    pub k: BTreeMap<(usize, usize), Col>,
    /// Replicas per (workload, model) for MIG and shared workloads.
    pub r: BTreeMap<(usize, String), Col>,
    /// Shared GPUs per (workload, model).
    pub t: BTreeMap<(usize, String), Col>,
    pub u: BTreeMap<String, Col>,
    /// Packed replicas per (workload, group).
    pub pk: BTreeMap<(usize, usize), Col>,
    pub constraints: Vec<good_lp::Constraint>,
    /// Smallest per-share footprint that keeps volume packing exact: (shape, mode, group).
    pub footprint: BTreeMap<(usize, usize, usize), u32>,
}

/// Smallest divisor of `cap` that is at least `need` (power-of-two style sizes then pack
/// exactly by volume).
pub fn footprint(need: u32, cap: u32) -> Option<u32> {
    (need.max(1)..=cap).find(|d| cap % d == 0)
}

impl Formulation {
    fn add(&mut self, lo: f64, hi: f64) -> Col {
        let v = self.vars.add(variable().integer().min(lo).max(hi));
        self.cols += 1;
        (v, self.cols - 1)
    }

    /// A continuous variable (for stage-only terms such as [`super::keep`]).
    pub(super) fn add_continuous(&mut self, lo: f64, hi: f64) -> Col {
        let v = self.vars.add(variable().min(lo).max(hi));
        self.cols += 1;
        (v, self.cols - 1)
    }

    pub fn columns(&self) -> usize {
        self.cols
    }

    /// Builds every variable and constraint except the objective and stage locks.
    pub fn new(c: &Cluster, p: &Problem) -> Formulation {
        let mut f = Formulation {
            vars: ProblemVariables::new(),
            cols: 0,
            n: BTreeMap::new(),
            y_local: BTreeMap::new(),
            y_dom: BTreeMap::new(),
            x: BTreeMap::new(),
            a: BTreeMap::new(),
            z: BTreeMap::new(),
            layouts: BTreeMap::new(),
            k: BTreeMap::new(),
            r: BTreeMap::new(),
            t: BTreeMap::new(),
            u: BTreeMap::new(),
            pk: BTreeMap::new(),
            constraints: Vec::new(),
            footprint: BTreeMap::new(),
        };
        f.pools(c, p);
        let mut volume = f.gangs(c, p);
        f.packed(c, p, &mut volume);
        for (gi, vol) in volume {
            let g = &p.groups[gi];
            let n = f.n[&(gi, PoolMode::WholeGpu)].0;
            f.constraints.push(vol.leq((g.gpus as f64) * n));
        }
        f.mig(c, p);
        f.shared(c, p);
        f.quotas(c, p);
        f
    }

    fn modes_needed(c: &Cluster, p: &Problem, model: &str) -> BTreeSet<PoolMode> {
        let mut s = BTreeSet::from([PoolMode::WholeGpu]);
        if p.mig.values().any(|m| m.contains_key(model))
            && c.models.get(model).is_some_and(|m| m.mig.is_some())
        {
            s.insert(PoolMode::Mig);
        }
        for (mps, _, models) in p.shared.values() {
            if models.iter().any(|m| m == model) {
                s.insert(PoolMode::shared(*mps));
            }
        }
        s
    }

    fn pools(&mut self, c: &Cluster, p: &Problem) {
        for (gi, g) in p.groups.iter().enumerate() {
            let modes: Vec<PoolMode> = match g.pinned {
                Some(m) => vec![m],
                None => Self::modes_needed(c, p, &g.model).into_iter().collect(),
            };
            let size = g.nodes.len() as f64;
            let mut sum = Expression::from(0.0);
            for m in modes {
                let v = self.add(0.0, size);
                sum += v.0;
                self.n.insert((gi, m), v);
            }
            self.constraints.push(sum.eq(size));
        }
    }

    /// Gang variables; returns the whole-GPU volume used per group.
    fn gangs(&mut self, c: &Cluster, p: &Problem) -> BTreeMap<usize, Expression> {
        let mut volume: BTreeMap<usize, Expression> = BTreeMap::new();
        for (si, s) in p.shapes.iter().enumerate() {
            let mut gangs = Expression::from(0.0);
            for (mi, mode) in s.modes.iter().enumerate() {
                let mut domains: BTreeMap<String, Vec<usize>> = BTreeMap::new();
                for (gi, g) in p.groups.iter().enumerate() {
                    if !s.models.contains(&g.model)
                        || !group_fits(g, mode, s.gpus, s.per_node)
                        || !self.n.contains_key(&(gi, PoolMode::WholeGpu))
                    {
                        continue;
                    }
                    let need = if mode.node_local { s.gpus } else { s.per_node };
                    let Some(fp) = footprint(need, g.gpus) else {
                        continue;
                    };
                    self.footprint.insert((si, mi, gi), fp);
                    match p.domain_of(g, mode) {
                        None => {
                            let cap = (g.nodes.len() as u32 * (g.gpus / fp)) as f64;
                            let v = self.add(0.0, cap);
                            gangs += v.0;
                            *volume.entry(gi).or_insert_with(|| Expression::from(0.0)) +=
                                (fp as f64) * v.0;
                            self.y_local.insert((si, mi, gi), v);
                        }
                        Some(d) => domains.entry(d).or_default().push(gi),
                    }
                }
                for (d, gs) in domains {
                    let nodes: usize = gs.iter().map(|g| p.groups[*g].nodes.len()).sum();
                    if nodes < s.shares as usize {
                        continue; // a gang needs `shares` distinct nodes
                    }
                    let slots: u32 = gs
                        .iter()
                        .map(|g| {
                            p.groups[*g].nodes.len() as u32
                                * (p.groups[*g].gpus / self.footprint[&(si, mi, *g)])
                        })
                        .sum();
                    let y = self.add(0.0, (slots / s.shares.max(1)) as f64);
                    gangs += y.0;
                    let mut shares = Expression::from(0.0);
                    for gi in gs {
                        let fp = self.footprint[&(si, mi, gi)];
                        let g = &p.groups[gi];
                        let x = self.add(0.0, (g.nodes.len() as u32 * (g.gpus / fp)) as f64);
                        // A gang puts at most one share on a node: shares in a group are
                        // at most (nodes in the group) x (gangs in the domain).
                        if (g.nodes.len() as u32) < s.shares {
                            self.constraints
                                .push(Expression::from(x.0).leq(g.nodes.len() as f64 * y.0));
                        }
                        shares += x.0;
                        *volume.entry(gi).or_insert_with(|| Expression::from(0.0)) +=
                            (fp as f64) * x.0;
                        self.x.insert((si, mi, gi), x);
                    }
                    self.constraints.push(shares.eq((s.shares as f64) * y.0));
                    self.y_dom.insert((si, mi, d), y);
                }
            }
            let mut admitted = Expression::from(0.0);
            for &w in &s.workloads {
                let v = self.add(0.0, c.workloads[w].replicas as f64);
                admitted += v.0;
                self.a.insert(w, v);
            }
            self.constraints.push(admitted.eq(gangs));
        }
        volume
    }

    /// Packed replicas per group: their GPU shares join the group's whole-GPU volume,
    /// their CPU and host memory are bounded by the group's nodes (aggregated: the
    /// post-pass packs them onto nodes and GPUs).
    fn packed(&mut self, c: &Cluster, p: &Problem, volume: &mut BTreeMap<usize, Expression>) {
        let mut cpu: BTreeMap<usize, Expression> = BTreeMap::new();
        let mut mem: BTreeMap<usize, Expression> = BTreeMap::new();
        for (&w, models) in &p.packed {
            let wl = &c.workloads[w];
            let milli = wl.packed_gpu_milli();
            let mut sum = Expression::from(0.0);
            for (gi, g) in p.groups.iter().enumerate() {
                if !self.n.contains_key(&(gi, PoolMode::WholeGpu))
                    || (milli > 0 && !models.contains(&g.model))
                    || !c.packed_fits_node(wl, g.nodes[0])
                {
                    continue;
                }
                let v = self.add(0.0, wl.replicas as f64);
                sum += v.0;
                if milli > 0 {
                    *volume.entry(gi).or_insert_with(|| Expression::from(0.0)) +=
                        (milli as f64 / 1000.0) * v.0;
                }
                if wl.cpu_milli > 0 {
                    *cpu.entry(gi).or_insert_with(|| Expression::from(0.0)) +=
                        (wl.cpu_milli as f64 / 1000.0) * v.0;
                }
                if wl.host_memory.0 > 0 {
                    *mem.entry(gi).or_insert_with(|| Expression::from(0.0)) +=
                        wl.host_memory.gib() * v.0;
                }
                self.pk.insert((w, gi), v);
            }
            let a = self.add(0.0, wl.replicas as f64);
            self.constraints.push(sum.eq(a.0));
            self.a.insert(w, a);
        }
        for (gi, e) in cpu {
            let g = &p.groups[gi];
            if let Some(k) = c.node_cpu_milli(g.nodes[0]) {
                let n = self.n[&(gi, PoolMode::WholeGpu)].0;
                self.constraints.push(e.leq((k as f64 / 1000.0) * n));
            }
        }
        for (gi, e) in mem {
            let g = &p.groups[gi];
            if let Some(m) = c.node_memory(g.nodes[0]) {
                let n = self.n[&(gi, PoolMode::WholeGpu)].0;
                self.constraints
                    .push(e.leq(crate::units::Bytes(m).gib() * n));
            }
        }
    }

    /// Valid layouts of a model using only allowed profiles that nothing else fits into
    /// (maximal): enough for covering constraints, since any layout is contained in one.
    fn maximal_layouts(
        c: &Cluster,
        model: &crate::model::GpuModel,
    ) -> Vec<Vec<&'static MigProfile>> {
        let Some(spec) = model.mig else {
            return Vec::new();
        };
        let allowed = |q: &MigProfile| {
            !q.media_extensions
                && model.driver_has(q.name)
                && (c.mig.allow.is_empty()
                    || c.mig
                        .allow
                        .iter()
                        .any(|a| model.mig_profile(a).is_some_and(|x| x.name == q.name)))
        };
        let all: Vec<Vec<&'static MigProfile>> = catalog::placement::enumerate_layouts(spec)
            .into_iter()
            .filter(|l| l.iter().all(|q| allowed(q)))
            .collect();
        let count = |l: &[&MigProfile]| -> BTreeMap<&str, usize> {
            let mut m = BTreeMap::new();
            for q in l {
                *m.entry(q.name).or_default() += 1;
            }
            m
        };
        let counts: Vec<BTreeMap<&str, usize>> = all.iter().map(|l| count(l)).collect();
        all.iter()
            .enumerate()
            .filter(|(i, _)| {
                !counts.iter().enumerate().any(|(j, cj)| {
                    j != *i
                        && cj.len() >= counts[*i].len()
                        && counts[*i]
                            .iter()
                            .all(|(k, v)| cj.get(k).is_some_and(|x| x >= v))
                        && cj != &counts[*i]
                })
            })
            .map(|(_, l)| l.clone())
            .collect()
    }

    fn mig(&mut self, c: &Cluster, p: &Problem) {
        let models: BTreeSet<String> = p.mig.values().flat_map(|m| m.keys().cloned()).collect();
        for m in &models {
            let model = &c.models[m];
            let layouts = Self::maximal_layouts(c, model);
            let mut gpus = Expression::from(0.0);
            let mut free_fixed = 0.0;
            let mut mig_gpus = Expression::from(0.0);
            for (gi, g) in p.groups.iter().enumerate() {
                if &g.model != m {
                    continue;
                }
                if g.fixed_mig {
                    free_fixed += g
                        .nodes
                        .iter()
                        .map(|n| {
                            c.nodes[*n]
                                .usable_gpus()
                                .filter(|x| !p.fixed_layouts.contains_key(&(*n, x.index)))
                                .count()
                        })
                        .sum::<usize>() as f64;
                } else if let Some(n) = self.n.get(&(gi, PoolMode::Mig)) {
                    mig_gpus += (g.gpus as f64) * n.0;
                }
            }
            // Bounded by the model's GPUs: huge bounds slow HiGHS's reduced-cost fixing.
            let model_gpus: f64 = p
                .groups
                .iter()
                .filter(|g| &g.model == m && !g.fixed_mig)
                .map(|g| (g.nodes.len() as u32 * g.gpus) as f64)
                .sum();
            let mut supply: BTreeMap<&str, Expression> = BTreeMap::new();
            for (li, l) in layouts.iter().enumerate() {
                let v = self.add(0.0, model_gpus);
                gpus += v.0;
                for q in l {
                    *supply
                        .entry(q.name)
                        .or_insert_with(|| Expression::from(0.0)) += v.0;
                }
                self.z.insert((m.clone(), li), v);
            }
            for ((n, gpu), ls) in &p.fixed_layouts {
                if c.nodes[*n]
                    .gpus
                    .iter()
                    .any(|x| x.index == *gpu && x.model.as_deref() == Some(m.as_str()) && !x.down)
                {
                    for q in ls {
                        *supply
                            .entry(q.name)
                            .or_insert_with(|| Expression::from(0.0)) += 1.0;
                    }
                }
            }
            self.keep_current(p, m, &mut gpus, &mut supply);
            self.constraints.push(gpus.leq(mig_gpus + free_fixed));
            let mut demand: BTreeMap<&str, Expression> = BTreeMap::new();
            for (&w, per) in &p.mig {
                if let Some(q) = per.get(m) {
                    let v = self.add(0.0, c.workloads[w].replicas as f64);
                    *demand
                        .entry(q.name)
                        .or_insert_with(|| Expression::from(0.0)) += v.0;
                    self.r.insert((w, m.clone()), v);
                }
            }
            for (q, d) in demand {
                let s = supply.remove(q).unwrap_or_else(|| Expression::from(0.0));
                self.constraints.push(d.leq(s));
            }
            self.layouts.insert(m.clone(), layouts);
        }
        for &w in p.mig.keys() {
            self.admit_sum(c, w);
        }
    }

    /// Current layouts the plan may keep: per group and layout, at most that layout's
    /// GPUs on the group's MIG nodes. A kept GPU supplies its instances and takes a MIG
    /// GPU like a chosen layout does.
    fn keep_current(
        &mut self,
        p: &Problem,
        m: &str,
        gpus: &mut Expression,
        supply: &mut BTreeMap<&'static str, Expression>,
    ) {
        for (gi, g) in p.groups.iter().enumerate() {
            if g.model != m || g.current.is_empty() {
                continue;
            }
            let Some(n) = self.n.get(&(gi, PoolMode::Mig)).map(|n| n.0) else {
                continue;
            };
            for (ci, (layout, per_node)) in g.current.iter().enumerate() {
                let per = *per_node as f64;
                let v = self.add(0.0, per * g.nodes.len() as f64);
                self.constraints.push(Expression::from(v.0).leq(per * n));
                *gpus += v.0;
                for q in layout {
                    *supply
                        .entry(q.name)
                        .or_insert_with(|| Expression::from(0.0)) += v.0;
                }
                self.k.insert((gi, ci), v);
            }
        }
    }

    fn admit_sum(&mut self, c: &Cluster, w: usize) {
        let a = self.add(0.0, c.workloads[w].replicas as f64);
        let mut sum = Expression::from(0.0);
        for ((rw, _), v) in &self.r {
            if *rw == w {
                sum += v.0;
            }
        }
        self.constraints.push(sum.eq(a.0));
        self.a.insert(w, a);
    }

    fn shared(&mut self, c: &Cluster, p: &Problem) {
        let mut capacity: BTreeMap<(String, PoolMode), Expression> = BTreeMap::new();
        for (&w, (mps, per_gpu, models)) in &p.shared {
            let mode = PoolMode::shared(*mps);
            for m in models {
                let reps = c.workloads[w].replicas as f64;
                let r = self.add(0.0, reps);
                let t = self.add(0.0, reps);
                self.constraints.push(((*per_gpu as f64) * t.0).geq(r.0));
                *capacity
                    .entry((m.clone(), mode))
                    .or_insert_with(|| Expression::from(0.0)) += t.0;
                self.r.insert((w, m.clone()), r);
                self.t.insert((w, m.clone()), t);
            }
        }
        for ((m, mode), used) in capacity {
            let mut gpus = Expression::from(0.0);
            for (gi, g) in p.groups.iter().enumerate() {
                if g.model == m {
                    if let Some(n) = self.n.get(&(gi, mode)) {
                        gpus += (g.gpus as f64) * n.0;
                    }
                }
            }
            self.constraints.push(used.leq(gpus));
        }
        for &w in p.shared.keys() {
            self.admit_sum(c, w);
        }
    }

    /// GPU-equivalents admitted for workload `w` (on one model, or all), as linear terms.
    pub fn usage(
        &self,
        c: &Cluster,
        p: &Problem,
        w: usize,
        only_model: Option<&str>,
    ) -> Vec<(f64, Col)> {
        let wl = &c.workloads[w];
        if let Some(a) = self.a.get(&w) {
            if p.shapes.iter().any(|s| s.workloads.contains(&w)) {
                let ok = only_model.is_none_or(|m| wl.accepts(m));
                return if ok {
                    vec![(wl.gang_gpus.max(wl.gpus_per_replica).max(1) as f64, *a)]
                } else {
                    Vec::new()
                };
            }
        }
        if p.packed.contains_key(&w) {
            let coef = wl.packed_gpu_milli() as f64 / 1000.0;
            if coef == 0.0 {
                return Vec::new();
            }
            return self
                .pk
                .iter()
                .filter(|((pw, gi), _)| {
                    *pw == w && only_model.is_none_or(|om| p.groups[*gi].model == om)
                })
                .map(|(_, v)| (coef, *v))
                .collect();
        }
        self.r
            .iter()
            .filter(|((rw, m), _)| *rw == w && only_model.is_none_or(|om| om == m))
            .map(|((_, m), r)| (p.equiv.get(&(w, m.clone())).copied().unwrap_or(1.0), *r))
            .collect()
    }

    fn quotas(&mut self, c: &Cluster, p: &Problem) {
        let subtree = |t: &str| -> BTreeSet<String> {
            let mut s = BTreeSet::from([t.to_string()]);
            loop {
                let before = s.len();
                for team in c.teams.values() {
                    if team.parent.as_ref().is_some_and(|x| s.contains(x)) {
                        s.insert(team.name.clone());
                    }
                }
                if s.len() == before {
                    return s;
                }
            }
        };
        let admitted: Vec<usize> = self.a.keys().copied().collect();
        for team in c.teams.values() {
            let members = subtree(&team.name);
            let ws: Vec<usize> = admitted
                .iter()
                .copied()
                .filter(|w| members.contains(&c.workloads[*w].team))
                .collect();
            let total = expr(ws.iter().flat_map(|&w| self.usage(c, p, w, None)));
            self.constraints
                .push(total.clone().leq(team.ceiling() as f64));
            if team.guarantee > 0 {
                let u = self.add(0.0, team.guarantee as f64);
                self.constraints.push(Expression::from(u.0).leq(total));
                self.u.insert(team.name.clone(), u);
            }
            for q in &team.quotas {
                let (Some(m), Some(b)) = (&q.model, q.burst) else {
                    continue;
                };
                let e = expr(ws.iter().flat_map(|&w| self.usage(c, p, w, Some(m))));
                self.constraints.push(e.leq(b as f64));
            }
        }
    }
}

/// A linear expression from terms.
pub fn expr(terms: impl IntoIterator<Item = (f64, Col)>) -> Expression {
    let mut e = Expression::from(0.0);
    for (coef, (v, _)) in terms {
        e += coef * v;
    }
    e
}

/// The value of terms at a solution (column values).
pub fn value(terms: &[(f64, Col)], values: &[f64]) -> f64 {
    terms
        .iter()
        .map(|(coef, (_, col))| coef * values.get(*col).copied().unwrap_or(0.0))
        .sum()
}
