//! KAI Scheduler as a scheduling authority (issue 34) on examples/kai-platform: a
//! two-level team tree as KAI Queues (department -> projects), a gang as a PodGroup
//! with its pods in one leaf, fractional and memory-sized inference as `gpu-fraction`
//! and `gpu-memory` pods, a Topology from the fabric; scoped like the other authorities
//! (kai/ only KAI's nodes and classes, k8s/ every Kubernetes-managed node and no KAI
//! class). The realizability checker accepts the render and catches each way it can
//! break. Schemas: `crd/check.sh` in scripts/conformance.sh.

use crate::common;

use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::render::{self, Files, Target};
use gpuplan::solve::SolverKind;
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};

const EXAMPLE: &str = "examples/kai-platform";

fn rendered() -> (Cluster, Placement, Files) {
    let c = common::load_dir(EXAMPLE);
    let p = common::plan(&c, SolverKind::Ilp);
    let files = render::render(&c, &p, &Target::ALL, &render::Options::default())
        .expect("renders")
        .files;
    (c, p, files)
}

fn docs(files: &Files, prefix: &str) -> Vec<Value> {
    files
        .iter()
        .filter(|(p, _)| p.starts_with(prefix) && p.ends_with(".yaml"))
        .flat_map(|(_, text)| {
            serde_yaml::Deserializer::from_str(text)
                .map(|d| Value::deserialize(d).unwrap())
                .filter(|v| !v.is_null())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn kind<'a>(v: &'a [Value], k: &str) -> Vec<&'a Value> {
    v.iter().filter(|d| d["kind"].as_str() == Some(k)).collect()
}

fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap()
}

#[test]
fn kai_renders_queues_gangs_fractions_and_topology_for_its_own_nodes() {
    let (c, p, files) = rendered();
    let kai = docs(&files, "kai/");
    // The team tree as queues: research -> nlp, vision; sim (Slurm's) has none.
    let queues: BTreeMap<&str, &Value> = kind(&kai, "Queue")
        .into_iter()
        .map(|q| (name(q), q))
        .collect();
    assert_eq!(
        queues.keys().copied().collect::<Vec<_>>(),
        ["nlp", "research", "vision"]
    );
    for (q, t) in [("nlp", "research"), ("vision", "research")] {
        assert_eq!(queues[q]["spec"]["parentQueue"].as_str(), Some(t));
    }
    assert!(queues["research"]["spec"].get("parentQueue").is_none());
    // Quota = guarantee (+ the fractions KAI counts as GPUs), weight as declared.
    let gpu = |q: &str, k: &str| queues[q]["spec"]["resources"]["gpu"][k].as_f64().unwrap();
    assert_eq!(gpu("vision", "quota"), 16.0 + 12.0 * 0.25);
    assert_eq!(gpu("vision", "limit"), 32.0 + 12.0 * 0.25);
    assert_eq!(gpu("nlp", "overQuotaWeight"), 2.0);
    // The gang: one PodGroup of 4 pods in queue nlp, required inside one leaf.
    let groups = kind(&kai, "PodGroup");
    let pg = groups.iter().find(|g| name(g) == "nlp-pretrain").unwrap();
    assert_eq!(pg["spec"]["minMember"].as_u64(), Some(4));
    assert_eq!(pg["spec"]["queue"].as_str(), Some("nlp"));
    let tc = &pg["spec"]["topologyConstraint"];
    assert_eq!(
        tc["requiredTopologyLevel"].as_str(),
        Some("gpuplan.io/leaf")
    );
    let topo = kind(&kai, "Topology");
    assert!(
        topo.iter()
            .any(|t| Some(name(t)) == tc["topology"].as_str())
    );
    let pods: Vec<&Value> = kind(&kai, "Pod")
        .into_iter()
        .filter(|x| x["metadata"]["annotations"]["pod-group-name"].as_str() == Some("nlp-pretrain"))
        .collect();
    assert_eq!(pods.len(), 4);
    for x in &pods {
        assert_eq!(x["spec"]["schedulerName"].as_str(), Some("kai-scheduler"));
    }
    // Fractions and memory-sized replicas: an annotation, no GPU resource.
    let deploy: BTreeMap<&str, &Value> = kind(&kai, "Deployment")
        .into_iter()
        .map(|d| (name(d), d))
        .collect();
    let tpl = |d: &str| &deploy[d]["spec"]["template"];
    assert_eq!(
        tpl("vision-embed")["metadata"]["annotations"]["gpu-fraction"].as_str(),
        Some("0.25")
    );
    assert_eq!(
        tpl("nlp-notebooks")["metadata"]["annotations"]["gpu-memory"].as_str(),
        Some("10240")
    );
    for d in deploy.values() {
        let limits = &d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
        assert!(
            limits.get("nvidia.com/gpu.shared").is_none() && limits.get("nvidia.com/gpu").is_none()
        );
        assert_eq!(
            d["metadata"]["labels"]["kai.scheduler/queue"].as_str(),
            d["metadata"]["namespace"].as_str()
        );
    }
    // Scoped: kai/ has only KAI's nodes' classes; k8s/ lists KAI's nodes, no Slurm node,
    // and KAI's nodes advertise whole GPUs (KAI shares them itself).
    let classes: BTreeSet<&str> = kai
        .iter()
        .filter_map(|d| d["metadata"]["labels"]["gpuplan.io/class"].as_str())
        .collect();
    assert_eq!(
        classes,
        BTreeSet::from([
            "nlp-notebooks",
            "nlp-pretrain",
            "vision-embed",
            "vision-finetune"
        ])
    );
    let nodes = kind(&docs(&files, "k8s/nodes.yaml"), "Node").len();
    assert_eq!(nodes, 12, "h100-* and l40s-*, not hpc-*");
    assert!(!files["k8s/nodes.yaml"].contains("time-slicing"));
    let r = gpuplan::realize::check(&files, &c, &p);
    assert!(r.realizable, "{:#?}", r.violations);
    assert_eq!(r.checked[&gpuplan::realize::Target::Kai].classes, 4);
    let _s = common::snapshot_settings().bind_to_scope();
    let mut bundle = String::new();
    for (path, text) in files.iter().filter(|(p, _)| p.starts_with("kai/")) {
        bundle.push_str(&format!("=== {path}\n{text}"));
    }
    insta::assert_snapshot!("kai-platform-kai", bundle);
}

