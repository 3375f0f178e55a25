//! One registry of diagnostic codes (issue 15): every `GPxxx` the source uses is
//! documented, either as a validation rule (`validate::rules::ALL`) or in
//! `gpuplan::codes::ALL`; every registered code is used; no code has two meanings
//! (each is registered once); docs/codes.md is generated from the registry
//! (`GPUPLAN_UPDATE=1 cargo test --test it codes::` regenerates it).

use gpuplan::codes;
use gpuplan::validate::rules;
use std::collections::BTreeSet;
use std::path::Path;

/// Every `"GPxxx"` string literal under `src/`.
fn used_in_src() -> BTreeSet<String> {
    fn walk(dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let b = text.as_bytes();
                for i in 0..b.len().saturating_sub(6) {
                    if b[i] == b'"'
                        && &b[i + 1..i + 3] == b"GP"
                        && b[i + 3..i + 6].iter().all(u8::is_ascii_digit)
                        && b.get(i + 6) == Some(&b'"')
                    {
                        out.insert(text[i + 1..i + 6].to_string());
                    }
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for dir in crate::architecture::SOURCES {
        walk(Path::new(dir), &mut out);
    }
    out
}

fn registered() -> Vec<&'static str> {
    rules::ALL
        .iter()
        .map(|r| r.code)
        .chain(codes::ALL.iter().map(|c| c.code))
        .collect()
}

#[test]
fn every_code_in_src_is_registered_once_and_used() {
    let all = registered();
    let set: BTreeSet<&str> = all.iter().copied().collect();
    assert_eq!(set.len(), all.len(), "a code is registered twice: {all:?}");
    let used = used_in_src();
    let undocumented: Vec<&String> = used.iter().filter(|c| !set.contains(c.as_str())).collect();
    assert!(
        undocumented.is_empty(),
        "codes used but not registered: {undocumented:?}"
    );
    let unused: Vec<&&str> = all.iter().filter(|c| !used.contains(**c)).collect();
    assert!(
        unused.is_empty(),
        "codes registered but never used: {unused:?}"
    );
}

#[test]
fn the_test_can_fail() {
    // The scanner finds what it must: a code known to be used, and no false matches.
    let used = used_in_src();
    assert!(used.contains("GP901") && used.contains("GP013") && used.contains("GP700"));
    assert!(used.iter().all(|c| c.len() == 5 && c.starts_with("GP")));
}

fn codes_markdown() -> String {
    let mut s = String::from(
        "# Diagnostic codes\n\n<!-- generated from crates/core/src/codes.rs by tests/it/codes.rs; GPUPLAN_UPDATE=1 cargo test --test it codes:: regenerates it -->\n\nEvery diagnostic gpuplan prints has a code; `gpuplan explain CODE` prints its entry.\nThe validation rules (`GP0xx`) have their own page: [rules.md](rules.md).\n\n| code | area | what | what to do |\n|---|---|---|---|\n",
    );
    for r in rules::ALL {
        s.push_str(&format!(
            "| [{0}](rules.md#{1}) | validate | {2} | see rules.md |\n",
            r.code,
            r.code.to_lowercase(),
            r.summary
        ));
    }
    for c in codes::ALL {
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            c.code, c.area, c.summary, c.help
        ));
    }
    s
}

#[test]
fn docs_codes_md_is_current() {
    let path = Path::new("docs/codes.md");
    let want = codes_markdown();
    if std::env::var_os("GPUPLAN_UPDATE").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/codes.md is out of date: run GPUPLAN_UPDATE=1 cargo test --test it codes::"
    );
}
