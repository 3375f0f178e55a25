//! Packed classes (`requests`, `fraction`, `gpus 0`): both solvers respect CPU, host
//! memory and GPU shares per node, the checker rejects plans that do not, and
//! `gpuplan import openb` turns the Alibaba trace's CSV lists into a plannable cluster.

use crate::common;

use crate::common::{gpuplan, load_text, plan};
use gpuplan::placement::{self, Placement};
use gpuplan::solve::SolverKind;
use gpuplan::source::SourceMap;
use std::collections::BTreeSet;

const CLUSTER: &str = r#"
cluster "pk"
gpu-model "t4x" memory="16GiB"
node-class "small" {
    cpu sockets=1 cores-per-socket=16
    memory "64GiB"
    gpus 2 model="t4x"
}
nodes "n-[1-3]" class="small"
team "t" burst=6
priority "p" value=10
inference "half" team="t" priority="p" replicas=5 {
    fraction "50%"
    requests cpu=4 memory="8GiB"
}
inference "whole" team="t" priority="p" replicas=2 {
    isolation "whole-gpu"
    gpus 1
    requests cpu=2 memory="4GiB"
}
inference "a-cpu" team="t" priority="p" replicas=4 {
    gpus 0
    requests cpu=8 memory="16GiB"
}
"#;

fn placed(p: &Placement, name: &str) -> u32 {
    p.workloads
        .iter()
        .find(|w| w.name == name)
        .map(|w| w.replicas_placed)
        .unwrap()
}

#[test]
fn both_solvers_respect_cpu_memory_and_gpu_shares() {
    let c = load_text(CLUSTER);
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let p = plan(&c, solver);
        // CPU per node: 16 cores; every placement lists its node.
        let mut cpu = std::collections::BTreeMap::<String, f64>::new();
        for w in &p.workloads {
            let per = match w.name.as_str() {
                "half" => 4.0,
                "whole" => 2.0,
                _ => 8.0,
            };
            for e in &w.packed {
                *cpu.entry(e.node.clone()).or_default() += per * e.replicas as f64;
            }
        }
        assert!(cpu.values().all(|v| *v <= 16.0), "{solver:?}: {cpu:?}");
    }
}

#[test]
fn the_ilp_leaves_cpu_only_pods_the_room_gpus_do_not_need() {
    // The CPU-only class `a-cpu` would take 32 of the 48 cores if placed first (as the
    // name-order greedy did until issue 31, starving the GPU classes). The ILP admits
    // GPU work first; so does the greedy baseline now (largest GPU share first), and
    // the CPU-only replicas get the cores left.
    let c = load_text(CLUSTER);
    let ilp = plan(&c, SolverKind::Ilp);
    let greedy = plan(&c, SolverKind::Greedy);
    assert_eq!(placed(&ilp, "half") + placed(&ilp, "whole"), 7);
    assert_eq!(placed(&greedy, "half") + placed(&greedy, "whole"), 7);
    assert!(ilp.summary.gpus_allocated >= greedy.summary.gpus_allocated);
    assert!(placed(&greedy, "a-cpu") < 4);
}

#[test]
fn a_class_without_cpu_on_its_nodes_is_limited_by_gpus_only() {
    let text = CLUSTER
        .replace("    cpu sockets=1 cores-per-socket=16\n", "")
        .replace("    memory \"64GiB\"\n", "");
    let c = load_text(&text);
    let p = plan(&c, SolverKind::Ilp);
    assert_eq!(placed(&p, "half"), 5);
    assert_eq!(placed(&p, "whole"), 2);
    assert_eq!(placed(&p, "a-cpu"), 4);
}

