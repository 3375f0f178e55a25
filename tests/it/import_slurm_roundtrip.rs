//! The Slurm importer's oracle (issue 30): for every fixture under tests/fixtures/slurm,
//! import -> `gpuplan render --target slurm` -> compare with the source, both
//! normalised: node names, CPUs, RealMemory within the documented rounding, GPUs per
//! GRES type (types are renamed to gpuplan's models, so the counts per type are
//! compared), partitions' node sets, leaf switches' node sets. The differences that
//! remain are deliberate and listed in docs/import.md ("Slurm round trip").

use crate::common;

use crate::common::Scratch;
use gpuplan::import::slurm::conf::{self, Record};
use gpuplan::source::FileId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One node as a slurm.conf (+ gres.conf) says it, normalised.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NodeView {
    cpus: u64,
    memory_mib: Option<u64>,
    /// GPU counts per GRES type, sorted (the type names differ across the trip).
    gpus: Vec<u64>,
    /// Its GRES are MIG instances (`gpu:1g.10gb:14`): render writes the planned
    /// layout, so the GPUs are not compared (docs/import.md).
    mig: bool,
}

/// A MIG profile GRES type (`1g.10gb`, `nvidia_a100_80gb_pcie_3g.40gb`).
fn is_mig(ty: &str) -> bool {
    let p = ty.rsplit('_').next().unwrap_or(ty);
    p.split_once("g.").is_some_and(|(g, rest)| {
        !g.is_empty() && g.bytes().all(|c| c.is_ascii_digit()) && rest.ends_with("gb")
    })
}

#[derive(Debug, Default)]
struct Site {
    nodes: BTreeMap<String, NodeView>,
    partitions: BTreeMap<String, BTreeSet<String>>,
    /// Leaf switches (those with Nodes=) -> their nodes.
    leaves: BTreeMap<String, BTreeSet<String>>,
}

/// The records of `file` with its `Include`s (beside it) in place.
fn records(dir: &Path, file: &str, depth: usize) -> Vec<Record> {
    let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in conf::records(FileId(0), &text, &mut Vec::new()) {
        match (r.kind(), r.value("include")) {
            ("include", Some(name)) if depth < 8 => {
                let name = name.rsplit('/').next().unwrap_or(name).to_string();
                out.extend(records(dir, &name, depth + 1));
            }
            _ => out.push(r),
        }
    }
    out
}

fn names(list: &str) -> Vec<String> {
    conf::hostlist(list).unwrap_or_default()
}

fn num(r: &Record, k: &str) -> Option<u64> {
    r.value(k).and_then(|v| v.parse().ok())
}

/// A Slurm site's files, normalised. `rounded` applies the import's memory rounding
/// (to the source side; the rendered side is already rounded).
fn read_site(dir: &Path, rounded: bool) -> Site {
    let mut site = Site::default();
    let recs = records(dir, "slurm.conf", 0);
    let mut defaults: Vec<(String, String)> = Vec::new();
    let mut sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &recs {
        match r.kind() {
            "nodename" => {
                let list = r.value("nodename").unwrap_or("");
                if list.eq_ignore_ascii_case("default") {
                    defaults.extend(
                        r.pairs[1..]
                            .iter()
                            .map(|p| (p.key.clone(), p.value.clone())),
                    );
                    continue;
                }
                let mut full = r.clone();
                for (k, v) in &defaults {
                    if full.get(k).is_none() {
                        full.pairs.push(conf::Pair {
                            key: k.clone(),
                            value: v.clone(),
                            span: r.span,
                        });
                    }
                }
                let (view, feats) = node_view(&full, rounded);
                for n in names(list) {
                    features.insert(n.clone(), feats.clone());
                    site.nodes.insert(n, view.clone());
                }
            }
            "nodeset" => {
                let mut m: BTreeSet<String> = r
                    .value("nodes")
                    .map(names)
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                if let Some(f) = r.value("feature") {
                    m.extend(
                        features
                            .iter()
                            .filter(|(_, fs)| fs.contains(f))
                            .map(|(n, _)| n.clone()),
                    );
                }
                sets.insert(r.value("nodeset").unwrap_or("").to_string(), m);
            }
            _ => {}
        }
    }
    for r in recs.iter().filter(|r| r.kind() == "partitionname") {
        let name = r.value("partitionname").unwrap_or("");
        if name.eq_ignore_ascii_case("default") {
            continue;
        }
        let mut m = BTreeSet::new();
        for item in r.value("nodes").unwrap_or("").split(',') {
            match item {
                i if i.eq_ignore_ascii_case("all") => m.extend(site.nodes.keys().cloned()),
                i if sets.contains_key(i) => m.extend(sets[i].iter().cloned()),
                _ => {}
            }
        }
        // Hostlists (commas inside brackets kept): expand the whole value, keep names.
        let v = r.value("nodes").unwrap_or("");
        m.extend(names(v).into_iter().filter(|n| site.nodes.contains_key(n)));
        m.retain(|n| site.nodes.contains_key(n));
        site.partitions.insert(sanitize(name), m);
    }
    for r in records(dir, "topology.conf", 0) {
        if let (Some(s), Some(n)) = (r.value("switchname"), r.value("nodes")) {
            let m: BTreeSet<String> = names(n)
                .into_iter()
                .filter(|n| site.nodes.contains_key(n))
                .collect();
            site.leaves.insert(sanitize(s), m);
        }
    }
    site
}

