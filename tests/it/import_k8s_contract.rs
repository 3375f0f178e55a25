//! `gpuplan import k8s-nodes` keeps the import contract (docs/import.md): every Node is
//! imported or listed as left out with a code; the MIG strategy labels do not hide
//! whole GPUs; unknown products are declared (without memory when no label says it) and
//! flagged; diagnostics point at what is really unknown.

use crate::common::{Run, Scratch, codes, panicked};

/// A one-node list (JSON) with these labels and capacity.
fn node_json(name: &str, labels: &[(&str, &str)], capacity: &[(&str, &str)]) -> String {
    list(&[node(name, labels, capacity)])
}

fn node(name: &str, labels: &[(&str, &str)], capacity: &[(&str, &str)]) -> serde_json::Value {
    let map = |kv: &[(&str, &str)]| -> serde_json::Map<String, serde_json::Value> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect()
    };
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": map(labels) },
        "spec": {},
        "status": { "capacity": map(capacity) }
    })
}

fn list(items: &[serde_json::Value]) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "apiVersion": "v1", "kind": "List", "items": items
    }))
    .unwrap()
}

fn import_text(tag: &str, text: &str, extra: &[&str]) -> (Run, Scratch) {
    let s = Scratch::new(&format!("k8s-contract-{tag}"));
    s.write("nodes.json", text);
    let mut args = vec!["import", "k8s-nodes", "nodes.json"];
    args.extend_from_slice(extra);
    let r = s.run(&args);
    assert!(!panicked(&r), "{tag}: {}", r.2);
    (r, s)
}

/// Whether a diagnostic points at the line of `text` holding `needle`.
fn points_at(r: &Run, text: &str, needle: &str) -> bool {
    let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    r.2.contains(&format!("nodes.json:{line}:"))
}

/// The GPU Operator's labels of a whole-GPU H100 under the single MIG strategy
/// (tests/fixtures/k8s/h100-mig-single.json, node h100-01).
const H100_SINGLE: &[(&str, &str)] = &[
    ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
    ("nvidia.com/gpu.count", "1"),
    ("nvidia.com/mig.capable", "true"),
    ("nvidia.com/mig.strategy", "single"),
    ("nvidia.com/mig.config", "all-disabled"),
    ("nvidia.com/mig.config.state", "success"),
];

#[test]
fn a_whole_gpu_node_under_the_single_strategy_is_imported() {
    let text = node_json("h100-01", H100_SINGLE, &[("nvidia.com/gpu", "1")]);
    let (r, s) = import_text("single-whole", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpus 1 model=\"h100-sxm5-80gb\""), "{}", r.1);
    assert!(!r.1.contains("layout"), "{}", r.1);
    assert!(codes(&r).is_empty(), "{}", r.2);
    assert!(
        r.2.contains("1 of 1 node(s) and 1 of 1 GPU(s) imported"),
        "{}",
        r.2
    );
    s.write("site/nodes.kdl", &r.1);
    let v = s.run(&["validate", "site"]);
    assert!(v.2.contains("1 nodes") || v.2.contains("1 node"), "{}", v.2);
}

#[test]
fn a_layout_not_applied_yet_is_flagged_and_the_gpus_imported_whole() {
    // The GPU Operator's docs: `mig.config=all-1g.10gb`, state pending, the product
    // still the whole GPU.
    let mut labels = H100_SINGLE.to_vec();
    labels.retain(|(k, _)| !k.starts_with("nvidia.com/mig.config"));
    labels.push(("nvidia.com/mig.config", "all-1g.10gb"));
    labels.push(("nvidia.com/mig.config.state", "pending"));
    let text = node_json("h100-04", &labels, &[("nvidia.com/gpu", "1")]);
    let (r, _s) = import_text("single-pending", &text, &["--format", "json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP736".to_string()), "{}", r.2);
    assert!(points_at(&r, &text, "\"nvidia.com/mig.config\""), "{}", r.2);
    let v: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    assert_eq!(v["report"]["gpus"]["imported"], 1);
    let flagged = v["report"]["flagged"].as_array().unwrap();
    assert!(
        flagged
            .iter()
            .any(|f| f["kind"] == "mig-layout" && f["code"] == "GP736"),
        "{flagged:?}"
    );
}