#[test]
fn the_checker_rejects_overfull_gpus_and_nodes() {
    let c = load_text(CLUSTER);
    let good = plan(&c, SolverKind::Ilp);
    let half = good
        .workloads
        .iter()
        .position(|w| w.name == "half")
        .unwrap();
    // Three halves on one GPU.
    let mut p = good.clone();
    let e = p.workloads[half].packed[0].clone();
    p.workloads[half].packed = vec![placement::Packed {
        replicas: 3,
        ..e.clone()
    }];
    p.workloads[half].replicas_placed = 3;
    p.workloads[half].unplaced = vec![placement::Unplaced {
        replicas: 2,
        reason: gpuplan::placement::UnplacedReason::Capacity,
        message: String::new(),
    }];
    // Typed violations: the packed-capacity invariant, about the node's declaration.
    let node_span = |name: &str| Some(c.nodes[c.node_index[name]].span);
    let v = placement::check(&c, &p);
    assert!(
        v.iter().any(|x| x.invariant == placement::Invariant::Packed
            && x.span == node_span(&e.node)
            && x.message.contains("150%")),
        "{v:#?}"
    );
    // Five CPU-only replicas (40 cores) on one 16-core node.
    let mut p = good.clone();
    let cpu = p.workloads.iter().position(|w| w.name == "a-cpu").unwrap();
    p.workloads[cpu].packed = vec![placement::Packed {
        node: "n-1".into(),
        gpus: vec![],
        replicas: 4,
    }];
    p.workloads[cpu].replicas_placed = 4;
    p.workloads[cpu].unplaced.clear();
    let v = placement::check(&c, &p);
    assert!(
        v.iter()
            .any(|x| x.invariant == placement::Invariant::Packed && x.span == node_span("n-1")),
        "{v:#?}"
    );
}

#[test]
fn fraction_and_gpus_zero_are_validated() {
    let mut sources = SourceMap::new();
    sources.add(
        "bad.kdl",
        CLUSTER
            .replace("fraction \"50%\"", "fraction \"150%\"")
            .replace("    requests cpu=8 memory=\"16GiB\"\n", ""),
    );
    let out = gpuplan::validate::validate(&sources);
    let msgs: Vec<String> = out
        .diagnostics
        .iter()
        .filter(|d| d.code == "GP025")
        .map(|d| d.message.clone())
        .collect();
    assert!(
        msgs.iter().any(|m| m.contains("above 0% and below 100%")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("gpus 0")), "{msgs:?}");
}

