//! NCCL's own topology file format (`NCCL_TOPO_FILE`) and environment variables, from a
//! node class's declared layout. Pure: no I/O, deterministic.
//!
//! The grammar (NCCL `src/graph/xml.cc`, `xml.h`, `topo.cc`, read at NVIDIA/nccl
//! 5067397c; what `NCCL_TOPO_DUMP_FILE` writes):
//!
//! ```text
//! <system version="1">
//!   <cpu numaid="0" affinity="ffffffff,..." arch="x86_64" [vendor familyid modelid]>
//!     <pci busid="0000:18:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
//!       <pci busid=... class="0x030200" vendor="0x10de" device="0x2330" ...>
//!         <gpu dev="0" sm="90" gdr="1">
//!           <nvlink target="0000:ff:00.0" count="18" tclass="0x068000"/>
//!         </gpu>
//!       </pci>
//!       <pci busid=... class="0x020700" ...>
//!         <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic>
//!       </pci>
//!     </pci>
//!   </cpu>
//! </system>
//! ```
//!
//! - PCI class codes: `0x060400` bridge (a PCIe switch), `0x030200` 3D controller (a
//!   datacenter GPU), `0x020700` InfiniBand, `0x020000` Ethernet (RoCE). `link_speed` is one
//!   of the strings NCCL's `kvDictPciGen` knows (`"16.0 GT/s PCIe"`, `"32.0 GT/s PCIe"`,
//!   ...), `link_width` the lane count; CPU `arch` one of `kvDictCpuArch` (`x86_64`,
//!   `arm64`, `ppc64`).
//! - `net speed` is in Mbps (400 Gb/s = `400000`); `gpu sm` is the compute capability
//!   times ten (Hopper 90); `nvlink count` is the number of links to `target`, a peer GPU's
//!   bus id (`tclass="0x030200"`) or an NVSwitch (`tclass="0x068000"`: NCCL makes one NVS
//!   node for every such target, whatever its bus id).
//! - Attributes NCCL can read from the machine are left out (`rank`, CPU `vendor`,
//!   `familyid`, `modelid`, NIC `guid`): for a CPU element matching a real NUMA node NCCL
//!   fills what is missing (`ncclTopoGetXmlFromCpu` checks each with `xmlGetAttrIndex`).
//! - Matching: `ncclTopoGetPciNode` finds a GPU's `pci` element by `busid`,
//!   `ncclTopoFillNet` a NIC's `net` element by `name`; `ncclTopoTrimXml` then removes every
//!   branch without a device NCCL uses.
//! - **Bus ids.** NCCL matches a GPU of the file to a real GPU by PCI bus id and a NIC by
//!   its `net name`; file branches with no matched device are trimmed
//!   (`ncclTopoTrimXml`), matched ones keep the file's placement. A file with invented bus
//!   ids would put real NICs (matched by name) under invented switches, away from their
//!   GPUs, and NCCL would then refuse GPUDirect RDMA. So bus ids are the declared ones
//!   (`gpus bus-ids=`, `nics bus-ids=`) when known; otherwise they are synthetic, unique
//!   and deterministic, the file is for review only, and [`env_file`] does not point
//!   `NCCL_TOPO_FILE` at it (see `render::fabric`).

use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug)]
pub struct NodeTopo {
    /// CPU sockets / NUMA nodes in id order; every GPU and NIC belongs to one.
    pub numa: Vec<NumaTopo>,
    /// PCIe switches by name (as declared); GPUs and NICs may sit below one.
    pub pcie_switches: Vec<String>,
    pub gpus: Vec<GpuTopo>,
    pub nics: Vec<NicTopo>,
    /// Node-local NVLink domains (GPU index sets), fully connected (through NVSwitch when
    /// `nvswitch`).
    pub nvlink_domains: Vec<Vec<u32>>,
    pub nvswitch: bool,
    /// NVLink links per GPU (18 on H100 SXM), 0 without NVLink.
    pub nvlinks_per_gpu: u32,
    /// `x86_64` or `arm64`.
    pub cpu_arch: String,
    /// PCIe link speed of the GPUs and NICs, as NCCL spells it (`32.0 GT/s PCIe`).
    pub link_speed: String,
}

