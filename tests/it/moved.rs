//! `moved` renames (issue 35): a class, a node or a pool renamed in the KDL plans with
//! no disruption and an explicit rename in the plan, where without `moved` the same edit
//! disrupts running work; a rename with nothing to rename is a warning (GP967). The real
//! binary on the apply fixture (`tests/fixtures/apply/v1`), local state.

use crate::common::Scratch;
use serde_json::Value;

fn v1() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/apply/v1/cluster.kdl"),
    )
    .unwrap()
}

/// A folder where `v1` was applied (local state).
fn applied(tag: &str) -> Scratch {
    let s = Scratch::new(&format!("moved-{tag}"));
    s.write("cluster/cluster.kdl", v1());
    let r = s.run(&[
        "apply",
        "cluster",
        "--solver",
        "greedy",
        "--out-dir",
        "out",
        "--auto-approve",
    ]);
    assert_eq!(r.0, 0, "{}", r.2);
    s
}

/// `plan --format json` of the folder's configuration, and its stderr.
fn plan(s: &Scratch) -> (Value, String) {
    let r = s.run(&["plan", "cluster", "--format", "json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    (serde_json::from_str(&r.1).unwrap(), r.2)
}

fn disruption_is_empty(p: &Value) -> bool {
    let d = &p["disruption"];
    ["mig", "gangs_moved", "admission_lost", "nodes", "rollout"]
        .iter()
        .all(|k| d[k].as_array().is_some_and(Vec::is_empty))
        && d["mig_instances_destroyed"] == 0
}

fn instances(p: &Value, class: &str) -> Vec<Value> {
    let w = p["placement"]["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == class)
        .unwrap_or_else(|| panic!("no class {class}"));
    w["mig_instances"].as_array().unwrap().clone()
}

/// The example: `embed` renamed `embed-v2`. With `moved` the plan shows the
/// rename, disrupts nothing and keeps every MIG instance where it was; without it the
/// same edit loses `embed`'s admission (and its instances), which is what `moved` is for.
#[test]
fn a_renamed_class_plans_with_no_disruption_and_an_explicit_rename() {
    let s = applied("class");
    let (before, _) = plan(&s);
    let renamed = v1().replace("inference \"embed\"", "inference \"embed-v2\"");
    s.write("cluster/cluster.kdl", &renamed);
    let (without, _) = plan(&s);
    assert!(
        !without["disruption"]["admission_lost"]
            .as_array()
            .unwrap()
            .is_empty(),
        "without `moved` the rename is a removal: {}",
        without["disruption"]
    );
    s.write(
        "cluster/cluster.kdl",
        format!("{renamed}\nmoved from=\"embed\" to=\"embed-v2\"\n"),
    );
    let (with, stderr) = plan(&s);
    assert!(!stderr.contains("GP967"), "{stderr}");
    assert_eq!(
        with["moved"],
        serde_json::json!([{"kind": "class", "from": "embed", "to": "embed-v2"}])
    );
    assert!(disruption_is_empty(&with), "{}", with["disruption"]);
    assert_eq!(
        instances(&with, "embed-v2"),
        instances(&before, "embed"),
        "same MIG instances"
    );
    assert_eq!(with["placement"]["moves"]["replicas_moved"], 0);
    let human = s.run(&["plan", "cluster", "--solver", "greedy"]);
    assert!(
        human
            .1
            .contains("~ class `embed` renamed to `embed-v2` (moved"),
        "{}",
        human.1
    );
    assert!(
        human
            .1
            .contains("      k8s/workloads/embed.yaml -> k8s/workloads/embed-v2.yaml\n"),
        "{}",
        human.1
    );
    assert!(
        human
            .1
            .contains("disruption\n  none: no work of the applied state moves"),
        "{}",
        human.1
    );
    // Saved and applied (the saved plan is rebuilt and compared byte for byte, GP928),
    // the rename is done: the `moved` stays harmless (no rename, no warning).
    let r = s.run(&["plan", "cluster", "-o", "p.json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    let r = s.run(&["apply", "p.json", "--out-dir", "out"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(s.path("out/k8s/workloads/embed-v2.yaml").is_file());
    assert!(!s.path("out/k8s/workloads/embed.yaml").exists());
    let (after, stderr) = plan(&s);
    assert!(
        after.get("moved").is_none() && !stderr.contains("GP967"),
        "{stderr}"
    );
    assert_eq!(after["summary"]["add"], 0);
}

/// A pool and a node renamed together (`h100-2`, which runs `embed` on its MIG
/// instances, is `h100-4` now; pool `mig` is `serving`): nothing disrupted (the node keeps its pool mode, its GPUs their MIG
/// layouts), both renames shown; without `moved` the node's MIG layouts are new ones.
#[test]
fn renamed_pool_and_node_keep_their_pool_mode_and_mig_layouts() {
    let s = applied("node");
    let renamed = v1()
        .replace("nodes \"h100-[1-3]\"", "nodes \"h100-[1,3-4]\"")
        .replace("nodes=\"h100-[1-3]\"", "nodes=\"h100-[1,3-4]\"")
        .replace(
            "layout \"1g.10gb*7\" nodes=\"h100-2\"",
            "layout \"1g.10gb*7\" nodes=\"h100-4\"",
        )
        .replace(
            "pool \"mig\" mode=\"mig\" nodes=\"h100-[2-3]\"",
            "pool \"serving\" mode=\"mig\" nodes=\"h100-[3-4]\"",
        );
    s.write("cluster/cluster.kdl", &renamed);
    let (without, _) = plan(&s);
    assert!(
        !disruption_is_empty(&without),
        "without `moved`, h100-4 is a new node"
    );
    s.write(
        "cluster/cluster.kdl",
        format!(
            "{renamed}\nmoved from=\"h100-2\" to=\"h100-4\"\nmoved from=\"mig\" to=\"serving\"\n"
        ),
    );
    let (with, stderr) = plan(&s);
    assert!(!stderr.contains("GP967"), "{stderr}");
    let moved: Vec<String> = with["moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{} {}->{}", m["kind"], m["from"], m["to"]).replace('"', ""))
        .collect();
    assert_eq!(moved, ["node h100-2->h100-4", "pool mig->serving"]);
    assert!(disruption_is_empty(&with), "{}", with["disruption"]);
}

/// A `moved` whose source the state never had is a warning at its line (GP967); with
/// no state at all, too. It does not stop the plan.
#[test]
fn a_rename_with_nothing_to_rename_is_a_warning() {
    let s = Scratch::new("moved-unused");
    s.write(
        "cluster/cluster.kdl",
        format!("{}\nmoved from=\"embedding\" to=\"embed\"\n", v1()),
    );
    let r = s.run(&["plan", "cluster", "--solver", "greedy"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains("GP967") && r.2.contains("no applied placement yet"),
        "{}",
        r.2
    );
    let s = applied("unused2");
    let renamed = v1().replace("inference \"embed\"", "inference \"embed-v2\"");
    s.write(
        "cluster/cluster.kdl",
        format!("{renamed}\nmoved from=\"embedding\" to=\"embed-v2\"\n"),
    );
    let r = s.run(&["plan", "cluster", "--solver", "greedy"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains("GP967") && r.2.contains("cluster.kdl:"),
        "{}",
        r.2
    );
}
