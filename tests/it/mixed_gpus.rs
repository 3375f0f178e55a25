//! Node classes with GPUs of several models (issue 30): one `gpus` line per model, GPU
//! indexes running across the lines; the fixture is tests/fixtures/mixed-gpus.

use crate::common;

use crate::common::{gpuplan, load_dir, load_text};
use gpuplan::model::PoolMode;
use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;

const FIXTURE: &str = "tests/fixtures/mixed-gpus";

/// Diagnostic codes of one configuration text.
fn codes(text: &str) -> Vec<&'static str> {
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add("test.kdl", text.to_string());
    let outcome = gpuplan::validate::validate(&sources);
    outcome.diagnostics.iter().map(|d| d.code).collect()
}

const MIXED: &str = r#"
cluster "c" { scheduler "slurm"; }
node-class "x" {
    cpu sockets=2 cores-per-socket=16
    gpus 8 model="a100-sxm4-80gb"
    gpus 2 model="t4-16gb"
    nvlink-domain gpus="0-7"
    numa 0 gpus="0-3,8"
    numa 1 gpus="4-7,9"
}
nodes "n-[1-2]" class="x" {
    node "n-2" gpus-down="9"
}
fabric { leaf "l" nodes="n-[1-2]"; }
"#;

#[test]
fn a_mixed_class_keeps_each_gpu_model_with_node_wide_indexes() {
    let c = load_text(MIXED);
    let k = &c.classes["x"];
    assert_eq!(k.gpu_count, 10);
    assert!(k.is_mixed());
    assert_eq!(k.gpus_text(), "8 a100-sxm4-80gb + 2 t4-16gb");
    let n = &c.nodes[c.node_index["n-1"]];
    let models: Vec<&str> = n.gpus.iter().map(|g| g.model.as_deref().unwrap()).collect();
    assert_eq!(models[..8], ["a100-sxm4-80gb"; 8]);
    assert_eq!(models[8..], ["t4-16gb"; 2]);
    assert_eq!(n.gpus[8].numa, Some(0));
    assert_eq!(n.gpus[9].numa, Some(1));
    let down = &c.nodes[c.node_index["n-2"]];
    assert!(down.gpus[9].down && !down.gpus[8].down);
}

#[test]
fn a_single_model_class_reads_as_before() {
    let c = load_text(
        "cluster \"c\" { scheduler \"slurm\"; }\nnode-class \"h\" { cpu sockets=1 cores-per-socket=8; gpus 4 model=\"h100-sxm5-80gb\"; }\nnodes \"h-1\" class=\"h\"\nfabric { leaf \"l\" nodes=\"h-1\"; }\n",
    );
    let k = &c.classes["h"];
    assert!(!k.is_mixed());
    assert_eq!(k.gpu_model.as_deref(), Some("h100-sxm5-80gb"));
    assert_eq!(k.model_of(3), Some("h100-sxm5-80gb"));
    assert_eq!(k.model_of(4), None);
}

#[test]
fn index_sets_run_across_the_lines() {
    // 10 GPUs: index 9 is the second T4, 10 is out of range (GP011).
    let bad = MIXED.replace("numa 1 gpus=\"4-7,9\"", "numa 1 gpus=\"4-7,10\"");
    assert!(codes(&bad).contains(&"GP011"), "{:?}", codes(&bad));
    assert!(
        codes(MIXED)
            .iter()
            .all(|c| !c.starts_with("GP0") || *c == "GP033")
    );
}

#[test]
fn every_model_line_is_checked_against_the_catalog() {
    let bad = MIXED.replace("t4-16gb", "t5-16gb");
    assert!(codes(&bad).contains(&"GP006"), "{:?}", codes(&bad));
}

#[test]
fn two_lines_of_one_model_are_an_error() {
    let bad = MIXED.replace(
        "gpus 2 model=\"t4-16gb\"",
        "gpus 2 model=\"a100-sxm4-80gb\"",
    );
    assert!(codes(&bad).contains(&"GP007"), "{:?}", codes(&bad));
}

