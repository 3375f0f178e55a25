//! Issue 17: usable MIG memory depends on the driver. Right-sizing takes the value that
//! holds on the declared driver (the lowest known without one), not the highest ever
//! observed: H100 80GB `1g.10gb` has 9.62 GiB on R525 (catalog 9.75).

use crate::common;

use gpuplan::model::sizing;
use gpuplan::solve::SolverKind;

/// A cluster of H100 nodes, `driver` on the node class (none when empty), and one MIG
/// inference class with a `memory` footprint.
fn cluster(driver: &str, memory: &str) -> String {
    let driver = if driver.is_empty() {
        String::new()
    } else {
        format!(" driver=\"{driver}\"")
    };
    format!(
        r#"
cluster "c"
node-class "h" {{ gpus 8 model="h100-sxm5-80gb"{driver}; }}
nodes "mig-01" class="h"
fabric {{ leaf "l1" nodes="mig-01"; }}
pool "serve" mode="mig" nodes="mig-01"
team "t" guarantee=8
priority "p" value=10
inference "chat" team="t" priority="p" replicas=2 {{
    memory "{memory}"
    isolation "mig"
}}
"#
    )
}

/// The profile sizing picks for `chat`, and the one the planner places.
fn profiles(kdl: &str) -> (String, Vec<String>) {
    let c = common::load_text(kdl);
    let w = c.workloads.iter().find(|w| w.name == "chat").unwrap();
    let m = c.models.get("h100-sxm5-80gb").unwrap();
    let sized = sizing::mig_profile(&c, w, m).unwrap().name.to_string();
    let p = common::plan(&c, SolverKind::Ilp);
    let wp = p.workloads.iter().find(|w| w.name == "chat").unwrap();
    let placed = wp.mig_instances.iter().map(|i| i.profile.clone()).collect();
    (sized, placed)
}

#[test]
fn issue17_footprint_between_r525_and_catalog_memory_needs_the_next_profile() {
    // 9.7 GiB: more than 9.62 (R525, and the lowest known), less than the catalog 9.75.
    for driver in ["525.125.06", ""] {
        let (sized, placed) = profiles(&cluster(driver, "9.7GiB"));
        assert_eq!(sized, "1g.20gb", "driver {driver:?}");
        assert_eq!(placed, ["1g.20gb", "1g.20gb"], "driver {driver:?}");
    }
    // 9.6 GiB holds on R525.
    let (sized, placed) = profiles(&cluster("525.125.06", "9.6GiB"));
    assert_eq!(sized, "1g.10gb");
    assert_eq!(placed, ["1g.10gb", "1g.10gb"]);
}

#[test]
fn issue17_gp015_uses_the_memory_that_holds_on_the_driver() {
    // 39.4 GiB with `mig allow` limited to the 3g: 39.50 in the catalog, 39.25 on R525.
    let kdl = cluster("525.125.06", "39.4GiB").replace(
        "pool \"serve\"",
        "mig { allow \"3g.40gb\"; }\npool \"serve\"",
    );
    let mut sources = gpuplan::source::SourceMap::new();
    sources.add("c.kdl", kdl);
    let out = gpuplan::validate::validate(&sources);
    let text = format!("{:?}", out.diagnostics);
    assert!(text.contains("GP015"), "{text}");
    assert!(text.contains("39.25"), "{text}");
}
