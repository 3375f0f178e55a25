//! The layers of src/lib.rs's map, enforced (issue 15): no module imports from a layer
//! above its own, every module has a layer, and the imports of files form no circle of any
//! length (issue 32): at every level of the module tree the sibling modules use each other
//! in one direction only (a file's use of `a::b::c` counts as a use of its sibling that
//! holds `c`); only a folder and its own files may point at each other (a `mod.rs`
//! re-exporting its children, a child using its parent's types). Comments are ignored;
//! `#[cfg(test)]` code too.

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
    "json",
    "par",
    "limits",
    "load",
    "catalog",
    "spec",
    "fmt",
    "model",
    "validate",
    "solve",
    "placement",
    "realize",
    "render",
    "state",
    "plan",
    "report",
    "pipeline",
    "apply",
    "backend",
    "saved",
    "discover",
    "generate",
    "import",
    "drift",
    "cli",
    "commands",
];

/// Every crate's source folder (the workspace, docs/architecture.md), lowest first.
pub const SOURCES: &[&str] = &[
    "crates/core/src",
    "crates/solve/src",
    "crates/render/src",
    "crates/io/src",
    "src",
];

/// Every `.rs` file of every crate.
fn all_sources() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for dir in SOURCES {
        files(Path::new(dir), &mut all);
    }
    all
}

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

/// `crates/solve/src/placement/build.rs` -> `["placement", "build"]`; `mod.rs` names its
/// folder (every crate re-exports the modules below it under their names).
fn module_of(p: &Path) -> Vec<String> {
    let rel = SOURCES.iter().find_map(|d| p.strip_prefix(d).ok()).unwrap();
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
    let all = all_sources();
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

/// Every top-level module of src/ has a layer (a new one cannot slip past the test).
#[test]
fn every_module_has_a_layer() {
    let all = all_sources();
    let tops: BTreeSet<String> = all
        .iter()
        .filter_map(|p| module_of(p).first().cloned())
        .filter(|t| t != "lib" && t != "main")
        .collect();
    let missing: Vec<&String> = tops
        .iter()
        .filter(|t| !LAYERS.contains(&t.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a layer in LAYERS: {missing:?}"
    );
}

/// The edges between sibling modules: a file's use of another file, lifted to the two
/// siblings under their deepest common folder; uses between a folder and its own files
/// are left out.
fn sibling_edges(
    edges: &BTreeSet<(Vec<String>, Vec<String>)>,
) -> BTreeSet<(Vec<String>, Vec<String>)> {
    let mut out = BTreeSet::new();
    for (a, b) in edges {
        let k = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if k == a.len() || k == b.len() {
            continue;
        }
        out.insert((a[..=k].to_vec(), b[..=k].to_vec()));
    }
    out
}

/// The circles of a directed graph: its strongly connected components of two or more
/// nodes (Tarjan's algorithm, iterative), each sorted.
fn circles<T: Ord + Clone>(edges: &BTreeSet<(T, T)>) -> Vec<Vec<T>> {
    let mut adj: BTreeMap<&T, Vec<&T>> = BTreeMap::new();
    for (a, b) in edges {
        adj.entry(a).or_default().push(b);
        adj.entry(b).or_default();
    }
    let nodes: Vec<&T> = adj.keys().copied().collect();
    let at: BTreeMap<&T, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| adj[n].iter().map(|m| at[m]).collect())
        .collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, next successor to visit)
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on[root] = true;
        while let Some(top) = work.last_mut() {
            let v = top.0;
            if let Some(&w) = succ[v].get(top.1) {
                top.1 += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    out.push(comp);
                }
            }
        }
    }
    out.sort();
    out
}

/// The circle finder itself finds circles of any length, and nothing else.
#[test]
fn circles_of_any_length_are_found() {
    let e = |v: &[(u8, u8)]| v.iter().copied().collect::<BTreeSet<_>>();
    assert!(circles(&e(&[(1, 2), (2, 3), (1, 3)])).is_empty());
    assert_eq!(circles(&e(&[(1, 2), (2, 1)])), vec![vec![1, 2]]);
    assert_eq!(
        circles(&e(&[(1, 2), (2, 3), (3, 1), (3, 4)])),
        vec![vec![1, 2, 3]]
    );
    assert_eq!(
        circles(&e(&[
            (1, 2),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 1),
            (6, 7),
            (7, 6)
        ])),
        vec![vec![1, 2, 3, 4, 5], vec![6, 7]]
    );
    // render/fabric -> render/facts/mod -> render/facts/classes -> render/fabric, the
    // circle issue 32 found: at the level of `render`, fabric <-> facts.
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let files = [
        (m("render::fabric"), m("render::facts")),
        (m("render::facts"), m("render::facts::classes")),
        (m("render::facts::classes"), m("render::fabric")),
    ];
    let lifted = sibling_edges(&files.into_iter().collect());
    assert_eq!(
        circles(&lifted),
        vec![vec![m("render::fabric"), m("render::facts")]]
    );
}

