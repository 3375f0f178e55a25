//! `gpuplan import k8s-nodes` on a node where only the device plugin runs (no GPU Feature
//! Discovery, so no `nvidia.com/gpu.product`): its GPUs are imported as the placeholder
//! `gpu-model "unknown-gpu"` (no memory: `validate` says GP006), flagged with GP733;
//! `--model unknown-gpu=ID` maps them; MIG devices without a product stay left out.

use crate::common::{Run, Scratch, codes, panicked};

const FIXTURE: &str = "tests/fixtures/k8s/device-plugin-only.yaml";

fn import(tag: &str, extra: &[&str]) -> (Run, Scratch) {
    let s = Scratch::new(&format!("k8s-unlabelled-{tag}"));
    let src = format!("{}/{FIXTURE}", env!("CARGO_MANIFEST_DIR"));
    let mut args = vec!["import", "k8s-nodes", src.as_str()];
    args.extend_from_slice(extra);
    let r = s.run(&args);
    assert!(!panicked(&r), "{tag}: {}", r.2);
    (r, s)
}

#[test]
fn gpus_without_a_product_label_are_imported_as_a_placeholder_model() {
    let (r, s) = import("placeholder", &["-o", "site/nodes.kdl"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(codes(&r).contains(&"GP733".to_string()), "{}", r.2);
    let kdl = s.read("site/nodes.kdl");
    assert!(kdl.contains("gpu-model \"unknown-gpu\""), "{kdl}");
    assert!(
        kdl.contains("// memory unknown: set memory=\"...\" (or base=\"...\")"),
        "{kdl}"
    );
    assert!(kdl.contains("no nvidia.com/gpu.product label"), "{kdl}");
    assert!(kdl.contains("gpus 4 model=\"unknown-gpu\""), "{kdl}");
    assert!(kdl.contains("nodes \"nvidia1\""), "{kdl}");
    let f = s.run(&["fmt", "--check", "site/nodes.kdl"]);
    assert_eq!(f.0, 0, "not fmt-clean: {}{}", f.1, f.2);
    let v = s.run(&["validate", "site"]);
    assert_ne!(v.0, 0, "{}", v.2);
    assert_eq!(codes(&v), vec!["GP006".to_string()], "{}", v.2);
}

#[test]
fn the_report_flags_the_placeholder_and_the_node() {
    let (r, _s) = import("json", &["--format", "json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    let v: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    let rep = &v["report"];
    assert_eq!(rep["nodes"]["imported"], 1, "{rep}");
    assert_eq!(rep["gpus"]["seen"], 4, "{rep}");
    assert_eq!(rep["gpus"]["imported"], 4, "{rep}");
    assert_eq!(rep["left_out"].as_array().unwrap().len(), 0, "{rep}");
    let flagged: Vec<(&str, &str, &str)> = rep["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap(),
                i["name"].as_str().unwrap(),
                i["code"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        flagged.contains(&("gpu-model", "unknown-gpu", "GP733")),
        "{flagged:?}"
    );
    assert!(
        flagged.contains(&("gpus", "nvidia1", "GP733")),
        "{flagged:?}"
    );
}

#[test]
fn model_unknown_gpu_maps_the_placeholder() {
    let (r, s) = import(
        "mapped",
        &[
            "--model",
            "unknown-gpu=h100-sxm5-80gb",
            "-o",
            "site/nodes.kdl",
        ],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    let kdl = s.read("site/nodes.kdl");
    assert!(kdl.contains("gpus 4 model=\"h100-sxm5-80gb\""), "{kdl}");
    assert!(!kdl.contains("unknown-gpu"), "{kdl}");
    let v = s.run(&["validate", "site"]);
    assert_eq!(v.0, 0, "{}", v.2);
    // A name the user declares: the placeholder under that name.
    let (r, s) = import(
        "named",
        &[
            "--model",
            "unknown-gpu=tesla-t4-lab",
            "-o",
            "site/nodes.kdl",
        ],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        s.read("site/nodes.kdl")
            .contains("gpu-model \"tesla-t4-lab\"")
    );
    // An id that cannot be a name: an error, nothing written.
    let (r, _s) = import("bad-id", &["--model", "unknown-gpu=Not A Name"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP734".to_string()), "{}", r.2);
}

#[test]
fn the_fixture_says_where_it_comes_from() {
    let sources = std::fs::read_to_string("tests/fixtures/k8s/SOURCES.md").unwrap();
    assert!(sources.contains("device-plugin-only.yaml"));
}

#[test]
fn no_count_and_no_product_declares_nothing() {
    let s = Scratch::new("k8s-unlabelled-present");
    s.write(
        "nodes.json",
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-01","labels":{"nvidia.com/gpu.present":"true"}},"status":{"capacity":{"cpu":"8"}}}"#,
    );
    let r = s.run(&["import", "k8s-nodes", "nodes.json", "--format", "json"]);
    assert!(!panicked(&r), "{}", r.2);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(!r.1.contains("unknown-gpu"), "{}", r.1);
    assert!(!codes(&r).contains(&"GP733".to_string()), "{}", r.2);
}
