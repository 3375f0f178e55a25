//! What each MIG GPU has now: one rule, derived from the files and the previous
//! placement, for the solvers and the placement report.

use super::{Cluster, NodeIdx};
use crate::catalog::MigProfile;
use std::collections::{BTreeMap, BTreeSet};

/// Current layouts per (node, GPU index), profiles largest first.
pub type CurrentLayouts = BTreeMap<(NodeIdx, u32), Vec<&'static MigProfile>>;

/// The current MIG layout of every GPU that has one.
///
/// A GPU named by a `mig layout ... current=#true` has that layout (the first such layout
/// wins: two are GP012's error). A GPU no layout of the files names, fixed or current,
/// has its layout in `previous` (the last applied placement's, profile names as planned)
/// when there is one: after an apply, that is what the GPU has. A layout whose profiles
/// the GPU's model does not have, or that cannot exist on it, is left out (GP013's error
/// when declared; a stale or tampered previous placement otherwise). GPUs that are down
/// are included; callers filter.
///
/// Decision (issue 15): derived where needed instead of added to the model after
/// validation, so the model is what the files say and nothing else.
pub fn current_mig_layouts(
    c: &Cluster,
    previous: &BTreeMap<(NodeIdx, u32), Vec<String>>,
) -> CurrentLayouts {
    let mut out = CurrentLayouts::new();
    let resolve = |n: NodeIdx, g: u32, names: &[String]| -> Option<Vec<&'static MigProfile>> {
        let gpu = c.nodes[n].gpus.iter().find(|x| x.index == g)?;
        let model = c.model_of(gpu)?;
        let spec = model.mig?;
        let mut ps: Vec<&'static MigProfile> = names
            .iter()
            .map(|p| model.mig_profile(p))
            .collect::<Option<_>>()?;
        if !ps.is_empty() && crate::catalog::fits_profiles(spec, &ps).is_err() {
            return None;
        }
        crate::catalog::sort_canonical(&mut ps);
        Some(ps)
    };
    let mut declared: BTreeSet<(NodeIdx, u32)> = BTreeSet::new();
    for l in &c.mig.layouts {
        for &n in &l.nodes {
            for g in &c.nodes[n].gpus {
                if !(l.gpus.is_empty() || l.gpus.contains(&g.index)) {
                    continue;
                }
                declared.insert((n, g.index));
                if !l.current || out.contains_key(&(n, g.index)) {
                    continue;
                }
                if let Some(ps) = resolve(n, g.index, &l.profiles) {
                    out.insert((n, g.index), ps);
                }
            }
        }
    }
    for ((n, g), names) in previous {
        if *n < c.nodes.len() && !declared.contains(&(*n, *g)) && !names.is_empty() {
            if let Some(ps) = resolve(*n, *g, names) {
                out.insert((*n, *g), ps);
            }
        }
    }
    out
}
