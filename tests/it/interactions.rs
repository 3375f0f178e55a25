//! Where issues 33 (DRA, ComputeDomains), 34 (KAI Scheduler, Kueue cohort trees) and 35
//! (`moved`) meet, once merged:
//!
//! * a DRA pool under KAI Scheduler is refused (GP053), and a cluster-wide
//!   `gpu-allocation "dra"` leaves KAI's nodes on the device plugin while kube-scheduler's
//!   get claims, and the files carry the plan;
//! * a class renamed with `moved` keeps what it held where its objects are the new ones:
//!   a ComputeDomain per gang (gb200-nvl72-dra), KAI queues and PodGroups
//!   (kai-platform), a Kueue cohort tree (tests/fixtures/kueue-cohorts): no disruption,
//!   the rename in the plan, and the applied files pass check-render.

use crate::common;

use crate::common::Scratch;
use gpuplan::model::Allocation;
use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;
use serde_json::Value;

/// The validation diagnostics of one configuration file: (code, message, has span and
/// hint).
fn diagnostics(text: &str) -> Vec<(&'static str, String, bool)> {
    let sources = common::sources(&[("cluster.kdl".into(), text.to_string())]);
    gpuplan::validate::validate(&sources)
        .diagnostics
        .into_iter()
        .map(|d| (d.code, d.message, d.span.is_some() && d.help.is_some()))
        .collect()
}

fn kai_platform() -> String {
    ["cluster.kdl", "workloads.kdl"]
        .iter()
        .map(|f| std::fs::read_to_string(format!("examples/kai-platform/{f}")).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
        .replace("kubernetes version=\"1.33\"", "kubernetes version=\"1.34\"")
}

/// KAI shares GPUs itself and does not count shared ResourceClaims: a DRA pool under
/// KAI is GP053 at the declaration, and a cluster-wide DRA that reaches only KAI and
/// Slurm nodes too.
#[test]
fn a_dra_pool_under_kai_is_refused() {
    let text = kai_platform().replace(
        "pool \"serve\" mode=\"whole-gpu\" nodes=\"l40s-[01-02]\"",
        "pool \"serve\" mode=\"whole-gpu\" nodes=\"l40s-[01-02]\" gpu-allocation=\"dra\"",
    );
    let d = diagnostics(&text);
    let gp053: Vec<_> = d.iter().filter(|d| d.0 == "GP053").collect();
    assert_eq!(gp053.len(), 1, "{d:?}");
    assert!(gp053[0].2, "span and hint: {:?}", gp053[0]);
    assert!(
        gp053[0].1.contains("pool `serve`") && gp053[0].1.contains("KAI Scheduler owns"),
        "{}",
        gp053[0].1
    );
    // The example itself, and the same pool under Kubernetes 1.34, are valid.
    assert!(!diagnostics(&kai_platform()).iter().any(|d| d.0 == "GP053"));
    // Cluster-wide: every node is KAI's or Slurm's.
    let text = kai_platform().replace(
        "    kai version=\"0.13\"\n",
        "    kai version=\"0.13\"\n    gpu-allocation \"dra\"\n",
    );
    let d = diagnostics(&text);
    let gp053: Vec<_> = d.iter().filter(|d| d.0 == "GP053").collect();
    assert_eq!(gp053.len(), 1, "{d:?}");
    assert!(
        gp053[0].1.contains("cluster `kai-lab`")
            && gp053[0].1.contains("Slurm and KAI Scheduler own"),
        "{}",
        gp053[0].1
    );
}

/// Two pools under one cluster-wide `gpu-allocation "dra"`: Kueue's nodes hand out GPUs
/// through claims, KAI's stay on the device plugin (no `device-plugin=false` label, its
/// pods ask `nvidia.com/gpu`), and check-render finds the files carry the plan.
const KAI_AND_KUEUE: &str = r#"
cluster "both" {
    scheduler "kueue"
    kubernetes version="1.34"
    kueue version="0.18"
    kai version="0.13"
    gpu-allocation "dra"
}
node-class "hgx" {
    cpu sockets=2 cores-per-socket=56 threads-per-core=2
    memory "2TiB"
    gpus 8 model="h100-sxm5-80gb"
}
nodes "q-[01-02]" class="hgx"
nodes "k-[01-02]" class="hgx"
pool "queued" mode="whole-gpu" nodes="q-[01-02]"
pool "kai" mode="whole-gpu" nodes="k-[01-02]" scheduler="kai"
team "t" guarantee=8 burst=16
team "u" guarantee=8 burst=16
priority "high" value=100
inference "chat" team="t" priority="high" replicas=4 {
    isolation "whole-gpu"
    gpus 2
}
inference "rank" team="u" priority="high" replicas=4 scheduler="kai" {
    isolation "whole-gpu"
    gpus 2
}
"#;

#[test]
fn cluster_wide_dra_leaves_kai_nodes_on_the_device_plugin() {
    let c = common::load_text(KAI_AND_KUEUE);
    for (n, node) in c.nodes.iter().enumerate() {
        let want = if node.name.starts_with("q-") {
            Allocation::Dra
        } else {
            Allocation::DevicePlugin
        };
        assert_eq!(c.node_allocation(n), want, "{}", node.name);
    }
    let p = common::plan(&c, SolverKind::Ilp);
    let out = render::render(&c, &p, &Target::ALL, &render::Options::default()).expect("renders");
    let files = &out.files;
    let nodes = &files["k8s/nodes.yaml"];
    for doc in nodes.split("\n---").filter(|d| d.contains("kind: Node")) {
        let dra = doc.contains("nvidia.com/gpu.deploy.device-plugin: \"false\"");
        assert_eq!(dra, doc.contains("name: q-"), "{doc}");
    }
    let kai: Vec<&String> = files
        .iter()
        .filter(|(f, _)| f.starts_with("kai/workloads/"))
        .map(|(_, t)| t)
        .collect();
    assert!(!kai.is_empty(), "{:?}", files.keys().collect::<Vec<_>>());
    for t in &kai {
        assert!(
            t.contains("nvidia.com/gpu: \"2\"") && !t.contains("resourceClaims"),
            "{t}"
        );
    }
    let chat = &files["kueue/workloads/chat.yaml"];
    assert!(
        chat.contains("resourceClaims") && !chat.contains("nvidia.com/gpu:"),
        "{chat}"
    );
    let report = gpuplan::realize::check(files, &c, &p);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
}

/// `plan --format json` of the scratch folder's `cluster/`.
fn plan_json(s: &Scratch) -> (Value, String) {
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "--format", "json"]);
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

