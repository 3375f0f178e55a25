//! `gpuplan import k8s-nodes`: published `kubectl get nodes` outputs (tests/fixtures/k8s,
//! SOURCES.md says where each comes from) become KDL that validates and plans; the
//! output does not depend on the order of the nodes; what cannot be mapped is a
//! diagnostic with a code and a span; bad input never panics.

use crate::common::{Run, Scratch, codes, gpuplan, panicked, run_of};

const FIXTURES: &[&str] = &[
    "a100-pcie-mig-mixed.yaml",
    "h100-xe9680.json",
    "gke-a3-mega-tas.json",
    "gb200-eks-clique.yaml",
    "h100-mig-single.json",
];

fn import(path: &str, extra: &[&str]) -> Run {
    let mut args = vec!["import", "k8s-nodes", path];
    args.extend_from_slice(extra);
    run_of(&gpuplan(&args))
}

/// The output without its first line (the header names the input file).
fn body(out: &str) -> String {
    out.split_once('\n').map_or("", |x| x.1).to_string()
}

/// Writes `kdl` into a scratch folder and runs `validate` and `plan` on it.
fn validates_and_plans(tag: &str, kdl: &str) {
    let s = Scratch::new(&format!("k8s-{tag}"));
    s.write("site/cluster.kdl", kdl);
    let v = s.run(&["validate", "site"]);
    assert_eq!(v.0, 0, "{tag}: validate failed:\n{}\n{kdl}", v.2);
    assert!(!v.2.contains("error"), "{tag}: {}", v.2);
    let p = s.run(&["plan", "site", "--no-previous"]);
    assert_eq!(p.0, 0, "{tag}: plan failed:\n{}{}\n{kdl}", p.1, p.2);
}

#[test]
fn fixtures_import_validate_and_plan() {
    for f in FIXTURES {
        let path = format!("tests/fixtures/k8s/{f}");
        let r = import(&path, &[]);
        assert_eq!(r.0, 0, "{f}: {}", r.2);
        assert!(!panicked(&r));
        insta::assert_snapshot!(format!("import_k8s_{}", f.replace(['.', '-'], "_")), r.1);
        validates_and_plans(f, &r.1);
    }
}

#[test]
fn fixtures_say_where_they_come_from() {
    let sources = std::fs::read_to_string("tests/fixtures/k8s/SOURCES.md").unwrap();
    for f in FIXTURES {
        assert!(sources.contains(f), "SOURCES.md misses {f}");
    }
}

/// A copy of a fixture with its nodes in another order.
fn shuffled(path: &str, rotate: usize) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let mut v: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    let items = v["items"].as_array_mut().unwrap();
    items.reverse();
    let n = items.len();
    items.rotate_left(rotate % n.max(1));
    v
}

#[test]
fn output_does_not_depend_on_node_order() {
    let s = Scratch::new("k8s-order");
    for f in FIXTURES {
        let path = format!("tests/fixtures/k8s/{f}");
        let original = import(&path, &[]);
        for rotate in 0..3 {
            let v = shuffled(&path, rotate);
            let file = s.path(&format!("shuffled-{rotate}-{f}.json"));
            std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
            let r = import(file.to_str().unwrap(), &[]);
            assert_eq!(r.0, 0, "{f}: {}", r.2);
            assert_eq!(body(&r.1), body(&original.1), "{f} rotated by {rotate}");
        }
    }
}

#[test]
fn yaml_and_json_give_the_same_output() {
    let s = Scratch::new("k8s-yaml-json");
    let path = "tests/fixtures/k8s/gb200-eks-clique.yaml";
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    s.write("nodes.json", serde_json::to_string(&v).unwrap());
    let a = import(path, &[]);
    let b = import(s.path("nodes.json").to_str().unwrap(), &[]);
    assert_eq!(body(&a.1), body(&b.1));
}

// ------------------------------------------------------------------ diagnostics

/// A one-node list (JSON) with these labels and capacity.
fn node_json(name: &str, labels: &[(&str, &str)], capacity: &[(&str, &str)]) -> String {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    let capacity: serde_json::Map<String, serde_json::Value> = capacity
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [{
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": { "name": name, "labels": labels },
            "spec": {},
            "status": { "capacity": capacity }
        }]
    }))
    .unwrap()
}

