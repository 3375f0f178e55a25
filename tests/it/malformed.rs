//! The malformed corpus (`tests/malformed/`): every file is rejected with coded, spanned
//! diagnostics, by the library and by the binary, and nothing panics.

use crate::common::gpuplan;
use gpuplan::diag::{Diagnostic, Report};
use gpuplan::load::load_paths;
use gpuplan::validate::validate;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed")
}

/// The expected code of each file, from the README table.
fn expected_codes() -> BTreeMap<String, String> {
    let readme = std::fs::read_to_string(corpus_dir().join("README.md")).unwrap();
    readme
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let file = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            let code = cells.get(2)?;
            code.starts_with("GP")
                .then(|| (file.to_string(), code.to_string()))
        })
        .collect()
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

/// Every code is checked: the semantic rules exist now.
fn strict() -> bool {
    true
}

/// Semantic codes are raised by rules over the model; the parse-level ones always exist.
fn parse_level(code: &str) -> bool {
    matches!(
        code,
        "GP000" | "GP001" | "GP002" | "GP003" | "GP004" | "GP005"
    )
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn corpus_is_large_enough_and_listed() {
    let files = corpus_files();
    let expected = expected_codes();
    assert!(files.len() >= 45, "only {} corpus files", files.len());
    for f in &files {
        assert!(
            expected.contains_key(&name(f)),
            "{} has no row in tests/malformed/README.md",
            name(f)
        );
    }
    for listed in expected.keys() {
        assert!(
            files.iter().any(|f| &name(f) == listed),
            "README lists {listed}, which does not exist"
        );
    }
}

#[test]
fn every_file_yields_coded_spanned_errors() {
    let expected = expected_codes();
    let mut failures = Vec::new();
    for path in corpus_files() {
        let file = name(&path);
        let want = &expected[&file];
        let checked = parse_level(want) || strict();
        let (sources, load_diags) = load_paths(std::slice::from_ref(&path));
        let outcome = validate(&sources);
        let mut diags: Vec<Diagnostic> = load_diags;
        diags.extend(outcome.diagnostics);

        // Rendering never panics.
        let report = Report::new(&sources, &diags);
        let _ = report.human(false);
        let _ = report.human(true);
        let json = serde_json::to_string(&report.json_items()).unwrap();
        assert!(json.starts_with('['));

        if checked && !diags.iter().any(Diagnostic::is_error) {
            failures.push(format!("{file}: no error diagnostic"));
        }
        for d in &diags {
            if !d.code.starts_with("GP") || d.code.len() != 5 {
                failures.push(format!("{file}: bad code {:?}", d.code));
            }
            match d.span {
                None if d.code == "GP000" => {}
                None => failures.push(format!("{file}: {} has no span: {}", d.code, d.message)),
                Some(s) => {
                    let Some(src) = sources.get(s.file) else {
                        failures.push(format!("{file}: {} points at an unknown file", d.code));
                        continue;
                    };
                    let text = &src.text;
                    let end = s.offset.checked_add(s.len);
                    let inside = end.is_some_and(|e| {
                        e <= text.len()
                            && text.is_char_boundary(s.offset)
                            && text.is_char_boundary(e)
                    });
                    if !inside {
                        failures.push(format!(
                            "{file}: {} span {}+{} outside text of {} bytes",
                            d.code,
                            s.offset,
                            s.len,
                            text.len()
                        ));
                    }
                }
            }
        }
        if sources.files().is_empty() && !diags.iter().all(|d| d.code == "GP000") {
            failures.push(format!(
                "{file}: unreadable file but codes other than GP000"
            ));
        }
        if checked && !diags.iter().any(|d| d.code == want) {
            let got: Vec<&str> = diags.iter().map(|d| d.code).collect();
            failures.push(format!("{file}: expected {want}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn binary_exits_1_with_json_on_every_file() {
    let expected = expected_codes();
    let mut failures = Vec::new();
    for path in corpus_files() {
        let file = name(&path);
        let checked = parse_level(&expected[&file]) || strict();
        let human = gpuplan(&["validate".as_ref(), path.as_os_str()]);
        let code = human.status.code();
        if code == Some(101) || code.is_none() {
            failures.push(format!(
                "{file}: crashed ({code:?}): {}",
                String::from_utf8_lossy(&human.stderr)
            ));
        } else if checked && code != Some(1) {
            failures.push(format!("{file}: exit {code:?}, expected 1"));
        }
        let json = gpuplan(&[
            "validate".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            path.as_os_str(),
        ]);
        if json.status.code() != code {
            failures.push(format!(
                "{file}: --format json exit {:?} differs from {code:?}",
                json.status.code()
            ));
        }
        match serde_json::from_slice::<serde_json::Value>(&json.stdout) {
            Ok(v) => {
                if checked && v["valid"] != serde_json::Value::Bool(false) {
                    failures.push(format!("{file}: JSON says valid"));
                }
            }
            Err(e) => failures.push(format!("{file}: JSON does not parse: {e}")),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Edge cases of the input paths themselves.
#[test]
fn path_edge_cases() {
    let tmp = std::env::temp_dir().join(format!("gpuplan-edge-{}", std::process::id()));
    let empty_dir = tmp.join("empty");
    std::fs::create_dir_all(&empty_dir).unwrap();
    std::fs::write(empty_dir.join("notes.txt"), "not kdl").unwrap();
    let empty_file = tmp.join("empty.kdl");
    std::fs::write(&empty_file, "").unwrap();
    let missing = tmp.join("does-not-exist.kdl");

    // An empty file: no panic, whatever the verdict.
    let out = gpuplan(&["validate".as_ref(), empty_file.as_os_str()]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let (sources, diags) = load_paths(std::slice::from_ref(&empty_file));
    assert!(diags.is_empty());
    let outcome = validate(&sources);
    let _ = Report::new(&sources, &outcome.diagnostics).human(false);

    // A folder without `*.kdl` files, and a missing path: GP000, exit 1.
    for p in [&empty_dir, &missing] {
        let (sources, diags) = load_paths(std::slice::from_ref(p));
        assert!(sources.files().is_empty());
        assert!(
            diags.iter().any(|d| d.code == "GP000" && d.is_error()),
            "{diags:?}"
        );
        let out = gpuplan(&["validate".as_ref(), p.as_os_str()]);
        assert_eq!(out.status.code(), Some(1), "{}: {out:?}", p.display());
        let json = gpuplan(&[
            "validate".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            p.as_os_str(),
        ]);
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(v["diagnostics"][0]["code"], "GP000");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
