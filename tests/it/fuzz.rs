//! Property tests: random, mutated and adversarial input goes through the loader and the
//! validator; nothing panics and every case finishes quickly.
//!
//! `PROPTEST_CASES` sets the number of cases per property (default 256); the seed is
//! fixed (`tests/it/common`). The long run outside CI, `long_run_kdl`, is documented in
//! docs/fuzzing.md.

use crate::common;

use gpuplan::diag::Report;
use gpuplan::load::load_paths;
use gpuplan::source::SourceMap;
use gpuplan::validate::validate;
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A valid configuration that uses most of the language.
const SEED: &str = r#"cluster "prod" {
    slurm version="22.05"
    kubernetes version="1.31"
    volcano version="1.12"
    kueue version="0.19"
}
gpu-model "h100-sxm5-80gb" price-per-hour=2.5 {
    mig-name "3g.40gb" driver="3g.39gb"
}
gpu-model "custom" base="h100-sxm5-80gb" memory="80GiB" nvlink-gen=4 nvlink-bandwidth="900GB/s" product-name="NVIDIA H100"
node-class "dgx" {
    cpu sockets=2 cores-per-socket=56 threads-per-core=2
    memory "2TiB"
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
    numa 0 gpus="0-3" nics="0-3" cores="0-55"
    numa 1 gpus="4-7" nics="4-7" cores="56-111"
    pcie-switch "sw0" gpus="0,1" nics="0,1"
    nics 8 speed="400Gbps" kind="infiniband"
    label "gpuplan.io/rack" "r1"
    taint "gpu" "true" effect="NoSchedule"
}
nodes "dgx-[001-004]" class="dgx" {
    label "zone" "a"
    taint "maint" effect="PreferNoSchedule"
    node "dgx-002" gpus-down="3" cordon=#false {
        label "note" "flaky"
        taint "bad" "gpu3"
    }
}
fabric {
    core "c1" link-speed="800Gbps" {
        spine "s1" link-speed="800Gbps" {
            leaf "l1" nodes="dgx-[001-002]" rails=8 link-speed="400Gbps"
            leaf "l2" nodes="dgx-[003-004]"
        }
    }
    nvlink-domain "nvl" nodes="dgx-[001-002]"
}
team "research" guarantee=8 burst=16
team "nlp" guarantee=8 burst=16 parent="research" {
    quota model="h100-sxm5-80gb" guarantee=8 burst=16
    quota pool="train" guarantee=8
}
priority "low" value=100 preemption="never" description="batch"
priority "high" value=1000 preempts="low" {
    preempts "low"
}
training "llm" team="nlp" priority="high" replicas=1 {
    gang gpus=16 gpus-per-node=8
    topology required="spine" preferred="leaf"
    checkpoint every="1h30m"
    preemptible #true
    models "h100-sxm5-80gb"
}
inference "chat" team="nlp" priority="high" replicas=4 {
    memory "18GiB"
    isolation "mig"
    models "h100-sxm5-80gb"
    profile "2g.20gb"
    min-compute 2
}
inference "big" team="research" priority="low" {
    isolation "whole-gpu"
    gpus 2
}
dev "notebooks" team="research" priority="low" {
    share "time-slice" per-gpu=4
    memory "10GiB"
    models "h100-sxm5-80gb"
}
mig {
    allow "1g.10gb" "2g.20gb" "3g.40gb"
    layout "3g.40gb" "2g.20gb" "1g.10gb*2" nodes="dgx-[003-004]" gpus="0-3"
    headroom "10%"
}
pool "train" mode="training" nodes="dgx-[001-002]"
pool "serve" mode="mig" nodes="dgx-[003-004]"
"#;

/// Generous bound per case (debug build, 2 cores): a hang, not a slow machine.
// A hang detector, not a performance test (performance lives in docs/benchmarks.md):
// generous enough for a loaded 2-core CI machine.
const BOUND: Duration = Duration::from_secs(60);

fn config() -> Config {
    common::proptest_config(256)
}

