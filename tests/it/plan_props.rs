//! Property tests of the planner: on random small valid clusters (two leaves, mixed
//! GPU counts, down GPUs, teams with parents and ceilings, gangs with required tiers,
//! MIG, time-slice and whole-GPU inference: `common::arb`), the greedy plan always
//! passes the independent checker, and planning is deterministic. Fixed seed in CI
//! (`common::proptest_config`); failing cases go to `tests/regressions/`.

use crate::common;

use crate::common::arb::{kdl, spec};
use gpuplan::placement;
use gpuplan::solve::SolverKind;
use gpuplan::source::SourceMap;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

proptest! {
    #![proptest_config(common::proptest_config(96))]

    #[test]
    fn greedy_plans_pass_the_checker(s in spec()) {
        let text = kdl(&s);
        let mut sources = SourceMap::new();
        sources.add("prop.kdl", text.clone());
        let c = common::try_load(&sources);
        prop_assume!(c.is_ok());
        let c = c.expect("valid");
        // Unchecked: the checker's violations are the property (and its message).
        let p = common::unchecked(&c, SolverKind::Greedy);
        let errors = placement::check(&c, &p);
        prop_assert!(errors.is_empty(), "{text}\n{errors:#?}");
        let mut q = common::unchecked(&c, SolverKind::Greedy);
        q.solver.seconds = p.solver.seconds;
        prop_assert_eq!(p, q);
    }
}

#[test]
fn the_generator_produces_valid_configurations() {
    // Guard against a generator that only produces rejected inputs.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut valid = 0;
    for _ in 0..64 {
        let s = spec().new_tree(&mut runner).unwrap().current();
        let mut sources = SourceMap::new();
        sources.add("prop.kdl", kdl(&s));
        match common::try_load(&sources) {
            Ok(_) => valid += 1,
            Err(errors) if valid == 0 => eprintln!("{}\n{errors:#?}", kdl(&s)),
            Err(_) => {}
        }
    }
    assert!(
        valid >= 32,
        "only {valid} of 64 generated configurations are valid"
    );
}
