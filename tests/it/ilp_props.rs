//! Property tests of the ILP planner (issues #3 and #14).
//!
//! 1. The oracle (`tests/it/oracle`): on tiny clusters (`tests/it/tiny`: 1-4 nodes of 1-8
//!    GPUs, GPUs down, one leaf or two leaves under a spine, gangs sharing nodes,
//!    whole-GPU, MIG, time-slice/MPS and packed fractional classes, 2-3 priority levels,
//!    teams with a parent) an exhaustive search independent of the solvers computes the
//!    lexicographic optimum of admitted GPU-equivalents per priority level. Its witness
//!    passes the checker; it is at least greedy's admission; the ILP must reach it, per
//!    feature family, and its plan must pass the checker.
//! 2. On random valid clusters (`common::arb`: gangs, MIG inference, time-slice dev,
//!    whole-GPU inference, teams with parents) the ILP admits at least as much as
//!    greedy, lexicographically by priority level, and passes the checker.
//! 3. Metamorphic: more capacity never admits less; declaration order and file split
//!    never change the JSON; the same input gives byte-identical JSON.
//! 4. The examples and `generate superpod` at 64 and 256 GPUs for every mix: the ILP plan
//!    passes the checker and admits at least as much as greedy.
//!
//! Every property runs with a fixed seed (`common::proptest_config`), so CI runs the
//! same cases every time; a failing case found once is saved under `tests/regressions/`
//! and checked by `tests/it/regressions.rs`. A long randomized sweep, ignored properties
//! included, runs locally with
//!
//! ```text
//! GPUPLAN_PROPTEST_SEED=random PROPTEST_CASES=2000 cargo test --release --test it ilp_props:: -- --include-ignored
//! ```
//!
//! (`GPUPLAN_PROPTEST_SEED=N` replays the fixed seed `N`; proptest prints the minimal
//! failing case's KDL in the failure message.)

use crate::common;
use crate::oracle;
use crate::tiny;

use crate::common::arb::{Spec, decls, spec};
use gpuplan::model::Cluster;
use gpuplan::placement::{self, Placement};
use gpuplan::solve::{self, Options, SolverKind};
use oracle::{lex_geq, per_level};
use proptest::prelude::*;
use tiny::{Mix, Tiny, What};

// ------------------------------------------------------------------ helpers

fn one(text: &str) -> Result<Cluster, Vec<String>> {
    common::try_load(&common::sources(&[(
        "prop.kdl".to_string(),
        text.to_string(),
    )]))
}

/// The solver's raw plan, not verified ([`common::unchecked`]): these properties judge it
/// with the checker themselves, and `pipeline::place` would hide an ILP placement that
/// fails the checker behind greedy's.
fn plan(c: &Cluster, solver: SolverKind) -> Placement {
    common::unchecked(c, solver)
}

/// The placement as JSON with the timing blanked.
fn json(p: &Placement) -> String {
    let mut q = p.clone();
    q.solver.seconds = 0.0;
    serde_json::to_string_pretty(&q).unwrap()
}

/// A short description of what was placed (for failure messages).
fn describe(p: &Placement) -> String {
    let mut s = format!("solver {} {}\n", p.solver.name, p.solver.status);
    let modes: Vec<String> = p
        .pools
        .iter()
        .map(|x| format!("{} {}", x.node, x.mode.as_str()))
        .collect();
    s += &format!("  modes: {}\n", modes.join(", "));
    for w in &p.workloads {
        s += &format!(
            "  {} placed {}/{} ({} GPUs):",
            w.name, w.replicas_placed, w.replicas_requested, w.gpus_placed
        );
        for g in &w.gangs {
            let nodes: Vec<String> = g
                .nodes
                .iter()
                .map(|n| format!("{}{:?}", n.node, n.gpus))
                .collect();
            s += &format!(" [{}]", nodes.join(" "));
        }
        for m in &w.mig_instances {
            s += &format!(" {}/{}:{}", m.node, m.gpu, m.profile);
        }
        for x in &w.shares {
            s += &format!(" {}/{}x{}", x.node, x.gpu, x.replicas);
        }
        for x in &w.packed {
            s += &format!(" {}{:?}x{}", x.node, x.gpus, x.replicas);
        }
        for u in &w.unplaced {
            s += &format!(" unplaced {} ({})", u.replicas, u.reason);
        }
        s += "\n";
    }
    s
}

