//! Readers of gpuplan's own files never panic (issue 13): saved plans and state files,
//! mutated (truncated, wrong types, huge numbers, duplicated or missing keys, unknown
//! format versions, flipped bytes), go through `show PLAN`, `apply PLAN`, `plan
//! --previous PLAN` and `plan` / `apply` with the state; each run ends without a panic,
//! every refusal carries a code, and a refused apply writes nothing.
//!
//! Fixed seed in CI (`tests/it/common`); `PROPTEST_CASES=N GPUPLAN_PROPTEST_SEED=random
//! cargo test --release --test it readers::` runs a longer random sweep (docs/fuzzing.md).

use crate::common;

use crate::common::{Run, Scratch, codes, panicked};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A scratch folder with a plan `p.json` made against an applied state.
fn setup() -> Scratch {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let s = Scratch::new(&format!("readers-{}", N.fetch_add(1, Ordering::Relaxed)));
    s.copy_in("tests/fixtures/apply/v1/cluster.kdl", "cluster/cluster.kdl");
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "-o", "first.json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    let r = s.run(&["apply", "first.json", "--out-dir", "out"]);
    assert_eq!(r.0, 0, "{}", r.2);
    // A plan with changes against that state: MIG layouts and gangs to compare.
    s.copy_in("tests/fixtures/apply/v2/cluster.kdl", "cluster/cluster.kdl");
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "-o", "p.json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    s
}

/// Values that break readers: wrong types, huge and negative numbers, odd strings.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(4_294_967_295u64)),
        Just(json!(4_294_967_296u64)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(1e308)),
        Just(json!(-1e308)),
        Just(json!(0.5)),
        Just(json!("")),
        Just(json!("../../x")),
        Just(json!("h100-1")),
        Just(json!("a\u{0}b\nc")),
        Just(json!("x".repeat(5000))),
        Just(json!([])),
        Just(json!([1, "a", null])),
        Just(json!({})),
        Just(json!({"node": "h100-9", "gpus": [4_000_000_000u64]})),
        Just(deep(200)),
    ]
}

fn deep(n: usize) -> Value {
    (0..n).fold(json!(1), |v, _| json!([v]))
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the value at the n-th path (pre-order) with another value.
    Replace(usize, Value),
    /// Remove the n-th key (objects) or element (arrays).
    Remove(usize),
    /// Duplicate the n-th line of the text (pretty JSON: often a repeated key).
    DuplicateLine(usize),
    /// Cut the text at a byte.
    Truncate(usize),
    /// Flip one byte (often not UTF-8 any more).
    Flip(usize, u8),
    /// Another format version.
    Version(Value),
    /// A value of the same type: another number, another name, an array with an
    /// element repeated or dropped (keeps the file readable, so deeper code sees it).
    Tweak(usize, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), odd_value()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        2 => any::<usize>().prop_map(Mutation::Remove),
        4 => (any::<usize>(), any::<u32>()).prop_map(|(i, k)| Mutation::Tweak(i, k)),
        1 => any::<usize>().prop_map(Mutation::DuplicateLine),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        1 => prop_oneof![
            Just(json!("2")),
            Just(json!(1)),
            Just(json!(2)),
            Just(json!("0")),
            Just(json!(null)),
            Just(json!("1.0"))
        ]
        .prop_map(Mutation::Version),
    ]
}

/// Paths of every value in `v`, pre-order (the root excluded).
fn paths(v: &Value, at: &mut Vec<Vec<Value>>, prefix: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(json!(k));
                at.push(prefix.clone());
                paths(x, at, prefix);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(json!(i));
                at.push(prefix.clone());
                paths(x, at, prefix);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn parent_mut<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match k {
        Value::String(k) => &mut v[k.as_str()],
        Value::Number(i) => &mut v[i.as_u64().unwrap() as usize],
        _ => unreachable!(),
    })
}

