//! Nodes described for gpuplan: GRES types resolved to GPU models (`--model`, the
//! catalog), GPU counts and down GPUs from gres.conf, MIG layouts and NUMA groups.

use super::gres::{Devices, catalog_mig_profile, model_part};
use super::nodes::Node;
use super::models::Resolver;
use super::{GP743, GP745, GP749, GP753, Ledger, Options};
use crate::catalog;
use crate::diag::Diagnostic;
use std::collections::{BTreeMap, BTreeSet};

/// A node's GPUs once the model is known.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Hardware {
    pub(super) model: String,
    pub(super) gpus: u32,
    pub(super) sockets: u32,
    pub(super) cores: u32,
    pub(super) threads: u32,
    pub(super) memory_mib: Option<u64>,
    /// NUMA groups from gres.conf `Cores`: (GPU indices, cores).
    pub(super) numa: Vec<(Vec<u32>, String)>,
}

/// A node described for gpuplan.
#[derive(Clone, Debug)]
pub(super) struct Described {
    pub(super) name: String,
    pub(super) hardware: Hardware,
    pub(super) down: Vec<u32>,
    /// MIG layouts per GPU index (current).
    pub(super) mig: BTreeMap<u32, Vec<String>>,
    /// Neither slurm.conf (`Gres=gpu`) nor gres.conf says what GPUs it has: imported
    /// without GPUs and flagged.
    pub(super) unknown_gpus: bool,
}

/// The node's GPU GRES: slurm.conf's `Gres=gpu`, else (GP753) the GPU devices gres.conf
/// lists for it, by type; `None` when neither says anything.
fn gres_of(n: &Node, d: &Devices, diags: &mut Vec<Diagnostic>) -> Option<Vec<(String, u32)>> {
    if !n.gres.is_empty() {
        return Some(n.gres.clone());
    }
    if d.whole.is_empty() {
        return None;
    }
    let count = d.whole.len() as u32;
    let ty = match d.types.iter().collect::<Vec<_>>().as_slice() {
        [one] => (*one).clone(),
        _ => String::new(),
    };
    diags.push(
        Diagnostic::warning(
            GP753,
            format!(
                "node `{}`: gres.conf lists {count} GPU device(s) but its NodeName line has no `Gres=gpu`; the GPUs of gres.conf are imported",
                n.name
            ),
        )
        .at(n.span, "no Gres=gpu here")
        .with_help("add `Gres=gpu:TYPE:N` to the NodeName line: slurmctld schedules no GPU it does not declare"),
    );
    Some(vec![(ty, count)])
}

/// A node neither file gives GPUs: its CPUs and memory, no GPU count (flagged).
fn without_gpus(n: &Node) -> Described {
    Described {
        name: n.name.clone(),
        hardware: Hardware {
            model: String::new(),
            gpus: 0,
            sockets: n.sockets,
            cores: n.cores,
            threads: n.threads,
            memory_mib: n.memory_mib,
            numa: Vec::new(),
        },
        down: Vec::new(),
        mig: BTreeMap::new(),
        unknown_gpus: true,
    }
}

