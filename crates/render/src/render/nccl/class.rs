//! A node class's NCCL settings and topology, from the model: what the fabric target
//! writes per class and what the gang workloads carry in their environment
//! ([`env_for`]). Beside the NCCL writer (issue 32), so that class facts and the fabric
//! target both point down to it and neither to the other.

use super::{GpuTopo, NcclEnv, NicTopo, NodeTopo, NumaTopo};
use crate::model::{Cluster, NodeClass};
use std::collections::BTreeSet;

/// Where a node's class files are installed (hostPath-mounted into pods).
pub const NCCL_DIR: &str = "/etc/gpuplan/nccl";
/// `NCCL_TOPO_FILE` on every node: its own class's topology file.
pub(crate) const TOPO_FILE: &str = "/etc/gpuplan/nccl/topo.xml";
/// RoCE v2 over IPv4 on ConnectX NICs with the default GID table.
pub(crate) const DEFAULT_GID_INDEX: u32 = 3;

/// The NCCL settings of one node class.
pub fn settings(c: &Cluster, k: &NodeClass) -> NcclEnv {
    let roce = matches!(k.nic_kind.as_deref(), Some("roce") | Some("ethernet"));
    NcclEnv {
        ib_hca: if k.nics > 0 {
            k.nic_names.clone()
        } else {
            Vec::new()
        },
        socket_ifname: k.socket_ifname.clone(),
        gid_index: (roce && k.nics > 0).then(|| k.gid_index.unwrap_or(DEFAULT_GID_INDEX)),
        topo_file: super::bus_ids_declared(&topology(c, k)).then(|| TOPO_FILE.to_string()),
    }
}

/// The environment a class's pods get on node classes `classes`: each variable from
/// the classes that set it; NIC names and interfaces unioned (NCCL ignores devices a
/// node does not have), sorted by name.
pub fn env_for(c: &Cluster, classes: &BTreeSet<&str>) -> Vec<(String, String)> {
    let mut hcas: BTreeSet<String> = BTreeSet::new();
    let mut ifnames: BTreeSet<String> = BTreeSet::new();
    let mut gid: BTreeSet<u32> = BTreeSet::new();
    let mut topo = true;
    for k in classes.iter().filter_map(|k| c.classes.get(*k)) {
        let s = settings(c, k);
        hcas.extend(s.ib_hca);
        ifnames.extend(s.socket_ifname);
        gid.extend(s.gid_index);
        topo &= s.topo_file.is_some();
    }
    let mut out = Vec::new();
    // Each node's own class file sits at the same path: set only when every class has one.
    if topo {
        out.push(("NCCL_TOPO_FILE".to_string(), TOPO_FILE.to_string()));
    }
    if !hcas.is_empty() {
        out.push((
            "NCCL_IB_HCA".to_string(),
            super::ib_hca_value(&hcas.into_iter().collect::<Vec<_>>()),
        ));
    }
    if !ifnames.is_empty() {
        out.push((
            "NCCL_SOCKET_IFNAME".to_string(),
            ifnames.into_iter().collect::<Vec<_>>().join(","),
        ));
    }
    // One GID index per communicator: only when the classes agree.
    if let [one] = gid.iter().copied().collect::<Vec<_>>()[..] {
        out.push(("NCCL_IB_GID_INDEX".to_string(), one.to_string()));
    }
    out.sort();
    out
}

/// The compute capability NCCL's `sm` attribute wants, from the catalog architecture.
fn sm_of(architecture: &str) -> u32 {
    match architecture {
        "pascal" => 60,
        "volta" => 70,
        "turing" => 75,
        "ampere" => 80,
        "ada" => 89,
        "hopper" => 90,
        "blackwell" => 100,
        _ => 0,
    }
}

/// A node class as NCCL's topology model sees it.
pub fn topology(c: &Cluster, k: &NodeClass) -> NodeTopo {
    let model = k.gpu_model.as_ref().and_then(|m| c.models.get(m));
    let spec = model.and_then(|m| m.catalog);
    let id = spec.map(|s| s.id).unwrap_or("");
    let grace = id.starts_with("gb") || id.starts_with("gh");
    let numa_ids: Vec<u32> = if k.numa.is_empty() {
        vec![0]
    } else {
        k.numa.iter().map(|n| n.id).collect()
    };
    let numa_of_gpu = |g: u32| {
        k.numa
            .iter()
            .find(|n| n.gpus.contains(&g))
            .map(|n| n.id)
            .unwrap_or(numa_ids[0])
    };
    let numa_of_nic = |i: u32| {
        k.numa
            .iter()
            .find(|n| n.nics.contains(&i))
            .map(|n| n.id)
            .unwrap_or(numa_ids[0])
    };
    let switch_of = |gpu: Option<u32>, nic: Option<u32>| {
        k.pcie_switches
            .iter()
            .find(|p| {
                gpu.is_some_and(|g| p.gpus.contains(&g)) || nic.is_some_and(|i| p.nics.contains(&i))
            })
            .map(|p| p.name.clone())
    };
    // Each GPU's own model: a mixed class has several.
    let spec_of = |g: u32| {
        k.model_of(g)
            .and_then(|m| c.models.get(m))
            .and_then(|m| m.catalog)
    };
    let link_speed = match spec.map(|s| s.architecture) {
        Some("hopper") | Some("blackwell") => "32.0 GT/s PCIe",
        Some("turing") | Some("volta") | Some("pascal") => "8.0 GT/s PCIe",
        _ => "16.0 GT/s PCIe",
    };
    let speed_mbps = k.nic_speed.map(|b| b.0 / 1_000_000).unwrap_or(0);
    let roce = matches!(k.nic_kind.as_deref(), Some("roce") | Some("ethernet"));
    NodeTopo {
        numa: if k.numa.is_empty() {
            vec![NumaTopo {
                id: 0,
                cores: Vec::new(),
            }]
        } else {
            k.numa
                .iter()
                .map(|n| NumaTopo {
                    id: n.id,
                    cores: n.cores.clone(),
                })
                .collect()
        },
        pcie_switches: k.pcie_switches.iter().map(|p| p.name.clone()).collect(),
        gpus: (0..k.gpu_count)
            .map(|g| GpuTopo {
                index: g,
                numa: numa_of_gpu(g),
                pcie_switch: switch_of(Some(g), None),
                sm: spec_of(g).map(|s| sm_of(s.architecture)).unwrap_or(0),
                pci_device: spec_of(g)
                    .and_then(|s| s.pci_device_ids.first().copied())
                    .unwrap_or(0),
                bus_id: k.gpu_bus_ids.get(g as usize).cloned(),
            })
            .collect(),
        nics: (0..k.nics)
            .map(|i| NicTopo {
                index: i,
                name: k
                    .nic_names
                    .get(i as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("nic{i}")),
                numa: numa_of_nic(i),
                pcie_switch: switch_of(None, Some(i)),
                speed_mbps,
                roce,
                bus_id: k.nic_bus_ids.get(i as usize).cloned(),
            })
            .collect(),
        nvlink_domains: k.nvlink_domains.clone(),
        nvswitch: id.contains("sxm") || id.starts_with("b200") || id.starts_with("gb200"),
        nvlinks_per_gpu: model
            .and_then(|m| m.nvlink)
            .map(|n| n.links as u32)
            .unwrap_or(0),
        cpu_arch: if grace { "arm64" } else { "x86_64" }.to_string(),
        link_speed: link_speed.to_string(),
    }
}