/// Another value of the same JSON type as `x`, chosen by `k`.
fn tweak(x: &Value, k: u32) -> Value {
    const NAMES: &[&str] = &[
        "h100-1",
        "h100-2",
        "h100-3",
        "h100-9",
        "",
        "pretrain",
        "embed",
        "ml",
        "mig",
        "train",
        "1g.10gb",
        "7g.80gb",
        "3g.40gb",
        "h100-sxm5-80gb",
        "whole-gpu",
        "optimal",
        "capacity",
        "create",
        "update",
        "delete",
    ];
    match x {
        Value::Number(_) => match k % 8 {
            0 => json!(0),
            1 => json!(1),
            2 => json!(7),
            3 => json!(8),
            4 => json!(u32::MAX),
            5 => json!(k % 100),
            6 => json!(0.25),
            _ => json!(k),
        },
        Value::String(_) => json!(NAMES[k as usize % NAMES.len()]),
        Value::Bool(b) => json!(!b),
        Value::Array(a) if !a.is_empty() => {
            let mut a = a.clone();
            let j = k as usize % a.len();
            if k % 2 == 0 {
                a.push(a[j].clone());
            } else {
                a.remove(j);
            }
            Value::Array(a)
        }
        other => other.clone(),
    }
}

/// The mutated text, as bytes (a flipped byte may leave UTF-8).
fn mutate(text: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for m in muts {
        let Ok(current) = String::from_utf8(bytes.clone()) else {
            break;
        };
        bytes = match m {
            Mutation::Version(new) if serde_json::from_str::<Value>(&current).is_ok() => {
                let mut v: Value = serde_json::from_str(&current).unwrap();
                v["format_version"] = new.clone();
                (serde_json::to_string_pretty(&v).unwrap() + "\n").into_bytes()
            }
            Mutation::Replace(i, new) if serde_json::from_str::<Value>(&current).is_ok() => {
                let mut v: Value = serde_json::from_str(&current).unwrap();
                let mut all = Vec::new();
                paths(&v, &mut all, &mut Vec::new());
                if !all.is_empty() {
                    let path = &all[i % all.len()];
                    *parent_mut(&mut v, path) = new.clone();
                }
                (serde_json::to_string_pretty(&v).unwrap() + "\n").into_bytes()
            }
            Mutation::Tweak(i, k) if serde_json::from_str::<Value>(&current).is_ok() => {
                let mut v: Value = serde_json::from_str(&current).unwrap();
                let mut all = Vec::new();
                paths(&v, &mut all, &mut Vec::new());
                if !all.is_empty() {
                    let path = &all[i % all.len()];
                    let x = parent_mut(&mut v, path);
                    *x = tweak(x, *k);
                }
                (serde_json::to_string_pretty(&v).unwrap() + "\n").into_bytes()
            }
            Mutation::Remove(i) if serde_json::from_str::<Value>(&current).is_ok() => {
                let mut v: Value = serde_json::from_str(&current).unwrap();
                let mut all = Vec::new();
                paths(&v, &mut all, &mut Vec::new());
                if !all.is_empty() {
                    let path = all[i % all.len()].clone();
                    let (last, parent) = path.split_last().unwrap();
                    match (parent_mut(&mut v, parent), last) {
                        (Value::Object(m), Value::String(k)) => {
                            m.remove(k);
                        }
                        (Value::Array(a), Value::Number(n)) => {
                            a.remove(n.as_u64().unwrap() as usize);
                        }
                        _ => {}
                    }
                }
                (serde_json::to_string_pretty(&v).unwrap() + "\n").into_bytes()
            }
            Mutation::DuplicateLine(i) => {
                let lines: Vec<&str> = current.lines().collect();
                let k = i % lines.len().max(1);
                let mut out: Vec<&str> = lines[..=k.min(lines.len().saturating_sub(1))].to_vec();
                out.extend(&lines[k..]);
                (out.join("\n") + "\n").into_bytes()
            }
            Mutation::Truncate(i) => bytes[..i % bytes.len().max(1)].to_vec(),
            Mutation::Flip(i, b) => {
                let mut out = bytes.clone();
                if !out.is_empty() {
                    let k = i % out.len();
                    out[k] ^= b | 1;
                }
                out
            }
            _ => bytes,
        };
    }
    bytes
}

/// A run that did not panic; a failing run names at least one code.
fn sane(what: &str, r: &Run) {
    assert!(!panicked(r), "{what} panicked:\n{}", r.2);
    assert!(matches!(r.0, 0..=2), "{what}: exit {}\n{}", r.0, r.2);
    if r.0 == 1 {
        assert!(
            !codes(r).is_empty(),
            "{what} failed without a code:\n{}",
            r.2
        );
    }
}

