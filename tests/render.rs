//! `gpuplan render`: golden files (insta) for every target on every example, byte
//! determinism, the cross-target consistency test (each team's guarantee and ceiling,
//! each priority's value and order, each pool's nodes and each training gang's size are
//! the same numbers in every target), and the CLI's atomic out-dir handling.
//!
//! Review snapshot changes with `cargo insta review` (or `INSTA_UPDATE=always`).
//! gpuplan's version in the files' headers is filtered out (`gpuplan [version]`,
//! `common::snapshot_settings`).

mod common;

use common::gpuplan;
use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::render::{self, Files, Target};
use gpuplan::solve::SolverKind;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Every example: its name (`small-lab`) and its model with the checked ILP plan, as
/// `gpuplan render` plans it.
fn examples() -> Vec<(String, Cluster, Placement)> {
    common::examples()
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let (c, p) = plan(&dir);
            (name, c, p)
        })
        .collect()
}

fn plan(dir: &Path) -> (Cluster, Placement) {
    let c = common::load_dir(dir);
    let p = common::plan(&c, SolverKind::Ilp);
    (c, p)
}

fn render_all(c: &Cluster, p: &Placement) -> Files {
    render::render(c, p, &Target::ALL, &render::Options::default())
        .expect("renders")
        .files
}

/// All files of one target folder, each under a `=== path` header.
fn bundle(files: &Files, dir: &str) -> String {
    let mut out = String::new();
    for (path, text) in files
        .iter()
        .filter(|(p, _)| p.starts_with(&format!("{dir}/")))
    {
        out.push_str(&format!("=== {path}\n{text}"));
    }
    out
}

#[test]
fn golden_every_target_on_every_example() {
    let _version = common::snapshot_settings().bind_to_scope();
    for (ex, c, p) in examples() {
        let files = render_all(&c, &p);
        for t in Target::ALL {
            let text = bundle(&files, t.dir());
            assert!(!text.is_empty(), "{ex}: no {} files", t.dir());
            insta::assert_snapshot!(format!("{ex}-{}", t.dir()), text);
        }
        // Same input, byte-identical output.
        assert_eq!(
            files,
            render_all(&c, &p),
            "{ex}: render is not deterministic"
        );
    }
}

fn docs(files: &Files, prefix: &str) -> Vec<Value> {
    files
        .iter()
        .filter(|(p, _)| p.starts_with(prefix) && p.ends_with(".yaml"))
        .flat_map(|(p, text)| {
            serde_yaml::Deserializer::from_str(text)
                .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{p}: {e}")))
                .filter(|v| !v.is_null())
                .collect::<Vec<_>>()
        })
        .collect()
}

use serde::Deserialize;

fn kind<'a>(v: &'a [Value], k: &str) -> Vec<&'a Value> {
    v.iter().filter(|d| d["kind"].as_str() == Some(k)).collect()
}

fn num(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap(),
        Value::String(s) => s.parse().unwrap(),
        other => panic!("not a number: {other:?}"),
    }
}

fn name(v: &Value) -> String {
    v["metadata"]["name"].as_str().unwrap().to_string()
}

/// `key=value` fields of the line that starts with `prefix` and contains `needle`.
fn slurm_fields(text: &str, prefix: &str) -> Vec<BTreeMap<String, String>> {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn expand(ranges: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // split on commas outside brackets
    let (mut depth, mut cur) = (0, String::new());
    for ch in ranges.chars().chain(std::iter::once(',')) {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if ch == ',' && depth == 0 {
            out.extend(gpuplan::units::expand_names(&cur).unwrap());
            cur.clear();
        } else {
            cur.push(ch);
        }
    }
    out
}

/// One example's plan and rendered files, the YAML documents of each target parsed.
struct Targets<'a> {
    ex: &'a str,
    c: &'a Cluster,
    p: &'a Placement,
    files: &'a Files,
    k8s: Vec<Value>,
    volcano: Vec<Value>,
    kueue: Vec<Value>,
}

