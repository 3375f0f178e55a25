//! `gpuplan fmt`: a fixed point on every example, every `kdl` block of the docs and
//! every KDL file of the test corpus that parses; `--check`, `--diff`, `-` and the
//! failure cases through the real binary.
//!
//! `GPUPLAN_UPDATE=1 cargo test --test it fmt::` rewrites the docs' `kdl` blocks that are not
//! formatted (the examples are formatted with `gpuplan fmt -r examples`).

use gpuplan::source::SourceMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn kdl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            kdl_files(&e, out);
        } else if e.extension().is_some_and(|x| x == "kdl") {
            out.push(e);
        }
    }
}

fn format(text: &str) -> Result<String, Vec<gpuplan::diag::Diagnostic>> {
    let mut sources = SourceMap::new();
    let f = sources.add("t.kdl", text);
    gpuplan::fmt::format(f, text)
}

#[test]
fn every_example_is_formatted() {
    let mut files = Vec::new();
    kdl_files(&root().join("examples"), &mut files);
    assert!(files.len() >= 6);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let formatted = format(&text).unwrap_or_else(|d| panic!("{}: {d:?}", f.display()));
        assert!(
            formatted == text,
            "{} is not formatted: run `gpuplan fmt -r examples`",
            f.display()
        );
    }
}

/// Every KDL file under tests/ (fixtures, rules, regressions, malformed inputs): those
/// that parse format without refusal, and formatting is idempotent; those that do not
/// parse are refused with GP760.
#[test]
fn fmt_is_a_fixed_point_on_the_test_corpus() {
    let mut files = Vec::new();
    kdl_files(&root().join("tests"), &mut files);
    let mut parsed = 0;
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue; // the non-UTF-8 malformed inputs
        };
        match format(&text) {
            Ok(once) => {
                parsed += 1;
                let twice = format(&once).unwrap_or_else(|d| panic!("{}: {d:?}", f.display()));
                assert_eq!(once, twice, "{}: not idempotent", f.display());
            }
            Err(d) => assert_eq!(d[0].code, "GP760", "{}: {d:?}", f.display()),
        }
    }
    assert!(parsed > 80, "only {parsed} corpus files parsed");
}

/// The ```kdl blocks of README.md and docs/*.md, with their byte ranges.
fn doc_blocks(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = text[pos..].find("```kdl\n") {
        let start = pos + i + "```kdl\n".len();
        let Some(j) = text[start..].find("```") else {
            break;
        };
        out.push((start, start + j));
        pos = start + j + 3;
    }
    out
}

#[test]
fn every_docs_kdl_block_that_parses_is_formatted() {
    let update = std::env::var_os("GPUPLAN_UPDATE").is_some();
    let mut docs = vec![root().join("README.md")];
    let mut entries: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    entries.sort();
    docs.extend(entries);
    let mut checked = 0;
    let mut stale = Vec::new();
    for d in docs {
        let text = std::fs::read_to_string(&d).unwrap();
        let mut new = String::new();
        let mut last = 0;
        for (s, e) in doc_blocks(&text) {
            let block = &text[s..e];
            new.push_str(&text[last..s]);
            last = e;
            match format(block) {
                Ok(f) => {
                    checked += 1;
                    if f != block {
                        stale.push(format!("{} at byte {s}", d.display()));
                    }
                    new.push_str(&f);
                }
                // Fragments (`...`, half a node) are not configurations.
                Err(_) => new.push_str(block),
            }
        }
        new.push_str(&text[last..]);
        if update && new != text {
            std::fs::write(&d, new).unwrap();
        }
    }
    assert!(checked > 50, "only {checked} docs blocks parsed");
    assert!(
        update || stale.is_empty(),
        "docs kdl blocks not formatted (GPUPLAN_UPDATE=1 cargo test --test it fmt::):\n{}",
        stale.join("\n")
    );
}

