//! What the renderers write carries out what the plan says (issue 29): each numbered
//! case of the issue, as found on main 0c512f9, is a test here (each fails there).
//! The independent realizability checker (`tests/it/realize.rs`) proves the same on every
//! example; these tests pin the mechanisms.

use crate::common;

use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::render::{self, Files, Target};
use gpuplan::solve::SolverKind;
use serde_yaml::Value;

fn plan_text(text: &str) -> (Cluster, Placement) {
    let c = common::load_text(text);
    let p = common::plan(&c, SolverKind::Ilp);
    (c, p)
}

fn render_all(c: &Cluster, p: &Placement) -> Files {
    render::render(c, p, &Target::ALL, &render::Options::default())
        .unwrap_or_else(|e| panic!("render failed: {e:?}"))
        .files
}

/// The YAML documents of the files under `prefix`.
fn docs(files: &Files, prefix: &str) -> Vec<Value> {
    files
        .iter()
        .filter(|(p, _)| p.starts_with(prefix) && p.ends_with(".yaml"))
        .flat_map(|(_, t)| {
            serde_yaml::Deserializer::from_str(t)
                .map(|d| serde::Deserialize::deserialize(d).unwrap())
                .filter(|v: &Value| !v.is_null())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Workload objects of a class (label `gpuplan.io/class`), any kind.
fn objects<'a>(docs: &'a [Value], class: &str) -> Vec<&'a Value> {
    docs.iter()
        .filter(|d| d["metadata"]["labels"]["gpuplan.io/class"].as_str() == Some(class))
        .collect()
}

/// The pod template of a workload object (Deployment, Job, Volcano Job).
fn pod(d: &Value) -> &Value {
    if d["apiVersion"].as_str() == Some("batch.volcano.sh/v1alpha1") {
        &d["spec"]["tasks"][0]["template"]
    } else {
        &d["spec"]["template"]
    }
}

/// `key -> values` of the pod's required node affinity (one term).
fn selects(d: &Value) -> std::collections::BTreeMap<String, Vec<String>> {
    let terms = &pod(d)["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    let mut out = std::collections::BTreeMap::new();
    for e in terms[0]["matchExpressions"]
        .as_sequence()
        .into_iter()
        .flatten()
    {
        out.insert(
            e["key"].as_str().unwrap().to_string(),
            e["values"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect(),
        );
    }
    out
}

fn resources<'a>(d: &'a Value, which: &str) -> &'a Value {
    &pod(d)["spec"]["containers"][0]["resources"][which]
}

fn replicas(d: &Value) -> u64 {
    let r = &d["spec"]["replicas"];
    r.as_u64().unwrap_or(1)
}

fn gangs(d: &Value) -> u64 {
    d["metadata"]["annotations"]["gpuplan.io/gangs"]
        .as_str()
        .map(|s| s.parse().unwrap())
        .unwrap_or(1)
}

const L40S: &str = r#"
node-class "l40s" {
    cpu sockets=1 cores-per-socket=32 threads-per-core=2
    memory "256GiB"
    gpus 4 model="l40s-48gb"
}
nodes "l40s-[01-02]" class="l40s"
team "vision" guarantee=4 burst=8
priority "serving" value=1000
"#;

/// Case 1: a `fraction "25%"` class with requests, 6 replicas on two 4-GPU L40S nodes
/// under plain Kubernetes. 0c512f9 rendered `nvidia.com/gpu: 1` per replica, no CPU or
/// memory, no node selection and no sharing on the node.
#[test]
fn issue29_case1_fractions_share_the_planned_gpus_with_their_requests() {
    let (c, p) = plan_text(&format!(
        r#"cluster "frac" {{ scheduler "kubernetes"; }}
{L40S}
inference "ocr-small" team="vision" priority="serving" replicas=6 {{
    fraction "25%"
    requests cpu=4 memory="12GiB"
}}"#
    ));
    let w = &p.workloads[0];
    assert_eq!(w.replicas_placed, 6);
    let mut nodes: Vec<&str> = w.packed.iter().map(|x| x.node.as_str()).collect();
    nodes.dedup();
    assert_eq!(nodes.len(), 1, "packed on one node: {nodes:?}");
    let files = render_all(&c, &p);
    let k8s = docs(&files, "k8s/");
    let obj = objects(&k8s, "ocr-small");
    assert_eq!(obj.len(), 1);
    let d = obj[0];
    assert_eq!(replicas(d), 6);
    let lim = resources(d, "limits");
    assert!(
        lim["nvidia.com/gpu"].is_null(),
        "a whole GPU for a fraction: {lim:?}"
    );
    assert_eq!(lim["nvidia.com/gpu.shared"].as_str(), Some("1"));
    let req = resources(d, "requests");
    assert_eq!(req["cpu"].as_str(), Some("4"));
    assert_eq!(req["memory"].as_str(), Some("12Gi"));
    let sel = selects(d);
    assert_eq!(sel["kubernetes.io/hostname"], vec![nodes[0].to_string()]);
    assert_eq!(
        sel["nvidia.com/device-plugin.config"],
        vec!["time-slicing-4".to_string()]
    );
    // The node is labelled with that config, which shares each GPU four ways.
    let node = k8s
        .iter()
        .find(|n| {
            n["kind"].as_str() == Some("Node") && n["metadata"]["name"].as_str() == Some(nodes[0])
        })
        .unwrap();
    assert_eq!(
        node["metadata"]["labels"]["nvidia.com/device-plugin.config"].as_str(),
        Some("time-slicing-4")
    );
    let cfg = &files["mig/device-plugin/time-slicing-4.yaml"];
    assert!(
        cfg.contains("replicas: 4") && cfg.contains("renameByDefault: true"),
        "{cfg}"
    );
    // The team's ResourceQuota admits the six shared replicas.
    let rq = k8s
        .iter()
        .find(|d| d["kind"].as_str() == Some("ResourceQuota"))
        .unwrap();
    assert_eq!(
        rq["spec"]["hard"]["requests.nvidia.com/gpu.shared"].as_str(),
        Some("6")
    );
}

/// Case 2: a training class of 4 one-node gangs that the plan spreads over A100, H100
/// and L40S nodes under three leaves. 0c512f9 pinned every target's one object to the
/// first gang's GPU model; now each group of gangs gets its own object.
#[test]
fn issue29_case2_a_class_spread_over_models_gets_an_object_per_group() {
    let (c, p) = plan_text(
        r#"
node-class "a100" {
    cpu sockets=2 cores-per-socket=32 threads-per-core=2
    gpus 8 model="a100-sxm4-80gb"
    nics 4 speed="200Gbps" kind="infiniband"
}
node-class "h100" {
    cpu sockets=2 cores-per-socket=48 threads-per-core=2
    gpus 8 model="h100-sxm5-80gb"
    nics 8 speed="400Gbps" kind="infiniband"
}
node-class "l40s" {
    cpu sockets=2 cores-per-socket=32 threads-per-core=2
    gpus 8 model="l40s-48gb"
    nics 2 speed="200Gbps" kind="infiniband"
}
nodes "a100-[01-02]" class="a100"
nodes "h100-01" class="h100"
nodes "l40s-01" class="l40s"
fabric {
    spine "s1" {
        leaf "leaf-a" nodes="a100-[01-02]"
        leaf "leaf-h" nodes="h100-01"
        leaf "leaf-l" nodes="l40s-01"
    }
}
team "ml" guarantee=32 burst=32
priority "batch" value=100
training "sweep" team="ml" priority="batch" replicas=4 {
    gang gpus=8
}
"#,
    );
    let w = &p.workloads[0];
    assert_eq!(w.gangs.len(), 4, "one gang per node");
    let files = render_all(&c, &p);
    for prefix in ["k8s/", "kueue/", "volcano/"] {
        let ds = docs(&files, prefix);
        let obj = objects(&ds, "sweep");
        assert_eq!(obj.len(), 3, "{prefix}: one object per GPU model");
        let mut models: Vec<String> = obj
            .iter()
            .flat_map(|d| {
                let m = selects(d)["gpuplan.io/gpu-model"].clone();
                assert_eq!(m.len(), 1, "{prefix}: one model per object");
                std::iter::repeat_n(m[0].clone(), gangs(d) as usize)
            })
            .collect();
        models.sort();
        assert_eq!(
            models,
            [
                "a100-sxm4-80gb",
                "a100-sxm4-80gb",
                "h100-sxm5-80gb",
                "l40s-48gb"
            ],
            "{prefix}: the planned gangs, model by model"
        );
    }
    // Slurm: one script per group, an array of its gangs, its model as the GRES type.
    let mut sb: Vec<(String, u32)> = files
        .iter()
        .filter(|(f, _)| f.starts_with("slurm/workloads/"))
        .map(|(_, t)| {
            let opt = |n: &str| {
                t.lines()
                    .find_map(|l| l.strip_prefix(&format!("#SBATCH --{n}=")))
            };
            let array = opt("array").map_or(1, |a| a[2..].parse::<u32>().unwrap() + 1);
            (opt("gres").unwrap().to_string(), array)
        })
        .collect();
    sb.sort();
    assert_eq!(
        sb,
        [
            ("gpu:a100:8".to_string(), 2),
            ("gpu:h100:8".to_string(), 1),
            ("gpu:l40s:8".to_string(), 1)
        ]
    );
}

/// Case 3: examples/mixed-inference, where Kueue owns every node. 0c512f9 rendered no
/// object for any inference or dev class; now each gets a Deployment in its team's
/// queue asking for the MIG profile, shared GPU or whole GPUs the plan gives it.
#[test]
fn issue29_case3_every_placed_class_has_an_object_under_kueue() {
    let c = common::load_dir("examples/mixed-inference");
    let p = common::plan(&c, SolverKind::Ilp);
    let files = render_all(&c, &p);
    let kueue = docs(&files, "kueue/");
    for w in p.workloads.iter().filter(|w| w.replicas_placed > 0) {
        let obj = objects(&kueue, &w.name);
        assert!(!obj.is_empty(), "no Kueue object for `{}`", w.name);
        let mut carried = 0;
        for d in obj {
            assert_eq!(
                d["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].as_str(),
                Some(w.team.as_str()),
                "{}",
                w.name
            );
            let lim = resources(d, "limits").as_mapping().unwrap();
            let gpu: Vec<&str> = lim
                .keys()
                .filter_map(|k| k.as_str())
                .filter(|k| k.starts_with("nvidia.com/"))
                .collect();
            assert_eq!(gpu.len(), 1, "{}: {gpu:?}", w.name);
            if let Some(i) = w.mig_instances.first() {
                assert_eq!(gpu[0], format!("nvidia.com/mig-{}", i.profile));
            }
            if !w.shares.is_empty() {
                assert_eq!(gpu[0], "nvidia.com/gpu.shared");
            }
            carried += if d["kind"].as_str() == Some("Deployment") {
                replicas(d)
            } else {
                gangs(d)
            };
        }
        assert_eq!(carried, w.replicas_placed as u64, "{}", w.name);
    }
}

/// Case 4: declared requests reach every manifest and batch script. 0c512f9 wrote them
/// nowhere.
#[test]
fn issue29_case4_requests_reach_every_target() {
    let (c, p) = plan_text(&format!(
        r#"{L40S}
inference "embed" team="vision" priority="serving" replicas=3 {{
    gpus 1
    requests cpu=2.5 memory="8GiB"
}}"#
    ));
    let files = render_all(&c, &p);
    for prefix in ["k8s/", "kueue/", "volcano/"] {
        let ds = docs(&files, prefix);
        let obj = objects(&ds, "embed");
        assert_eq!(obj.len(), 1, "{prefix}");
        let req = resources(obj[0], "requests");
        assert_eq!(req["cpu"].as_str(), Some("2500m"), "{prefix}");
        assert_eq!(req["memory"].as_str(), Some("8Gi"), "{prefix}");
    }
    let sb = files
        .iter()
        .find(|(f, _)| f.starts_with("slurm/workloads/"))
        .map(|(_, t)| t)
        .unwrap();
    assert!(sb.contains("#SBATCH --cpus-per-task=3\n"), "{sb}");
    assert!(sb.contains("#SBATCH --mem=8192M\n"), "{sb}");
    // Kueue admits a workload only when its queue covers every resource it asks for.
    let cq = &files["kueue/clusterqueues.yaml"];
    assert!(cq.contains("\"cpu\"") && cq.contains("\"memory\""), "{cq}");
}