/// What a complete `NodeName` record (defaults applied) says of each of its nodes, and
/// its features.
fn node_view(full: &conf::Record, rounded: bool) -> (NodeView, BTreeSet<String>) {
    let boards = num(full, "boards").unwrap_or(1);
    let sockets = num(full, "socketsperboard")
        .map(|s| s * boards)
        .or_else(|| num(full, "sockets"));
    let cpus = match (sockets, num(full, "corespersocket")) {
        (Some(s), Some(c)) => s * c * num(full, "threadspercore").unwrap_or(1),
        _ => num(full, "cpus").unwrap_or(1),
    };
    let mem = num(full, "realmemory").filter(|m| *m > 1);
    let mem = if rounded { mem.map(rounded_mib) } else { mem };
    let mut gpus: BTreeMap<String, u64> = BTreeMap::new();
    let mut mig = false;
    for e in full.value("gres").unwrap_or("").split(',') {
        let e = e.split('(').next().unwrap_or("");
        let parts: Vec<&str> = e.split(':').collect();
        if parts.first() != Some(&"gpu") {
            continue;
        }
        let (ty, n) = match parts.as_slice() {
            [_, n] => ("", *n),
            [_, t, n] => (*t, *n),
            _ => continue,
        };
        if is_mig(ty) {
            mig = true;
            continue;
        }
        *gpus.entry(ty.to_string()).or_default() += n.parse::<u64>().unwrap_or(0);
    }
    let mut counts: Vec<u64> = gpus.into_values().filter(|c| *c > 0).collect();
    counts.sort_unstable();
    let feats: BTreeSet<String> = full
        .value("features")
        .or_else(|| full.value("feature"))
        .map(|f| f.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let view = NodeView {
        cpus,
        memory_mib: mem,
        gpus: counts,
        mig,
    };
    (view, feats)
}

fn sanitize(s: &str) -> String {
    gpuplan::import::names::sanitize(s, 63)
}

/// The import's rounding of RealMemory (docs/import.md): whole GiB, down to a 32nd of
/// their power of two.
fn rounded_mib(mib: u64) -> u64 {
    if mib < 1024 {
        return mib;
    }
    let gib = mib / 1024;
    let step = (1u64 << gib.ilog2()) / 32;
    (if step > 1 { gib / step * step } else { gib }) * 1024
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("tests/fixtures/slurm")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("slurm.conf").is_file())
        .collect();
    v.sort();
    v
}

fn round_trip(dir: &Path) {
    let tag = dir.file_name().unwrap().to_string_lossy().to_string();
    let s = Scratch::new(&format!("slurm-rt-{tag}"));
    let o = common::gpuplan(&["import", "slurm", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{tag}: {err}");
    // The output as written is in `gpuplan fmt`'s layout.
    std::fs::write(s.path("raw.kdl"), &o.stdout).unwrap();
    let (code, fmt_out, _) = s.run(&["fmt", "--check", "raw.kdl"]);
    assert_eq!(
        (code, fmt_out.as_str()),
        (0, ""),
        "{tag}: imported KDL is formatted"
    );
    let kdl = common::complete_placeholders(&String::from_utf8_lossy(&o.stdout), "8GiB");
    std::fs::write(s.path("cluster.kdl"), &kdl).unwrap();
    let (code, _, err) = s.run(&[
        "render",
        "cluster.kdl",
        "--target",
        "slurm",
        "--out-dir",
        "out",
    ]);
    assert_eq!(code, 0, "{tag}: {err}\n{kdl}");
    // A node without GPUs carries no `Gres=` at all: an empty one is not a GRES
    // specification (slurm.conf(5)).
    let conf = std::fs::read_to_string(s.path("out/slurm/slurm.conf")).unwrap();
    assert!(
        !conf.split_whitespace().any(|w| w == "Gres="),
        "{tag}: an empty Gres= in the rendered slurm.conf"
    );
    let source = read_site(dir, true);
    let back = read_site(&s.path("out").join("slurm"), false);
    // Nodes: names, CPUs, memory (rounded), GPUs per type.
    assert_eq!(
        source.nodes.keys().collect::<Vec<_>>(),
        back.nodes.keys().collect::<Vec<_>>(),
        "{tag}: node names"
    );
    for (n, v) in &source.nodes {
        let b = &back.nodes[n];
        assert_eq!(
            (v.cpus, v.memory_mib),
            (b.cpus, b.memory_mib),
            "{tag}: node {n}"
        );
        if !v.mig {
            assert_eq!(v.gpus, b.gpus, "{tag}: GPUs of node {n}");
        }
    }
    // Partitions: each rendered partition is a source partition's node set, or the
    // part of it no earlier partition took (docs/import.md: one pool per node).
    // A node in no partition lands in the partition render makes for its pool mode.
    let in_some: BTreeSet<&String> = source.partitions.values().flatten().collect();
    for (p, m) in &back.partitions {
        match source.partitions.get(p) {
            Some(src) => assert!(
                m.is_subset(src),
                "{tag}: partition {p}: {m:?} not in {src:?}"
            ),
            None => assert!(
                m.iter().all(|n| !in_some.contains(n)),
                "{tag}: new partition {p} takes nodes of source partitions"
            ),
        }
    }
    // Partitions that overlap no other come back whole.
    for (p, m) in &source.partitions {
        let alone = source
            .partitions
            .iter()
            .all(|(q, o)| q == p || o.is_disjoint(m));
        if alone && !m.is_empty() {
            assert_eq!(Some(m), back.partitions.get(p), "{tag}: partition {p}");
        }
    }
    // Leaf switches, when the source has topology.conf.
    if dir.join("topology.conf").is_file() {
        assert_eq!(source.leaves, back.leaves, "{tag}: leaf switches");
    }
}

#[test]
fn every_slurm_fixture_round_trips() {
    let all = fixtures();
    assert!(all.len() >= 5, "{all:?}");
    for dir in all {
        round_trip(&dir);
    }
}