#[test]
fn an_unknown_count_points_at_what_is_missing() {
    // A product label and nothing that counts the GPUs: the product is pointed at.
    let text = node_json(
        "h100-01",
        &[("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")],
        &[],
    );
    let (r, _s) = import_text("count-none", &text, &[]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP737".to_string()), "{}", r.2);
    assert!(points_at(&r, &text, "nvidia.com/gpu.product"), "{}", r.2);
    // Mixed strategy without `gpu.count`: the capacity counts only GPUs without MIG.
    let text = node_json(
        "a100-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
            ("nvidia.com/mig.strategy", "mixed"),
        ],
        &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.5gb", "14")],
    );
    let (r, _s) = import_text("count-mixed", &text, &[]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.2.contains("counts only the GPUs without MIG"), "{}", r.2);
    assert!(points_at(&r, &text, "\"nvidia.com/gpu\":"), "{}", r.2);
    // A count no node holds.
    let text = node_json(
        "h100-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
            ("nvidia.com/gpu.count", "4000000000"),
        ],
        &[],
    );
    let (r, _s) = import_text("count-huge", &text, &[]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP723".to_string()), "{}", r.2);
    assert!(points_at(&r, &text, "nvidia.com/gpu.count"), "{}", r.2);
}

#[test]
fn every_node_is_imported_or_listed_out() {
    let text = list(&[
        // CPU-only: imported.
        node("cpu-01", &[], &[("cpu", "16"), ("memory", "65536Mi")]),
        // MIG devices but no product label: left out (GP733), not a CPU-only node.
        node(
            "mig-01",
            &[("nvidia.com/mig.strategy", "mixed")],
            &[("nvidia.com/mig-1g.10gb", "7")],
        ),
        // An unknown product without memory: declared and flagged.
        node(
            "ws-01",
            &[
                ("nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-3090"),
                ("nvidia.com/gpu.count", "2"),
            ],
            &[],
        ),
        // A MIG layout that cannot be carried: flagged, the node in.
        node(
            "a100-01",
            &[
                ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
                ("nvidia.com/gpu.count", "2"),
                ("nvidia.com/mig.config", "custom"),
                ("nvidia.com/mig-3g.20gb.count", "3"),
            ],
            &[],
        ),
        // Time-slicing: the capacity over the replicas (not a loss of 3 GPUs).
        node(
            "ts-01",
            &[
                ("nvidia.com/gpu.product", "NVIDIA-L4-SHARED"),
                ("nvidia.com/gpu.replicas", "4"),
            ],
            &[("nvidia.com/gpu", "4")],
        ),
        // A bad name.
        node("Bad_Name", &[("nvidia.com/gpu.product", "NVIDIA-L4")], &[]),
    ]);
    let (r, _s) = import_text("every-node", &text, &["--format", "json"]);
    assert_eq!(r.0, 1, "{}", r.2);
    let v: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    let rep = &v["report"];
    assert_eq!(rep["nodes"]["seen"], 6, "{rep}");
    assert_eq!(rep["nodes"]["imported"], 4, "{rep}");
    assert_eq!(rep["nodes"]["left_out"], 2, "{rep}");
    assert_eq!(rep["gpus"]["imported"], 5, "{rep}");
    let left: Vec<(String, String)> = rep["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().into(),
                i["code"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        left.contains(&("mig-01".into(), "GP733".into())),
        "{left:?}"
    );
    assert!(
        left.contains(&("Bad_Name".into(), "GP732".into())),
        "{left:?}"
    );
    assert!(!left.iter().any(|(_, c)| c == "GP751"), "{left:?}");
    let flagged: Vec<(String, String)> = rep["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().into(),
                i["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        flagged.contains(&("gpu-model".into(), "geforce-rtx-3090".into())),
        "{flagged:?}"
    );
    assert!(
        flagged.contains(&("mig-layout".into(), "a100-01".into())),
        "{flagged:?}"
    );
}

#[test]
fn a_taint_not_carried_is_a_loss() {
    let mut n = node(
        "l4-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-L4"),
            ("nvidia.com/gpu.count", "1"),
        ],
        &[],
    );
    n["spec"]["taints"] = serde_json::json!([
        {"key": "example.com/team", "value": "a b", "effect": "NoSchedule"},
        {"key": "gpuplan.io/pool", "value": "x", "effect": "NoSchedule"}
    ]);
    let (r, _s) = import_text("taint", &list(&[n]), &["--format", "json"]);
    assert_eq!(r.0, 1, "{}", r.2);
    let v: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    assert_eq!(v["report"]["left_out"][0]["kind"], "taint", "{}", r.1);
    assert_eq!(v["report"]["flagged"][0]["kind"], "taint", "{}", r.1);
}

