//! Kueue cohort trees (issue 34) on a Kueue cluster whose teams form a three-level tree
//! (tests/fixtures/kueue-cohorts): one Cohort per parent team under its parent's (the
//! top ones under the cluster's root cohort), each ClusterQueue in its team's cohort,
//! fair-sharing weights and borrowing limits as declared, quotas that add up to the
//! teams' guarantees and the cluster's GPUs; and the realizability checker's
//! cross-object checks (names resolve, no cycle, every subtree within its quota and
//! borrowing limit) catching broken trees.

use crate::common;

use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::render::{self, Files, Target};
use gpuplan::solve::SolverKind;
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};

const FIXTURE: &str = "tests/fixtures/kueue-cohorts";

fn rendered() -> (Cluster, Placement, Files) {
    let c = common::load_dir(FIXTURE);
    let p = common::plan(&c, SolverKind::Ilp);
    let targets = [Target::K8s, Target::Kueue];
    let files = render::render(&c, &p, &targets, &render::Options::default())
        .expect("renders")
        .files;
    (c, p, files)
}

fn docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn by_name(text: &str) -> BTreeMap<String, Value> {
    docs(text)
        .into_iter()
        .map(|d| (d["metadata"]["name"].as_str().unwrap().to_string(), d))
        .collect()
}

fn num(v: &Value) -> i64 {
    v.as_str()
        .map(|s| s.parse().unwrap())
        .or_else(|| v.as_i64())
        .unwrap_or_else(|| panic!("not a quantity: {v:?}"))
}

/// Whole-GPU (nominal, borrowingLimit) per flavor of a ClusterQueue or Cohort spec.
fn gpu_quota(spec: &Value) -> BTreeMap<String, (i64, Option<i64>)> {
    let mut out = BTreeMap::new();
    for g in spec["resourceGroups"].as_sequence().into_iter().flatten() {
        for f in g["flavors"].as_sequence().unwrap() {
            for r in f["resources"].as_sequence().unwrap() {
                if r["name"].as_str() == Some("nvidia.com/gpu") {
                    let b = r.get("borrowingLimit").map(num);
                    out.insert(
                        f["name"].as_str().unwrap().to_string(),
                        (num(&r["nominalQuota"]), b),
                    );
                }
            }
        }
    }
    out
}

#[test]
fn one_cohort_per_parent_team_with_weights_limits_and_quotas_that_add_up() {
    let (c, p, files) = rendered();
    let cohorts = by_name(&files["kueue/cohorts.yaml"]);
    let queues = by_name(&files["kueue/clusterqueues.yaml"]);
    let root = "research";
    let parents: BTreeSet<&str> = c
        .teams
        .values()
        .filter_map(|t| t.parent.as_deref())
        .collect();
    assert_eq!(parents, BTreeSet::from(["ml", "org"]));
    let names: BTreeSet<&str> = cohorts.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        BTreeSet::from([root, "ml", "org"]),
        "one Cohort per parent, and the root"
    );
    // Every cohort named exists, and walking up from any reaches the root.
    for (name, co) in &cohorts {
        let mut seen = BTreeSet::from([name.clone()]);
        let mut at = co;
        while let Some(parent) = at["spec"]["parentName"].as_str() {
            assert!(seen.insert(parent.to_string()), "cycle through {parent}");
            at = &cohorts[parent];
        }
        assert_eq!(at["metadata"]["name"].as_str(), Some(root));
    }
    each_team_in_its_place(&c, &cohorts, &queues, &parents, root);
    quotas_add_up(&c, &cohorts, &queues, &parents, root);
    // And the tree admits the plan, all running at once.
    let r = gpuplan::realize::check(&files, &c, &p);
    assert!(r.realizable, "{:#?}", r.violations);
    let _s = common::snapshot_settings().bind_to_scope();
    let text = format!(
        "=== kueue/cohorts.yaml\n{}=== kueue/clusterqueues.yaml\n{}",
        files["kueue/cohorts.yaml"], files["kueue/clusterqueues.yaml"]
    );
    insta::assert_snapshot!("kueue-cohorts", text);
}

type ByName = BTreeMap<String, Value>;

