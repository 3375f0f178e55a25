//! Dynamic Resource Allocation and IMEX (issue 33): what a DRA pool's workloads ask
//! (claims, never an extended `nvidia.com/*` resource), one ComputeDomain per
//! multi-node NVLink gang of the GB200 example with `numNodes` its planned nodes and
//! every pod referencing its channel claim, MPS and time-slicing claims matching the
//! plan's shares (golden snapshot), the Kubernetes version gate (GP052), the Slurm IMEX
//! lines and their gate (GP940), and the warnings where a scheduler cannot carry DRA
//! or IMEX (GP941, GP942, GP943).

use crate::common;

use gpuplan::model::{Allocation, Cluster};
use gpuplan::placement::Placement;
use gpuplan::render::{self, Files, Rendered, Target};
use gpuplan::solve::SolverKind;
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::BTreeMap;

fn planned(c: &Cluster) -> Placement {
    common::plan(c, SolverKind::Ilp)
}

fn render_all(c: &Cluster, p: &Placement) -> Rendered {
    render::render(c, p, &Target::ALL, &render::Options::default()).expect("renders")
}

fn render_with(c: &Cluster, p: &Placement, opts: &render::Options) -> Rendered {
    render::render(c, p, &Target::ALL, opts).expect("renders")
}

/// Every YAML document of the files under `prefix`, with its file.
fn docs(files: &Files, prefix: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (p, text) in files
        .iter()
        .filter(|(p, _)| p.starts_with(prefix) && p.ends_with(".yaml"))
    {
        for d in serde_yaml::Deserializer::from_str(text) {
            let v = Value::deserialize(d).unwrap_or_else(|e| panic!("{p}: {e}"));
            if !v.is_null() {
                out.push((p.clone(), v));
            }
        }
    }
    out
}

fn kind<'a>(docs: &'a [(String, Value)], k: &str) -> Vec<&'a Value> {
    docs.iter()
        .filter(|(_, d)| d["kind"].as_str() == Some(k))
        .map(|(_, d)| d)
        .collect()
}

fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap()
}

/// The pod template of a workload object (Deployment, Job, Volcano Job).
fn template(o: &Value) -> &Value {
    if o["apiVersion"].as_str() == Some("batch.volcano.sh/v1alpha1") {
        &o["spec"]["tasks"][0]["template"]
    } else {
        &o["spec"]["template"]
    }
}