#[test]
fn an_unknown_product_without_memory_is_declared_for_the_user_to_fill_in() {
    let text = node_json(
        "g-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-3090"),
            ("nvidia.com/gpu.count", "1"),
        ],
        &[("nvidia.com/gpu", "1")],
    );
    let (r, s) = import_text("no-memory", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP734".to_string()), "{}", r.2);
    assert!(points_at(&r, &text, "nvidia.com/gpu.product"), "{}", r.2);
    assert!(
        r.1.contains(
            "gpu-model \"geforce-rtx-3090\" product-name=\"NVIDIA-GeForce-RTX-3090\"  // memory unknown: set memory=\"...\" (or base=\"...\")"
        ),
        "{}",
        r.1
    );
    assert!(r.1.contains("gpus 1 model=\"geforce-rtx-3090\""), "{}", r.1);
    assert!(r.2.contains("flagged"), "{}", r.2);
    // `fmt`-clean, and `validate` refuses the model until its memory is filled in.
    s.write("site/nodes.kdl", &r.1);
    let f = s.run(&["fmt", "--check", "site"]);
    assert_eq!(f.0, 0, "{}{}", f.1, f.2);
    let v = s.run(&["validate", "site"]);
    assert!(codes(&v).contains(&"GP006".to_string()), "{}", v.2);
    let filled = r.1.replace(
        "product-name=\"NVIDIA-GeForce-RTX-3090\"",
        "product-name=\"NVIDIA-GeForce-RTX-3090\" memory=\"24GiB\"",
    );
    s.write("site/nodes.kdl", &filled);
    let v = s.run(&["validate", "site"]);
    assert!(!codes(&v).contains(&"GP006".to_string()), "{}", v.2);
}

#[test]
fn model_maps_to_a_catalog_id_or_a_declared_model() {
    let text = node_json(
        "g-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-3090"),
            ("nvidia.com/gpu.count", "1"),
            ("nvidia.com/gpu.memory", "24576"),
        ],
        &[],
    );
    let (r, _s) = import_text(
        "map-catalog",
        &text,
        &["--model", "NVIDIA-GeForce-RTX-3090=l4-24gb"],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpus 1 model=\"l4-24gb\""), "{}", r.1);
    assert!(!r.1.contains("gpu-model"), "{}", r.1);
    // A name outside the catalog: the user's model, declared with the labelled memory.
    let (r, _s) = import_text(
        "map-declared",
        &text,
        &["--model", "NVIDIA-GeForce-RTX-3090=rtx3090"],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.1.contains("gpu-model \"rtx3090\" memory=\"24576MiB\""),
        "{}",
        r.1
    );
    assert!(r.1.contains("gpus 1 model=\"rtx3090\""), "{}", r.1);
    // An id that cannot be a name.
    let (r, _s) = import_text(
        "map-bad",
        &text,
        &["--model", "NVIDIA-GeForce-RTX-3090=RTX 3090!"],
    );
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP734".to_string()), "{}", r.2);
}

/// Found by tests/import_k8s_props.rs: an empty taint key (or node name) made the span
/// search step past the end of the text (a panic).
#[test]
fn an_empty_taint_key_or_name_is_diagnosed_not_a_panic() {
    for yaml in [
        "kind: Node\nmetadata:\n  name: n1\n  labels:\n    nvidia.com/gpu.product: NVIDIA-L4\n    nvidia.com/gpu.count: \"1\"\nspec:\n  taints:\n  - key: \"\"\n    effect: NoSchedule\n",
        "kind: Node\nmetadata:\n  name: \"\"\n  labels:\n    nvidia.com/gpu.product: NVIDIA-L4\n",
        "kind: Node\nmetadata:\n  name: n\u{e9}\n  labels:\n    nvidia.com/gpu.product: NVIDIA-L4\nspec:\n  taints:\n  - key: \"\"\n    effect: \"\u{e9}\"\n",
    ] {
        let s = Scratch::new("k8s-contract-empty-key");
        s.write("nodes.yaml", yaml);
        let r = s.run(&["import", "k8s-nodes", "nodes.yaml"]);
        assert!(!panicked(&r), "{}", r.2);
        assert!(!codes(&r).is_empty(), "{}", r.2);
    }
}
