//! Volcano fields gated on the declared Volcano release (issue 34), as each release's
//! CRD has them (docs/render.md, "Volcano versions"): HyperNode `tierName` from 1.14,
//! HyperNode and Job `networkTopology` from 1.12 (before: GP950 for gangs that need one
//! domain), Queue `priority` from 1.10, `parent`/`deserved` from 1.9 (before: GP950 for
//! a team tree). Undeclared, every field is rendered.

use crate::common;

use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;

/// A Volcano cluster with a team tree and a leaf-bound gang, for `version`.
fn kdl(version: Option<&str>) -> String {
    let v = version
        .map(|v| format!("    volcano version=\"{v}\"\n"))
        .unwrap_or_default();
    format!(
        r#"cluster "vc" {{
    scheduler "volcano"
{v}}}
node-class "hgx" {{
    cpu sockets=2 cores-per-socket=56 threads-per-core=2
    memory "2TiB"
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
    nics 8 speed="400Gbps" kind="infiniband"
}}
nodes "n-[01-04]" class="hgx"
fabric {{
    spine "s1" {{
        leaf "l1" nodes="n-[01-02]"
        leaf "l2" nodes="n-[03-04]"
    }}
}}
priority "p" value=100
team "org" guarantee=32 burst=32
team "ml" parent="org" guarantee=16 burst=32
training "llm" team="ml" priority="p" {{
    gang gpus=16 gpus-per-node=8
    topology required="leaf"
}}
"#
    )
}

fn render(version: Option<&str>) -> (render::Files, Vec<String>) {
    let c = common::load_text(&kdl(version));
    let p = common::plan(&c, SolverKind::Ilp);
    let r =
        render::render(&c, &p, &[Target::Volcano], &render::Options::default()).expect("renders");
    let warnings = r
        .warnings
        .iter()
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    (r.files, warnings)
}

#[test]
fn volcano_fields_follow_the_declared_release() {
    for (version, tier_name, hypernodes, priority, parent) in [
        (None, true, true, true, true),
        (Some("1.15"), true, true, true, true),
        (Some("1.14"), true, true, true, true),
        (Some("1.13"), false, true, true, true),
        (Some("1.12"), false, true, true, true),
        (Some("1.11"), false, false, true, true),
        (Some("1.9"), false, false, false, true),
        (Some("1.8"), false, false, false, false),
    ] {
        let (files, warnings) = render(version);
        let hn = files.get("volcano/hypernodes.yaml");
        let job = &files["volcano/workloads/llm.yaml"];
        let queues = &files["volcano/queues.yaml"];
        let v = version.unwrap_or("undeclared");
        assert_eq!(hn.is_some(), hypernodes, "{v}: hypernodes.yaml");
        assert_eq!(
            hn.is_some_and(|t| t.contains("tierName:")),
            tier_name,
            "{v}: tierName"
        );
        assert_eq!(
            job.contains("networkTopology:"),
            hypernodes,
            "{v}: networkTopology"
        );
        assert_eq!(
            queues.contains("  priority: "),
            priority,
            "{v}: Queue priority"
        );
        assert_eq!(
            queues.contains("  parent: org"),
            parent,
            "{v}: Queue parent"
        );
        assert_eq!(
            queues.contains("  deserved:"),
            parent,
            "{v}: Queue deserved"
        );
        // What the release cannot carry is said, never dropped silently.
        let topo = warnings
            .iter()
            .any(|w| w.starts_with("GP950") && w.contains("the gangs of llm"));
        assert_eq!(topo, !hypernodes, "{v}: {warnings:?}");
        let tree = warnings
            .iter()
            .any(|w| w.starts_with("GP950") && w.contains("flat"));
        assert_eq!(tree, !parent, "{v}: {warnings:?}");
        if hypernodes && parent {
            assert!(
                warnings.iter().all(|w| !w.starts_with("GP950")),
                "{v}: {warnings:?}"
            );
        }
    }
}
