//! Slurm 25.05's topology.yaml (issue 34) on a mixed GB200 NVL72 + DGX H100 cluster
//! that one Slurm owns (tests/fixtures/slurm-nvl72-h100): a `block` topology of the
//! NVL72 racks and a `tree` topology of the switches, each partition naming its own;
//! at 22.05 the same cluster renders topology.conf and no partition `Topology=`.
//! The realizability checker reads topology.yaml as slurmctld does.

use crate::common;

use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::render::{self, Files, Target};
use gpuplan::solve::SolverKind;
use serde_yaml::Value;
use std::collections::BTreeMap;

const FIXTURE: &str = "tests/fixtures/slurm-nvl72-h100";

fn planned() -> (Cluster, Placement) {
    let c = common::load_dir(FIXTURE);
    let p = common::plan(&c, SolverKind::Ilp);
    (c, p)
}

fn slurm(c: &Cluster, p: &Placement, version: Option<Vec<u32>>) -> Files {
    let opts = render::Options {
        slurm_version: version,
        ..Default::default()
    };
    render::render(c, p, &[Target::Slurm], &opts)
        .expect("renders")
        .files
}

/// `PartitionName` -> its `Topology=` (None when it names none).
fn partitions(conf: &str) -> BTreeMap<String, Option<String>> {
    conf.lines()
        .filter(|l| l.starts_with("PartitionName="))
        .map(|l| {
            let kv: BTreeMap<&str, &str> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            (
                kv["PartitionName"].to_string(),
                kv.get("Topology").map(|t| t.to_string()),
            )
        })
        .collect()
}

#[test]
fn slurm_25_05_renders_a_block_and_a_tree_topology_named_by_the_partitions() {
    let (c, p) = planned();
    let files = slurm(&c, &p, None);
    assert!(!files.contains_key("slurm/topology.conf"));
    let conf = &files["slurm/slurm.conf"];
    assert!(
        !conf.contains("TopologyPlugin="),
        "Slurm ignores it beside topology.yaml"
    );
    let yaml: Value = serde_yaml::from_str(&files["slurm/topology.yaml"]).unwrap();
    let list = yaml.as_sequence().unwrap();
    let by_name: BTreeMap<&str, &Value> = list
        .iter()
        .map(|t| (t["topology"].as_str().unwrap(), t))
        .collect();
    let tree = by_name["fabric"];
    assert_eq!(tree["cluster_default"].as_bool(), Some(true));
    let leaves: Vec<(&str, &str)> = tree["tree"]["switches"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| Some((s["switch"].as_str()?, s["nodes"].as_str()?)))
        .collect();
    assert!(
        leaves.contains(&("ib-leaf-h1", "h100-[01-04]")),
        "{leaves:?}"
    );
    let block = by_name["nvlink"];
    assert_eq!(block["cluster_default"].as_bool(), Some(false));
    assert_eq!(block["block"]["block_sizes"][0].as_u64(), Some(18));
    let blocks: Vec<(&str, &str)> = block["block"]["blocks"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|b| (b["block"].as_str().unwrap(), b["nodes"].as_str().unwrap()))
        .collect();
    assert_eq!(
        blocks,
        [("nvl72-r1", "gb-r1-[01-18]"), ("nvl72-r2", "gb-r2-[01-18]")]
    );
    // Every partition names a topology the file defines: the racks the block one.
    let parts = partitions(conf);
    assert_eq!(parts["nvl72"].as_deref(), Some("nvlink"));
    assert_eq!(parts["h100"].as_deref(), Some("fabric"));
    for t in parts.values().flatten() {
        assert!(
            by_name.contains_key(t.as_str()),
            "Topology={t} is not defined"
        );
    }
    // Rack-bound gangs ask a segment of their block, leaf-bound ones one switch.
    for (path, text) in files.iter().filter(|(p, _)| p.ends_with(".sbatch")) {
        let moe = path.contains("/moe");
        assert_eq!(text.contains("#SBATCH --segment=18\n"), moe, "{path}");
        assert_eq!(text.contains("#SBATCH --switches=1\n"), !moe, "{path}");
    }
    let _s = common::snapshot_settings().bind_to_scope();
    let mut bundle = String::new();
    for (path, text) in &files {
        bundle.push_str(&format!("=== {path}\n{text}"));
    }
    insta::assert_snapshot!("slurm-nvl72-h100-25.05", bundle);
}

#[test]
fn slurm_22_05_keeps_topology_conf_and_no_partition_topology() {
    let (c, p) = planned();
    let files = slurm(&c, &p, Some(vec![22, 5]));
    assert!(!files.contains_key("slurm/topology.yaml"));
    let conf = &files["slurm/slurm.conf"];
    assert!(conf.contains("TopologyPlugin=topology/tree\n"));
    assert!(
        !conf.contains("Topology="),
        "22.05 has no partition Topology="
    );
    assert!(files["slurm/topology.conf"].contains("SwitchName=ib-leaf-r1 Nodes=gb-r1-[01-18]"));
    // 24.05 and 24.11 keep topology.conf with topology/block, as before.
    let block = slurm(&c, &p, Some(vec![24, 11]));
    assert!(block["slurm/slurm.conf"].contains("TopologyPlugin=topology/block\n"));
    assert!(!block.contains_key("slurm/topology.yaml"));
}

#[test]
fn check_render_reads_topology_yaml_and_catches_a_partition_on_the_wrong_topology() {
    let (c, p) = planned();
    let mut files = slurm(&c, &p, None);
    let r = gpuplan::realize::check(&files, &c, &p);
    assert!(r.realizable, "{:#?}", r.violations);
    // The racks' partition on the tree: `--segment` means nothing there.
    let conf = files.get_mut("slurm/slurm.conf").unwrap();
    *conf = conf.replace("Topology=nvlink", "Topology=fabric");
    let r = gpuplan::realize::check(&files, &c, &p);
    assert!(
        r.violations
            .iter()
            .any(|v| v.message.contains("tree topology `fabric`")),
        "{:#?}",
        r.violations
    );
    // A topology the file does not define.
    let conf = files.get_mut("slurm/slurm.conf").unwrap();
    *conf = conf.replace("Topology=fabric", "Topology=torus");
    let r = gpuplan::realize::check(&files, &c, &p);
    assert!(
        r.violations
            .iter()
            .any(|v| v.message.contains("names topology `torus`")),
        "{:#?}",
        r.violations
    );
}
