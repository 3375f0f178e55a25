//! The quota ledger (issue 32): GPU-equivalents charged to teams, checked against each
//! team's ceiling and its per-model, per-pool and per-scheduler quotas. One rule, used by
//! the greedy planner, the MIP's starting solution and `explain`; the placement checker
//! keeps its own, independent count (`placement::check::policy`), so that a mistake here
//! is caught there rather than repeated.
//!
//! A charge counts for the class's team and every ancestor (`Cluster::team_chain`); a
//! quota counts the charges it [covers](super::Quota::covers); the ceiling of a team or a
//! quota is its burst, never below its guarantee.

use super::{Cluster, Quota, Team};
use std::collections::BTreeMap;

/// Rounding slack: usage sums fractions of GPUs.
const EPS: f64 = 1e-9;

/// GPU-equivalents charged per team (its own classes' and its children's) and per
/// (team, quota index).
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    team: BTreeMap<String, f64>,
    quota: BTreeMap<(String, usize), f64>,
}

/// One charge: GPU-equivalents on a GPU model (the planner's view of it, see
/// [`Quota::covers`]) inside a declared pool, if any.
#[derive(Clone, Copy, Debug)]
pub struct Charge<'a> {
    pub model: &'a str,
    pub pool: Option<&'a str>,
    pub amount: f64,
}

/// Why a ledger refuses a charge: the first limit, innermost team first, that it would
/// pass (a team's ceiling before its quotas).
#[derive(Clone, Copy, Debug)]
pub enum Refusal<'c> {
    /// The team's ceiling; `used` is what the team holds already.
    Ceiling { team: &'c Team, used: f64 },
    /// The team's quota `quota`; `used` is what it counts already.
    Quota {
        team: &'c Team,
        quota: &'c Quota,
        used: f64,
    },
}

impl Ledger {
    /// GPU-equivalents team `team` holds (its classes and its children's).
    pub(crate) fn used(&self, team: &str) -> f64 {
        self.team.get(team).copied().unwrap_or(0.0)
    }

    /// GPU-equivalents the `index`th quota of `team` counts.
    pub(crate) fn quota_used(&self, team: &str, index: usize) -> f64 {
        self.quota
            .get(&(team.to_string(), index))
            .copied()
            .unwrap_or(0.0)
    }

    /// The first limit that `charges` for a class of team `team` would pass, if any.
    pub fn refusal<'c>(
        &self,
        c: &'c Cluster,
        team: &str,
        charges: &[Charge],
    ) -> Option<Refusal<'c>> {
        let total: f64 = charges.iter().map(|x| x.amount).sum();
        for t in c.team_chain(team) {
            let used = self.used(&t.name);
            if used + total > t.ceiling() as f64 + EPS {
                return Some(Refusal::Ceiling { team: t, used });
            }
            for (qi, q) in t.quotas.iter().enumerate() {
                let add = covered(q, charges);
                let used = self.quota_used(&t.name, qi);
                if add > 0.0 && used + add > q.ceiling() as f64 + EPS {
                    return Some(Refusal::Quota {
                        team: t,
                        quota: q,
                        used,
                    });
                }
            }
        }
        None
    }

    /// Whether every limit of the team and its ancestors holds with `charges` added.
    pub fn admits(&self, c: &Cluster, team: &str, charges: &[Charge]) -> bool {
        self.refusal(c, team, charges).is_none()
    }

    /// Counts `charges` for a class of team `team`.
    pub fn add(&mut self, c: &Cluster, team: &str, charges: &[Charge]) {
        self.count(c, team, charges, 1.0);
    }

    /// Takes back what [`Ledger::add`] counted for the same charges.
    pub fn remove(&mut self, c: &Cluster, team: &str, charges: &[Charge]) {
        self.count(c, team, charges, -1.0);
    }

    fn count(&mut self, c: &Cluster, team: &str, charges: &[Charge], sign: f64) {
        let total: f64 = charges.iter().map(|x| x.amount).sum();
        for t in c.team_chain(team) {
            *self.team.entry(t.name.clone()).or_default() += sign * total;
            for (qi, q) in t.quotas.iter().enumerate() {
                let add = covered(q, charges);
                if add > 0.0 {
                    *self.quota.entry((t.name.clone(), qi)).or_default() += sign * add;
                }
            }
        }
    }
}

/// The part of `charges` quota `q` counts.
fn covered(q: &Quota, charges: &[Charge]) -> f64 {
    charges
        .iter()
        .filter(|x| q.covers(x.model, x.pool))
        .map(|x| x.amount)
        .sum()
}
