//! The merge of `import nvidia-smi`: the GPUs from the reports, the instances of the MIG
//! tables on them, the matrix's wiring on the node; every contradiction is GP707.

use super::mig::InstanceRow;
use super::{qtext, topo};
use crate::diag::Diagnostic;
use crate::discover::profiles::ObservedProfile;
use crate::discover::{
    ComputeInstanceFacts, GpuInstanceFacts, Inventory, MigFacts, Naming, Snapshot,
};
use crate::source::{FileId, SourceMap, Span};

/// GP707: two files contradict each other (not of one machine, or not of one moment).
pub const GP707: &str = "GP707";

/// What the files said, each parsed.
#[derive(Default)]
pub(super) struct Parsed {
    pub query: Option<(FileId, qtext::Report)>,
    pub xml: Option<(FileId, Snapshot)>,
    pub topo: Option<(FileId, topo::Matrix)>,
    pub lgip: Option<(FileId, Vec<(u32, ObservedProfile)>)>,
    pub lgi: Option<(FileId, Vec<InstanceRow>)>,
    pub lci: Option<(FileId, Vec<InstanceRow>)>,
}

pub(super) fn first_line(sources: &SourceMap, file: FileId) -> Span {
    let len = sources
        .get(file)
        .and_then(|f| f.text.lines().next().map(str::len))
        .unwrap_or(0);
    Span::new(file, 0, len)
}

/// Bus ids in a comparable form.
fn buses(s: &Snapshot) -> Vec<Option<String>> {
    s.gpus
        .iter()
        .map(|g| g.bus_id.as_deref().and_then(crate::units::normalize_bus_id))
        .collect()
}

/// The GPUs: from `-q -x` or `-q` (both: they must agree), with what `-q` left out.
pub(super) fn base(
    p: &mut Parsed,
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Option<(Snapshot, u32, Vec<qtext::LeftOut>)> {
    let q = p.query.take();
    let x = p.xml.take();
    if let (Some((qf, q)), Some((xf, x))) = (&q, &x) {
        if q.gpus_seen() as usize != x.gpus.len() || buses(&q.snapshot) != buses(x) {
            diags.push(
                Diagnostic::error(GP707, format!(
                    "`nvidia-smi -q` and `nvidia-smi -q -x` describe different GPUs ({} and {}, or other bus ids)",
                    q.gpus_seen(),
                    x.gpus.len()
                ))
                .at(first_line(sources, *qf), "`-q`")
                .with_related(first_line(sources, *xf), "`-q -x`")
                .with_help("give the outputs of one machine, taken together"),
            );
            return None;
        }
    }
    match (q, x) {
        (_, Some((_, x))) => {
            let n = x.gpus.len() as u32;
            Some((x, n, Vec::new()))
        }
        (Some((_, q)), None) => {
            let n = q.gpus_seen();
            Some((q.snapshot, n, q.left_out))
        }
        (None, None) => None,
    }
}

/// The MIG instances of `mig -lgi` and `mig -lci` on the GPUs. `mig_known`: the GPUs
/// come from a report that gives each GPU's MIG mode (none: the GPU has no MIG).
pub(super) fn apply_instances(
    snap: &mut Snapshot,
    mig_known: bool,
    lgi: Option<(FileId, Vec<InstanceRow>)>,
    lci: Option<(FileId, Vec<InstanceRow>)>,
    diags: &mut Vec<Diagnostic>,
) {
    if let Some((file, rows)) = lgi {
        for r in rows {
            let at = Span::new(file, r.offset, 1);
            let Some(g) = snap.gpus.get_mut(r.gpu as usize) else {
                diags.push(contradiction(
                    at,
                    format!(
                        "`mig -lgi` lists GPU {}, which the other files do not have",
                        r.gpu
                    ),
                ));
                continue;
            };
            if mig_known && g.mig.is_none() {
                diags.push(contradiction(
                    at,
                    format!("`mig -lgi` lists an instance on GPU {}, which has no MIG mode (N/A) in the report", r.gpu),
                ));
                continue;
            }
            let mig = g.mig.get_or_insert(MigFacts {
                current: true,
                pending: true,
                gpu_instances: Vec::new(),
            });
            if !mig.current {
                diags.push(contradiction(
                    at,
                    format!(
                        "`mig -lgi` lists an instance on GPU {}, whose MIG mode is disabled",
                        r.gpu
                    ),
                ));
                continue;
            }
            let Some(id) = r.id else { continue };
            let pos = match mig.gpu_instances.iter().position(|gi| gi.id == id) {
                Some(p) => p,
                None => {
                    mig.gpu_instances.push(GpuInstanceFacts {
                        id,
                        ..GpuInstanceFacts::default()
                    });
                    mig.gpu_instances.len() - 1
                }
            };
            let gi = &mut mig.gpu_instances[pos];
            gi.profile = Some(r.profile.clone());
            gi.profile_id = r.profile_id;
            gi.start = r.placement.map(|p| p.0);
            gi.size = r.placement.map(|p| p.1);
        }
    }
    let Some((file, rows)) = lci else { return };
    for r in rows {
        let at = Span::new(file, r.offset, 1);
        let gi = snap
            .gpus
            .get_mut(r.gpu as usize)
            .and_then(|g| g.mig.as_mut())
            .and_then(|m| {
                m.gpu_instances
                    .iter_mut()
                    .find(|gi| Some(gi.id) == r.gpu_instance)
            });
        let (Some(gi), Some(id)) = (gi, r.id) else {
            diags.push(contradiction(at, format!("`mig -lci` lists a compute instance in GPU instance {} of GPU {}, which the other files do not have", r.gpu_instance.map_or("?".into(), |i| i.to_string()), r.gpu)));
            continue;
        };
        match gi.compute_instances.iter_mut().find(|c| c.id == id) {
            Some(c) => {
                c.profile_id = r.profile_id;
                c.slices = r.placement.map(|p| p.1);
            }
            None => gi.compute_instances.push(ComputeInstanceFacts {
                id,
                profile_id: r.profile_id,
                slices: r.placement.map(|p| p.1),
            }),
        }
    }
}

pub(super) fn contradiction(at: Span, msg: String) -> Diagnostic {
    Diagnostic::error(GP707, msg)
        .at(at, "this row")
        .with_help("give the outputs of one machine, taken together")
}

/// NVLink, NUMA, PCIe switches and NICs of the matrix on the node.
pub(super) fn apply_topo(
    inv: &mut Inventory,
    file: FileId,
    m: &topo::Matrix,
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) {
    if m.gpus != inv.gpus.len() {
        diags.push(
            Diagnostic::error(
                GP707,
                format!(
                    "`topo -m` has {} GPUs, the other files {}",
                    m.gpus,
                    inv.gpus.len()
                ),
            )
            .at(first_line(sources, file), "this matrix")
            .with_help("give the outputs of one machine, taken together"),
        );
        return;
    }
    let naming = Naming {
        node: inv.node.clone(),
        class: Some(inv.class.clone()),
        model: Some(inv.model.name.clone()),
    };
    let Ok(t) = topo::to_inventory(m, &naming) else {
        return;
    };
    for (g, tg) in inv.gpus.iter_mut().zip(&t.gpus) {
        g.numa_node = g.numa_node.or(tg.numa_node);
        g.cpu_affinity = tg.cpu_affinity.clone();
    }
    inv.nvlink_domains = t.nvlink_domains;
    inv.nvlink_links = t.nvlink_links;
    inv.numa = t.numa;
    inv.pcie_switches = t.pcie_switches;
    inv.nics = t.nics;
    inv.notes.extend(t.notes);
}
