//! Mangled `nvidia-smi` outputs through `import nvidia-smi` (issue 30): every format it
//! reads (`-q`, `-q -x`, `topo -m`, `mig -lgip`, `mig -lgi`, `mig -lci`), truncated, with lines and
//! keys duplicated, hostile values and huge numbers put in. Each case ends with an
//! output or an error with a code, never a panic; the output stays bounded, the import
//! report balances, and an output written validates.
//!
//! Fixed seed in CI (`tests/it/common`); `PROPTEST_CASES=N GPUPLAN_PROPTEST_SEED=random
//! cargo test --release --test it nvidia_smi_props::` runs a longer random sweep.

use crate::common;

use gpuplan::discover::Naming;
use gpuplan::import::nvidia_smi as smi;
use gpuplan::import::nvidia_smi::inventory;
use gpuplan::source::SourceMap;
use proptest::prelude::*;

/// One published input of each kind (sources in their folders' SOURCES.md).
const INPUTS: &[&str] = &[
    "tests/fixtures/nvidia-smi/q/q_H100NVLx2__thamada-gls.txt",
    "tests/fixtures/nvidia-smi/q/q_GH200__thamada-gls.txt",
    "tests/fixtures/discover/constructed/q_x_2x_H100-80GB_MIG.xml",
    "tests/fixtures/discover/topo/02_HGX_H100_SXM_8gpu_NV18__NVIDIA-nccl-issue1264.txt",
    "tests/fixtures/discover/nvidia-smi/mig_lgip_H100NVL_94GB__NVIDIA-gpu-operator-pr903.txt",
    "tests/fixtures/nvidia-smi/mig/lgi_A100-80GB_2gpu__NVIDIA-DCGM-issue138.txt",
];

/// A `mig -lci` table (constructed in the driver's layout: no published one was found).
const LCI: &str = "+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement  |
|       Instance                       ID        ID       Start:Size |
|         ID                                                         |
|====================================================================|
|   0      2       MIG 3g.40gb          2         0          0:3     |
+--------------------------------------------------------------------+
|   1      1       MIG 3g.40gb          2         0          0:3     |
+--------------------------------------------------------------------+
";

/// Values that break readers.
const HOSTILE: &[&str] = &[
    "",
    "N/A",
    "-1",
    "0",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999999 MiB",
    "1e308",
    "0x",
    "0xFFFFFFFFFFFFFFFFFF",
    "Enabled Disabled",
    "\"}\n} node \"x",
    "// */ /*",
    "a\u{0}b",
    "../../etc/passwd",
    "GPU 00000000:18:00.0",
    "ÿÿÿÿ",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Cut the text at a byte (moved back to a character boundary).
    Truncate(usize),
    /// Repeat the n-th line right after itself (a duplicated key or row).
    DuplicateLine(usize),
    /// Repeat the lines from the n-th on (duplicated blocks and rows).
    DuplicateTail(usize),
    /// Replace the value of the n-th `key : value` line (or the n-th line's last word).
    Value(usize, usize),
    /// Put a huge number in place of the n-th number of the text.
    Huge(usize, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::DuplicateTail),
        (any::<usize>(), 0..HOSTILE.len()).prop_map(|(a, b)| Mutation::Value(a, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Huge(a, b)),
    ]
}

fn floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let pick = |n: usize| n % lines.len().max(1);
    match *m {
        Mutation::Truncate(at) => text[..floor(text, at % (text.len() + 1))].to_string(),
        _ if lines.is_empty() => text.to_string(),
        Mutation::DuplicateLine(n) => {
            let i = pick(n);
            let mut v = lines.clone();
            v.insert(i, lines[i]);
            v.concat()
        }
        Mutation::DuplicateTail(n) => {
            let i = pick(n);
            format!("{}{}", text, lines[i..].concat())
        }
        Mutation::Value(n, h) => {
            let i = pick(n);
            let l = lines[i];
            let new = match l.find(" : ") {
                Some(c) => format!("{} : {}\n", &l[..c], HOSTILE[h]),
                None => match l.trim_end().rfind(char::is_whitespace) {
                    Some(c) => format!("{} {}\n", &l[..c], HOSTILE[h]),
                    None => format!("{}\n", HOSTILE[h]),
                },
            };
            let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            v[i] = new;
            v.concat()
        }
        Mutation::Huge(n, digits) => {
            let starts: Vec<usize> = text
                .char_indices()
                .filter(|(i, c)| {
                    c.is_ascii_digit() && (*i == 0 || !text.as_bytes()[i - 1].is_ascii_digit())
                })
                .map(|(i, _)| i)
                .collect();
            if starts.is_empty() {
                return text.to_string();
            }
            let at = starts[n % starts.len()];
            let end = at + text[at..].bytes().take_while(u8::is_ascii_digit).count();
            let huge = "9".repeat(10 + usize::from(digits) % 40);
            format!("{}{huge}{}", &text[..at], &text[end..])
        }
    }
}

/// The import of `files` (texts): no panic (a panic fails the test), a code on every
/// diagnostic, an error or an output, a balanced report, a bounded and valid output.
fn check(files: &[String]) {
    let mut sources = SourceMap::new();
    let ids: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, t)| sources.add(format!("f{i}.txt"), t.clone()))
        .collect();
    let naming = Naming {
        node: "node-01".into(),
        class: None,
        model: None,
    };
    let o = smi::import(&sources, &ids, &naming);
    for d in &o.diagnostics {
        assert!(d.code.starts_with("GP") && d.code.len() == 5, "{d:?}");
    }
    let failed = o.diagnostics.iter().any(|d| d.is_error());
    let (n, g) = o.report.unaccounted();
    assert_eq!((n, g), (0, 0), "unbalanced report: {:?}", o.report);
    let input: usize = files.iter().map(String::len).sum();
    if let (false, Some(inv)) = (failed, &o.inventory) {
        assert!(inv.gpus.len() <= 1024);
        let text = inventory::render(inv, "mangled");
        assert!(
            text.len() <= 64 * input + 65536,
            "output of {} bytes",
            text.len()
        );
        let mut vs = SourceMap::new();
        vs.add("out.kdl", text.clone());
        let outcome = gpuplan::validate::validate(&vs);
        assert!(
            outcome.diagnostics.iter().all(|d| !d.is_error()),
            "an output written does not validate: {:?}\n{text}",
            outcome.diagnostics
        );
    } else {
        assert!(failed || o.lgip.is_some(), "neither an error nor an output");
    }
}

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap()
}

proptest! {
    #![proptest_config(common::proptest_config(64))]

    /// Each kind alone, mangled.
    #[test]
    fn one_mangled_output(which in 0..=INPUTS.len(), muts in prop::collection::vec(mutation(), 1..4)) {
        let mut text = INPUTS.get(which).map_or_else(|| LCI.to_string(), |p| read(p));
        for m in &muts {
            text = apply(&text, m);
        }
        check(&[text]);
    }

    /// An 8-GPU report with the mangled topology matrix of the same machine.
    #[test]
    fn mangled_companion(muts in prop::collection::vec(mutation(), 1..3)) {
        let mut text = read(INPUTS[3]);
        for m in &muts {
            text = apply(&text, m);
        }
        check(&[read("tests/fixtures/nvidia-smi/q/q_H100SXMx8__thamada-gls.txt"), text]);
    }
}

/// Every prefix of a small report (at line ends): an output or a code, never a panic.
#[test]
fn every_line_prefix_of_a_report() {
    let text = read(INPUTS[1]);
    let mut end = 0;
    for l in text.split_inclusive('\n') {
        end += l.len();
        check(&[text[..end].to_string()]);
    }
}