/// Each way the KAI files can fail to carry the plan is caught, by invariant.
#[test]
fn check_render_catches_what_kai_would_not_carry() {
    let (c, p, files) = rendered();
    let caught = |path: &str, from: &str, to: &str, invariant: &str, what: &str| {
        let mut f = files.clone();
        let text = f.get_mut(path).unwrap();
        assert!(text.contains(from), "{path} has no `{from}`");
        *text = text.replace(from, to);
        let r = gpuplan::realize::check(&f, &c, &p);
        assert!(
            r.violations
                .iter()
                .any(|v| v.invariant.as_str() == invariant && v.message.contains(what)),
            "{path}: `{from}` -> `{to}` not caught as {invariant} `{what}`: {:#?}",
            r.violations
        );
    };
    let gang = "kai/workloads/nlp-pretrain.yaml";
    caught(
        gang,
        "minMember: 4",
        "minMember: 3",
        "carried",
        "minAvailable 3",
    );
    caught(
        gang,
        "schedulerName: kai-scheduler",
        "schedulerName: default-scheduler",
        "carried",
        "not scheduled by KAI",
    );
    caught(
        gang,
        "requiredTopologyLevel: gpuplan.io/leaf",
        "requiredTopologyLevel: gpuplan.io/rack",
        "topology",
        "does not have",
    );
    caught(
        gang,
        "queue: nlp\n",
        "queue: research\n",
        "reference",
        "only leaf queues",
    );
    let embed = "kai/workloads/vision-embed.yaml";
    caught(
        embed,
        "gpu-fraction: \"0.25\"",
        "gpu-fraction: \"0.2\"",
        "carried",
        "where the plan gives 25%",
    );
    caught(
        embed,
        "gpu-fraction: \"0.25\"",
        "nvidia.com/gpu.shared: \"1\"",
        "carried",
        "no gpu-fraction",
    );
    let books = "kai/workloads/nlp-notebooks.yaml";
    caught(
        books,
        "gpu-memory: \"10240\"",
        "gpu-memory: \"40000\"",
        "capacity",
        "shared by KAI pods",
    );
    let queues = "kai/queues.yaml";
    caught(
        queues,
        "limit: 35\n",
        "limit: 18\n",
        "quota",
        "its limit is 18",
    );
    caught(
        queues,
        "parentQueue: research",
        "parentQueue: dept",
        "reference",
        "parentQueue `dept`",
    );
    // A non-preemptible gang above its queue's quota: KAI would not start it.
    caught(
        queues,
        "quota: 42\n",
        "quota: 30\n",
        "quota",
        "only within its quota",
    );
}
