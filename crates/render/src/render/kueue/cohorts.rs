//! The team tree as Kueue's hierarchical cohorts (`kueue.x-k8s.io/v1beta2` Cohort,
//! `spec.parentName`): a Cohort per parent team under its own parent's (the top ones
//! under the cluster's root cohort), every ClusterQueue in its team's parent's cohort.
//!
//! Whole-GPU quota follows the tree (docs/render.md, "Kueue cohorts"): a leaf team's
//! ClusterQueue holds its guarantee (`nominalQuota`) and borrows up to its ceiling
//! (`borrowingLimit` = ceiling - guarantee); a parent team's Cohort holds what its
//! guarantee keeps beyond its children's (a pool its subtree shares) and lets the
//! subtree borrow up to the parent's ceiling (`borrowingLimit` = ceiling - guarantee),
//! so a department's projects together never exceed the department's burst; a parent
//! team's own ClusterQueue holds nothing and borrows from its cohort up to its ceiling.
//! The root cohort holds the GPUs no team's guarantee covers. `fairSharing.weight` is
//! the team's declared weight, on its ClusterQueue (leaf) or Cohort (parent).
//!
//! Without a parent team in the tree, teams are one flat cohort, as before.

use super::super::facts::{Facts, GPU_RESOURCE, TeamFacts};
use super::quotas::{FlavorQuota, Quotas, Res};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Which teams are cohorts and which cohort each team's queue joins.
pub(super) struct Tree {
    /// The root cohort (the cluster's name, as the flat cohort always was).
    pub root: String,
    /// Teams with a child team in this render.
    parents: BTreeSet<String>,
    /// Team -> its parent (in this render).
    parent_of: BTreeMap<String, String>,
}

/// One Cohort object.
#[derive(Serialize)]
pub(super) struct CohortCtx {
    name: String,
    parent: Option<String>,
    weight: Option<u32>,
    /// Its own whole-GPU quota per flavor (with the subtree's borrowing limit).
    flavors: Vec<FlavorQuota>,
}

impl Tree {
    pub(crate) fn new(f: &Facts, root: &str) -> Tree {
        let names: BTreeSet<&str> = f.teams.iter().map(|t| t.name.as_str()).collect();
        let parent_of: BTreeMap<String, String> = f
            .teams
            .iter()
            .filter_map(|t| {
                let p = t.parent.as_ref()?;
                names
                    .contains(p.as_str())
                    .then(|| (t.name.clone(), p.clone()))
            })
            .collect();
        let parents: BTreeSet<String> = parent_of.values().cloned().collect();
        // A parent team named like the cluster would be a second cohort of that name.
        let root = if parents.contains(root) {
            format!("{root}-root")
        } else {
            root.to_string()
        };
        Tree {
            root,
            parents,
            parent_of,
        }
    }

    /// Whether the teams form a tree (some team has a child here).
    pub(crate) fn nested(&self) -> bool {
        !self.parents.is_empty()
    }

    pub(crate) fn is_parent(&self, team: &str) -> bool {
        self.parents.contains(team)
    }

    /// What the quotas need of the tree: the parent teams, and each team's cohort.
    pub(crate) fn for_quotas(&self, f: &Facts) -> (BTreeSet<String>, BTreeMap<String, String>) {
        let cohorts = f.teams.iter().map(|t| (t.name.clone(), self.cohort_of(t)));
        (self.parents.clone(), cohorts.collect())
    }

    /// Per flavor, what every parent team's cohort holds itself.
    pub(crate) fn held(&self, q: &Quotas) -> BTreeMap<String, u32> {
        let mut out: BTreeMap<String, u32> = BTreeMap::new();
        for t in &q.f.teams {
            for (fl, n) in self.own_of(q, t) {
                *out.entry(fl).or_insert(0) += n;
            }
        }
        out
    }

    /// The cohort a team's ClusterQueue joins: its own when it is a parent (its own
    /// classes borrow from its subtree's pool), else its parent's, else the root.
    pub(crate) fn cohort_of(&self, t: &TeamFacts) -> String {
        if self.is_parent(&t.name) {
            return t.name.clone();
        }
        self.parent_of
            .get(&t.name)
            .cloned()
            .unwrap_or_else(|| self.root.clone())
    }

    /// The teams below `team` (children, grandchildren, ...), cycles stopping.
    fn below<'f>(&self, f: &'f Facts, team: &str) -> Vec<&'f TeamFacts> {
        let mut out: Vec<&TeamFacts> = Vec::new();
        let mut frontier = vec![team.to_string()];
        while let Some(p) = frontier.pop() {
            for t in &f.teams {
                let child = self.parent_of.get(&t.name) == Some(&p);
                if child && t.name != team && !out.iter().any(|o| o.name == t.name) {
                    out.push(t);
                    frontier.push(t.name.clone());
                }
            }
        }
        out
    }

    /// A parent team's own whole-GPU quota per flavor: its guarantee less its
    /// children's, first on the flavors where its subtree is planned above the quota
    /// below it, the rest where the subtree is planned most (else the first flavor).
    /// Empty for a team that is no parent.
    pub(crate) fn own_of(&self, q: &Quotas, t: &TeamFacts) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        if !self.is_parent(&t.name) || q.whole.is_empty() {
            return out;
        }
        let f = q.f;
        let kids: u32 = f
            .teams
            .iter()
            .filter(|u| self.parent_of.get(&u.name) == Some(&t.name))
            .map(|u| u.guarantee)
            .sum();
        let mut rest = t.guarantee.saturating_sub(kids);
        let below = self.below(f, &t.name);
        let mut used: BTreeMap<String, i64> = BTreeMap::new();
        for u in below.iter().copied().chain([t]) {
            for (fl, n) in q.whole_of(u) {
                *used.entry(fl).or_insert(0) += n as i64;
            }
        }
        for u in &below {
            for (fl, n) in q.nominal_of(u).into_iter().chain(self.own_of(q, u)) {
                *used.entry(fl).or_insert(0) -= n as i64;
            }
        }
        let mut excess: Vec<(String, i64)> = used.into_iter().filter(|(_, e)| *e > 0).collect();
        excess.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (fl, e) in excess {
            let give = (e as u32).min(rest);
            *out.entry(fl).or_insert(0) += give;
            rest -= give;
        }
        if rest > 0 {
            let home = q.whole[0].name.clone();
            *out.entry(home).or_insert(0) += rest;
        }
        out
    }

    /// The Cohort objects: the root (the pool no guarantee covers), then one per
    /// parent team, sorted by name.
    pub(crate) fn cohorts(&self, q: &Quotas, pool: Vec<FlavorQuota>) -> Vec<CohortCtx> {
        let mut out = vec![CohortCtx {
            name: self.root.clone(),
            parent: None,
            weight: None,
            flavors: pool,
        }];
        for t in q.f.teams.iter().filter(|t| self.is_parent(&t.name)) {
            let own = self.own_of(q, t);
            let flavors = q
                .whole
                .iter()
                .map(|fl| FlavorQuota {
                    name: fl.name.clone(),
                    resources: vec![Res {
                        name: GPU_RESOURCE.to_string(),
                        nominal: own.get(&fl.name).copied().unwrap_or(0).to_string(),
                        borrowing: Some(t.ceiling - t.guarantee),
                    }],
                })
                .collect();
            out.push(CohortCtx {
                name: t.name.clone(),
                parent: Some(
                    self.parent_of
                        .get(&t.name)
                        .cloned()
                        .unwrap_or_else(|| self.root.clone()),
                ),
                weight: t.weight,
                flavors,
            });
        }
        out
    }
}