/// Validates and renders `sources`; checks spans and the time bound.
fn check_sources(sources: &SourceMap) {
    let start = Instant::now();
    let outcome = validate(sources);
    let report = Report::new(sources, &outcome.diagnostics);
    let _ = report.human(false);
    let _ = serde_json::to_string(&report.json_items()).unwrap();
    for d in &outcome.diagnostics {
        assert!(d.code.starts_with("GP"), "bad code {}", d.code);
        let s = d
            .span
            .unwrap_or_else(|| panic!("{} without span: {}", d.code, d.message));
        let text = &sources.get(s.file).expect("span in a known file").text;
        assert!(
            s.offset + s.len <= text.len(),
            "{} span past the end",
            d.code
        );
        assert!(text.is_char_boundary(s.offset) && text.is_char_boundary(s.offset + s.len));
    }
    let took = start.elapsed();
    assert!(took < BOUND, "validation took {took:?}");
}

fn check_text(text: &str) {
    let mut sources = SourceMap::new();
    let file = sources.add("fuzz.kdl", text);
    check_sources(&sources);
    check_fmt(file, text);
}

/// `gpuplan fmt` on anything that parses: never refuses as "would change the meaning"
/// (GP761), and formatting its own output changes nothing.
fn check_fmt(file: gpuplan::source::FileId, text: &str) {
    match gpuplan::fmt::format(file, text) {
        Ok(once) => {
            let twice = gpuplan::fmt::format(file, &once)
                .unwrap_or_else(|d| panic!("formatted text refused: {d:?}\n{once}"));
            assert_eq!(once, twice, "fmt is not idempotent on:\n{text}");
        }
        Err(d) => assert!(
            d.iter().all(|d| d.code != "GP761"),
            "fmt refused a file that parses: {d:?}\n{text}"
        ),
    }
}

fn temp_path(tag: &str) -> std::path::PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "gpuplan-fuzz-{}-{tag}-{}.kdl",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes `bytes` to a file and reads it back through `load_paths`.
fn check_bytes(bytes: &[u8]) {
    let path = temp_path("bytes");
    std::fs::write(&path, bytes).unwrap();
    let start = Instant::now();
    let (sources, load_diags) = load_paths(std::slice::from_ref(&path));
    let _ = std::fs::remove_file(&path);
    match std::str::from_utf8(bytes) {
        Ok(_) => assert!(load_diags.is_empty(), "{load_diags:?}"),
        Err(_) => {
            assert!(sources.files().is_empty());
            assert_eq!(load_diags.len(), 1);
            assert_eq!(load_diags[0].code, "GP000");
        }
    }
    let _ = Report::new(&sources, &load_diags).human(false);
    check_sources(&sources);
    assert!(start.elapsed() < BOUND);
}

/// Tokens that are likely to break or confuse the parser and the decoder.
const VOCAB: &[&str] = &[
    "{",
    "}",
    "\"",
    "=",
    "#true",
    "#false",
    "#null",
    "true",
    "null",
    ";",
    "\\",
    "99999999999999999999999",
    "-1",
    "1e308",
    "-0",
    "0x",
    "0b2",
    "1.5",
    "\"[0-99999]\"",
    "\"n[0-99999][0-99999]\"",
    "\"x*9\"",
    "\"1g.10gb*0\"",
    "\"0-4095\"",
    "\"7-0\"",
    "\"\"",
    "\"ü\"",
    "#\"raw\"#",
    "\"\"\"",
    "\n",
    "\r\n",
    "\t",
    "/-",
    "//",
    "/*",
    "*/",
    "(ty)",
    "(",
    ")",
    " ",
    "\u{feff}",
    "\u{0}",
    "cluster",
    "gpu-model",
    "node-class",
    "nodes",
    "node",
    "fabric",
    "core",
    "spine",
    "leaf",
    "nvlink-domain",
    "team",
    "quota",
    "priority",
    "preempts",
    "training",
    "inference",
    "dev",
    "mig",
    "allow",
    "layout",
    "headroom",
    "pool",
    "gpus",
    "memory",
    "cpu",
    "numa",
    "pcie-switch",
    "nics",
    "label",
    "taint",
    "gang",
    "topology",
    "checkpoint",
    "preemptible",
    "models",
    "profile",
    "share",
    "min-compute",
    "isolation",
    "class=",
    "model=",
    "nodes=",
    "value=",
    "team=",
    "priority=",
    "gpus=",
    "every=",
];

