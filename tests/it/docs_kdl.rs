//! Documentation and examples stay in step with the language:
//!
//! * every ```kdl block in `docs/**/*.md` and `README.md` decodes with no GP001-GP005;
//! * every `.kdl` file under `examples/` decodes with no GP001-GP005;
//! * every node of `language::NODES` has a `### \`<id>\`` section in `docs/language.md`
//!   that names each of its arguments and properties.
//!
//! Full validation of the examples (catalog models, semantic rules) is not checked here.

use gpuplan::diag::Diagnostics;
use gpuplan::source::SourceMap;
use gpuplan::spec::{self, language};
use std::path::{Path, PathBuf};

const LANGUAGE_CODES: &[&str] = &["GP001", "GP002", "GP003", "GP004", "GP005"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Decodes `text` and returns the language-level problems as (line, column, text).
fn language_problems(name: &str, text: &str) -> Vec<(usize, usize, String)> {
    let mut sources = SourceMap::new();
    let id = sources.add(name.to_string(), text.to_string());
    let mut diags = Diagnostics::new();
    let _ = spec::parse_all(&sources, &mut diags);
    let file = sources.get(id).unwrap().clone();
    diags
        .iter()
        .filter(|d| LANGUAGE_CODES.contains(&d.code))
        .map(|d| {
            let (l, c) = d.span.map(|s| file.line_col(s.offset)).unwrap_or((1, 1));
            (l, c, format!("{}: {}", d.code, d.message))
        })
        .collect()
}

/// The ```kdl fenced blocks of a Markdown text: (line of the opening fence, body).
fn kdl_blocks(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, String)> = None; // (line, fence, body)
    for (i, line) in md.lines().enumerate() {
        let t = line.trim_start();
        match &mut open {
            None => {
                let fence_len = t.chars().take_while(|c| *c == '`').count();
                if fence_len >= 3 {
                    let info = t[fence_len..].trim();
                    let lang = info.split([' ', ',', '{']).next().unwrap_or("");
                    let fence = "`".repeat(fence_len);
                    if lang == "kdl" {
                        open = Some((i + 1, fence, String::new()));
                    } else {
                        // A non-KDL block: skip to its end.
                        open = Some((0, fence, String::new()));
                    }
                }
            }
            Some((start, fence, body)) => {
                if t.starts_with(fence.as_str()) && t.trim_start_matches('`').trim().is_empty() {
                    if *start > 0 {
                        out.push((*start, std::mem::take(body)));
                    }
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

#[test]
fn fenced_kdl_blocks_are_valid_language() {
    let mut mds = Vec::new();
    files_under(&root().join("docs"), "md", &mut mds);
    let readme = root().join("README.md");
    if readme.is_file() {
        mds.push(readme);
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for md in &mds {
        let text = std::fs::read_to_string(md).unwrap();
        for (line, block) in kdl_blocks(&text) {
            checked += 1;
            let name = format!("{}:{line}", rel(md));
            for (l, c, p) in language_problems(&name, &block) {
                // Block line 1 is the line after the opening fence.
                failures.push(format!(
                    "{}:{}:{c}: {p} (in the ```kdl block opened at line {line})",
                    rel(md),
                    line + l
                ));
            }
        }
    }
    assert!(checked > 0, "no ```kdl blocks found under docs/");
    assert!(
        failures.is_empty(),
        "{} problem(s) in documentation KDL blocks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn examples_are_valid_language() {
    let mut kdls = Vec::new();
    files_under(&root().join("examples"), "kdl", &mut kdls);
    assert!(!kdls.is_empty(), "no examples found");
    let mut failures = Vec::new();
    for f in &kdls {
        let text = std::fs::read_to_string(f).unwrap();
        for (l, c, p) in language_problems(&rel(f), &text) {
            failures.push(format!("{}:{l}:{c}: {p}", rel(f)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s) in examples:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_example_folder_has_kdl_files() {
    let dir = root().join("examples");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for f in &folders {
        let mut kdls = Vec::new();
        files_under(f, "kdl", &mut kdls);
        assert!(!kdls.is_empty(), "{} has no .kdl files", rel(f));
    }
    for name in [
        "small-lab",
        "superpod-h100",
        "mixed-inference",
        "gb200-nvl72",
    ] {
        assert!(dir.join(name).is_dir(), "examples/{name} is missing");
    }
}

/// The sections of `docs/language.md` keyed by node id: the text from a
/// ``### `<id>` `` heading to the next heading of level 1-3.
fn language_sections(md: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut in_fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        let is_heading = !in_fence
            && (line.starts_with("# ") || line.starts_with("## ") || line.starts_with("### "));
        if is_heading {
            if let Some(c) = current.take() {
                out.push(c);
            }
            if let Some(id) = line.strip_prefix("### `").and_then(|r| r.strip_suffix('`')) {
                current = Some((id.to_string(), String::new()));
            }
            continue;
        }
        if let Some((_, body)) = &mut current {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some(c) = current.take() {
        out.push(c);
    }
    out
}

#[test]
fn language_reference_covers_every_node() {
    let md = std::fs::read_to_string(root().join("docs/language.md")).unwrap();
    let sections = language_sections(&md);
    let mut missing = Vec::new();
    for n in language::NODES {
        let Some((_, body)) = sections.iter().find(|(id, _)| id == n.id) else {
            missing.push(format!("no section \"### `{}`\"", n.id));
            continue;
        };
        for name in n
            .args
            .iter()
            .map(|a| a.name)
            .chain(n.props.iter().map(|p| p.name))
        {
            if !body.contains(&format!("`{name}`")) {
                missing.push(format!("section `{}` does not mention `{name}`", n.id));
            }
        }
        if !body.contains("```kdl") {
            missing.push(format!("section `{}` has no ```kdl example", n.id));
        }
    }
    for (id, _) in &sections {
        if language::def(id).is_none() {
            missing.push(format!("section `{id}` documents no node of the language"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/language.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn fence_scanner_finds_blocks() {
    let md = "x\n```kdl\na 1\n```\n```sh\nnot kdl\n```\n````kdl\nb\n````\n";
    let b = kdl_blocks(md);
    assert_eq!(b, vec![(2, "a 1\n".to_string()), (8, "b\n".to_string())]);
}