impl<'a> Targets<'a> {
    fn new(ex: &'a str, c: &'a Cluster, p: &'a Placement, files: &'a Files) -> Self {
        Targets {
            ex,
            c,
            p,
            files,
            k8s: docs(files, "k8s/"),
            volcano: docs(files, "volcano/"),
            kueue: docs(files, "kueue/"),
        }
    }
}

#[test]
fn every_target_states_the_same_numbers() {
    for (ex, c, p) in examples() {
        let files = render_all(&c, &p);
        let t = Targets::new(&ex, &c, &p, &files);
        teams_agree(&t);
        priorities_agree(&t);
        pools_agree(&t);
        gangs_agree(&t);
    }
}

/// Teams: guarantee and ceiling.
fn teams_agree(x: &Targets) {
    let Targets {
        ex,
        c,
        p,
        files,
        k8s,
        volcano,
        kueue,
    } = x;
    let sacct = &files["slurm/sacctmgr.sh"];
    for t in &p.teams {
        let (g, ceil) = (t.guarantee as i64, t.ceiling as i64);
        let rq = kind(k8s, "ResourceQuota")
            .into_iter()
            .find(|d| d["metadata"]["namespace"].as_str() == Some(&t.name))
            .unwrap_or_else(|| panic!("{ex}: no quota for {}", t.name));
        assert_eq!(
            num(&rq["spec"]["hard"]["requests.nvidia.com/gpu"]),
            ceil,
            "{ex} {} k8s",
            t.name
        );
        let q = kind(volcano, "Queue")
            .into_iter()
            .find(|d| name(d) == t.name)
            .unwrap();
        assert_eq!(
            num(&q["spec"]["capability"]["nvidia.com/gpu"]),
            ceil,
            "{ex} {} volcano",
            t.name
        );
        assert_eq!(
            num(&q["spec"]["deserved"]["nvidia.com/gpu"]),
            g,
            "{ex} {} volcano",
            t.name
        );
        assert_eq!(
            num(&q["spec"]["guarantee"]["resource"]["nvidia.com/gpu"]),
            g
        );
        let cq = kind(kueue, "ClusterQueue")
            .into_iter()
            .find(|d| name(d) == t.name)
            .unwrap();
        let mut nominal = 0;
        for grp in cq["spec"]["resourceGroups"].as_sequence().unwrap() {
            for fl in grp["flavors"].as_sequence().unwrap() {
                for r in fl["resources"].as_sequence().unwrap() {
                    if r["name"].as_str() == Some("nvidia.com/gpu") {
                        nominal += num(&r["nominalQuota"]);
                        assert_eq!(num(&r["borrowingLimit"]), ceil - g, "{ex} {} kueue", t.name);
                    }
                }
            }
        }
        // Declared quotas that cover no whole-GPU pool (MIG / shared pools, models only
        // found there) are not whole-GPU nominal quota.
        let whole: Vec<(String, Option<String>)> = p
            .pools
            .iter()
            .filter(|np| np.mode == gpuplan::placement::PoolMode::WholeGpu)
            .map(|np| {
                let n = c.node(&np.node).unwrap();
                let m = n
                    .gpus
                    .iter()
                    .find_map(|g| g.model.clone())
                    .unwrap_or_default();
                (m, np.pool.clone())
            })
            .collect();
        let elsewhere: i64 = c.teams[&t.name]
            .quotas
            .iter()
            .filter(|q| !whole.iter().any(|(m, pool)| q.covers(m, pool.as_deref())))
            .map(|q| q.guarantee as i64)
            .sum();
        assert_eq!(nominal, g - elsewhere, "{ex} {} kueue nominal", t.name);
        assert!(
            sacct.contains(&format!(
                "where name={} set Fairshare={} GrpTRES=gres/gpu={ceil}",
                t.name,
                g.max(1)
            )),
            "{ex} {} slurm",
            t.name
        );
    }
}

