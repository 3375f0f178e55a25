//! Issue 30: mangled openb lists (`gpuplan import openb`) give a code, never a panic,
//! never an unbounded allocation. Inputs are the published rows of tests/fixtures/openb
//! (SOURCES.md there), cut, with rows and header keys repeated, hostile names and huge
//! numbers put in; a fixed seed (`tests/it/common`, `GPUPLAN_PROPTEST_SEED`).
//!
//! What is read either fails with a line and a message (the command's GP705) or
//! converts into files that `gpuplan fmt` accepts and that validate.

use crate::common;

use gpuplan::import::openb::{self, OpenbOptions};
use gpuplan::source::SourceMap;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

const NODES: &str = include_str!("../fixtures/openb/nodes.csv");
const PODS: &str = include_str!("../fixtures/openb/pods.csv");

/// Strings an attacker (or a broken export) puts where a name or number goes.
const HOSTILE: &[&str] = &[
    "",
    "\"",
    "a\"b",
    "x\ny",
    "x\u{2028}team \"evil\" guarantee=999",
    "}",
    "/* open",
    "// c",
    "/-",
    "\\",
    "-",
    "NODE-ÄÖ",
    "\u{202e}rtl",
    "#true",
    "a|b|a|A",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "-1",
    "1e30",
    "4294967296",
    "65",
    "0",
];

/// One change to a CSV text.
#[derive(Clone, Debug)]
enum Mangle {
    /// Cut at this fraction of the text.
    Cut(f64),
    /// Repeat data row `row` (modulo) `n` times.
    Repeat(usize, usize),
    /// Repeat header column `col` (modulo) at the end of the header.
    DuplicateKey(usize),
    /// Put `HOSTILE[h]` in field `col` of row `row` (modulo).
    Field(usize, usize, usize),
    /// A long name in field `col` of row `row`.
    Long(usize, usize, usize),
}

fn mangle() -> impl Strategy<Value = Mangle> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Mangle::Cut),
        (0..64usize, 1..40usize).prop_map(|(r, n)| Mangle::Repeat(r, n)),
        (0..16usize).prop_map(Mangle::DuplicateKey),
        (0..64usize, 0..16usize, 0..HOSTILE.len()).prop_map(|(r, c, h)| Mangle::Field(r, c, h)),
        (0..64usize, 0..16usize, 60..400usize).prop_map(|(r, c, n)| Mangle::Long(r, c, n)),
    ]
}

fn apply(text: &str, m: &Mangle) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // A list an earlier cut emptied, or left with its header only, has no row (or no
    // header) to mangle: it stays as it is.
    let rows = lines.len().saturating_sub(1);
    let needs_rows = !matches!(m, Mangle::Cut(_) | Mangle::DuplicateKey(_));
    if lines.is_empty() || (needs_rows && rows == 0) {
        return text.to_string();
    }
    match *m {
        Mangle::Cut(f) => {
            let mut at = (text.len() as f64 * f) as usize;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return text[..at].to_string();
        }
        Mangle::Repeat(r, n) => {
            let row = lines[1 + r % rows].clone();
            for _ in 0..n {
                lines.insert(1 + r % rows, row.clone());
            }
        }
        Mangle::DuplicateKey(c) => {
            let cols: Vec<String> = lines[0].split(',').map(String::from).collect();
            let key = cols[c % cols.len()].clone();
            lines[0].push(',');
            lines[0].push_str(&key);
        }
        Mangle::Field(r, c, h) => set_field(&mut lines, r, c, HOSTILE[h]),
        Mangle::Long(r, c, n) => set_field(&mut lines, r, c, &"g".repeat(n)),
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn set_field(lines: &mut [String], r: usize, c: usize, value: &str) {
    let rows = lines.len() - 1;
    let line = &mut lines[1 + r % rows];
    let mut fields: Vec<String> = line.split(',').map(String::from).collect();
    let n = fields.len();
    fields[c % n] = value.to_string();
    *line = fields.join(",");
}

/// One import, as the command runs it: `Err` is the GP705 it would print.
fn import(nodes: &str, pods: &str, per_pod: bool) -> Result<Vec<(String, String)>, String> {
    let ns = openb::parse_nodes(nodes).map_err(|(line, m)| format!("nodes line {line}: {m}"))?;
    let ps = openb::parse_pods(pods).map_err(|(line, m)| format!("pods line {line}: {m}"))?;
    let o = OpenbOptions {
        load: 1.0,
        seed: 7,
        aggregate: !per_pod,
        command: "gpuplan import openb --nodes n\u{2028}x.csv --pods p.csv".into(),
    };
    openb::convert(&ns, &ps, &o).map_err(|m| format!("sampling: {m}"))
}

/// The written files parse, are formatted by `fmt`, and validate.
fn check_written(files: &[(String, String)]) -> Result<(), String> {
    let mut sources = SourceMap::new();
    for (name, text) in files {
        let f = gpuplan::fmt::generated(text)
            .map_err(|d| format!("{name}: fmt refuses it: {:?}", d[0].message))?;
        sources.add(name.as_str(), f);
    }
    let outcome = gpuplan::validate::validate(&sources);
    let errors: Vec<String> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("does not validate: {errors:?}"))
    }
}