#[test]
fn two_drivers_on_one_node_are_an_error() {
    let bad = MIXED
        .replace(
            "model=\"t4-16gb\"",
            "model=\"t4-16gb\" driver=\"550.54.15\"",
        )
        .replace(
            "model=\"a100-sxm4-80gb\"",
            "model=\"a100-sxm4-80gb\" driver=\"535.104.05\"",
        );
    assert!(codes(&bad).contains(&"GP051"), "{:?}", codes(&bad));
    let same = bad.replace("550.54.15", "535.104.05");
    assert!(!codes(&same).contains(&"GP051"));
}

#[test]
fn validate_and_show_print_the_mixed_gpus() {
    let out = gpuplan(&["validate", FIXTURE]);
    let err = String::from_utf8_lossy(&out.stderr);
    let text = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("8 nodes, 32 GPUs (mixed nodes: 2 tesla + 2 kepler in class tux)"),
        "{text}"
    );
    let out = gpuplan(&["show", FIXTURE]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("class tux: 8 nodes x 2 tesla + 2 kepler"),
        "{text}"
    );
    let c = load_dir(FIXTURE);
    assert_eq!(c.nodes.len(), 8);
}

/// The fixture's nodes' GPUs of each model: "tesla" are 0-1, "kepler" 2-3.
const TESLA: [u32; 2] = [0, 1];
const KEPLER: [u32; 2] = [2, 3];

#[test]
fn the_planner_keeps_each_class_on_the_gpus_of_its_model() {
    let c = load_dir(FIXTURE);
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let p = common::plan(&c, solver);
        let w = |name: &str| p.workloads.iter().find(|w| w.name == name).unwrap();
        for name in ["finetune", "ocr", "embed"] {
            assert_eq!(
                w(name).replicas_placed,
                w(name).replicas_requested,
                "{solver:?} {name}: {:?}",
                w(name).unplaced
            );
        }
        for g in &w("finetune").gangs {
            assert_eq!(g.nodes.len(), 1, "{solver:?}: {g:?}");
            assert_eq!(g.nodes[0].gpus, TESLA, "{solver:?}: {g:?}");
        }
        for g in &w("ocr").gangs {
            assert!(g.nodes[0].gpus.iter().all(|x| KEPLER.contains(x)), "{g:?}");
        }
        for i in &w("embed").mig_instances {
            assert!(TESLA.contains(&i.gpu), "{solver:?}: {i:?}");
            assert!(["tux6", "tux7"].contains(&i.node.as_str()), "{i:?}");
        }
        for l in &p.mig_layouts {
            assert!(TESLA.contains(&l.gpu) && l.model == "tesla", "{l:?}");
        }
        // One pool entry per node, no planner-only pool; the MIG pool's nodes are MIG.
        assert_eq!(p.pools.len(), 8, "{:?}", p.pools);
        for np in &p.pools {
            let mig = np.node == "tux6" || np.node == "tux7";
            assert_eq!(np.mode == PoolMode::Mig, mig, "{np:?}");
            assert_eq!(np.pool.as_deref(), mig.then_some("mig"), "{np:?}");
        }
    }
}