fn check_plan(s: &Scratch, original: &str, muts: &[Mutation]) {
    let bytes = mutate(original, muts);
    s.write("m.json", &bytes);
    sane("show PLAN", &s.run(&["show", "m.json"]));
    sane(
        "plan --previous PLAN",
        &s.run(&["plan", "cluster", "--previous", "m.json", "--quiet"]),
    );
    let before = s.tree();
    let r = s.run(&["apply", "m.json", "--out-dir", "out"]);
    sane("apply PLAN", &r);
    if bytes != original.as_bytes() {
        assert_eq!(r.0, 1, "a mutated plan was applied: {muts:?}\n{}", r.2);
        assert_eq!(s.tree(), before, "a refused apply changed files: {muts:?}");
    }
}

fn check_state(s: &Scratch, original: &str, muts: &[Mutation]) {
    let bytes = mutate(original, muts);
    s.write(".gpuplan/state.json", &bytes);
    sane("plan (state)", &s.run(&["plan", "cluster", "--quiet"]));
    sane(
        "plan --previous STATE",
        &s.run(&[
            "plan",
            "cluster",
            "--previous",
            ".gpuplan/state.json",
            "--quiet",
        ]),
    );
    let before = s.tree();
    let r = s.run(&["apply", "p.json", "--out-dir", "out"]);
    sane("apply PLAN (state)", &r);
    if bytes != original.as_bytes() {
        // The plan was made against the original state: any other state makes it stale.
        assert_eq!(r.0, 1, "applied against a mutated state: {muts:?}\n{}", r.2);
        assert_eq!(s.tree(), before);
    }
    sane(
        "drift (state)",
        &s.run(&["drift", "cluster", "--observed", "cluster"]),
    );
    s.write(".gpuplan/state.json", original);
}

proptest! {
    #![proptest_config(common::proptest_config(48))]

    #[test]
    fn mutated_saved_plans_never_panic(muts in prop::collection::vec(mutation(), 1..4)) {
        thread_local!(static S: Scratch = setup());
        S.with(|s| {
            let original = s.read("p.json");
            check_plan(s, &original, &muts);
        });
    }

    #[test]
    fn mutated_states_never_panic(muts in prop::collection::vec(mutation(), 1..4)) {
        thread_local!(static S: Scratch = setup());
        S.with(|s| {
            let original = s.read(".gpuplan/state.json");
            check_state(s, &original, &muts);
        });
    }
}

/// Targeted cases: every field of the placement set to each odd value, one at a time,
/// for the saved plan's placement (read by `plan --previous` and by apply's checker).
#[test]
fn every_placement_field_with_odd_values() {
    let s = setup();
    let original = s.read("p.json");
    let v: Value = serde_json::from_str(&original).unwrap();
    let mut all = Vec::new();
    paths(&v["placement"], &mut all, &mut Vec::new());
    // One representative path per distinct shape (arrays indexes folded to 0).
    let mut seen = std::collections::BTreeSet::new();
    let odd = [
        json!(null),
        json!(-1),
        json!(4_294_967_295u64),
        json!(4_294_967_296u64),
        json!(u64::MAX),
        json!(1e308),
        json!(-1e308),
        json!("h100-9"),
        json!("h100-2"),
        json!([]),
        json!([4_294_967_295u64, 0, 0]),
    ];
    for p in all {
        let shape: Vec<String> = p
            .iter()
            .map(|k| {
                if k.is_number() {
                    "#".into()
                } else {
                    k.to_string()
                }
            })
            .collect();
        if !seen.insert(shape) {
            continue;
        }
        for new in &odd {
            let mut m = v.clone();
            *parent_mut(&mut m["placement"], &p) = new.clone();
            let text = serde_json::to_string_pretty(&m).unwrap() + "\n";
            s.write("m.json", &text);
            for args in [
                vec!["show", "m.json"],
                vec!["plan", "cluster", "--previous", "m.json", "--quiet"],
                vec!["apply", "m.json", "--out-dir", "out", "--dry-run"],
            ] {
                let r = s.run(&args);
                assert!(!panicked(&r), "{args:?} with {p:?} = {new}:\n{}", r.2);
                if r.0 == 1 {
                    assert!(!codes(&r).is_empty(), "{args:?} {p:?} = {new}: {}", r.2);
                }
            }
        }
    }
}