#[test]
fn issue30_mangled_openb_lists_give_a_code_never_a_panic() {
    let mut runner = TestRunner::new(common::proptest_config(256));
    let strategy = (
        prop::collection::vec(mangle(), 0..4),
        prop::collection::vec(mangle(), 0..4),
        any::<bool>(),
    );
    let result = runner.run(&strategy, |(mn, mp, per_pod)| {
        let nodes = mn.iter().fold(NODES.to_string(), |t, m| apply(&t, m));
        let pods = mp.iter().fold(PODS.to_string(), |t, m| apply(&t, m));
        match import(&nodes, &pods, per_pod) {
            Err(msg) => prop_assert!(!msg.is_empty()),
            Ok(files) => {
                let total: usize = files.iter().map(|(_, t)| t.len()).sum();
                prop_assert!(total < 8 << 20, "{total} bytes written");
                if let Err(e) = check_written(&files) {
                    return Err(TestCaseError::fail(format!(
                        "{e}\n--- nodes\n{nodes}\n--- pods\n{pods}"
                    )));
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The fixture itself imports, and the files validate.
#[test]
fn the_published_rows_import() {
    for per_pod in [false, true] {
        let files = import(NODES, PODS, per_pod).expect("the fixture imports");
        check_written(&files).unwrap();
    }
}

/// Tiny GPU shares on many GPUs: the sample would take millions of pods; a code instead
/// (the command's GP705), after at most `MAX_SAMPLED_PODS`.
#[test]
fn a_load_out_of_reach_is_refused_not_sampled_forever() {
    let mut nodes = String::from("sn,cpu_milli,memory_mib,gpu,model\n");
    for i in 0..8 {
        nodes.push_str(&format!("n-{i},64000,262144,64,T4\n"));
    }
    let pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1000,1024,1,1,\n";
    let err = import(&nodes, pods, false).expect_err("512,000 pods of 1/1000 GPU");
    assert!(err.contains("200000 sampled pods"), "{err}");
}

/// The lists' own mistakes that used to write a file that does not validate.
#[test]
fn duplicate_and_bad_node_names_are_refused() {
    let head = "sn,cpu_milli,memory_mib,gpu,model\n";
    for (rows, want) in [
        (
            "a,1000,1024,1,T4\na,1000,1024,1,T4\n",
            "line 3: node `a` is listed twice (first on line 2)",
        ),
        (
            "-a,1000,1024,1,T4\n",
            "line 2: node name `-a` is not a DNS label",
        ),
        (
            &*format!("{},1000,1024,1,T4\n", "g".repeat(64)),
            "line 2: node name",
        ),
        (
            "a,1000,1024,65,T4\n",
            "line 2: 65 GPUs on one node: at most 64",
        ),
    ] {
        let err = import(&format!("{head}{rows}"), PODS, false).expect_err(rows);
        assert!(err.contains(want), "{rows}: {err}");
    }
}

/// Through the command: a refused list is GP705 at its line, exit 1, nothing written.
#[test]
fn the_command_refuses_a_mangled_list_with_gp705() {
    let s = common::Scratch::new("openb-mangled");
    let dup = apply(NODES, &Mangle::Repeat(3, 1));
    s.write("nodes.csv", &dup);
    s.write("pods.csv", PODS);
    let r = s.run(&[
        "import",
        "openb",
        "--nodes",
        "nodes.csv",
        "--pods",
        "pods.csv",
        "-o",
        "out",
    ]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(!common::panicked(&r));
    assert_eq!(common::codes(&r), ["GP705"], "{}", r.2);
    assert!(r.2.contains("listed twice"), "{}", r.2);
    assert!(!s.path("out").exists());
}
