//! Kueue's cohort tree as Kueue reads it (reference kueue.md §4; the Kueue docs'
//! "Hierarchical Cohorts"): a Cohort names its parent (`spec.parentName`), a
//! ClusterQueue its cohort (`spec.cohortName`); a cohort's subtree quota is its own
//! `nominalQuota` plus its ClusterQueues' and child cohorts' subtree quotas, and the
//! subtree may use more only by borrowing, at most its `borrowingLimit` (a cohort at
//! the top of a tree lends and borrows nothing beyond its subtree). So, all running at
//! once, per flavor and resource: every cohort's subtree usage <= its subtree quota +
//! its borrowingLimit (no limit: whatever the tree above has), and a top cohort's
//! usage <= its subtree quota. References: every cohort a ClusterQueue or Cohort names
//! is a Cohort object of kueue/, and no cohort is its own ancestor.

use super::kueue::{Group, Kueue};
use super::quantity;
use super::{Invariant, Sink, Target};
use std::collections::{BTreeMap, BTreeSet};

/// (ClusterQueue, flavor) -> resource -> (usage, classes).
pub(crate) type Usage = BTreeMap<(String, String), BTreeMap<String, (i128, BTreeSet<String>)>>;

/// `resource` of `flavor` in some resource groups: (nominal, borrowing limit).
fn quota_in(groups: &[Group], flavor: &str, r: &str) -> Option<(i128, Option<i128>)> {
    groups
        .iter()
        .flat_map(|g| &g.flavors)
        .find(|f| f.name == flavor)
        .and_then(|f| f.resources.get(r).copied())
}

/// A cohort and its ancestors, and whether the chain loops back.
fn ancestors<'k>(kueue: &'k Kueue, cohort: &'k str) -> (Vec<&'k str>, bool) {
    let mut chain: Vec<&str> = vec![cohort];
    let mut next = kueue.cohorts.get(cohort).and_then(|c| c.parent.as_deref());
    while let Some(p) = next {
        if chain.contains(&p) {
            return (chain, true);
        }
        chain.push(p);
        next = kueue.cohorts.get(p).and_then(|c| c.parent.as_deref());
    }
    (chain, false)
}

/// Cohort references and cycles.
pub(crate) fn references(kueue: &Kueue, sink: &mut Sink) {
    let mut fail =
        |at: (&str, &str), m: String| sink.push(Target::Kueue, Invariant::Reference, at, m);
    for q in kueue.queues.values() {
        if let Some(c) = q
            .cohort
            .as_ref()
            .filter(|c| !kueue.cohorts.contains_key(*c))
        {
            fail(
                (&q.id, &q.file),
                format!("cohortName `{c}` is not a Cohort of kueue/"),
            );
        }
    }
    for (name, c) in &kueue.cohorts {
        let at = (c.id.as_str(), c.file.as_str());
        if let Some(p) = c
            .parent
            .as_ref()
            .filter(|p| !kueue.cohorts.contains_key(*p))
        {
            fail(at, format!("parentName `{p}` is not a Cohort of kueue/"));
        }
        let (chain, cycle) = ancestors(kueue, name);
        if cycle {
            fail(
                at,
                format!(
                    "cohort `{name}` is its own ancestor ({} -> ...): Kueue refuses the tree",
                    chain.join(" -> ")
                ),
            );
        }
    }
}

/// Every cohort's subtree within its quota and borrowing limit, per flavor and
/// resource the ClusterQueues use.
pub(crate) fn check(kueue: &Kueue, usage: &Usage, sink: &mut Sink) {
    // (cohort, flavor, resource) -> (subtree usage, classes).
    let mut used: BTreeMap<(&str, &str, &str), (i128, BTreeSet<String>)> = BTreeMap::new();
    for ((cq, flavor), sums) in usage {
        let Some(cohort) = kueue.queues.get(cq).and_then(|q| q.cohort.as_deref()) else {
            continue;
        };
        let (chain, cycle) = ancestors(kueue, cohort);
        if cycle {
            continue;
        }
        for (r, (sum, classes)) in sums {
            for c in &chain {
                let e = used.entry((c, flavor, r)).or_default();
                e.0 += sum;
                e.1.extend(classes.iter().cloned());
            }
        }
    }
    for ((cohort, flavor, r), (sum, classes)) in used {
        let quota = subtree_quota(kueue, cohort, flavor, r);
        let me = kueue.cohorts.get(cohort);
        let has_parent = me.is_some_and(|c| c.parent.is_some());
        let borrow = me
            .and_then(|c| quota_in(&c.groups, flavor, r))
            .and_then(|q| q.1);
        let limit = match (has_parent, borrow) {
            (false, _) => Some(quota),
            (true, Some(b)) => Some(quota + b),
            (true, None) => None,
        };
        let Some(limit) = limit.filter(|l| sum > *l) else {
            continue;
        };
        let how = if has_parent {
            "its subtree's nominal quotas plus its borrowingLimit allow"
        } else {
            "its subtree's nominal quotas (its ClusterQueues', its child cohorts' and its own) add up to"
        };
        let msg = format!(
            "cohort {cohort}, flavor {flavor}: the planned pods ask {} {r} (classes {}); {how} {}",
            quantity::show(sum, r),
            classes.iter().cloned().collect::<Vec<_>>().join(", "),
            quantity::show(limit, r)
        );
        let at = format!("cohort/{cohort}");
        let file = me
            .map(|c| c.file.as_str())
            .unwrap_or("kueue/clusterqueues.yaml");
        sink.push(Target::Kueue, Invariant::Quota, (&at, file), msg);
    }
}

/// A cohort's own nominal quota plus its ClusterQueues' and its child cohorts'
/// subtree quotas (a cohort on a cycle counts once).
fn subtree_quota(kueue: &Kueue, cohort: &str, flavor: &str, r: &str) -> i128 {
    let mut seen = BTreeSet::new();
    subtree(kueue, cohort, flavor, r, &mut seen)
}

fn subtree(
    kueue: &Kueue,
    cohort: &str,
    flavor: &str,
    r: &str,
    seen: &mut BTreeSet<String>,
) -> i128 {
    if !seen.insert(cohort.to_string()) {
        return 0;
    }
    let own = kueue
        .cohorts
        .get(cohort)
        .and_then(|c| quota_in(&c.groups, flavor, r))
        .map_or(0, |q| q.0);
    let queues: i128 = kueue
        .queues
        .values()
        .filter(|q| q.cohort.as_deref() == Some(cohort))
        .filter_map(|q| quota_in(&q.groups, flavor, r))
        .map(|q| q.0)
        .sum();
    let children: Vec<&String> = kueue
        .cohorts
        .iter()
        .filter(|(_, c)| c.parent.as_deref() == Some(cohort))
        .map(|(n, _)| n)
        .collect();
    let below: i128 = children
        .into_iter()
        .map(|c| subtree(kueue, c, flavor, r, seen))
        .sum();
    own + queues + below
}