fn import_text(tag: &str, file: &str, text: &str, extra: &[&str]) -> (Run, Scratch) {
    let s = Scratch::new(&format!("k8s-{tag}"));
    s.write(file, text);
    let mut args = vec!["import", "k8s-nodes", file];
    args.extend_from_slice(extra);
    (s.run(&args), s)
}

/// The `file:line:col` a rendered diagnostic points at.
fn points_at(stderr: &str, file: &str, line: usize) -> bool {
    stderr.contains(&format!("{file}:{line}:"))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn unknown_product_without_memory_is_declared_and_flagged() {
    let text = node_json(
        "g-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-3090"),
            ("nvidia.com/gpu.count", "1"),
        ],
        &[("nvidia.com/gpu", "1")],
    );
    // Declared without memory (GP734, a warning), the node imported; `--model` hints.
    let (r, _s) = import_text("unknown", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP734".to_string()), "{}", r.2);
    assert!(
        r.2.contains("--model NVIDIA-GeForce-RTX-3090=ID"),
        "{}",
        r.2
    );
    let line = line_of(&text, "nvidia.com/gpu.product");
    assert!(points_at(&r.2, "nodes.json", line), "{}", r.2);
    // `--model` maps it (to a catalog model, here one of the same memory class).
    let (r, _s) = import_text(
        "unknown-mapped",
        "nodes.json",
        &text,
        &["--model", "NVIDIA-GeForce-RTX-3090=l4-24gb"],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpus 1 model=\"l4-24gb\""), "{}", r.1);
    // The same in YAML: the span is the label's line there too.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let yaml = serde_yaml::to_string(&v).unwrap();
    let (r, _s) = import_text("unknown-yaml", "nodes.yaml", &yaml, &[]);
    assert!(codes(&r).contains(&"GP734".to_string()), "{}", r.2);
    let line = line_of(&yaml, "nvidia.com/gpu.product");
    assert!(points_at(&r.2, "nodes.yaml", line), "{}", r.2);
    // `--model` naming no catalog model: a model of that name, declared (the catalog's
    // near name is suggested).
    let (r, _s) = import_text(
        "unknown-bad-id",
        "nodes.json",
        &text,
        &["--model", "NVIDIA-GeForce-RTX-3090=a10-gpu"],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpu-model \"a10-gpu\""), "{}", r.1);
    assert!(codes(&r).contains(&"GP734".to_string()), "{}", r.2);
}

#[test]
fn unknown_product_with_memory_is_declared() {
    let text = node_json(
        "ws-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"),
            ("nvidia.com/gpu.count", "4"),
            ("nvidia.com/gpu.memory", "24564"),
        ],
        &[
            ("nvidia.com/gpu", "4"),
            ("cpu", "64"),
            ("memory", "263842304Ki"),
        ],
    );
    let (r, _s) = import_text("declared", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP735".to_string()), "{}", r.2);
    assert!(
        r.1.contains("gpu-model \"geforce-rtx-4090\" memory=\"24564MiB\""),
        "{}",
        r.1
    );
    validates_and_plans("declared", &r.1);
}

/// Parts the catalog gained with the importers (issue 18) map without `--model`.
#[test]
fn catalog_parts_map_by_their_gfd_product_names() {
    for (product, id) in [
        ("NVIDIA-A10", "a10-24gb"),
        ("NVIDIA-RTX-A6000", "rtx-a6000-48gb"),
        ("Tesla-V100-SXM2-32GB", "v100-sxm2-32gb"),
        ("NVIDIA-B300-SXM6-AC", "b300-288gb"),
    ] {
        let text = node_json(
            "g-01",
            &[
                ("nvidia.com/gpu.product", product),
                ("nvidia.com/gpu.count", "1"),
            ],
            &[("nvidia.com/gpu", "1")],
        );
        let (r, _s) = import_text(&format!("catalog-{id}"), "nodes.json", &text, &[]);
        assert_eq!(r.0, 0, "{product}: {}", r.2);
        assert!(
            r.1.contains(&format!("model=\"{id}\"")),
            "{product}: {}",
            r.1
        );
    }
}

