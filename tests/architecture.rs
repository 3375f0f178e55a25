//! The layers of src/lib.rs's map, enforced (issue 15): no module imports from a layer
//! above its own, and no two files import each other (a parent `mod.rs` re-exporting
//! its children is not a cycle). Comments are ignored; `#[cfg(test)]` code too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules, lowest layer first (docs/architecture.md).
const LAYERS: &[&str] = &[
    "source",
    "diag",
    "codes",
    "names",
    "units",
    "suggest",
    "limits",
    "load",
    "catalog",
    "spec",
    "model",
    "validate",
    "solve",
    "placement",
    "realize",
    "render",
    "state",
    "plan",
    "pipeline",
    "apply",
    "backend",
    "saved",
    "discover",
    "drift",
    "generate",
    "import",
    "cli",
    "commands",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)]` part.
fn code(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `src/placement/build.rs` -> `["placement", "build"]`; `mod.rs` names its folder.
fn module_of(p: &Path) -> Vec<String> {
    let rel = p.strip_prefix("src").unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|x| x.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|x| x == "mod") {
        parts.pop();
    }
    parts
}

/// Paths like `crate::a::b` and `super::x` a file's code names.
fn referenced(code: &str, me: &[String]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && ident(bytes[i]) {
            i += 1;
        }
        if i == start {
            i += 1;
            continue;
        }
        let word = &code[start..i];
        let parts: Vec<&str> = word.split("::").filter(|s| !s.is_empty()).collect();
        if parts.first() == Some(&"crate") {
            out.insert(parts[1..].iter().map(|s| s.to_string()).collect());
        } else if parts.first() == Some(&"super") {
            // `super` is the parent module (a mod.rs's module is its folder).
            let mut base: Vec<String> = me.to_vec();
            let ups = parts.iter().take_while(|p| **p == "super").count();
            for _ in 0..ups {
                base.pop();
            }
            base.extend(parts[ups..].iter().map(|s| s.to_string()));
            out.insert(base);
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut all = Vec::new();
    files(Path::new("src"), &mut all);
    let mut bad = Vec::new();
    for p in &all {
        let me = module_of(p);
        let Some(top) = me.first() else { continue };
        let Some(&mine) = rank.get(top.as_str()) else {
            continue;
        };
        for r in referenced(&code(p), &me) {
            if let Some(&theirs) = r.first().and_then(|t| rank.get(t.as_str())) {
                if theirs > mine {
                    bad.push(format!("{}: uses {}", p.display(), r.join("::")));
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(
        bad.is_empty(),
        "imports from a layer above:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other() {
    let mut all = Vec::new();
    files(Path::new("src"), &mut all);
    let modules: BTreeMap<Vec<String>, &PathBuf> = all.iter().map(|p| (module_of(p), p)).collect();
    // The file a path names: its longest module prefix.
    let file_of = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| modules.contains_key(m))
    };
    let mut edges: BTreeSet<(Vec<String>, Vec<String>)> = BTreeSet::new();
    for p in &all {
        let me = module_of(p);
        for r in referenced(&code(p), &me) {
            if let Some(f) = file_of(&r) {
                if f != me {
                    edges.insert((me.clone(), f));
                }
            }
        }
    }
    // The scan sees real imports (the test can fail): a known one.
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert!(edges.contains(&(m("placement::build"), m("placement::accounting"))));
    assert!(edges.contains(&(m("pipeline"), m("solve"))));
    let parent = |a: &[String], b: &[String]| b.len() == a.len() + 1 && b.starts_with(a);
    let cycles: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .filter(|(a, b)| !parent(a, b) && !parent(b, a))
        .map(|(a, b)| format!("{} <-> {}", a.join("::"), b.join("::")))
        .collect();
    assert!(
        cycles.is_empty(),
        "files importing each other:\n{}",
        cycles.join("\n")
    );
}

/// The realizability checker shares nothing with the renderers (issue 29): not their
/// code (the layers above keep `render` out) and not their label constants either, so a
/// renderer's typo in a key is caught rather than copied.
#[test]
fn realize_does_not_use_the_renderers_names() {
    let mut all = Vec::new();
    files(Path::new("src/realize"), &mut all);
    assert!(!all.is_empty());
    let bad: Vec<String> = all
        .iter()
        .filter(|p| {
            let c = code(p);
            c.contains("names::") || c.contains("render::")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(bad.is_empty(), "uses crate::names or render: {bad:?}");
}
