//! Issue 29: a plan that destroys instances of a declared current MIG layout (`mig
//! layout ... current=#true`) disrupts whoever uses them, and gpuplan does not know who
//! (pods it does not manage may). The disruption section names the node, GPU and
//! profiles destroyed, says the users are unknown, counts every destroyed instance
//! (summary line, `mig_instances_destroyed`), and the rollout takes the node; with
//! nothing to report it says what it compared.

use crate::common::Scratch;

/// One node of two H100s; `current` is its MIG block, then a MIG class of `replicas`
/// 30 GiB replicas (a 3g.40gb each).
fn cluster(current: &str, replicas: u32) -> String {
    format!(
        r#"
cluster "mig"
node-class "box" {{
    cpu sockets=1 cores-per-socket=8 threads-per-core=1
    memory "256GiB"
    gpus 2 model="h100-sxm5-80gb"
}}
nodes "m-1" class="box"
fabric {{
    leaf "l0" nodes="m-1"
}}
team "t" guarantee=0 burst=16
priority "p" value=1
{current}
inference "mid" team="t" priority="p" replicas={replicas} {{
    memory "30GiB"
    isolation "mig"
}}
"#
    )
}

const SEVEN_1G: &str = r#"mig { layout "1g.10gb*7" nodes="m-1" current=#true }"#;

/// `gpuplan plan c.kdl` as text and as JSON, in a scratch folder named after `tag`.
fn plan(tag: &str, kdl: &str) -> (String, serde_json::Value) {
    let dir = Scratch::new(tag);
    dir.write("c.kdl", kdl);
    let (code, text, err) = dir.run(&["plan", "c.kdl"]);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = dir.run(&["plan", "c.kdl", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    (text, serde_json::from_str(&json).unwrap())
}

#[test]
fn issue29_destroying_a_current_layout_is_a_disruption_with_unknown_users() {
    // Two 3g.40gb replicas: one GPU keeps its seven 1g.10gb, the other is reconfigured.
    let (text, v) = plan("issue29-destroyed", &cluster(SEVEN_1G, 2));
    assert!(!text.contains("no running work is disrupted"), "{text}");
    assert!(!text.contains("none known"), "{text}");
    for want in [
        "1 node disrupted, 7 MIG instances destroyed (7 with unknown users)",
        "m-1 GPU 1 (h100-sxm5-80gb): 1g.10gb*7 -> 3g.40gb*2",
        "keeps none; destroys 1g.10gb*7; creates 3g.40gb*2; needs drain",
        "users unknown: the current layout is declared (`current=#true`), not applied by gpuplan; workloads gpuplan does not manage may be using the destroyed instances",
        "m-1 (pool mig, drain): GPU 1: MIG 1g.10gb*7 -> 3g.40gb*2; destroys 1g.10gb*7 of the current layout (users unknown)",
        "batch 1: m-1",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let d = &v["disruption"];
    assert_eq!(d["mig_instances_destroyed"], 7, "{d:#}");
    let mig = d["mig"].as_array().unwrap();
    assert_eq!(mig.len(), 1, "{d:#}");
    assert_eq!(mig[0]["node"], "m-1");
    assert_eq!(mig[0]["gpu"], 1);
    assert_eq!(mig[0]["users_unknown"], true);
    assert_eq!(mig[0]["destroyed"].as_array().unwrap().len(), 7);
    assert_eq!(d["nodes"][0]["node"], "m-1");
    assert_eq!(d["rollout"][0]["nodes"][0], "m-1");
}

#[test]
fn issue29_nothing_destroyed_says_what_was_compared() {
    // The current layout serves the demand (two 3g.40gb on each GPU): nothing destroyed.
    let kept = r#"mig { layout "3g.40gb" "3g.40gb" nodes="m-1" current=#true }"#;
    for current in [kept, ""] {
        let (text, v) = plan("issue29-nothing", &cluster(current, 2));
        assert!(
            text.contains(
                "none known: no applied state to compare with (first apply), and no declared current MIG layout loses an instance"
            ),
            "{current}: {text}"
        );
        assert_eq!(v["disruption"]["mig_instances_destroyed"], 0);
        assert!(v["disruption"]["mig"].as_array().unwrap().is_empty());
    }
}