#[test]
fn malformed_inputs_are_diagnosed_never_panic() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "truncated.json",
            "{\"kind\": \"List\", \"items\": [{\"kind\": \"Node\",",
            "GP730",
        ),
        (
            "bad.yaml",
            "kind: List\nitems:\n  - kind: Node\n   metadata: [\n",
            "GP730",
        ),
        (
            "pods.json",
            "{\"kind\": \"PodList\", \"apiVersion\": \"v1\"}",
            "GP731",
        ),
        (
            "items-string.json",
            "{\"kind\": \"List\", \"items\": \"nodes\"}",
            "GP731",
        ),
        ("scalar.yaml", "just a string\n", "GP731"),
        ("array.json", "[1, 2, 3]", "GP731"),
        ("empty.yaml", "", "GP731"),
        ("binary.json", "{\u{0}\u{1}\u{2}", "GP730"),
        (
            "wrong-types.json",
            "{\"kind\":\"List\",\"items\":[{\"kind\":\"Node\",\"metadata\":{\"name\":7,\"labels\":[1]}},{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}},3,{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\",\"nvidia.com/gpu.count\":\"many\"}},\"status\":{\"capacity\":{\"cpu\":[],\"memory\":\"lots\",\"nvidia.com/gpu\":\"8\"}},\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"Sometimes\"},5]}}]}",
            "GP732",
        ),
        (
            "bad-name.yaml",
            "kind: Node\nmetadata:\n  name: GPU_Node_1\n  labels:\n    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n",
            "GP732",
        ),
    ];
    for (file, text, code) in cases {
        let (r, _s) = import_text("malformed", file, text, &[]);
        assert!(!panicked(&r), "{file}: {}", r.2);
        assert!(
            codes(&r).contains(&code.to_string()),
            "{file}: expected {code}:\n{}",
            r.2
        );
        assert!(r.2.contains(file), "{file}: no span:\n{}", r.2);
    }
    // The wrong-typed list has a Node without a usable name: the import contract
    // writes nothing without `--partial` (GP750, exit 1); with it, the one readable GPU
    // node (count from capacity), headed by what is missing, and exit 2. The `Pod` and
    // the number are not Nodes: skipped with GP732, not losses.
    let (r, _s) = import_text("wrong-types", "w.json", cases[8].1, &[]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.1.is_empty(), "{}", r.1);
    assert!(codes(&r).contains(&"GP750".to_string()), "{}", r.2);
    let (r, _s) = import_text("wrong-types", "w.json", cases[8].1, &["--partial"]);
    assert_eq!(r.0, 2, "{}", r.2);
    assert!(r.1.contains("gpus 8 model=\"h100-sxm5-80gb\""), "{}", r.1);
    assert!(
        r.1.starts_with("// PARTIAL IMPORT (--partial): 1 node(s) and 0 GPU(s)"),
        "{}",
        r.1
    );
    assert!(
        r.1.contains("// left out: node item 1 of the list: GP732"),
        "{}",
        r.1
    );
    for c in ["GP732", "GP737", "GP739", "GP750"] {
        assert!(codes(&r).contains(&c.to_string()), "{c}:\n{}", r.2);
    }
}

#[test]
fn unmappable_mig_state_is_left_out_with_a_warning() {
    // 3x 3g.20gb over 2 GPUs: not the same layout on every GPU.
    let text = node_json(
        "a100-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
            ("nvidia.com/gpu.count", "2"),
            ("nvidia.com/mig.config", "custom-config"),
            ("nvidia.com/mig-3g.20gb.count", "3"),
        ],
        &[("nvidia.com/gpu", "0")],
    );
    let (r, _s) = import_text("mig-uneven", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP736".to_string()), "{}", r.2);
    assert!(
        points_at(&r.2, "nodes.json", line_of(&text, "nvidia.com/mig.config")),
        "{}",
        r.2
    );
    assert!(!r.1.contains("layout"), "{}", r.1);
    // A config name whose layout the labels do not give, and a profile of another model.
    for (config, extra) in [
        ("all-balanced", None),
        ("all-1g.24gb", None),
        ("all-enabled", Some(("nvidia.com/mig-1g.10gb.count", "14"))),
    ] {
        let mut labels = vec![
            ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
            ("nvidia.com/gpu.count", "2"),
            ("nvidia.com/mig.config", config),
        ];
        labels.extend(extra);
        let text = node_json("a100-01", &labels, &[]);
        let (r, _s) = import_text("mig-config", "nodes.json", &text, &[]);
        assert_eq!(r.0, 0, "{config}: {}", r.2);
        assert!(
            codes(&r).contains(&"GP736".to_string()),
            "{config}: {}",
            r.2
        );
    }
}

