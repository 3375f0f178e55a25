//! The human plan stays readable on large clusters: repeated changes of one kind are
//! grouped and fully placed classes summed unless `--verbose` (issue 18).

use crate::common;

use std::path::PathBuf;

fn generated(gpus: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuplan-group-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = common::gpuplan(&[
        "generate",
        "superpod",
        "--gpus",
        gpus,
        "--mix",
        "mixed",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn a_large_first_plan_is_grouped_and_verbose_lists_everything() {
    let dir = generated("4000", "big");
    let d = dir.to_str().unwrap();
    let short = common::gpuplan(&["plan", d]);
    assert!(short.status.success());
    let short = String::from_utf8_lossy(&short.stdout).into_owned();
    let long = common::gpuplan(&["plan", "--verbose", d]);
    let long = String::from_utf8_lossy(&long.stdout).into_owned();
    let (ns, nl) = (short.lines().count(), long.lines().count());
    assert!(ns < 300, "{ns} lines by default:\n{short}");
    assert!(nl > 3 * ns, "verbose {nl} vs {ns}");
    // Grouped: Node objects in one line, MIG scripts in one line, classes summed.
    assert!(
        short.contains("+ 500 Node objects dgx-[") && short.contains("create"),
        "{short}"
    );
    assert!(short.contains(" files mig/{"), "{short}");
    assert!(
        short.contains("classes fully placed, by kind and priority"),
        "{short}"
    );
    // Verbose: every Node object and every class on its own line.
    assert_eq!(long.matches("      + Node/").count(), 500);
    assert!(!long.contains("classes fully placed"));
    // Both end with the same totals.
    let last = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Plan: "))
            .map(str::to_string)
    };
    assert_eq!(last(&short), last(&long));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_small_plan_is_the_same_either_way() {
    for e in ["examples/small-lab", "examples/superpod-h100"] {
        // The solver line carries the solve time: compare everything else.
        let text = |args: &[&str]| {
            let o = common::gpuplan(args);
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| !l.starts_with("solver: "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(
            text(&["plan", e]) == text(&["plan", "--verbose", e]),
            "{e}: the default and verbose plans differ"
        );
    }
}

/// The grouped changes of a generated first plan, as a snapshot (the section after
/// `changes`: no timings in it).
#[test]
fn grouped_changes_snapshot() {
    let dir = generated("2000", "snap");
    let out = common::gpuplan(&["plan", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let changes = &text[text.find("\nchanges\n").expect("a changes section")..];
    let workloads = &text[text.find("\nworkloads\n").unwrap()..];
    let workloads = &workloads[..workloads.find("\n\n").unwrap_or(workloads.len())];
    insta::assert_snapshot!("grouped_plan", format!("{workloads}\n{changes}"));
    let _ = std::fs::remove_dir_all(&dir);
}
