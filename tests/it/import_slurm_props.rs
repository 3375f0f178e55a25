//! Mangled Slurm sites (issue 30): every published fixture under tests/fixtures/slurm,
//! truncated, with keys repeated, hostile values and huge ranges spliced in, through the
//! importer. Property: a result or coded diagnostics (GP7xx, each with a message), never
//! a panic; what is written is in `gpuplan fmt`'s layout; hostlists stay within the
//! names budget (bounded memory). Fixed seed, so a failure reproduces.

use crate::common;
use gpuplan::import::slurm::{Files, Options, import};
use gpuplan::source::SourceMap;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::path::Path;

/// Hostile values and lines spliced into a file.
const HOSTILE: &[&str] = &[
    " Gres=gpu:h100:4294967295",
    " Gres=gpu:1g.10gb:999999999",
    " NodeName=n[0-4294967295]",
    "\nNodeName=a[0-99999],b[0-99999] Gres=gpu:l40s:8\n",
    " CPUs=18446744073709551615 Sockets=4096 CoresPerSocket=4096 ThreadsPerCore=4096",
    " RealMemory=18446744073709551615",
    " Sockets=0 CoresPerSocket=0 CPUs=8",
    " Boards=4096 SocketsPerBoard=4096 CoresPerSocket=4096 ThreadsPerCore=4096 Gres=",
    " Boards=4096 SocketsPerBoard=4096 CoresPerSocket=4096\nName=gpu File=/dev/nvidia0 CPUs=0-4095\n",
    " File=/dev/nvidia[0-4294967295]",
    " File=/dev/nvidia4294967295 Cores=0-4294967295",
    " CPUs=0-4294967295",
    "\nName=gpu Type=a100_3g.40gb MultipleFiles=/dev/nvidia0 Count=18446744073709551615\n",
    "\nSwitchName=s Switches=s\nSwitchName=t Nodes=ALL Switches=t\n",
    "\nInclude slurm.conf\n",
    "\nNodeSet=x Feature=\u{0}\nPartitionName=p Nodes=x,x,ALL,[\n",
    " Gres=gpu:\u{202e}evil:2 Type=\"\\\" NodeName=",
    "\nNodeName=DEFAULT Gres=gpu:gb200:4\n",
    " Features=a,b,c,,,",
    " \\\n",
    "[[[[[[[[[[",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Cut the file at this fraction of its length.
    Truncate(f64),
    /// Repeat the line at this fraction with every pair duplicated.
    Duplicate(f64),
    /// Insert a hostile value at this fraction.
    Hostile(f64, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        (0.0..1.0f64).prop_map(Mutation::Duplicate),
        (0.0..1.0f64, 0..HOSTILE.len()).prop_map(|(f, i)| Mutation::Hostile(f, i)),
    ]
}

fn at(text: &str, f: f64) -> usize {
    let mut i = ((text.len() as f64) * f) as usize;
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i.min(text.len())
}

fn apply(text: &str, m: &Mutation) -> String {
    match m {
        Mutation::Truncate(f) => text[..at(text, *f)].to_string(),
        Mutation::Duplicate(f) => {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return text.to_string();
            }
            let k = ((lines.len() as f64) * f) as usize % lines.len();
            let dup = format!("{} {}", lines[k], lines[k]);
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            out.insert(k, dup);
            out.join("\n")
        }
        Mutation::Hostile(f, i) => {
            let p = at(text, *f);
            format!("{}{}{}", &text[..p], HOSTILE[*i], &text[p..])
        }
    }
}

/// (slurm.conf with includes inlined, gres.conf, topology.conf) of each fixture.
fn fixtures() -> Vec<[String; 3]> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir("tests/fixtures/slurm")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("slurm.conf").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        let read = |f: &str| std::fs::read_to_string(Path::new(&d).join(f)).unwrap_or_default();
        let slurm = read("slurm.conf").replace("Include nodes.conf\n", &read("nodes.conf"));
        out.push([slurm, read("gres.conf"), read("topology.conf")]);
    }
    out
}

fn run(texts: &[String; 3]) {
    let mut sources = SourceMap::new();
    let files = Files {
        slurm: sources.add("slurm.conf", texts[0].clone()),
        includes: Vec::new(),
        gres: Some(sources.add("gres.conf", texts[1].clone())),
        topology: Some(sources.add("topology.conf", texts[2].clone())),
    };
    let (kdl, report, diags) = import(&sources, &files, &Options::default(), "props");
    for d in &diags {
        assert!(
            d.code.starts_with("GP7") && !d.message.is_empty(),
            "uncoded diagnostic {d:?}"
        );
    }
    if kdl.is_none() {
        assert!(
            diags.iter().any(|d| d.is_error()) || report.nodes.seen > 0,
            "no output and no reason: {diags:?}"
        );
    }
    assert!(report.nodes.seen <= gpuplan::limits::current().names);
}

#[test]
fn mangled_sites_give_codes_never_panics() {
    let sites = fixtures();
    assert!(sites.len() >= 5);
    // The project's seed and case count (GPUPLAN_PROPTEST_SEED, PROPTEST_CASES: a
    // random sweep on demand, docs/fuzzing.md); 400 cases in CI.
    let config = common::proptest_config(400);
    let cases = config.cases as usize;
    let mut runner = TestRunner::new(config);
    let muts = prop::collection::vec((0..3usize, mutation()), 1..5);
    for case in 0..cases {
        let site = &sites[case % sites.len()];
        let ms = muts.new_tree(&mut runner).unwrap().current();
        let mut texts = site.clone();
        for (file, m) in &ms {
            texts[*file] = apply(&texts[*file], m);
        }
        let r = std::panic::catch_unwind(|| run(&texts));
        assert!(r.is_ok(), "case {case}: {ms:?}\n{texts:?}");
    }
}

/// Every hostile value after the first NodeName line of every fixture, and small sites
/// built to reach arithmetic on CPU fields and device indices: never a panic.
#[test]
fn each_hostile_value_on_each_site() {
    let mut sites = fixtures();
    sites.push([
        "NodeName=z1 Sockets=0 CPUs=8 Gres=gpu:l40s:1\n".into(),
        String::new(),
        String::new(),
    ]);
    sites.push([
        "NodeName=z1 Boards=4096 SocketsPerBoard=4096 CoresPerSocket=4096 ThreadsPerCore=4096\n"
            .into(),
        "Name=gpu File=/dev/nvidia0 CPUs=0-4095\n".into(),
        String::new(),
    ]);
    for site in &sites {
        for h in HOSTILE {
            for file in 0..3 {
                let mut texts = site.clone();
                let t = &texts[file];
                let at = t.find('\n').unwrap_or(t.len());
                texts[file] = format!("{}{h}{}", &t[..at], &t[at..]);
                let r = std::panic::catch_unwind(|| run(&texts));
                assert!(
                    r.is_ok(),
                    "{h:?} in file {file} of {:?}",
                    site[0].lines().next()
                );
            }
        }
        let r = std::panic::catch_unwind(|| run(site));
        assert!(r.is_ok(), "{:?}", site[0].lines().next());
    }
}