#[test]
fn the_imports_of_files_form_no_circle() {
    let all = all_sources();
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
        if me == ["lib"] || me == ["main"] {
            continue;
        }
        for r in referenced(&code(p), &me) {
            if let Some(f) = file_of(&r) {
                if f != me {
                    edges.insert((me.clone(), f));
                }
            }
        }
    }
    // The scan sees real imports (the test can fail): known ones.
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert!(edges.contains(&(m("placement::build"), m("placement::accounting"))));
    assert!(edges.contains(&(m("pipeline"), m("solve"))));
    assert!(edges.contains(&(m("render::facts::classes"), m("render::nccl"))));
    let found: Vec<String> = circles(&sibling_edges(&edges))
        .iter()
        .map(|c| {
            let names: Vec<String> = c.iter().map(|x| x.join("::")).collect();
            let why: Vec<String> = edges
                .iter()
                .filter(|(a, b)| {
                    c.iter().any(|x| a.starts_with(x))
                        && c.iter().any(|y| b.starts_with(y) && !a.starts_with(y))
                })
                .map(|(a, b)| format!("  {} -> {}", a.join("::"), b.join("::")))
                .collect();
            format!("{}\n{}", names.join(" <-> "), why.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "files importing each other in a circle:\n{}",
        found.join("\n")
    );
}

/// The realizability checker shares nothing with the renderers (issue 29): not their
/// code (the layers above keep `render` out) and not their label constants either, so a
/// renderer's typo in a key is caught rather than copied.
#[test]
fn realize_does_not_use_the_renderers_names() {
    let mut all = Vec::new();
    files(Path::new("crates/render/src/realize"), &mut all);
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

/// Command files call the library and the commands' shared helpers (`output`,
/// `support`), never another command (issue 32: `report -> apply -> plan` and
/// `discover -> import` were calls between commands).
#[test]
fn commands_call_the_library_not_each_other() {
    const HELPERS: &[&str] = &["output", "support"];
    let mut all = Vec::new();
    files(Path::new("src/commands"), &mut all);
    let commands: BTreeSet<String> = all
        .iter()
        .filter_map(|p| module_of(p).get(1).cloned())
        .filter(|m| !HELPERS.contains(&m.as_str()))
        .collect();
    assert!(commands.contains("plan") && commands.contains("import"));
    let mut bad = Vec::new();
    for p in &all {
        let me = module_of(p);
        let Some(mine) = me.get(1) else { continue };
        for r in referenced(&code(p), &me) {
            if r.first().map(String::as_str) != Some("commands") {
                continue;
            }
            if let Some(theirs) = r.get(1).filter(|t| commands.contains(*t) && *t != mine) {
                bad.push(format!("{}: uses commands::{theirs}", p.display()));
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(
        bad.is_empty(),
        "commands calling commands:\n{}",
        bad.join("\n")
    );
}

/// The crates hold the layers in order (the compiler keeps a crate from using those
/// above it; this keeps a module from landing in a crate below its layer).
#[test]
fn crates_hold_the_layers_in_order() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut below = 0;
    for dir in SOURCES {
        let mut own = Vec::new();
        files(Path::new(dir), &mut own);
        let ranks: BTreeSet<usize> = own
            .iter()
            .filter_map(|p| {
                module_of(p)
                    .first()
                    .and_then(|t| rank.get(t.as_str()))
                    .copied()
            })
            .collect();
        let (lo, hi) = (
            ranks.first().copied().unwrap(),
            ranks.last().copied().unwrap(),
        );
        assert!(
            lo >= below,
            "{dir} holds {} below a lower crate's",
            LAYERS[lo]
        );
        below = hi;
    }
}
