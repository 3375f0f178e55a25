//! Scheduling authority (issue 16): the planner keeps every class on its scheduler's
//! nodes, the plan shows the authority table, and the renders of the mixed-authority
//! example stay inside each scheduler (no Slurm node in a Kubernetes object, no Volcano
//! node in slurm.conf or a Kueue flavor, quota parts that add up to each team's quota).
//! The cross-target consistency test (tests/it/render.rs) checks the same on every example.

use crate::common;

use gpuplan::model::{Authority, Cluster};
use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;
use std::collections::BTreeSet;
use std::path::Path;

fn mixed() -> (Cluster, gpuplan::placement::Placement) {
    let c = common::load_dir(Path::new("examples/mixed-authority"));
    let p = common::plan(&c, SolverKind::Ilp);
    (c, p)
}

fn owner(c: &Cluster, n: &str) -> Option<Authority> {
    c.node_authority(c.node_index[n])
}

#[test]
fn every_class_lands_on_its_own_schedulers_nodes() {
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let c = common::load_dir(Path::new("examples/mixed-authority"));
        let p = common::plan(&c, solver);
        for w in &p.workloads {
            let m = c.workloads.iter().find(|m| m.name == w.name).unwrap();
            let a = c.authority_of(m).expect("resolved");
            let nodes = w
                .gangs
                .iter()
                .flat_map(|g| g.nodes.iter().map(|n| n.node.clone()))
                .chain(w.mig_instances.iter().map(|i| i.node.clone()))
                .chain(w.shares.iter().map(|s| s.node.clone()));
            for n in nodes {
                assert_eq!(owner(&c, &n), Some(a), "{solver:?}: {} on {n}", w.name);
            }
            assert_eq!(w.replicas_placed, w.replicas_requested, "{}", w.name);
        }
        // The view's model names never reach the user.
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains('@'), "{solver:?}: {json}");
    }
}

#[test]
fn the_plan_has_an_authority_table() {
    let (_, p) = mixed();
    let table: Vec<(Authority, u32, Vec<String>)> = p
        .authorities
        .iter()
        .map(|a| (a.scheduler, a.node_count, a.classes.clone()))
        .collect();
    assert_eq!(
        table,
        vec![
            (Authority::Kueue, 4, vec!["chat".to_string()]),
            (Authority::Volcano, 4, vec!["sweep".to_string()]),
            (
                Authority::Slurm,
                8,
                vec!["finetune".to_string(), "pretrain".to_string()]
            ),
        ]
    );
    let ml: Vec<(Authority, u32, u32)> = p
        .authorities
        .iter()
        .flat_map(|a| {
            a.teams
                .iter()
                .filter(|t| t.team == "ml")
                .map(move |t| (a.scheduler, t.guarantee, t.ceiling))
        })
        .collect();
    assert_eq!(
        ml,
        vec![(Authority::Kueue, 24, 24), (Authority::Slurm, 48, 56)]
    );
}

