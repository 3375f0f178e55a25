//! Issue 30, case 5: what every importer writes is a fixed point of `gpuplan fmt` (the
//! project's pre-commit hook runs `gpuplan fmt --check`) and validates, for every fixture
//! each importer has; an import that writes nothing says why with a code.
//!
//! Importers and fixtures: `nvidia-smi-topo` (tests/fixtures/discover/topo, the same
//! files as the shared fixtures' topo/, and the fake NVML machines' `topo -m`),
//! `nvidia-smi-xml` and `mig-lgip` (tests/fixtures/discover, tests/fixtures/nvidia-smi),
//! `k8s-nodes` (tests/fixtures/k8s), `slurm` (tests/fixtures/slurm), `openb`
//! (tests/fixtures/openb). `discover` writes through the same renderer as the
//! `nvidia-smi` importers; tests/it/discover_fake_nvml.rs checks its output too.

use crate::common::{Run, Scratch, codes, panicked};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir` (relative to the repository) whose names start with `start` and
/// end with `end`.
fn files(dir: &str, start: &str, end: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(start) && name.ends_with(end)
        })
        .collect();
    v.sort();
    v
}

/// The sub-folders of `dir` (relative to the repository).
fn folders(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// One import: its arguments (the output goes to stdout unless `out_dir`).
struct Case {
    name: String,
    args: Vec<String>,
    out_dir: bool,
}

fn case(kind: &str, input: &Path, extra: &[&str]) -> Case {
    let mut args = vec!["import".to_string(), kind.to_string()];
    args.push(input.to_string_lossy().into_owned());
    args.extend(extra.iter().map(|s| s.to_string()));
    Case {
        name: format!("{kind} {}", input.file_name().unwrap().to_string_lossy()),
        args,
        out_dir: false,
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let topo = files("tests/fixtures/discover/topo", "", ".txt")
        .into_iter()
        .chain(files("tests/fixtures/discover/fake-nvml", "", "-topo.txt"));
    for f in topo {
        // `topo -m` does not name the GPU model: with one and without.
        v.push(case("nvidia-smi-topo", &f, &["--model", "h100-sxm5-80gb"]));
        v.push(case("nvidia-smi-topo", &f, &[]));
    }
    let xml = files("tests/fixtures/discover/nvidia-smi", "", ".xml.txt")
        .into_iter()
        .chain(files("tests/fixtures/discover/constructed", "", ".xml"))
        .chain(files("tests/fixtures/discover/fake-nvml", "", ".xml"))
        .chain(files("tests/fixtures/nvidia-smi", "", ".xml.txt"));
    for f in xml {
        v.push(case("nvidia-smi-xml", &f, &[]));
    }
    let lgip = files("tests/fixtures/discover/nvidia-smi", "mig_lgip", ".txt")
        .into_iter()
        .chain(files("tests/fixtures/discover/fake-nvml", "", "-lgip.txt"))
        .chain(files("tests/fixtures/nvidia-smi", "mig_lgip", ".txt"));
    for f in lgip {
        v.push(case("mig-lgip", &f, &[]));
    }
    let k8s = files("tests/fixtures/k8s", "", ".json")
        .into_iter()
        .chain(files("tests/fixtures/k8s", "", ".yaml"));
    for f in k8s {
        v.push(case("k8s-nodes", &f, &[]));
    }
    for d in folders("tests/fixtures/slurm") {
        v.push(case("slurm", &d, &[]));
        v.push(case("slurm", &d, &["--partial"]));
    }
    let ob = root().join("tests/fixtures/openb");
    for per_pod in [false, true] {
        let mut args: Vec<String> = ["import", "openb", "--nodes"].map(String::from).to_vec();
        args.push(ob.join("nodes.csv").to_string_lossy().into_owned());
        args.push("--pods".into());
        args.push(ob.join("pods.csv").to_string_lossy().into_owned());
        args.extend(["-o".to_string(), "out".to_string()]);
        if per_pod {
            args.push("--per-pod".into());
        }
        v.push(Case {
            name: format!("openb per_pod={per_pod}"),
            args,
            out_dir: true,
        });
    }
    v
}

/// Not `fmt`-clean (the first lines that differ) or not valid, or `None`.
fn check_output(s: &Scratch, name: &str, r: &Run, out_dir: bool) -> Option<String> {
    let _ = std::fs::remove_dir_all(s.path("site"));
    let written: Vec<(String, String)> = if out_dir {
        files_in(&s.path("out"))
    } else {
        vec![("import.kdl".into(), r.1.clone())]
    };
    for (file, text) in &written {
        let mut sources = gpuplan::source::SourceMap::new();
        let id = sources.add(file.as_str(), text.as_str());
        match gpuplan::fmt::format(id, text) {
            Ok(f) if f == *text => {}
            Ok(f) => {
                return Some(format!(
                    "{name}: {file} is not fmt-clean:\n{}",
                    first_diff(text, &f)
                ));
            }
            Err(d) => return Some(format!("{name}: fmt refuses {file}: {:?}", d[0].message)),
        }
        s.write(&format!("site/{file}"), text);
    }
    let v = s.run(&["validate", "site"]);
    if v.0 != 0 && !said_why(r, &v) {
        return Some(format!("{name}: the output does not validate:\n{}", v.2));
    }
    None
}

/// An output that does not validate is allowed only when the importer said why: the
/// one case is a GPU model declared without memory (GP006 until the user fills it in),
/// which the importer flagged (GP742 Slurm, GP734 or GP733 Kubernetes).
fn said_why(import: &Run, validate: &Run) -> bool {
    let flagged = codes(import)
        .iter()
        .any(|c| c == "GP742" || c == "GP734" || c == "GP733");
    let refused = codes(validate);
    flagged && !refused.is_empty() && refused.iter().all(|c| c == "GP006")
}

fn files_in(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .map(|p| {
                    let text = std::fs::read_to_string(&p).unwrap();
                    (p.file_name().unwrap().to_string_lossy().into_owned(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn first_diff(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("  line {}:\n  written   {x:?}\n  formatted {y:?}", i + 1);
        }
    }
    format!(
        "  lengths differ: {} and {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

#[test]
fn issue30_every_import_is_fmt_clean_and_validates() {
    let s = Scratch::new("import-fmt-clean");
    let mut problems = Vec::new();
    let (mut written, mut refused) = (0, 0);
    for c in cases() {
        let _ = std::fs::remove_dir_all(s.path("out"));
        let r = s.run(&c.args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(!panicked(&r), "{}: panicked: {}", c.name, r.2);
        let wrote = if c.out_dir {
            s.path("out").is_dir()
        } else {
            !r.1.is_empty()
        };
        if !wrote {
            // Nothing written: the importer says why, with a code.
            refused += 1;
            if r.0 == 0 || codes(&r).is_empty() {
                problems.push(format!(
                    "{}: nothing written, no code (exit {}):\n{}",
                    c.name, r.0, r.2
                ));
            }
            continue;
        }
        written += 1;
        problems.extend(check_output(&s, &c.name, &r, c.out_dir));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    eprintln!("{written} imports wrote their output, {refused} wrote nothing (with a code)");
    assert!(
        written >= 30,
        "only {written} imports wrote something ({refused} refused)"
    );
}
