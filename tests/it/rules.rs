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
        "# Validation rules\n\n<!-- generated from crates/core/src/validate/rules/ by tests/it/rules.rs; GPUPLAN_UPDATE=1 cargo test --test it rules:: regenerates it -->\n\n`gpuplan explain CODE` prints one rule. Warnings do not make `validate` fail.\n\n| code | name | severity | summary |\n|---|---|---|---|\n",
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
        "docs/rules.md is out of date: run GPUPLAN_UPDATE=1 cargo test --test it rules::"
    );
}

// --- MIG and sharing anti-patterns (issue 4): each rule fires where it should and only there.

const BASE: &str = r#"
node-class "hgx" {
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
}
nodes "n-[01-04]" class="hgx"
fabric {
    leaf "l1" nodes="n-[01-04]"
}
team "t" guarantee=16 burst=32
priority "high" value=100
priority "low" value=10
"#;

/// Codes raised for `BASE` plus `extra`.
fn codes_of(extra: &str) -> Vec<&'static str> {
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add("t.kdl", format!("{BASE}{extra}"));
    let outcome = validate::validate(&sources);
    let codes: Vec<&'static str> = outcome.diagnostics.iter().map(|d| d.code).collect();
    assert!(
        !codes
            .iter()
            .any(|c| ["GP001", "GP002", "GP003", "GP004", "GP005"].contains(c)),
        "test input does not decode: {codes:?}\n{extra}"
    );
    codes
}

fn raises(extra: &str, code: &str) -> bool {
    codes_of(extra).contains(&code)
}

const TRAINING: &str = r#"
training "ft" team="t" priority="high" {
    gang gpus=8
}
"#;

/// A gang near u32::MAX GPUs: GP020's suggestion of the next whole number of nodes
/// overflowed (panic with overflow checks, a wrong number without; found by
/// tests/it/bounded.rs once it ran on a binary with overflow checks).
#[test]
fn gp020_gang_near_u32_max_suggests_a_size_that_fits() {
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add(
        "t.kdl",
        format!(
            "{BASE}training \"ft\" team=\"t\" priority=\"high\" {{ gang gpus=4294967295 gpus-per-node=2 }}\n"
        ),
    );
    let outcome = validate::validate(&sources);
    let d = outcome
        .diagnostics
        .iter()
        .find(|d| d.code == "GP020")
        .expect("GP020");
    let help = d.help.as_deref().unwrap_or_default();
    assert!(help.contains("use gpus=4294967294,"), "{help}");
}

#[test]
fn gp026_training_only_on_mig_nodes() {
    let all_mig = r#"pool "m" mode="mig" nodes="n-[01-04]""#;
    assert!(raises(&format!("{all_mig}{TRAINING}"), "GP026"));
    let some_mig = r#"pool "m" mode="mig" nodes="n-[01-03]""#;
    assert!(!raises(&format!("{some_mig}{TRAINING}"), "GP026"));
    // A fixed layout makes its node a MIG node as a whole.
    let layouts = r#"mig { layout "7g.80gb" nodes="n-[01-04]" gpus="0" }"#;
    assert!(raises(&format!("{layouts}{TRAINING}"), "GP026"));
    // A current layout is today's state, not a pin.
    let current = r#"mig { layout "7g.80gb" nodes="n-[01-04]" current=#true }"#;
    assert!(!raises(&format!("{current}{TRAINING}"), "GP026"));
}

#[test]
fn gp026_layout_on_training_pool() {
    let kdl = r#"
pool "train" mode="training" nodes="n-[01-02]"
mig { layout "3g.40gb" "3g.40gb" nodes="n-02" }
"#;
    assert!(raises(kdl, "GP026"));
    assert!(!raises(kdl, "GP027"));
    assert!(!raises(
        &kdl.replace("nodes=\"n-02\"", "nodes=\"n-03\""),
        "GP026"
    ));
}

#[test]
fn gp027_layout_on_whole_gpu_or_time_slice_pool() {
    for mode in ["whole-gpu", "time-slice"] {
        let kdl = format!(
            r#"pool "p" mode="{mode}" nodes="n-[01-02]"
mig {{ layout "3g.40gb" "3g.40gb" nodes="n-01" gpus="0-3" }}"#
        );
        assert!(raises(&kdl, "GP027"), "{mode}");
        assert!(!raises(&kdl, "GP028"), "{mode}: pinned nodes are GP027's");
        let current = kdl.replace("gpus=\"0-3\"", "gpus=\"0-3\" current=#true");
        assert!(!raises(&current, "GP027"), "{mode}: current layout");
    }
    let mig_pool = r#"pool "p" mode="mig" nodes="n-[01-02]"
mig { layout "3g.40gb" "3g.40gb" nodes="n-01" gpus="0-3" }"#;
    assert!(!raises(mig_pool, "GP027"));
    assert!(
        !raises(mig_pool, "GP028"),
        "a MIG pool says every GPU is MIG"
    );
}

#[test]
fn gp028_partial_layout_is_a_warning_and_full_cover_is_silent() {
    let partial = r#"mig { layout "1g.10gb*7" nodes="n-01" gpus="0-3" }"#;
    assert!(raises(partial, "GP028"));
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add("t.kdl", format!("{BASE}{partial}"));
    assert!(
        !validate::validate(&sources).has_errors(),
        "GP028 is a warning"
    );
    let full = r#"mig {
    layout "1g.10gb*7" nodes="n-01" gpus="0-3"
    layout "7g.80gb" nodes="n-01" gpus="4-7"
}"#;
    assert!(!raises(full, "GP028"));
    assert!(!raises(
        r#"mig { layout "1g.10gb*7" nodes="n-01" }"#,
        "GP028"
    ));
}

