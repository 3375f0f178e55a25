//! `gpuplan drift` reports a node whose NVIDIA driver differs from the declared one
//! (issue 17): the observation is the discovery JSON that `gpuplan import nvidia-smi-xml`
//! makes of `tests/fixtures/discover/constructed/q_x_2x_H100-80GB_MIG.xml` (driver
//! 550.90.07), the configuration declares 535.104.05.

use crate::common::Scratch;

#[test]
fn drift_reports_a_driver_mismatch() {
    let s = Scratch::new("drift-driver");
    let xml =
        std::fs::read_to_string("tests/fixtures/discover/constructed/q_x_2x_H100-80GB_MIG.xml")
            .unwrap();
    s.write("q.xml", xml);
    let r = s.run(&["import", "nvidia-smi-xml", "q.xml", "--format", "json"]);
    assert_eq!(r.0, 0, "{}", r.2);
    // The import's JSON holds the discovery under `read` (the import contract).
    let j: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    s.write("obs/node-01.json", j["read"].to_string());
    let kdl = |driver: &str| {
        format!(
            r#"cluster "c" {{ scheduler "kueue"; }}
node-class "h" {{ gpus 2 model="h100-sxm5-80gb" driver="{driver}"; }}
nodes "node-01" class="h"
fabric {{ leaf "l" nodes="node-01"; }}
mig {{ layout "3g.40gb" "3g.40gb" nodes="node-01"; }}
"#
        )
    };
    s.write("cfg/c.kdl", kdl("535.104.05"));
    let r = s.run(&["drift", "cfg", "--observed", "obs", "--format", "json"]);
    assert_eq!(r.0, 2, "{}\n{}", r.1, r.2);
    let j: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    let d = j["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "driver")
        .unwrap_or_else(|| panic!("no driver difference: {}", r.1));
    assert_eq!(d["observed"][0], "550.90.07");
    assert_eq!(d["declared"][0], "535.104.05");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("runs NVIDIA driver 550.90.07")
    );
    // Declared as observed: no driver drift.
    s.write("cfg/c.kdl", kdl("550.90.07"));
    let r = s.run(&["drift", "cfg", "--observed", "obs", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    assert!(
        j["differences"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["kind"] != "driver"),
        "{}",
        r.1
    );
}