/// Each team's queue in its cohort; a parent's Cohort under its parent's with the
/// team's weight and borrowing; a leaf's nominal quota its guarantee.
fn each_team_in_its_place(
    c: &Cluster,
    cohorts: &ByName,
    queues: &ByName,
    parents: &BTreeSet<&str>,
    root: &str,
) {
    for (team, t) in &c.teams {
        let q = &queues[team];
        let cohort = q["spec"]["cohortName"].as_str().unwrap();
        assert!(
            cohorts.contains_key(cohort),
            "{team}: cohort {cohort} exists"
        );
        let want_weight = t.weight.map(|w| w as i64);
        let slack = (t.ceiling() - t.guarantee) as i64;
        if parents.contains(team.as_str()) {
            // A parent: its Cohort under its parent's, its own queue inside it.
            assert_eq!(cohort, team);
            let co = &cohorts[team];
            let up = t.parent.as_deref().unwrap_or(root);
            assert_eq!(co["spec"]["parentName"].as_str(), Some(up));
            assert_eq!(
                co["spec"].get("fairSharing").map(|f| num(&f["weight"])),
                want_weight
            );
            for (fl, (_, b)) in gpu_quota(&co["spec"]) {
                assert_eq!(
                    b,
                    Some(slack),
                    "{team}/{fl}: subtree borrows up to the ceiling"
                );
            }
        } else {
            assert_eq!(cohort, t.parent.as_deref().unwrap_or(root), "{team}");
            assert_eq!(
                q["spec"].get("fairSharing").map(|f| num(&f["weight"])),
                want_weight
            );
            let quota = gpu_quota(&q["spec"]);
            let nominal: i64 = quota.values().map(|q| q.0).sum();
            assert_eq!(nominal, t.guarantee as i64, "{team}: nominal = guarantee");
            for (fl, (_, b)) in quota {
                assert_eq!(
                    b,
                    Some(slack),
                    "{team}/{fl}: borrowingLimit = burst - guarantee"
                );
            }
        }
    }
}

/// Quotas add up: each parent's subtree holds its guarantee; the root holds the rest of
/// the cluster's GPUs.
fn quotas_add_up(
    c: &Cluster,
    cohorts: &ByName,
    queues: &ByName,
    parents: &BTreeSet<&str>,
    root: &str,
) {
    let subtree = |team: &str| -> i64 {
        let mut sum = 0;
        let mut stack = vec![team.to_string()];
        while let Some(x) = stack.pop() {
            if let Some(co) = cohorts.get(&x).filter(|_| x != root) {
                sum += gpu_quota(&co["spec"]).values().map(|q| q.0).sum::<i64>();
            }
            sum += gpu_quota(&queues[&x]["spec"])
                .values()
                .map(|q| q.0)
                .sum::<i64>();
            stack.extend(
                c.teams
                    .values()
                    .filter(|t| t.parent.as_deref() == Some(x.as_str()))
                    .map(|t| t.name.clone()),
            );
        }
        sum
    };
    for p in parents {
        assert_eq!(subtree(p), c.teams[*p].guarantee as i64, "{p}'s subtree");
    }
    let tops: i64 = c
        .teams
        .values()
        .filter(|t| t.parent.is_none())
        .map(|t| subtree(&t.name))
        .sum();
    let own: i64 = gpu_quota(&cohorts[root]["spec"])
        .values()
        .map(|q| q.0)
        .sum();
    let gpus: usize = c.nodes.iter().map(|n| n.gpus.len()).sum();
    assert_eq!(tops + own, gpus as i64, "every GPU is held exactly once");
}

/// The realizability checker refuses a broken tree: a cycle, a cohort that does not
/// exist, and a department whose borrowing limit no longer admits the plan.
#[test]
fn check_render_catches_cycles_missing_cohorts_and_tight_borrowing() {
    let (c, p, files) = rendered();
    let violates = |edit: &dyn Fn(&mut Files), what: &str| {
        let mut f = files.clone();
        edit(&mut f);
        let r = gpuplan::realize::check(&f, &c, &p);
        assert!(
            r.violations.iter().any(|v| v.message.contains(what)),
            "no violation with `{what}`: {:#?}",
            r.violations
        );
    };
    let replace = |path: &'static str, from: &'static str, to: &'static str| {
        move |f: &mut Files| {
            let text = f.get_mut(path).unwrap();
            assert!(text.contains(from), "{path} has no `{from}`");
            *text = text.replacen(from, to, 1);
        }
    };
    violates(
        &replace(
            "kueue/cohorts.yaml",
            "parentName: research",
            "parentName: ml",
        ),
        "is its own ancestor",
    );
    violates(
        &replace(
            "kueue/cohorts.yaml",
            "parentName: org",
            "parentName: department",
        ),
        "parentName `department` is not a Cohort",
    );
    violates(
        &replace(
            "kueue/clusterqueues.yaml",
            "cohortName: ml",
            "cohortName: mll",
        ),
        "cohortName `mll` is not a Cohort",
    );
    // `ml` runs 4 GPUs of its own on the serving flavor, which it holds none of: its
    // cohort must borrow them.
    violates(
        &|f: &mut Files| {
            let text = f.get_mut("kueue/cohorts.yaml").unwrap();
            let (head, tail) = text.split_once("  name: ml\n").unwrap();
            *text = format!(
                "{head}  name: ml\n{}",
                tail.replace("borrowingLimit: \"24\"", "borrowingLimit: \"0\"")
            );
        },
        "cohort ml, flavor serve",
    );
}
