//! Admission in GPU-equivalents ([`Master::usage`]), team ceilings (with parents),
//! per-model quotas and guaranteed usage `u(team)`.

use super::super::lp::ColId;
use super::{INF, Master};
use std::collections::BTreeSet;

impl Master<'_> {
    /// GPU-equivalents admitted for workload `w` (on one model, or all) as terms.
    pub(crate) fn usage(&self, w: usize, only_model: Option<&str>) -> Vec<(f64, ColId)> {
        let (c, p) = (self.c, self.p);
        let wl = &c.workloads[w];
        if p.shapes.iter().any(|s| s.workloads.contains(&w)) {
            let ok = only_model.is_none_or(|m| wl.accepts(m));
            return match (ok, self.a.get(&w)) {
                (true, Some(a)) => vec![(wl.gang_gpus.max(wl.gpus_per_replica).max(1) as f64, *a)],
                _ => Vec::new(),
            };
        }
        if p.packed.contains_key(&w) {
            let coef = wl.packed_gpu_milli() as f64 / 1000.0;
            if coef == 0.0 {
                return Vec::new();
            }
            return match only_model {
                None => self.a.get(&w).map(|a| vec![(coef, *a)]).unwrap_or_default(),
                Some(om) => self
                    .pk
                    .iter()
                    .filter(|((pw, m), _)| *pw == w && m == om)
                    .map(|(_, v)| (coef, *v))
                    .collect(),
            };
        }
        self.r
            .iter()
            .filter(|((rw, m), _)| *rw == w && only_model.is_none_or(|om| om == m))
            .map(|((_, m), r)| (p.equiv.get(&(w, m.clone())).copied().unwrap_or(1.0), *r))
            .collect()
    }

    pub(super) fn quotas(&mut self) {
        let c = self.c;
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
            let total: Vec<(f64, ColId)> = ws.iter().flat_map(|&w| self.usage(w, None)).collect();
            let row = self.lp.row(-INF, team.ceiling() as f64);
            for (coef, v) in &total {
                self.lp.set(row, *v, *coef);
            }
            if team.guarantee > 0 {
                let u = self.lp.col(0.0, 0.0, team.guarantee as f64, false);
                let row = self.lp.row(-INF, 0.0);
                self.lp.set(row, u, 1.0);
                for (coef, v) in &total {
                    self.lp.set(row, *v, -coef);
                }
                self.u.insert(team.name.clone(), u);
            }
            // A scheduler's part of the quota: its ceiling over the classes that run
            // under that scheduler (in the planner's view every class is pinned).
            for q in team
                .quotas
                .iter()
                .filter(|q| q.model.is_none() && q.pool.is_none())
            {
                let Some(a) = q.scheduler else { continue };
                let row = self.lp.row(-INF, q.ceiling() as f64);
                for &w in ws.iter().filter(|&&w| c.workloads[w].scheduler == Some(a)) {
                    for (coef, v) in self.usage(w, None) {
                        self.lp.set(row, v, coef);
                    }
                }
            }
            for q in &team.quotas {
                let (Some(_), Some(b)) = (&q.model, q.burst) else {
                    continue;
                };
                // The models the quota counts: one, or (in the planner's view, where a
                // model is split per scheduler and driver) every variant of it.
                let keys: Vec<&String> = c
                    .models
                    .keys()
                    .filter(|k| q.covers(k, q.pool.as_deref()))
                    .collect();
                let row = self.lp.row(-INF, b as f64);
                // Gangs count their GPUs on nodes of the model (item columns, below);
                // the other classes their replicas on the model.
                let gangs: BTreeSet<usize> = self
                    .p
                    .shapes
                    .iter()
                    .flat_map(|s| s.workloads.iter().copied())
                    .collect();
                let terms: Vec<(f64, ColId)> = ws
                    .iter()
                    .filter(|w| !gangs.contains(w))
                    .flat_map(|&w| {
                        keys.iter()
                            .flat_map(|k| self.usage(w, Some(k)))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                for (coef, v) in terms {
                    self.lp.set(row, v, coef);
                }
                for (si, s) in self.p.shapes.iter().enumerate() {
                    if s.quota_teams.contains(&team.name) {
                        for k in &keys {
                            self.gang_quota_rows
                                .entry((si, (*k).clone()))
                                .or_default()
                                .push(row);
                        }
                    }
                }
            }
        }
    }
}
