//! CLI contract: exit codes, stdout/stderr split, JSON output, and every bundled
//! example validating cleanly.

use crate::common;

use crate::common::{examples, gpuplan};
use std::path::Path;

#[test]
fn every_example_is_valid_without_warnings() {
    let ex = examples();
    assert!(ex.len() >= 4, "expected at least 4 examples, found {ex:?}");
    for e in ex {
        let e = e.to_str().unwrap();
        let out = gpuplan(&["validate", e, "--format", "json"]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        assert_eq!(out.status.code(), Some(0), "{e}: {json:#}");
        assert_eq!(json["error_count"], 0, "{e}: {json:#}");
        assert_eq!(json["warning_count"], 0, "{e}: {json:#}");
    }
}

#[test]
fn examples_cover_the_required_clusters() {
    for (dir, nodes, gpus) in [
        ("examples/small-lab", 2, 8),
        ("examples/superpod-h100", 32, 256),
        ("examples/gb200-nvl72", 36, 144),
    ] {
        let out = gpuplan(&["show", dir, "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{dir}");
        let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let n = m["nodes"].as_array().unwrap();
        assert_eq!(n.len(), nodes, "{dir}");
        let g: usize = n.iter().map(|x| x["gpus"].as_array().unwrap().len()).sum();
        assert_eq!(g, gpus, "{dir}");
    }
    // GB200 NVL72: each rack is one 72-GPU NVLink domain.
    let out = gpuplan(&["show", "examples/gb200-nvl72", "--format", "json"]);
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let domains = m["nvlink_domains"].as_array().unwrap();
    assert!(
        domains
            .iter()
            .any(|d| d["multi_node"] == true && d["members"].as_array().unwrap().len() == 72)
    );
}

#[test]
fn invalid_input_exits_1_with_diagnostics_on_stderr() {
    let out = gpuplan(&["validate", "tests/rules/GP013.kdl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "human diagnostics go to stderr");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GP013") && err.contains("taken by 3g.40gb@4"),
        "{err}"
    );
}

#[test]
fn json_diagnostics_have_code_line_and_help() {
    let out = gpuplan(&["validate", "tests/rules/GP003.kdl", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &j["diagnostics"][0];
    assert_eq!(d["code"], "GP003");
    assert_eq!(d["help"], "did you mean `guarantee`?");
    assert!(d["line"].as_u64().unwrap() > 0 && d["column"].as_u64().unwrap() > 0);
    assert_eq!(j["valid"], false);
}

#[test]
fn folder_and_files_merge_into_one_configuration() {
    let dir = Path::new("examples/superpod-h100");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".kdl"))
        .collect();
    files.sort();
    files.reverse(); // order of files on the command line does not matter
    let mut args = vec!["show", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let a = gpuplan(&args);
    let b = gpuplan(&["show", "--format", "json", "examples/superpod-h100"]);
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(
        a.stdout, b.stdout,
        "same configuration whatever the file order"
    );
}

#[test]
fn explain_lists_and_documents_rules() {
    let out = gpuplan(&["explain"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() >= 20);
    let out = gpuplan(&["explain", "GP013"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("**Fix.**"));
    assert_eq!(gpuplan(&["explain", "GP999"]).status.code(), Some(1));
}

#[test]
fn apply_without_a_plan_or_out_dir_is_a_usage_error() {
    let out = gpuplan(&["apply", "examples/small-lab"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out-dir"));
}

/// No NVIDIA driver here (nor in CI): `discover` must say NVML was not found, exit 1 and
/// not panic. The binary starting at all shows libnvidia-ml is not linked at build time.
#[test]
fn discover_without_nvml_exits_1_with_a_diagnostic() {
    let out = common::command()
        .arg("discover")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run gpuplan");
    if std::path::Path::new("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1").exists() {
        return; // a GPU machine: discover may succeed there
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("GP700"), "{err}");
    assert!(err.contains("NVML was not found"), "{err}");
    assert!(err.contains("libnvidia-ml.so.1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn import_writes_kdl_that_validates() {
    let dir = std::env::temp_dir().join(format!("gpuplan-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kdl = dir.join("node.kdl");
    let out = gpuplan(&[
        "import",
        "nvidia-smi-topo",
        "tests/fixtures/discover/topo/08_H100_8gpu_NV18_noNIC__stas00-ml-engineering.txt",
        "--model",
        "h100",
        "--node",
        "dgx-07",
        "-o",
        kdl.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = gpuplan(&["validate", kdl.to_str().unwrap(), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_eq!(json["error_count"], 0);
    let out = gpuplan(&["plan", dir.to_str().unwrap(), "--solver", "greedy"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_of_a_truncated_file_exits_1_with_a_span() {
    let out = gpuplan(&[
        "import",
        "nvidia-smi-xml",
        "tests/fixtures/discover/nvidia-smi/q_x_A100-SXM4-80GB_MIG-enabled__influxdata-telegraf-issue5812.xml.txt",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("GP711") && err.contains("truncated"), "{err}");
    assert!(
        err.contains("q_x_A100-SXM4-80GB_MIG-enabled__influxdata-telegraf-issue5812.xml.txt:"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn import_json_and_lgip() {
    let out = gpuplan(&[
        "import",
        "mig-lgip",
        "tests/fixtures/discover/nvidia-smi/mig_lgip_H100NVL_94GB__NVIDIA-gpu-operator-pr903.txt",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The import contract's document: the report and what was read.
    assert_eq!(json["format_version"], 1);
    assert_eq!(json["report"]["importer"], "mig-lgip");
    assert_eq!(json["report"]["inputs"][0]["kind"], "nvidia-smi mig -lgip");
    assert_eq!(json["read"]["models"][0], "h100-nvl-94gb");
    assert_eq!(json["read"]["profiles"].as_array().unwrap().len(), 3);
}

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    assert_eq!(gpuplan(&["validate"]).status.code(), Some(1));
    assert_eq!(gpuplan(&["--help"]).status.code(), Some(0));
}
