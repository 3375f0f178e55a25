//! `gpuplan import slurm`: published Slurm configurations (tests/fixtures/slurm, sources
//! in SOURCES.md) import into KDL that validates and plans (snapshots); rendering an
//! example to Slurm and importing it back gives the same hardware model; output does
//! not depend on the order of the lines; bad input gives coded diagnostics with spans.

use crate::common;

use crate::common::Scratch;
use gpuplan::model::Cluster;
use gpuplan::source::SourceMap;
use std::collections::BTreeMap;
use std::path::Path;

fn import(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["import", "slurm"];
    all.extend_from_slice(args);
    let o = common::gpuplan(&all);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn model_of(text: &str) -> Cluster {
    let mut sources = SourceMap::new();
    sources.add("imported.kdl", text);
    let o = gpuplan::validate::validate(&sources);
    assert!(!o.has_errors(), "{:#?}\n{text}", o.diagnostics);
    o.model.expect("a model")
}

fn validates_and_plans(tag: &str, kdl: &str) {
    let s = Scratch::new(&format!("slurm-{tag}"));
    std::fs::write(s.path("cluster.kdl"), kdl).unwrap();
    let (code, _, err) = s.run(&["validate", "cluster.kdl"]);
    assert_eq!(code, 0, "{tag}: {err}");
    let (code, out, err) = s.run(&["plan", "cluster.kdl"]);
    assert_eq!(code, 0, "{tag}: {err}");
    assert!(out.contains("Plan: "), "{tag}");
    let (code, out, _) = s.run(&["fmt", "--check", "cluster.kdl"]);
    assert_eq!(
        (code, out.as_str()),
        (0, ""),
        "{tag}: imported KDL is formatted"
    );
}

#[test]
fn published_configurations_import_validate_and_plan() {
    for f in ["rdgpu-mig", "azure-nc24ads", "schedmd-tree"] {
        let (code, out, err) = import(&[&format!("tests/fixtures/slurm/{f}")]);
        assert_eq!(code, 0, "{f}: {err}");
        insta::assert_snapshot!(format!("slurm_{f}"), out);
        validates_and_plans(f, &out);
    }
}

#[test]
fn what_each_fixture_says_is_read() {
    // MIG from gres.conf's MultipleFiles (a bare `1g.10gb` type in slurm.conf; the
    // model from AutoDetect's `nvidia_a100_80gb_pcie_1g.10gb`), and its noisy line.
    let (_, out, err) = import(&["tests/fixtures/slurm/rdgpu-mig"]);
    let c = model_of(&out);
    assert_eq!(c.nodes.len(), 2);
    assert!(out.contains("gpus 2 model=\"a100-pcie-80gb\""), "{out}");
    assert!(out.contains(
        "\"1g.10gb\" \"1g.10gb\" \"1g.10gb\" \"1g.10gb\" \"1g.10gb\" \"1g.10gb\" \"1g.10gb\""
    ));
    assert!(out.contains("current=#true"));
    assert!(
        err.contains("GP740") && err.contains("gres.conf:9"),
        "{err}"
    );
    // Include, NodeName=DEFAULT and a continuation; Cores -> NUMA; tree -> spine/leaf;
    // overlapping partitions.
    let (_, out, err) = import(&["tests/fixtures/slurm/schedmd-tree/slurm.conf"]);
    let c = model_of(&out);
    assert_eq!(c.nodes.len(), 18);
    assert!(out.contains("cpu sockets=2 cores-per-socket=32 threads-per-core=2"));
    assert!(out.contains("numa 1 gpus=\"2-3\" cores=\"32-63\""), "{out}");
    assert!(out.contains("spine \"s3\""), "{out}");
    assert_eq!(c.switches.len(), 4);
    assert!(
        err.contains("GP744") && err.contains("several partitions"),
        "{err}"
    );
    assert!(out.contains("pool \"debug\"") && out.contains("pool \"batch\""));
}

/// Per node: GPUs (count, model, down), CPU, memory in MiB (Slurm keeps MiB), and the
/// leaf and multi-node NVLink domain it is in.
fn hardware(c: &Cluster) -> BTreeMap<String, String> {
    c.nodes
        .iter()
        .map(|n| {
            let k = &c.classes[&n.class];
            let down: Vec<u32> = n.gpus.iter().filter(|g| g.down).map(|g| g.index).collect();
            let leaf = n
                .leaf()
                .map(|l| c.switches[l].name.clone())
                .unwrap_or_default();
            let mnnvl: Vec<&str> = n
                .mnnvl
                .iter()
                .map(|d| c.nvlink_domains[*d].name.as_str())
                .collect();
            // Slurm keeps MiB; the import rounds RealMemory down (docs/import.md).
            let mib = k.memory.map(|b| rounded_mib(b.0 / (1024 * 1024)));
            (
                n.name.clone(),
                format!(
                    "{} x {:?} down {down:?} cpu {}x{}x{} mem {mib:?} leaf {leaf} nvl {mnnvl:?}",
                    k.gpu_count, k.gpu_model, k.sockets, k.cores_per_socket, k.threads_per_core
                ),
            )
        })
        .collect()
}

/// RealMemory as the import rounds it: whole GiB, down to a 32nd of their power of two.
fn rounded_mib(mib: u64) -> u64 {
    if mib < 1024 {
        return mib;
    }
    let gib = mib / 1024;
    let step = (1u64 << gib.ilog2()) / 32;
    let gib = if step > 1 { gib / step * step } else { gib };
    gib * 1024
}

fn load_example(dir: &str) -> Cluster {
    let (sources, diags) = gpuplan::load::load_paths(&[Path::new(dir).to_path_buf()]);
    assert!(diags.is_empty());
    gpuplan::validate::validate(&sources)
        .model
        .expect("example model")
}

/// Render to Slurm, import back, compare. Leaves are compared where the example's
/// Slurm files carry a switch tree (topology/tree); with topology/block the blocks come
/// back as NVLink domains and leaves (docs/import.md).
#[test]
fn round_trip_through_slurm_keeps_the_hardware() {
    for (example, leaves) in [
        ("examples/superpod-h100", true),
        ("examples/gb200-nvl72", false),
        ("examples/mixed-authority", true),
    ] {
        let s = Scratch::new("slurm-roundtrip");
        let out = s.path("out");
        let o = common::gpuplan(&[
            "--quiet",
            "render",
            example,
            "--target",
            "slurm",
            "--out-dir",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{example}");
        let (code, kdl, err) = import(&[out.join("slurm").to_str().unwrap()]);
        assert_eq!(code, 0, "{example}: {err}");
        let back = hardware(&model_of(&kdl));
        let orig = hardware(&load_example(example));
        assert!(!back.is_empty());
        for (node, hw) in &back {
            let want = orig
                .get(node)
                .unwrap_or_else(|| panic!("{example}: {node} is new"));
            let strip = |h: &str| {
                if leaves {
                    h.to_string()
                } else {
                    h.split(" leaf ").next().unwrap().to_string()
                        + " "
                        + h.split(" nvl ").nth(1).unwrap_or("")
                }
            };
            assert_eq!(strip(hw), strip(want), "{example}: {node}");
        }
        // Every Slurm-owned node comes back (mixed-authority: only hpc-*).
        let slurm_nodes = orig
            .keys()
            .filter(|n| !example.ends_with("mixed-authority") || n.starts_with("hpc-"));
        assert_eq!(slurm_nodes.count(), back.len(), "{example}");
    }
}

#[test]
fn the_order_of_lines_does_not_matter() {
    let s = Scratch::new("slurm-order");
    let dir = Path::new("tests/fixtures/slurm/schedmd-tree");
    for f in ["slurm.conf", "gres.conf", "topology.conf", "nodes.conf"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        // Reverse the order of the partition and switch lines (their meaning does not
        // depend on it).
        let mut lines: Vec<&str> = text.lines().collect();
        if f == "topology.conf" {
            lines.reverse();
        }
        std::fs::write(s.path(f), lines.join("\n") + "\n").unwrap();
    }
    let (_, a, _) = import(&["tests/fixtures/slurm/schedmd-tree"]);
    let (_, b, _) = import(&[s.path("").to_str().unwrap()]);
    let body = |t: &str| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&a), body(&b));
}

#[test]
fn bad_input_gives_coded_diagnostics_never_a_panic() {
    let s = Scratch::new("slurm-bad");
    let case = |name: &str, conf: &str, args: &[&str]| -> (i32, String, String) {
        let dir = s.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("slurm.conf"), conf).unwrap();
        let mut all = vec![dir.to_str().unwrap()];
        all.extend_from_slice(args);
        import(&all)
    };
    // An unknown GPU type is declared (see `unknown_gpu_types_are_declared_not_refused`);
    // untyped `gpu:N` too, as `untyped-gpu`, with the flag that maps it in the hint.
    let (code, out, err) = case("untyped", "NodeName=n1 Gres=gpu:4\n", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("gpus 4 model=\"untyped-gpu\""), "{out}");
    assert!(err.contains("--model gpu=ID"), "{err}");
    // A broken hostlist, a non-number, garbage: diagnostics; the node whose GRES cannot
    // be read is described with its GPU count unknown (GP752).
    let (code, _, err) = case(
        "broken",
        "NodeName=n[1- Gres=gpu:h100:8\nNodeName=m1 CPUs=lots Gres=gpu:h100:x\nthis is not slurm\n",
        &[],
    );
    assert_eq!(
        code, 1,
        "the unreadable NodeName hostlist is an error: {err}"
    );
    for c in ["GP741", "GP740", "GP752"] {
        assert!(err.contains(c), "{c}: {err}");
    }
    // No node at all: GP747.
    let (code, _, err) = case("none", "ClusterName=x\n", &[]);
    assert_eq!(code, 1);
    assert!(err.contains("GP747"), "{err}");
    // A hostlist too large to expand is refused, not expanded.
    let (code, _, err) = case(
        "huge",
        "NodeName=a[0-99999],b[0-99999],c[0-99999],d[0-99999],e[0-99999],f[0-99999],g[0-99999],h[0-99999],i[0-99999],j[0-99999],k[0-99999] Gres=gpu:h100:8\n",
        &[],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("GP741")
            && err
                .split_whitespace()
                .filter(|w| *w != "│")
                .collect::<Vec<_>>()
                .join(" ")
                .contains("names limit"),
        "{err}"
    );
    // Several GPU models on one node: one `gpus` line per model (issue 30, case 4).
    let (code, out, err) = case(
        "mixed",
        "NodeName=x1 Gres=gpu:h100:4,gpu:l40s:4\nNodeName=x2 Gres=gpu:h100:8\n",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("gpus 4 model=\"h100-sxm5-80gb\"\n    gpus 4 model=\"l40s-48gb\""),
        "{out}"
    );
    // An Include that is not beside slurm.conf: a warning, never a read elsewhere.
    let (_, _, err) = case(
        "include",
        "Include /etc/slurm/../../secret.conf\nNodeName=y1 Gres=gpu:h100:8\n",
        &[],
    );
    assert!(err.contains("GP748"), "{err}");
    // No slurm.conf at all.
    let (code, _, err) = import(&[s.path("nowhere").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("GP000"), "{err}");
}

/// Partition names that sanitize alike become distinct pools; switch names become
/// DNS labels; the output validates.
#[test]
fn names_from_slurm_become_valid_gpuplan_names() {
    let s = Scratch::new("slurm-names");
    std::fs::write(
        s.path("slurm.conf"),
        "ClusterName=My_Cluster\nNodeName=g[1-4] Gres=gpu:l40s:4\nPartitionName=GPU_Queue Nodes=g[1-2] Default=YES\nPartitionName=gpu-queue Nodes=g[3-4]\n",
    )
    .unwrap();
    std::fs::write(
        s.path("topology.conf"),
        "SwitchName=Leaf_A Nodes=g[1-2]\nSwitchName=Leaf_B Nodes=g[3-4]\nSwitchName=Spine_1 Switches=Leaf_[A-B]\n",
    )
    .unwrap();
    let (code, out, err) = import(&[s.path("").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("pool \"gpu-queue\"") && out.contains("pool \"gpu-queue-2\""),
        "{out}"
    );
    assert!(out.contains("cluster \"my-cluster\""), "{out}");
    assert!(out.contains("leaf \"leaf-a\""), "{out}");
    validates_and_plans("names", &out);
}

/// Truncated and corrupted files never panic the importer (each fixture file cut at
/// many points and with bytes replaced, through the library).
#[test]
fn mangled_files_never_panic() {
    use gpuplan::import::slurm::{Files, Options, import};
    let dir = Path::new("tests/fixtures/slurm/schedmd-tree");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    // slurm.conf with its Include inlined, so that every variant has GPU nodes to read.
    let slurm = read("slurm.conf").replace("Include nodes.conf\n", &read("nodes.conf"));
    let originals = [slurm, read("gres.conf"), read("topology.conf")];
    let mut sources = SourceMap::new();
    let files = Files {
        slurm: sources.add("slurm.conf", originals[0].clone()),
        includes: Vec::new(),
        gres: Some(sources.add("gres.conf", originals[1].clone())),
        topology: Some(sources.add("topology.conf", originals[2].clone())),
    };
    let (whole, _, _) = import(&sources, &files, &Options::default(), "whole");
    assert!(
        whole.is_some_and(|t| t.contains("dev[0-17]")),
        "the unmangled files import"
    );
    let junk = [
        "[",
        "]",
        "=",
        "\\",
        "\"",
        ",",
        "-",
        "#",
        "\n",
        "99999999999999999999",
    ];
    let mut cases = 0;
    for which in 0..3 {
        let text = &originals[which];
        let cuts: Vec<usize> = (0..text.len()).step_by(7).collect();
        for (k, &at) in cuts.iter().enumerate() {
            if !text.is_char_boundary(at) {
                continue;
            }
            for variant in [
                text[..at].to_string(),
                format!("{}{}{}", &text[..at], junk[k % junk.len()], &text[at..]),
            ] {
                let mut texts = originals.clone();
                texts[which] = variant;
                let mut sources = SourceMap::new();
                let slurm = sources.add("slurm.conf", texts[0].clone());
                let gres = sources.add("gres.conf", texts[1].clone());
                let topology = sources.add("topology.conf", texts[2].clone());
                let files = Files {
                    slurm,
                    includes: Vec::new(),
                    gres: Some(gres),
                    topology: Some(topology),
                };
                let _ = import(&sources, &files, &Options::default(), "fuzz");
                cases += 1;
            }
        }
    }
    assert!(cases > 100, "{cases}");
}

/// Issue 30, case 2: a GPU type outside the catalog (M60, RTX 2080 of a published site)
/// no longer aborts the import: it becomes a declared `gpu-model` (without memory, so a
/// placeholder comment and GP006 from `validate`), flagged in the report; `--model`
/// maps a type to a catalog id or to the name of a model the user declares.
#[test]
fn unknown_gpu_types_are_declared_not_refused() {
    let s = Scratch::new("slurm-unknown-types");
    let conf = "NodeName=cortex-[01-05] Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=257860 Gres=gpu:m60:8\nNodeName=n1 Gres=gpu:mystery_48gb:2\n";
    std::fs::write(s.path("slurm.conf"), conf).unwrap();
    let dir = s.path("");
    let (code, out, err) = import(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("gpu-model \"m60\"  // memory unknown: set memory=\"...\" (or base=\"...\")"),
        "{out}"
    );
    assert!(out.contains("gpus 8 model=\"m60\""), "{out}");
    assert!(
        out.contains("gpu-model \"mystery-48gb\" memory=\"48GiB\""),
        "{out}"
    );
    assert!(
        err.contains("GP742") && err.contains("declared as gpu-model `m60`"),
        "{err}"
    );
    assert!(
        err.contains("flagged") && err.contains("gpu model m60"),
        "{err}"
    );
    // The output is fmt-clean; `validate` flags the placeholder with GP006.
    std::fs::write(s.path("out.kdl"), &out).unwrap();
    let (code, fmt_out, _) = s.run(&["fmt", "--check", "out.kdl"]);
    assert_eq!((code, fmt_out.as_str()), (0, ""));
    let (code, _, verr) = s.run(&["validate", "out.kdl"]);
    assert_ne!(code, 0);
    assert!(verr.contains("GP006") && verr.contains("m60"), "{verr}");
    // JSON: the declared model is a flagged gpu-model item.
    let (_, json, _) = import(&[dir.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let flagged = v["report"]["flagged"].as_array().unwrap();
    assert!(
        flagged
            .iter()
            .any(|f| f["kind"] == "gpu-model" && f["name"] == "m60" && f["code"] == "GP742"),
        "{json}"
    );
    // `--model` to a catalog id, or to a model the user declares (flagged, not emitted).
    let (code, out, _) = import(&[dir.to_str().unwrap(), "--model", "m60=l40s-48gb"]);
    assert_eq!(code, 0);
    assert!(out.contains("gpus 8 model=\"l40s-48gb\"") && !out.contains("gpu-model \"m60\""));
    let (code, out, err) = import(&[dir.to_str().unwrap(), "--model", "m60=tesla-m60"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("gpus 8 model=\"tesla-m60\""), "{out}");
    assert!(err.contains("gpu-model \"tesla-m60\""), "{err}");
    // A mapping that cannot be a model name: GP749, the nodes left out.
    let (code, _, err) = import(&[dir.to_str().unwrap(), "--model", "m60=Tesla M60!"]);
    assert_eq!(code, 1);
    assert!(err.contains("GP749"), "{err}");
}

/// Issue 30, case 3: NodeName lines without `Gres=` (the CPU nodes of a published site,
/// tests/fixtures/slurm/huji-phoenix) are imported with their CPUs, memory, partitions
/// and switches, in GPU-less classes, flagged "GPU count unknown" (GP752), never left
/// out nor silently given 0 GPUs.
#[test]
fn nodes_without_gres_are_imported_and_flagged() {
    let (code, out, err) = import(&["tests/fixtures/slurm/huji-phoenix"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("GP752") && err.contains("GPU count unknown"),
        "{err}"
    );
    for node in [
        "sulfur-[01-16]",
        "cb-[05-20]",
        "eye-[01-04]",
        "oxygen-[01-08]",
    ] {
        assert!(out.contains(&format!("nodes \"{node}\"")), "{node}: {out}");
    }
    assert!(out.contains("node-class \"no-gres-8cpu\""), "{out}");
    assert!(out.contains("// GPU count unknown"), "{out}");
    assert!(err.contains("51 of 51 node(s)"), "{err}");
    let (_, json, _) = import(&["tests/fixtures/slurm/huji-phoenix", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["report"]["flagged"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "node" && f["code"] == "GP752"),
        "{json}"
    );
    // gres.conf GPUs without `Gres=` in slurm.conf: imported from gres.conf, GP753.
    let s = Scratch::new("slurm-gres-only");
    std::fs::write(s.path("slurm.conf"), "NodeName=g1 CPUs=16\n").unwrap();
    std::fs::write(
        s.path("gres.conf"),
        "NodeName=g1 Name=gpu Type=l40s File=/dev/nvidia[0-3]\n",
    )
    .unwrap();
    let (code, out, err) = import(&[s.path("").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("GP753"), "{err}");
    assert!(out.contains("gpus 4 model=\"l40s-48gb\""), "{out}");
}

/// Issue 30, case 4, on Slurm's own gres.conf(5) example (two GPU types on one node):
/// one `gpus` line per type in the order of their device files; NodeSet partitions;
/// `Cores=` to NUMA; RealMemory a few MiB apart in one class; overlapping partitions
/// said in a note and flagged.
#[test]
fn mixed_types_nodesets_numa_and_rounded_memory() {
    let (code, out, err) = import(&["tests/fixtures/slurm/schedmd-gres-mixed"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("    gpus 2 model=\"gtx560\"\n    gpus 2 model=\"tesla\"\n"),
        "{out}"
    );
    assert!(out.contains("numa 0 gpus=\"0-1\" cores=\"0,1\""), "{out}");
    assert!(out.contains("numa 1 gpus=\"2-3\" cores=\"2,3\""), "{out}");
    // 15885 and 15890 MiB: one class, 15GiB.
    assert!(out.contains("nodes \"tux[0-4]\""), "{out}");
    assert!(out.contains("memory \"15GiB\""), "{out}");
    // NodeSet (Feature=) -> the pool of the default partition; the other overlaps.
    assert!(
        out.contains("pool \"gpu\" mode=\"whole-gpu\" nodes=\"tux[0-4]\""),
        "{out}"
    );
    assert!(out.contains("// partition a overlaps"), "{out}");
    assert!(err.contains("flagged") && err.contains("pool a"), "{err}");
    // gres.conf `CPUs=` (CPU ids, two threads per core) -> the cores they are on.
    let s = Scratch::new("slurm-cpus");
    std::fs::write(
        s.path("slurm.conf"),
        "NodeName=c1 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 Gres=gpu:l40s:2\n",
    )
    .unwrap();
    std::fs::write(
        s.path("gres.conf"),
        "Name=gpu Type=l40s File=/dev/nvidia0 CPUs=0-3,8-11\nName=gpu Type=l40s File=/dev/nvidia1 CPUs=4-7,12-15\n",
    )
    .unwrap();
    let (code, out, err) = import(&[s.path("").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("numa 0 gpus=\"0\" cores=\"0-3\""), "{out}");
    assert!(out.contains("numa 1 gpus=\"1\" cores=\"4-7\""), "{out}");
}

/// The output of a node with two GPU types validates once the language has several
/// `gpus` lines (branch `mixed`).
#[test]
fn mixed_types_validate() {
    let (code, out, err) = import(&[
        "tests/fixtures/slurm/schedmd-gres-mixed",
        "--model",
        "gtx560=l40s-48gb",
        "--model",
        "tesla=a100-pcie-80gb",
    ]);
    assert_eq!(code, 0, "{err}");
    validates_and_plans("mixed", &out);
    let c = model_of(&out);
    assert_eq!(c.nodes.len(), 5);
}

/// Issue 30, case 4: hostlists naming undeclared nodes (a published site's partitions)
/// are a coded warning; a node under two switches is a coded error at import, not a
/// GP009 later; when every node is left out, an error says why.
#[test]
fn undeclared_nodes_two_switches_and_all_left_out_are_coded() {
    let (_, _, err) = import(&["tests/fixtures/slurm/huji-phoenix"]);
    assert!(
        err.contains("GP754") && err.contains("cortex-[06-08]"),
        "{err}"
    );
    let s = Scratch::new("slurm-two-switches");
    std::fs::write(s.path("slurm.conf"), "NodeName=g[1-3] Gres=gpu:l40s:4\n").unwrap();
    std::fs::write(
        s.path("topology.conf"),
        "SwitchName=s1 Nodes=g[1-2]\nSwitchName=s2 Nodes=g[2-3]\n",
    )
    .unwrap();
    let dir = s.path("");
    let (code, _, err) = import(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("GP755") && err.contains("`g2`"), "{err}");
    // With --partial: written, g2 under s1 only, and it validates.
    let (code, out, _) = import(&[dir.to_str().unwrap(), "--partial"]);
    assert_eq!(code, 2);
    model_of(&out);
    // Every node left out: GP756 with the reasons.
    let (code, _, err) = import(&[dir.to_str().unwrap(), "--model", "l40s=Not A Name"]);
    assert_eq!(code, 1);
    assert!(err.contains("GP756") && err.contains("GP749"), "{err}");
}

/// Issue 30, Slurm coverage: `Include` files take the place of their line (so
/// `NodeName=DEFAULT` applies in slurmctld's order), nested includes are read, a cycle
/// stops, an include outside the folder is refused (GP748); shard and MPS GRES make the
/// pool time-slice and mps; a GPU type gres.conf does not list is GP753.
#[test]
fn includes_sharing_and_type_mismatches() {
    let s = Scratch::new("slurm-includes");
    std::fs::write(
        s.path("slurm.conf"),
        "NodeName=DEFAULT CPUs=4\nInclude a.conf\nNodeName=DEFAULT CPUs=8\nNodeName=late Gres=gpu:l40s:2,shard:8\nInclude ../../etc/passwd\nPartitionName=p Nodes=early,late\n",
    )
    .unwrap();
    std::fs::write(
        s.path("a.conf"),
        "Include b.conf\nNodeName=early Gres=gpu:l40s:2\n",
    )
    .unwrap();
    std::fs::write(
        s.path("b.conf"),
        "Include a.conf\nNodeName=deep Gres=gpu:l40s:2\n",
    )
    .unwrap();
    let dir = s.path("");
    let (code, out, err) = import(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("GP748"), "{err}");
    assert!(
        out.contains("cores-per-socket=4") && out.contains("cores-per-socket=8"),
        "{out}"
    );
    let class_of = |node: &str| {
        out.lines()
            .find(|l| {
                l.starts_with(&format!("nodes \"{node}\""))
                    || l.contains(&format!("\"{node}\" class"))
            })
            .map(str::to_string)
    };
    assert!(class_of("deep").is_some(), "nested include: {out}");
    assert!(out.contains("mode=\"time-slice\""), "shard: {out}");
    // MPS from gres.conf; a type gres.conf does not list.
    std::fs::write(
        s.path("gres.conf"),
        "Name=gpu Type=a100 File=/dev/nvidia[0-1]\nName=mps Count=200 File=/dev/nvidia[0-1]\n",
    )
    .unwrap();
    let (_, out, err) = import(&[dir.to_str().unwrap()]);
    assert!(out.contains("mode=\"mps\""), "mps: {out}");
    assert!(err.contains("GP753") && err.contains("`l40s`"), "{err}");
}