pub(super) fn describe(
    nodes: &BTreeMap<String, Node>,
    devices: &BTreeMap<String, Devices>,
    opts: &Options,
    resolver: &mut Resolver,
    diags: &mut Vec<Diagnostic>,
    ledger: &mut Ledger,
) -> Vec<Described> {
    let mut out = Vec::new();
    let none = Devices::default();
    for n in nodes.values() {
        let mut models: BTreeSet<String> = BTreeSet::new();
        let mut failed = false;
        let d = devices.get(&n.name).unwrap_or(&none);
        let Some(gres) = gres_of(n, d, diags) else {
            out.push(without_gpus(n));
            continue;
        };
        for (ty, _) in &gres {
            // A bare MIG profile (`1g.10gb`) names no model: gres.conf's full type of
            // the same profile does, when the node has one (AutoDetect=nvml writes it).
            let full = if model_part(ty).is_empty() {
                d.types
                    .iter()
                    .find(|t| {
                        !model_part(t).is_empty()
                            && catalog_mig_profile(t) == catalog_mig_profile(ty)
                    })
                    .map_or(ty.as_str(), String::as_str)
            } else {
                ty.as_str()
            };
            match resolver.resolve(full, opts, n.gres_span, diags) {
                Some(g) => {
                    models.insert(g);
                }
                None => failed = true,
            }
        }
        if failed {
            ledger.drop(
                &n.name,
                GP749,
                "`--model` maps a GPU type to an invalid model name".into(),
            );
            continue;
        }
        if models.len() != 1 {
            ledger.drop(&n.name, GP743, "GPUs of several models".into());
            diags.push(
                Diagnostic::warning(
                    GP743,
                    format!(
                        "node `{}` has GPUs of several models ({}); it is left out",
                        n.name,
                        models.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                )
                .at(n.span, "declared here")
                .with_help(
                    "gpuplan describes one GPU model per node class; declare this node by hand",
                ),
            );
            continue;
        }
        let model = models.into_iter().next().unwrap_or_default();
        let has_mig = gres.iter().any(|(t, _)| catalog_mig_profile(t).is_some());
        let listed: BTreeSet<u32> = d.whole.keys().chain(d.mig.keys()).copied().collect();
        let whole_count: u32 = gres
            .iter()
            .filter(|(t, _)| catalog_mig_profile(t).is_none())
            .map(|(_, c)| c)
            .sum();
        let (gpus, down) = if let Some(&max) = listed.iter().max() {
            let down: Vec<u32> = (0..=max).filter(|i| !listed.contains(i)).collect();
            (max + 1, down)
        } else if has_mig {
            ledger.drop(
                &n.name,
                GP745,
                "MIG GRES that gres.conf does not place on GPUs".into(),
            );
            diags.push(
                Diagnostic::warning(
                    GP745,
                    format!(
                        "node `{}` has MIG GRES but gres.conf does not say which GPU holds which instance; it is left out",
                        n.name
                    ),
                )
                .at(n.span, "declared here")
                .with_help("give gres.conf with File/MultipleFiles lines, or import the node with `gpuplan import nvidia-smi-xml`"),
            );
            continue;
        } else {
            (whole_count, Vec::new())
        };
        let mig = mig_layouts(n, d, &model, diags);
        let numa = numa_groups(d, &down);
        out.push(Described {
            name: n.name.clone(),
            hardware: Hardware {
                model,
                gpus,
                sockets: n.sockets,
                cores: n.cores,
                threads: n.threads,
                memory_mib: n.memory_mib,
                numa,
            },
            down,
            mig,
            unknown_gpus: false,
        });
    }
    out
}

/// The MIG layouts gres.conf lists, checked by the catalog's placement rules.
fn mig_layouts(
    n: &Node,
    d: &Devices,
    model: &str,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<u32, Vec<String>> {
    let Some(spec) = catalog::lookup(model).and_then(|g| g.mig) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (gpu, profiles) in &d.mig {
        let names: Vec<String> = profiles
            .iter()
            .map(|p| {
                spec.profile_any_name(p)
                    .map_or(p.clone(), |q| q.name.to_string())
            })
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        match catalog::fits(spec, &refs) {
            Ok(_) => {
                let mut sorted = names.clone();
                sorted.sort();
                out.insert(*gpu, sorted);
            }
            Err(e) => diags.push(
                Diagnostic::warning(
                    GP745,
                    format!("node `{}` GPU {gpu}: MIG devices {} do not form a layout of {model} ({e}); left out", n.name, names.join(", ")),
                )
                .at(n.span, "declared here")
                .with_help("check gres.conf against `nvidia-smi mig -lgi` on the node"),
            ),
        }
    }
    out
}

/// NUMA groups: GPUs with the same `Cores`, in order of their first GPU. A GPU without
/// a device file (down) joins the group of its nearest listed neighbour below (else
/// above), so that a node with a failed GPU keeps its class (NUMA groups of GPU servers
/// are runs of consecutive GPUs).
fn numa_groups(d: &Devices, down: &[u32]) -> Vec<(Vec<u32>, String)> {
    let mut by_cores: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (i, cores) in &d.whole {
        match cores {
            Some(c) => by_cores.entry(c).or_default().push(*i),
            None => return Vec::new(),
        }
    }
    if by_cores.len() < 2 {
        return Vec::new();
    }
    let mut groups: Vec<(Vec<u32>, String)> = by_cores
        .into_iter()
        .map(|(c, g)| (g, c.to_string()))
        .collect();
    for &g in down {
        let near = |i: u32| groups.iter().position(|(v, _)| v.contains(&i));
        let below = (0..g).rev().find_map(near);
        let above = || (g + 1..g + 64).find_map(near);
        if let Some(k) = below.or_else(above) {
            groups[k].0.push(g);
            groups[k].0.sort_unstable();
        }
    }
    groups.sort();
    groups
}
