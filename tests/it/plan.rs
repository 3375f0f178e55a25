//! `gpuplan plan`: every example plans (greedy and the default solver) and passes the
//! independent checker; the JSON contract; determinism; snapshots of the human plans;
//! the checker rejects hand-broken placements; greedy behaviour on tiny clusters.

use crate::common;

use crate::common::{examples, gpuplan, load_dir, load_text};
use gpuplan::model::Cluster;
use gpuplan::placement::{self, Gang, Invariant, NodeGpus, Placement};
use gpuplan::solve::SolverKind;
use gpuplan::source::Span;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Greedy's placement, not verified ([`common::unchecked`]): the tests below judge it
/// with the checker themselves, break it by hand, or plan invalid models.
fn greedy(c: &Cluster) -> Placement {
    common::unchecked(c, SolverKind::Greedy)
}

/// The placement of a plan document (`plan --format json`). The plan leaves the
/// solver's wall time out (0), so no masking is needed any more.
fn masked(json: &[u8]) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(json).expect("JSON plan");
    assert_eq!(v["placement"]["solver"]["seconds"], 0.0);
    v["placement"].clone()
}

#[test]
fn every_example_plans_and_passes_the_checker() {
    for e in examples() {
        let e = e.to_str().unwrap();
        for solver in [None, Some("greedy")] {
            let mut args = vec!["plan", e, "--format", "json", "--quiet"];
            if let Some(s) = solver {
                args.extend(["--solver", s]);
            }
            let out = gpuplan(&args);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{e} {solver:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            assert_eq!(doc["format_version"], "1");
            let p = &doc["placement"];
            assert_eq!(p["format_version"], "1");
            for k in ["name", "status", "objective", "seconds"] {
                assert!(!p["solver"][k].is_null(), "{e}: solver.{k}");
            }
            // The ILP proves a bound; the greedy baseline does not.
            for k in ["bound", "gap"] {
                let greedy = p["solver"]["name"] == "greedy";
                assert_eq!(p["solver"][k].is_null(), greedy, "{e}: solver.{k}");
            }
            for k in ["gpus_total", "gpus_allocated", "allocation_pct"] {
                assert!(p["summary"][k].is_number(), "{e}: summary.{k}");
            }
            for w in p["workloads"].as_array().unwrap() {
                assert!(w["replicas_placed"].is_number(), "{e}");
                assert!(w["unplaced"].is_array(), "{e}");
            }
        }
        let c = load_dir(e);
        let p = greedy(&c);
        assert_eq!(
            placement::check(&c, &p),
            Vec::<gpuplan::placement::Violation>::new(),
            "{e}"
        );
        assert_eq!(p.solver.name, "greedy");
        assert_eq!(p.solver.status, gpuplan::solve::SolveStatus::Heuristic);
    }
}

#[test]
fn json_is_deterministic_across_runs_and_file_order() {
    for e in examples() {
        let e = e.to_str().unwrap();
        let a = gpuplan(&["plan", e, "--format", "json", "--solver", "greedy"]);
        let b = gpuplan(&["plan", e, "--format", "json", "--solver", "greedy"]);
        assert_eq!(masked(&a.stdout), masked(&b.stdout), "{e}");
        let mut files: Vec<String> = std::fs::read_dir(e)
            .unwrap()
            .filter_map(|x| x.ok())
            .map(|x| x.path().to_string_lossy().into_owned())
            .filter(|p| p.ends_with(".kdl"))
            .collect();
        files.sort();
        files.reverse();
        let mut args = vec!["plan", "--format", "json", "--solver", "greedy"];
        args.extend(files.iter().map(String::as_str));
        let r = gpuplan(&args);
        assert_eq!(r.status.code(), Some(0), "{e}");
        // Byte-identical once the timing is masked.
        let x = serde_json::to_string_pretty(&masked(&a.stdout)).unwrap();
        let y = serde_json::to_string_pretty(&masked(&r.stdout)).unwrap();
        assert_eq!(x, y, "{e}: reversed file order changed the plan");
    }
}

#[test]
fn human_plans_match_snapshots() {
    for e in examples() {
        let e = e.to_str().unwrap();
        let out = gpuplan(&["plan", e, "--solver", "greedy"]);
        assert_eq!(out.status.code(), Some(0), "{e}");
        assert!(
            out.stderr.starts_with(b"planning"),
            "progress goes to stderr"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        // The placement report; the changes that follow are covered by tests/it/apply.rs.
        let text = text[..text.find("\nchanges\n").expect("changes section")].to_string();
        let name = e.trim_start_matches("examples/").to_string();
        insta::with_settings!({filters => vec![(r"\d+\.\d+s\b", "[secs]")]}, {
            insta::assert_snapshot!(format!("plan_{name}"), text);
        });
    }
}

#[test]
fn quiet_suppresses_progress_and_out_writes_the_json() {
    let dir = std::env::temp_dir().join(format!("gpuplan-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("plan.json");
    let f = file.to_string_lossy().into_owned();
    let out = gpuplan(&[
        "plan",
        "examples/small-lab",
        "--solver",
        "greedy",
        "--quiet",
        "-o",
        &f,
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["placement"]["cluster"], "ml-lab");
    assert_eq!(saved["format_version"], "1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_and_invalid_input_exit_1() {
    let out = gpuplan(&["plan", "examples/small-lab", "--time-limit", "soon"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    for ok in ["45", "2m", "1h30m", "2.5"] {
        let out = gpuplan(&[
            "plan",
            "examples/small-lab",
            "--time-limit",
            ok,
            "--gap",
            "1%",
            "--quiet",
        ]);
        assert_eq!(out.status.code(), Some(0), "{ok}");
    }
    let out = gpuplan(&["plan", "tests/does-not-exist.kdl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

// ---------------------------------------------------------------- tiny clusters

const HARDWARE: &str = r#"
cluster "tiny"
node-class "box" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
}
nodes "n-[1-4]" class="box"
fabric {
    spine "sp" {
        leaf "leaf-a" nodes="n-[1-2]"
        leaf "leaf-b" nodes="n-[3-4]"
    }
}
priority "high" value=100
priority "low" value=10
"#;

fn tiny(rest: &str) -> Cluster {
    load_text(&format!("{HARDWARE}\n{rest}"))
}

fn class<'a>(p: &'a Placement, name: &str) -> &'a placement::WorkloadPlacement {
    p.workloads.iter().find(|w| w.name == name).expect("class")
}

#[test]
fn greedy_respects_priority_order_over_name_order() {
    let c = tiny(
        r#"
team "t" guarantee=32 burst=64
training "aaa-low" team="t" priority="low" { gang gpus=8 gpus-per-node=8; }
training "zzz-high" team="t" priority="high" { gang gpus=32 gpus-per-node=8; }
"#,
    );
    let p = greedy(&c);
    assert!(
        placement::check(&c, &p).is_empty(),
        "{:?}",
        placement::check(&c, &p)
    );
    assert_eq!(class(&p, "zzz-high").replicas_placed, 1);
    let low = class(&p, "aaa-low");
    assert_eq!(low.replicas_placed, 0);
    assert_eq!(
        low.unplaced[0].reason,
        gpuplan::placement::UnplacedReason::Capacity
    );
    assert!(
        low.unplaced[0]
            .message
            .contains("`zzz-high` (priority high, higher) took 32"),
        "{}",
        low.unplaced[0].message
    );
}

#[test]
fn greedy_respects_team_ceilings_and_parents() {
    let c = tiny(
        r#"
team "org" guarantee=16 burst=16
team "b1" parent="org" guarantee=8 burst=16
team "b2" parent="org" guarantee=8 burst=16
team "solo" guarantee=8
training "first" team="b1" priority="high" { gang gpus=8 gpus-per-node=8; }
training "capped" team="b2" priority="low" replicas=3 { gang gpus=8 gpus-per-node=8; }
training "own" team="solo" priority="low" replicas=2 { gang gpus=8 gpus-per-node=8; }
"#,
    );
    let p = greedy(&c);
    assert!(placement::check(&c, &p).is_empty());
    let w = class(&p, "capped");
    assert_eq!(w.replicas_placed, 1, "the parent's ceiling of 16 holds");
    assert_eq!(
        w.unplaced[0].reason,
        gpuplan::placement::UnplacedReason::Quota
    );
    assert!(
        w.unplaced[0].message.contains("parent `org`"),
        "{}",
        w.unplaced[0].message
    );
    let own = class(&p, "own");
    assert_eq!(own.replicas_placed, 1);
    assert!(
        own.unplaced[0]
            .message
            .contains("team `solo` has placed 8 GPUs of its ceiling of 8"),
        "{}",
        own.unplaced[0].message
    );
}

#[test]
fn a_gang_that_needs_one_leaf_lands_in_one_leaf() {
    let c = tiny(
        r#"
team "t" guarantee=32
training "first" team="t" priority="high" { gang gpus=8 gpus-per-node=8; topology required="node"; }
training "pair" team="t" priority="low" { gang gpus=16 gpus-per-node=8; topology required="leaf"; }
"#,
    );
    let p = greedy(&c);
    assert!(placement::check(&c, &p).is_empty());
    let g = &class(&p, "pair").gangs[0];
    assert_eq!(g.span.leaves, 1);
    assert_eq!(g.span.nodes, 2);
    let nodes: Vec<&str> = g.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(nodes, ["n-3", "n-4"], "leaf-a has only n-2 left");
}

#[test]
fn topology_reason_when_down_gpus_shrink_every_leaf() {
    let mut c = tiny(
        r#"
team "t" guarantee=32
training "pair" team="t" priority="high" { gang gpus=16 gpus-per-node=8; topology required="leaf"; }
"#,
    );
    // GPUs fail after validation: each leaf keeps one full node.
    for n in ["n-1", "n-3"] {
        let i = c.node_index[n];
        c.nodes[i].gpus[0].down = true;
    }
    c.refresh();
    let p = greedy(&c);
    assert!(placement::check(&c, &p).is_empty());
    let u = &class(&p, "pair").unplaced[0];
    assert_eq!(u.reason, gpuplan::placement::UnplacedReason::Topology);
    assert!(
        u.message.contains(
            "gang `pair` needs 16 GPUs inside one leaf; the largest leaf (`leaf-a`) holds 8"
        ),
        "{}",
        u.message
    );
}

#[test]
fn mig_replicas_pack_seven_1g_per_h100_then_the_next_gpu() {
    let c = load_text(
        r#"
cluster "mig"
node-class "box" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 2 model="h100-sxm5-80gb"
}
nodes "m-1" class="box"
team "t" guarantee=2
priority "p" value=1
inference "tiny-model" team="t" priority="p" replicas=8 {
    memory "5GiB"
    isolation "mig"
    profile "1g.10gb"
}
"#,
    );
    let p = greedy(&c);
    assert!(
        placement::check(&c, &p).is_empty(),
        "{:?}",
        placement::check(&c, &p)
    );
    let w = class(&p, "tiny-model");
    assert_eq!(w.replicas_placed, 8);
    let on0 = w.mig_instances.iter().filter(|m| m.gpu == 0).count();
    let on1 = w.mig_instances.iter().filter(|m| m.gpu == 1).count();
    assert_eq!((on0, on1), (7, 1));
    assert_eq!(p.mig_layouts.len(), 2);
    assert_eq!(p.mig_layouts[0].profiles, vec!["1g.10gb"; 7]);
}

// ---------------------------------------------------------------- broken placements

/// The checker reports a violation of `invariant` about the declaration at `span`.
fn assert_rejects(c: &Cluster, p: &Placement, invariant: Invariant, span: Option<Span>) {
    let errors = placement::check(c, p);
    assert!(
        errors
            .iter()
            .any(|e| e.invariant == invariant && e.span == span),
        "expected a {invariant:?} violation at {span:?}, got {errors:#?}"
    );
}

/// The declaration of a class, node, team or MIG layout, as violations carry it.
fn class_span(c: &Cluster, name: &str) -> Option<Span> {
    c.workloads.iter().find(|w| w.name == name).map(|w| w.span)
}

fn node_span(c: &Cluster, name: &str) -> Option<Span> {
    c.node_index.get(name).map(|&n| c.nodes[n].span)
}

fn gang_class<'a>(p: &'a mut Placement, name: &str) -> &'a mut placement::WorkloadPlacement {
    p.workloads
        .iter_mut()
        .find(|w| w.name == name)
        .expect("class")
}

#[test]
fn checker_rejects_a_gpu_used_twice() {
    let c = load_dir("examples/superpod-h100");
    let mut p = greedy(&c);
    let taken = class(&p, "llm-pretrain-70b").gangs[0].nodes[0].clone();
    let node = node_span(&c, &taken.node);
    gang_class(&mut p, "eval-harness").gangs[0].nodes = vec![taken];
    // A GPU used twice is about the node that holds it.
    assert_rejects(&c, &p, Invariant::Gpu, node);
}

#[test]
fn checker_rejects_a_gang_across_two_leaves() {
    let c = tiny(
        r#"
team "t" guarantee=32
training "pair" team="t" priority="low" { gang gpus=16 gpus-per-node=8; topology required="leaf"; }
"#,
    );
    let mut p = greedy(&c);
    assert!(placement::check(&c, &p).is_empty());
    let g: &mut Gang = &mut gang_class(&mut p, "pair").gangs[0];
    g.nodes[1] = NodeGpus {
        node: "n-3".into(),
        gpus: (0..8).collect(),
    };
    assert_rejects(&c, &p, Invariant::Gang, class_span(&c, "pair"));
}

#[test]
fn checker_rejects_an_invalid_mig_layout() {
    let c = load_dir("examples/mixed-inference");
    let mut p = greedy(&c);
    let l = p
        .mig_layouts
        .iter_mut()
        .find(|l| l.node == "h100-03" && l.gpu >= 4)
        .expect("a right-sized layout on h100-03");
    l.profiles = vec!["4g.40gb".into(), "4g.40gb".into()];
    assert_rejects(&c, &p, Invariant::Mig, node_span(&c, "h100-03"));
}

#[test]
fn checker_rejects_a_team_above_its_ceiling() {
    let c = tiny(
        r#"
team "b" guarantee=8
training "capped" team="b" priority="low" replicas=2 { gang gpus=8 gpus-per-node=8; }
"#,
    );
    let mut p = greedy(&c);
    assert!(placement::check(&c, &p).is_empty());
    let w = gang_class(&mut p, "capped");
    w.gangs.push(Gang {
        replica: 1,
        nodes: vec![NodeGpus {
            node: "n-4".into(),
            gpus: (0..8).collect(),
        }],
        span: w.gangs[0].span.clone(),
    });
    assert_rejects(&c, &p, Invariant::Team, Some(c.teams["b"].span));
}

#[test]
fn checker_rejects_a_shared_gpu_above_per_gpu() {
    let c = load_dir("examples/small-lab");
    let mut p = greedy(&c);
    gang_class(&mut p, "notebooks").shares[0].replicas = 5;
    assert_rejects(&c, &p, Invariant::Share, class_span(&c, "notebooks"));
}

#[test]
fn checker_rejects_a_broken_fixed_layout_and_wrong_counts() {
    let c = load_dir("examples/mixed-inference");
    let mut p = greedy(&c);
    let l = p
        .mig_layouts
        .iter_mut()
        .find(|l| l.node == "h100-01")
        .expect("fixed layout");
    l.profiles = vec!["7g.80gb".into()];
    p.summary.gpus_total += 1;
    let fixed = c.mig.layouts.iter().find(|l| !l.current).map(|l| l.span);
    assert_rejects(&c, &p, Invariant::Mig, fixed);
    assert_rejects(&c, &p, Invariant::Summary, None);
}

#[test]
fn checker_rejects_lower_priority_holding_capacity() {
    let c = tiny(
        r#"
team "t" guarantee=32
training "aaa-low" team="t" priority="low" { gang gpus=8 gpus-per-node=8; }
training "zzz-high" team="t" priority="high" { gang gpus=32 gpus-per-node=8; }
"#,
    );
    let mut p = greedy(&c);
    // Swap: pretend the low class got a node and the high class was left out.
    let high = gang_class(&mut p, "zzz-high");
    high.gangs.clear();
    high.replicas_placed = 0;
    high.gpus_placed = 0.0;
    high.unplaced = vec![placement::Unplaced {
        replicas: 1,
        reason: gpuplan::placement::UnplacedReason::Capacity,
        message: String::new(),
    }];
    let low = gang_class(&mut p, "aaa-low");
    low.unplaced.clear();
    low.replicas_placed = 1;
    low.gpus_placed = 8.0;
    low.gangs = vec![Gang {
        replica: 0,
        nodes: vec![NodeGpus {
            node: "n-1".into(),
            gpus: (0..8).collect(),
        }],
        span: Default::default(),
    }];
    assert_rejects(&c, &p, Invariant::Priority, class_span(&c, "zzz-high"));
}

// ---------------------------------------------------------------- robustness

/// Planning never panics, even on the best-effort model of an invalid configuration
/// (the rule fixtures and the malformed corpus): solve, build, check and render.
#[test]
fn planning_invalid_models_never_panics() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["tests/rules", "tests/malformed"] {
        for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "kdl") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 50);
    for f in files {
        let (sources, _) = gpuplan::load::load_paths(std::slice::from_ref(&f));
        let Some(c) = gpuplan::validate::validate(&sources).model else {
            continue;
        };
        let p = greedy(&c);
        let _ = placement::check(&c, &p);
        let _ = placement::view::human(&p, &c);
    }
}

#[test]
fn gang_gpus_stay_inside_one_nvlink_domain_of_a_node() {
    let c = load_text(
        r#"
cluster "nvl"
node-class "two-boards" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-3"
    nvlink-domain gpus="4-7"
}
nodes "n-1" class="two-boards"
team "t" guarantee=8
priority "high" value=100
priority "low" value=10
inference "pair" team="t" priority="high" { memory "100GiB"; isolation "whole-gpu"; gpus 2; }
inference "quad" team="t" priority="low" { memory "200GiB"; isolation "whole-gpu"; gpus 4; }
"#,
    );
    let p = greedy(&c);
    assert!(placement::check(&c, &p).is_empty());
    assert_eq!(class(&p, "pair").gangs[0].nodes[0].gpus, [0, 1]);
    let quad = &class(&p, "quad").gangs[0];
    assert_eq!(
        quad.nodes[0].gpus,
        [4, 5, 6, 7],
        "not 2-5 across both boards"
    );
    assert_eq!(quad.span.nvlink_domains, 1);
}

/// Right-sizing by price: a whole-GPU inference class that fits both models lands on
/// the cheaper one when both have room, and the ILP reports the lower cost per hour.
#[test]
fn ilp_places_on_the_cheapest_model_that_fits() {
    let text = r#"
cluster "priced"
gpu-model "a100-sxm4-80gb" price-per-hour=1.60
gpu-model "h100-sxm5-80gb" price-per-hour=2.90
node-class "a" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 8 model="a100-sxm4-80gb"
}
node-class "h" {
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 8 model="h100-sxm5-80gb"
}
// The dearer model comes first in name order, so first-fit would pick it.
nodes "n-1" class="h"
nodes "n-2" class="a"
fabric {
    leaf "l0" nodes="n-[1-2]"
}
team "t" guarantee=0 burst=16
priority "p" value=1
inference "serve" team="t" priority="p" replicas=4 {
    memory "40GiB"
    isolation "whole-gpu"
    gpus 1
}
"#;
    let c = load_text(text);
    let p = common::plan(&c, SolverKind::Ilp);
    let serve = class(&p, "serve");
    assert_eq!(serve.replicas_placed, 4);
    for g in &serve.gangs {
        for n in &g.nodes {
            assert_eq!(n.node, "n-2", "placed on the dearer model: {g:?}");
        }
    }
    let g = greedy(&c);
    assert!(p.summary.cost_per_hour < g.summary.cost_per_hour);
    // Swap the prices: the same class now lands on the other node.
    let swapped = text
        .replace("1.60", "X")
        .replace("2.90", "1.60")
        .replace("X", "2.90");
    let c = load_text(&swapped);
    let p = common::plan(&c, SolverKind::Ilp);
    for g in &class(&p, "serve").gangs {
        for n in &g.nodes {
            assert_eq!(n.node, "n-1", "placed on the dearer model: {g:?}");
        }
    }
}

// ------------------------------------------------------- current MIG layouts (issue 4)

/// Two nodes of two H100s; `rest` adds the MIG state and the demand.
fn two_h100_nodes(nodes: &str, rest: &str) -> Cluster {
    load_text(&format!(
        r#"
cluster "mig"
node-class "box" {{
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 2 model="h100-sxm5-80gb"
}}
nodes "{nodes}" class="box"
fabric {{
    leaf "l0" nodes="{nodes}"
}}
team "t" guarantee=0 burst=16
priority "p" value=1
{rest}
"#
    ))
}

/// The ILP's plan, verified by the checker ([`common::plan`]).
fn ilp(c: &Cluster) -> Placement {
    let p = common::plan(c, SolverKind::Ilp);
    assert_eq!(p.solver.name, "ilp", "{:?}", p.solver);
    p
}

const FOUR_3G: &str = r#"
inference "mid" team="t" priority="p" replicas=4 {
    memory "30GiB"
    isolation "mig"
}
"#;

#[test]
fn a_current_layout_that_serves_the_demand_is_kept() {
    // Without a current layout the packing takes m-2 (whole-GPU nodes come first in a
    // group of identical nodes).
    let fresh = ilp(&two_h100_nodes("m-[1-2]", FOUR_3G));
    let nodes: BTreeSet<&str> = class(&fresh, "mid")
        .mig_instances
        .iter()
        .map(|m| m.node.as_str())
        .collect();
    assert_eq!(nodes, BTreeSet::from(["m-2"]));
    assert!(fresh.mig_changes.is_empty());
    // m-1 is already laid out as 3g.40gb x2 on both GPUs: the plan keeps it.
    let current = r#"mig { layout "3g.40gb" "3g.40gb" nodes="m-1" current=#true }"#;
    let p = ilp(&two_h100_nodes("m-[1-2]", &format!("{current}\n{FOUR_3G}")));
    let mid = class(&p, "mid");
    assert_eq!(mid.replicas_placed, 4);
    assert!(mid.mig_instances.iter().all(|m| m.node == "m-1"), "{mid:?}");
    assert_eq!(p.mig_changes.len(), 2);
    for ch in &p.mig_changes {
        assert_eq!(ch.action, gpuplan::placement::MigAction::Keep, "{ch:?}");
        assert_eq!(ch.surviving, vec!["3g.40gb"; 2]);
        assert!(ch.destroyed.is_empty() && ch.created.is_empty());
    }
    let text = placement::view::human(&p, &two_h100_nodes("m-[1-2]", current));
    assert!(
        text.contains("MIG changes (2 of 2 configured GPUs kept)"),
        "{text}"
    ); // Greedy goes first-fit to m-1; with m-2 configured it keeps m-2 instead.
    let g = greedy(&two_h100_nodes("m-[1-2]", FOUR_3G));
    assert!(
        class(&g, "mid")
            .mig_instances
            .iter()
            .all(|m| m.node == "m-1")
    );
    let c = two_h100_nodes(
        "m-[1-2]",
        &format!("{}\n{FOUR_3G}", current.replace("m-1", "m-2")),
    );
    let g = greedy(&c);
    assert!(
        placement::check(&c, &g).is_empty(),
        "{:?}",
        placement::check(&c, &g)
    );
    let mid = class(&g, "mid");
    assert_eq!(mid.replicas_placed, 4);
    assert!(mid.mig_instances.iter().all(|m| m.node == "m-2"), "{mid:?}");
    assert!(
        g.mig_changes
            .iter()
            .all(|c| c.action == gpuplan::placement::MigAction::Keep),
        "{:?}",
        g.mig_changes
    );
}

#[test]
fn a_current_layout_that_does_not_serve_the_demand_is_reconfigured() {
    // One node, both GPUs at 1g.10gb x7: two 3g.40gb replicas need one GPU changed; the
    // other keeps its layout (nothing needs it).
    let current = r#"mig { layout "1g.10gb*7" nodes="m-1" current=#true }"#;
    let two = FOUR_3G.replace("replicas=4", "replicas=2");
    let p = ilp(&two_h100_nodes("m-1", &format!("{current}\n{two}")));
    assert_eq!(class(&p, "mid").replicas_placed, 2);
    let by_gpu: Vec<(&str, &[String], &[String])> = p
        .mig_changes
        .iter()
        .map(|c| {
            (
                c.action.as_str(),
                c.destroyed.as_slice(),
                c.created.as_slice(),
            )
        })
        .collect();
    let seven = vec!["1g.10gb".to_string(); 7];
    let two_3g = vec!["3g.40gb".to_string(); 2];
    assert_eq!(
        by_gpu,
        vec![
            ("keep", &[][..], &[][..]),
            ("reconfigure", seven.as_slice(), two_3g.as_slice()),
        ]
    );
    let text = placement::view::human(&p, &two_h100_nodes("m-1", current));
    assert!(
        text.contains(
            "m-1 gpu 1            reconfigure  destroy 1g.10gb x7; keep none; create 3g.40gb x2"
        ),
        "{text}"
    );
    // The JSON carries the same list, and validates against the schema (plan_schema).
    let v: serde_json::Value = serde_json::from_str(&placement::view::json(&p)).unwrap();
    assert_eq!(
        v["mig_changes"][1]["destroyed"].as_array().unwrap().len(),
        7
    );
    // Greedy: one GPU reconfigured, the other kept.
    let c = two_h100_nodes("m-1", &format!("{current}\n{two}"));
    let g = greedy(&c);
    assert!(
        placement::check(&c, &g).is_empty(),
        "{:?}",
        placement::check(&c, &g)
    );
    let actions: Vec<&str> = g.mig_changes.iter().map(|c| c.action.as_str()).collect();
    assert_eq!(actions, vec!["reconfigure", "keep"]);
}

#[test]
fn free_gpus_are_laid_out_before_configured_ones_and_partial_matches_survive() {
    // GPU 0 is configured, GPU 1 is free: the new layout goes to GPU 1.
    let current = r#"mig { layout "1g.10gb*7" nodes="m-1" gpus="0" current=#true }"#;
    let two = FOUR_3G.replace("replicas=4", "replicas=2");
    let p = ilp(&two_h100_nodes("m-1", &format!("{current}\n{two}")));
    assert_eq!(p.mig_changes.len(), 1);
    assert_eq!(p.mig_changes[0].action, gpuplan::placement::MigAction::Keep);
    assert!(class(&p, "mid").mig_instances.iter().all(|m| m.gpu == 1));
    // Both GPUs hold one 3g.40gb and small instances; four 3g.40gb replicas need both
    // changed: each 3g.40gb survives, the rest of the GPU is destroyed and a second
    // 3g.40gb created.
    let current = r#"mig { layout "3g.40gb" "2g.20gb" "1g.10gb*2" nodes="m-1" current=#true }"#;
    let p = ilp(&two_h100_nodes("m-1", &format!("{current}\n{FOUR_3G}")));
    assert_eq!(class(&p, "mid").replicas_placed, 4);
    assert_eq!(p.mig_changes.len(), 2);
    for ch in &p.mig_changes {
        assert_eq!(
            ch.action,
            gpuplan::placement::MigAction::Reconfigure,
            "{ch:?}"
        );
        assert_eq!(ch.surviving, vec!["3g.40gb"]);
        assert_eq!(ch.destroyed, vec!["2g.20gb", "1g.10gb", "1g.10gb"]);
        assert_eq!(ch.created, vec!["3g.40gb"]);
    }
    // Two replicas: the 3g.40gb instances already there serve them; nothing changes.
    let p = ilp(&two_h100_nodes("m-1", &format!("{current}\n{two}")));
    assert!(
        p.mig_changes
            .iter()
            .all(|c| c.action == gpuplan::placement::MigAction::Keep),
        "{:?}",
        p.mig_changes
    );
}

#[test]
fn a_current_layout_on_a_node_that_leaves_mig_is_cleared() {
    let text = r#"
mig { layout "3g.40gb" "3g.40gb" nodes="m-1" current=#true }
training "ft" team="t" priority="p" {
    gang gpus=2
}
"#;
    let p = ilp(&two_h100_nodes("m-1", text));
    assert_eq!(class(&p, "ft").replicas_placed, 1);
    assert!(
        p.mig_changes
            .iter()
            .all(|c| c.action == gpuplan::placement::MigAction::Clear
                && c.destroyed == vec!["3g.40gb"; 2]
                && c.planned.is_empty())
    );
}

/// Right-sizing follows the declared driver: `1g.10gb` on an A100 40GB needs R525, so
/// with driver 520 a 8 GiB replica gets the next profile that holds it, `2g.10gb`.
#[test]
fn right_sizing_skips_profiles_newer_than_the_declared_driver() {
    let text = |driver: &str| {
        format!(
            r#"
cluster "drv"
{driver}
node-class "box" {{
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 1 model="a100-sxm4-40gb"
}}
nodes "a-1" class="box"
team "t" guarantee=0 burst=4
priority "p" value=1
inference "small" team="t" priority="p" replicas=2 {{
    memory "8GiB"
    isolation "mig"
}}
"#
        )
    };
    for (driver, want) in [
        ("", "1g.10gb"),
        (
            r#"gpu-model "a100-sxm4-40gb" driver="525.85.12""#,
            "1g.10gb",
        ),
        (
            r#"gpu-model "a100-sxm4-40gb" driver="520.61.05""#,
            "2g.10gb",
        ),
    ] {
        let c = load_text(&text(driver));
        for p in [ilp(&c), greedy(&c)] {
            let small = class(&p, "small");
            assert_eq!(small.replicas_placed, 2, "{driver}");
            assert!(
                small.mig_instances.iter().all(|m| m.profile == want),
                "{driver}: {:?}",
                small.mig_instances
            );
        }
    }
}