// ------------------------------------------------------------------ 1. the oracle

/// The tiny cluster's text and model; invalid ones are rejected (rare: see
/// `the_generators_produce_valid_clusters`).
fn tiny_model(t: &Tiny) -> Result<(String, Cluster), TestCaseError> {
    let text = tiny::kdl(t);
    match one(&text) {
        Ok(c) => Ok((text, c)),
        Err(e) => Err(TestCaseError::reject(format!("invalid: {e:?}"))),
    }
}

/// The oracle's optimum, once its own witness passed the checker and admits it.
fn oracle_checked(c: &Cluster, text: &str) -> Result<oracle::Optimum, TestCaseError> {
    let o = oracle::solve(c);
    let p = oracle::placement(c, &o);
    let errors = oracle::check(c, &p);
    prop_assert!(
        errors.is_empty(),
        "the oracle's witness fails the checker:\n{text}\n{errors:#?}\n{}",
        describe(&p)
    );
    let got = per_level(c, &p);
    prop_assert!(
        oracle::same(&got, &o.levels),
        "the oracle says {:?}, its witness admits {got:?}\n{text}\n{}",
        o.levels,
        describe(&p)
    );
    Ok(o)
}

/// The ILP's plan passes the checker and admits exactly the oracle's optimum.
fn ilp_matches_oracle(t: &Tiny) -> Result<(), TestCaseError> {
    let (text, c) = tiny_model(t)?;
    let want = oracle_checked(&c, &text)?.levels;
    let p = plan(&c, SolverKind::Ilp);
    let errors = oracle::check(&c, &p);
    prop_assert!(
        errors.is_empty(),
        "checker:\n{text}\n{errors:#?}\n{}",
        describe(&p)
    );
    let got = per_level(&c, &p);
    prop_assert!(
        oracle::same(&got, &want),
        "ILP admits {got:?}, the oracle {want:?}\n{text}\n{}",
        describe(&p)
    );
    // Every level's reported bound holds for the true optimum (the levels above as the
    // oracle admits them, which is what the ILP admits too).
    let levels = oracle::priority_levels(&c);
    for l in &p.solver.levels {
        let i = levels.iter().position(|v| *v == l.priority);
        prop_assert!(i.is_some(), "level {} is not a priority level", l.priority);
        let opt = want[i.unwrap_or(0)];
        prop_assert!(
            l.bound + 1e-6 >= opt && l.admitted <= l.bound + 1e-6,
            "level {}: bound {} below the optimum {opt} (admitted {})\n{text}",
            l.priority,
            l.bound,
            l.admitted
        );
    }
    Ok(())
}

/// Node-local gangs of 1, 2, 4 or 8 GPUs on nodes of 1, 2, 4 or 8 GPUs: where the
/// aggregated ILP model was exact before issue 14.
fn node_local() -> impl Strategy<Value = Tiny> {
    tiny::tiny(Mix::default()).prop_map(|mut t| {
        for c in &mut t.classes {
            if let What::Gang { gpus, per_node, .. } = &mut c.what {
                *gpus = gpus.next_power_of_two();
                *per_node = per_node.map(|_| *gpus);
            }
        }
        t
    })
}

