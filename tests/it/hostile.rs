//! Issue 28, CI-safe under attack: the reproductions of the second hostile probe of main
//! (0c512f9), each a test that failed there. A pull request controls the configuration's
//! files (names, links, contents); a CI artifact controls the saved plan. Nothing they
//! say may make gpuplan read what the user did not point at, quote it, do unbounded
//! work, panic, or print control sequences.

use crate::common;

use crate::common::{Run, Scratch, codes, panicked};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LAB: &str = "examples/small-lab/lab.kdl";

/// Runs the binary in `dir`, killing it after `limit` (a hang is a failure, not a
/// stuck test run).
fn run_within(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Run {
    let mut c = common::command();
    c.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("run gpuplan");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return common::run_of(&child.wait_with_output().expect("output"));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "`gpuplan {}` ran past {limit:?}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn all_output(r: &Run) -> String {
    format!("{}{}", r.1, r.2)
}

/// Diagnostics as one line of words: miette wraps messages at 100 columns (and marks
/// continued lines with `│`), so a phrase may span lines.
fn flat(s: &str) -> String {
    s.split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

fn symlink(target: &str, link: &Path) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A workspace like a CI checkout: `.git/config` with a token, the configuration in
/// `cluster/`.
fn workspace(tag: &str) -> Scratch {
    let s = Scratch::new(tag);
    s.write(
        ".git/config",
        "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic SECRET-TOKEN\n",
    );
    s.copy_in(LAB, "cluster/lab.kdl");
    s
}

// ----------------------------------------------------------- 1. links and foreign files

#[test]
fn issue28_a_link_to_git_config_is_not_followed_or_quoted() {
    let s = workspace("hostile-link");
    symlink("../.git/config", &s.path("cluster/zz.kdl"));
    let r = s.run(&["validate", "cluster/"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP000".to_string()), "{}", r.2);
    assert!(flat(&r.2).contains("symbolic link"), "{}", r.2);
    assert!(!all_output(&r).contains("SECRET-TOKEN"), "{}", r.2);
    assert!(!all_output(&r).contains("extraheader"), "{}", r.2);
    // Named on its own, the link is refused too.
    let r = s.run(&["validate", "cluster/zz.kdl"]);
    assert_eq!(r.0, 1);
    assert!(!all_output(&r).contains("SECRET-TOKEN"), "{}", r.2);
}

#[test]
fn issue28_a_link_to_the_environment_leaks_nothing() {
    let s = workspace("hostile-environ");
    symlink("/proc/self/environ", &s.path("cluster/zz.kdl"));
    let r = s.run_env(&["validate", "cluster/"], &[("MY_SECRET", "s3cr3t")]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(!all_output(&r).contains("s3cr3t"), "{}", r.2);
    let r = s.run_env(
        &["validate", "--format", "json", "cluster/"],
        &[("MY_SECRET", "s3cr3t")],
    );
    assert!(!all_output(&r).contains("s3cr3t"), "{}", r.1);
}

#[test]
fn issue28_a_fifo_or_device_is_refused_before_it_is_read() {
    let s = workspace("hostile-fifo");
    let fifo = s.path("cluster/f.kdl");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    let r = run_within(
        &s.0,
        &["validate", "cluster/"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(flat(&r.2).contains("not a regular file"), "{}", r.2);
    let r = run_within(
        &s.0,
        &["validate", "cluster/f.kdl"],
        &[],
        Duration::from_secs(20),
    );
    assert!(flat(&r.2).contains("not a regular file"), "{}", r.2);
    let r = run_within(
        &s.0,
        &["validate", "/dev/zero"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(r.0, 1);
    assert!(flat(&r.2).contains("not a regular file"), "{}", r.2);
}

/// A regular file that is not KDL (here a copy of the git config) is quoted only at the
/// offending spans: no whole line of it appears.
#[test]
fn issue28_a_foreign_file_is_quoted_only_at_its_offending_spans() {
    let s = workspace("hostile-foreign");
    std::fs::copy(s.path(".git/config"), s.path("cluster/zz.kdl")).unwrap();
    let r = s.run(&["validate", "cluster/"]);
    assert_eq!(r.0, 1);
    assert!(codes(&r).contains(&"GP001".to_string()), "{}", r.2);
    assert!(!flat(&r.2).contains("SECRET-TOKEN"), "{}", r.2);
    assert!(!flat(&r.2).contains("AUTHORIZATION"), "{}", r.2);
}

// ----------------------------------------------------------- 2. saved plans

fn planned(tag: &str) -> Scratch {
    let s = workspace(tag);
    let r = s.run(&["plan", "cluster", "-o", "plan.json", "--quiet"]);
    assert!(r.0 == 0 || r.0 == 2, "{}", r.2);
    s
}

fn edit_plan(s: &Scratch, to: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_str(&s.read("plan.json")).unwrap();
    edit(&mut v);
    s.write(to, serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn issue28_a_saved_plan_cannot_choose_what_apply_reads() {
    let s = planned("hostile-plan-paths");
    let fifo = s.path("pipe.kdl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (arg, code) in [
        ("/dev/zero", "GP935"),
        ("/etc/passwd", "GP935"),
        ("../../etc", "GP935"),
        (".git/config", "GP935"),
        ("pipe.kdl", "GP922"),
    ] {
        edit_plan(&s, "t.json", |v| {
            v["arguments"] = serde_json::json!([arg]);
        });
        let r = run_within(
            &s.0,
            &["apply", "t.json", "--out-dir", "out"],
            &[],
            Duration::from_secs(60),
        );
        assert_eq!(r.0, 1, "{arg}: {}", r.2);
        assert!(codes(&r).contains(&code.to_string()), "{arg}: {}", r.2);
        assert!(!flat(&r.2).contains("SECRET-TOKEN"), "{}", r.2);
        // (The folder holds a FIFO: its tree cannot be read, so what apply would write
        // is checked by name.)
        assert!(
            !s.path("out").exists(),
            "{arg}: apply wrote the output folder"
        );
        assert!(
            !s.path(".gpuplan").exists(),
            "{arg}: apply created the state folder"
        );
    }
    // A link inside the folder that leads out of it is refused the same way.
    symlink("/etc", &s.path("etc-link"));
    edit_plan(&s, "t.json", |v| {
        v["arguments"] = serde_json::json!(["etc-link"])
    });
    let r = s.run(&["apply", "t.json", "--out-dir", "out"]);
    assert!(codes(&r).contains(&"GP935".to_string()), "{}", r.2);
    // The plan itself still applies: its inputs are read inside its folder, wherever
    // the command runs from.
    let r = run_within(
        Path::new("/"),
        &[
            "apply",
            s.path("plan.json").to_str().unwrap(),
            "--out-dir",
            s.path("out").to_str().unwrap(),
            "--state",
            s.path(".gpuplan/state.json").to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    );
    assert_eq!(r.0, 0, "{}", r.2);
}

/// A recorded input that is missing and one that exists with other bytes get the same
/// words: a tampered plan cannot probe which files exist beside the configuration.
#[test]
fn issue28_a_digest_mismatch_reads_the_same_whether_or_not_the_file_exists() {
    let s = planned("hostile-oracle");
    let message = |s: &Scratch| {
        edit_plan(s, "t.json", |v| {
            let inputs = v["inputs"].as_array_mut().unwrap();
            inputs.push(serde_json::json!({"path": "cluster/extra.kdl", "sha256": "0".repeat(64)}));
        });
        let r = s.run(&["apply", "t.json", "--out-dir", "out"]);
        assert!(codes(&r).contains(&"GP922".to_string()), "{}", r.2);
        r.2
    };
    s.write("cluster/extra.kdl", "// a file that exists\n");
    let present = message(&s);
    std::fs::remove_file(s.path("cluster/extra.kdl")).unwrap();
    let gone = message(&s);
    assert_eq!(present, gone);
    assert!(
        flat(&present).contains("`cluster/extra.kdl` is not as planned"),
        "{present}"
    );
}

/// `show`, `graph` and `report html` check a saved plan like `apply` does.
#[test]
fn issue28_displays_refuse_a_tampered_plan() {
    let s = planned("hostile-show");
    edit_plan(&s, "t.json", |v| {
        v["summary"]["add"] = serde_json::json!(0);
    });
    for args in [
        vec!["show", "t.json"],
        vec!["graph", "t.json"],
        vec!["report", "html", "t.json", "-o", "r.html"],
        vec!["report", "chargeback", "t.json"],
    ] {
        let r = s.run(&args);
        assert_eq!(r.0, 1, "{args:?}: {}", r.1);
        assert!(
            codes(&r).contains(&"GP928".to_string()),
            "{args:?}: {}",
            r.2
        );
    }
    assert!(!s.path("r.html").exists());
    assert_eq!(s.run(&["show", "plan.json"]).0, 0);
}

// ----------------------------------------------------------- 3. bounded work

#[test]
fn issue28_ten_short_lines_do_not_expand_to_a_million_nodes() {
    let s = Scratch::new("hostile-ranges");
    let mut text =
        String::from("cluster \"x\"\nnode-class \"dgx\" { gpus 8 model=\"h100-sxm5-80gb\" }\n");
    for i in 0..10 {
        text.push_str(&format!("nodes \"x{i}-[1-100000]\" class=\"dgx\"\n"));
    }
    s.write("big.kdl", &text);
    let r = run_within(&s.0, &["validate", "big.kdl"], &[], Duration::from_secs(20));
    assert_eq!(r.0, 1);
    assert!(codes(&r).contains(&"GP047".to_string()), "{}", r.2);
    assert!(flat(&r.2).contains("--limit names="), "{}", r.2);
    // Within the names limit but past the nodes limit.
    s.write(
        "nodes.kdl",
        "cluster \"x\"\nnode-class \"dgx\" { gpus 2 model=\"h100-sxm5-80gb\" }\nnodes \"x-[1-10000]\" class=\"dgx\"\n",
    );
    let r = run_within(
        &s.0,
        &["validate", "nodes.kdl"],
        &[],
        Duration::from_secs(20),
    );
    assert!(codes(&r).contains(&"GP047".to_string()), "{}", r.2);
    assert!(flat(&r.2).contains("--limit nodes="), "{}", r.2);
    // Raised on the command line, the same file is read.
    let r = run_within(
        &s.0,
        &["--limit", "nodes=20000", "validate", "nodes.kdl"],
        &[],
        Duration::from_secs(120),
    );
    assert!(!codes(&r).contains(&"GP047".to_string()), "{}", r.2);
}

#[test]
fn issue28_a_gpu_count_past_any_server_is_refused_not_clamped() {
    let s = Scratch::new("hostile-gpus");
    s.write(
        "c.kdl",
        "cluster \"x\"\nnode-class \"dgx\" { gpus 4294967295 model=\"h100-sxm5-80gb\" }\nnodes \"x-[1-1000]\" class=\"dgx\"\n",
    );
    let r = run_within(&s.0, &["plan", "c.kdl"], &[], Duration::from_secs(20));
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(flat(&r.2).contains("4294967295 GPUs per node"), "{}", r.2);
    assert!(codes(&r).contains(&"GP047".to_string()));
}

#[test]
fn issue28_input_bytes_are_counted_while_reading() {
    let s = Scratch::new("hostile-bytes");
    let mut big = String::with_capacity(9 << 20);
    while big.len() < (9 << 20) {
        big.push_str("// a comment line that says nothing at all, repeated to fill the file\n");
    }
    s.write("big.kdl", &big);
    let r = run_within(&s.0, &["validate", "big.kdl"], &[], Duration::from_secs(20));
    assert_eq!(r.0, 1);
    assert!(flat(&r.2).contains("input-bytes limit"), "{}", r.2);
    // Many files share one budget.
    for i in 0..3 {
        s.write(&format!("d/{i}.kdl"), &big[..4 << 20]);
    }
    let r = run_within(&s.0, &["validate", "d"], &[], Duration::from_secs(20));
    assert!(flat(&r.2).contains("input-bytes limit"), "{}", r.2);
}

#[test]
fn issue28_a_price_of_1e308_is_out_of_range() {
    let s = Scratch::new("hostile-price");
    s.write(
        "c.kdl",
        "cluster \"x\"\nnode-class \"dgx\" price-per-hour=1e308 { gpus 8 model=\"h100-sxm5-80gb\" }\nnodes \"x-[1-2]\" class=\"dgx\"\n",
    );
    let r = s.run(&["validate", "c.kdl"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP005".to_string()), "{}", r.2);
}

#[test]
fn issue28_xml_entities_are_not_expanded() {
    let s = Scratch::new("hostile-xml");
    let mut xml = String::from(
        "<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\">\n]>\n<nvidia_smi_log><gpu><product_name>",
    );
    for _ in 0..50_000 {
        xml.push_str("&a;");
    }
    xml.push_str("</product_name></gpu></nvidia_smi_log>\n");
    s.write("q.xml", &xml);
    let r = run_within(
        &s.0,
        &["import", "nvidia-smi-xml", "q.xml"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP712".to_string()), "{}", r.2);
}

#[test]
fn issue28_slurm_hostlists_share_one_budget() {
    let s = Scratch::new("hostile-slurm");
    // 2.8 KB of partition hostlists: 4,000,000 names, refused at the budget.
    let mut conf = String::from(
        "ClusterName=x\nNodeName=n[1-10] CPUs=8 RealMemory=1000 Gres=gpu:h100:8 State=UNKNOWN\n",
    );
    for i in 0..40 {
        conf.push_str(&format!("PartitionName=p{i} Nodes=x{i}[0-99999]\n"));
    }
    s.write("slurm/slurm.conf", &conf);
    let r = run_within(
        &s.0,
        &["import", "slurm", "slurm"],
        &[],
        Duration::from_secs(20),
    );
    assert!(flat(&r.2).contains("names limit"), "{}", r.2);
    assert!(!panicked(&r));
    // 40 lines of 100,000 nodes each: refused at the nodes limit, not described.
    let mut conf = String::from("ClusterName=x\n");
    for i in 0..40 {
        conf.push_str(&format!(
            "NodeName=n{i}x[0-99999] CPUs=8 RealMemory=1000 Gres=gpu:h100:8 State=UNKNOWN\n"
        ));
    }
    s.write("slurm/slurm.conf", &conf);
    let r = run_within(
        &s.0,
        &["import", "slurm", "slurm"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(flat(&r.2).contains("nodes limit"), "{}", r.2);
    assert!(!panicked(&r));
}

// ----------------------------------------------------------- 4. diagnostics never panic

#[test]
fn issue28_a_diagnostic_past_column_65535_does_not_panic() {
    let s = Scratch::new("hostile-column");
    s.write(
        "long.kdl",
        format!("team \"a\" burst=1 {}bogus=1\n", " ".repeat(70_000)),
    );
    let r = s.run(&["validate", "long.kdl"]);
    assert!(!panicked(&r), "{}", r.2);
    assert_eq!(r.0, 1);
    assert!(flat(&r.2).contains("long.kdl:1:70018"), "{}", r.2);
    // The line is shown as a window around the label, not 70,000 columns.
    assert!(r.2.lines().all(|l| l.chars().count() < 400), "{}", r.2);
}

#[test]
fn issue28_a_minified_node_list_with_a_late_error_does_not_panic() {
    let s = Scratch::new("hostile-k8s-long");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s/h100-xe9680.json"),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let one = v["items"][0].clone();
    let mut items = Vec::new();
    for i in 0..100 {
        let mut n = one.clone();
        n["metadata"]["name"] = serde_json::json!(format!("node-{i:03}"));
        if i == 99 {
            n["metadata"]["labels"]["nvidia.com/gpu.count"] = serde_json::json!("many");
        }
        items.push(n);
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let minified = serde_json::to_string(&list).unwrap();
    assert!(minified.len() > 70_000 && !minified.contains('\n'));
    s.write("nodes.json", &minified);
    let r = s.run(&["import", "k8s-nodes", "nodes.json"]);
    assert!(!panicked(&r), "{}", r.2);
}

#[test]
fn issue28_non_utf8_bytes_are_a_diagnostic() {
    let s = Scratch::new("hostile-utf8");
    s.write("bad.kdl", b"cluster \"x\xff\xfe\"\n");
    let r = s.run(&["validate", "bad.kdl"]);
    assert!(!panicked(&r));
    assert_eq!(r.0, 1);
    assert!(flat(&r.2).contains("not UTF-8"), "{}", r.2);
}

/// A diagnostic whose span covers a whole large file is drawn as one short label.
#[test]
fn issue28_a_huge_span_is_drawn_short() {
    let mut sources = gpuplan::source::SourceMap::new();
    let text = "x = 1\n".repeat(200_000);
    let id = sources.add("big.kdl", text.clone());
    let d = gpuplan::diag::Diagnostic::error("GP002", "everything is wrong")
        .at(gpuplan::source::Span::new(id, 0, text.len()), "all of it")
        .with_related(
            gpuplan::source::Span::new(id, 3, text.len() - 3),
            "and this",
        );
    let out = gpuplan::diag::Report::new(&sources, &[d]).human(false);
    assert!(out.len() < 4_000, "{} bytes:\n{}", out.len(), &out[..2000]);
    assert!(out.contains("big.kdl:1:1"), "{out}");
}

// ----------------------------------------------------------- 5. output hygiene

/// User strings with line breaks and escape sequences reach no diagnostic raw: a pull
/// request cannot print `::warning` workflow commands or move the terminal's cursor.
#[test]
fn issue28_user_strings_in_diagnostics_are_escaped() {
    let s = Scratch::new("hostile-escapes");
    let evil = "x\\u{1b}]0;pwned\\u{7}\\n::warning file=a::boom\\r\\u{2028}y";
    s.write(
        "c.kdl",
        format!(
            "cluster \"lab\"\nnode-class \"dgx\" {{ gpus 8 model=\"{evil}\" }}\nnodes \"x-[1-2]\" class=\"{evil}\"\nteam \"{evil}\" guarantee=1 burst=1\n"
        ),
    );
    for format in ["human", "json"] {
        let r = s.run(&["validate", "--format", format, "c.kdl"]);
        assert_eq!(r.0, 1, "{}", r.2);
        let all = all_output(&r);
        assert!(!all.contains('\u{1b}'), "ESC in {format} output: {all:?}");
        assert!(!all.contains('\u{7}') && !all.contains('\r') && !all.contains('\u{2028}'));
        assert!(
            !all.lines().any(|l| l.trim_start().starts_with("::")),
            "a workflow command in {format} output: {all}"
        );
    }
}

#[test]
fn issue28_imported_label_values_cannot_inject_kdl() {
    let s = Scratch::new("hostile-k8s-labels");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s/h100-xe9680.json"),
    )
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let inject = "x\nteam \"evil\" guarantee=999 burst=999\n//";
    for item in v["items"].as_array_mut().unwrap() {
        let labels = item["metadata"]["labels"].as_object_mut().unwrap();
        for key in [
            "nvidia.com/gpu.family",
            "nvidia.com/cuda.runtime.major",
            "nvidia.com/mig.config",
            "topology.kubernetes.io/zone",
        ] {
            labels.insert(key.to_string(), serde_json::json!(inject));
        }
    }
    s.write("nodes.json", serde_json::to_string_pretty(&v).unwrap());
    let r = s.run(&["import", "k8s-nodes", "nodes.json", "-o", "out.kdl"]);
    assert!(!panicked(&r), "{}", r.2);
    let out = std::fs::read_to_string(s.path("out.kdl")).unwrap_or_else(|_| r.1.clone());
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("team")),
        "injected a team:\n{out}"
    );
}

// ----------------------------------------------------------- 8. smaller

#[test]
fn issue28_a_node_name_too_long_for_its_script_is_refused_at_validate() {
    let s = Scratch::new("hostile-name");
    // DNS labels of at most 63 characters, joined by dots: 253 characters in all.
    let name = format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(61)
    );
    assert_eq!(name.len(), 253);
    s.write(
        "c.kdl",
        format!(
            "cluster \"x\"\nnode-class \"dgx\" {{ gpus 8 model=\"h100-sxm5-80gb\" }}\nnodes \"{name}\" class=\"dgx\"\n"
        ),
    );
    let r = s.run(&["validate", "c.kdl"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP005".to_string()), "{}", r.2);
}

#[test]
fn issue28_interface_names_and_bus_ids_are_checked() {
    let s = Scratch::new("hostile-nics");
    for (prop, bad) in [
        ("socket-ifname", ".."),
        ("socket-ifname", "-rf"),
        ("socket-ifname", "abcdefghijklmnop"),
        ("bus-ids", "zz:zz.z"),
    ] {
        s.write(
            "c.kdl",
            format!(
                "cluster \"x\"\nnode-class \"dgx\" {{\n    gpus 8 model=\"h100-sxm5-80gb\"\n    nics 1 speed=\"400Gbps\" kind=\"roce\" {prop}=\"{bad}\"\n}}\nnodes \"x-[1-2]\" class=\"dgx\"\n"
            ),
        );
        let r = s.run(&["validate", "c.kdl"]);
        assert_eq!(r.0, 1, "{prop}={bad}: {}", r.2);
        assert!(
            codes(&r).contains(&"GP041".to_string()),
            "{prop}={bad}: {}",
            r.2
        );
    }
}

#[test]
fn issue28_drift_observations_are_bounded_and_regular() {
    let s = workspace("hostile-drift");
    std::fs::create_dir_all(s.path("obs")).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(s.path("obs/a.json"))
            .status()
            .unwrap()
            .success()
    );
    let r = run_within(
        &s.0,
        &["drift", "cluster", "--observed", "obs"],
        &[],
        Duration::from_secs(30),
    );
    assert!(flat(&r.2).contains("not a regular file"), "{}", r.2);
    std::fs::remove_file(s.path("obs/a.json")).unwrap();
    s.write("obs/b.json", vec![b' '; 9 << 20]);
    let r = run_within(
        &s.0,
        &["drift", "cluster", "--observed", "obs"],
        &[],
        Duration::from_secs(30),
    );
    assert!(flat(&r.2).contains("input-bytes limit"), "{}", r.2);
}

/// `--time-limit` bounds the whole plan: a plan that cannot be made in time says so
/// (GP905) instead of running on.
#[test]
fn issue28_the_time_limit_bounds_every_phase() {
    let s = Scratch::new("hostile-time");
    s.copy_in("examples/small-lab", "c");
    let r = run_within(
        &s.0,
        &["plan", "c", "--time-limit", "0.001"],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP905".to_string()), "{}", r.2);
    assert!(
        flat(&r.2).contains("no plan: the time limit ran out"),
        "{}",
        r.2
    );
}