#[test]
fn mig_single_strategy_and_config_names() {
    // Single strategy: 14 devices of 1g.5gb are two A100 40GB with seven each.
    let text = node_json(
        "dgx-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"),
            ("nvidia.com/gpu.count", "14"),
            ("nvidia.com/mig.strategy", "single"),
            ("nvidia.com/mig.config", "all-1g.5gb"),
            ("karpenter.sh/nodepool", "a100-mig"),
        ],
        &[("nvidia.com/gpu", "14")],
    );
    let (r, _s) = import_text("mig-single", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpus 2 model=\"a100-sxm4-40gb\""), "{}", r.1);
    assert!(
        r.1.contains("pool \"a100-mig\" mode=\"mig\" nodes=\"dgx-01\""),
        "{}",
        r.1
    );
    // `--model` maps the GPU of a single-strategy product name.
    let mapped = text.replace("NVIDIA-A100-SXM4-40GB-MIG", "NVIDIA-A100-X-MIG");
    let (m, _s) = import_text(
        "mig-single-mapped",
        "nodes.json",
        &mapped,
        &["--model", "NVIDIA-A100-X=a100-sxm4-40gb"],
    );
    assert_eq!(m.0, 0, "{}", m.2);
    assert!(m.1.contains("layout \"1g.5gb*7\""), "{}", m.1);
    assert!(
        r.1.contains("layout \"1g.5gb*7\" nodes=\"dgx-01\" current=#true"),
        "{}",
        r.1
    );
    validates_and_plans("mig-single", &r.1);
    // `all-3g.40gb` on H100 without device counts: as many as fit.
    let text = node_json(
        "h100-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
            ("nvidia.com/gpu.count", "8"),
            ("nvidia.com/mig.config", "all-3g.40gb"),
            ("nvidia.com/mig.config.state", "success"),
        ],
        &[],
    );
    let (r, _s) = import_text("mig-config-name", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("layout \"3g.40gb*2\""), "{}", r.1);
    assert!(r.1.contains("pool") || !r.1.contains("mode="), "{}", r.1);
}

#[test]
fn tiers_pools_and_sharing_follow_the_flags() {
    let path = "tests/fixtures/k8s/gke-a3-mega-tas.json";
    // Zones as the leaf tier, spine off; pools from another label.
    let r = import(
        path,
        &[
            "--tier",
            "leaf=topology.kubernetes.io/zone",
            "--tier",
            "spine=",
            "--pool-label",
            "node.kubernetes.io/instance-type",
        ],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("leaf \"us-east4-b\""), "{}", r.1);
    assert!(!r.1.contains("spine "), "{}", r.1);
    assert!(
        r.1.contains("pool \"a3-megagpu-8g\" mode=\"whole-gpu\""),
        "{}",
        r.1
    );
    validates_and_plans("tiers", &r.1);
    // A key no node has.
    let r = import(path, &["--tier", "leaf=example.com/rack"]);
    assert!(codes(&r).contains(&"GP738".to_string()), "{}", r.2);
    // A tier name clap refuses.
    let r = import(path, &["--tier", "rack=example.com/rack"]);
    assert_ne!(r.0, 0);
    assert!(r.2.contains("leaf, spine or core"), "{}", r.2);
    // Time-slicing shows in the pool's mode.
    let text = node_json(
        "ts-01",
        &[
            ("nvidia.com/gpu.product", "NVIDIA-L4-SHARED"),
            ("nvidia.com/gpu.count", "1"),
            ("nvidia.com/gpu.replicas", "4"),
            ("karpenter.sh/nodepool", "inference"),
        ],
        &[("nvidia.com/gpu", "4")],
    );
    let (r, _s) = import_text("shared", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpus 1 model=\"l4-24gb\""), "{}", r.1);
    assert!(
        r.1.contains("pool \"inference\" mode=\"time-slice\""),
        "{}",
        r.1
    );
    validates_and_plans("shared", &r.1);
}

