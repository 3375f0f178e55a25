//! The Kubernetes importer's oracle: every fixture of tests/fixtures/k8s is imported,
//! rendered for Kubernetes (`gpuplan render --target k8s`, Kubernetes 1.31) and what the
//! render writes per node is compared with the source, normalised (docs/import.md,
//! "Round trip"): the GPU nodes, their model, GPU count, MIG devices per profile (through
//! `nvidia.com/mig.config` and the mig-parted config) and taints. The differences listed
//! there as deliberate are normalised away here; any other is a failure. The imported
//! MIG layouts (`current=#true`) are pinned before rendering: a plan without demand keeps
//! no MIG instance, so the render would otherwise set `all-disabled` everywhere.

use crate::common;

use crate::common::Scratch;
use serde_json::Value;
use std::collections::BTreeMap;

const FIXTURES: &[&str] = &[
    "a100-pcie-mig-mixed.yaml",
    "h100-xe9680.json",
    "gke-a3-mega-tas.json",
    "gb200-eks-clique.yaml",
    "h100-mig-single.json",
    "device-plugin-only.yaml",
];

/// What one GPU node says, normalised: model id, GPUs, MIG devices per profile, taints.
#[derive(Debug, PartialEq)]
struct Facts {
    model: String,
    gpus: u64,
    mig: BTreeMap<String, u64>,
    taints: Vec<String>,
}

fn label<'a>(n: &'a Value, k: &str) -> Option<&'a str> {
    n["metadata"]["labels"][k].as_str()
}

fn num(v: Option<&str>) -> Option<u64> {
    v.and_then(|s| s.trim().parse().ok())
}

/// The taints a node carries that are the user's: `key[=value]:effect`, sorted, without
/// the kubelet's (source) and gpuplan's own (render).
fn taints(n: &Value) -> Vec<String> {
    let mut out: Vec<String> = n["spec"]["taints"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            let key = t["key"].as_str()?;
            let skip = [
                "node.kubernetes.io/",
                "node.cloudprovider.kubernetes.io/",
                "gpuplan.io/",
            ];
            if skip.iter().any(|p| key.starts_with(p)) {
                return None;
            }
            let value = t["value"].as_str().filter(|v| !v.is_empty());
            let effect = t["effect"].as_str().unwrap_or("");
            Some(match value {
                Some(v) => format!("{key}={v}:{effect}"),
                None => format!("{key}:{effect}"),
            })
        })
        .collect();
    out.sort();
    out
}

/// The source node's facts, read independently of the importer: the model through the
/// catalog, the GPU count from `gpu.count` or the capacity, MIG devices from the
/// single strategy's product and count or the mixed strategy's per-profile counts. MIG
/// layouts not applied (`mig.config.state` not success) have no devices.
fn source_facts(n: &Value) -> Option<Facts> {
    // Without GPU Feature Discovery there is no product label: the GPUs the device
    // plugin advertises are the placeholder model (docs/import.md).
    let (product, model) = match label(n, "nvidia.com/gpu.product") {
        Some(p) => (
            p,
            gpuplan::catalog::identify(p)
                .map(|s| s.id.to_string())
                .unwrap_or_else(|| gpuplan::import::k8s::model::model_name(p)),
        ),
        None => {
            n["status"]["capacity"]["nvidia.com/gpu"].as_str()?;
            ("", "unknown-gpu".to_string())
        }
    };
    let count = num(label(n, "nvidia.com/gpu.count"))
        .or_else(|| num(n["status"]["capacity"]["nvidia.com/gpu"].as_str()))
        .unwrap_or(0);
    let replicas = num(label(n, "nvidia.com/gpu.replicas")).unwrap_or(1).max(1);
    let mut mig = BTreeMap::new();
    let single = product
        .to_ascii_lowercase()
        .find("-mig-")
        .map(|i| product[i + 5..].to_string());
    let gpus = match single {
        Some(p) => {
            mig.insert(p, count);
            0 // told by the render's layout: checked through the MIG devices
        }
        None => {
            if let Some(labels) = n["metadata"]["labels"].as_object() {
                for (k, v) in labels {
                    let p = k
                        .strip_prefix("nvidia.com/mig-")
                        .and_then(|k| k.strip_suffix(".count"));
                    if let (Some(p), Some(c)) = (p, num(v.as_str())) {
                        if c > 0 {
                            mig.insert(p.to_string(), c);
                        }
                    }
                }
            }
            if label(n, "nvidia.com/gpu.count").is_some() {
                count
            } else {
                count / replicas
            }
        }
    };
    Some(Facts {
        model,
        gpus,
        mig,
        taints: taints(n),
    })
}