/// The long run on the readers (docs/fuzzing.md), in process: `GPUPLAN_FUZZ_CASES`
/// mutated saved plans and states (default 1,000,000, half each) through the plan and
/// state parsers, then, for those that parse, everything that reads their placement:
/// the checker, the previous-placement resolution, the disruption against the applied
/// state, and the human and JSON views.
///
/// `cargo test --release --test it readers:: -- --ignored long_run_readers --nocapture`
#[test]
#[ignore = "long fuzzing run, on demand (docs/fuzzing.md)"]
fn long_run_readers() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    use std::time::{Duration, Instant};
    let total: u64 = std::env::var("GPUPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let s = setup();
    let plan_text = s.read("p.json");
    let state_text = s.read(".gpuplan/state.json");
    let (sources, _) = gpuplan::load::load_paths(&[s.path("cluster")]);
    let model = gpuplan::validate::validate(&sources).model.unwrap();
    let applied = gpuplan::state::parse("state.json", &state_text)
        .unwrap()
        .state;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let start = Instant::now();
    let (model, applied) = (&model, &applied);
    let (plan_text, state_text) = (&plan_text, &state_text);
    let results: Vec<(u64, u64, Duration)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut seed = [0u8; 32];
                    seed[..8].copy_from_slice(&(0x6a736f6e_u64 + t).to_le_bytes());
                    let mut runner = TestRunner::new_with_rng(
                        Config::default(),
                        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
                    );
                    let muts = prop::collection::vec(mutation(), 1..4);
                    let (mut n, mut parsed, mut slowest) = (0u64, 0u64, Duration::ZERO);
                    let mine = total / threads + u64::from(t < total % threads);
                    for i in 0..mine {
                        let case = Instant::now();
                        let m = muts.new_tree(&mut runner).unwrap().current();
                        let is_plan = i % 2 == 0;
                        let original = if is_plan { plan_text } else { state_text };
                        let bytes = mutate(original, &m);
                        let Ok(text) = std::str::from_utf8(&bytes) else {
                            n += 1;
                            continue;
                        };
                        parsed += u64::from(read_through(text, is_plan, model, applied));
                        slowest = slowest.max(case.elapsed());
                        n += 1;
                    }
                    (n, parsed, slowest)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let n: u64 = results.iter().map(|r| r.0).sum();
    let parsed: u64 = results.iter().map(|r| r.1).sum();
    let slowest = results.iter().map(|r| r.2).max().unwrap_or_default();
    eprintln!(
        "long_run_readers: {n} mutated plans and states on {threads} thread(s) in {:.1} s ({parsed} parsed and read through), slowest {:.1} ms, no panic",
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1e3
    );
    assert_eq!(n, total);
}

/// A mutated saved plan (`is_plan`) or state read, and when it parses, through the
/// checker, the views, the moves and the disruption against the applied state: nothing
/// panics. Whether it parsed.
fn read_through(
    text: &str,
    is_plan: bool,
    model: &gpuplan::model::Cluster,
    applied: &gpuplan::state::State,
) -> bool {
    use gpuplan::placement::previous::{moves, resolve};
    let placement = if is_plan {
        match gpuplan::plan::parse("m.json", text) {
            Ok(p) => {
                let _ = gpuplan::plan::view::human(&p, false);
                let _ = gpuplan::plan::view::json(&p);
                Some(p.placement)
            }
            Err(d) => {
                assert!(d.code.starts_with("GP9") && d.help.is_some());
                None
            }
        }
    } else {
        match gpuplan::state::parse("s.json", text) {
            Ok(l) => Some(l.state.placement),
            Err(d) => {
                assert!(d.code.starts_with("GP9") && d.help.is_some());
                None
            }
        }
    };
    let Some(p) = placement else {
        return false;
    };
    let _ = gpuplan::placement::check(model, &p);
    let _ = gpuplan::placement::view::human(&p, model);
    let before = resolve(model, &applied.placement);
    let now = resolve(model, &p);
    let _ = moves(&before, &now);
    let _ = gpuplan::plan::disruption::compute(model, Some(&applied.placement), &p);
    let _ = gpuplan::plan::disruption::compute(model, Some(&p), &applied.placement);
    true
}
