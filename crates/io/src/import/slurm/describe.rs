//! Nodes described for gpuplan: GRES types resolved to GPU models (`--model`, the
//! catalog), GPU counts and down GPUs from gres.conf, MIG layouts and NUMA groups.

use super::gres::Devices;
use super::models::Resolver;
use super::models::{catalog_mig_profile, model_part};
use super::nodes::Node;
use super::{GP745, GP749, GP753, Ledger, Options};
use crate::catalog;
use crate::diag::Diagnostic;
use std::collections::{BTreeMap, BTreeSet};

/// A node's GPUs once the model is known.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Hardware {
    /// GPU models with their counts, in the order of the GPU indices (one line of
    /// `gpus` each; several on a node with GPUs of several types).
    pub(super) lines: Vec<(String, u32)>,
    /// All the node's GPUs.
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
    /// The pool mode its sharing GRES (shard, mps) asks for.
    pub(super) sharing: Option<&'static str>,
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
fn without_gpus(n: &Node, d: &Devices) -> Described {
    Described {
        name: n.name.clone(),
        hardware: Hardware {
            lines: Vec::new(),
            gpus: 0,
            sockets: n.sockets,
            cores: n.cores,
            threads: n.threads,
            memory_mib: n.memory_mib.map(rounded_mib),
            numa: Vec::new(),
        },
        down: Vec::new(),
        mig: BTreeMap::new(),
        unknown_gpus: true,
        sharing: sharing(n, d),
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
        let d = devices.get(&n.name).unwrap_or(&none);
        let Some(gres) = gres_of(n, d, diags) else {
            out.push(without_gpus(n, d));
            continue;
        };
        let Some(mut lines) = model_lines(n, d, &gres, opts, resolver, diags) else {
            ledger.drop(
                &n.name,
                GP749,
                "`--model` maps a GPU type to an invalid model name".into(),
            );
            continue;
        };
        let has_mig = gres.iter().any(|(t, _)| catalog_mig_profile(t).is_some());
        let whole_count: u32 = lines.iter().map(|(_, c)| c).sum();
        let Some((gpus, down)) = count(n, d, whole_count, has_mig, diags) else {
            ledger.drop(
                &n.name,
                GP745,
                "MIG GRES that gres.conf does not place on GPUs".into(),
            );
            continue;
        };
        // The last GPU type takes what gres.conf lists beyond slurm.conf's counts.
        let others: u32 = lines.iter().rev().skip(1).map(|(_, c)| c).sum();
        if let Some(last) = lines.last_mut() {
            last.1 = gpus.saturating_sub(others);
        }
        let mig = mig_layouts(n, d, &lines[0].0, diags);
        let numa = numa_groups(d, &down);
        out.push(Described {
            name: n.name.clone(),
            hardware: Hardware {
                lines,
                gpus,
                sockets: n.sockets,
                cores: n.cores,
                threads: n.threads,
                memory_mib: n.memory_mib.map(rounded_mib),
                numa,
            },
            down,
            mig,
            unknown_gpus: false,
            sharing: sharing(n, d),
        });
    }
    out
}

/// RealMemory (MiB) rounded as the Kubernetes importer rounds memory: whole GiB, down
/// to a 32nd of their power of two (257860 MiB -> 248 GiB), so that identical servers
/// whose kernels keep a few MiB more or less share a class; under 1 GiB, as written.
pub(super) fn rounded_mib(mib: u64) -> u64 {
    if mib < 1024 {
        return mib;
    }
    crate::import::memory::coarse_gib(mib / 1024) * 1024
}

/// The pool mode the node's sharing GRES asks for: `mps` (Name=mps), `time-slice`
/// (Name=shard); none for whole GPUs.
fn sharing(n: &Node, d: &Devices) -> Option<&'static str> {
    let has = |s: &str| n.sharing.contains(s) || d.sharing.contains(s);
    if has("mps") {
        Some("mps")
    } else if has("shard") {
        Some("time-slice")
    } else {
        None
    }
}

/// The node's GPU models with their whole-GPU counts, in the order of their GPU
/// indices (gres.conf's device files by type, else slurm.conf's order); one line per
/// model. `None` when `--model` maps a type to an invalid name (GP749).
fn model_lines(
    n: &Node,
    d: &Devices,
    gres: &[(String, u32)],
    opts: &Options,
    resolver: &mut Resolver,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<(String, u32)>> {
    // (model, count, first gres.conf index of its type)
    let mut lines: Vec<(String, u32, u32)> = Vec::new();
    for (ty, c) in gres {
        // A bare MIG profile (`1g.10gb`) names no model: gres.conf's full type of
        // the same profile does, when the node has one (AutoDetect=nvml writes it).
        let full = if model_part(ty).is_empty() {
            d.types
                .iter()
                .find(|t| {
                    !model_part(t).is_empty() && catalog_mig_profile(t) == catalog_mig_profile(ty)
                })
                .map_or(ty.as_str(), String::as_str)
        } else {
            ty.as_str()
        };
        let model = resolver.resolve(full, opts, n.gres_span, diags)?;
        let whole = if catalog_mig_profile(ty).is_some() {
            0
        } else {
            *c
        };
        let first = d
            .typed
            .iter()
            .find(|(_, t)| t.eq_ignore_ascii_case(ty))
            .map_or(u32::MAX, |(i, _)| *i);
        if first == u32::MAX && whole > 0 && !d.typed.is_empty() && !ty.is_empty() {
            let listed: Vec<&str> = d.types.iter().map(String::as_str).collect();
            diags.push(
                Diagnostic::warning(
                    GP753,
                    format!(
                        "node `{}`: slurm.conf's GPU type `{ty}` is not among the types gres.conf lists for it ({})",
                        n.name,
                        listed.join(", ")
                    ),
                )
                .at(n.gres_span, "this type")
                .with_help("use the same Type= in gres.conf as in Gres= (slurmd refuses a node whose types differ)"),
            );
        }
        match lines.iter_mut().find(|l| l.0 == model) {
            Some(l) => {
                l.1 += whole;
                l.2 = l.2.min(first);
            }
            None => lines.push((model, whole, first)),
        }
    }
    lines.sort_by_key(|l| l.2);
    Some(lines.into_iter().map(|(m, c, _)| (m, c)).collect())
}

/// The GPU count and the down GPUs: gres.conf's device files when it lists them (a GPU
/// without its file is down), checked against slurm.conf's count (GP753), else
/// slurm.conf's count. `None` for MIG GRES gres.conf does not place (GP745).
fn count(
    n: &Node,
    d: &Devices,
    whole_count: u32,
    has_mig: bool,
    diags: &mut Vec<Diagnostic>,
) -> Option<(u32, Vec<u32>)> {
    let listed: BTreeSet<u32> = d.whole.keys().chain(d.mig.keys()).copied().collect();
    let Some(&max) = listed.iter().max() else {
        if has_mig {
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
            return None;
        }
        return Some((whole_count, Vec::new()));
    };
    let gpus = (max + 1).max(whole_count);
    if whole_count > 0 && whole_count != max + 1 && !has_mig {
        diags.push(
            Diagnostic::warning(
                GP753,
                format!(
                    "node `{}`: slurm.conf counts {whole_count} GPU(s), gres.conf's device files go up to /dev/nvidia{max}; {gpus} GPUs are imported, those without a device file down",
                    n.name
                ),
            )
            .at(n.gres_span, "this count")
            .with_help("make Gres= and gres.conf agree (slurmd drains a node whose GPUs do not match)"),
        );
    }
    let down: Vec<u32> = (0..gpus).filter(|i| !listed.contains(i)).collect();
    Some((gpus, down))
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