/// mig-parted config name -> MIG devices per profile, for a node of `gpus` GPUs.
fn mig_devices(configs: &Value, name: &str, gpus: u64) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for spec in configs["mig-configs"][name]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        if spec["mig-enabled"].as_bool() != Some(true) {
            continue;
        }
        let devices = match &spec["devices"] {
            Value::Array(a) => a.len() as u64,
            _ => gpus, // `all`
        };
        for (p, c) in spec["mig-devices"].as_object().into_iter().flatten() {
            *out.entry(p.clone()).or_insert(0) += devices * c.as_u64().unwrap_or(0);
        }
    }
    out
}

/// The rendered facts of every node: `k8s/nodes.yaml` (labels, taints), the mig-parted
/// config inside `k8s/gpu-operator.yaml`, the GPU count of the model `render` read.
fn rendered_facts(s: &Scratch) -> BTreeMap<String, Facts> {
    let docs = |f: &str| -> Vec<Value> {
        let text = s.read(f);
        serde_yaml::Deserializer::from_str(&text)
            .filter_map(|d| serde::Deserialize::deserialize(d).ok())
            .filter(|v: &Value| !v.is_null())
            .collect()
    };
    let configs = docs("out/k8s/gpu-operator.yaml")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "gpuplan-mig-parted-config")
        .and_then(|d| d["data"]["config.yaml"].as_str().map(str::to_string))
        .map(|t| serde_yaml::from_str::<Value>(&t).unwrap())
        .unwrap_or(Value::Null);
    let show = s.run(&["show", "site", "--format", "json"]);
    assert_eq!(show.0, 0, "{}", show.2);
    let model: Value = serde_json::from_str(&show.1).unwrap();
    let gpus_of: BTreeMap<String, u64> = model["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_string(),
                n["gpus"].as_array().map_or(0, |g| g.len() as u64),
            )
        })
        .collect();
    let mut out = BTreeMap::new();
    for n in docs("out/k8s/nodes.yaml") {
        let name = n["metadata"]["name"].as_str().unwrap().to_string();
        let gpus = gpus_of.get(&name).copied().unwrap_or(0);
        let config = label(&n, "nvidia.com/mig.config").unwrap_or("all-disabled");
        let facts = Facts {
            model: label(&n, "gpuplan.io/gpu-model").unwrap_or("").to_string(),
            gpus,
            mig: mig_devices(&configs, config, gpus),
            taints: taints(&n),
        };
        out.insert(name, facts);
    }
    out
}

#[test]
fn every_fixture_round_trips_through_the_kubernetes_render() {
    for f in FIXTURES {
        let s = Scratch::new(&format!("k8s-rt-{}", f.replace('.', "-")));
        let src = format!("{}/tests/fixtures/k8s/{f}", env!("CARGO_MANIFEST_DIR"));
        let r = s.run(&["import", "k8s-nodes", &src, "-o", "site/nodes.kdl"]);
        assert_eq!(r.0, 0, "{f}: {}", r.2);
        // The imported layouts are what the GPUs have now (`current=#true`), which a
        // plan without demand does not keep: pinned here, as a user keeping today's
        // layouts would (docs/import.md, "Round trip").
        // A model declared without memory is completed, as the user is told to.
        let kdl = common::complete_placeholders(
            &s.read("site/nodes.kdl").replace(" current=#true", ""),
            "16GiB",
        );
        s.write("site/nodes.kdl", kdl);
        s.write(
            "site/cluster.kdl",
            "cluster \"roundtrip\" {\n    scheduler \"kubernetes\"\n    kubernetes version=\"1.31\"\n}\n",
        );
        let r = s.run(&["render", "site", "--target", "k8s", "--out-dir", "out"]);
        assert_eq!(r.0, 0, "{f}: {}{}", r.1, r.2);
        let back = rendered_facts(&s);
        let text = std::fs::read_to_string(&src).unwrap();
        let doc: Value = serde_yaml::from_str(&text).unwrap();
        let mut compared = 0;
        for n in doc["items"].as_array().unwrap() {
            let name = n["metadata"]["name"].as_str().unwrap();
            let Some(mut want) = source_facts(n) else {
                continue;
            };
            let got = back
                .get(name)
                .unwrap_or_else(|| panic!("{f}: GPU node {name} is not in the render"));
            if want.gpus == 0 {
                want.gpus = got.gpus; // single strategy: checked through the devices
            }
            assert_eq!(got, &want, "{f}: node {name}");
            compared += 1;
        }
        assert!(compared > 0, "{f}: no GPU node compared");
    }
}
