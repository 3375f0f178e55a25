//! Node classes with GPUs of several models (issue 30): one `gpus` line per model, GPU
//! indexes running across the lines; the fixture is tests/fixtures/mixed-gpus.

mod common;

use common::{gpuplan, load_dir, load_text};

const FIXTURE: &str = "tests/fixtures/mixed-gpus";

/// Diagnostic codes of one configuration text.
fn codes(text: &str) -> Vec<&'static str> {
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add("test.kdl", text.to_string());
    let outcome = gpuplan::validate::validate(&sources);
    outcome.diagnostics.iter().map(|d| d.code).collect()
}

const MIXED: &str = r#"
cluster "c" { scheduler "slurm"; }
node-class "x" {
    cpu sockets=2 cores-per-socket=16
    gpus 8 model="a100-sxm4-80gb"
    gpus 2 model="t4-16gb"
    nvlink-domain gpus="0-7"
    numa 0 gpus="0-3,8"
    numa 1 gpus="4-7,9"
}
nodes "n-[1-2]" class="x" {
    node "n-2" gpus-down="9"
}
fabric { leaf "l" nodes="n-[1-2]"; }
"#;

#[test]
fn a_mixed_class_keeps_each_gpu_model_with_node_wide_indexes() {
    let c = load_text(MIXED);
    let k = &c.classes["x"];
    assert_eq!(k.gpu_count, 10);
    assert!(k.is_mixed());
    assert_eq!(k.gpus_text(), "8 a100-sxm4-80gb + 2 t4-16gb");
    let n = &c.nodes[c.node_index["n-1"]];
    let models: Vec<&str> = n.gpus.iter().map(|g| g.model.as_deref().unwrap()).collect();
    assert_eq!(models[..8], ["a100-sxm4-80gb"; 8]);
    assert_eq!(models[8..], ["t4-16gb"; 2]);
    assert_eq!(n.gpus[8].numa, Some(0));
    assert_eq!(n.gpus[9].numa, Some(1));
    let down = &c.nodes[c.node_index["n-2"]];
    assert!(down.gpus[9].down && !down.gpus[8].down);
}

#[test]
fn a_single_model_class_reads_as_before() {
    let c = load_text(
        "cluster \"c\" { scheduler \"slurm\"; }\nnode-class \"h\" { cpu sockets=1 cores-per-socket=8; gpus 4 model=\"h100-sxm5-80gb\"; }\nnodes \"h-1\" class=\"h\"\nfabric { leaf \"l\" nodes=\"h-1\"; }\n",
    );
    let k = &c.classes["h"];
    assert!(!k.is_mixed());
    assert_eq!(k.gpu_model.as_deref(), Some("h100-sxm5-80gb"));
    assert_eq!(k.model_of(3), Some("h100-sxm5-80gb"));
    assert_eq!(k.model_of(4), None);
}

#[test]
fn index_sets_run_across_the_lines() {
    // 10 GPUs: index 9 is the second T4, 10 is out of range (GP011).
    let bad = MIXED.replace("numa 1 gpus=\"4-7,9\"", "numa 1 gpus=\"4-7,10\"");
    assert!(codes(&bad).contains(&"GP011"), "{:?}", codes(&bad));
    assert!(codes(MIXED).iter().all(|c| !c.starts_with("GP0") || *c == "GP033"));
}

#[test]
fn every_model_line_is_checked_against_the_catalog() {
    let bad = MIXED.replace("t4-16gb", "t5-16gb");
    assert!(codes(&bad).contains(&"GP006"), "{:?}", codes(&bad));
}

#[test]
fn two_lines_of_one_model_are_an_error() {
    let bad = MIXED.replace("gpus 2 model=\"t4-16gb\"", "gpus 2 model=\"a100-sxm4-80gb\"");
    assert!(codes(&bad).contains(&"GP007"), "{:?}", codes(&bad));
}

#[test]
fn two_drivers_on_one_node_are_an_error() {
    let bad = MIXED
        .replace("model=\"t4-16gb\"", "model=\"t4-16gb\" driver=\"550.54.15\"")
        .replace(
            "model=\"a100-sxm4-80gb\"",
            "model=\"a100-sxm4-80gb\" driver=\"535.104.05\"",
        );
    assert!(codes(&bad).contains(&"GP051"), "{:?}", codes(&bad));
    let same = bad.replace("550.54.15", "535.104.05");
    assert!(!codes(&same).contains(&"GP051"));
}

#[test]
fn validate_and_show_print_the_mixed_gpus() {
    let out = gpuplan(&["validate", FIXTURE]);
    let err = String::from_utf8_lossy(&out.stderr);
    let text = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("8 nodes, 32 GPUs (mixed nodes: 2 tesla + 2 kepler in class tux)"),
        "{text}"
    );
    let out = gpuplan(&["show", FIXTURE]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("class tux: 8 nodes x 2 tesla + 2 kepler"),
        "{text}"
    );
    let c = load_dir(FIXTURE);
    assert_eq!(c.nodes.len(), 8);
}
