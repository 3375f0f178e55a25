//! `gpuplan init`, `gpuplan completions` and `gpuplan man` through the real binary.

use std::path::PathBuf;
use std::process::Command;

fn gpuplan(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(args)
        .env("NO_COLOR", "1")
        // No NVML here, but make sure a machine with a driver gets the same answer.
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpuplan-init-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn init_writes_a_configuration_that_validates_plans_and_is_formatted() {
    let dir = temp_dir("fresh");
    let d = dir.to_str().unwrap();
    let (rc, _, err) = gpuplan(&["init", "--no-discover", d]);
    assert_eq!(rc, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("cluster.kdl")).unwrap();
    assert!(text.contains("node-class \"hgx-h100\"") && text.contains("scheduler \"kubernetes\""));
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "# gpuplan's local state and lock (kept outside git: docs/ci.md)\n.gpuplan/\n"
    );
    let (rc, _, err) = gpuplan(&["validate", d]);
    assert_eq!(rc, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    let (rc, out, err) = gpuplan(&["plan", d]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("to add"), "{out}");
    let (rc, out, _) = gpuplan(&["fmt", "--check", d]);
    assert_eq!((rc, out.as_str()), (0, ""));

    // A second init refuses to overwrite and leaves everything as it was.
    let (rc, _, err) = gpuplan(&["init", d]);
    assert_eq!(rc, 1);
    assert!(err.contains("GP763"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("cluster.kdl")).unwrap(),
        text
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn init_without_nvml_says_so_and_keeps_an_existing_gitignore() {
    let dir = temp_dir("ignore");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".gitignore"), "target/").unwrap();
    let (rc, _, err) = gpuplan(&["init", dir.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains("no NVML"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "target/\n# gpuplan's local state and lock (kept outside git: docs/ci.md)\n.gpuplan/\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn completions_for_four_shells() {
    for (shell, marker) in [
        ("bash", "_gpuplan()"),
        ("zsh", "#compdef gpuplan"),
        ("fish", "complete -c gpuplan"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (rc, out, err) = gpuplan(&["completions", shell]);
        assert_eq!(rc, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: no `{marker}`");
        // Every subcommand is completed.
        for sub in ["plan", "apply", "fmt", "init", "import"] {
            assert!(out.contains(sub), "{shell}: `{sub}` missing");
        }
    }
    let (rc, _, _) = gpuplan(&["completions", "tcsh"]);
    assert_eq!(rc, 1);
}

#[test]
fn man_pages_for_every_subcommand() {
    let dir = temp_dir("man");
    let (rc, _, err) = gpuplan(&["man", "-o", dir.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    for page in [
        "gpuplan.1",
        "gpuplan-plan.1",
        "gpuplan-fmt.1",
        "gpuplan-init.1",
        "gpuplan-import-nvidia-smi-xml.1",
        "gpuplan-report-chargeback.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_else(|_| panic!("{page}"));
        assert!(
            text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH"),
            "{page}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
