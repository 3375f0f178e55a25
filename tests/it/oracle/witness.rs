//! Turns the search's choice into a concrete [`Assignment`] (GPU indexes, MIG layouts,
//! shares, packed entries), so that `placement::build` and `placement::check` can judge
//! the oracle's own answer.

use super::node::{Config, Layout};
use super::problem::{Problem, Use};
use super::search::Choice;
use gpuplan::catalog::{MigProfile, sort_canonical};
use gpuplan::model::PoolMode;
use gpuplan::solve::Assignment;

pub(super) fn assignment(p: &Problem, choice: &Choice) -> Assignment {
    let mut a = Assignment {
        node_mode: vec![None; p.c.nodes.len()],
        ..Assignment::default()
    };
    // Next unused GPU (index into `usable`) per node position.
    let mut cursor = vec![0usize; p.nodes.len()];
    let mut replica = vec![0u32; p.gangs.len()];
    for (gi, shape) in &choice.gangs {
        let g = &p.gangs[*gi];
        let mut nodes = Vec::new();
        for &(pos, x) in shape {
            let n = &p.nodes[pos];
            let gpus = n.usable[cursor[pos]..cursor[pos] + x as usize].to_vec();
            cursor[pos] += x as usize;
            a.node_mode[n.ni] = Some(PoolMode::WholeGpu);
            nodes.push((n.ni, gpus));
        }
        a.gangs.push((g.wi, replica[*gi], nodes));
        replica[*gi] += 1;
    }
    for (pos, cfg) in &choice.nodes {
        let n = &p.nodes[*pos];
        let gpus = &n.usable[cursor[*pos]..];
        a.node_mode[n.ni] = cfg.mode;
        node(p, &mut a, n.ni, gpus, p.nodes[*pos].kind, cfg);
    }
    a
}

fn node(p: &Problem, a: &mut Assignment, ni: usize, gpus: &[u32], kind: usize, cfg: &Config) {
    let wi = |si: usize| p.singles[si].wi;
    match &cfg.layout {
        Layout::Empty => {}
        Layout::Mig(per_gpu) => {
            for (inst, &g) in per_gpu.iter().zip(gpus) {
                let mut names: Vec<&'static MigProfile> = inst.iter().map(|x| x.1).collect();
                sort_canonical(&mut names);
                a.mig_layouts
                    .insert((ni, g), names.iter().map(|q| q.name).collect());
                for &(si, q) in inst {
                    a.mig_instances.push((wi(si), ni, g, q.name));
                    let model = p.kinds[kind].model.clone();
                    a.mig_profiles.insert((wi(si), model), q.name);
                }
            }
        }
        Layout::Shared(per_gpu) => {
            for (&(si, n), &g) in per_gpu.iter().zip(gpus) {
                a.shares.push((wi(si), ni, g, n));
            }
        }
        Layout::Packed { whole, bins } => {
            let mut free = gpus.iter().copied();
            for &si in whole {
                let milli = packed_milli(p, si);
                let take: Vec<u32> = free.by_ref().take(milli.div_ceil(1000) as usize).collect();
                a.packed.push((wi(si), ni, take, 1));
            }
            for bin in bins {
                let g = free.next().unwrap();
                let mut classes = bin.clone();
                classes.sort_unstable();
                classes.dedup();
                for si in classes {
                    let n = bin.iter().filter(|&&x| x == si).count() as u32;
                    a.packed.push((wi(si), ni, vec![g], n));
                }
            }
        }
    }
}

fn packed_milli(p: &Problem, si: usize) -> u64 {
    match p.singles[si].how {
        Use::Packed { milli, .. } => milli,
        _ => unreachable!("a packed layout holds packed classes"),
    }
}