/// The values a pod template's required node affinity allows for `key`.
fn affinity(tpl: &Value, key: &str) -> Vec<String> {
    let terms = &tpl["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    terms[0]["matchExpressions"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter(|e| e["key"].as_str() == Some(key))
        .flat_map(|e| e["values"].as_sequence().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// Every resource name the containers of a pod template ask (limits and requests).
fn asked(tpl: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in tpl["spec"]["containers"].as_sequence().unwrap() {
        for sect in ["limits", "requests"] {
            if let Some(m) = c["resources"][sect].as_mapping() {
                out.extend(m.keys().filter_map(|k| k.as_str().map(String::from)));
            }
        }
    }
    out
}

/// The workload objects of the Kubernetes-side folders.
fn workloads(files: &Files) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in ["k8s/", "kueue/", "volcano/"] {
        out.extend(
            docs(files, dir)
                .into_iter()
                .filter(|(_, d)| matches!(d["kind"].as_str(), Some("Deployment" | "Job"))),
        );
    }
    out
}

/// The allocation of the pools a pod template selects (every node of them).
fn pool_allocations(c: &Cluster, tpl: &Value) -> Vec<Allocation> {
    let pools = affinity(tpl, "gpuplan.io/pool");
    let mut out: Vec<Allocation> = c
        .pools
        .iter()
        .filter(|p| pools.contains(&p.name))
        .flat_map(|p| p.nodes.iter().map(|&n| c.node_allocation(n)))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn dra_pools_ask_no_extended_resource_and_plugin_pools_still_do() {
    let c = common::load_dir("examples/mixed-inference-dra");
    let p = planned(&c);
    let files = render_all(&c, &p).files;
    let mut seen = BTreeMap::new();
    for (file, o) in workloads(&files) {
        let tpl = template(&o);
        let alloc = pool_allocations(&c, tpl);
        assert_eq!(
            alloc.len(),
            1,
            "{file}: selects pools of one allocation mode"
        );
        let nvidia: Vec<String> = asked(tpl)
            .into_iter()
            .filter(|r| r.starts_with("nvidia.com/"))
            .collect();
        let claims = tpl["spec"]["resourceClaims"]
            .as_sequence()
            .map_or(0, Vec::len);
        match alloc[0] {
            Allocation::Dra => {
                assert!(
                    nvidia.is_empty(),
                    "{file}: a DRA pool's pod asks {nvidia:?}"
                );
                assert!(claims > 0, "{file}: a DRA pool's pod claims no device");
            }
            Allocation::DevicePlugin => {
                assert!(
                    !nvidia.is_empty(),
                    "{file}: a device-plugin pod asks no GPU"
                );
                assert_eq!(claims, 0, "{file}: a device-plugin pod claims devices");
            }
        }
        *seen.entry(alloc[0]).or_insert(0) += 1;
    }
    // The example is mixed: both kinds of objects are rendered.
    assert!(
        seen.get(&Allocation::Dra).is_some_and(|n| *n > 0),
        "{seen:?}"
    );
    assert!(
        seen.get(&Allocation::DevicePlugin).is_some_and(|n| *n > 0),
        "{seen:?}"
    );
    // DRA nodes run no device plugin; the others keep their config label.
    for n in kind(&docs(&files, "k8s/"), "Node") {
        let i = c.node_index[name(n)];
        let labels = &n["metadata"]["labels"];
        let off = labels["nvidia.com/gpu.deploy.device-plugin"].as_str() == Some("false");
        assert_eq!(off, c.node_allocation(i) == Allocation::Dra, "{}", name(n));
        assert_eq!(
            labels["nvidia.com/device-plugin.config"].is_null(),
            off,
            "{}",
            name(n)
        );
    }
}

#[test]
fn every_multi_node_nvlink_gang_gets_one_compute_domain() {
    let c = common::load_dir("examples/gb200-nvl72-dra");
    let p = planned(&c);
    let files = render_all(&c, &p).files;
    let all = docs(&files, "kueue/");
    let domains = kind(&all, "ComputeDomain");
    let mut gangs = 0;
    for w in p.workloads.iter().filter(|w| w.kind == "training") {
        for g in &w.gangs {
            gangs += 1;
            let nodes: Vec<&str> = g.nodes.iter().map(|n| n.node.as_str()).collect();
            assert!(nodes.len() > 1, "{} gang {}: one node", w.name, g.replica);
            // The Job that carries this gang: its class, its pod count, its domain.
            let domain = c.node(nodes[0]).unwrap().mnnvl[0];
            let domain = &c.nvlink_domains[domain].name;
            let jobs: Vec<&Value> = kind(&all, "Job")
                .into_iter()
                .filter(|j| j["metadata"]["labels"]["gpuplan.io/class"].as_str() == Some(&w.name))
                .filter(|j| affinity(template(j), "gpuplan.io/nvlink-domain") == [domain.clone()])
                .collect();
            assert!(!jobs.is_empty(), "{} gang {}: no Job", w.name, g.replica);
            for j in &jobs {
                assert!(
                    j["metadata"]["annotations"]["gpuplan.io/gangs"].is_null(),
                    "one gang per Job"
                );
                let ns = j["metadata"]["namespace"].as_str().unwrap();
                let cds: Vec<&&Value> = domains
                    .iter()
                    .filter(|d| {
                        name(d) == name(j) && d["metadata"]["namespace"].as_str() == Some(ns)
                    })
                    .collect();
                assert_eq!(cds.len(), 1, "{}: exactly one ComputeDomain", name(j));
                let cd = cds[0];
                assert_eq!(
                    cd["spec"]["numNodes"].as_u64(),
                    Some(nodes.len() as u64),
                    "{}",
                    name(j)
                );
                assert_eq!(j["spec"]["parallelism"].as_u64(), Some(nodes.len() as u64));
                // Every pod references the channel claim, and its container uses it.
                let channel = cd["spec"]["channel"]["resourceClaimTemplate"]["name"]
                    .as_str()
                    .unwrap();
                let tpl = template(j);
                let claim = tpl["spec"]["resourceClaims"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .find(|r| r["resourceClaimTemplateName"].as_str() == Some(channel))
                    .unwrap_or_else(|| panic!("{}: no claim of {channel}", name(j)));
                let used: Vec<&str> = tpl["spec"]["containers"][0]["resources"]["claims"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .filter_map(|c| c["name"].as_str())
                    .collect();
                assert!(
                    used.contains(&claim["name"].as_str().unwrap()),
                    "{}",
                    name(j)
                );
                // The gang stays in its rack's NVLink clique.
                let clique = c
                    .node(nodes[0])
                    .unwrap()
                    .labels
                    .get("nvidia.com/gpu.clique")
                    .cloned();
                assert_eq!(
                    affinity(tpl, "nvidia.com/gpu.clique"),
                    clique.into_iter().collect::<Vec<_>>()
                );
            }
        }
    }
    assert!(
        gangs >= 3,
        "the example plans 3 multi-node gangs, got {gangs}"
    );
    assert_eq!(domains.len(), gangs, "one ComputeDomain per gang");
}

/// The shared ResourceClaims of the rendered files: (file, claim).
fn shared_claims(files: &Files) -> Vec<(String, Value)> {
    docs(files, "k8s/")
        .into_iter()
        .chain(docs(files, "volcano/"))
        .filter(|(_, d)| d["kind"].as_str() == Some("ResourceClaim"))
        .collect()
}

#[test]
fn mps_claims_share_as_the_plan_does() {
    let c = common::load_dir("examples/mixed-inference-dra");
    let p = planned(&c);
    let files = render_all(&c, &p).files;
    let claims = shared_claims(&files);
    assert!(!claims.is_empty(), "the example shares GPUs through DRA");
    for (file, claim) in &claims {
        let class = claim["metadata"]["labels"]["gpuplan.io/class"]
            .as_str()
            .unwrap();
        let w = c.workloads.iter().find(|w| w.name == class).unwrap();
        // The plan's share of one GPU: 1/per-gpu, or the fraction.
        let share = match (w.per_gpu, w.gpu_milli) {
            (Some(r), _) if r > 1 => 1000 / r as u64,
            (_, Some(m)) => m as u64,
            _ => panic!("{class} shares no GPU"),
        };
        let model = c.models.get(w.models[0].as_str()).unwrap();
        let sharing = &claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"];
        assert_eq!(
            claim["spec"]["devices"]["config"][0]["opaque"]["driver"].as_str(),
            Some("gpu.nvidia.com")
        );
        assert_eq!(sharing["strategy"].as_str(), Some("MPS"), "{file}");
        let mps = &sharing["mpsConfig"];
        assert_eq!(
            mps["defaultActiveThreadPercentage"].as_u64(),
            Some(share / 10),
            "{file}"
        );
        let memory = format!("{}Mi", model.memory.mib() * share / 1000);
        assert_eq!(
            mps["defaultPinnedDeviceMemoryLimit"].as_str(),
            Some(memory.as_str()),
            "{file}"
        );
        // Its pods are the plan's replicas on that GPU: one Deployment names the claim.
        let deployment = kind(&docs(&files, "k8s/"), "Deployment")
            .into_iter()
            .find(|d| name(d) == name(claim))
            .cloned()
            .unwrap();
        let replicas = deployment["spec"]["replicas"].as_u64().unwrap();
        assert!(replicas * share <= 1000, "{file}: {replicas} x {share}");
    }
    // Golden: the MPS claims and their objects (the notebooks' first GPU, the OCR
    // fractions' first GPU).
    let _version = common::snapshot_settings().bind_to_scope();
    for f in [
        "k8s/workloads/notebooks-1.yaml",
        "k8s/workloads/ocr-small-1.yaml",
    ] {
        insta::assert_snapshot!(f.replace('/', "__"), files[f]);
    }
}

const VOLCANO_TS: &str = r#"
cluster "c" {
    scheduler "volcano"
    kubernetes version="1.34"
    volcano version="1.15"
    gpu-allocation "dra"
}
node-class "l40s" {
    cpu sockets=1 cores-per-socket=32 threads-per-core=2
    memory "256GiB"
    gpus 4 model="l40s-48gb"
}
nodes "n-[1-2]" class="l40s"
fabric { leaf "l" nodes="n-[1-2]"; }
pool "dev" mode="time-slice" nodes="n-1"
pool "serve" mode="whole-gpu" nodes="n-2"
team "t" guarantee=4 burst=8
priority "p" value=100
dev "nb" team="t" priority="p" replicas=6 {
    share "time-slice" per-gpu=3
    memory "8GiB"
}
inference "chat" team="t" priority="p" replicas=2 {
    isolation "whole-gpu"
    gpus 2
    models "l40s-48gb"
}
"#;

#[test]
fn time_slicing_claims_and_volcano_device_quota() {
    let c = common::load_text(VOLCANO_TS);
    let p = planned(&c);
    let out = render_all(&c, &p);
    let claims = shared_claims(&out.files);
    assert!(!claims.is_empty());
    for (file, claim) in &claims {
        let sharing = &claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"];
        assert_eq!(sharing["strategy"].as_str(), Some("TimeSlicing"), "{file}");
        assert_eq!(
            sharing["timeSlicingConfig"]["interval"].as_str(),
            Some("Default")
        );
        assert!(file.starts_with("volcano/workloads/"), "{file}");
    }
    // Whole GPUs: a claim template with the replica's count, no extended resource.
    let rct = docs(&out.files, "volcano/")
        .into_iter()
        .find(|(_, d)| d["kind"].as_str() == Some("ResourceClaimTemplate"))
        .expect("a claim template")
        .1;
    let exactly = &rct["spec"]["spec"]["devices"]["requests"][0]["exactly"];
    assert_eq!(exactly["count"].as_u64(), Some(2));
    assert_eq!(
        exactly["deviceClassName"].as_str(),
        Some("l40s-48gb.gpuplan.io")
    );
    // Volcano 1.15 caps DRA devices per queue, and no warning says otherwise.
    let queues = &out.files["volcano/queues.yaml"];
    assert!(
        queues.contains("deviceclass/l40s-48gb.gpuplan.io:"),
        "{queues}"
    );
    assert!(
        out.warnings.iter().all(|w| w.code != "GP943"),
        "{:?}",
        out.warnings
    );
    // Older Volcano: warned (GP943), and no deviceclass keys.
    let old = common::load_text(
        &VOLCANO_TS.replace("volcano version=\"1.15\"", "volcano version=\"1.12\""),
    );
    let out = render_all(&old, &planned(&old));
    assert!(out.warnings.iter().any(|w| w.code == "GP943"));
    assert!(!out.files["volcano/queues.yaml"].contains("deviceclass/"));
    // The checker agrees the files carry out the plan.
    let report = gpuplan::realize::check(&render_all(&c, &p).files, &c, &p);
    assert!(report.realizable, "{:#?}", report.violations);
}

#[test]
fn dra_below_kubernetes_1_34_is_refused_with_a_span_and_a_hint() {
    let text = std::fs::read_to_string("examples/gb200-nvl72-dra/cluster.kdl")
        .unwrap()
        .replace("kubernetes version=\"1.34\"", "kubernetes version=\"1.33\"");
    let sources = common::sources(&[("cluster.kdl".into(), text)]);
    let outcome = gpuplan::validate::validate(&sources);
    let d = outcome
        .diagnostics
        .iter()
        .find(|d| d.code == "GP052")
        .expect("GP052");
    assert!(d.span.is_some() && d.help.is_some(), "{d:?}");
    assert!(d.message.contains("1.33"), "{}", d.message);
    // Undeclared is refused too.
    let text = std::fs::read_to_string("examples/gb200-nvl72-dra/cluster.kdl")
        .unwrap()
        .replace(
            "    kubernetes version=\"1.34\"  // resource.k8s.io/v1 (DRA) is served from 1.34\n",
            "",
        );
    let sources = common::sources(&[("cluster.kdl".into(), text)]);
    let codes: Vec<&str> = gpuplan::validate::validate(&sources)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect();
    assert!(codes.contains(&"GP052"), "{codes:?}");
}

#[test]
fn slurm_imex_lines_follow_the_declared_version() {
    let c = common::load_dir("examples/gb200-nvl72");
    let p = planned(&c);
    // The example names Slurm 24.05: switch/nvidia_imex gives every job a channel.
    let out = render_all(&c, &p);
    let conf = &out.files["slurm/slurm.conf"];
    assert!(conf.contains("\nSwitchType=switch/nvidia_imex\n"), "{conf}");
    assert!(conf.contains("\nSwitchParameters=imex_channel_count=2048\n"));
    assert!(out.warnings.iter().all(|w| w.code != "GP940"));
    assert!(gpuplan::realize::check(&out.files, &c, &p).realizable);
    // 22.05 (Debian's, the conformance daemons) has no such plugin: no line, GP940.
    let opts = render::Options {
        slurm_version: Some(vec![22, 5]),
        ..Default::default()
    };
    let old = render_with(&c, &p, &opts);
    assert!(!old.files["slurm/slurm.conf"].contains("SwitchType"));
    assert!(old.warnings.iter().any(|w| w.code == "GP940"));
    // Without the lines a 24.05 cluster's gangs have no channel: the checker says so.
    let mut broken = out.files.clone();
    let conf = broken["slurm/slurm.conf"].replace("SwitchType=switch/nvidia_imex\n", "");
    broken.insert("slurm/slurm.conf".into(), conf);
    let report = gpuplan::realize::check(&broken, &c, &p);
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.invariant == gpuplan::realize::Invariant::Imex),
        "{:#?}",
        report.violations
    );
}

#[test]
fn device_plugin_gangs_in_an_nvlink_domain_are_warned_about() {
    // blackwell-ultra: Kubernetes 1.33, device plugin, a 64-GPU gang in one GB300 rack.
    let c = common::load_dir("examples/blackwell-ultra");
    let out = render_all(&c, &planned(&c));
    assert!(
        out.warnings.iter().any(|w| w.code == "GP941"),
        "{:?}",
        out.warnings
    );
    // In DRA mode the gang gets a ComputeDomain instead, and no warning.
    let c = common::load_dir("examples/gb200-nvl72-dra");
    let out = render_all(&c, &planned(&c));
    assert!(
        out.warnings
            .iter()
            .all(|w| w.code != "GP941" && w.code != "GP942")
    );
    // A Kueue that does not count claim templates by default: GP942.
    let text: Vec<(String, String)> = ["cluster.kdl", "workloads.kdl"]
        .iter()
        .map(|f| {
            let t = std::fs::read_to_string(format!("examples/gb200-nvl72-dra/{f}")).unwrap();
            (
                f.to_string(),
                t.replace("kueue version=\"0.19\"", "kueue version=\"0.16\""),
            )
        })
        .collect();
    let c = common::load(&common::sources(&text));
    let out = render_all(&c, &planned(&c));
    assert!(
        out.warnings.iter().any(|w| w.code == "GP942"),
        "{:?}",
        out.warnings
    );
}

/// The invariants check-render finds violated in `files`.
fn violated(files: &Files, c: &Cluster, p: &Placement) -> Vec<(String, String)> {
    gpuplan::realize::check(files, c, p)
        .violations
        .into_iter()
        .map(|v| (v.invariant.as_str().to_string(), v.message))
        .collect()
}

/// `files` with `from` replaced by `to` in `path` (which must contain it).
fn edited(files: &Files, path: &str, from: &str, to: &str) -> Files {
    let mut out = files.clone();
    let text = &files[path];
    assert!(text.contains(from), "{path} lacks {from:?}");
    out.insert(path.to_string(), text.replacen(from, to, 1));
    out
}

#[test]
fn check_render_finds_what_dra_files_get_wrong() {
    let c = common::load_dir("examples/gb200-nvl72-dra");
    let p = planned(&c);
    let files = render_all(&c, &p).files;
    assert!(violated(&files, &c, &p).is_empty());
    // A gang whose pods lose their channel claim, or whose ComputeDomain is sized wrong.
    let job = "kueue/workloads/moe-pretrain.yaml";
    let v = violated(
        &edited(
            &files,
            job,
            "        - name: imex-channel\n          resourceClaimTemplateName: moe-pretrain-channel\n",
            "",
        ),
        &c,
        &p,
    );
    let v2 = violated(&edited(&files, job, "numNodes: 18", "numNodes: 9"), &c, &p);
    assert!(has(&v2, "imex", "numNodes 9"), "{v2:#?}");
    // (without the claim the container's `imex-channel` names nothing: refused as a parse)
    assert!(!v.is_empty(), "{v:#?}");
    let v = violated(
        &edited(
            &edited(
                &files,
                job,
                "        - name: imex-channel\n          resourceClaimTemplateName: moe-pretrain-channel\n",
                "",
            ),
            job,
            "              - name: imex-channel\n",
            "",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "imex", "without an IMEX channel"), "{v:#?}");
    // A DRA node that keeps the device plugin.
    let v = violated(
        &edited(
            &files,
            "k8s/nodes.yaml",
            "    nvidia.com/gpu.deploy.device-plugin: \"false\"\n",
            "",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "capacity", "runs the device plugin too"), "{v:#?}");
    // A DeviceClass that selects another model: no device of the node matches.
    let v = violated(
        &edited(
            &files,
            "k8s/dra/deviceclasses.yaml",
            "'NVIDIA GB200'",
            "'NVIDIA GB300'",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "carried", "which no device of"), "{v:#?}");
    // Kueue without the device-class mapping does not count the claims.
    let v = violated(
        &edited(
            &files,
            "kueue/dra-configuration.yaml",
            "    - name: nvidia.com/gpu\n",
            "    - name: example.com/gpu\n",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "quota", "does not cover example.com/gpu"), "{v:#?}");
    let v = violated(
        &edited(
            &files,
            "kueue/dra-configuration.yaml",
            "        - gb200-186gb.gpuplan.io\n",
            "",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "quota", "Kueue does not count them"), "{v:#?}");
}

/// Shared GPUs on DRA nodes: an MPS claim that caps clients below the share, a claim of
/// the other sharing strategy, a pod asking an extended resource on a DRA node, a quota
/// below the plan.
#[test]
fn check_render_finds_what_shared_dra_files_get_wrong() {
    let c = common::load_dir("examples/mixed-inference-dra");
    let p = planned(&c);
    let files = render_all(&c, &p).files;
    assert!(violated(&files, &c, &p).is_empty());
    let nb = "k8s/workloads/notebooks-1.yaml";
    let v = violated(
        &edited(
            &files,
            nb,
            "defaultActiveThreadPercentage: 25",
            "defaultActiveThreadPercentage: 20",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "sharing", "20%"), "{v:#?}");
    let v = violated(
        &edited(
            &files,
            nb,
            "strategy: MPS\n              mpsConfig:",
            "strategy: TimeSlicing\n              mpsConfig:",
        ),
        &c,
        &p,
    );
    assert!(has(&v, "sharing", "time-slicing"), "{v:#?}");
    let chat = "k8s/workloads/chat-7b.yaml";
    let v = violated(
        &edited(
            &files,
            chat,
            "            claims:\n              - name: gpus\n",
            "            claims:\n              - name: gpus\n            limits:\n              nvidia.com/mig-1g.20gb: \"1\"\n",
        ),
        &c,
        &p,
    );
    assert!(
        has(&v, "carried", "which a DRA node does not advertise"),
        "{v:#?}"
    );
    let q = "k8s/resourcequotas.yaml";
    let v = violated(
        &edited(
            &files,
            q,
            "l40s-48gb.gpuplan.io.deviceclass.resource.k8s.io/devices: \"4\"",
            "l40s-48gb.gpuplan.io.deviceclass.resource.k8s.io/devices: \"3\"",
        ),
        &c,
        &p,
    );
    assert!(
        has(&v, "quota", "deviceclass.resource.k8s.io/devices"),
        "{v:#?}"
    );
}

/// Whether a violation of invariant `inv` says `text`.
fn has(v: &[(String, String)], inv: &str, text: &str) -> bool {
    v.iter().any(|(i, m)| i == inv && m.contains(text))
}

/// Two fraction classes on a cluster of one single-GPU node.
fn two_fraction_classes(allocation: &str) -> String {
    format!(
        r#"
cluster "c" {{
    scheduler "kubernetes"
    kubernetes version="1.34"
{allocation}}}
node-class "one" {{
    cpu sockets=1 cores-per-socket=16
    memory "128GiB"
    gpus 1 model="l40s-48gb"
}}
nodes "n-1" class="one"
team "t" guarantee=1 burst=1
priority "p" value=100
inference "a" team="t" priority="p" replicas=2 {{
    fraction "25%"
    requests cpu=1 memory="1GiB"
}}
inference "b" team="t" priority="p" replicas=2 {{
    fraction "25%"
    requests cpu=1 memory="1GiB"
}}
"#
    )
}

/// Fractions of two classes on one GPU of a DRA node (what the device plugin's
/// planning does on the same node): a GPU belongs to one claim, so the files cannot
/// carry it; render warns (GP944), check-render agrees, and the placement checker
/// refuses such a placement. The planner never makes one (tests/it/dra_planner.rs): the
/// placement here is the device-plugin twin's, rendered for the DRA cluster.
#[test]
fn a_dra_gpu_shared_by_two_objects_is_warned_and_refused() {
    let plugin = common::load_text(&two_fraction_classes(""));
    let p = planned(&plugin);
    let shared: Vec<_> = p
        .workloads
        .iter()
        .flat_map(|w| w.packed.iter().map(|e| (e.node.clone(), e.gpus.clone())))
        .collect();
    assert_eq!(shared.len(), 2, "both classes on the one GPU: {shared:?}");
    let c = common::load_text(&two_fraction_classes("    gpu-allocation \"dra\"\n"));
    let out = render_all(&c, &p);
    assert!(
        out.warnings.iter().any(|w| w.code == "GP944"),
        "{:?}",
        out.warnings
    );
    let v = violated(&out.files, &c, &p);
    assert!(v.iter().any(|(i, _)| i == "capacity"), "{v:#?}");
    let refused = gpuplan::placement::check::check(&c, &p);
    assert!(
        refused
            .iter()
            .any(|v| v.message.contains("GPU 0 of node `n-1`")
                && v.message.contains("ResourceClaim")),
        "{refused:#?}"
    );
}