#[derive(Clone, Debug)]
pub struct NumaTopo {
    pub id: u32,
    /// Logical CPU ids (empty: unknown, NCCL reads the affinity itself).
    pub cores: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct GpuTopo {
    pub index: u32,
    pub numa: u32,
    pub pcie_switch: Option<String>,
    /// Compute capability x 10 (90 for Hopper).
    pub sm: u32,
    /// PCI device id (`0x2330`).
    pub pci_device: u16,
    /// The declared bus id (`0000:18:00.0`), if any.
    pub bus_id: Option<String>,
}

#[derive(Clone, Debug)]
pub struct NicTopo {
    pub index: u32,
    /// RDMA device name (`mlx5_0`).
    pub name: String,
    pub numa: u32,
    pub pcie_switch: Option<String>,
    pub speed_mbps: u64,
    pub roce: bool,
    pub bus_id: Option<String>,
}

/// The NVSwitch target NCCL's dumps use a bus id for; any id works (one NVS node).
pub const NVSWITCH_BUS_ID: &str = "0000:ff:00.0";

pub use crate::units::normalize_bus_id;

/// Whether every GPU and NIC has a declared bus id (the file then matches the node).
pub fn bus_ids_declared(t: &NodeTopo) -> bool {
    (!t.gpus.is_empty() || !t.nics.is_empty())
        && t.gpus.iter().all(|g| g.bus_id.is_some())
        && t.nics.iter().all(|n| n.bus_id.is_some())
}

/// A Linux cpumask (`ffffffff,00ff0000`, 32-bit groups, most significant first).
fn cpumask(cores: &[u32]) -> String {
    let top = cores.iter().copied().max().unwrap_or(0);
    let groups = (top / 32 + 1) as usize;
    let mut words = vec![0u32; groups];
    for &c in cores {
        words[(c / 32) as usize] |= 1 << (c % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Bus ids: the declared ones, else synthetic ones. Synthetic: PCIe switch `j` is the
/// bridge on bus `0x10 + 0x10*j` with its devices on the next buses; devices on no
/// switch get buses from `0x80` up (per class, unique, deterministic).
struct Ids {
    switch: BTreeMap<String, String>,
    gpu: BTreeMap<u32, String>,
    nic: BTreeMap<u32, String>,
}

fn ids(t: &NodeTopo) -> Ids {
    let bus = |b: u32| format!("0000:{:02x}:00.0", b & 0xff);
    let mut next_in: BTreeMap<String, u32> = BTreeMap::new();
    let mut switch = BTreeMap::new();
    for (j, s) in t.pcie_switches.iter().enumerate() {
        let b = 0x10 + 0x10 * j as u32;
        switch.insert(s.clone(), bus(b));
        next_in.insert(s.clone(), b + 1);
    }
    let mut loose = 0x80u32;
    let mut take = |sw: &Option<String>| -> String {
        match sw.as_ref().and_then(|s| next_in.get_mut(s)) {
            Some(n) => {
                *n += 1;
                bus(*n - 1)
            }
            None => {
                loose += 1;
                bus(loose - 1)
            }
        }
    };
    let mut gpu = BTreeMap::new();
    for g in &t.gpus {
        let id = g.bus_id.clone().unwrap_or_else(|| take(&g.pcie_switch));
        gpu.insert(g.index, id);
    }
    let mut nic = BTreeMap::new();
    for n in &t.nics {
        let id = n.bus_id.clone().unwrap_or_else(|| take(&n.pcie_switch));
        nic.insert(n.index, id);
    }
    Ids { switch, gpu, nic }
}

/// The topology file of one node class.
pub fn topology_xml(t: &NodeTopo) -> String {
    let ids = ids(t);
    let mut s = String::from("<system version=\"1\">\n");
    let numa_ids: Vec<u32> = t.numa.iter().map(|n| n.id).collect();
    for n in &t.numa {
        let _ = write!(s, "  <cpu numaid=\"{}\"", n.id);
        if !n.cores.is_empty() {
            let _ = write!(s, " affinity=\"{}\"", cpumask(&n.cores));
        }
        let _ = writeln!(s, " arch=\"{}\">", esc(&t.cpu_arch));
        // Switches holding a device of this NUMA node (first device decides).
        for sw in &t.pcie_switches {
            let home = t
                .gpus
                .iter()
                .filter(|g| g.pcie_switch.as_ref() == Some(sw))
                .map(|g| g.numa)
                .chain(
                    t.nics
                        .iter()
                        .filter(|x| x.pcie_switch.as_ref() == Some(sw))
                        .map(|x| x.numa),
                )
                .next();
            let home = home.filter(|h| numa_ids.contains(h)).unwrap_or(numa_ids[0]);
            if home != n.id {
                continue;
            }
            let _ = writeln!(
                s,
                "    <pci busid=\"{}\" class=\"0x060400\" link_speed=\"{}\" link_width=\"16\">",
                ids.switch[sw],
                esc(&t.link_speed)
            );
            devices(&mut s, t, &ids, Some(sw), None, "      ");
            s.push_str("    </pci>\n");
        }
        devices(&mut s, t, &ids, None, Some(n.id), "    ");
        s.push_str("  </cpu>\n");
    }
    s.push_str("</system>\n");
    s
}

/// The GPUs and NICs below switch `sw` (or, with `sw` `None`, on no switch of NUMA node
/// `numa`).
fn devices(
    s: &mut String,
    t: &NodeTopo,
    ids: &Ids,
    sw: Option<&String>,
    numa: Option<u32>,
    ind: &str,
) {
    let here = |dev_sw: &Option<String>, dev_numa: u32| match sw {
        Some(x) => dev_sw.as_ref() == Some(x),
        None => {
            dev_sw.as_ref().is_none_or(|d| !t.pcie_switches.contains(d)) && Some(dev_numa) == numa
        }
    };
    for g in t.gpus.iter().filter(|g| here(&g.pcie_switch, g.numa)) {
        let _ = writeln!(
            s,
            "{ind}<pci busid=\"{}\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x{:04x}\" link_speed=\"{}\" link_width=\"16\">",
            ids.gpu[&g.index],
            g.pci_device,
            esc(&t.link_speed)
        );
        let links = nvlinks(t, ids, g.index);
        if links.is_empty() {
            let _ = writeln!(
                s,
                "{ind}  <gpu dev=\"{}\" sm=\"{}\" gdr=\"1\"/>",
                g.index, g.sm
            );
        } else {
            let _ = writeln!(
                s,
                "{ind}  <gpu dev=\"{}\" sm=\"{}\" gdr=\"1\">",
                g.index, g.sm
            );
            for (target, count, tclass) in links {
                let _ = writeln!(
                    s,
                    "{ind}    <nvlink target=\"{target}\" count=\"{count}\" tclass=\"{tclass}\"/>"
                );
            }
            let _ = writeln!(s, "{ind}  </gpu>");
        }
        let _ = writeln!(s, "{ind}</pci>");
    }
    for n in t.nics.iter().filter(|n| here(&n.pcie_switch, n.numa)) {
        let _ = writeln!(
            s,
            "{ind}<pci busid=\"{}\" class=\"{}\" link_speed=\"{}\" link_width=\"16\">",
            ids.nic[&n.index],
            if n.roce { "0x020000" } else { "0x020700" },
            esc(&t.link_speed)
        );
        let _ = writeln!(s, "{ind}  <nic>");
        let _ = writeln!(
            s,
            "{ind}    <net name=\"{}\" dev=\"{}\" speed=\"{}\" port=\"1\" gdr=\"1\"/>",
            esc(&n.name),
            n.index,
            n.speed_mbps
        );
        let _ = writeln!(s, "{ind}  </nic>");
        let _ = writeln!(s, "{ind}</pci>");
    }
}

/// NVLinks of GPU `g`: to the NVSwitch, or to each peer of its domain.
fn nvlinks(t: &NodeTopo, ids: &Ids, g: u32) -> Vec<(String, u32, &'static str)> {
    if t.nvlinks_per_gpu == 0 {
        return Vec::new();
    }
    let Some(dom) = t
        .nvlink_domains
        .iter()
        .find(|d| d.contains(&g) && d.len() > 1)
    else {
        return Vec::new();
    };
    if t.nvswitch {
        return vec![(NVSWITCH_BUS_ID.to_string(), t.nvlinks_per_gpu, "0x068000")];
    }
    let peers: Vec<u32> = dom.iter().copied().filter(|p| *p != g).collect();
    let each = (t.nvlinks_per_gpu / peers.len().max(1) as u32).max(1);
    let mut v: Vec<(String, u32, &'static str)> = peers
        .iter()
        .filter_map(|p| ids.gpu.get(p).map(|id| (id.clone(), each, "0x030200")))
        .collect();
    v.sort();
    v
}

/// NCCL settings of one node class.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NcclEnv {
    /// RDMA devices, rail order (`NCCL_IB_HCA`, exact match).
    pub ib_hca: Vec<String>,
    /// `NCCL_SOCKET_IFNAME`, when declared.
    pub socket_ifname: Option<String>,
    /// `NCCL_IB_GID_INDEX` (RoCE).
    pub gid_index: Option<u32>,
    /// `NCCL_TOPO_FILE`, when the file matches the node (declared bus ids).
    pub topo_file: Option<String>,
}

/// `NCCL_IB_HCA` for these devices: `=` (exact names, not prefixes: `mlx5_1` must not
/// also select `mlx5_10`), comma-separated.
pub fn ib_hca_value(names: &[String]) -> String {
    format!("={}", names.join(","))
}

impl NcclEnv {
    /// The variables, sorted by name.
    pub fn vars(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if !self.ib_hca.is_empty() {
            v.push(("NCCL_IB_HCA".to_string(), ib_hca_value(&self.ib_hca)));
        }
        if let Some(i) = self.gid_index {
            v.push(("NCCL_IB_GID_INDEX".to_string(), i.to_string()));
        }
        if let Some(s) = &self.socket_ifname {
            v.push(("NCCL_SOCKET_IFNAME".to_string(), s.clone()));
        }
        if let Some(f) = &self.topo_file {
            v.push(("NCCL_TOPO_FILE".to_string(), f.clone()));
        }
        v.sort();
        v
    }
}

/// An environment file: `# ` header lines, notes, then `KEY=VALUE` lines (values
/// shell-quoted when needed: readable by `sh` and by systemd's `EnvironmentFile=`).
pub fn env_file(header: &str, notes: &[String], e: &NcclEnv) -> String {
    let mut s = String::new();
    for l in header.lines().chain(notes.iter().flat_map(|n| n.lines())) {
        let _ = writeln!(s, "# {l}");
    }
    for (k, v) in e.vars() {
        let _ = writeln!(s, "{k}={}", super::sh_word(&v));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> NodeTopo {
        NodeTopo {
            numa: vec![
                NumaTopo {
                    id: 0,
                    cores: (0..56).collect(),
                },
                NumaTopo {
                    id: 1,
                    cores: (56..112).collect(),
                },
            ],
            pcie_switches: (0..4).map(|i| format!("pex{i}")).collect(),
            gpus: (0..8)
                .map(|g| GpuTopo {
                    index: g,
                    numa: g / 4,
                    pcie_switch: Some(format!("pex{}", g / 2)),
                    sm: 90,
                    pci_device: 0x2330,
                    bus_id: None,
                })
                .collect(),
            nics: (0..8)
                .map(|i| NicTopo {
                    index: i,
                    name: format!("mlx5_{i}"),
                    numa: i / 4,
                    pcie_switch: Some(format!("pex{}", i / 2)),
                    speed_mbps: 400_000,
                    roce: false,
                    bus_id: None,
                })
                .collect(),
            nvlink_domains: vec![(0..8).collect()],
            nvswitch: true,
            nvlinks_per_gpu: 18,
            cpu_arch: "x86_64".into(),
            link_speed: "32.0 GT/s PCIe".into(),
        }
    }

    #[test]
    fn h100_has_every_device_once_under_its_switch() {
        let x = topology_xml(&h100());
        assert_eq!(x.matches("<gpu ").count(), 8);
        assert_eq!(x.matches("<net ").count(), 8);
        assert_eq!(x.matches("class=\"0x060400\"").count(), 4);
        assert_eq!(x.matches("tclass=\"0x068000\"").count(), 8);
        assert!(x.contains("speed=\"400000\""));
        assert!(x.contains("affinity=\"00ffffff,ffffffff\""));
        // pex0 (bus 0x10) holds GPU 0 and 1 and mlx5_0, mlx5_1 on the next buses.
        assert!(x.contains("busid=\"0000:11:00.0\" class=\"0x030200\""));
        assert!(x.contains("busid=\"0000:13:00.0\" class=\"0x020700\""));
        assert_eq!(x, topology_xml(&h100()));
    }

    #[test]
    fn pcie_peers_link_each_other_and_roce_is_ethernet() {
        let mut t = h100();
        t.nvswitch = false;
        t.nvlinks_per_gpu = 4;
        t.nvlink_domains = vec![vec![0, 1], vec![2, 3]];
        t.nics.iter_mut().for_each(|n| n.roce = true);
        let x = topology_xml(&t);
        assert_eq!(x.matches("tclass=\"0x030200\"").count(), 4);
        assert!(x.contains("count=\"4\""));
        assert!(x.contains("class=\"0x020000\""));
        assert!(!x.contains("0x068000"));
    }

    #[test]
    fn bus_ids_normalize_and_synthetic_ones_are_not_a_match() {
        assert_eq!(
            normalize_bus_id("00000000:18:00.0").as_deref(),
            Some("0000:18:00.0")
        );
        assert_eq!(
            normalize_bus_id("0000:AB:00.0").as_deref(),
            Some("0000:ab:00.0")
        );
        assert_eq!(normalize_bus_id("18:00.0").as_deref(), Some("0000:18:00.0"));
        assert_eq!(normalize_bus_id("0000:18:00"), None);
        assert_eq!(normalize_bus_id("0000:118:00.0"), None);
        let mut t = h100();
        assert!(!bus_ids_declared(&t));
        t.gpus[0].bus_id = Some("0000:18:00.0".into());
        assert!(topology_xml(&t).contains("busid=\"0000:18:00.0\" class=\"0x030200\""));
        assert!(!bus_ids_declared(&t));
    }

    #[test]
    fn env_file_quotes_and_orders() {
        let e = NcclEnv {
            ib_hca: vec!["mlx5_0".into(), "mlx5_1".into()],
            socket_ifname: Some("^docker,lo".into()),
            gid_index: Some(3),
            topo_file: None,
        };
        let f = env_file("h", &[], &e);
        assert_eq!(
            f,
            "# h\nNCCL_IB_GID_INDEX=3\nNCCL_IB_HCA='=mlx5_0,mlx5_1'\nNCCL_SOCKET_IFNAME='^docker,lo'\n"
        );
    }
}