#[test]
fn renders_stay_inside_their_scheduler() {
    let (c, p) = mixed();
    let files = render::render(&c, &p, &Target::ALL, &render::Options::default())
        .unwrap()
        .files;
    let of = |a: Authority| -> Vec<&str> {
        c.nodes
            .iter()
            .filter(|n| owner(&c, &n.name) == Some(a))
            .map(|n| n.name.as_str())
            .collect()
    };
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-'))
            .map(str::to_string)
            .collect()
    };
    let in_dir = |dir: &str| -> BTreeSet<String> {
        files
            .iter()
            .filter(|(p, _)| p.starts_with(dir))
            .flat_map(|(_, t)| words(t))
            .collect()
    };
    // No Slurm-owned node in any Kubernetes object.
    let kube = [in_dir("k8s/"), in_dir("kueue/"), in_dir("volcano/")];
    for n in of(Authority::Slurm) {
        assert!(
            kube.iter().all(|w| !w.contains(n)),
            "Slurm node {n} in a Kubernetes object"
        );
    }
    // slurm.conf lists only hpc-* (expanded ranges); no Volcano node in it.
    let conf = &files["slurm/slurm.conf"];
    assert!(conf.contains("NodeName=hpc-[01-04]") && conf.contains("NodeName=hpc-[05-08]"));
    assert!(!conf.contains("vc-") && !conf.contains("kq-"));
    // No Volcano node in a Kueue flavor: flavors select gpuplan.io/scheduler: kueue.
    let flavors = &files["kueue/resourceflavors.yaml"];
    assert!(flavors.contains("gpuplan.io/scheduler: \"kueue\""));
    for n in of(Authority::Volcano) {
        assert!(!in_dir("kueue/").contains(n), "{n} in kueue/");
        assert!(!in_dir("slurm/").contains(n), "{n} in slurm/");
    }
    // Every file of a scoped target names the scheduler it serves.
    for (path, text) in &files {
        let want = match path.split('/').next().unwrap() {
            "slurm" => "for scheduler slurm",
            "volcano" => "for scheduler volcano",
            "kueue" => "for scheduler kueue",
            "k8s" => "for scheduler kueue, volcano",
            // NCCL's own XML reader takes no comments: topo.xml carries no header.
            "mig" | "fabric" if !path.ends_with(".xml") => "for every scheduler's nodes",
            _ => continue,
        };
        assert!(text.contains(want), "{path} does not say `{want}`");
    }
    // Quotas per authority add up to the team's quota: ml = Slurm 48/56 + Kueue 24/24.
    let sacct = &files["slurm/sacctmgr.sh"];
    assert!(sacct.contains("where name=ml set Fairshare=48 GrpTRES=gres/gpu=56"));
    assert!(
        !sacct.contains("name=research"),
        "research has no Slurm part"
    );
    let queues = &files["volcano/queues.yaml"];
    assert!(queues.contains("name: research") && !queues.contains("name: ml\n"));
    let rq = &files["k8s/resourcequotas.yaml"];
    // ResourceQuota caps every Kubernetes-managed part: ml's Kueue 24, research's Volcano 32.
    assert!(rq.contains("namespace: ml\nspec:\n  hard:\n    requests.nvidia.com/gpu: \"24\""));
    assert!(
        rq.contains("namespace: research\nspec:\n  hard:\n    requests.nvidia.com/gpu: \"32\"")
    );
    let ml = &c.teams["ml"];
    let parts = c.team_parts(ml);
    assert_eq!(
        parts.values().map(|p| p.guarantee).sum::<u32>(),
        ml.guarantee
    );
    assert_eq!(parts.values().map(|p| p.ceiling).sum::<u32>(), ml.ceiling());
    // Workloads select and tolerate their own scheduler only.
    let sweep = &files["volcano/workloads/sweep.yaml"];
    assert!(sweep.contains("key: gpuplan.io/scheduler\n                        operator: In\n                        values: [\"volcano\"]"));
    assert!(!sweep.contains("\"kueue\"") && !sweep.contains("\"slurm\""));
}

