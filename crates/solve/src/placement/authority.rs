//! The authority table of a plan: per scheduler, the pools and nodes it owns, the
//! classes it runs and each team's part of its quota (empty when no authority is
//! declared).

use super::{AuthorityUse, Placement, TeamPart};
use crate::model::{Authority, Cluster};
use crate::units::compress_names;
use std::collections::{BTreeSet, HashMap, HashSet};

pub(super) fn authorities(c: &Cluster, p: &Placement) -> Vec<AuthorityUse> {
    if !c.authorities_declared() {
        return Vec::new();
    }
    let all_parts = c.all_team_parts();
    Authority::ALL
        .iter()
        .filter_map(|&a| {
            let nodes: Vec<usize> = (0..c.nodes.len())
                .filter(|&n| c.node_authority(n) == Some(a))
                .collect();
            let classes: Vec<&crate::model::Workload> = c
                .workloads
                .iter()
                .filter(|w| c.authority_of(w) == Some(a))
                .collect();
            // Per team, the GPUs placed of this scheduler's classes by the team or a team
            // under it, in the placement's order (one pass, not one per team: 12,500
            // classes at 100,000 GPUs).
            let names: HashSet<&str> = classes.iter().map(|w| w.name.as_str()).collect();
            let mut by_team: HashMap<&str, Vec<f64>> = HashMap::new();
            for wp in p
                .workloads
                .iter()
                .filter(|wp| names.contains(wp.name.as_str()))
            {
                for x in c.team_chain(&wp.team) {
                    by_team
                        .entry(x.name.as_str())
                        .or_default()
                        .push(wp.gpus_placed);
                }
            }
            let teams: Vec<TeamPart> = c
                .teams
                .values()
                .filter_map(|t| {
                    let part = all_parts.get(&t.name)?.get(&a).copied()?;
                    let placed: f64 = by_team
                        .get(t.name.as_str())
                        .map_or(&[][..], Vec::as_slice)
                        .iter()
                        .sum();
                    Some(TeamPart {
                        team: t.name.clone(),
                        guarantee: part.guarantee,
                        ceiling: part.ceiling,
                        gpus_placed: super::accounting::round4(placed),
                    })
                })
                .collect();
            if nodes.is_empty() && classes.is_empty() && teams.is_empty() {
                return None;
            }
            let names: Vec<String> = nodes.iter().map(|&n| c.nodes[n].name.clone()).collect();
            let pools: BTreeSet<String> = nodes
                .iter()
                .filter_map(|&n| c.pool_of(n).map(|x| x.name.clone()))
                .collect();
            Some(AuthorityUse {
                scheduler: a,
                pools: pools.into_iter().collect(),
                nodes: compress_names(&names).join(","),
                node_count: nodes.len() as u32,
                gpus: nodes
                    .iter()
                    .map(|&n| c.nodes[n].usable_gpus().count() as u32)
                    .sum(),
                classes: classes.iter().map(|w| w.name.clone()).collect(),
                teams,
            })
        })
        .collect()
}