proptest! {
    #![proptest_config(common::proptest_config(64))]

    /// Greedy's plan passes the checker, so the optimum admits at least as much.
    #[test]
    fn oracle_is_at_least_greedy(t in tiny::any_tiny()) {
        let (text, c) = tiny_model(&t)?;
        let want = oracle_checked(&c, &text)?.levels;
        let p = plan(&c, SolverKind::Greedy);
        let errors = oracle::check(&c, &p);
        prop_assert!(errors.is_empty(), "greedy:\n{text}\n{errors:#?}\n{}", describe(&p));
        let got = per_level(&c, &p);
        prop_assert!(
            lex_geq(&want, &got),
            "oracle {want:?} < greedy {got:?}\n{text}\n{}",
            describe(&p)
        );
    }

    /// Random walks over placements the checker accepts, from the oracle's witness and
    /// from greedy's plan, never admit more than the oracle (`oracle::climb`).
    #[test]
    fn no_random_walk_beats_the_oracle(t in tiny::any_tiny(), seed in any::<u64>()) {
        let (text, c) = tiny_model(&t)?;
        let o = oracle_checked(&c, &text)?;
        let (greedy, _) = solve::run(&c, &Options { solver: SolverKind::Greedy, ..Options::default() });
        let mut rng = oracle::climb::Rng::new(seed);
        for start in [&o.assignment, &greedy] {
            if let Some((got, p)) = oracle::climb::climb(&c, start, 150, &mut rng) {
                prop_assert!(
                    lex_geq(&o.levels, &got),
                    "a walk reached {got:?} > the oracle's {:?}\n{text}\n{}",
                    o.levels,
                    describe(&p)
                );
            }
        }
    }

    #[test]
    fn ilp_matches_oracle_with_node_local_gangs(t in node_local()) {
        ilp_matches_oracle(&t)?;
    }

    /// Nodes of 1 to 8 GPUs, GPUs down; node-local gangs and whole-GPU replicas.
    #[test]
    fn ilp_matches_oracle_on_odd_sizes_and_gpus_down(t in tiny::tiny(Mix::SIZES)) {
        ilp_matches_oracle(&t)?;
    }

    /// Multi-node gangs (leaf, spine, cluster tiers) sharing nodes with other gangs.
    #[test]
    fn ilp_matches_oracle_with_multi_node_gangs(t in tiny::tiny(Mix::GANGS)) {
        ilp_matches_oracle(&t)?;
    }

    /// Packed fractional and whole-GPU classes (CPU and memory requests) beside gangs.
    #[test]
    fn ilp_matches_oracle_with_fractional_shares(t in tiny::tiny(Mix::PACKED)) {
        ilp_matches_oracle(&t)?;
    }

    /// MIG on H100 and A100 beside time-slice/MPS classes and gangs.
    #[test]
    fn ilp_matches_oracle_with_mig(t in tiny::tiny(Mix::MIG)) {
        ilp_matches_oracle(&t)?;
    }

    /// Every feature at once.
    #[test]
    fn ilp_matches_oracle_with_everything_mixed(t in tiny::tiny(Mix::ALL)) {
        ilp_matches_oracle(&t)?;
    }
}

#[test]
fn the_generators_produce_valid_clusters() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for (name, mix) in [
        ("default", Mix::default()),
        ("sizes", Mix::SIZES),
        ("gangs", Mix::GANGS),
        ("packed", Mix::PACKED),
        ("mig", Mix::MIG),
        ("all", Mix::ALL),
    ] {
        let mut invalid = Vec::new();
        for _ in 0..64 {
            let t = tiny::tiny(mix).new_tree(&mut runner).unwrap().current();
            if let Err(e) = one(&tiny::kdl(&t)) {
                invalid.push(e);
            }
        }
        assert!(
            invalid.len() <= 8,
            "{name}: {} of 64 generated clusters are invalid: {invalid:#?}",
            invalid.len()
        );
    }
}

const TINY_HEAD: &str = r#"cluster "tiny"
node-class "c4" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 4 model="h100-sxm5-80gb"
}
node-class "c5" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 5 model="h100-sxm5-80gb"
}
team "t0" guarantee=0 burst=8
priority "p0" value=200
training "w0" team="t0" priority="p0" replicas=1 {
    gang gpus=2 gpus-per-node=1
    topology required="leaf"
}
"#;

/// A 2-GPU gang with one GPU per node on a single-node leaf cannot run (it needs two
/// distinct nodes): the ILP rightly leaves it out, and the checker's priority rule must
/// not report "left out while ... it fits in `l0`" (it once counted free GPUs, not
/// distinct nodes).
#[test]
fn checker_counts_gpus_not_distinct_nodes() {
    let text = format!(
        "{TINY_HEAD}nodes \"n-1\" class=\"c4\"\nfabric {{\n    leaf \"l0\" nodes=\"n-1\"\n}}\n"
    );
    let c = one(&text).unwrap();
    let p = plan(&c, SolverKind::Ilp);
    assert_eq!(p.workloads[0].replicas_placed, 0);
    assert_eq!(
        placement::check(&c, &p),
        Vec::<gpuplan::placement::Violation>::new(),
        "{}",
        describe(&p)
    );
}

