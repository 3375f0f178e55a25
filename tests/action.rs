//! The GitHub composite action's scripts (action/*.sh) run locally against a fake GitHub
//! environment: `GITHUB_*` variables, an event file, and a fake `curl` on PATH that
//! records every call and answers the comment listing from a file. Checks what the
//! scripts would post, the step outputs, and an apply of the planned artifact.
//! Skipped (with a message) where bash or jq is missing; `.ci/run` installs jq.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A fake GitHub runner: a workspace, bin/ with `gpuplan` and a recording `curl`.
struct Runner {
    dir: PathBuf,
}

const FAKE_CURL: &str = r#"#!/usr/bin/env bash
# Records the call (method, URL, data) and answers GETs from $FAKE_GITHUB/comments.json.
method=GET; url=""; data=""
while [ $# -gt 0 ]; do
  case "$1" in
    -X) method=$2; shift 2 ;;
    -d) data=$2; shift 2 ;;
    -H) shift 2 ;;
    -*) shift ;;
    *) url=$1; shift ;;
  esac
done
n=$(find "$FAKE_GITHUB/calls" -type f | wc -l)
printf '%s %s\n%s' "$method" "$url" "$data" > "$FAKE_GITHUB/calls/$n"
if [ "$method" = GET ]; then cat "$FAKE_GITHUB/comments.json"; else echo '{"id": 99}'; fi
"#;

impl Runner {
    fn new(tag: &str) -> Runner {
        let dir = std::env::temp_dir().join(format!("gpuplan-action-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["bin", "calls", "work", "tmp"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpuplan"), dir.join("bin/gpuplan")).unwrap();
        std::fs::write(dir.join("bin/curl"), FAKE_CURL).unwrap();
        Command::new("chmod")
            .args(["+x", dir.join("bin/curl").to_str().unwrap()])
            .status()
            .unwrap();
        std::fs::write(
            dir.join("event.json"),
            r#"{"pull_request": {"number": 42}}"#,
        )
        .unwrap();
        std::fs::write(dir.join("comments.json"), "[]").unwrap();
        std::fs::write(dir.join("output"), "").unwrap();
        std::fs::write(dir.join("summary"), "").unwrap();
        Runner { dir }
    }