/// The placement of class `name` in a plan (its gangs, packed and shared replicas),
/// without the name.
fn held(p: &Value, name: &str) -> Value {
    let mut w = p["placement"]["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no class {name}"))
        .clone();
    w.as_object_mut().unwrap().remove("name");
    w
}

/// Applies `dir` (greedy, local state), renames class `from` (declared by `decl`, e.g.
/// `training "moe-pretrain"`) to `to` with `moved`, and checks: no disruption, the
/// rename in the plan, the class holds what it held, and the applied files (with the
/// new objects named `marker`) pass check-render.
fn renamed_without_disruption(dir: &str, decl: &str, from: &str, to: &str, marker: &str) {
    let s = Scratch::new(&format!("interactions-{from}"));
    s.copy_in(dir, "cluster");
    let apply = |s: &Scratch| {
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
    };
    apply(&s);
    let (before, _) = plan_json(&s);
    let mut found = false;
    for f in ["cluster/cluster.kdl", "cluster/workloads.kdl"] {
        if s.path(f).is_file() && s.read(f).contains(decl) {
            let new_decl = decl.replace(&format!("\"{from}\""), &format!("\"{to}\""));
            s.write(f, s.read(f).replace(decl, &new_decl));
            found = true;
        }
    }
    assert!(found, "{dir} declares no {decl}");
    s.write(
        "cluster/moved.kdl",
        format!("moved from=\"{from}\" to=\"{to}\"\n"),
    );
    let (with, stderr) = plan_json(&s);
    assert!(!stderr.contains("GP967"), "{stderr}");
    assert!(disruption_is_empty(&with), "{dir}: {}", with["disruption"]);
    assert_eq!(
        with["moved"],
        serde_json::json!([{"kind": "class", "from": from, "to": to}])
    );
    assert_eq!(held(&with, to), held(&before, from), "{dir}: {to} moved");
    // Saved, applied and checked against the saved plan (a fresh ILP plan could place
    // differently from the greedy state).
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "-o", "p.json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    let r = s.run(&["apply", "p.json", "--out-dir", "out"]);
    assert_eq!(r.0, 0, "{}", r.2);
    // The class's objects are the new ones (a file named after it says `marker`), and
    // no file is named after the old name any more.
    let tree = common::tree(&s.path("out"));
    let named = |n: &str| -> Vec<String> {
        tree.iter()
            .filter(|(f, _)| f.rsplit('/').next().is_some_and(|b| b.starts_with(n)))
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect()
    };
    assert!(
        named(to).iter().any(|t| t.contains(marker)),
        "{dir}: no file of {to} says {marker:?}"
    );
    assert!(
        named(&format!("{from}.")).is_empty(),
        "{dir}: files of {from} left"
    );
    let r = s.run(&["check-render", "out", "p.json"]);
    assert_eq!(r.0, 0, "{dir}: check-render\n{}\n{}", r.1, r.2);
}

#[test]
fn a_renamed_gang_keeps_its_compute_domain_and_its_nodes() {
    renamed_without_disruption(
        "examples/gb200-nvl72-dra",
        "training \"rl-posttrain\"",
        "rl-posttrain",
        "rl-v2",
        "kind: ComputeDomain\nmetadata:\n  name: rl-v2",
    );
}

#[test]
fn a_renamed_kai_class_keeps_its_queue_and_its_gpus() {
    renamed_without_disruption(
        "examples/kai-platform",
        "inference \"vision-embed\"",
        "vision-embed",
        "vision-embed-v2",
        "kai.scheduler/queue: \"vision\"",
    );
    renamed_without_disruption(
        "examples/kai-platform",
        "training \"nlp-pretrain\"",
        "nlp-pretrain",
        "nlp-pretrain-v2",
        "kind: PodGroup\nmetadata:\n  name: nlp-pretrain-v2",
    );
}

#[test]
fn a_renamed_class_in_a_cohort_tree_keeps_its_place() {
    renamed_without_disruption(
        "tests/fixtures/kueue-cohorts",
        "training \"vision-finetune\"",
        "vision-finetune",
        "vision-tune",
        "name: vision-tune",
    );
}