fn dev(share: &str, per_gpu: u32, memory: &str, replicas: u32) -> String {
    format!(
        r#"dev "nb" team="t" priority="low" replicas={replicas} {{
    share "{share}" per-gpu={per_gpu}
    memory "{memory}"
}}"#
    )
}

#[test]
fn gp029_time_slice_sums_footprints_and_mps_checks_the_share() {
    assert!(
        !raises(&dev("time-slice", 4, "16GiB", 16), "GP029"),
        "64 GiB fits"
    );
    assert!(
        raises(&dev("time-slice", 8, "16GiB", 16), "GP029"),
        "128 GiB"
    );
    assert!(
        !raises(&dev("time-slice", 8, "16GiB", 2), "GP029"),
        "only 2 replicas exist to share a GPU"
    );
    assert!(
        raises(&dev("mps", 8, "16GiB", 8), "GP029"),
        "share is 10 GiB"
    );
    assert!(
        !raises(&dev("mps", 4, "16GiB", 8), "GP029"),
        "share is 20 GiB"
    );
    // One replica larger than the GPU is GP015's.
    let huge = codes_of(&dev("time-slice", 2, "100GiB", 2));
    assert!(huge.contains(&"GP015") && !huge.contains(&"GP029"));
}

#[test]
fn gp030_mps_with_mig() {
    let pool = r#"pool "m" mode="mig" nodes="n-[01-04]""#;
    assert!(raises(
        &format!("{pool}\n{}", dev("mps", 4, "8GiB", 4)),
        "GP030"
    ));
    assert!(!raises(
        &format!("{pool}\n{}", dev("time-slice", 4, "8GiB", 4)),
        "GP030"
    ));
    let some = r#"pool "m" mode="mig" nodes="n-[01-03]""#;
    assert!(!raises(
        &format!("{some}\n{}", dev("mps", 4, "8GiB", 4)),
        "GP030"
    ));
    let mps_pool = r#"pool "s" mode="mps" nodes="n-04"
mig { layout "7g.80gb" nodes="n-04" }"#;
    assert!(raises(mps_pool, "GP030"));
    assert!(!raises(mps_pool, "GP027"));
}

#[test]
fn gp012_a_current_and_a_fixed_layout_may_share_a_gpu() {
    let both = r#"mig {
    layout "1g.10gb*7" nodes="n-01" current=#true
    layout "3g.40gb" "3g.40gb" nodes="n-01"
}"#;
    assert!(!raises(both, "GP012"));
    let two_current = r#"mig {
    layout "1g.10gb*7" nodes="n-01" current=#true
    layout "3g.40gb" "3g.40gb" nodes="n-01" current=#true
}"#;
    assert!(raises(two_current, "GP012"));
}

#[test]
fn gp014_profile_newer_than_the_declared_driver() {
    let a100 = |driver: &str| {
        format!(
            r#"node-class "a40" {{
    gpus 8 model="a100-sxm4-40gb"
}}
nodes "a-01" class="a40"
fabric {{
    leaf "l2" nodes="a-01"
}}
gpu-model "a100-sxm4-40gb" driver="{driver}"
mig {{ layout "1g.10gb*4" nodes="a-01" }}
"#
        )
    };
    // 1g.10gb (two memory slices) on an A100 40GB arrived with R525.
    assert!(raises(&a100("520.61.05"), "GP014"));
    assert!(!raises(&a100("525.85.12"), "GP014"));
    // A driver older than the model's first MIG branch, with MIG in use.
    let old = r#"gpu-model "h100-sxm5-80gb" driver="470.82"
pool "m" mode="mig" nodes="n-01""#;
    assert!(raises(old, "GP014"));
    assert!(!raises(
        r#"gpu-model "h100-sxm5-80gb" driver="470.82""#,
        "GP014"
    ));
}

/// CUDA 13 dropped Volta: a class built with 13.0 may not use V100s (error when it has
/// nothing else, a warning when the planner keeps it off them), 12.8 may.
#[test]
fn gp043_cuda_13_on_volta() {
    let cfg = |cuda: &str, models: &str| {
        let mut sources = gpuplan::source::SourceMap::new();
        sources.add(
            "t.kdl",
            format!(
                r#"cluster "c" {{ scheduler "kueue"; }}
node-class "dgx1" {{
    gpus 8 model="v100-sxm2-32gb"
    nics 4 speed="100Gbps" kind="infiniband"
}}
node-class "hgx" {{
    gpus 8 model="h100-sxm5-80gb"
    nics 8 speed="400Gbps" kind="infiniband"
}}
nodes "v-[01-02]" class="dgx1"
nodes "h-[01-02]" class="hgx"
fabric {{
    leaf "l1" nodes="v-[01-02]"
    leaf "l2" nodes="h-[01-02]"
}}
team "t" guarantee=8 burst=8
priority "p" value=10
training "llm" team="t" priority="p" {{
    gang gpus=8
    cuda "{cuda}"
    {models}
}}
"#
            ),
        );
        validate::validate(&sources)
            .diagnostics
            .into_iter()
            .filter(|d| d.code == "GP043")
            .map(|d| (d.severity, d.message.clone()))
            .collect::<Vec<_>>()
    };
    let only_v100 = cfg("13.0", r#"models "v100-sxm2-32gb""#);
    assert_eq!(only_v100.len(), 1, "{only_v100:?}");
    assert_eq!(only_v100[0].0, gpuplan::diag::Severity::Error);
    assert!(only_v100[0].1.contains("12.x"), "{only_v100:?}");
    let both = cfg("13.0", "");
    assert_eq!(both.len(), 1, "{both:?}");
    assert_eq!(both[0].0, gpuplan::diag::Severity::Warning);
    assert!(cfg("12.8", "").is_empty());
}
