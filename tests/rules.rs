//! Every validation rule has a failing fixture in `tests/rules/<CODE>.kdl` (or a folder)
//! that raises its code; the rendered report is snapshot-tested. The rule reference
//! `docs/rules.md` is generated from the rule registry (`GPUPLAN_UPDATE=1` rewrites it).

use gpuplan::diag::Report;
use gpuplan::validate::{self, rules};
use std::path::{Path, PathBuf};

fn fixture(code: &str) -> PathBuf {
    let file = PathBuf::from(format!("tests/rules/{code}.kdl"));
    if file.exists() {
        file
    } else {
        PathBuf::from(format!("tests/rules/{code}"))
    }
}

#[test]
fn every_rule_has_a_failing_fixture_with_a_snapshot() {
    for rule in rules::ALL {
        let path = fixture(rule.code);
        assert!(
            path.exists(),
            "rule {} has no fixture at {}",
            rule.code,
            path.display()
        );
        let (sources, mut diags) = gpuplan::load::load_paths(std::slice::from_ref(&path));
        let outcome = validate::validate(&sources);
        diags.extend(outcome.diagnostics);
        assert!(
            diags.iter().any(|d| d.code == rule.code),
            "fixture {} does not raise {}; got {:?}",
            path.display(),
            rule.code,
            diags.iter().map(|d| d.code).collect::<Vec<_>>()
        );
        for d in &diags {
            assert!(
                d.span.is_some() || d.code == "GP000",
                "{} in {} has no span: {}",
                d.code,
                path.display(),
                d.message
            );
            assert!(
                d.help.is_some(),
                "{} in {} has no hint: {}",
                d.code,
                path.display(),
                d.message
            );
        }
        let report = Report::new(&sources, &diags).human(false);
        insta::assert_snapshot!(rule.code, report);
    }
}

#[test]
fn rule_docs_are_complete_and_codes_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for r in rules::ALL {
        assert!(seen.insert(r.code), "duplicate code {}", r.code);
        for part in ["**What.**", "**Why.**", "**Example.**", "**Fix.**"] {
            assert!(r.docs.contains(part), "{} docs lack {part}", r.code);
        }
    }
    assert!(rules::ALL.len() >= 20);
}

fn rules_markdown() -> String {
    let mut s = String::from(
        "# Validation rules\n\n<!-- generated from src/validate/rules/ by tests/rules.rs; GPUPLAN_UPDATE=1 cargo test --test rules regenerates it -->\n\n`gpuplan explain CODE` prints one rule. Warnings do not make `validate` fail.\n\n| code | name | severity | summary |\n|---|---|---|---|\n",
    );
    for r in rules::ALL {
        s.push_str(&format!(
            "| [{0}](#{1}) | `{2}` | {3:?} | {4} |\n",
            r.code,
            r.code.to_lowercase(),
            r.name,
            r.severity,
            r.summary
        ));
    }
    for r in rules::ALL {
        s.push_str(&format!(
            "\n## {}\n\n`{}` ({:?})\n\n{}\n",
            r.code,
            r.name,
            r.severity,
            r.docs.trim()
        ));
    }
    s
}

#[test]
fn docs_rules_md_is_current() {
    let path = Path::new("docs/rules.md");
    let want = rules_markdown();
    if std::env::var_os("GPUPLAN_UPDATE").is_some() {
        std::fs::create_dir_all("docs").unwrap();
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/rules.md is out of date: run GPUPLAN_UPDATE=1 cargo test --test rules"
    );
}