#[test]
fn import_openb_writes_a_cluster_that_plans() {
    let dir = std::env::temp_dir().join(format!("gpuplan-openb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let nodes = dir.join("nodes.csv");
    let pods = dir.join("pods.csv");
    std::fs::write(
        &nodes,
        "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,32000,131072,4,V100M16\nopenb-node-0001,16000,65536,2,T4\n",
    )
    .unwrap();
    std::fs::write(
        &pods,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n\
         p0,4000,16384,1,500,,LS\np1,8000,16384,2,1000,V100M16,LS\np2,2000,4096,0,0,,BE\n",
    )
    .unwrap();
    let out_dir = dir.join("kdl");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "import",
            "openb",
            "--nodes",
            nodes.to_str().unwrap(),
            "--pods",
            pods.to_str().unwrap(),
            "-o",
            out_dir.to_str().unwrap(),
        ];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| gpuplan(&a);
    let o = run(args(&["--seed", "7"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first = std::fs::read_to_string(out_dir.join("workloads.kdl")).unwrap();
    assert!(first.contains("fraction \"50%\""), "{first}");
    assert!(first.contains("models \"openb-v100m16\""), "{first}");
    let o = gpuplan(&["plan", out_dir.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let alloc = v
        .pointer("/summary/allocation_pct")
        .or_else(|| v.pointer("/placement/summary/allocation_pct"))
        .and_then(|x| x.as_f64())
        .unwrap();
    assert!(alloc > 0.0);
    // Same seed, same files; another seed may differ but stays valid.
    let o = run(args(&["--seed", "7"]));
    assert!(o.status.success());
    assert_eq!(
        first,
        std::fs::read_to_string(out_dir.join("workloads.kdl")).unwrap()
    );
    // One class per pod, in arrival order.
    let o = run(args(&["--seed", "7", "--per-pod"]));
    assert!(o.status.success());
    let per = std::fs::read_to_string(out_dir.join("workloads.kdl")).unwrap();
    assert!(per.contains("inference \"pod-000001\""), "{per}");
    // A bad row is a diagnostic, not a panic.
    std::fs::write(
        &pods,
        "cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,10,3,500\n",
    )
    .unwrap();
    let o = run(args(&[]));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("GP705") && err.contains("line 2"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn issue29_import_openb_with_type_constrained_pods_validates_and_plans() {
    let dir = common::Scratch::new("issue29-openb");
    dir.write(
        "nodes.csv",
        "sn,cpu_milli,memory_mib,gpu,model\n\
         openb-node-0000,192000,1572864,8,V100M16\n\
         openb-node-0001,192000,1572864,8,V100M32\n\
         openb-node-0002,96000,786432,2,P100\n\
         openb-node-0003,96000,786432,2,T4\n\
         openb-node-0004,96000,786432,1,A10\n\
         openb-node-0005,192000,1572864,8,G2\n\
         openb-node-0006,192000,1572864,8,G3\n",
    );
    // Seven models (the longest spec of the trace), six, two, and one written twice; CPU
    // and memory large enough for the readable names to pass 63 characters.
    dir.write(
        "pods.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
         p0,128000,1048576,1,1000,V100M16|V100M32|P100|T4|A10|G2|G3,LS,Running,0,1,0\n\
         p1,128000,1048576,1,1000,V100M16|V100M32|P100|T4|A10|G2,LS,Running,0,1,0\n\
         p2,128000,1048576,1,250,V100M16|V100M32|P100|T4|A10|G2|G3,LS,Running,0,1,0\n\
         p3,16000,65536,2,1000,V100M16|V100M32,LS,Running,0,1,0\n\
         p4,8000,32768,1,1000,T4|T4,BE,Running,0,1,0\n\
         p5,8000,32768,0,0,,BE,Running,0,1,0\n",
    );
    for extra in [&[][..], &["--per-pod"][..]] {
        let mut args = vec![
            "import",
            "openb",
            "--nodes",
            "nodes.csv",
            "--pods",
            "pods.csv",
            "-o",
            "ob",
            "--seed",
            "3",
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = dir.run(&args);
        assert_eq!(code, 0, "{extra:?}: {err}");
        let w = dir.read("ob/workloads.kdl");
        let names: Vec<&str> = w
            .lines()
            .filter_map(|l| l.strip_prefix("inference \""))
            .filter_map(|l| l.split('"').next())
            .collect();
        assert!(!names.is_empty(), "{w}");
        let unique: BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{extra:?}: {names:?}");
        for n in &names {
            assert!(gpuplan::names::is_dns_label(n), "{extra:?}: {n}");
        }
        for l in w.lines().filter(|l| l.trim_start().starts_with("models ")) {
            let models: Vec<&str> = l.split_whitespace().skip(1).collect();
            let once: BTreeSet<&str> = models.iter().copied().collect();
            assert_eq!(once.len(), models.len(), "{extra:?}: {l}");
        }
        if extra.is_empty() {
            assert!(
                w.contains("models \"openb-a10\" \"openb-g2\" \"openb-g3\" \"openb-p100\" \"openb-t4\" \"openb-v100m16\" \"openb-v100m32\""),
                "{w}"
            );
        }
        let (code, out, err) = dir.run(&["validate", "ob"]);
        assert_eq!(code, 0, "{extra:?}: {out}{err}");
        let (code, out, err) = dir.run(&["plan", "ob", "--quiet"]);
        assert!(code == 0 || code == 2, "{extra:?}: {out}{err}");
        assert!(out.contains("Plan: "), "{extra:?}: {out}");
    }
}

/// `gpuplan import openb` of the lists `nodes` and `pods` into `ob` in `dir`, seed 42,
/// 100% load (the benchmark's sample, docs/benchmarks.md).
fn import_openb(dir: &common::Scratch, nodes: &std::path::Path, pods: &std::path::Path) {
    import_openb_seed(dir, nodes, pods, "42");
}

/// `gpuplan import openb` of a node and a pod list at 100% load with `seed`, into `ob`.
fn import_openb_seed(
    dir: &common::Scratch,
    nodes: &std::path::Path,
    pods: &std::path::Path,
    seed: &str,
) {
    let (code, _, err) = dir.run(&[
        "import",
        "openb",
        "--nodes",
        nodes.to_str().unwrap(),
        "--pods",
        pods.to_str().unwrap(),
        "--load",
        "1.0",
        "--seed",
        seed,
        "-o",
        "ob",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// Issue 31: the openb default list (`../shared/bench/openb`, seed 42, 100% load)
/// imports into a cluster that validates: the trace's shares above half a GPU are no
/// GP048 error (the import declared `scheduler "kueue"` from issue 29 on, and every real
/// list failed to plan). And the greedy baseline (first-fit decreasing, best-fit node
/// choice) leaves less than 10% of the GPUs unallocated: 7.69% measured, 27% with the
/// name-order first fit it replaced, which this test fails.
#[test]
fn issue31_the_openb_default_list_plans_and_greedy_packs_it() {
    let b = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/openb");
    if !b.join("openb_pod_list_default.csv").is_file() {
        common::missing("../shared/bench/openb is missing (CI needs ../shared beside the clone)");
        return;
    }
    let dir = common::Scratch::new("issue31-openb");
    import_openb(
        &dir,
        &b.join("openb_node_list_gpu_node.csv"),
        &b.join("openb_pod_list_default.csv"),
    );
    let (code, _, err) = dir.run(&["validate", "ob"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("GP048"), "{err}");
    let (code, out, err) = dir.run(&["plan", "ob", "--solver", "greedy", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let alloc = v
        .pointer("/placement/summary/allocation_pct")
        .and_then(|x| x.as_f64())
        .unwrap();
    assert!(alloc > 90.0, "greedy allocates {alloc}%");
}

/// Issue 31: on the trace's gpuspec33 list (a third of the pods allowed on one to three GPU
/// models; tests/fixtures/openb/openb_pod_list_gpuspec33.csv, seed 42, 100% load) the ILP
/// leaves at most 0.3 points more of the cluster's GPUs unallocated than its own bound
/// allows: 0.23 measured (0.25 before the support neighbourhood); 0.31 before the dive's
/// local search (`solve/ilp/improve.rs`), which this test fails. The checker verifies the
/// plan (`plan` exits 0).
#[test]
fn issue31_gpuspec33_plans_within_a_third_of_a_point_of_its_bound() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let nodes = root.join("../shared/bench/openb/openb_node_list_gpu_node.csv");
    if !nodes.is_file() {
        common::missing("../shared/bench/openb is missing (CI needs ../shared beside the clone)");
        return;
    }
    let pods = root.join("tests/fixtures/openb/openb_pod_list_gpuspec33.csv");
    let dir = common::Scratch::new("issue31-gpuspec33");
    import_openb(&dir, &nodes, &pods);
    let (code, out, err) = dir.run(&["plan", "ob", "--quiet", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let num = |p: &str| v.pointer(p).and_then(|x| x.as_f64()).unwrap();
    let (admitted, bound) = (num("/solver/objective"), num("/solver/bound"));
    let total = num("/placement/summary/gpus_total");
    let points = 100.0 * (bound - admitted) / total;
    assert!(
        (0.0..=0.3).contains(&points),
        "{admitted} admitted, bound {bound} of {total} GPUs: {points:.3} points"
    );
}

/// Issue 31: on the shared gpushare80 list with seed 43 the dive lands 2 GPUs short of
/// the admission gap. The support neighbourhood (`solve/ilp/neighbourhood.rs`: the
/// integer program over the columns the LP or the dive uses) lands inside it and is the
/// stage's answer, where the whole program took 2.6 s of root cuts and sub-MIPs. Fails
/// when the stage does not solve the neighbourhood (no such phase) or when the
/// neighbourhood's solution is not what the plan admits.
#[test]
fn issue31_the_support_neighbourhood_answers_a_dive_short_of_the_gap() {
    let b = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/openb");
    if !b.join("openb_pod_list_gpushare80.csv").is_file() {
        common::missing("../shared/bench/openb is missing (CI needs ../shared beside the clone)");
        return;
    }
    let dir = common::Scratch::new("issue31-support");
    import_openb_seed(
        &dir,
        &b.join("openb_node_list_gpu_node.csv"),
        &b.join("openb_pod_list_gpushare80.csv"),
        "43",
    );
    let (code, out, err) = dir.run_env(
        &["plan", "ob", "--quiet", "--format", "json"],
        &[("GPUPLAN_TIMINGS", "1")],
    );
    assert_eq!(code, 0, "{err}");
    // "timing   stage 1 (priority 0) dive, 5663.72 admitted     0.192 s"
    let admitted = |phase: &str| -> Option<f64> {
        err.lines()
            .find_map(|l| {
                l.split_once(&format!("{phase}, "))?
                    .1
                    .split_once(" admitted")
            })
            .map(|(v, _)| v.trim().parse::<f64>().unwrap())
    };
    let dive = admitted(") dive").expect("the stage dives");
    let support = admitted("support neighbourhood").unwrap_or_else(|| panic!("{err}"));
    assert!(support > dive, "{support} after a dive of {dive}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let num = |p: &str| v.pointer(p).and_then(|x| x.as_f64()).unwrap();
    let (objective, bound) = (num("/solver/objective"), num("/solver/bound"));
    assert!((objective - support).abs() < 0.01, "{objective} {support}");
    // Within the default admission gap (0.2%) of the bound.
    assert!(bound - objective <= 0.002 * bound, "{objective} of {bound}");
}
