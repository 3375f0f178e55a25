//! The fabric target: what NCCL needs, derived from the declared topology instead of
//! left to auto-detection. Per node class with GPUs: `fabric/<class>/nccl.env` (the
//! variables) and `fabric/<class>/topo.xml` (an NCCL topology file, see [`super::nccl`]),
//! plus `fabric/nodes.tsv` saying which class folder each node installs at
//! [`NCCL_DIR`]. The same variables go into the rendered gang workloads
//! ([`nccl::env_for`] of the node classes a training class landed on, in its class facts).
//!
//! Nothing is guessed: without `nics names=` there is no `NCCL_IB_HCA` (NCCL picks the
//! HCAs), without `socket-ifname=` no `NCCL_SOCKET_IFNAME`, and without declared PCI bus
//! ids (`gpus bus-ids=`, `nics bus-ids=`) no `NCCL_TOPO_FILE`: NCCL matches a file's GPUs
//! by bus id and its NICs by name, so a file with invented bus ids would move the real
//! NICs away from their GPUs and cost GPUDirect RDMA (see [`super::nccl`]). The file is
//! still written, for review.

use super::Files;
use super::facts::Facts;
use super::nccl::{self, NCCL_DIR, settings, topology};
use crate::diag::Diagnostic;
use std::collections::BTreeMap;

/// Node classes with GPUs that have at least one node, by name.
fn classes_with_nodes<'a>(f: &'a Facts<'a>) -> BTreeMap<&'a str, Vec<&'a str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for n in &f.nodes {
        if f.c.classes.get(&n.class).is_some_and(|k| k.gpu_count > 0) {
            out.entry(n.class.as_str())
                .or_default()
                .push(n.name.as_str());
        }
    }
    out
}

pub(super) fn render(f: &Facts) -> Result<Files, Diagnostic> {
    let mut files = Files::new();
    let header = f.header();
    let mut tsv = format!("# {header}\n# node\tclass folder (install its files at {NCCL_DIR}/)\n");
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for (class, nodes) in classes_with_nodes(f) {
        let Some(k) = f.c.classes.get(class) else {
            continue;
        };
        let env_header = format!(
            "{header}\nNCCL settings for node class `{class}`: install as {NCCL_DIR}/nccl.env on {}",
            super::facts::range(&nodes.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        );
        let set = settings(f.c, k);
        let mut notes = Vec::new();
        if set.topo_file.is_none() {
            notes.push(format!("NCCL_TOPO_FILE is not set: topo.xml uses synthetic PCI bus ids (declare `gpus bus-ids=` and `nics bus-ids=` in node class `{class}`); NCCL would match its NICs by name and move them away from their GPUs."));
        }
        if set.ib_hca.is_empty() && k.nics > 0 {
            notes.push(format!("NCCL_IB_HCA is not set: node class `{class}` does not name its NICs (`nics names=`)."));
        }
        files.insert(
            format!("{class}/nccl.env"),
            nccl::env_file(&env_header, &notes, &set),
        );
        files.insert(
            format!("{class}/topo.xml"),
            nccl::topology_xml(&topology(f.c, k)),
        );
        rows.extend(nodes.iter().map(|n| (*n, class)));
    }
    if files.is_empty() {
        return Ok(files);
    }
    rows.sort();
    for (n, k) in rows {
        tsv.push_str(&format!("{n}\t{k}\n"));
    }
    files.insert("nodes.tsv".to_string(), tsv);
    Ok(files)
}
