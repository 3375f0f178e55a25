//! The planner knows DRA: on a node that hands out GPUs through DRA, a GPU shared by
//! replicas is shared through one ResourceClaim, which one class's object references,
//! so the planner puts one class's fractions on a GPU (both solvers: the ILP's patterns
//! and pricing, the greedy and post-pass packing). The same classes on device-plugin
//! nodes still share a GPU. What the planner makes renders with no GP944 and passes
//! check-render.

use crate::common;

use gpuplan::model::{Allocation, Cluster};
use gpuplan::placement::Placement;
use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;
use std::collections::{BTreeMap, BTreeSet};

/// Two classes of 25% fractions (`a`, `b`, two replicas each) on one node of `gpus`
/// L40S, handed out by the device plugin or (`dra`) through DRA.
fn cluster(gpus: u32, dra: bool) -> Cluster {
    let allocation = if dra {
        "    gpu-allocation \"dra\"\n"
    } else {
        ""
    };
    common::load_text(&format!(
        r#"
cluster "c" {{
    scheduler "kubernetes"
    kubernetes version="1.34"
{allocation}}}
node-class "small" {{
    cpu sockets=1 cores-per-socket=16
    memory "128GiB"
    gpus {gpus} model="l40s-48gb"
}}
nodes "n-1" class="small"
team "t" guarantee=1 burst=4
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
    ))
}

/// The classes whose fractions each (node, GPU) holds.
fn classes_per_gpu(p: &Placement) -> BTreeMap<(String, u32), BTreeSet<String>> {
    let mut out: BTreeMap<(String, u32), BTreeSet<String>> = BTreeMap::new();
    for w in &p.workloads {
        for e in &w.packed {
            for g in &e.gpus {
                out.entry((e.node.clone(), *g))
                    .or_default()
                    .insert(w.name.clone());
            }
        }
    }
    out
}

fn placed(p: &Placement) -> u32 {
    p.workloads.iter().map(|w| w.replicas_placed).sum()
}

/// Render for every target: no GP944, and check-render finds the files carry the plan.
fn renders_realizably(c: &Cluster, p: &Placement) {
    let out = render::render(c, p, &Target::ALL, &render::Options::default()).expect("renders");
    assert!(
        !out.warnings.iter().any(|w| w.code == "GP944"),
        "{:?}",
        out.warnings
    );
    let report = gpuplan::realize::check(&out.files, c, p);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
}

/// One GPU: on the device plugin both classes share it (4 replicas of 25%); under DRA
/// it serves one class's two replicas, the other class waits.
#[test]
fn a_dra_gpu_holds_one_class_s_fractions() {
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let plugin = common::plan(&cluster(1, false), solver);
        assert_eq!(placed(&plugin), 4, "{solver:?}: the device plugin shares");
        let c = cluster(1, true);
        assert_eq!(c.node_allocation(0), Allocation::Dra);
        let p = common::plan(&c, solver);
        let per_gpu = classes_per_gpu(&p);
        assert!(
            per_gpu.values().all(|cs| cs.len() == 1),
            "{solver:?}: {per_gpu:?}"
        );
        assert_eq!(placed(&p), 2, "{solver:?}: one class on the one GPU");
        renders_realizably(&c, &p);
    }
}

/// Two GPUs under DRA: every replica placed, each class on a GPU of its own.
#[test]
fn two_dra_gpus_give_each_class_its_own() {
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let c = cluster(2, true);
        let p = common::plan(&c, solver);
        assert_eq!(placed(&p), 4, "{solver:?}");
        let per_gpu = classes_per_gpu(&p);
        assert_eq!(per_gpu.len(), 2, "{solver:?}: {per_gpu:?}");
        assert!(
            per_gpu.values().all(|cs| cs.len() == 1),
            "{solver:?}: {per_gpu:?}"
        );
        renders_realizably(&c, &p);
    }
}

/// A re-plan from a placement that shared a DRA GPU between two classes (made while
/// the node was on the device plugin) keeps at most one class there: the previous
/// placement is not kept where DRA cannot carry it.
#[test]
fn a_previous_shared_gpu_is_not_kept_under_dra() {
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let before = common::plan(&cluster(2, false), solver);
        let c = cluster(2, true);
        let p = common::plan_from(&c, Some(&before), solver);
        let per_gpu = classes_per_gpu(&p);
        assert!(
            per_gpu.values().all(|cs| cs.len() == 1),
            "{solver:?}: {per_gpu:?}"
        );
        assert_eq!(placed(&p), 4, "{solver:?}");
        renders_realizably(&c, &p);
    }
}

/// A small DRA cluster: `nodes` nodes of `gpus` L40S under `scheduler`, and fraction
/// classes `(replicas, share in 1/1000, MPS)` competing for them.
fn random_cluster(nodes: u32, gpus: u32, scheduler: &str, classes: &[(u32, u32, bool)]) -> String {
    let mut text = format!(
        r#"
cluster "r" {{
    scheduler "{scheduler}"
    kubernetes version="1.34"
    volcano version="1.15"
    gpu-allocation "dra"
}}
node-class "small" {{
    cpu sockets=1 cores-per-socket=32
    memory "256GiB"
    gpus {gpus} model="l40s-48gb"
}}
nodes "n-[1-{nodes}]" class="small"
team "t" guarantee=1 burst=64
priority "p" value=100
"#
    );
    for (i, (replicas, milli, mps)) in classes.iter().enumerate() {
        let isolation = if *mps { "    isolation \"mps\"\n" } else { "" };
        text.push_str(&format!(
            "inference \"f{i}\" team=\"t\" priority=\"p\" replicas={replicas} {{\n    fraction \"{}%\"\n{isolation}    requests cpu=1 memory=\"1GiB\"\n}}\n",
            *milli as f64 / 10.0
        ));
    }
    text
}

proptest::proptest! {
    #![proptest_config(common::proptest_config(48))]

    /// Random fraction classes crowding a few DRA nodes (kube-scheduler or Volcano),
    /// planned by both solvers: every GPU holds one class's fractions, the placement
    /// passes the checker, and the files carry it (no GP944, check-render clean).
    #[test]
    fn crowded_dra_nodes_keep_one_class_per_gpu(
        nodes in 1u32..3,
        gpus in proptest::sample::select(vec![1u32, 2, 4]),
        volcano in proptest::bool::ANY,
        classes in proptest::collection::vec(
            (1u32..7, proptest::sample::select(vec![100u32, 200, 250, 300, 500]), proptest::bool::ANY),
            2..5,
        ),
    ) {
        let scheduler = if volcano { "volcano" } else { "kubernetes" };
        let text = random_cluster(nodes, gpus, scheduler, &classes);
        let mut sources = gpuplan::source::SourceMap::new();
        sources.add("r.kdl", text.clone());
        let c = common::try_load(&sources);
        proptest::prop_assume!(c.is_ok());
        let c = c.expect("valid");
        for solver in [SolverKind::Ilp, SolverKind::Greedy] {
            let p = common::plan(&c, solver);
            let per_gpu = classes_per_gpu(&p);
            proptest::prop_assert!(
                per_gpu.values().all(|cs| cs.len() == 1),
                "{text}\n{solver:?}: {per_gpu:?}"
            );
            renders_realizably(&c, &p);
        }
    }
}