#[test]
fn json_output_holds_what_was_read() {
    let r = import(
        "tests/fixtures/k8s/gb200-eks-clique.yaml",
        &["--format", "json"],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    let v: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["report"]["nodes"]["seen"], 4);
    assert_eq!(v["report"]["nodes"]["imported"], 4);
    assert_eq!(v["report"]["gpus"]["imported"], 16);
    assert_eq!(v["read"]["classes"][0]["hardware"]["gpus"], 4);
    assert_eq!(v["read"]["fabric"]["nvlink"].as_array().unwrap().len(), 2);
}

/// The XE9680 node of `h100-xe9680.json` replicated into 64 nodes under Topograph's
/// labels (4 blocks of 16 under 2 spines, NVLink accelerator domain per node pair
/// left out), listed in a scrambled order.
fn topograph_list() -> String {
    let text = std::fs::read_to_string("tests/fixtures/k8s/h100-xe9680.json").unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let template = v["items"][0].clone();
    let mut items = Vec::new();
    for k in 0..64usize {
        let i = (k * 37) % 64; // a permutation of 0..64
        let mut n = template.clone();
        let name = format!("dgx-{:03}", i + 1);
        n["metadata"]["name"] = name.clone().into();
        let labels = n["metadata"]["labels"].as_object_mut().unwrap();
        labels.insert("kubernetes.io/hostname".into(), name.into());
        labels.insert(
            "network.topology.kubernetes.io/block".into(),
            format!("block-{}", i / 16).into(),
        );
        labels.insert(
            "network.topology.kubernetes.io/spine".into(),
            format!("spine-{}", i / 32).into(),
        );
        labels.insert(
            "network.topology.kubernetes.io/datacenter".into(),
            "dc-east".into(),
        );
        items.push(n);
    }
    serde_json::to_string_pretty(
        &serde_json::json!({"kind": "List", "apiVersion": "v1", "items": items}),
    )
    .unwrap()
}

#[test]
fn a_larger_list_compresses_and_uses_topograph_tiers() {
    let (r, _s) = import_text("topograph", "nodes.json", &topograph_list(), &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    // No diagnostic: stderr is the import's summary only.
    assert_eq!(
        r.2.trim(),
        "import k8s-nodes: 64 of 64 node(s) and 512 of 512 GPU(s) imported",
    );
    assert!(
        r.1.contains("nodes \"dgx-[001-064]\" class=\"h100-x8\"\n"),
        "{}",
        r.1
    );
    assert!(r.1.contains("core \"dc-east\""), "{}", r.1);
    assert!(r.1.contains("spine \"spine-1\""), "{}", r.1);
    assert!(
        r.1.contains("leaf \"block-3\" nodes=\"dgx-[049-064]\""),
        "{}",
        r.1
    );
    assert!(r.1.contains("(Topograph / Kueue TAS labels)"), "{}", r.1);
    validates_and_plans("topograph", &r.1);
}

#[test]
fn labels_that_do_not_form_a_tree_are_reported() {
    // dgx-001 says spine-1 although its block is under spine-0.
    let text = topograph_list().replacen(
        "\"network.topology.kubernetes.io/spine\": \"spine-0\"",
        "\"network.topology.kubernetes.io/spine\": \"spine-1\"",
        1,
    );
    let (r, _s) = import_text("topograph-bad", "nodes.json", &text, &[]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP738".to_string()), "{}", r.2);
    validates_and_plans("topograph-bad", &r.1);
}

/// Every fixture cut short at many points, and with a stray quote, colon and bracket
/// spliced in there: read in-process, never a panic.
#[test]
fn cut_and_damaged_fixtures_never_panic() {
    use gpuplan::import::k8s;
    use gpuplan::source::SourceMap;
    for f in FIXTURES {
        let text = std::fs::read_to_string(format!("tests/fixtures/k8s/{f}")).unwrap();
        let cuts: Vec<usize> = (0..text.len())
            .step_by(7)
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        for cut in cuts {
            let mut damaged = text[..cut].to_string();
            let mut sources = SourceMap::new();
            let file = sources.add(*f, damaged.clone());
            let _ = k8s::import(&sources, file, &k8s::Options::default());
            // The same cut with a quote and a colon dropped in.
            damaged.push_str("\": [\n");
            damaged.push_str(&text[cut..]);
            let file = sources.add(*f, damaged);
            if let (Some(imp), _, _) = k8s::import(&sources, file, &k8s::Options::default()) {
                let _ = k8s::doc::render(&imp, "header");
            }
        }
    }
}
