//! `gpuplan graph`: DOT from the model (and the placement) for every example; Graphviz's
//! own `dot` parses and lays out every graph (skipped with a message where Graphviz is
//! absent: `.ci/run` installs Debian's `graphviz`); byte-identical whatever the order of
//! the input files; a snapshot of a small one.

use crate::common;

use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
    v.sort();
    v
}

fn graph(args: &[&str]) -> String {
    let mut all = vec!["--quiet", "graph"];
    all.extend_from_slice(args);
    let out = common::gpuplan(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Graphviz accepts the DOT (`dot -Tsvg`), and the SVG it draws is well-formed XML.
fn dot_accepts(name: &str, text: &str) -> bool {
    use std::io::Write;
    let Ok(mut child) = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        common::missing("Graphviz `dot` is not installed (.ci/run installs graphviz)");
        return false;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{name}: dot refused the graph: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(&svg, options)
        .unwrap_or_else(|e| panic!("{name}: SVG: {e}"));
    true
}

#[test]
fn every_example_graphs_and_graphviz_draws_it() {
    for e in examples() {
        let d = e.to_str().unwrap();
        let plain = graph(&[d]);
        let placed = graph(&[d, "--placement"]);
        let gpus = graph(&[d, "--gpus"]);
        assert!(plain.starts_with("// gpuplan graph") && plain.ends_with("}\n"));
        assert!(placed.contains("shape=note"), "{d}: classes drawn");
        assert!(gpus.len() > plain.len(), "{d}: --gpus adds GPUs");
        // Every node of the configuration is a vertex.
        let nodes = plain.matches("\"node:").count();
        assert!(nodes > 0, "{d}");
        for (name, text) in [("plain", &plain), ("placement", &placed), ("gpus", &gpus)] {
            if !dot_accepts(&format!("{d} {name}"), text) {
                return;
            }
        }
    }
}

#[test]
fn the_graph_does_not_depend_on_the_order_of_the_files() {
    for e in examples() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&e)
            .unwrap()
            .map(|x| x.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
            .collect();
        if files.len() < 2 {
            continue;
        }
        files.sort();
        let fwd: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
        let mut rev = fwd.clone();
        rev.reverse();
        let mut a = fwd.clone();
        a.push("--placement");
        let mut b = rev.clone();
        b.push("--placement");
        assert_eq!(graph(&a), graph(&b), "{}", e.display());
    }
}

#[test]
fn small_lab_snapshot_and_saved_plan() {
    let text = graph(&["examples/small-lab", "--placement"]);
    insta::assert_snapshot!("graph_small_lab", text);
    // From a saved plan: the same graph.
    let s = common::Scratch::new("graph-saved");
    let plan = s.path("plan.json");
    let out = common::gpuplan(&[
        "--quiet",
        "plan",
        "examples/small-lab",
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(graph(&[plan.to_str().unwrap(), "--placement"]), text);
}

#[test]
fn an_invalid_configuration_is_refused_with_its_diagnostics() {
    let s = common::Scratch::new("graph-bad");
    let f = s.path("bad.kdl");
    std::fs::write(
        &f,
        "node-class \"x\" {\n    gpus 8 model=\"no-such-gpu\"\n}\n",
    )
    .unwrap();
    let out = common::gpuplan(&["graph", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GP0"));
}