    fn script(&self, name: &str, env: &[(&str, &str)]) -> std::process::Output {
        let path = format!(
            "{}:{}",
            self.dir.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("action").join(name))
            .current_dir(self.dir.join("work"))
            .env("PATH", path)
            .env("GITHUB_ACTION_PATH", root())
            .env("GITHUB_OUTPUT", self.dir.join("output"))
            .env("GITHUB_STEP_SUMMARY", self.dir.join("summary"))
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", self.dir.join("event.json"))
            .env("GITHUB_REPOSITORY", "acme/gpus")
            .env("GITHUB_API_URL", "https://api.example.invalid")
            .env("GITHUB_TOKEN", "t0ken")
            .env("RUNNER_TEMP", self.dir.join("tmp"))
            .env("FAKE_GITHUB", &self.dir)
            .env("NO_COLOR", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn outputs(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(self.dir.join("output"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn output(&self, key: &str) -> String {
        self.outputs()
            .into_iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    /// Recorded curl calls: (method and URL, data).
    fn calls(&self) -> Vec<(String, String)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.dir.join("calls"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort_by_key(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse::<u32>().ok())
        });
        files
            .iter()
            .map(|f| {
                let t = std::fs::read_to_string(f).unwrap();
                let (head, data) = t.split_once('\n').unwrap_or((&t, ""));
                (head.to_string(), data.to_string())
            })
            .collect()
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ready() -> bool {
    if have("bash") && have("jq") {
        return true;
    }
    eprintln!("skipped: bash and jq are needed to run the action's scripts (.ci/run installs jq)");
    false
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

fn plan(r: &Runner, path: &str) -> std::process::Output {
    r.script(
        "plan.sh",
        &[
            ("INPUT_PATH", path),
            ("INPUT_PLAN_FILE", "plan.json"),
            ("INPUT_STATE", ".gpuplan/state.json"),
        ],
    )
}

#[test]
fn plan_posts_one_comment_and_apply_lands_the_artifact() {
    if !ready() {
        return;
    }
    let r = Runner::new("flow");
    let lab = example("small-lab");
    let out = plan(&r, &lab);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Outputs: changes on a first plan, the summary line, the files.
    assert_eq!(r.output("exitcode"), "2");
    assert_eq!(r.output("has-changes"), "true");
    assert!(
        r.output("summary").starts_with("Plan: "),
        "{:?}",
        r.outputs()
    );
    let work = r.dir.join("work");
    assert!(work.join("plan.json").is_file() && work.join("plan.txt").is_file());
    let html = std::fs::read_to_string(work.join("plan.html")).expect("the HTML report");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(r.output("html-file"), "plan.html");
    let comment = r.output("comment-file");
    let body = std::fs::read_to_string(&comment).unwrap();
    assert!(
        body.starts_with(&format!("<!-- gpuplan-plan: {lab} -->\n")),
        "{body}"
    );
    assert!(
        body.contains("**Plan: ") && body.contains("```diff"),
        "{body}"
    );
    assert!(
        body.contains("lora-finetune"),
        "the human plan is in the comment"
    );
    let summary = std::fs::read_to_string(r.dir.join("summary")).unwrap();
    assert_eq!(summary, body, "the job summary shows the plan too");

    // No earlier comment: one POST on the pull request, the body as JSON.
    let out = r.script("comment.sh", &[("INPUT_COMMENT_FILE", &comment)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = r.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[0].0,
        "GET https://api.example.invalid/repos/acme/gpus/issues/42/comments?per_page=100"
    );
    assert_eq!(
        calls[1].0,
        "POST https://api.example.invalid/repos/acme/gpus/issues/42/comments"
    );
    let posted: serde_json::Value = serde_json::from_str(&calls[1].1).unwrap();
    assert_eq!(posted["body"].as_str().unwrap(), body);

    // A later push: the earlier comment (same marker) is updated, not duplicated.
    let listing = serde_json::json!([
        {"id": 5, "body": "an unrelated review comment"},
        {"id": 7, "body": format!("<!-- gpuplan-plan: {lab} -->\nold plan")},
    ]);
    std::fs::write(r.dir.join("comments.json"), listing.to_string()).unwrap();
    let out = r.script("comment.sh", &[("INPUT_COMMENT_FILE", &comment)]);
    assert!(out.status.success());
    let calls = r.calls();
    assert_eq!(
        calls.last().unwrap().0,
        "PATCH https://api.example.invalid/repos/acme/gpus/issues/comments/7"
    );

    // After merge: apply the artifact; the rendered files land in the output folder.
    let out = r.script(
        "apply.sh",
        &[
            ("INPUT_PLAN_FILE", "plan.json"),
            ("INPUT_STATE", ".gpuplan/state.json"),
            ("INPUT_OUT_DIR", "out"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(work.join("out/k8s/nodes.yaml").is_file());
    assert!(work.join(".gpuplan/state.json").is_file());

    // Planning again against that state: no changes, exit code 0.
    let out = plan(&r, &lab);
    assert!(out.status.success());
    assert_eq!(r.output("exitcode"), "0");
    assert_eq!(r.output("has-changes"), "false");
}

#[test]
fn a_failing_plan_fails_the_step_with_the_diagnostics_in_the_comment() {
    if !ready() {
        return;
    }
    let r = Runner::new("fail");
    let bad = r.dir.join("bad.kdl");
    std::fs::write(
        &bad,
        "node-class \"x\" {\n    gpus 8 model=\"no-such-gpu\"\n}\n",
    )
    .unwrap();
    let out = plan(&r, bad.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(r.output("exitcode"), "1");
    let body = std::fs::read_to_string(r.output("comment-file")).unwrap();
    assert!(
        body.contains("gpuplan plan failed") && body.contains("GP0"),
        "{body}"
    );
}

#[test]
fn apply_without_the_artifact_says_what_is_missing() {
    if !ready() {
        return;
    }
    let r = Runner::new("noart");
    let out = r.script("apply.sh", &[("INPUT_PLAN_FILE", "plan.json")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("download the plan artifact"));
}

#[test]
fn action_and_pre_commit_definitions_name_existing_scripts_and_commands() {
    let action: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root().join("action.yml")).unwrap()).unwrap();
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    for s in steps {
        if let Some(run) = s["run"].as_str() {
            let script = run
                .split('"')
                .find(|p| p.starts_with("$GITHUB_ACTION_PATH/"))
                .unwrap()
                .trim_start_matches("$GITHUB_ACTION_PATH/");
            assert!(Path::new(&root().join(script)).is_file(), "{script}");
        }
    }
    let hooks: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap(),
    )
    .unwrap();
    let hooks = hooks.as_sequence().unwrap();
    assert!(hooks.len() >= 2);
    for h in hooks {
        let entry = h["entry"].as_str().unwrap();
        let mut words = entry.split_whitespace();
        assert_eq!(words.next(), Some("gpuplan"));
        let sub = words.next().unwrap();
        // Each hook's subcommand exists (its --help succeeds).
        let ok = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
            .args([sub, "--help"])
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "{entry}");
    }
}
