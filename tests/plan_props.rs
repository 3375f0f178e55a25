//! Property tests of the planner: on random small valid clusters (two leaves, mixed
//! GPU counts, down GPUs, teams with parents and ceilings, gangs with required tiers,
//! MIG, time-slice and whole-GPU inference), the greedy plan always passes the
//! independent checker, and planning is deterministic. Fixed seed in CI
//! (`common::proptest_config`); failing cases go to `tests/regressions/`.

mod common;

use gpuplan::placement;
use gpuplan::solve::{self, Options, SolverKind};
use gpuplan::source::SourceMap;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

#[derive(Clone, Debug)]
struct Spec {
    a_nodes: u32,
    b_nodes: u32,
    gpus: u32,
    model_b: bool,
    down: Option<u32>,
    ceilings: (u32, u32),
    gangs: Vec<(u32, u32, u8, u8)>,
    mig: Vec<(u32, u32, u8)>,
    shared: Vec<(u32, u32, u8)>,
    whole: Vec<(u32, u32, u8)>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            1u32..4,
            1u32..4,
            prop::sample::select(vec![2u32, 4, 8]),
            any::<bool>(),
        ),
        (prop::option::of(0u32..2), (1u32..40, 1u32..40)),
        prop::collection::vec((1u32..4, 1u32..3, 0u8..3, 0u8..3), 0..3),
        prop::collection::vec((1u32..12, 4u32..40, 0u8..3), 0..3),
        prop::collection::vec((1u32..10, 1u32..5, 0u8..3), 0..2),
        prop::collection::vec((1u32..5, 1u32..3, 0u8..3), 0..2),
    )
        .prop_map(
            |((a, b, g, mb), (down, ceilings), gangs, mig, shared, whole)| Spec {
                a_nodes: a,
                b_nodes: b,
                gpus: g,
                model_b: mb,
                down,
                ceilings,
                gangs,
                mig,
                shared,
                whole,
            },
        )
}

fn kdl(s: &Spec) -> String {
    let model_b = if s.model_b {
        "a100-sxm4-80gb"
    } else {
        "h100-sxm5-80gb"
    };
    let mut t = format!(
        r#"cluster "prop"
node-class "ca" {{
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus {g} model="h100-sxm5-80gb"
    nvlink-domain gpus="0-{gm}"
}}
node-class "cb" {{
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus {g} model="{model_b}"
}}
nodes "a-[1-{a}]" class="ca" {down}
nodes "b-[1-{b}]" class="cb"
fabric {{
    spine "sp" {{
        leaf "leaf-a" nodes="a-[1-{a}]"
        leaf "leaf-b" nodes="b-[1-{b}]"
    }}
}}
team "org" guarantee=2 burst={c0}
team "t1" parent="org" guarantee=1 burst={c1}
team "t2" guarantee=1 burst={c1}
priority "p0" value=300
priority "p1" value=200
priority "p2" value=100
"#,
        g = s.gpus,
        gm = s.gpus - 1,
        a = s.a_nodes,
        b = s.b_nodes,
        c0 = s.ceilings.0.max(s.ceilings.1).max(2),
        c1 = s.ceilings.1.min(s.ceilings.0.max(2)).max(1),
        down = match s.down {
            Some(i) => format!("{{\n    node \"a-1\" gpus-down=\"{i}\"\n}}"),
            None => String::new(),
        },
    );
    let team = |i: usize| if i % 2 == 0 { "t1" } else { "t2" };
    let tiers = ["node", "leaf", "cluster"];
    for (i, (nodes, reps, prio, tier)) in s.gangs.iter().enumerate() {
        let per = s.gpus;
        let tier = if *nodes > s.a_nodes.max(s.b_nodes) {
            "cluster"
        } else {
            tiers[*tier as usize]
        };
        let nodes = if tier == "node" { 1 } else { *nodes };
        t += &format!(
            "training \"gang{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    gang gpus={} gpus-per-node={per}\n    topology required=\"{tier}\"\n}}\n",
            team(i),
            nodes * per
        );
    }
    for (i, (reps, mem, prio)) in s.mig.iter().enumerate() {
        t += &format!(
            "inference \"mig{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    memory \"{mem}GiB\"\n    isolation \"mig\"\n}}\n",
            team(i + 1)
        );
    }
    for (i, (reps, per, prio)) in s.shared.iter().enumerate() {
        t += &format!(
            "dev \"nb{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    share \"time-slice\" per-gpu={per}\n    memory \"8GiB\"\n}}\n",
            team(i)
        );
    }
    for (i, (reps, gpus, prio)) in s.whole.iter().enumerate() {
        t += &format!(
            "inference \"whole{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus {}\n}}\n",
            team(i + 1),
            (*gpus).min(s.gpus)
        );
    }
    t
}

proptest! {
    #![proptest_config(common::proptest_config(96))]

    #[test]
    fn greedy_plans_pass_the_checker(s in spec()) {
        let text = kdl(&s);
        let mut sources = SourceMap::new();
        sources.add("prop.kdl", text.clone());
        let outcome = gpuplan::validate::validate(&sources);
        let valid = !outcome.diagnostics.iter().any(|d| d.is_error());
        prop_assume!(valid);
        let c = outcome.model.expect("model");
        let opts = Options { solver: SolverKind::Greedy, ..Options::default() };
        let (a, info) = solve::run(&c, &opts);
        let p = placement::build(&c, &a, &info);
        let errors = placement::check(&c, &p);
        prop_assert!(errors.is_empty(), "{text}\n{errors:#?}");
        let (a2, info2) = solve::run(&c, &opts);
        let mut q = placement::build(&c, &a2, &info2);
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
        let outcome = gpuplan::validate::validate(&sources);
        if !outcome.diagnostics.iter().any(|d| d.is_error()) {
            valid += 1;
        } else if valid == 0 {
            eprintln!(
                "{}\n{:#?}",
                kdl(&s),
                outcome
                    .diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| d.message.clone())
                    .collect::<Vec<_>>()
            );
        }
    }
    assert!(
        valid >= 32,
        "only {valid} of 64 generated configurations are valid"
    );
}
