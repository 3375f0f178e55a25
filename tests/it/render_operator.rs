//! The GPU Operator's objects (issue 34): one NVIDIADriver per distinct declared NVIDIA
//! driver whose node selector picks exactly the nodes that run it (as the model says:
//! `gpus driver=`, else the GPU model's `driver`), and a ClusterPolicy fragment that
//! points MIG Manager and the device plugin at the ConfigMaps gpuplan renders.
//! The schemas are checked by `crd/check.sh` in scripts/conformance.sh.

use crate::common;

use gpuplan::render::{self, Files, Target};
use gpuplan::solve::SolverKind;
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};

const KDL: &str = r#"
cluster "drivers" {
    scheduler "kubernetes"
}
gpu-model "h100-sxm5-80gb" driver="570.124.06"
node-class "h100-r550" {
    gpus 8 model="h100-sxm5-80gb" driver="550.54.15"
}
node-class "h100-r550-b" {
    gpus 8 model="h100-sxm5-80gb" driver="550.54.15"
}
node-class "h100-model-driver" {
    gpus 8 model="h100-sxm5-80gb"
}
node-class "a100-branch" {
    gpus 8 model="a100-sxm4-80gb" driver="535"
}
node-class "l4-undeclared" {
    gpus 4 model="l4-24gb"
}
nodes "a-[01-02]" class="h100-r550"
nodes "b-[01-02]" class="h100-r550-b"
nodes "c-[01-03]" class="h100-model-driver"
nodes "d-01" class="a100-branch"
nodes "e-01" class="l4-undeclared"
pool "mig" mode="mig" nodes="d-01"
team "t" guarantee=8 burst=16
priority "p" value=10
inference "serve" team="t" priority="p" replicas=2 {
    isolation "whole-gpu"
    gpus 1
    models "h100-sxm5-80gb"
}
inference "small" team="t" priority="p" replicas=4 {
    isolation "mig"
    profile "1g.10gb"
    models "a100-sxm4-80gb"
}
"#;

fn docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn rendered() -> (gpuplan::model::Cluster, Files) {
    let c = common::load_text(KDL);
    let p = common::plan(&c, SolverKind::Ilp);
    let files = render::render(&c, &p, &[Target::K8s], &render::Options::default())
        .expect("renders")
        .files;
    (c, files)
}

/// Node name -> labels, from k8s/nodes.yaml.
fn node_labels(files: &Files) -> BTreeMap<String, BTreeMap<String, String>> {
    docs(&files["k8s/nodes.yaml"])
        .iter()
        .map(|n| {
            let labels = n["metadata"]["labels"]
                .as_mapping()
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().unwrap().to_string(),
                        v.as_str().unwrap().to_string(),
                    )
                })
                .collect();
            (n["metadata"]["name"].as_str().unwrap().to_string(), labels)
        })
        .collect()
}

#[test]
fn one_nvidia_driver_per_declared_driver_selecting_exactly_its_nodes() {
    let (c, files) = rendered();
    let labels = node_labels(&files);
    // What the model says each node runs (class driver, else the GPU model's).
    let mut want: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (i, n) in c.nodes.iter().enumerate() {
        if let Some(d) = c.node_driver(i) {
            let text = d.iter().map(u32::to_string).collect::<Vec<_>>().join(".");
            want.entry(text).or_default().insert(n.name.clone());
        }
    }
    assert_eq!(want.len(), 3, "550.54.15, 570.124.6 (model), 535: {want:?}");
    let drivers = docs(&files["k8s/gpu-operator-drivers.yaml"]);
    assert_eq!(
        drivers.len(),
        want.len(),
        "one NVIDIADriver per declared driver"
    );
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for d in &drivers {
        assert_eq!(d["apiVersion"].as_str(), Some("nvidia.com/v1alpha1"));
        assert_eq!(d["kind"].as_str(), Some("NVIDIADriver"));
        assert_eq!(d["spec"]["driverType"].as_str(), Some("gpu"));
        let version = d["spec"]["version"].as_str().unwrap();
        let selector: BTreeMap<String, String> =
            serde_yaml::from_value(d["spec"]["nodeSelector"].clone()).unwrap();
        let selected: BTreeSet<String> = labels
            .iter()
            .filter(|(_, l)| selector.iter().all(|(k, v)| l.get(k) == Some(v)))
            .map(|(n, _)| n.clone())
            .collect();
        // Versions compare by their numbers: the label keeps the driver's padding.
        let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
        let key = parts
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(".");
        assert_eq!(
            selected, want[&key],
            "NVIDIADriver {version} selects its nodes"
        );
        for n in &selected {
            assert!(seen.insert(n.clone()), "{n} selected by two NVIDIADrivers");
        }
        // A bare branch is a precompiled image's tag.
        assert_eq!(
            d["spec"]["usePrecompiled"].as_bool().unwrap_or(false),
            !version.contains('.')
        );
    }
    assert!(
        !seen.contains("e-01"),
        "an undeclared driver is not guessed"
    );
}

#[test]
fn cluster_policy_points_at_the_rendered_config_maps() {
    let (_, files) = rendered();
    let policy = &docs(&files["k8s/gpu-operator-policy.yaml"])[0];
    assert_eq!(policy["kind"].as_str(), Some("ClusterPolicy"));
    let maps: BTreeMap<String, Value> = docs(&files["k8s/gpu-operator.yaml"])
        .into_iter()
        .map(|m| (m["metadata"]["name"].as_str().unwrap().to_string(), m))
        .collect();
    let spec = &policy["spec"];
    let mig = spec["migManager"]["config"]["name"].as_str().unwrap();
    assert!(maps[mig]["data"]["config.yaml"].is_string(), "{mig}");
    let plugin = spec["devicePlugin"]["config"]["name"].as_str().unwrap();
    let default = spec["devicePlugin"]["config"]["default"].as_str().unwrap();
    assert!(
        maps[plugin]["data"][default].is_string(),
        "{plugin}/{default}"
    );
    assert_eq!(spec["mig"]["strategy"].as_str(), Some("mixed"));
    assert_eq!(spec["driver"]["useNvidiaDriverCRD"].as_bool(), Some(true));
    // Every label value a node selector names is one the device plugin config knows.
    for (n, l) in node_labels(&files) {
        let key = &l["nvidia.com/device-plugin.config"];
        assert!(maps[plugin]["data"][key.as_str()].is_string(), "{n}: {key}");
    }
}
