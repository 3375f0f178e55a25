//! The greedy baseline (first-fit in name order). Being written.

use super::{Assignment, SolveInfo};
use crate::model::Cluster;

pub fn solve(c: &Cluster) -> (Assignment, SolveInfo) {
    let a = Assignment {
        node_mode: vec![None; c.nodes.len()],
        ..Default::default()
    };
    (
        a,
        SolveInfo {
            name: "greedy",
            status: "heuristic".into(),
            ..Default::default()
        },
    )
}
