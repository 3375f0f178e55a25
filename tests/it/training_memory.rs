//! Issue 29: `memory` on training classes. A rank (one GPU of the gang) needs `memory`;
//! the class is planned only on GPU models whose GPU holds it, its scheduler is chosen
//! among those owning such nodes, and a `memory` no model holds (or a `models` entry
//! that cannot hold it) is GP015.

use crate::common;

use gpuplan::model::Authority;
use gpuplan::solve::SolverKind;
use gpuplan::source::SourceMap;

/// Four nodes of 40 GB A100s (first by name) and two of 80 GB ones, with `extra` pools
/// and a training class whose body ends with `body`.
fn cluster(extra: &str, body: &str) -> String {
    format!(
        r#"
cluster "c"
node-class "a40" {{
    cpu sockets=2 cores-per-socket=32 threads-per-core=2
    gpus 8 model="a100-sxm4-40gb"
    nics 4 speed="200Gbps" kind="infiniband"
}}
node-class "a80" {{
    cpu sockets=2 cores-per-socket=32 threads-per-core=2
    gpus 8 model="a100-sxm4-80gb"
    nics 4 speed="200Gbps" kind="infiniband"
}}
nodes "a-[01-04]" class="a40"
nodes "b-[01-02]" class="a80"
fabric {{
    leaf "l1" nodes="a-[01-04]"
    leaf "l2" nodes="b-[01-02]"
}}
{extra}
team "t" guarantee=16 burst=48
priority "p" value=10
training "llm" team="t" priority="p" {{
    gang gpus=16 gpus-per-node=8
{body}
}}
"#
    )
}

/// The codes and messages of the errors `validate` reports.
fn diagnostics(kdl: &str) -> Vec<(String, String)> {
    let mut sources = SourceMap::new();
    sources.add("c.kdl", kdl.to_string());
    gpuplan::validate::validate(&sources)
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code.to_string(), d.message.clone()))
        .collect()
}

/// The nodes the class's gangs landed on.
fn gang_nodes(kdl: &str, solver: SolverKind) -> Vec<String> {
    let c = common::load_text(kdl);
    let p = common::plan(&c, solver);
    let w = p.workloads.iter().find(|w| w.name == "llm").unwrap();
    assert_eq!(w.replicas_placed, 1, "{solver:?}");
    w.gangs
        .iter()
        .flat_map(|g| g.nodes.iter().map(|n| n.node.clone()))
        .collect()
}

#[test]
fn issue29_training_memory_validates() {
    let kdl = cluster("", "    memory \"60GiB\"");
    assert_eq!(diagnostics(&kdl), vec![]);
}

#[test]
fn issue29_training_memory_keeps_the_gang_off_smaller_gpus() {
    // Without `memory` the gang takes the first nodes by name, the 40 GB ones.
    assert_eq!(
        gang_nodes(&cluster("", ""), SolverKind::Ilp),
        ["a-01", "a-02"]
    );
    for solver in [SolverKind::Ilp, SolverKind::Greedy] {
        let nodes = gang_nodes(&cluster("", "    memory \"60GiB\""), solver);
        assert_eq!(nodes, ["b-01", "b-02"], "{solver:?}");
    }
    // A rank that fits 40 GB runs anywhere.
    let nodes = gang_nodes(&cluster("", "    memory \"40GiB\""), SolverKind::Ilp);
    assert_eq!(nodes, ["a-01", "a-02"]);
}

#[test]
fn issue29_training_memory_no_model_holds_is_gp015() {
    let d = diagnostics(&cluster("", "    memory \"90GiB\""));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].0, "GP015");
    assert!(d[0].1.contains("needs 90GiB per GPU"), "{d:?}");
}

#[test]
fn issue29_training_memory_contradicting_models_is_gp015() {
    let body = "    memory \"60GiB\"\n    models \"a100-sxm4-40gb\" \"a100-sxm4-80gb\"";
    let d = diagnostics(&cluster("", body));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].0, "GP015");
    assert!(d[0].1.contains("`a100-sxm4-40gb` in its `models`"), "{d:?}");
    // The models that hold it are fine.
    let body = "    memory \"60GiB\"\n    models \"a100-sxm4-80gb\" \"h100-sxm5-80gb\"";
    assert_eq!(diagnostics(&cluster("", body)), vec![]);
}

#[test]
fn issue29_training_memory_decides_the_scheduler() {
    // Slurm owns the 40 GB nodes, Volcano the 80 GB ones, no default: only Volcano owns a
    // GPU that holds a rank.
    let pools = "pool \"hpc\" mode=\"training\" nodes=\"a-[01-04]\" scheduler=\"slurm\"\n\
                 pool \"k8s\" mode=\"training\" nodes=\"b-[01-02]\" scheduler=\"volcano\"";
    let kdl = cluster(pools, "    memory \"60GiB\"");
    let c = common::load_text(&kdl);
    let w = c.workloads.iter().find(|w| w.name == "llm").unwrap();
    assert_eq!(c.authority_of(w), Some(Authority::Volcano));
    assert_eq!(gang_nodes(&kdl, SolverKind::Ilp), ["b-01", "b-02"]);
    // Without `memory` both could run it.
    let d = diagnostics(&cluster(pools, ""));
    assert!(d.iter().any(|(c, _)| c == "GP036"), "{d:?}");
}