/// Two nodes of different classes (4 and 5 GPUs) under one leaf hold a 2-GPU gang with
/// one GPU per node (the aggregated model once let both shares land in one single-node
/// group, which the post-pass then dropped).
#[test]
fn ilp_places_a_gang_over_two_node_classes() {
    let text = format!(
        "{TINY_HEAD}nodes \"n-1\" class=\"c4\"\nnodes \"n-2\" class=\"c5\"\nfabric {{\n    leaf \"l0\" nodes=\"n-[1-2]\"\n}}\n"
    );
    let c = one(&text).unwrap();
    let p = plan(&c, SolverKind::Ilp);
    assert_eq!(p.workloads[0].replicas_placed, 1, "{}", describe(&p));
    assert_eq!(
        placement::check(&c, &p),
        Vec::<gpuplan::placement::Violation>::new()
    );
}

// ------------------------------------------------------------------ 1b. the oracle by hand

/// The oracle's levels on a cluster given as text (its witness checked).
fn oracle_on(text: &str) -> Vec<f64> {
    let c = one(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    oracle_checked(&c, text)
        .unwrap_or_else(|e| panic!("{e}"))
        .levels
}

/// Node classes `c1`..`c8` (that many H100 GPUs, 8 cores, 256 GiB), `nodes`, a team
/// `t` (no binding ceiling) and priorities `hi` > `lo`.
fn head(nodes: &str) -> String {
    let mut s = String::from("cluster \"hand\"\n");
    for g in 1..=8 {
        s += &format!(
            "node-class \"c{g}\" {{\n    cpu sockets=1 cores-per-socket=8 threads-per-core=1\n    memory \"256GiB\"\n    gpus {g} model=\"h100-sxm5-80gb\"\n}}\n"
        );
    }
    s += nodes;
    s += "team \"t\" guarantee=0 burst=64\npriority \"hi\" value=200\npriority \"lo\" value=100\n";
    s
}

/// Issue 14's case (GP901 with a GPU down): `a-1` has 7 usable GPUs, `a-2` and `b-1`
/// 8. The two 8-GPU node-local gangs take `a-2` and `b-1`; both 2-GPU replicas fit on
/// `a-1`. Ceilings: `t1` and its parent `org` hold 16 <= 16, `t2` 4 <= 16. All 20 GPUs
/// at p0 (the only level used).
#[test]
fn oracle_admits_everything_in_the_issue_14_case() {
    let text = std::fs::read_to_string("tests/regressions/issue14_gp901_gpu_down.kdl").unwrap();
    assert_eq!(oracle_on(&text), vec![20.0]);
}

/// A 6-GPU node with GPU 5 down (5 usable) and a 3-GPU node, one leaf. `hi`: 4-GPU
/// node-local gangs x2: only the 6-GPU node holds one (4 <= 5; the 3-GPU node never).
/// `lo`: 2-GPU whole replicas x3: none beside the gang (1 GPU left), one on the 3-GPU
/// node (1 left). Optimum [4, 2].
#[test]
fn oracle_on_odd_node_sizes_with_a_gpu_down() {
    let text = head(
        "nodes \"n-1\" class=\"c6\" {\n    node \"n-1\" gpus-down=\"5\"\n}\nnodes \"n-2\" class=\"c3\"\nfabric {\n    leaf \"l0\" nodes=\"n-[1-2]\"\n}\n",
    ) + "training \"g\" team=\"t\" priority=\"hi\" replicas=2 {\n    gang gpus=4 gpus-per-node=4\n    topology required=\"node\"\n}\n"
        + "inference \"w\" team=\"t\" priority=\"lo\" replicas=3 {\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus 2\n}\n";
    assert_eq!(oracle_on(&text), vec![4.0, 2.0]);
}

/// Two leaves of two 4-GPU nodes. `hi`: 4-GPU gangs with 2 per node inside a leaf, x3:
/// each takes both nodes of a leaf, 2 GPUs each; 2 fit per leaf, so all 3 (12 GPUs).
/// `lo`: 4-GPU node-local gangs x1: every node of the leaf holding one `hi` gang keeps
/// only 2 free, the full leaf none: 0. `lo` 2-GPU whole replicas x2: beside the lone
/// `hi` gang, one per node: 4. Optimum [12, 4].
#[test]
fn oracle_on_multi_node_gangs_sharing_nodes() {
    let text = head(
        "nodes \"n-[1-4]\" class=\"c4\"\nfabric {\n    spine \"sp\" {\n        leaf \"l0\" nodes=\"n-[1-2]\"\n        leaf \"l1\" nodes=\"n-[3-4]\"\n    }\n}\n",
    ) + "training \"g\" team=\"t\" priority=\"hi\" replicas=3 {\n    gang gpus=4 gpus-per-node=2\n    topology required=\"leaf\"\n}\n"
        + "training \"h\" team=\"t\" priority=\"lo\" replicas=1 {\n    gang gpus=4 gpus-per-node=4\n    topology required=\"node\"\n}\n"
        + "inference \"w\" team=\"t\" priority=\"lo\" replicas=2 {\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus 2\n}\n";
    assert_eq!(oracle_on(&text), vec![12.0, 4.0]);
}

/// Four 3-GPU nodes in one leaf, an 8-GPU gang without `gpus-per-node`: the default is
/// the most GPUs per node that divide the gang and fit a node (issue 29: every pod of a
/// gang gets the same GPUs), 2, so one gang takes 2 + 2 + 2 + 2 and a second finds no
/// four free nodes. `lo` 1-GPU replicas x2 fit beside it. Optimum [8, 2]. (The default
/// was once all 3 GPUs of a node, 3 + 3 + 2 with one short node, which no Job template
/// or `--gres` can carry; on three such nodes the gang is now GP016.)
#[test]
fn oracle_on_a_gang_without_gpus_per_node_splits_it_evenly() {
    let gang = "training \"g\" team=\"t\" priority=\"hi\" replicas=2 {\n    gang gpus=8\n    topology required=\"leaf\"\n}\n";
    let lo = "inference \"w\" team=\"t\" priority=\"lo\" replicas=2 {\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus 1\n}\n";
    let text =
        head("nodes \"n-[1-4]\" class=\"c3\"\nfabric {\n    leaf \"l0\" nodes=\"n-[1-4]\"\n}\n")
            + gang
            + lo;
    assert_eq!(oracle_on(&text), vec![8.0, 2.0]);
    let three =
        head("nodes \"n-[1-3]\" class=\"c3\"\nfabric {\n    leaf \"l0\" nodes=\"n-[1-3]\"\n}\n")
            + gang
            + lo;
    let err = one(&three).unwrap_err();
    assert!(
        err.iter().any(|e| e.contains("can hold 6 on 3 node(s)")),
        "{err:?}"
    );
}

/// One 2-GPU node (8 cores). `hi`: 60% replicas with 2 cores x3: one per GPU (two do
/// not fit one GPU): 1.2, 4 cores. `lo`: 40% replicas with 3 cores x3: each fits beside
/// a 60% one, but cores allow one (4 + 3 <= 8 < 4 + 6): 0.4. Optimum [1.2, 0.4].
#[test]
fn oracle_on_fractional_shares_and_cpu() {
    let text = head("nodes \"n-1\" class=\"c2\"\nfabric {\n    leaf \"l0\" nodes=\"n-1\"\n}\n")
        + "inference \"a\" team=\"t\" priority=\"hi\" replicas=3 {\n    fraction \"60%\"\n    requests cpu=2 memory=\"16GiB\"\n}\n"
        + "inference \"b\" team=\"t\" priority=\"lo\" replicas=3 {\n    fraction \"40%\"\n    requests cpu=3 memory=\"16GiB\"\n}\n";
    assert_eq!(oracle_on(&text), vec![1.2, 0.4]);
}

/// One H100 GPU. `hi`: a 39 GiB replica, right-sized to `3g.40gb` (4 of 8 memory
/// slices: 0.5). `lo`: 9 GiB replicas (`1g.10gb`, 1 slice) x5. With the `3g` at start
/// slot 4, four `1g` fit at slots 0-3 (compute 3 + 4 = 7); at slot 0 only three (the
/// `1g` starts stop at 6). Optimum [0.5, 0.5].
#[test]
fn oracle_on_a_mig_layout() {
    let text = head("nodes \"n-1\" class=\"c1\"\nfabric {\n    leaf \"l0\" nodes=\"n-1\"\n}\n")
        + "inference \"a\" team=\"t\" priority=\"hi\" replicas=1 {\n    memory \"39GiB\"\n    isolation \"mig\"\n}\n"
        + "inference \"b\" team=\"t\" priority=\"lo\" replicas=5 {\n    memory \"9GiB\"\n    isolation \"mig\"\n}\n";
    assert_eq!(oracle_on(&text), vec![0.5, 0.5]);
}

/// A 3-GPU node and a 3-GPU node with GPU 0 down (2 usable). `hi`: time-slice with 2
/// per GPU x5 (2 + 2 + 1 on the 3-GPU node: 2.5). `lo`: MPS with 4 per GPU x4: a node
/// holds one mode, so the other node, one GPU: 1.0. Optimum [2.5, 1.0].
#[test]
fn oracle_on_time_slice_and_mps_nodes() {
    let text = head(
        "nodes \"n-1\" class=\"c3\"\nnodes \"n-2\" class=\"c3\" {\n    node \"n-2\" gpus-down=\"0\"\n}\nfabric {\n    leaf \"l0\" nodes=\"n-[1-2]\"\n}\n",
    ) + "dev \"a\" team=\"t\" priority=\"hi\" replicas=5 {\n    share \"time-slice\" per-gpu=2\n    memory \"8GiB\"\n}\n"
        + "dev \"b\" team=\"t\" priority=\"lo\" replicas=4 {\n    share \"mps\" per-gpu=4\n    memory \"8GiB\"\n}\n";
    assert_eq!(oracle_on(&text), vec![2.5, 1.0]);
}

/// One 8-GPU node. `org` (ceiling 5) is `t1`'s parent; `t2` has ceiling 2. `hi`: `t1`
/// 2-GPU gangs x3: `org` allows two (4). `t2` 1-GPU replicas x4: two. `lo`: `org`'s own
/// 1-GPU replicas x2: `org` holds 4, one more. Optimum [6, 1].
#[test]
fn oracle_on_team_ceilings_with_a_parent() {
    let text = "cluster \"hand\"\nnode-class \"c8\" {\n    gpus 8 model=\"h100-sxm5-80gb\"\n}\nnodes \"n-1\" class=\"c8\"\nfabric {\n    leaf \"l0\" nodes=\"n-1\"\n}\n".to_string()
        + "team \"org\" guarantee=0 burst=5\nteam \"t1\" parent=\"org\" guarantee=0 burst=5\nteam \"t2\" guarantee=0 burst=2\n"
        + "priority \"hi\" value=200\npriority \"lo\" value=100\n"
        + "training \"g\" team=\"t1\" priority=\"hi\" replicas=3 {\n    gang gpus=2 gpus-per-node=2\n    topology required=\"node\"\n}\n"
        + "inference \"w\" team=\"t2\" priority=\"hi\" replicas=4 {\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus 1\n}\n"
        + "inference \"o\" team=\"org\" priority=\"lo\" replicas=2 {\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus 1\n}\n";
    assert_eq!(oracle_on(&text), vec![6.0, 1.0]);
}

// ------------------------------------------------------------------ 2-3. random clusters

fn spec_model(s: &Spec, extra: u32) -> Result<(String, Cluster), TestCaseError> {
    let text = decls(s, extra).concat();
    match one(&text) {
        Ok(c) => Ok((text, c)),
        Err(e) => Err(TestCaseError::reject(format!("invalid: {e:?}"))),
    }
}

proptest! {
    #![proptest_config(common::proptest_config(48))]

    #[test]
    fn ilp_admits_at_least_as_much_as_greedy(s in spec()) {
        let (text, c) = spec_model(&s, 0)?;
        let ilp = plan(&c, SolverKind::Ilp);
        let errors = placement::check(&c, &ilp);
        prop_assert!(errors.is_empty(), "checker:\n{text}\n{errors:#?}\n{}", describe(&ilp));
        let greedy = plan(&c, SolverKind::Greedy);
        let (i, g) = (per_level(&c, &ilp), per_level(&c, &greedy));
        prop_assert!(
            lex_geq(&i, &g),
            "ILP {i:?} < greedy {g:?}\n{text}\nILP: {}\ngreedy: {}",
            describe(&ilp),
            describe(&greedy)
        );
    }

    #[test]
    fn more_capacity_never_admits_less(s in spec(), extra in 1u32..3) {
        let (text, c) = spec_model(&s, 0)?;
        let (_, bigger) = spec_model(&s, extra)?;
        let p = plan(&c, SolverKind::Ilp);
        let q = plan(&bigger, SolverKind::Ilp);
        let (before, after) = (per_level(&c, &p), per_level(&bigger, &q));
        prop_assert!(
            after.first().unwrap_or(&0.0) + 1e-6 >= *before.first().unwrap_or(&0.0) && lex_geq(&after, &before),
            "{extra} more node(s) in leaf-b: {after:?} < {before:?}\n{text}\nbefore: {}\nafter: {}",
            describe(&p),
            describe(&q)
        );
    }

    #[test]
    fn declaration_order_and_file_split_never_change_the_plan(
        s in spec(),
        order in prop::collection::vec(any::<u64>(), 32),
        files in 1usize..4,
    ) {
        let (text, c) = spec_model(&s, 0)?;
        let base = json(&plan(&c, SolverKind::Ilp));
        // Shuffle the top-level declarations and deal them out over 1-3 files.
        let d = decls(&s, 0);
        let mut idx: Vec<usize> = (0..d.len()).collect();
        idx.sort_by_key(|i| order[*i % 32] ^ (*i as u64));
        let mut parts = vec![String::new(); files];
        for (k, i) in idx.iter().enumerate() {
            parts[k % files] += &d[*i];
        }
        let named: Vec<(String, String)> = parts
            .into_iter()
            .enumerate()
            .map(|(k, t)| (format!("part-{}.kdl", files - k), t))
            .collect();
        let shuffled = common::try_load(&common::sources(&named)).map_err(|e| TestCaseError::fail(format!("{e:?}\n{named:#?}")))?;
        let other = json(&plan(&shuffled, SolverKind::Ilp));
        prop_assert!(base == other, "declaration order changed the plan\n{text}\n--- reordered:\n{named:#?}\n--- base:\n{base}\n--- reordered plan:\n{other}");
        // The same input twice.
        let again = json(&plan(&c, SolverKind::Ilp));
        prop_assert!(base == again, "same input, different plan\n{text}");
    }
}

// ------------------------------------------------------------------ 4. benchmarks

fn compare_on(name: &str, c: &Cluster) {
    let ilp = plan(c, SolverKind::Ilp);
    let errors = placement::check(c, &ilp);
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{}", describe(&ilp));
    let greedy = plan(c, SolverKind::Greedy);
    let (i, g) = (per_level(c, &ilp), per_level(c, &greedy));
    eprintln!(
        "{name}: ilp {i:?} ({}, {:.2}s) greedy {g:?}",
        ilp.solver.status, ilp.solver.seconds
    );
    assert!(
        lex_geq(&i, &g),
        "{name}: ILP {i:?} < greedy {g:?}\nILP: {}\ngreedy: {}",
        describe(&ilp),
        describe(&greedy)
    );
}

#[test]
fn ilp_beats_greedy_on_the_examples() {
    for dir in common::examples() {
        compare_on(&dir.display().to_string(), &common::load_dir(&dir));
    }
}

#[test]
fn ilp_beats_greedy_on_generated_superpods() {
    use gpuplan::generate::{Mix, SuperpodOptions, superpod};
    for gpus in [64, 256] {
        for mix in [Mix::Training, Mix::Inference, Mix::Mixed] {
            let files = superpod(&SuperpodOptions {
                gpus,
                mix,
                ..SuperpodOptions::default()
            })
            .unwrap();
            let c = common::try_load(&common::sources(&files))
                .unwrap_or_else(|e| panic!("{gpus} {mix:?}: {e:?}"));
            compare_on(&format!("superpod {gpus} {}", mix.as_str()), &c);
        }
    }
}
