//! `gpuplan discover` against a fake `libnvidia-ml.so.1` (issue 21).
//!
//! The fake library (`tests/fake-nvml/`, a cdylib workspace member) is built by these
//! tests into `<target>/fake-nvml/` and put on `LD_LIBRARY_PATH` as `libnvidia-ml.so.1`, so
//! the real binary's `dlopen`, symbol lookup, `nvml-wrapper` and the raw MIG calls of
//! `crates/io/src/discover/nvml.rs` all run. It answers from the machine descriptions in
//! `tests/fixtures/discover/fake-nvml/` (sources in `SOURCES.md` there) and logs every
//! NVML function called, which [`every_raw_nvml_call_is_reached`] checks against the
//! calls `crates/io/src/discover/nvml.rs` makes.
//!
//! Linux only: the fake is found through `LD_LIBRARY_PATH` under the driver's file name.
#![cfg(target_os = "linux")]

use crate::common;

use crate::common::Scratch;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const FIXTURES: &str = "tests/fixtures/discover/fake-nvml";

/// Folders holding the fake as `libnvidia-ml.so.1`: the full library, and one without
/// the MIG instance functions (feature `no-mig-instances`).
struct Libs {
    full: PathBuf,
    no_mig_instances: PathBuf,
}

fn target_dir() -> PathBuf {
    // <target>/debug/gpuplan
    let bin = Path::new(env!("CARGO_BIN_EXE_gpuplan"));
    bin.ancestors().nth(2).expect("target folder").to_path_buf()
}

/// Builds the fake with `features` (its own target folder: the outer `cargo test` holds
/// the lock on this one) and copies it to `<target>/fake-nvml/<name>/libnvidia-ml.so.1`.
fn build(features: &str, name: &str) -> PathBuf {
    let out = target_dir().join("fake-nvml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--quiet",
            "--locked",
            "-p",
            "fake-nvml",
            "--target-dir",
        ])
        .arg(&out);
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    let status = cmd.status().expect("run cargo build for the fake NVML");
    assert!(status.success(), "building tests/fake-nvml failed");
    let dir = out.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        out.join("debug/libnvidia_ml.so"),
        dir.join("libnvidia-ml.so.1"),
    )
    .unwrap();
    dir
}

fn libs() -> &'static Libs {
    static LIBS: OnceLock<Libs> = OnceLock::new();
    // One after the other: both builds write the same artifact path.
    LIBS.get_or_init(|| Libs {
        no_mig_instances: build("no-mig-instances", "no-mig-instances"),
        full: build("", "full"),
    })
}