fn char_floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(usize),
    Delete(usize, usize),
    Insert(usize, usize),
    DuplicateLine(usize, usize),
    SwapLines(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1usize..200).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), 0..VOCAB.len()).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (any::<usize>(), 1usize..50).prop_map(|(a, n)| Mutation::DuplicateLine(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

fn apply(text: &mut String, m: &Mutation) {
    let len = text.len().max(1);
    match *m {
        Mutation::Truncate(at) => {
            let at = char_floor(text, at % len);
            text.truncate(at);
        }
        Mutation::Delete(at, n) => {
            let a = char_floor(text, at % len);
            let b = char_floor(text, a + n);
            text.replace_range(a..b, "");
        }
        Mutation::Insert(at, t) => {
            let a = char_floor(text, at % len);
            text.insert_str(a, VOCAB[t]);
        }
        Mutation::DuplicateLine(line, times) => {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return;
            }
            let i = line % lines.len();
            let mut out: Vec<&str> = lines[..=i].to_vec();
            out.extend(std::iter::repeat_n(lines[i], times));
            out.extend(&lines[i + 1..]);
            *text = out.join("\n");
        }
        Mutation::SwapLines(a, b) => {
            let mut lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return;
            }
            let n = lines.len();
            lines.swap(a % n, b % n);
            *text = lines.join("\n");
        }
    }
}

#[test]
fn seed_is_valid() {
    let mut sources = SourceMap::new();
    sources.add("seed.kdl", SEED);
    let outcome = validate(&sources);
    assert!(
        !outcome.has_errors(),
        "{}",
        Report::new(&sources, &outcome.diagnostics).human(false)
    );
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary text, random unicode included.
    #[test]
    fn arbitrary_strings(text in any::<String>()) {
        check_text(&text);
    }

    /// Strings made of KDL-ish tokens: far more likely to parse than random text.
    #[test]
    fn token_soup(tokens in prop::collection::vec(0..VOCAB.len(), 0..200)) {
        let text: String = tokens.iter().map(|&t| VOCAB[t]).collect::<Vec<_>>().join(" ");
        check_text(&text);
    }

    /// Random bytes through a file and `load_paths` (mostly not UTF-8).
    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_bytes(&bytes);
    }

    /// The seed with its bytes corrupted: always a file-level GP000 when not UTF-8.
    #[test]
    fn corrupted_seed_bytes(at in any::<usize>(), byte in 0x80u8..=0xff) {
        let mut bytes = SEED.as_bytes().to_vec();
        let i = at % bytes.len();
        bytes[i] = byte;
        check_bytes(&bytes);
    }

    /// The valid seed, mutated: truncated, cut, with tokens inserted, lines repeated.
    #[test]
    fn mutated_seed(muts in prop::collection::vec(mutation(), 1..8)) {
        let mut text = SEED.to_string();
        for m in &muts {
            apply(&mut text, m);
        }
        check_text(&text);
    }

    /// Nesting from shallow to far deeper than the parser's stack allows.
    #[test]
    fn deep_nesting(depth in 0usize..2000, kind in 0usize..5, close in any::<bool>()) {
        let (open, shut) = match kind {
            0 => ("fabric { ", "} "),
            1 => ("a { ", "} "),
            2 => ("/* ", "*/ "),
            3 => ("/- ", ""),
            _ => ("{ ", "} "),
        };
        let mut text = open.repeat(depth);
        text.push_str("cluster \"x\" ");
        if close {
            text.push_str(&shut.repeat(depth));
        }
        check_text(&text);
    }

    /// Huge numbers in every numeric position of the language.
    #[test]
    fn huge_numbers(
        digits in "[1-9][0-9]{0,60}",
        neg in any::<bool>(),
        frac in prop::option::of("[0-9]{1,40}"),
        exp in prop::option::of(-400i32..400),
        slot in 0usize..8,
    ) {
        let mut n = format!("{}{digits}", if neg { "-" } else { "" });
        if let Some(f) = frac {
            n.push('.');
            n.push_str(&f);
        }
        if let Some(e) = exp {
            n.push_str(&format!("e{e}"));
        }
        let text = match slot {
            0 => format!("node-class \"c\" {{\n  gpus {n} model=\"h100-sxm5-80gb\"\n}}\n"),
            1 => format!("priority \"p\" value={n}\n"),
            2 => format!("team \"t\" guarantee={n} burst={n}\n"),
            3 => format!("gpu-model \"g\" price-per-hour={n} nvlink-gen={n}\n"),
            4 => format!("node-class \"c\" {{\n  numa {n}\n  nics {n}\n}}\n"),
            5 => format!("node-class \"c\" {{\n  memory \"{n}GiB\"\n  nvlink-domain gpus=\"0-{n}\"\n}}\n"),
            6 => format!("nodes \"n[0-{n}]\" class=\"c\"\n"),
            _ => format!("training \"t\" team=\"a\" priority=\"b\" replicas={n} {{\n  gang gpus={n}\n  checkpoint every=\"{n}d\"\n}}\n"),
        };
        check_text(&text);
    }
}