/// Priorities: same value, same order.
fn priorities_agree(x: &Targets) {
    let Targets {
        ex,
        c,
        files,
        k8s,
        kueue,
        ..
    } = x;
    let sacct = &files["slurm/sacctmgr.sh"];
    let mut model: Vec<(i64, String)> = c
        .priorities
        .iter()
        .map(|p| (p.value, p.name.clone()))
        .collect();
    model.sort_by(|a, b| b.cmp(a));
    for (targets, k) in [(k8s, "PriorityClass"), (kueue, "WorkloadPriorityClass")] {
        let mut got: Vec<(i64, String)> = kind(targets, k)
            .iter()
            .map(|d| (num(&d["value"]), name(d)))
            .collect();
        got.sort_by(|a, b| b.cmp(a));
        assert_eq!(got, model, "{ex} {k}");
    }
    for (v, n) in &model {
        assert!(
            sacct.contains(&format!("where name={n} set Priority={v} ")),
            "{ex} qos {n}"
        );
    }
}

/// Pools: the same nodes in the plan, the node labels and the Slurm partitions.
fn pools_agree(x: &Targets) {
    let Targets {
        ex,
        p,
        files,
        k8s,
        kueue,
        ..
    } = x;
    let conf = &files["slurm/slurm.conf"];
    let mut plan_pools: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for np in &p.pools {
        let pool = np
            .pool
            .clone()
            .unwrap_or_else(|| np.mode.as_str().to_string());
        plan_pools.entry(pool).or_default().insert(np.node.clone());
    }
    let mut labelled: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for n in kind(k8s, "Node") {
        let pool = n["metadata"]["labels"]["gpuplan.io/pool"]
            .as_str()
            .unwrap()
            .to_string();
        labelled.entry(pool).or_default().insert(name(n));
    }
    let partitions: BTreeMap<String, BTreeSet<String>> = slurm_fields(conf, "PartitionName=")
        .into_iter()
        .map(|f| (f["PartitionName"].clone(), expand(&f["Nodes"])))
        .collect();
    assert_eq!(labelled, plan_pools, "{ex} k8s node labels");
    assert_eq!(partitions, plan_pools, "{ex} slurm partitions");
    let flavor_pools: BTreeSet<String> = kind(kueue, "ResourceFlavor")
        .iter()
        .map(|f| {
            f["spec"]["nodeLabels"]["gpuplan.io/pool"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        flavor_pools,
        plan_pools.keys().cloned().collect(),
        "{ex} kueue flavors"
    );
}

/// Training gangs: pods and GPUs per pod.
fn gangs_agree(x: &Targets) {
    let Targets {
        ex,
        p,
        files,
        k8s,
        volcano,
        kueue,
        ..
    } = x;
    for w in p.workloads.iter().filter(|w| w.kind == "training") {
        let g = &w.gangs[0];
        let (pods, per_pod) = (g.nodes.len() as i64, g.nodes[0].gpus.len() as i64);
        let vj = kind(volcano, "Job")
            .into_iter()
            .find(|d| name(d) == w.name)
            .unwrap();
        assert_eq!(
            num(&vj["spec"]["minAvailable"]),
            pods,
            "{ex} {} volcano",
            w.name
        );
        assert_eq!(num(&vj["spec"]["tasks"][0]["replicas"]), pods);
        let lim =
            &vj["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"];
        assert_eq!(
            num(&lim["nvidia.com/gpu"]),
            per_pod,
            "{ex} {} volcano gpus",
            w.name
        );
        for (docs, what) in [(k8s, "k8s"), (kueue, "kueue")] {
            let j = kind(docs, "Job")
                .into_iter()
                .find(|d| name(d) == w.name && d["apiVersion"].as_str() == Some("batch/v1"))
                .unwrap_or_else(|| panic!("{ex} {} {what}", w.name));
            assert_eq!(
                num(&j["spec"]["parallelism"]),
                pods,
                "{ex} {} {what}",
                w.name
            );
            let lim = &j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
            assert_eq!(
                num(&lim["nvidia.com/gpu"]),
                per_pod,
                "{ex} {} {what}",
                w.name
            );
        }
        let sb = &files[&format!("slurm/examples/{}.sbatch", w.name)];
        assert!(
            sb.contains(&format!("#SBATCH --nodes={pods}\n")),
            "{ex} {} slurm",
            w.name
        );
        assert!(
            sb.contains(&format!(":{per_pod}\n")),
            "{ex} {} slurm gres",
            w.name
        );
    }
}

#[test]
fn slurm_block_topology_only_from_24_05() {
    let (c, p) = plan(Path::new("examples/gb200-nvl72"));
    let files = render_all(&c, &p);
    assert!(files["slurm/slurm.conf"].contains("TopologyPlugin=topology/block"));
    assert!(files["slurm/topology.conf"].contains("BlockSizes=18"));
    let old = render::render(
        &c,
        &p,
        &[Target::Slurm],
        &render::Options {
            slurm_version: Some(vec![22, 5]),
            ..Default::default()
        },
    )
    .unwrap()
    .files;
    assert!(old["slurm/slurm.conf"].contains("TopologyPlugin=topology/tree"));
    assert!(!old["slurm/topology.conf"].contains("Block"));
    // 23.11 (superpod-h100) stays on the tree plugin.
    let (c, p) = plan(Path::new("examples/superpod-h100"));
    assert!(render_all(&c, &p)["slurm/slurm.conf"].contains("TopologyPlugin=topology/tree"));
}

#[test]
fn cli_writes_and_replaces_its_own_folder_only() {
    let base = std::env::temp_dir().join(format!("gpuplan-render-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let out = base.join("out");
    let o = out.to_str().unwrap();
    let r = gpuplan(&[
        "render",
        "examples/small-lab",
        "--target",
        "slurm,k8s",
        "--out-dir",
        o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(out.join("slurm/slurm.conf").is_file());
    assert!(out.join("k8s/nodes.yaml").is_file());
    assert!(!out.join("volcano").exists());
    // Re-rendering replaces the folder as a whole: stale files disappear.
    std::fs::write(out.join("stale.txt"), "x").unwrap();
    let r = gpuplan(&[
        "render",
        "examples/small-lab",
        "--target",
        "volcano",
        "--out-dir",
        o,
    ]);
    assert!(r.status.success());
    assert!(!out.join("stale.txt").exists() && !out.join("slurm").exists());
    assert!(out.join("volcano/queues.yaml").is_file());
    // No temporary folders are left beside it.
    let names: Vec<String> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["out".to_string()]);
    // A folder gpuplan did not write is never replaced.
    let foreign = base.join("mine");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "keep").unwrap();
    let r = gpuplan(&[
        "render",
        "examples/small-lab",
        "--out-dir",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("GP911"));
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "keep"
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn every_rendered_script_parses_as_sh() {
    for (ex, c, p) in examples() {
        for (path, text) in render_all(&c, &p)
            .iter()
            .filter(|(p, _)| p.ends_with(".sh"))
        {
            let mut child = Command::new("sh")
                .arg("-n")
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            assert!(
                child.wait().unwrap().success(),
                "{ex}: {path} is not valid sh"
            );
        }
    }
}

/// The mig-parted and device-plugin configs have the upstream shape (fields as in
/// `../shared/reference/k8s-nvidia.md`), and say what the plan says for every node.
#[test]
fn mig_configs_follow_the_upstream_formats_and_the_plan() {
    for (ex, c, p) in examples() {
        let files = render_all(&c, &p);
        let mp: Value = serde_yaml::from_str(&files["mig/mig-parted.yaml"]).unwrap();
        assert_eq!(mp["version"].as_str(), Some("v1"), "{ex}");
        let top: BTreeSet<&str> = mp
            .as_mapping()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(top, BTreeSet::from(["version", "mig-configs"]));
        let configs = mp["mig-configs"].as_mapping().unwrap();
        // config name -> gpu -> sorted profiles
        let mut layouts: BTreeMap<String, BTreeMap<u64, Vec<String>>> = BTreeMap::new();
        for (name, specs) in configs {
            let name = name.as_str().unwrap().to_string();
            let specs = specs.as_sequence().unwrap();
            assert!(!specs.is_empty(), "{ex} {name}");
            let mut seen = BTreeSet::new();
            for s in specs {
                for k in s.as_mapping().unwrap().keys() {
                    let k = k.as_str().unwrap();
                    assert!(
                        ["devices", "mig-enabled", "mig-devices", "device-filter"].contains(&k),
                        "{ex} {name}: {k}"
                    );
                }
                let enabled = s["mig-enabled"].as_bool().expect("mig-enabled is a bool");
                let devices: Vec<u64> = match &s["devices"] {
                    Value::String(a) if a == "all" => Vec::new(),
                    Value::Sequence(v) => v.iter().map(|x| x.as_u64().unwrap()).collect(),
                    other => panic!("{ex} {name}: devices {other:?}"),
                };
                for d in &devices {
                    assert!(seen.insert(*d), "{ex} {name}: GPU {d} in two specs");
                }
                if enabled {
                    let md = s["mig-devices"].as_mapping().expect("mig-devices");
                    let mut profiles = Vec::new();
                    for (prof, n) in md {
                        let n = n.as_u64().unwrap();
                        assert!(n > 0);
                        profiles.extend(std::iter::repeat_n(
                            prof.as_str().unwrap().to_string(),
                            n as usize,
                        ));
                    }
                    profiles.sort();
                    for d in devices {
                        layouts
                            .entry(name.clone())
                            .or_default()
                            .insert(d, profiles.clone());
                    }
                } else {
                    assert!(s.get("mig-devices").is_none(), "{ex} {name}");
                }
            }
        }
        // Every node's label names a config whose layout is the plan's.
        let k8s = docs(&files, "k8s/");
        for n in kind(&k8s, "Node") {
            let node = name(n);
            let mut want: BTreeMap<u64, Vec<String>> = BTreeMap::new();
            for l in p.mig_layouts.iter().filter(|l| l.node == node) {
                let mut v = l.profiles.clone();
                v.sort();
                want.insert(l.gpu as u64, v);
            }
            let label = n["metadata"]["labels"]["nvidia.com/mig.config"].as_str();
            match label {
                Some(cfg) => {
                    assert!(configs.contains_key(cfg), "{ex} {node}: {cfg}");
                    assert_eq!(
                        layouts.get(cfg).cloned().unwrap_or_default(),
                        want,
                        "{ex} {node}"
                    );
                }
                None => assert!(want.is_empty(), "{ex} {node} has MIG but no label"),
            }
            // Device-plugin config: the label names a rendered config.
            let dp = n["metadata"]["labels"]["nvidia.com/device-plugin.config"]
                .as_str()
                .unwrap();
            let text = &files[&format!("mig/device-plugin/{dp}.yaml")];
            let v: Value = serde_yaml::from_str(text).unwrap();
            assert_eq!(v["version"].as_str(), Some("v1"));
            let strategy = v["flags"]["migStrategy"].as_str().unwrap();
            assert!(["none", "single", "mixed"].contains(&strategy));
            assert_eq!(
                strategy == "mixed",
                !want.is_empty() || dp == "mig-mixed",
                "{ex} {node}"
            );
            if let Some(sh) = v.get("sharing") {
                let m = sh.as_mapping().unwrap();
                assert_eq!(m.len(), 1, "time-slicing and MPS are exclusive");
                let (_, cfg) = m.iter().next().unwrap();
                for r in cfg["resources"].as_sequence().unwrap() {
                    assert_eq!(r["name"].as_str(), Some("nvidia.com/gpu"));
                    assert!(r["replicas"].as_u64().unwrap() > 1);
                }
                assert_eq!(strategy, "none", "MPS/time-slicing not with MIG here");
            }
        }
    }
}