/// A run of `gpuplan ARGS` with the fake library answering from `desc`, its call log in
/// `log`.
fn with_fake(s: &Scratch, lib: &Path, desc: &Path, log: &Path, args: &[&str]) -> common::Run {
    let mut c = common::command();
    c.args(args)
        .current_dir(&s.0)
        .env("LD_LIBRARY_PATH", lib)
        .env("GPUPLAN_FAKE_NVML", desc)
        .env("GPUPLAN_FAKE_NVML_LOG", log);
    common::run_of(&c.output().expect("run gpuplan"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(FIXTURES)
        .join(name)
}

fn description(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

/// `gpuplan discover ARGS` on machine `desc` (a description written into the scratch
/// folder), with the full library.
fn discover(s: &Scratch, desc: &Value, args: &[&str]) -> common::Run {
    discover_with(s, &libs().full, desc, args)
}

fn discover_with(s: &Scratch, lib: &Path, desc: &Value, args: &[&str]) -> common::Run {
    s.write("machine.json", serde_json::to_string_pretty(desc).unwrap());
    let mut all = vec!["discover"];
    all.extend_from_slice(args);
    with_fake(s, lib, &s.path("machine.json"), &s.path("calls.log"), &all)
}

/// The machines recorded from real outputs, with the node name used for each.
const MACHINES: [(&str, &str); 6] = [
    ("dev-h100.json", "dev-h100"),
    ("dev-h200.json", "dev-h200"),
    ("h100-hgx-8x.json", "hgx-h100-01"),
    ("a100-mig.json", "a100-mig-01"),
    ("l40s.json", "l40s-01"),
    ("gb200-tray.json", "gb200-tray-01"),
];

#[test]
fn every_machine_discovers_validates_and_matches_its_snapshot() {
    for (file, node) in MACHINES {
        let s = Scratch::new(&format!("fake-nvml-{node}"));
        let r = discover(&s, &description(file), &["--node", node]);
        assert_eq!(r.0, 0, "{file}: {}", r.2);
        s.write("node.kdl", &r.1);
        let v = s.run(&["validate", "node.kdl"]);
        assert_eq!(
            v.0, 0,
            "{file}: discover output does not validate: {}{}",
            v.1, v.2
        );
        // Issue 30: what gpuplan writes passes its own `fmt --check`.
        let f = s.run(&["fmt", "--check", "node.kdl"]);
        assert_eq!(f.0, 0, "{file}: discover output is not fmt-clean: {}", f.1);
        let name = file.trim_end_matches(".json").replace('-', "_");
        insta::assert_snapshot!(
            format!("fake_nvml_{name}"),
            format!("{}\n--- stderr\n{}", r.1, r.2)
        );
        let j = discover(
            &s,
            &description(file),
            &["--node", node, "--format", "json"],
        );
        assert_eq!(j.0, 0, "{file}: {}", j.2);
        insta::assert_snapshot!(format!("fake_nvml_{name}_json"), j.1);
    }
}

/// Regression: `nvmlDeviceGetGpuInstances` takes the profile ID
/// (`nvmlGpuInstanceProfileInfo_t.id`: 9 for 3g.40gb), not the
/// `NVML_GPU_INSTANCE_PROFILE_*` index (2). With the index, discovery of a MIG GPU failed
/// (no profile ID 2 on an A100) or filed instances under the wrong profile (index 0 is
/// profile ID 0, 7g.80gb).
#[test]
fn mig_instances_are_listed_by_profile_id_with_driver_names() {
    let s = Scratch::new("fake-nvml-a100-ids");
    let r = discover(
        &s,
        &description("a100-mig.json"),
        &["--node", "n", "--format", "json"],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    let j: Value = serde_json::from_str(&r.1).unwrap();
    let gis = |g: usize| -> Vec<(u64, u64, String, u64, usize)> {
        j["gpus"][g]["mig"]["gpu_instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|gi| {
                (
                    gi["id"].as_u64().unwrap(),
                    gi["profile_id"].as_u64().unwrap(),
                    gi["profile"].as_str().unwrap().to_string(),
                    gi["start"].as_u64().unwrap(),
                    gi["compute_instances"].as_array().unwrap().len(),
                )
            })
            .collect()
    };
    // `nvidia-smi mig -lgi` of the recorded node: 4g.40gb (ID 5) at 0:4 as GI 2,
    // 3g.40gb (ID 9) at 4:4 as GI 1, each with a 1c and a 2c compute instance.
    assert_eq!(
        gis(0),
        vec![
            (2, 5, "4g.40gb".into(), 0, 2),
            (1, 9, "3g.40gb".into(), 4, 2)
        ]
    );
    assert_eq!(
        gis(1),
        vec![
            (3, 14, "2g.20gb".into(), 0, 1),
            (9, 19, "1g.10gb".into(), 2, 1),
            (5, 14, "2g.20gb".into(), 4, 1)
        ]
    );
    let cis = &j["gpus"][0]["mig"]["gpu_instances"][1]["compute_instances"];
    assert_eq!(cis[0]["slices"], 1);
    assert_eq!(cis[1]["slices"], 2);
}

/// The driver's MIG device names are what the output uses: driver 545.23.08 names the
/// A100-SXM4-80GB's 3g.40gb profile `3g.39gb` (NVIDIA/mig-parted issue 31), so discovery
/// warns (GP720) and pins the name, and the output still validates.
#[test]
fn a_renamed_profile_is_pinned_from_the_mig_device_name() {
    let s = Scratch::new("fake-nvml-rename");
    let mut d = description("a100-mig.json");
    d["driver_version"] = "545.23.08".into();
    for g in d["gpus"].as_array_mut().unwrap() {
        for p in g["mig"]["profiles"].as_array_mut().unwrap() {
            if p["id"] == 9 {
                p["name"] = "3g.39gb".into();
            }
        }
    }
    let r = discover(&s, &d, &["--node", "n"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.2.contains("GP720"), "{}", r.2);
    assert!(
        r.1.contains(r#"mig-name "3g.40gb" driver="3g.39gb""#),
        "{}",
        r.1
    );
    s.write("node.kdl", &r.1);
    let v = s.run(&["validate", "node.kdl"]);
    assert_eq!(v.0, 0, "{}{}", v.1, v.2);
}

/// MIG on the H200 whose NVML was recorded: its real profile table (IDs, indices,
/// counts, memory; names from its `-lgip`), with instances constructed in the layout
/// `3g.71gb` + `2g.35gb` + `1g.18gb` + `1g.18gb` (MIG was not enabled on the lent machine).
/// The driver's names are the catalog's: no GP720, and the layout validates.
#[test]
fn mig_on_the_recorded_h200_profiles() {
    let s = Scratch::new("fake-nvml-h200-mig");
    let mut d = description("dev-h200.json");
    let mig = &mut d["gpus"][0]["mig"];
    mig["current"] = true.into();
    mig["pending"] = true.into();
    mig["gpu_instances"] = serde_json::json!([
        {"id": 3, "profile_id": 14, "start": 0, "size": 2,
         "compute_instances": [{"id": 0, "profile": 1}]},
        {"id": 9, "profile_id": 19, "start": 2, "size": 1,
         "compute_instances": [{"id": 0, "profile": 0}]},
        {"id": 10, "profile_id": 19, "start": 3, "size": 1,
         "compute_instances": [{"id": 0, "profile": 0}]},
        {"id": 2, "profile_id": 9, "start": 4, "size": 4,
         "compute_instances": [{"id": 0, "profile": 2}]}
    ]);
    let r = discover(&s, &d, &["--node", "h200-01"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(!r.2.contains("GP720"), "{}", r.2);
    assert!(
        r.1.contains(r#"layout "3g.71gb" "2g.35gb" "1g.18gb*2" nodes="h200-01""#),
        "{}",
        r.1
    );
    insta::assert_snapshot!(
        "fake_nvml_dev_h200_mig",
        format!("{}\n--- stderr\n{}", r.1, r.2)
    );
    s.write("node.kdl", &r.1);
    let v = s.run(&["validate", "node.kdl"]);
    assert_eq!(v.0, 0, "{}{}", v.1, v.2);
}

/// Fields both sources read must agree; documented differences: `source`, the NVLink
/// domains, NUMA and CPU affinity (the XML has none), and the notes.
fn comparable(j: &Value) -> Value {
    let gpus: Vec<Value> = j["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            serde_json::json!({
                "index": g["index"], "name": g["name"], "pci_device_id": g["pci_device_id"],
                "bus_id": g["bus_id"], "uuid": g["uuid"], "memory_mib": g["memory_mib"],
                "mig_current": g["mig"]["current"],
            })
        })
        .collect();
    serde_json::json!({
        "node": j["node"], "class": j["class"], "model": j["model"],
        "driver": j["system"]["driver_version"], "cuda": j["system"]["cuda_version"],
        "gpus": gpus,
    })
}

#[test]
fn discovery_agrees_with_the_xml_import_of_the_same_machine() {
    for (file, xml) in [
        ("dev-h100.json", "dev-h100-qx.xml"),
        ("dev-h200.json", "dev-h200-qx.xml"),
        ("h100-hgx-8x.json", "qx-h100.xml"),
        ("l40s.json", "qx-l40s.xml"),
        ("gb200-tray.json", "qx-gb200.xml"),
    ] {
        let s = Scratch::new("fake-nvml-vs-xml");
        let d = discover(
            &s,
            &description(file),
            &["--node", "n1", "--format", "json"],
        );
        assert_eq!(d.0, 0, "{file}: {}", d.2);
        let x = fixture(xml);
        let i = s.run(&[
            "import",
            "nvidia-smi-xml",
            x.to_str().unwrap(),
            "--node",
            "n1",
            "--format",
            "json",
        ]);
        assert_eq!(i.0, 0, "{xml}: {}", i.2);
        // The import's JSON holds what it read under `read` (the import contract).
        let (d, i): (Value, Value) = (
            serde_json::from_str(&d.1).unwrap(),
            serde_json::from_str::<Value>(&i.1).unwrap()["read"].take(),
        );
        assert_eq!(comparable(&d), comparable(&i), "{file} vs {xml}");
    }
}

/// The recorded machines' own `nvidia-smi topo -m` (R580 underlines the header with
/// terminal escapes, also in a file: regression, the importer found no matrix) against
/// their NVML discovery: same class and NVLink domains (none) and CPU affinity. Documented
/// difference: `topo -m` prints NUMA affinity 0 where NVML answers NOT_SUPPORTED, so only
/// the import has a NUMA group.
#[test]
fn discovery_agrees_with_the_topo_import_of_the_same_machine() {
    for (name, model) in [
        ("dev-h100", "h100-sxm5-80gb"),
        ("dev-h200", "h200-sxm-141gb"),
    ] {
        let s = Scratch::new("fake-nvml-vs-topo");
        let d = discover(
            &s,
            &description(&format!("{name}.json")),
            &["--node", "n1", "--format", "json"],
        );
        assert_eq!(d.0, 0, "{name}: {}", d.2);
        let topo = fixture(&format!("{name}-topo.txt"));
        assert!(std::fs::read_to_string(&topo).unwrap().contains('\x1b'));
        let i = s.run(&[
            "import",
            "nvidia-smi-topo",
            topo.to_str().unwrap(),
            "--model",
            model,
            "--node",
            "n1",
            "--format",
            "json",
        ]);
        assert_eq!(i.0, 0, "{name}: {}", i.2);
        // The import's JSON holds what it read under `read` (the import contract).
        let (d, i): (Value, Value) = (
            serde_json::from_str(&d.1).unwrap(),
            serde_json::from_str::<Value>(&i.1).unwrap()["read"].take(),
        );
        for k in ["class", "nvlink_domains"] {
            assert_eq!(d[k], i[k], "{name}: {k}");
        }
        assert_eq!(d["gpus"][0]["cpu_affinity"], i["gpus"][0]["cpu_affinity"]);
        assert_eq!(d["numa"], serde_json::json!([]), "{name}");
        assert_eq!(i["numa"][0]["gpus"], serde_json::json!([0]), "{name}");
    }
}

#[test]
fn nvlink_domains_come_from_the_links_nvml_reports() {
    let s = Scratch::new("fake-nvml-nvlink");
    let domains = |desc: &Value| -> Value {
        let r = discover(&s, desc, &["--node", "n", "--format", "json"]);
        assert_eq!(r.0, 0, "{}", r.2);
        serde_json::from_str::<Value>(&r.1).unwrap()["nvlink_domains"].clone()
    };
    let h100 = description("h100-hgx-8x.json");
    assert_eq!(
        domains(&h100),
        serde_json::json!([[0, 1, 2, 3, 4, 5, 6, 7]])
    );
    // A GPU whose NVML answers NOT_SUPPORTED for NVLink (as an L40S does) has no links;
    // the others stay one domain, and nothing fails.
    let mut one_off = h100.clone();
    one_off["gpus"][3]["errors"] = serde_json::json!({"nvmlDeviceGetNvLinkState": "NOT_SUPPORTED"});
    assert_eq!(
        domains(&one_off),
        serde_json::json!([[0, 1, 2, 4, 5, 6, 7]])
    );
    // No NVLink at all (L40S) and active links without a PCI far end (GB200 to its NVL72
    // switch trays): no domain.
    assert_eq!(domains(&description("l40s.json")), serde_json::json!([]));
    assert_eq!(
        domains(&description("gb200-tray.json")),
        serde_json::json!([])
    );
}

fn assert_fails(r: &common::Run, code: &str, text: &str) {
    assert_eq!(r.0, 1, "expected failure: {}{}", r.1, r.2);
    assert!(r.1.is_empty(), "nothing on stdout on failure: {}", r.1);
    assert!(r.2.contains(code), "{code} expected: {}", r.2);
    assert!(r.2.contains(text), "`{text}` expected: {}", r.2);
    assert!(!r.2.contains("panicked"), "{}", r.2);
}

#[test]
fn nvml_init_failure_is_gp700() {
    let s = Scratch::new("fake-nvml-init");
    let mut d = description("h100-hgx-8x.json");
    d["init_error"] = "DRIVER_NOT_LOADED".into();
    assert_fails(
        &discover(&s, &d, &["--node", "n"]),
        "GP700",
        "the NVIDIA driver is not loaded",
    );
    d["init_error"] = "NO_PERMISSION".into();
    assert_fails(
        &discover(&s, &d, &["--node", "n"]),
        "GP700",
        "could not be initialised",
    );
    // A description the fake cannot read: nvmlInit_v2 answers UNKNOWN.
    s.write("broken.json", "{ not json");
    let r = with_fake(
        &s,
        &libs().full,
        &s.path("broken.json"),
        &s.path("calls.log"),
        &["discover", "--node", "n"],
    );
    assert_fails(&r, "GP700", "could not be initialised");
}

/// A `libnvidia-ml.so.1` (and `.so`) that is not a loadable library: `dlopen` fails, and
/// the error says NVML was not found, with the help that names LD_LIBRARY_PATH. Both
/// names are shadowed so that a real driver on the test machine is not picked up.
#[test]
fn an_unloadable_library_is_gp700_not_found() {
    let s = Scratch::new("fake-nvml-unloadable");
    s.write("lib/libnvidia-ml.so.1", "not an ELF file");
    s.write("lib/libnvidia-ml.so", "not an ELF file");
    let r = with_fake(
        &s,
        &s.path("lib"),
        &fixture("l40s.json"),
        &s.path("calls.log"),
        &["discover", "--node", "n"],
    );
    assert_fails(&r, "GP700", "NVML was not found");
    assert!(r.2.contains("LD_LIBRARY_PATH"), "{}", r.2);
}

#[test]
fn a_driver_without_mig_instance_functions() {
    let s = Scratch::new("fake-nvml-old-driver");
    let lib = &libs().no_mig_instances;
    // MIG enabled: the instances cannot be listed, which is said, not guessed.
    let r = discover_with(&s, lib, &description("a100-mig.json"), &["--node", "n"]);
    assert_fails(&r, "GP701", "lacks the MIG instance functions");
    assert!(r.2.contains("update the NVIDIA driver"), "{}", r.2);
    // MIG disabled: those functions are not needed.
    let r = discover_with(&s, lib, &description("h100-hgx-8x.json"), &["--node", "n"]);
    assert_eq!(r.0, 0, "{}", r.2);
}

#[test]
fn truncated_instance_lists_are_errors() {
    let s = Scratch::new("fake-nvml-truncated");
    // The driver has more 2g.20gb instances than the profile's count (the buffer size):
    // NVML answers INSUFFICIENT_SIZE.
    let mut d = description("a100-mig.json");
    let profiles = d["gpus"][1]["mig"]["profiles"].as_array_mut().unwrap();
    for p in profiles.iter_mut().filter(|p| p["id"] == 14) {
        p["instances"] = 1.into();
    }
    assert_fails(
        &discover(&s, &d, &["--node", "n"]),
        "GP701",
        "could not read the MIG instances of GPU 1",
    );
    // The same for the compute instances of one GPU instance.
    let mut d = description("a100-mig.json");
    d["gpus"][0]["mig"]["gpu_instances"][0]["ci_capacity"] = 0.into();
    assert_fails(
        &discover(&s, &d, &["--node", "n"]),
        "GP701",
        "could not read the MIG instances of GPU 0",
    );
}

#[test]
fn a_failing_query_is_gp701() {
    let s = Scratch::new("fake-nvml-lost");
    let mut d = description("l40s.json");
    d["gpus"][0]["errors"] = serde_json::json!({"nvmlDeviceGetMemoryInfo_v2": "GPU_IS_LOST"});
    assert_fails(
        &discover(&s, &d, &["--node", "n"]),
        "GP701",
        "could not read the memory of GPU 0",
    );
}

#[test]
fn drift_accepts_discovery_json_from_the_fake_library() {
    let s = Scratch::new("fake-nvml-drift");
    let r = discover(
        &s,
        &description("h100-hgx-8x.json"),
        &[
            "--node",
            "node-01",
            "--format",
            "json",
            "-o",
            "obs/node-01.json",
        ],
    );
    assert_eq!(r.0, 0, "{}", r.2);
    s.write(
        "cfg/c.kdl",
        r#"cluster "c" { scheduler "kueue"; }
node-class "h" { gpus 8 model="h100-sxm5-80gb" driver="535.104.05"; }
nodes "node-01" class="h"
fabric { leaf "l" nodes="node-01"; }
"#,
    );
    let r = s.run(&["drift", "cfg", "--observed", "obs", "--format", "json"]);
    assert_eq!(r.0, 2, "{}\n{}", r.1, r.2);
    let j: Value = serde_json::from_str(&r.1).unwrap();
    let driver = j["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "driver")
        .unwrap_or_else(|| panic!("no driver difference: {}", r.1));
    assert_eq!(driver["observed"][0], "580.105.08");
}

/// The fake's structs have the sizes of nvml-wrapper-sys's bindings (the layouts gpuplan
/// and nvml-wrapper pass): the fake asserts each size at compile time, and this test
/// checks those numbers against the bindings.
#[test]
fn the_fake_structs_have_the_bindings_sizes() {
    use nvml_wrapper_sys::bindings as sys;
    use std::mem::size_of;
    let fake = std::fs::read_to_string("tests/fake-nvml/src/lib.rs").unwrap();
    for (fake_struct, size) in [
        ("PciInfo", size_of::<sys::nvmlPciInfo_t>()),
        ("MemoryV2", size_of::<sys::nvmlMemory_v2_t>()),
        (
            "ProfileInfo",
            size_of::<sys::nvmlGpuInstanceProfileInfo_t>(),
        ),
        ("GpuInstanceInfo", size_of::<sys::nvmlGpuInstanceInfo_t>()),
        (
            "ComputeInstanceInfo",
            size_of::<sys::nvmlComputeInstanceInfo_t>(),
        ),
    ] {
        let assertion = format!("size_of::<{fake_struct}>() == {size})");
        assert!(
            fake.contains(&assertion),
            "the fake must assert `{assertion}`"
        );
    }
}

/// NVML functions named in `crates/io/src/discover/nvml.rs` as raw calls (`lib.nvml...`), and the
/// ones `nvml-wrapper` makes for the wrapper methods gpuplan uses.
fn expected_calls() -> BTreeSet<String> {
    let src = std::fs::read_to_string("crates/io/src/discover/nvml.rs").unwrap();
    let mut out: BTreeSet<String> = src
        .match_indices(".nvml")
        .map(|(i, _)| {
            src[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect();
    assert!(
        out.contains("nvmlDeviceGetGpuInstances") && out.len() >= 5,
        "raw calls not found in nvml.rs: {out:?}"
    );
    // Checked against nvml-wrapper 0.13: Nvml::init, sys_driver_version,
    // sys_cuda_driver_version, device_count, device_by_index; Device::pci_info, mig_mode,
    // name, uuid, memory_info, numa_node_id, cpu_affinity, profile_info,
    // mig_device_count, mig_device_by_index; NvLink::is_active, remote_pci_info; Drop.
    out.extend(
        [
            "nvmlInit_v2",
            "nvmlShutdown",
            "nvmlSystemGetDriverVersion",
            "nvmlSystemGetCudaDriverVersion_v2",
            "nvmlDeviceGetCount_v2",
            "nvmlDeviceGetHandleByIndex_v2",
            "nvmlDeviceGetPciInfo_v3",
            "nvmlDeviceGetMigMode",
            "nvmlDeviceGetName",
            "nvmlDeviceGetUUID",
            "nvmlDeviceGetMemoryInfo_v2",
            "nvmlDeviceGetNumaNodeId",
            "nvmlDeviceGetCpuAffinity",
            "nvmlDeviceGetGpuInstanceProfileInfo",
            "nvmlDeviceGetMaxMigDeviceCount",
            "nvmlDeviceGetMigDeviceHandleByIndex",
            "nvmlDeviceGetNvLinkState",
            "nvmlDeviceGetNvLinkRemotePciInfo_v2",
        ]
        .map(String::from),
    );
    out
}

/// Every NVML call gpuplan makes is reached by the machine tests above: the same
/// discoveries, with one call log.
#[test]
fn every_raw_nvml_call_is_reached() {
    let s = Scratch::new("fake-nvml-coverage");
    for (file, node) in MACHINES {
        let r = discover(&s, &description(file), &["--node", node]);
        assert_eq!(r.0, 0, "{file}: {}", r.2);
    }
    let log = s.read("calls.log");
    let called: BTreeSet<String> = log.lines().map(String::from).collect();
    let missing: Vec<String> = expected_calls()
        .into_iter()
        .filter(|f| !called.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "NVML calls no fake-library test reaches: {missing:?}"
    );
}