/// One-off adversarial inputs: long strings, many nodes, long lines.
#[test]
fn large_inputs() {
    let mb = "x".repeat(1 << 20);
    for (i, text) in [
        format!("cluster \"{mb}\"\n"),
        format!("team \"{mb}\"\n"),
        format!("nodes \"{mb}\" class=\"c\"\n"),
        format!("nodes \"n[{mb}]\" class=\"c\"\n"),
        format!("node-class \"c\" {{\n  memory \"{mb}\"\n}}\n"),
        format!("{mb}\n"),
        format!("\"{mb}"),
        format!("// {mb}"),
        "a\n".repeat(20_000),
        "cluster \"x\"\n".repeat(10_000),
        format!("a {}\n", "1 ".repeat(50_000)),
        "{".repeat(1 << 20),
        "}".repeat(100_000),
        "a=\n".repeat(50_000),
        "\\\n".repeat(50_000),
        "(a)\n".repeat(50_000),
        "/*".repeat(100_000),
        "/-".repeat(100_000),
        "(".repeat(100_000),
        "\"".repeat(100_001),
        SEED.repeat(50),
    ]
    .iter()
    .enumerate()
    {
        let start = Instant::now();
        check_text(text);
        eprintln!("large input {i}: {:?}", start.elapsed());
    }
}

/// The long fuzzing run (docs/fuzzing.md), on demand: `GPUPLAN_FUZZ_CASES` inputs
/// (default 1,000,000) through the KDL reader and the validator, drawn from the same
/// strategies as the properties above (mutated seed, token soup, arbitrary text, deep
/// nesting, corrupted bytes), on every core, with a per-input time bound. Prints the
/// count, the time and the slowest input.
///
/// `cargo test --release --test it fuzz:: -- --ignored long_run_kdl --nocapture`
#[test]
#[ignore = "long fuzzing run, on demand (docs/fuzzing.md)"]
fn long_run_kdl() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{TestRng, TestRunner};
    let total: u64 = std::env::var("GPUPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let start = Instant::now();
    let results: Vec<(u64, Duration)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut seed = [0u8; 32];
                    seed[..8].copy_from_slice(&(0x6b646c_u64 + t).to_le_bytes());
                    let mut runner = TestRunner::new_with_rng(
                        Config::default(),
                        TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed),
                    );
                    let (mut n, mut slowest) = (0u64, Duration::ZERO);
                    let mine = total / threads + u64::from(t < total % threads);
                    let muts = prop::collection::vec(mutation(), 1..8);
                    let soup = prop::collection::vec(0..VOCAB.len(), 0..200);
                    let bytes = prop::collection::vec(any::<u8>(), 0..512);
                    for i in 0..mine {
                        let case = Instant::now();
                        match i % 8 {
                            0..=3 => {
                                let m = muts.new_tree(&mut runner).unwrap().current();
                                let mut text = SEED.to_string();
                                for x in &m {
                                    apply(&mut text, x);
                                }
                                check_text(&text);
                            }
                            4 | 5 => {
                                let t = soup.new_tree(&mut runner).unwrap().current();
                                let text: Vec<&str> = t.iter().map(|&k| VOCAB[k]).collect();
                                check_text(&text.join(" "));
                            }
                            6 => {
                                let text = any::<String>().new_tree(&mut runner).unwrap().current();
                                check_text(&text);
                            }
                            _ => {
                                let b = bytes.new_tree(&mut runner).unwrap().current();
                                let mut sources = SourceMap::new();
                                if let Ok(text) = std::str::from_utf8(&b) {
                                    sources.add("fuzz.kdl", text);
                                }
                                check_sources(&sources);
                            }
                        }
                        slowest = slowest.max(case.elapsed());
                        n += 1;
                    }
                    (n, slowest)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let n: u64 = results.iter().map(|r| r.0).sum();
    let slowest = results.iter().map(|r| r.1).max().unwrap_or_default();
    eprintln!(
        "long_run_kdl: {n} inputs on {threads} thread(s) in {:.1} s, slowest {:.1} ms, no panic, no hang",
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1e3
    );
    assert_eq!(n, total);
}