#[test]
fn slurm_renders_one_gres_type_per_model_with_its_device_files() {
    let c = load_dir(FIXTURE);
    let p = common::plan(&c, SolverKind::Ilp);
    let files = render::render(&c, &p, &[Target::Slurm], &render::Options::default())
        .expect("renders")
        .files;
    let text = |suffix: &str| {
        files
            .iter()
            .find(|(path, _)| path.ends_with(suffix))
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no {suffix}"))
    };
    let conf = text("slurm.conf");
    assert!(
        conf.contains("NodeName=tux[0-5] ")
            && conf.contains("Gres=gpu:kepler:2,gpu:tesla:2 Features=whole-gpu,tesla,kepler,")
            && conf.contains("NodeName=tux6 ")
            && conf.contains("Gres=gpu:1g.10gb:14,gpu:kepler:2 Features=mig,tesla,kepler,"),
        "{conf}"
    );
    let gres = text("gres.conf");
    if std::env::var("MIXED_DEBUG").is_ok() {
        eprintln!("{conf}\n{gres}");
        for (path, t) in files.iter().filter(|(p, _)| p.contains("/workloads/")) {
            eprintln!("=== {path}\n{t}");
        }
    }
    for line in [
        "NodeName=tux[0-5,7] Name=gpu Type=kepler File=/dev/nvidia2 Cores=0-15",
        "NodeName=tux[0-5,7] Name=gpu Type=kepler File=/dev/nvidia3 Cores=16-31",
        "NodeName=tux[0-5,7] Name=gpu Type=tesla File=/dev/nvidia0 Cores=0-15",
        "NodeName=tux[0-5,7] Name=gpu Type=tesla File=/dev/nvidia1 Cores=16-31",
        "NodeName=tux6 Name=gpu Type=kepler File=/dev/nvidia2 Cores=0-15",
        "NodeName=tux6 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,",
    ] {
        assert!(gres.contains(line), "{line}\n{gres}");
    }
    // The jobs ask for the type of the GPUs they were planned on.
    let jobs: String = files
        .iter()
        .filter(|(path, _)| path.contains("/workloads/"))
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(jobs.contains("gpu:tesla:2"), "{jobs}");
    assert!(jobs.contains("gpu:kepler:1"), "{jobs}");
}

#[test]
fn the_realizability_checker_reads_one_gres_type_per_model() {
    let c = load_dir(FIXTURE);
    let p = common::plan(&c, SolverKind::Ilp);
    let files = render::render(&c, &p, &Target::ALL, &render::Options::default())
        .expect("renders")
        .files;
    let r = gpuplan::realize::check(&files, &c, &p);
    assert!(r.realizable, "{}", gpuplan::realize::view::human(&r));
    // The types' device files swapped: counts agree, but a job asking for the A100s
    // ("tesla") would get the Kepler GPUs.
    let mut swapped = files.clone();
    let gres = swapped.get_mut("slurm/gres.conf").unwrap();
    *gres = gres
        .replace(
            "Type=kepler File=/dev/nvidia2",
            "Type=tesla File=/dev/nvidia2",
        )
        .replace(
            "Type=tesla File=/dev/nvidia0",
            "Type=kepler File=/dev/nvidia0",
        );
    let r = gpuplan::realize::check(&swapped, &c, &p);
    assert!(!r.realizable);
    assert!(
        r.violations
            .iter()
            .any(|v| v.message.contains("GPU 2, a kepler, the type tesla")),
        "{}",
        gpuplan::realize::view::human(&r)
    );
}

#[test]
fn kubernetes_family_schedulers_refuse_mixed_nodes() {
    for scheduler in ["kubernetes", "kueue", "volcano"] {
        let text = MIXED.replace("scheduler \"slurm\"", &format!("scheduler \"{scheduler}\""));
        assert!(
            codes(&text).contains(&"GP050"),
            "{scheduler}: {:?}",
            codes(&text)
        );
    }
    // No scheduler at all: every target renders the nodes, Kubernetes included.
    let none = MIXED.replace("cluster \"c\" { scheduler \"slurm\"; }", "cluster \"c\"");
    assert!(codes(&none).contains(&"GP050"), "{:?}", codes(&none));
    // Slurm, or a Slurm pool inside a Kubernetes cluster: fine.
    assert!(!codes(MIXED).contains(&"GP050"));
    let pool = MIXED.replace("scheduler \"slurm\"", "scheduler \"kubernetes\"")
        + "pool \"hpc\" mode=\"training\" nodes=\"n-[1-2]\" scheduler=\"slurm\"\n";
    assert!(!codes(&pool).contains(&"GP050"), "{:?}", codes(&pool));
}

