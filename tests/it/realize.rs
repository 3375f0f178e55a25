//! The realizability checker on rendered examples (issue 29): a render that passes
//! stops passing under each of the mutations that break a scheduler's reading of it;
//! the checker never panics on any example's files, nor on truncated ones; and the
//! `check-render` command's exit codes and JSON.
//!

use crate::common;

use crate::common::Scratch;
use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::realize::{self, Invariant, Report};
use gpuplan::render;
use gpuplan::solve::SolverKind;
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::Path;

type Files = BTreeMap<String, String>;

/// The cluster, its plan and every target's files, as `render --target all` writes them.
fn rendered(dir: &Path) -> (Cluster, Placement, Files) {
    let c = common::load_dir(dir);
    let p = common::plan(&c, SolverKind::Ilp);
    let r = render::render(&c, &p, &render::Target::ALL, &render::Options::default())
        .unwrap_or_else(|d| panic!("{}: {d:?}", dir.display()));
    (c, p, r.files)
}

fn every_fixture() -> Vec<std::path::PathBuf> {
    let mut v = common::examples();
    v.push("tests/fixtures/hetero-gb200-h100".into());
    // Nodes with GPUs of two models (one GRES type each).
    v.push("tests/fixtures/mixed-gpus".into());
    v
}

/// Applies `f` to the Kubernetes workload object of `class` under `folder` (the YAML
/// is read and written again, so the mutation does not depend on the layout).
fn mutate(files: &mut Files, folder: &str, class: &str, f: impl Fn(&mut Value)) {
    let yaml = |p: &String| p.starts_with(folder) && p.ends_with(".yaml");
    for (_, text) in files.iter_mut().filter(|(p, _)| yaml(p)) {
        let mut docs: Vec<Value> = serde_yaml::Deserializer::from_str(text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let hit = docs.iter_mut().find(|d| {
            let kind = d["kind"].as_str().unwrap_or("");
            (kind == "Deployment" || kind == "Job")
                && d["metadata"]["labels"]["gpuplan.io/class"].as_str() == Some(class)
        });
        if let Some(d) = hit {
            f(d);
            let parts: Vec<String> = docs
                .iter()
                .map(|d| serde_yaml::to_string(d).unwrap())
                .collect();
            *text = parts.join("---\n");
            return;
        }
    }
    panic!("no workload object of class {class} under {folder}");
}

/// The pod template's spec of a Deployment or batch Job.
fn pod_spec(v: &mut Value) -> &mut Value {
    &mut v["spec"]["template"]["spec"]
}

fn container_limits(v: &mut Value) -> &mut Value {
    &mut pod_spec(v)["containers"][0]["resources"]["limits"]
}

fn fires(r: &Report, inv: Invariant, text: &str) -> bool {
    r.violations
        .iter()
        .any(|v| v.invariant == inv && v.message.contains(text))
}

#[test]
fn mutations_of_a_rendered_example_are_detected() {
    let (c, p, base) = rendered(Path::new("examples/small-lab"));
    let check = |f: &Files| realize::check(f, &c, &p);
    let ok = check(&base);
    assert!(
        ok.realizable,
        "small-lab is realizable today:\n{}",
        realize::view::human(&ok)
    );

    // A toleration dropped: the pool taint is no longer tolerated.
    let mut f = base.clone();
    mutate(&mut f, "k8s/", "notebooks", |v| {
        pod_spec(v)["tolerations"] = Value::Sequence(vec![])
    });
    let r = check(&f);
    assert!(
        fires(&r, Invariant::Carried, "does not tolerate taint"),
        "{}",
        realize::view::human(&r)
    );

    // A team's quota halved.
    let mut f = base.clone();
    halve_quotas(&mut f);
    let r = check(&f);
    assert!(
        fires(&r, Invariant::Quota, "the quota allows"),
        "{}",
        realize::view::human(&r)
    );

    // A whole GPU asked for a fractional (time-sliced) replica.
    let mut f = base.clone();
    mutate(&mut f, "k8s/", "notebooks", |v| {
        *container_limits(v) = serde_yaml::from_str("{nvidia.com/gpu: 1}").unwrap();
        pod_spec(v)["containers"][0]["resources"]["requests"] = Value::Null;
    });
    let r = check(&f);
    assert!(
        fires(
            &r,
            Invariant::Carried,
            "asks nvidia.com/gpu: 1 where the plan gives nvidia.com/gpu.shared: 1"
        ),
        "{}",
        realize::view::human(&r)
    );

    // The wrong GPU model pinned.
    let mut f = base.clone();
    mutate(&mut f, "k8s/", "lora-finetune", |v| {
        pod_spec(v)["nodeSelector"] =
            serde_yaml::from_str("{gpuplan.io/gpu-model: h100-sxm5-80gb}").unwrap();
    });
    let r = check(&f);
    assert!(
        fires(
            &r,
            Invariant::Carried,
            "does not select lab-1: `gpuplan.io/gpu-model`"
        ),
        "{}",
        realize::view::human(&r)
    );

    // A workload object removed.
    let mut f = base.clone();
    remove_deployment(&mut f, "notebooks");
    let r = check(&f);
    assert!(
        fires(
            &r,
            Invariant::Coverage,
            "class `notebooks` has 16 planned unit(s) and no object"
        ),
        "{}",
        realize::view::human(&r)
    );

    // A Deployment's replicas raised.
    let mut f = base.clone();
    mutate(&mut f, "k8s/", "notebooks", |v| {
        v["spec"]["replicas"] = Value::from(17)
    });
    let r = check(&f);
    assert!(
        fires(&r, Invariant::Excess, "the plan gives it 16"),
        "{}",
        realize::view::human(&r)
    );
}

/// Every team's quota in `k8s/resourcequotas.yaml` halved.
fn halve_quotas(f: &mut Files) {
    let quotas = f.get_mut("k8s/resourcequotas.yaml").unwrap();
    let halved: Vec<String> = serde_yaml::Deserializer::from_str(quotas)
        .map(|d| {
            let mut v: Value = serde::Deserialize::deserialize(d).unwrap();
            if let Some(hard) = v["spec"]["hard"].as_mapping_mut() {
                for (_, q) in hard.iter_mut() {
                    let n: u64 = q.as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
                    *q = Value::String((n / 2).to_string());
                }
            }
            serde_yaml::to_string(&v).unwrap()
        })
        .collect();
    *quotas = halved.join("---\n");
}

/// The Deployment of class `class` removed.
fn remove_deployment(f: &mut Files, class: &str) {
    let path = f
        .iter()
        .find(|(p, t)| {
            p.starts_with("k8s/")
                && (t.contains(&format!("gpuplan.io/class: {class}"))
                    || t.contains(&format!("gpuplan.io/class: \"{class}\"")))
                && t.contains("kind: Deployment")
        })
        .map(|(p, _)| p.clone())
        .unwrap();
    f.remove(&path);
}

/// Every example and fixture, rendered with `--target all`, is realizable.
#[test]
fn every_example_is_realizable() {
    let mut failed = Vec::new();
    for dir in every_fixture() {
        let (c, p, files) = rendered(&dir);
        let r = realize::check(&files, &c, &p);
        if !r.realizable {
            failed.push(format!("{}:\n{}", dir.display(), realize::view::human(&r)));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_checker_never_panics_on_rendered_or_truncated_files() {
    for dir in every_fixture() {
        let (c, p, files) = rendered(&dir);
        let r = realize::check(&files, &c, &p);
        assert_eq!(r.cluster, c.name);
        assert!(!r.checked.is_empty(), "{}", dir.display());
        // Every file cut in the middle, one at a time: a parse violation or a
        // realizability violation, never a panic.
        for (path, text) in &files {
            let mut cut = files.clone();
            let at = (0..=text.len() / 2)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            cut.insert(path.clone(), text[..at].to_string());
            let _ = realize::check(&cut, &c, &p);
        }
    }
}

#[test]
fn check_render_exit_codes_and_json() {
    let s = Scratch::new("check-render");
    s.copy_in("examples/small-lab", "cfg");
    let (rc, _, err) = s.run(&["render", "cfg", "--out-dir", "out"]);
    assert_eq!(rc, 0, "{err}");
    // Realizable: exit 0, the verdict on stdout.
    let (rc, out, err) = s.run(&["check-render", "out", "cfg"]);
    assert_eq!(rc, 0, "{out}{err}");
    assert!(
        out.contains("realizable: the rendered files carry out the plan"),
        "{out}"
    );
    // A saved plan is reopened, not planned again.
    let (rc, _, err) = s.run(&["plan", "cfg", "-o", "plan.json"]);
    assert_eq!(rc, 0, "{err}");
    let (rc, out, err) = s.run(&["check-render", "out", "plan.json", "--format", "json"]);
    assert_eq!(rc, 0, "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["realizable"], true);
    assert_eq!(j["format_version"], "1");
    assert_eq!(j["checked"]["k8s"]["units"], 17);
    // A whole GPU for a shared replica: exit 1, the violation in the JSON.
    let path = "out/k8s/workloads/notebooks.yaml";
    let text = s
        .read(path)
        .replace("nvidia.com/gpu.shared", "nvidia.com/gpu");
    s.write(path, text);
    let (rc, out, _) = s.run(&["check-render", "out", "cfg", "--format", "json"]);
    assert_eq!(rc, 1);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["realizable"], false);
    let v = j["violations"].as_array().unwrap();
    assert!(
        v.iter().any(|v| v["invariant"] == "carried"
            && v["target"] == "k8s"
            && v["file"] == "k8s/workloads/notebooks.yaml"),
        "{out}"
    );
    // A file that does not parse: GP933 on stderr, a parse violation on stdout.
    s.write("out/k8s/broken.yaml", "kind: [\n");
    let (rc, out, err) = s.run(&["check-render", "out", "cfg"]);
    assert_eq!(rc, 1);
    assert!(
        err.contains("GP933") && out.contains("parse: k8s/broken.yaml"),
        "{out}{err}"
    );
    // No folder, or a link in it: GP932, exit 1.
    let (rc, _, err) = s.run(&["check-render", "missing", "cfg"]);
    assert_eq!(rc, 1);
    assert!(err.contains("GP932"), "{err}");
    std::os::unix::fs::symlink("/etc/hostname", s.path("out/k8s/link.yaml")).unwrap();
    let (rc, _, err) = s.run(&["check-render", "out", "cfg"]);
    assert_eq!(rc, 1);
    assert!(err.contains("GP932") && err.contains("link"), "{err}");
}

proptest::proptest! {
    #![proptest_config(common::proptest_config(256))]

    /// Random clusters (`common::arb`: gangs, MIG, time-slice, whole-GPU and packed
    /// inference with fractions and requests, spot capacity, every node owned by Kueue,
    /// Volcano or Slurm, or none declared) planned by the ILP and rendered for every
    /// target: the files carry out the plan. Without a declared scheduler, fractions the
    /// device plugin cannot share as planned are left out of the Kubernetes targets
    /// (GP919): only those may be missing there.
    #[test]
    fn random_clusters_render_realizably(s in common::arb::spec()) {
        let text = common::arb::kdl(&s);
        let mut sources = gpuplan::source::SourceMap::new();
        sources.add("prop.kdl", text.clone());
        let c = common::try_load(&sources);
        proptest::prop_assume!(c.is_ok());
        let c = c.expect("valid");
        let p = common::plan(&c, SolverKind::Ilp);
        let r = render::render(&c, &p, &render::Target::ALL, &render::Options::default())
            .unwrap_or_else(|d| panic!("{text}\n{d:?}"));
        // The classes a Kubernetes target left out (GP919: "replicas of `name` on ..."),
        // and whether Slurm said it cannot carry the plan (GP919 "target `slurm` ...").
        let uncarried: Vec<String> = r
            .warnings
            .iter()
            .filter(|d| d.code == "GP919" && !d.message.starts_with("target `slurm`"))
            .filter_map(|d| d.message.split('`').nth(3).map(String::from))
            .collect();
        let slurm_short = r
            .warnings
            .iter()
            .any(|d| d.code == "GP919" && d.message.starts_with("target `slurm`"));
        proptest::prop_assert!(
            (uncarried.is_empty() && !slurm_short) || !c.authorities_declared(),
            "GP919 with a declared scheduler: {uncarried:?}"
        );
        let report = realize::check(&r.files, &c, &p);
        let left_out = |v: &realize::Violation| {
            (slurm_short
                && v.target == realize::Target::Slurm
                && v.invariant == Invariant::Capacity
                && v.message.contains("CPUs"))
                || !matches!(v.target, realize::Target::Slurm | realize::Target::Mig)
                    && uncarried
                    .iter()
                    .any(|n| v.message.contains(n.as_str()) || v.object == format!("class/{n}"))
        };
        let real: Vec<&realize::Violation> =
            report.violations.iter().filter(|v| !left_out(v)).collect();
        proptest::prop_assert!(
            real.is_empty(),
            "{text}\n{}\n{:#?}",
            realize::view::human(&report),
            uncarried
        );
    }
}
