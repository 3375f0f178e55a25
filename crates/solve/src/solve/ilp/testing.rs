//! What the ILP's unit tests share: a small validated cluster to build a master on.

use super::master::{Master, Objective};
use super::problem::Problem;
use super::seed;
use crate::model::Cluster;
use crate::source::SourceMap;

/// Two nodes of two GPUs (16 CPUs, 64 GiB each), team `t` (burst 100) and priority `p`,
/// with the classes `classes` (KDL); validated without errors.
pub(super) fn cluster(classes: &str) -> Cluster {
    let text = format!(
        r#"
cluster "ilp"
gpu-model "t4x" memory="16GiB"
node-class "small" {{
    cpu sockets=1 cores-per-socket=16
    memory "64GiB"
    gpus 2 model="t4x"
}}
nodes "n-[1-2]" class="small"
team "t" burst=100
priority "p" value=10
{classes}
"#
    );
    let mut sources = SourceMap::new();
    sources.add("ilp.kdl", text);
    let out = crate::validate::validate(&sources);
    assert!(
        !out.diagnostics.iter().any(|d| d.is_error()),
        "{:#?}",
        out.diagnostics
    );
    out.model.expect("model")
}

/// The master of `c` and `p` with every group's first patterns as columns (every
/// pattern of a small group); each stage's cost aside.
pub(super) fn master<'a>(c: &'a Cluster, p: &'a Problem) -> Master<'a> {
    let mut m = Master::new(c, p);
    for g in 0..p.groups.len() {
        m.seed_patterns(g, &Objective::Compact, 0);
    }
    m
}

/// Runs `f` on the master of `classes` ([`master`]) and its solution that places
/// nothing.
pub(super) fn with_empty_start(classes: &str, f: impl FnOnce(&mut Master, &[f64])) {
    let c = cluster(classes);
    let p = Problem::build(&c, &Default::default());
    let mut m = master(&c, &p);
    let group_of = seed::packed_nodes(&m);
    let x = seed::solution_of(&mut m, &[], &group_of).expect("the empty placement");
    f(&mut m, &x);
}