fn gpuplan(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuplan"));
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env("NO_COLOR", "1");
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpuplan-fmt-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const MESSY: &str = "team   \"t\"   guarantee=8 burst=16\npriority p value=10 // low\n\n\n\nnode-class x {\n  gpus 8 model=h100\n}\n";
const TIDY: &str = "team \"t\" guarantee=8 burst=16\npriority \"p\" value=10  // low\n\nnode-class \"x\" {\n    gpus 8 model=\"h100\"\n}\n";

#[test]
fn check_diff_write_and_stdin() {
    let dir = temp_dir("cli");
    let file = dir.join("a.kdl");
    std::fs::write(&file, MESSY).unwrap();
    std::fs::write(dir.join("b.kdl"), TIDY).unwrap();
    let d = dir.to_str().unwrap();

    // --check lists the file, exits 1, changes nothing.
    let (rc, out, _) = gpuplan(&["fmt", "--check", d], None);
    assert_eq!(rc, 1);
    assert_eq!(out.trim(), file.to_str().unwrap());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MESSY);

    // --check --diff prints a unified diff and still changes nothing.
    let (rc, out, _) = gpuplan(&["fmt", "--check", "--diff", d], None);
    assert_eq!(rc, 1);
    assert!(
        out.contains("-team   \"t\"") && out.contains("+team \"t\""),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MESSY);

    // Without --check the file is rewritten, and a second run is a no-op.
    let (rc, out, _) = gpuplan(&["fmt", d], None);
    assert_eq!(rc, 0);
    assert_eq!(out.trim(), file.to_str().unwrap());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), TIDY);
    let (rc, out, _) = gpuplan(&["fmt", "--check", d], None);
    assert_eq!((rc, out.as_str()), (0, ""));

    // Standard input to standard output.
    let (rc, out, _) = gpuplan(&["fmt", "-"], Some(MESSY));
    assert_eq!((rc, out.as_str()), (0, TIDY));
    let (rc, _, _) = gpuplan(&["fmt", "--check", "-"], Some(MESSY));
    assert_eq!(rc, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn broken_and_missing_inputs_fail_with_codes_and_touch_nothing() {
    let dir = temp_dir("broken");
    let file = dir.join("bad.kdl");
    std::fs::write(&file, "node-class \"x\" {\n    gpus 8\n").unwrap();
    let (rc, _, err) = gpuplan(&["fmt", file.to_str().unwrap()], None);
    assert_eq!(rc, 1);
    assert!(err.contains("GP760"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "node-class \"x\" {\n    gpus 8\n"
    );
    let missing = dir.join("nope.kdl");
    let (rc, _, err) = gpuplan(&["fmt", missing.to_str().unwrap()], None);
    assert_eq!(rc, 1);
    assert!(err.contains("GP762"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn recursive_walks_sub_folders_but_not_hidden_ones() {
    let dir = temp_dir("rec");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(dir.join(".hidden")).unwrap();
    for p in ["sub/a.kdl", ".hidden/b.kdl"] {
        std::fs::write(dir.join(p), MESSY).unwrap();
    }
    let d = dir.to_str().unwrap();
    let (rc, out, _) = gpuplan(&["fmt", "--check", d], None);
    assert_eq!((rc, out.as_str()), (0, ""), "not recursive by default");
    let (rc, out, _) = gpuplan(&["fmt", "--check", "-r", d], None);
    assert_eq!(rc, 1);
    assert!(
        out.contains("sub/a.kdl") && !out.contains(".hidden"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A hand-edited file with every kind of mess: the canonical result as a snapshot; it
/// validates exactly like the original.
#[test]
fn messy_fixture_snapshot() {
    let path = root().join("tests/fixtures/fmt/messy.kdl");
    let text = std::fs::read_to_string(&path).unwrap();
    let formatted = format(&text).unwrap();
    insta::assert_snapshot!("fmt_messy", formatted);
    assert_eq!(format(&formatted).unwrap(), formatted);
    let validate = |t: &str| {
        let mut sources = SourceMap::new();
        sources.add("t.kdl", t);
        let o = gpuplan::validate::validate(&sources);
        o.diagnostics
            .iter()
            .map(|d| (d.code, d.message.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(validate(&text), validate(&formatted));
}

#[test]
fn unparsable_fixture_is_refused() {
    let text = std::fs::read_to_string(root().join("tests/fixtures/fmt/bad.kdl")).unwrap();
    let d = format(&text).unwrap_err();
    assert_eq!(d[0].code, "GP760");
}

/// Issue 30, case 6: `fmt` keeps every comment byte for byte; only the indentation of a
/// comment's first line may change, and a comment stays on the line it was on.
/// (`input`, what `fmt` writes); each result is a fixed point.
const COMMENT_CASES: &[(&str, &str, &str)] = &[
    (
        "block comment with odd inner indentation",
        "node-class \"x\" {\n      /* first\n   second\n\t\t third */\n  gpus 8\n}\n",
        "node-class \"x\" {\n    /* first\n   second\n\t\t third */\n    gpus 8\n}\n",
    ),
    (
        "comment after `{`",
        "node-class \"x\" { // comment\n  gpus 8\n}\n",
        "node-class \"x\" { // comment\n    gpus 8\n}\n",
    ),
    (
        "comment after `{` of an empty block",
        "fabric { /* nothing yet */\n}\n",
        "fabric { /* nothing yet */\n}\n",
    ),
    (
        "nested block comments",
        "/* outer\n   /* inner\n        deeper */\n  end */\nteam \"t\" guarantee=1\n",
        "/* outer\n   /* inner\n        deeper */\n  end */\nteam \"t\" guarantee=1\n",
    ),
    (
        "slashdashed node over several lines, slashdashed entry",
        "fabric {\n  /-leaf \"l2\" {\n          odd 1\n      }\n  leaf \"l1\" /-nodes=\"a\"   link-speed=\"1\"\n}\n",
        "fabric {\n    /-leaf \"l2\" {\n          odd 1\n      }\n    leaf \"l1\" /-nodes=\"a\" link-speed=\"1\"\n}\n",
    ),
    (
        "block comment at the end of the file, no final newline",
        "team \"t\" guarantee=1\n   /* last\n      block */",
        "team \"t\" guarantee=1\n/* last\n      block */\n",
    ),
    (
        "line comment ending the file without a newline",
        "team \"t\" guarantee=1 // end",
        "team \"t\" guarantee=1  // end\n",
    ),
    (
        "comment before a node on its line",
        "  /* a */ team \"t\"\n",
        "/* a */ team \"t\"\n",
    ),
    (
        "comment after `;`",
        "cluster \"c\" {\n    scheduler \"kueue\"; // the scheduler\n}\n",
        "cluster \"c\" {\n    scheduler \"kueue\"  // the scheduler\n}\n",
    ),
    (
        "multi-line block comment between entries",
        "team \"t\" /* a\n     b */ guarantee=1\n",
        "team \"t\" /* a\n     b */ guarantee=1\n",
    ),
    (
        "line comment in a line continuation",
        "node-class \"x\" {\n  gpus 8 \\ // eight\n     model=\"h100\"\n}\n",
        "node-class \"x\" {\n    gpus 8 \\ // eight\n        model=\"h100\"\n}\n",
    ),
    (
        "trailing spaces inside a line comment",
        "team \"t\" // note  \n",
        "team \"t\"  // note  \n",
    ),
    (
        "CRLF line endings",
        "node-class \"x\" { // c\r\n  /* a\r\n     b */\r\n  gpus 8\r\n}\r\n",
        "node-class \"x\" { // c\r\n    /* a\r\n     b */\r\n    gpus 8\r\n}\r\n",
    ),
];

#[test]
fn issue30_fmt_keeps_comments_byte_for_byte() {
    let mut failed = Vec::new();
    for (what, input, want) in COMMENT_CASES {
        match format(input) {
            Ok(got) if got == *want => {
                assert_eq!(format(&got).unwrap(), got, "{what}: not a fixed point");
            }
            Ok(got) => failed.push(format!("{what}:\n  got  {got:?}\n  want {want:?}")),
            Err(d) => failed.push(format!("{what}: refused: {:?}", d[0].message)),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The fixture with every kind of comment: its formatted form, byte for byte.
#[test]
fn issue30_comments_fixture() {
    let dir = root().join("tests/fixtures/fmt");
    let input = std::fs::read_to_string(dir.join("comments.kdl")).unwrap();
    let want = std::fs::read_to_string(dir.join("comments.formatted.kdl")).unwrap();
    assert_eq!(format(&input).unwrap(), want);
    assert_eq!(format(&want).unwrap(), want);
}