#[test]
fn a_named_target_without_nodes_warns_and_writes_nothing() {
    let dir = std::env::temp_dir().join(format!("gpuplan-authority-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = common::gpuplan(&[
        "render",
        "examples/small-lab",
        "--target",
        "volcano",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("GP914"), "{err}");
    assert!(!dir.join("volcano").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// CUDA (issue 17, driver compatibility): a class with `cuda` lands only on nodes whose
/// declared driver runs it, with either solver; a class without one may use any node.
#[test]
fn cuda_classes_land_only_where_the_driver_runs_them() {
    let kdl = r#"
cluster "c" { scheduler "kueue"; }
node-class "old" { gpus 8 model="h100-sxm5-80gb" driver="520.61.05"; }
node-class "new" { gpus 8 model="h100-sxm5-80gb" driver="550.54.15"; }
nodes "old-[01-02]" class="old"
nodes "new-[01-02]" class="new"
fabric { leaf "l1" nodes="[old,new]-[01-02]"; }
team "t" guarantee=32 burst=32 { quota model="h100-sxm5-80gb" guarantee=16 burst=24; }
priority "p" value=10
training "llm" team="t" priority="p" replicas=2 { gang gpus=8; cuda "12.4"; }
training "legacy" team="t" priority="p" replicas=2 { gang gpus=8; }
"#;
    let sources = common::sources(&[("c.kdl".to_string(), kdl.to_string())]);
    let c = common::load(&sources);
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let p = common::plan(&c, solver);
        let llm = p.workloads.iter().find(|w| w.name == "llm").unwrap();
        // The greedy baseline may fill the new nodes with `legacy` first (first fit).
        assert!(
            solver == SolverKind::Greedy || llm.replicas_placed >= 1,
            "{solver:?}"
        );
        for g in &llm.gangs {
            for n in &g.nodes {
                assert!(n.node.starts_with("new-"), "{solver:?}: llm on {}", n.node);
            }
        }
        // The per-model quota still counts every node of the model, whatever its driver:
        // 24 GPUs (3 of the 4 gangs), not 24 per driver.
        let placed: f64 = p.workloads.iter().map(|w| w.gpus_placed).sum();
        assert!(placed <= 24.0 + 1e-9, "{solver:?}: {placed}");
        assert!(
            solver == SolverKind::Greedy || (placed - 24.0).abs() < 1e-9,
            "{placed}"
        );
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains('~'), "{solver:?}: view names leaked");
    }
}

/// CUDA forward compatibility (issue 17): `cuda "13.0" compat=#true` runs on a data
/// center GPU with an R535 or R570 driver (NVIDIA's table lists both for
/// cuda-compat-13-0), not on R525 (end of life); without `compat`, R535 is too old.
#[test]
fn cuda_forward_compat_accepts_only_the_listed_branches() {
    let kdl = |driver: &str, compat: &str| {
        format!(
            r#"
cluster "c" {{ scheduler "kueue"; }}
node-class "h" {{ gpus 8 model="h100-sxm5-80gb" driver="{driver}"; }}
nodes "n-[01-02]" class="h"
fabric {{ leaf "l1" nodes="n-[01-02]"; }}
team "t" guarantee=16
priority "p" value=10
training "llm" team="t" priority="p" replicas=1 {{ gang gpus=8; cuda "13.0"{compat}; }}
"#
        )
    };
    let gp042 = |text: String| {
        let sources = common::sources(&[("c.kdl".to_string(), text)]);
        let out = gpuplan::validate::validate(&sources);
        out.diagnostics
            .iter()
            .filter(|d| d.code == "GP042")
            .map(|d| format!("{d:?}"))
            .collect::<Vec<_>>()
    };
    for driver in ["535.104.05", "570.26.00"] {
        assert!(gp042(kdl(driver, " compat=#true")).is_empty(), "{driver}");
        let c = common::load(&common::sources(&[(
            "c.kdl".to_string(),
            kdl(driver, " compat=#true"),
        )]));
        let p = common::plan(&c, SolverKind::Ilp);
        assert_eq!(p.workloads[0].replicas_placed, 1, "{driver}");
        // Without the package: too old, and the hint points at `compat=#true`.
        let d = gp042(kdl(driver, ""));
        assert_eq!(d.len(), 1, "{driver}");
        assert!(d[0].contains("compat=#true"), "{}", d[0]);
    }
    // R525 is not listed for cuda-compat-13-0: the declared package does not help.
    let d = gp042(kdl("525.85.12", " compat=#true"));
    assert_eq!(d.len(), 1);
    assert!(d[0].contains("does not help"), "{}", d[0]);
    assert!(d[0].contains("R535, R570"), "{}", d[0]);
}

/// Issue 29: a cluster whose default scheduler is Volcano, with a Slurm pool of H100 nodes
/// and Volcano's own A100 nodes; `llm` accepts only H100s, `chat` only A100s. `kq`: two
/// more H100 nodes in a pool of that scheduler; `llm`: properties of the class.
fn default_elsewhere(kq: Option<&str>, llm: &str) -> String {
    let (kq_nodes, kq_leaf, kq_pool) = match kq {
        Some(a) => (
            "nodes \"kq-[01-02]\" class=\"h\"".to_string(),
            "leaf \"l3\" nodes=\"kq-[01-02]\"".to_string(),
            format!("pool \"kq\" mode=\"training\" nodes=\"kq-[01-02]\" scheduler=\"{a}\""),
        ),
        None => Default::default(),
    };
    format!(
        r#"
cluster "c" {{
    scheduler "volcano"
}}
node-class "h" {{
    cpu sockets=2 cores-per-socket=56 threads-per-core=2
    gpus 8 model="h100-sxm5-80gb"
    nics 8 speed="400Gbps" kind="infiniband"
}}
node-class "a" {{
    gpus 8 model="a100-sxm4-80gb"
    nics 4 speed="200Gbps" kind="infiniband"
}}
nodes "hpc-[01-02]" class="h"
nodes "k8s-[01-02]" class="a"
{kq_nodes}
fabric {{
    leaf "l1" nodes="hpc-[01-02]"
    leaf "l2" nodes="k8s-[01-02]"
    {kq_leaf}
}}
pool "hpc" mode="training" nodes="hpc-[01-02]" scheduler="slurm"
{kq_pool}
team "hpc" guarantee=16
team "web" guarantee=2 burst=16
priority "p" value=10
training "llm" team="hpc" priority="p"{llm} {{
    gang gpus=16 gpus-per-node=8
    models "h100-sxm5-80gb"
}}
inference "chat" team="web" priority="p" replicas=2 {{
    gpus 1
    models "a100-sxm4-80gb"
}}
"#
    )
}

/// The errors `validate` reports: (code, message, hint).
fn errors(kdl: &str) -> Vec<(String, String, String)> {
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add("c.kdl", kdl.to_string());
    gpuplan::validate::validate(&sources)
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            (
                d.code.to_string(),
                d.message.clone(),
                d.help.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn issue29_gp036_default_scheduler_yields_to_the_one_owning_the_models() {
    // Only Slurm owns H100s: `llm` runs under Slurm, not under the default.
    let kdl = default_elsewhere(None, "");
    assert_eq!(errors(&kdl), vec![]);
    let c = common::load_text(&kdl);
    let llm = c.workloads.iter().find(|w| w.name == "llm").unwrap();
    let chat = c.workloads.iter().find(|w| w.name == "chat").unwrap();
    assert_eq!(c.authority_of(llm), Some(Authority::Slurm));
    assert_eq!(c.authority_of(chat), Some(Authority::Volcano));
    let p = common::plan(&c, SolverKind::Ilp);
    let w = p.workloads.iter().find(|w| w.name == "llm").unwrap();
    let nodes: Vec<&str> = w.gangs[0].nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(nodes, ["hpc-01", "hpc-02"]);
    // `gpuplan render --target slurm` renders the class under Slurm.
    let dir = common::Scratch::new("issue29-authority");
    dir.write("c.kdl", &kdl);
    let (code, _, err) = dir.run(&["render", "c.kdl", "--target", "slurm", "--out-dir", "out"]);
    assert_eq!(code, 0, "{err}");
    let job = dir.read("out/slurm/workloads/llm.sbatch");
    assert!(job.contains("for scheduler slurm"), "{job}");
    assert!(job.contains("llm"), "{job}");
    let (code, _, err) = dir.run(&["render", "c.kdl", "--target", "volcano", "--out-dir", "v"]);
    assert_eq!(code, 0, "{err}");
    let volcano: String = common::tree(&dir.path("v"))
        .iter()
        .map(|(p, b)| format!("{p}\n{}", String::from_utf8_lossy(b)))
        .collect();
    assert!(!volcano.contains("llm"), "{volcano}");
}

#[test]
fn issue29_gp036_still_refuses_the_ambiguous_and_the_pinned_elsewhere() {
    // H100s under Slurm and Kueue, none under the default: which one?
    let e = errors(&default_elsewhere(Some("kueue"), ""));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, "GP036");
    assert!(e[0].1.contains("could run under kueue or slurm"), "{e:?}");
    assert!(
        e[0].2
            .contains("the cluster's default, volcano, owns no node"),
        "{e:?}"
    );
    // With the default owning H100s too, the default decides.
    let c = common::load_text(&default_elsewhere(Some("volcano"), ""));
    let llm = c.workloads.iter().find(|w| w.name == "llm").unwrap();
    assert_eq!(c.authority_of(llm), Some(Authority::Volcano));
    // A class pinned to a scheduler that owns none of its models is still refused.
    let e = errors(&default_elsewhere(None, " scheduler=\"volcano\""));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].1
            .contains("volcano owns no node with a GPU model it accepts"),
        "{e:?}"
    );
}

/// The solver's view renames every GPU model per scheduler, driver and spot side and
/// renames the model's topology to match instead of building it again: on every
/// example that has a view, each tier's domains are those a build of the view gives.
#[test]
fn the_views_renamed_topology_is_the_built_one() {
    let mut viewed = 0;
    for e in std::fs::read_dir("examples").unwrap() {
        let dir = e.unwrap().path();
        let c = common::load_dir(&dir);
        if !c.needs_view() {
            continue;
        }
        viewed += 1;
        let v = gpuplan::model::authority::solver_view(&c);
        let built = gpuplan::model::Topology::build(&v);
        for tier in gpuplan::model::Tier::ALL {
            assert_eq!(
                v.topology.domains_ref(tier),
                built.domains_ref(tier),
                "{}: {tier:?}",
                dir.display()
            );
        }
    }
    assert!(viewed >= 3, "{viewed} examples with a view");
}
