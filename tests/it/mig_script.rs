//! The per-node MIG scripts (`mig/<node>.sh`) against a fake `nvidia-smi` on PATH
//! (`tests/fixtures/nvidia-smi/nvidia-smi`) that records every call and replays real
//! outputs (`-lgip` of an H200, the driver version of a captured `nvidia-smi -q -x`):
//! first configuration, idempotency, destroying only what must change, dry run, the
//! refuse-on-processes path, an old driver and a GPU that needs a reset.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

const CLUSTER: &str = r#"
cluster "mig-test"
node-class "h200-2x" {
    cpu sockets=1 cores-per-socket=16 threads-per-core=1
    memory "256GiB"
    gpus 2 model="h200-sxm-141gb"
}
nodes "mig-01" class="h200-2x"
pool "serve" mode="mig" nodes="mig-01"
mig {
    layout "3g.71gb" "2g.35gb" "1g.18gb*2" nodes="mig-01"
}
team "t" guarantee=2
priority "p" value=10
inference "small" team="t" priority="p" replicas=2 {
    memory "10GiB"
    isolation "mig"
}
"#;

const WANT: &str = "1g.18gb,1g.18gb,2g.35gb,3g.71gb";

struct Node {
    dir: PathBuf,
    script: PathBuf,
}

impl Node {
    fn new(tag: &str, state: &str) -> Node {
        let dir = std::env::temp_dir().join(format!("gpuplan-mig-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("kdl")).unwrap();
        std::fs::write(dir.join("kdl/cluster.kdl"), CLUSTER).unwrap();
        let out = dir.join("out");
        let r = common::command()
            .args(["--quiet", "render"])
            .arg(dir.join("kdl"))
            .args(["--target", "mig", "--out-dir"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        std::fs::write(dir.join("state.json"), state).unwrap();
        std::fs::write(dir.join("calls.log"), "").unwrap();
        Node {
            script: out.join("mig/mig-01.sh"),
            dir,
        }
    }

    /// Runs the script; returns (exit code, stdout + stderr, the nvidia-smi calls made).
    fn run(&self, args: &[&str]) -> (i32, String, Vec<String>) {
        std::fs::write(self.dir.join("calls.log"), "").unwrap();
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvidia-smi");
        let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
        let r = Command::new("sh")
            .arg(&self.script)
            .args(args)
            .env("PATH", path)
            .env("FAKE_NVSMI_STATE", self.dir.join("state.json"))
            .env("FAKE_NVSMI_LOG", self.dir.join("calls.log"))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr)
        );
        let calls = std::fs::read_to_string(self.dir.join("calls.log"))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        (r.status.code().unwrap_or(-1), text, calls)
    }

    fn state(&self) -> String {
        std::fs::read_to_string(self.dir.join("state.json")).unwrap()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Calls that change a GPU.
fn changing(calls: &[String]) -> Vec<&String> {
    calls
        .iter()
        .filter(|c| {
            ["-mig", "-cgi", "-dgi", "-dci"]
                .iter()
                .any(|f| c.split(' ').any(|w| w == *f))
        })
        .collect()
}

const FRESH: &str = r#"{"driver": "550.54.15", "gpus": {
  "0": {"mig": "Disabled", "procs": [], "gis": []},
  "1": {"mig": "Enabled", "procs": [], "gis": [[1, "3g.71gb", 4], [7, "1g.18gb", 0], [8, "1g.18gb", 1], [9, "1g.18gb", 2], [10, "1g.18gb", 3]]}}}"#;

#[test]
fn configures_then_is_a_no_op() {
    let node = Node::new("ok", FRESH);
    let (code, text, calls) = node.run(&[]);
    assert_eq!(code, 0, "{text}");
    let ch = changing(&calls);
    // GPU 0: MIG mode on, everything created largest first with compute instances.
    assert_eq!(ch[0], "-i 0 -mig 1");
    assert_eq!(ch[1], "mig -i 0 -cgi 3g.71gb,2g.35gb,1g.18gb,1g.18gb -C");
    // GPU 1: only the two surplus 1g instances go; the 3g and two 1g survive.
    assert_eq!(
        &ch[2..],
        [
            "mig -i 1 -gi 9 -dci",
            "mig -i 1 -gi 9 -dgi",
            "mig -i 1 -gi 10 -dci",
            "mig -i 1 -gi 10 -dgi",
            "mig -i 1 -cgi 2g.35gb -C",
        ]
    );
    // Read back with -lgi after the change.
    assert!(
        calls
            .iter()
            .filter(|c| c.as_str() == "mig -i 1 -lgi")
            .count()
            >= 2
    );
    assert!(
        text.contains(&format!("GPU 0: configured ({WANT})")),
        "{text}"
    );
    // Second run: nothing to do, nothing changed.
    let before = node.state();
    let (code, text, calls) = node.run(&[]);
    assert_eq!(code, 0, "{text}");
    assert!(changing(&calls).is_empty(), "{calls:?}");
    assert!(text.contains(&format!("GPU 1: as planned ({WANT})")));
    assert_eq!(node.state(), before);
}

#[test]
fn dry_run_prints_and_changes_nothing() {
    let node = Node::new("dry", FRESH);
    let (code, text, calls) = node.run(&["--dry-run"]);
    assert_eq!(code, 0, "{text}");
    assert!(changing(&calls).is_empty(), "{calls:?}");
    assert!(text.contains("would run: nvidia-smi -i 0 -mig 1"));
    assert!(text.contains("would run: nvidia-smi mig -i 1 -cgi 2g.35gb -C"));
    assert_eq!(node.state(), FRESH);
}

#[test]
fn refuses_a_gpu_with_processes_unless_forced() {
    let busy = FRESH.replacen(
        r#""procs": [], "gis": [[1"#,
        r#""procs": [4242], "gis": [[1"#,
        1,
    );
    let node = Node::new("busy", &busy);
    let (code, text, calls) = node.run(&[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("refused: GPU 1 has 1 running process"),
        "{text}"
    );
    assert!(
        !changing(&calls).iter().any(|c| c.contains("-i 1 ")),
        "{calls:?}"
    );
    // GPU 0 (idle) was still configured.
    assert!(changing(&calls).iter().any(|c| c.contains("-i 0 -cgi")));
    let (code, text, calls) = node.run(&["--force"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        changing(&calls)
            .iter()
            .any(|c| c.as_str() == "mig -i 1 -cgi 2g.35gb -C")
    );
}

#[test]
fn refuses_an_old_driver() {
    // "driver": null replays the captured `nvidia-smi -q -x` (driver 535.54.03), older
    // than R550, the first branch with MIG on H200.
    let old = FRESH.replace(r#""driver": "550.54.15""#, r#""driver": null"#);
    let node = Node::new("old", &old);
    let (code, text, calls) = node.run(&[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("driver 535.54.03 is older than R550"),
        "{text}"
    );
    assert!(changing(&calls).is_empty());
}

#[test]
fn says_when_a_reset_is_needed() {
    let pending = FRESH.replace(
        r#""driver": "550.54.15","#,
        r#""driver": "550.54.15", "reset_needed": true,"#,
    );
    let node = Node::new("reset", &pending);
    let (code, text, calls) = node.run(&[]);
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("GPU 0: MIG mode is pending: reset the GPU"),
        "{text}"
    );
    assert!(!changing(&calls).iter().any(|c| c.contains("-i 0 -cgi")));
}
