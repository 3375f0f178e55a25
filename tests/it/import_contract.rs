//! The import contract (issue 30, docs/import.md "The contract"): every node and GPU of
//! the source is in the output or listed as left out with a code and a reason; the
//! summary counts what was seen, imported and left out; a loss writes nothing and exits
//! 1 unless `--partial`, which writes the rest headed by the list of what is missing and
//! exits 2; `--format json` is the report and what was read. Never exit 0 with a loss.

use crate::common::Scratch;

/// A Slurm site whose second NodeName line names a node gpuplan cannot use (an
/// upper-case name with `_`): 2 nodes of 8 H100 are imported, 1 is left out.
const SITE: &str = "ClusterName=lab\n\
GresTypes=gpu\n\
NodeName=gpu[01-02] CPUs=64 RealMemory=515000 Gres=gpu:h100:8\n\
NodeName=GPU_03 CPUs=64 RealMemory=515000 Gres=gpu:h100:8\n\
PartitionName=main Nodes=gpu[01-02],GPU_03 Default=YES\n";

fn site(tag: &str) -> Scratch {
    let s = Scratch::new(&format!("contract-{tag}"));
    s.write("etc/slurm.conf", SITE);
    s
}

#[test]
fn issue30_a_loss_writes_nothing_and_exits_1() {
    let s = site("loss");
    let (code, out, err) = s.run(&["import", "slurm", "etc", "-o", "out.kdl"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(!s.path("out.kdl").exists(), "nothing is written");
    assert!(err.contains("GP750"), "{err}");
    assert!(
        err.contains("import slurm: 2 of 3 node(s) and 16 of 24 GPU(s) imported; left out: 1 node(s), 8 GPU(s)"),
        "{err}"
    );
    assert!(err.contains("node GPU_03 (8 GPUs): GP741"), "{err}");
}

#[test]
fn issue30_partial_writes_the_rest_with_what_is_missing_and_exits_2() {
    let s = site("partial");
    let (code, _, err) = s.run(&["import", "slurm", "etc", "--partial", "-o", "out.kdl"]);
    assert_eq!(code, 2, "{err}");
    let kdl = s.read("out.kdl");
    assert!(
        kdl.starts_with("// PARTIAL IMPORT (--partial): 1 node(s) and 8 GPU(s)"),
        "{kdl}"
    );
    assert!(
        kdl.contains("// left out: node GPU_03 (8 GPUs): GP741"),
        "{kdl}"
    );
    assert!(
        kdl.contains("nodes \"gpu[01-02]\" class=\"h100-x8\""),
        "{kdl}"
    );
    // What was written validates (the loss is said, not hidden in the file).
    s.write("site/cluster.kdl", &kdl);
    let (code, _, err) = s.run(&["validate", "site"]);
    assert_eq!(code, 0, "{err}\n{kdl}");
}

#[test]
fn issue30_json_report_lists_every_left_out_item() {
    let s = site("json");
    let (code, out, err) = s.run(&["import", "slurm", "etc", "--format", "json"]);
    assert_eq!(code, 1, "a loss is exit 1 in JSON too: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format_version"], 1);
    let r = &v["report"];
    assert_eq!(r["importer"], "slurm");
    assert_eq!(r["nodes"]["seen"], 3);
    assert_eq!(r["nodes"]["imported"], 2);
    assert_eq!(r["nodes"]["left_out"], 1);
    assert_eq!(r["gpus"]["left_out"], 8);
    assert_eq!(r["left_out"][0]["kind"], "node");
    assert_eq!(r["left_out"][0]["name"], "GPU_03");
    assert_eq!(r["left_out"][0]["code"], "GP741");
    assert_eq!(r["inputs"][0]["kind"], "slurm.conf");
}

#[test]
fn issue30_a_complete_import_exits_0_and_says_what_it_counted() {
    let s = Scratch::new("contract-complete");
    s.write("etc/slurm.conf", SITE.replace("GPU_03", "gpu03"));
    let (code, out, err) = s.run(&["import", "slurm", "etc"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    assert!(
        err.contains("import slurm: 3 of 3 node(s) and 24 of 24 GPU(s) imported"),
        "{err}"
    );
    assert!(!err.contains("left out"), "{err}");
}
