//! The GitHub composite action's scripts (action/*.sh) run locally against a fake GitHub
//! environment: `GITHUB_*` variables, an event file, and a fake `curl` on PATH that
//! records every call and answers the comment listing from a file. Checks what the
//! scripts would post, the step outputs, and an apply of the planned artifact.
//! Skipped (with a message) where bash or jq is missing; `.ci/run` installs jq.

use crate::common;

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
# Records the call (method, URL, data) and answers GETs of the comment listing: page N
# (`&page=N`) from $FAKE_GITHUB/comments-page-N.json when it exists, page 1 otherwise
# from $FAKE_GITHUB/comments.json, any later page with `[]`.
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
if [ "$method" = GET ]; then
  page=1
  case "$url" in *[?\&]page=*) page=${url##*page=}; page=${page%%&*} ;; esac
  if [ -f "$FAKE_GITHUB/comments-page-$page.json" ]; then
    cat "$FAKE_GITHUB/comments-page-$page.json"
  elif [ "$page" = 1 ]; then
    cat "$FAKE_GITHUB/comments.json"
  else
    echo '[]'
  fi
else
  echo '{"id": 99}'
fi
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
            .env("GITHUB_WORKSPACE", &self.dir)
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
    common::missing("bash and jq are needed to run the action's scripts (.ci/run installs jq)");
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

    comments_posted_then_updated(&r, &lab, &comment, &body);

    // After merge: apply the artifact; the rendered files land in the output folder.
    let out = r.script(
        "apply.sh",
        &[
            ("INPUT_PATH", lab.as_str()),
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

/// No earlier comment: one POST on the pull request, the body as JSON; a later push
/// updates the earlier comment (same marker) instead of adding one.
fn comments_posted_then_updated(r: &Runner, lab: &str, comment: &str, body: &str) {
    let out = r.script("comment.sh", &[("INPUT_COMMENT_FILE", comment)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = r.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[0].0,
        "GET https://api.example.invalid/repos/acme/gpus/issues/42/comments?per_page=100&page=1"
    );
    assert_eq!(
        calls[1].0,
        "POST https://api.example.invalid/repos/acme/gpus/issues/42/comments"
    );
    let posted: serde_json::Value = serde_json::from_str(&calls[1].1).unwrap();
    assert_eq!(posted["body"].as_str().unwrap(), body);

    // A later push: the earlier comment (same marker) is updated, not duplicated.
    let listing = serde_json::json!([
        {"id": 5, "user": {"login": "alice"}, "body": "an unrelated review comment"},
        {"id": 7, "user": {"login": "github-actions[bot]"},
         "body": format!("<!-- gpuplan-plan: {lab} -->\nold plan")},
    ]);
    std::fs::write(r.dir.join("comments.json"), listing.to_string()).unwrap();
    let out = r.script("comment.sh", &[("INPUT_COMMENT_FILE", comment)]);
    assert!(out.status.success());
    let calls = r.calls();
    assert_eq!(
        calls.last().unwrap().0,
        "PATCH https://api.example.invalid/repos/acme/gpus/issues/comments/7"
    );
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

/// The lines of a comment body outside its plan fence, checking the frame on the way:
/// the marker, the heading, the `details` block, one code fence (CommonMark: closed by
/// the first line of at least as many backticks and nothing else) ending the block.
fn frame(body: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = body.lines().collect();
    let open = lines
        .iter()
        .position(|l| l.starts_with("```") && l.trim_start_matches('`') == "diff")
        .unwrap_or_else(|| panic!("no plan fence: {body}"));
    let n = lines[open].len() - "diff".len();
    let closes = |l: &&str| {
        let indent = l.len() - l.trim_start_matches(' ').len();
        let t = l.trim();
        indent <= 3 && t.len() >= n && t.chars().all(|c| c == '`')
    };
    let close = open
        + 1
        + lines[open + 1..]
            .iter()
            .position(closes)
            .unwrap_or_else(|| panic!("the fence is never closed: {body}"));
    assert_eq!(
        &lines[close + 1..],
        &["", "</details>"],
        "the fence closes early: {body}"
    );
    let mut outside: Vec<&str> = lines[..open].to_vec();
    outside.extend(&lines[close..]);
    (outside, lines[open + 1..close].to_vec())
}

/// What a GitHub runner takes as workflow commands in a log (`::name ...::` or the
/// legacy `##[name]` at the start of a line, after whitespace), honouring
/// `::stop-commands::TOKEN` ... `::TOKEN::`. Panics when the log is left stopped.
fn workflow_commands(log: &str) -> Vec<String> {
    let mut stopped: Option<String> = None;
    let mut commands = Vec::new();
    for line in log.lines() {
        let t = line.trim();
        if let Some(token) = &stopped {
            if t == format!("::{token}::") {
                stopped = None;
                commands.push("resume".to_string());
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("::") {
            let name = rest.split([' ', ':']).next().unwrap_or_default();
            if let Some(token) = rest.strip_prefix("stop-commands::") {
                assert!(
                    token.len() >= 16,
                    "a guessable stop-commands token: {token}"
                );
                stopped = Some(token.to_string());
            }
            commands.push(name.to_string());
        } else if let Some(rest) = t.strip_prefix("##[") {
            commands.push(rest.split(']').next().unwrap_or_default().to_string());
        }
    }
    assert!(stopped.is_none(), "commands are left stopped: {log}");
    commands
}

fn no_controls(what: &str, text: &str) {
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what} carries control characters or escape sequences: {text:?}"
    );
}

#[test]
fn forged_paths_and_fences_cannot_escape_the_comment_frame() {
    if !ready() {
        return;
    }
    let r = Runner::new("forge");
    // A file name with a newline and a code fence (diagnostics quote it), a message
    // quoting a longer backtick run, and a configuration path that tries to close the
    // marker and add a heading, a mention and HTML.
    let cfg = r.dir.join("cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    let evil = "evil\n```\n## Approved by @admins <img src=x onerror=alert(1)>\n.kdl";
    std::fs::write(
        cfg.join(evil),
        "node-class \"x\" {\n    gpus 8 model=\"a\\n````\\n# Forged @admins <b>x</b>\"\n}\n",
    )
    .unwrap();
    let path = format!(
        "{}\n-->\n## No changes @admins <img src=x>\n`code` <!--",
        cfg.display()
    );
    let out = plan(&r, &path);
    assert_eq!(out.status.code(), Some(1));
    let body = std::fs::read_to_string(r.output("comment-file")).unwrap();
    let (outside, inside) = frame(&body);
    // The marker and the heading are one line each, the path percent-encoded.
    let marker = outside[0];
    let key = marker
        .strip_prefix("<!-- gpuplan-plan: ")
        .and_then(|m| m.strip_suffix(" -->"))
        .unwrap_or_else(|| panic!("{body}"));
    assert!(!key.contains(['<', '>', '`', '@']), "{body}");
    let heading = outside[1];
    assert!(heading.starts_with("### gpuplan plan failed: `"), "{body}");
    assert_eq!(heading.matches('`').count(), 2, "{body}");
    assert!(!heading.contains(['<', '>', '@']), "{body}");
    for l in &outside[2..] {
        assert!(
            [
                "",
                "<details><summary>Show the plan</summary>",
                "</details>"
            ]
            .contains(l)
                || l.starts_with("```"),
            "a forged line outside the plan fence: {l:?} in {body}"
        );
    }
    // The diagnostic itself is still there, inside the fence.
    assert!(inside.iter().any(|l| l.contains("GP006")), "{body}");
    let summary = std::fs::read_to_string(r.dir.join("summary")).unwrap();
    assert_eq!(summary, body, "the job summary is the same safe body");
}

#[test]
fn workflow_commands_and_escape_sequences_never_reach_the_log() {
    if !ready() {
        return;
    }
    let r = Runner::new("cmds");
    let bad = r.dir.join("bad.kdl");
    std::fs::write(
        &bad,
        "node-class \"x\" {\n    gpus 8 model=\"a\\n::warning file=x::boom\\n  ::add-mask::t0ken\\n\
         ::set-output name=x::y\\n::stop-commands::abc\\n##[error]legacy\\u{1b}[2J\\u{1b}]0;t\\u{7}\\r\"\n}\n",
    )
    .unwrap();
    let out = plan(&r, bad.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (what, log) in [("stdout", &stdout), ("stderr", &stderr)] {
        let commands = workflow_commands(log);
        assert!(
            commands
                .iter()
                .all(|c| c == "stop-commands" || c == "resume"),
            "{what} issues workflow commands {commands:?}: {log}"
        );
        no_controls(what, log);
    }
    assert!(
        stderr.contains("GP006"),
        "the diagnostics are in the log: {stderr}"
    );
    let body = std::fs::read_to_string(r.output("comment-file")).unwrap();
    no_controls("the comment", &body);
    no_controls(
        "the job summary",
        &std::fs::read_to_string(r.dir.join("summary")).unwrap(),
    );
}

#[test]
fn diagnostics_of_files_outside_the_configuration_are_not_posted() {
    if !ready() {
        return;
    }
    let r = Runner::new("outside");
    // A configuration file that is a link to a file outside the configuration: its
    // syntax errors would quote it.
    let cfg = r.dir.join("cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(r.dir.join("secret.txt"), "SECRET-VALUE-123 {\n").unwrap();
    std::os::unix::fs::symlink("../secret.txt", cfg.join("leak.kdl")).unwrap();
    let out = plan(&r, cfg.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1));
    let body = std::fs::read_to_string(r.output("comment-file")).unwrap();
    let summary = std::fs::read_to_string(r.dir.join("summary")).unwrap();
    for (what, text) in [
        ("the comment", body.clone()),
        ("the job summary", summary),
        ("stdout", String::from_utf8_lossy(&out.stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(&out.stderr).into_owned()),
    ] {
        assert!(
            !text.contains("SECRET-VALUE"),
            "{what} quotes the outside file: {text}"
        );
    }
    // gpuplan refuses the link itself (GP000) and the action posts no excerpt either way.
    assert!(
        body.contains("outside the configuration not shown") || body.contains("symbolic link"),
        "{body}"
    );

    // Inside the configuration: code, file, line, column and message, no source excerpt.
    std::fs::remove_file(cfg.join("leak.kdl")).unwrap();
    std::fs::write(
        cfg.join("bad.kdl"),
        "node-class \"x\" {\n    gpus 8 model=\"no-such-gpu\"\n}\n",
    )
    .unwrap();
    let out = plan(&r, cfg.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1));
    let body = std::fs::read_to_string(r.output("comment-file")).unwrap();
    assert!(
        body.contains("GP006")
            && body.contains("bad.kdl:2:12")
            && body.contains("unknown GPU model `no-such-gpu`"),
        "{body}"
    );
    assert!(!body.contains("gpus 8 model="), "a source excerpt: {body}");
}

#[test]
fn only_the_actions_own_comment_is_updated_across_all_pages() {
    if !ready() {
        return;
    }
    let r = Runner::new("pages");
    let out = plan(&r, &example("small-lab"));
    assert!(out.status.success());
    let comment = r.output("comment-file");
    let marker = std::fs::read_to_string(&comment)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let forged = format!("{marker}\nforged plan: No changes");
    // Page 1: a hundred comments of others, the first carrying the marker; page 2: the
    // action's own comment.
    let page1: Vec<serde_json::Value> = (0..100)
        .map(|i| {
            let text = if i == 0 {
                forged.clone()
            } else {
                format!("review {i}")
            };
            serde_json::json!({"id": 1000 + i, "user": {"login": "mallory"}, "body": text})
        })
        .collect();
    let page2 = serde_json::json!([
        {"id": 4242, "user": {"login": "github-actions[bot]"}, "body": format!("{marker}\nold plan")},
    ]);
    std::fs::write(
        r.dir.join("comments-page-1.json"),
        serde_json::Value::from(page1).to_string(),
    )
    .unwrap();
    std::fs::write(r.dir.join("comments-page-2.json"), page2.to_string()).unwrap();
    let out = r.script("comment.sh", &[("INPUT_COMMENT_FILE", &comment)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = r.calls();
    assert_eq!(
        calls.last().unwrap().0,
        "PATCH https://api.example.invalid/repos/acme/gpus/issues/comments/4242",
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.0.ends_with("per_page=100&page=2")),
        "{calls:?}"
    );

    // Only a forged comment: a new comment, the forged one left alone.
    std::fs::remove_file(r.dir.join("comments-page-2.json")).unwrap();
    let out = r.script("comment.sh", &[("INPUT_COMMENT_FILE", &comment)]);
    assert!(out.status.success());
    let calls = r.calls();
    assert_eq!(
        calls.last().unwrap().0,
        "POST https://api.example.invalid/repos/acme/gpus/issues/42/comments",
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.0.contains("comments/1000")),
        "{calls:?}"
    );

    // Another identity (a GitHub App): its comment is the one updated.
    std::fs::write(
        r.dir.join("comments-page-2.json"),
        serde_json::json!([
            {"id": 4343, "user": {"login": "gpuplan-app[bot]"}, "body": format!("{marker}\nold")},
        ])
        .to_string(),
    )
    .unwrap();
    let out = r.script(
        "comment.sh",
        &[
            ("INPUT_COMMENT_FILE", &comment),
            ("INPUT_COMMENT_AUTHOR", "gpuplan-app[bot]"),
        ],
    );
    assert!(out.status.success());
    assert_eq!(
        r.calls().last().unwrap().0,
        "PATCH https://api.example.invalid/repos/acme/gpus/issues/comments/4343"
    );
}
