//! `gpuplan render`: golden files (insta) for every target on every example, byte
//! determinism, the cross-target consistency test (each team's guarantee and ceiling,
//! each priority's value and order, each pool's nodes and each training gang's size are
//! the same numbers in every target; with scheduling authorities, each target states
//! its scheduler's part and no node is counted by two schedulers), cross-object checks
//! (Kueue topology levels, Volcano tiers, Slurm switches), and the CLI's atomic out-dir
//! handling.
//!
//! Review snapshot changes with `cargo insta review` (or `INSTA_UPDATE=always`).
//! gpuplan's version in the files' headers is filtered out (`gpuplan [version]`,
//! `common::snapshot_settings`).

use crate::common;

use crate::common::gpuplan;
use gpuplan::model::{Authority, Cluster};
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

/// The examples and the test fixtures the cross-target checks also run on.
fn examples_and_fixtures() -> Vec<(String, Cluster, Placement)> {
    let mut v = examples();
    let dir = "tests/fixtures/hetero-gb200-h100";
    let (c, p) = plan(Path::new(dir));
    v.push((dir.to_string(), c, p));
    v
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
            // With authorities, a target whose scheduler owns no node renders nothing.
            if text.is_empty() {
                assert!(c.authorities_declared(), "{ex}: no {} files", t.dir());
                continue;
            }
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

/// Whole GPUs a pod template asks: `nvidia.com/gpu`, or on DRA nodes the count of
/// the ResourceClaimTemplate its `gpus` claim names (in `docs`).
fn pod_gpus(docs: &[Value], tpl: &Value) -> i64 {
    let lim = &tpl["spec"]["containers"][0]["resources"]["limits"];
    if !lim["nvidia.com/gpu"].is_null() {
        return num(&lim["nvidia.com/gpu"]);
    }
    let claims = tpl["spec"]["resourceClaims"]
        .as_sequence()
        .expect("GPUs or claims");
    let rct = claims
        .iter()
        .find(|c| c["name"].as_str() == Some("gpus"))
        .and_then(|c| c["resourceClaimTemplateName"].as_str())
        .expect("a gpus claim template");
    let t = kind(docs, "ResourceClaimTemplate")
        .into_iter()
        .find(|t| name(t) == rct)
        .unwrap_or_else(|| panic!("no ResourceClaimTemplate {rct}"));
    num(&t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"])
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
    for (ex, c, p) in examples_and_fixtures() {
        let files = render_all(&c, &p);
        let t = Targets::new(&ex, &c, &p, &files);
        teams_agree(&t);
        priorities_agree(&t);
        pools_agree(&t);
        gangs_agree(&t);
        one_owner_per_node(&t);
        kueue_topologies_reach(&t);
        volcano_tiers_exist(&t);
        slurm_jobs_name_what_slurm_defines(&t);
        // The same with topology/block (Slurm 24.05): blocks and `--segment`.
        let opts = render::Options {
            slurm_version: Some(vec![24, 5]),
            ..Default::default()
        };
        let block = render::render(&c, &p, &[Target::Slurm], &opts)
            .expect("renders")
            .files;
        slurm_jobs_name_what_slurm_defines(&Targets::new(&ex, &c, &p, &block));
    }
}

/// Whether a target's files serve scheduler `a` (every scheduler when none is declared).
fn serves(c: &Cluster, target: &[Authority], a: Option<Authority>) -> bool {
    !c.authorities_declared() || a.is_some_and(|a| target.contains(&a))
}

const KUBE: &[Authority] = &[
    Authority::Kubernetes,
    Authority::Kueue,
    Authority::Volcano,
    Authority::Kai,
];

/// A team's guarantee and ceiling as seen by a target serving `target` (the whole team
/// when no authority is declared); `None`: the team is not in that target.
fn part(c: &Cluster, team: &str, target: &[Authority]) -> Option<(i64, i64)> {
    let t = &c.teams[team];
    if !c.authorities_declared() {
        return Some((t.guarantee as i64, t.ceiling() as i64));
    }
    let parts = c.team_parts(t);
    let has = |name: &str| {
        c.team_parts(&c.teams[name])
            .keys()
            .any(|a| target.contains(a))
    };
    let keep = c
        .teams
        .values()
        .any(|x| has(&x.name) && c.team_chain(&x.name).iter().any(|y| y.name == team));
    keep.then(|| {
        parts
            .iter()
            .filter(|(a, _)| target.contains(a))
            .fold((0, 0), |(g, x), (_, p)| {
                (g + p.guarantee as i64, x + p.ceiling as i64)
            })
    })
}

/// No node is counted by two schedulers: Slurm, Volcano and Kueue each list only their
/// own nodes, no Slurm node is in a Kubernetes object, and every team's parts add up to
/// its quota.
fn one_owner_per_node(x: &Targets) {
    let Targets {
        ex,
        c,
        files,
        k8s,
        volcano,
        kueue,
        ..
    } = x;
    if !c.authorities_declared() {
        return;
    }
    let owner = |n: &str| c.node_authority(c.node_index[n]);
    let k8s_nodes: BTreeSet<String> = kind(k8s, "Node").iter().map(|n| name(n)).collect();
    for n in &k8s_nodes {
        assert!(
            owner(n).is_some_and(|a| a != Authority::Slurm),
            "{ex}: {n} (owned by {:?}) is a Kubernetes Node",
            owner(n)
        );
    }
    // No Slurm-owned node name appears in any Kubernetes-side file.
    let slurm_nodes: Vec<&str> = c
        .nodes
        .iter()
        .filter(|n| owner(&n.name) == Some(Authority::Slurm))
        .map(|n| n.name.as_str())
        .collect();
    for (path, text) in files.iter().filter(|(p, _)| {
        p.starts_with("k8s/") || p.starts_with("kueue/") || p.starts_with("volcano/")
    }) {
        for n in &slurm_nodes {
            let word =
                text.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-' || ch == '.'));
            assert!(
                !word.clone().any(|w| w == *n),
                "{ex}: Slurm node {n} in {path}"
            );
        }
    }
    if let Some(conf) = files.get("slurm/slurm.conf") {
        for f in slurm_fields(conf, "NodeName=") {
            for n in expand(&f["NodeName"]) {
                assert_eq!(owner(&n), Some(Authority::Slurm), "{ex}: {n} in slurm.conf");
            }
        }
    }
    // Volcano HyperNodes name only Volcano nodes (leaf members select nodes by name).
    for h in kind(volcano, "HyperNode") {
        for m in h["spec"]["members"].as_sequence().unwrap() {
            if m["type"].as_str() == Some("Node") {
                let sel = &m["selector"];
                let names: Vec<String> = if let Some(e) = sel["exactMatch"]["name"].as_str() {
                    vec![e.to_string()]
                } else {
                    Vec::new()
                };
                for n in names {
                    assert_eq!(
                        owner(&n),
                        Some(Authority::Volcano),
                        "{ex}: {n} in a HyperNode"
                    );
                }
            }
        }
    }
    // A Kueue flavor's nodeLabels match only Kueue nodes.
    let labels: BTreeMap<String, &Value> = kind(k8s, "Node")
        .into_iter()
        .map(|n| (name(n), &n["metadata"]["labels"]))
        .collect();
    for fl in kind(kueue, "ResourceFlavor") {
        let want = fl["spec"]["nodeLabels"].as_mapping().unwrap();
        for (n, l) in &labels {
            if want.iter().all(|(k, v)| &l[k.as_str().unwrap()] == v) {
                assert_eq!(
                    owner(n),
                    Some(Authority::Kueue),
                    "{ex}: flavor {} matches {n}",
                    name(fl)
                );
            }
        }
    }
    team_parts_add_up(ex, c);
}

/// Each team's parts add up to its quota.
fn team_parts_add_up(ex: &str, c: &Cluster) {
    for t in c.teams.values() {
        let parts = c.team_parts(t);
        if parts.is_empty() {
            continue;
        }
        let g: u32 = parts.values().map(|p| p.guarantee).sum();
        let ceil: u32 = parts.values().map(|p| p.ceiling).sum();
        assert_eq!(
            (g, ceil),
            (t.guarantee, t.ceiling()),
            "{ex}: parts of {}",
            t.name
        );
    }
}

/// Every Kueue job with a topology annotation reaches only flavors whose Topology has
/// that level, and every node of such a flavor carries every level of its Topology.
fn kueue_topologies_reach(x: &Targets) {
    let Targets { ex, k8s, kueue, .. } = x;
    let topologies: BTreeMap<String, Vec<String>> = kind(kueue, "Topology")
        .into_iter()
        .map(|t| {
            let levels = t["spec"]["levels"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|l| l["nodeLabel"].as_str().unwrap().to_string())
                .collect();
            (name(t), levels)
        })
        .collect();
    flavor_nodes_have_levels(ex, k8s, kueue, &topologies);
    for j in kind(kueue, "Job") {
        job_reaches_its_level(ex, kueue, &topologies, j);
    }
}

/// Every node of a flavor with a Topology carries that Topology's level labels.
fn flavor_nodes_have_levels(
    ex: &str,
    k8s: &[Value],
    kueue: &[Value],
    topologies: &BTreeMap<String, Vec<String>>,
) {
    let nodes: Vec<&Value> = kind(k8s, "Node");
    let matches = |fl: &Value, n: &Value| {
        fl["spec"]["nodeLabels"]
            .as_mapping()
            .unwrap()
            .iter()
            .all(|(k, v)| &n["metadata"]["labels"][k.as_str().unwrap()] == v)
    };
    for fl in kind(kueue, "ResourceFlavor") {
        let Some(t) = fl["spec"]["topologyName"].as_str() else {
            continue;
        };
        let levels = topologies
            .get(t)
            .unwrap_or_else(|| panic!("{ex}: flavor {} names missing Topology {t}", name(fl)));
        for n in nodes.iter().filter(|n| matches(fl, n)) {
            for l in levels.iter().filter(|l| *l != "kubernetes.io/hostname") {
                assert!(
                    !n["metadata"]["labels"][l.as_str()].is_null(),
                    "{ex}: node {} of flavor {} lacks level {l}",
                    name(n),
                    name(fl)
                );
            }
        }
    }
}

/// A job asking for a topology level reaches, through its ClusterQueue, only flavors
/// whose Topology has that level, and at least one.
fn job_reaches_its_level(
    ex: &str,
    kueue: &[Value],
    topologies: &BTreeMap<String, Vec<String>>,
    j: &Value,
) {
    let ann = &j["spec"]["template"]["metadata"]["annotations"];
    let level = [
        "kueue.x-k8s.io/podset-required-topology",
        "kueue.x-k8s.io/podset-preferred-topology",
    ]
    .iter()
    .find_map(|k| ann[*k].as_str());
    let Some(level) = level else { return };
    // The job reaches the flavors its ClusterQueue (= its team) lists for its
    // resource; a flavor it reaches must have a Topology with this level.
    let team = j["metadata"]["namespace"].as_str().unwrap();
    // On DRA nodes the pod claims its GPUs and Kueue charges them to the resource
    // kueue/dra-configuration.yaml maps their class to: whole GPUs, nvidia.com/gpu.
    let limits = &j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
    let resource = limits
        .as_mapping()
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(|k| k.as_str())
        .find(|k| k.starts_with("nvidia.com/"))
        .unwrap_or("nvidia.com/gpu")
        .to_string();
    let cq = kind(kueue, "ClusterQueue")
        .into_iter()
        .find(|q| name(q) == team)
        .unwrap_or_else(|| panic!("{ex}: no ClusterQueue for {team}"));
    let mut reached = 0;
    for grp in cq["spec"]["resourceGroups"].as_sequence().unwrap() {
        let covered: Vec<&str> = grp["coveredResources"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        if !covered.contains(&resource.as_str()) {
            continue;
        }
        let allowed = required_values(j);
        for f in grp["flavors"].as_sequence().unwrap() {
            let fname = f["name"].as_str().unwrap();
            let fl = kind(kueue, "ResourceFlavor")
                .into_iter()
                .find(|x| name(x) == fname)
                .unwrap();
            // Kueue skips a flavor whose nodeLabels the pods' node affinity excludes.
            let excluded = fl["spec"]["nodeLabels"]
                .as_mapping()
                .unwrap()
                .iter()
                .any(|(k, v)| {
                    allowed
                        .get(k.as_str().unwrap())
                        .is_some_and(|vs| !vs.iter().any(|x| Some(x.as_str()) == v.as_str()))
                });
            if excluded {
                continue;
            }
            // A nominal quota of 0 and no borrowing can still admit by borrowing from
            // the cohort: every listed flavor counts.
            let t = fl["spec"]["topologyName"].as_str().unwrap_or_else(|| {
                panic!(
                    "{ex}: job {} ({level}) reaches flavor {fname} without a Topology",
                    name(j)
                )
            });
            assert!(
                topologies[t].iter().any(|l| l == level),
                "{ex}: job {} asks for {level}, flavor {fname}'s Topology {t} has {:?}",
                name(j),
                topologies[t]
            );
            reached += 1;
        }
    }
    assert!(reached > 0, "{ex}: job {} reaches no flavor", name(j));
}

/// The values the pods' required node affinity allows per label key.
fn required_values(j: &Value) -> BTreeMap<String, Vec<String>> {
    let mut allowed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let terms = &j["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    for t in terms.as_sequence().into_iter().flatten() {
        for e in t["matchExpressions"].as_sequence().into_iter().flatten() {
            if e["operator"].as_str() == Some("In") {
                allowed.insert(
                    e["key"].as_str().unwrap().to_string(),
                    e["values"]
                        .as_sequence()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_string())
                        .collect(),
                );
            }
        }
    }
    allowed
}

/// The GPU model of the node the plan puts a class's first gang on.
fn planned_model(x: &Targets, class: &str) -> Option<String> {
    let w = x.p.workloads.iter().find(|w| w.name == class)?;
    let node = &w.gangs.first()?.nodes.first()?.node;
    x.c.node(node)?.gpus.iter().find_map(|g| g.model.clone())
}

/// Every Volcano job's `highestTierAllowed` is a tier of some HyperNode that contains
/// one of its candidate nodes (those of its pool).
fn volcano_tiers_exist(x: &Targets) {
    let Targets {
        ex, k8s, volcano, ..
    } = x;
    let hypernodes = kind(volcano, "HyperNode");
    // Node -> (pool, GPU model).
    let pool_of: BTreeMap<String, (String, String)> = kind(k8s, "Node")
        .into_iter()
        .map(|n| {
            let label = |k: &str| {
                n["metadata"]["labels"][k]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            (
                name(n),
                (label("gpuplan.io/pool"), label("gpuplan.io/gpu-model")),
            )
        })
        .collect();
    // The value a Volcano job's node affinity requires for label `key`.
    fn selected(j: &Value, key: &str) -> Option<String> {
        j["spec"]["tasks"][0]["template"]["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            ["matchExpressions"]
            .as_sequence()
            .and_then(|e| {
                e.iter()
                    .find(|x| x["key"].as_str() == Some(key))
                    .and_then(|x| x["values"][0].as_str())
            })
            .map(str::to_string)
    }
    // The nodes below each HyperNode (members are nodes or HyperNodes of the tier below).
    fn below(h: &Value, all: &[&Value], out: &mut BTreeSet<String>) {
        for m in h["spec"]["members"].as_sequence().unwrap() {
            let sel = m["selector"]["exactMatch"]["name"].as_str();
            match (m["type"].as_str(), sel) {
                (Some("Node"), Some(n)) => {
                    out.insert(n.to_string());
                }
                (Some("HyperNode"), Some(n)) => {
                    if let Some(child) = all.iter().find(|x| name(x) == n) {
                        below(child, all, out);
                    }
                }
                _ => {}
            }
        }
    }
    for j in kind(volcano, "Job") {
        let Some(tier) = j["spec"]["networkTopology"]["highestTierAllowed"].as_i64() else {
            continue;
        };
        let pool = selected(j, "gpuplan.io/pool");
        // Its GPU model: the one its affinity selects, else the one the plan gives it.
        let model = selected(j, "gpuplan.io/gpu-model").or_else(|| planned_model(x, &name(j)));
        let candidates: BTreeSet<&String> = pool_of
            .iter()
            .filter(|(_, (p, m))| {
                pool.as_ref().is_none_or(|want| want == p)
                    && model.as_ref().is_none_or(|want| want == m)
            })
            .map(|(n, _)| n)
            .collect();
        let ok = hypernodes.iter().any(|h| {
            h["spec"]["tier"].as_i64() == Some(tier) && {
                let mut nodes = BTreeSet::new();
                below(h, &hypernodes, &mut nodes);
                nodes.iter().any(|n| candidates.contains(n))
            }
        });
        assert!(
            ok,
            "{ex}: Volcano job {} allows tier {tier}, which no HyperNode over its nodes has",
            name(j)
        );
    }
}

/// Every Slurm sbatch example asks for a partition slurm.conf defines, GPUs of a type
/// and features its nodes define, `--switches` only where topology.conf has a switch
/// over one of its candidate nodes (its partition's nodes with its GPU type), and
/// `--segment` only where one of them is in a block.
fn slurm_jobs_name_what_slurm_defines(x: &Targets) {
    let Targets { ex, files, .. } = x;
    let Some(conf) = files.get("slurm/slurm.conf") else {
        return;
    };
    let partitions: BTreeMap<String, BTreeSet<String>> = slurm_fields(conf, "PartitionName=")
        .into_iter()
        .map(|f| (f["PartitionName"].clone(), expand(&f["Nodes"])))
        .collect();
    // Node -> (features, GRES).
    let node_lines: BTreeMap<String, (BTreeSet<String>, String)> = slurm_fields(conf, "NodeName=")
        .into_iter()
        .flat_map(|f| {
            let features: BTreeSet<String> = f
                .get("Features")
                .map(|v| v.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            let gres = f.get("Gres").cloned().unwrap_or_default();
            expand(&f["NodeName"])
                .into_iter()
                .map(move |n| (n, (features.clone(), gres.clone())))
        })
        .collect();
    let topo = files
        .get("slurm/topology.conf")
        .cloned()
        .unwrap_or_default();
    let under = |prefix: &str| -> BTreeSet<String> {
        slurm_fields(&topo, prefix)
            .into_iter()
            .filter_map(|f| f.get("Nodes").map(|n| expand(n)))
            .flatten()
            .collect()
    };
    let (switched, blocked) = (under("SwitchName="), under("BlockName="));
    for (path, sb) in files
        .iter()
        .filter(|(p, _)| p.starts_with("slurm/workloads/"))
    {
        let opt = |name: &str| {
            sb.lines()
                .find_map(|l| l.strip_prefix(&format!("#SBATCH --{name}=")))
        };
        let mut candidates: BTreeSet<&String> = node_lines.keys().collect();
        if let Some(p) = opt("partition") {
            let nodes = partitions
                .get(p)
                .unwrap_or_else(|| panic!("{ex}: {path} partition {p}"));
            candidates.retain(|n| nodes.contains(*n));
        }
        if let Some(g) = opt("gres") {
            // `gpu:h100:8`: the type must be in the node's Gres=.
            let kind = g.rsplit_once(':').map_or(g, |(k, _)| k);
            candidates.retain(|n| node_lines[*n].1.split(',').any(|x| x.starts_with(kind)));
        }
        assert!(!candidates.is_empty(), "{ex}: {path} fits no node");
        if let Some(fs) = opt("constraint") {
            // sbatch reads quotes like a shell; brackets are matching OR.
            for f in fs
                .trim_matches(['\'', '"'])
                .split(['&', '|', ','])
                .map(|f| f.trim_matches(['[', ']']))
            {
                assert!(
                    candidates.iter().any(|n| node_lines[*n].0.contains(f)),
                    "{ex}: {path} feature {f} is on none of its nodes"
                );
            }
        }
        if opt("switches").is_some() {
            assert!(
                candidates.iter().any(|n| switched.contains(*n)),
                "{ex}: {path} asks for switches, topology.conf has none over its nodes"
            );
        }
        if opt("segment").is_some() {
            assert!(
                candidates.iter().any(|n| blocked.contains(*n)),
                "{ex}: {path} asks for a segment, topology.conf has no block with its nodes"
            );
        }
    }
}

/// Teams: guarantee and ceiling (each target its scheduler's part).
fn teams_agree(x: &Targets) {
    for t in &x.p.teams {
        team_k8s(x, t);
        team_kai(x, t);
        team_volcano(x, t);
        team_kueue(x, t);
        team_slurm(x, t);
    }
}

type Team = gpuplan::placement::TeamUsage;

fn team_k8s(x: &Targets, t: &Team) {
    let Targets {
        ex, c, files, k8s, ..
    } = x;
    if files.keys().any(|f| f.starts_with("k8s/")) {
        if let Some((_, ceil)) = part(c, &t.name, KUBE) {
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
        }
    }
}

/// KAI: the Queue's quota and limit are the guarantee and ceiling plus the same planned
/// fractions (issue 34), so their difference is the team's slack.
fn team_kai(x: &Targets, t: &Team) {
    let Targets { ex, c, files, .. } = x;
    let kai = docs(files, "kai/");
    if let Some((g, ceil)) = part(c, &t.name, &[Authority::Kai]).filter(|_| !kai.is_empty()) {
        let q = kind(&kai, "Queue")
            .into_iter()
            .find(|d| name(d) == t.name)
            .unwrap_or_else(|| panic!("{ex}: no KAI Queue for {}", t.name));
        let gpu = &q["spec"]["resources"]["gpu"];
        let (quota, limit) = (
            gpu["quota"].as_f64().unwrap(),
            gpu["limit"].as_f64().unwrap(),
        );
        assert!(quota >= g as f64, "{ex} {} kai quota", t.name);
        assert_eq!(
            limit - quota,
            (ceil - g) as f64,
            "{ex} {} kai limit",
            t.name
        );
    }
}

fn team_volcano(x: &Targets, t: &Team) {
    let Targets { ex, c, volcano, .. } = x;
    if let Some((g, ceil)) = part(c, &t.name, &[Authority::Volcano]).filter(|_| !volcano.is_empty())
    {
        let q = kind(volcano, "Queue")
            .into_iter()
            .find(|d| name(d) == t.name)
            .unwrap_or_else(|| panic!("{ex}: no Queue for {}", t.name));
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
    }
}

fn team_kueue(x: &Targets, t: &Team) {
    let Targets {
        ex, c, p, kueue, ..
    } = x;
    if let Some((g, ceil)) = part(c, &t.name, &[Authority::Kueue]).filter(|_| !kueue.is_empty()) {
        let cq = kind(kueue, "ClusterQueue")
            .into_iter()
            .find(|d| name(d) == t.name)
            .unwrap();
        // A parent team (issue 34): its quota is its Cohort's, which lets its
        // subtree borrow ceiling - guarantee; its own queue holds none and borrows
        // up to the ceiling (tests/it/render_cohorts.rs checks that the tree adds up).
        let cohort = kind(kueue, "Cohort")
            .into_iter()
            .find(|d| name(d) == t.name && d["spec"]["parentName"].as_str().is_some());
        if let Some(co) = cohort {
            for grp in co["spec"]["resourceGroups"].as_sequence().unwrap() {
                for fl in grp["flavors"].as_sequence().unwrap() {
                    for r in fl["resources"].as_sequence().unwrap() {
                        assert_eq!(num(&r["borrowingLimit"]), ceil - g, "{ex} {}", t.name);
                    }
                }
            }
            assert_eq!(cq["spec"]["cohortName"].as_str(), Some(t.name.as_str()));
        }
        let mut nominal = 0;
        let mut whole_flavors = 0;
        // Flavors of whole-GPU nodes: the only ones with whole-GPU quota.
        let whole_flavor = |f: &str| {
            kind(kueue, "ResourceFlavor").into_iter().any(|rf| {
                name(rf) == f && {
                    let l = &rf["spec"]["nodeLabels"];
                    p.pools.iter().any(|np| {
                        np.mode == gpuplan::placement::PoolMode::WholeGpu
                            && l["gpuplan.io/pool"].as_str()
                                == Some(np.pool.as_deref().unwrap_or("whole-gpu"))
                    })
                }
            })
        };
        for grp in cq["spec"]["resourceGroups"].as_sequence().unwrap() {
            for fl in grp["flavors"].as_sequence().unwrap() {
                if !whole_flavor(fl["name"].as_str().unwrap()) {
                    continue;
                }
                for r in fl["resources"].as_sequence().unwrap() {
                    if r["name"].as_str() == Some("nvidia.com/gpu") {
                        whole_flavors += 1;
                        nominal += num(&r["nominalQuota"]);
                        // A parent's own queue borrows up to its ceiling.
                        let slack = if cohort.is_some() { ceil } else { ceil - g };
                        assert_eq!(num(&r["borrowingLimit"]), slack, "{ex} {} kueue", t.name);
                    }
                }
            }
        }
        // Declared quotas that cover no whole-GPU pool of Kueue's nodes (MIG /
        // shared pools, models only found there, other schedulers' quotas) are not
        // whole-GPU nominal quota.
        let kueue_node =
            |n: &str| serves(c, &[Authority::Kueue], c.node_authority(c.node_index[n]));
        let whole: Vec<(String, Option<String>)> = p
            .pools
            .iter()
            .filter(|np| np.mode == gpuplan::placement::PoolMode::WholeGpu && kueue_node(&np.node))
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
            .filter(|q| q.model.is_some() || q.pool.is_some())
            .filter(|q| !c.authorities_declared() || c.quota_authorities(q) == [Authority::Kueue])
            .filter(|q| !whole.iter().any(|(m, pool)| q.covers(m, pool.as_deref())))
            .map(|q| q.guarantee as i64)
            .sum();
        if whole_flavors > 0 && cohort.is_none() {
            assert_eq!(nominal, g - elsewhere, "{ex} {} kueue nominal", t.name);
        }
    }
}

fn team_slurm(x: &Targets, t: &Team) {
    let Targets { ex, c, files, .. } = x;
    if let (Some(sacct), Some((g, ceil))) = (
        files.get("slurm/sacctmgr.sh"),
        part(c, &t.name, &[Authority::Slurm]),
    ) {
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
    let mut model: Vec<(i64, String)> = c
        .priorities
        .iter()
        .map(|p| (p.value, p.name.clone()))
        .collect();
    model.sort_by(|a, b| b.cmp(a));
    for (targets, k) in [(k8s, "PriorityClass"), (kueue, "WorkloadPriorityClass")] {
        if targets.is_empty() {
            continue;
        }
        let mut got: Vec<(i64, String)> = kind(targets, k)
            .iter()
            .map(|d| (num(&d["value"]), name(d)))
            .collect();
        got.sort_by(|a, b| b.cmp(a));
        assert_eq!(got, model, "{ex} {k}");
    }
    if let Some(sacct) = files.get("slurm/sacctmgr.sh") {
        for (v, n) in &model {
            assert!(
                sacct.contains(&format!("where name={n} set Priority={v} ")),
                "{ex} qos {n}"
            );
        }
    }
}

/// Pools: the same nodes in the plan, the node labels and the Slurm partitions (each
/// target: the nodes its scheduler owns).
fn pools_agree(x: &Targets) {
    let Targets {
        ex,
        c,
        p,
        files,
        k8s,
        kueue,
        ..
    } = x;
    let pools = |target: &[Authority]| {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for np in &p.pools {
            if !serves(c, target, c.node_authority(c.node_index[&np.node])) {
                continue;
            }
            let pool = np
                .pool
                .clone()
                .unwrap_or_else(|| np.mode.as_str().to_string());
            out.entry(pool).or_default().insert(np.node.clone());
        }
        out
    };
    let mut labelled: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for n in kind(k8s, "Node") {
        let pool = n["metadata"]["labels"]["gpuplan.io/pool"]
            .as_str()
            .unwrap()
            .to_string();
        labelled.entry(pool).or_default().insert(name(n));
    }
    assert_eq!(labelled, pools(KUBE), "{ex} k8s node labels");
    if let Some(conf) = files.get("slurm/slurm.conf") {
        let partitions: BTreeMap<String, BTreeSet<String>> = slurm_fields(conf, "PartitionName=")
            .into_iter()
            .map(|f| (f["PartitionName"].clone(), expand(&f["Nodes"])))
            .collect();
        assert_eq!(
            partitions,
            pools(&[Authority::Slurm]),
            "{ex} slurm partitions"
        );
    }
    if !kueue.is_empty() {
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
            pools(&[Authority::Kueue]).keys().cloned().collect(),
            "{ex} kueue flavors"
        );
    }
}

/// The `gpuplan.io/gangs` of a Job template (1 when absent).
fn gangs_of(d: &Value) -> i64 {
    let a = &d["metadata"]["annotations"]["gpuplan.io/gangs"];
    if a.is_null() { 1 } else { num(a) }
}

/// Training gangs: pods and GPUs per pod, in every target that runs the class, and the
/// class's gangs add up over its objects (one per placement group).
fn gangs_agree(x: &Targets) {
    let Targets {
        ex,
        c,
        p,
        files,
        k8s,
        volcano,
        kueue,
    } = x;
    for w in p
        .workloads
        .iter()
        .filter(|w| w.kind == "training" && !w.gangs.is_empty())
    {
        let a = c
            .workloads
            .iter()
            .find(|m| m.name == w.name)
            .and_then(|m| c.authority_of(m));
        let shapes: BTreeSet<(i64, i64)> = w
            .gangs
            .iter()
            .map(|g| (g.nodes.len() as i64, g.nodes[0].gpus.len() as i64))
            .collect();
        let gangs = w.gangs.len() as i64;
        let of_class =
            |d: &&Value| d["metadata"]["labels"]["gpuplan.io/class"].as_str() == Some(&w.name);
        if serves(c, &[Authority::Volcano], a) {
            let mut total = 0;
            for vj in kind(volcano, "Job").into_iter().filter(of_class) {
                let pods = num(&vj["spec"]["minAvailable"]);
                assert_eq!(num(&vj["spec"]["tasks"][0]["replicas"]), pods);
                let tpl = &vj["spec"]["tasks"][0]["template"];
                assert!(
                    shapes.contains(&(pods, pod_gpus(volcano, tpl))),
                    "{ex} {} volcano shape",
                    w.name
                );
                total += gangs_of(vj);
            }
            assert_eq!(total, gangs, "{ex} {} volcano gangs", w.name);
        }
        for (docs, what, auth) in [
            (k8s, "k8s", Authority::Kubernetes),
            (kueue, "kueue", Authority::Kueue),
        ] {
            if !serves(c, &[auth], a) {
                continue;
            }
            let mut total = 0;
            for j in kind(docs, "Job")
                .into_iter()
                .filter(of_class)
                .filter(|d| d["apiVersion"].as_str() == Some("batch/v1"))
            {
                let tpl = &j["spec"]["template"];
                assert!(
                    shapes.contains(&(num(&j["spec"]["parallelism"]), pod_gpus(docs, tpl))),
                    "{ex} {} {what} shape",
                    w.name
                );
                total += gangs_of(j);
            }
            assert_eq!(total, gangs, "{ex} {} {what} gangs", w.name);
        }
        if serves(c, &[Authority::Slurm], a) {
            let mut total = 0;
            for (_, sb) in files.iter().filter(|(f, t)| {
                f.starts_with("slurm/workloads/")
                    && t.contains(&format!("#SBATCH --comment=gpuplan.io/class={}\n", w.name))
            }) {
                let opt = |name: &str| {
                    sb.lines()
                        .find_map(|l| l.strip_prefix(&format!("#SBATCH --{name}=")))
                };
                let pods: i64 = opt("nodes").unwrap().parse().unwrap();
                let per_pod: i64 = opt("gres")
                    .unwrap()
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(
                    shapes.contains(&(pods, per_pod)),
                    "{ex} {} slurm shape",
                    w.name
                );
                total += opt("array")
                    .map(|a| a.trim_start_matches("0-").parse::<i64>().unwrap() + 1)
                    .unwrap_or(1);
            }
            assert_eq!(total, gangs, "{ex} {} slurm gangs", w.name);
        }
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
        "examples/mixed-authority",
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
        "examples/mixed-authority",
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
        "examples/mixed-authority",
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
        let layouts = config_layouts(&ex, configs);
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
            // Device-plugin config: the label names a rendered config; a DRA node runs
            // no device plugin.
            let labels = &n["metadata"]["labels"];
            if labels["nvidia.com/gpu.deploy.device-plugin"].as_str() == Some("false") {
                assert!(
                    labels["nvidia.com/device-plugin.config"].is_null(),
                    "{ex} {node}"
                );
                continue;
            }
            let dp = labels["nvidia.com/device-plugin.config"].as_str().unwrap();
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

/// The layout of every GPU in every mig-parted config (config name -> gpu -> sorted
/// profiles), each spec checked against mig-parted's format.
fn config_layouts(
    ex: &str,
    configs: &serde_yaml::Mapping,
) -> BTreeMap<String, BTreeMap<u64, Vec<String>>> {
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
    layouts
}

/// The cross-object checks fail on the defect issue 16 found: an H100 flavor without a
/// Topology reached by a gang with a topology annotation (Kueue never admits it).
#[test]
fn cross_object_checks_catch_a_flavor_without_topology() {
    let (c, p) = plan(Path::new("tests/fixtures/hetero-gb200-h100"));
    let mut files = render_all(&c, &p);
    let flavors = files.get_mut("kueue/resourceflavors.yaml").unwrap();
    assert!(flavors.contains("topologyName: hetero-leaf-spine"));
    *flavors = flavors.replace("  topologyName: hetero-leaf-spine\n", "");
    let t = Targets::new("hetero (broken)", &c, &p, &files);
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kueue_topologies_reach(&t)));
    assert!(
        caught.is_err(),
        "the check accepted a flavor without a Topology"
    );
}

/// The Volcano and Slurm checks fail on the same class of defect: a gang limited to a
/// tier (NVLink, tier 1) that its H100 nodes are in no HyperNode of, and an H100 gang
/// asking for a segment while only the GB200 racks are blocks.
#[test]
fn cross_object_checks_catch_tiers_and_segments_its_nodes_lack() {
    let (c, p) = plan(Path::new("tests/fixtures/hetero-gb200-h100"));
    let fails = |edit: &dyn Fn(&mut Files), check: fn(&Targets)| {
        let mut files = render_all(&c, &p);
        edit(&mut files);
        let t = Targets::new("hetero (broken)", &c, &p, &files);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&t))).is_err()
    };
    let replace = |path: &'static str, from: &'static str, to: &'static str| {
        move |files: &mut Files| {
            let text = files.get_mut(path).unwrap();
            assert!(text.contains(from), "{path} has no `{from}`");
            *text = text.replace(from, to);
        }
    };
    assert!(
        fails(
            &replace(
                "volcano/workloads/tune.yaml",
                "highestTierAllowed: 2",
                "highestTierAllowed: 1"
            ),
            volcano_tiers_exist
        ),
        "the Volcano check accepted an H100 gang limited to NVLink HyperNodes"
    );
    assert!(
        fails(
            &replace(
                "slurm/workloads/dense.sbatch",
                "#SBATCH --switches=1\n",
                "#SBATCH --segment=4\n"
            ),
            slurm_jobs_name_what_slurm_defines
        ),
        "the Slurm check accepted a segment without blocks"
    );
}