#[test]
fn a_gang_over_nodes_keeps_one_model() {
    // Two gangs of 4 GPUs, 2 per node, of either model: each gang is one Slurm job
    // asking every node for one GRES type, so no gang mixes the models (nor takes the
    // A100s and the T4s of one node); the class keeps the model with the most GPUs.
    let text = MIXED.to_string()
        + r#"
team "t" guarantee=16 burst=19
priority "p" value=1
training "wide" team="t" priority="p" replicas=4 {
    gang gpus=4 gpus-per-node=2
    models "a100-sxm4-80gb" "t4-16gb"
}
"#;
    let c = load_text(&text);
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let p = common::plan(&c, solver);
        let w = p.workloads.iter().find(|w| w.name == "wide").unwrap();
        assert!(w.replicas_placed >= 1, "{solver:?}: {:?}", w.unplaced);
        for g in &w.gangs {
            let models: std::collections::BTreeSet<&str> = g
                .nodes
                .iter()
                .flat_map(|ng| {
                    let n = c.node(&ng.node).unwrap();
                    ng.gpus
                        .iter()
                        .map(move |i| n.gpus[*i as usize].model.as_deref().unwrap())
                })
                .collect();
            assert_eq!(models.len(), 1, "{solver:?}: {g:?}");
            let names: std::collections::BTreeSet<&str> =
                g.nodes.iter().map(|ng| ng.node.as_str()).collect();
            assert_eq!(names.len(), g.nodes.len(), "{solver:?}: {g:?}");
        }
    }
}

#[test]
fn a_gang_is_not_made_of_two_models() {
    // n-1 has only its A100s, n-2 only its T4s: the one gang of 2 x 2 GPUs would mix
    // them, so it is not placed.
    let text = r#"
cluster "c" { scheduler "slurm"; }
node-class "x" {
    cpu sockets=2 cores-per-socket=16
    gpus 2 model="a100-sxm4-80gb"
    gpus 2 model="t4-16gb"
}
nodes "n-[1-2]" class="x" {
    node "n-1" gpus-down="2-3"
    node "n-2" gpus-down="0-1"
}
fabric { leaf "l" nodes="n-[1-2]"; }
team "t" guarantee=4 burst=4
priority "p" value=1
training "wide" team="t" priority="p" {
    gang gpus=4 gpus-per-node=2
    models "a100-sxm4-80gb" "t4-16gb"
}
"#;
    let c = load_text(text);
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let p = common::plan(&c, solver);
        let w = p.workloads.iter().find(|w| w.name == "wide").unwrap();
        assert!(w.gangs.is_empty(), "{solver:?}: {:?}", w.gangs);
    }
}

#[test]
fn planning_again_keeps_everything_on_every_model() {
    let c = load_dir(FIXTURE);
    let first = common::plan(&c, SolverKind::Ilp);
    let again = common::plan_from(&c, Some(&first), SolverKind::Ilp);
    let m = again.moves.as_ref().expect("moves");
    let gangs: usize = first.workloads.iter().map(|w| w.gangs.len()).sum();
    let instances: usize = first.workloads.iter().map(|w| w.mig_instances.len()).sum();
    assert_eq!(m.gangs_kept as usize, gangs, "{m:?}");
    assert_eq!(m.gangs_moved, 0, "{m:?}");
    assert_eq!(m.replicas_kept as usize, instances, "{m:?}");
    assert_eq!(
        (m.replicas_moved, m.nodes_changed, m.mig_gpus_changed),
        (0, 0, 0),
        "{m:?}"
    );
}

#[test]
fn gpus_per_node_of_a_gang_counts_the_gpus_of_its_model() {
    // GP016 and the planner's gang split both count a node's T4s, not its ten GPUs.
    let text = MIXED.replace("gpus-down=\"9\"", "gpus-down=\"0\"")
        + r#"
team "t" guarantee=4 burst=4
priority "p" value=1
training "small" team="t" priority="p" {
    gang gpus=4
    models "t4-16gb"
}
"#;
    let c = load_text(&text);
    let w = c.workloads.iter().find(|w| w.name == "small").unwrap();
    // Two T4s per node (not the node's ten GPUs, nor one for want of an A100).
    assert_eq!(c.gang_per_node(w), 2);
}
