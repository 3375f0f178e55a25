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
//!         <gpu dev="0" sm="90">
//!           <nvlink target="0000:ff:00.0" count="18" tclass="0x068000"/>
//!         </gpu>
//!       </pci>
//!       <pci busid=... class="0x020700" ...>
//!         <nic><net name="mlx5_0" dev="0" speed="400000" port="1"/></nic>
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
//! - NCCL's reader is not a full XML parser (`xmlGetNode`, `xmlGetValue`): a start tag
//!   on one line, attributes separated by one space, at most 16 attributes and 255
//!   characters a value, no entity decoding (so names must not need escaping; `esc` is
//!   only a guard). Unknown elements are skipped. `system version` must be 1.
//! - Attributes NCCL can read from the machine are left out (`rank`, CPU `vendor`,
//!   `familyid`, `modelid`, NIC `guid`, `latency`, `maxconn`): `ncclTopoGetXmlFromCpu`
//!   fills each missing CPU attribute (`xmlGetAttrIndex == -1`) for a CPU element reached
//!   from a matched device. The file's values otherwise win: `ncclTopoProcessNet` uses
//!   `xmlInitAttrInt` (sets only when unset) for a net's `speed`, `port`, `gdr`, `latency`,
//!   `maxconn`, and so does `ncclTopoGetSystem` for a GPU's `gdr`; it always overwrites
//!   a net's `dev` (the plugin's index). A written `gdr` would therefore assert
//!   GPUDirect RDMA instead of letting NCCL probe it (nvidia-peermem or dma-buf loaded,
//!   the NIC and GPU under one switch): gpuplan cannot know that offline, so it writes no
//!   `gdr` on GPUs or nets and NCCL probes it on the node.
//! - Matching: `ncclTopoGetPciNode` finds a GPU's `pci` element by `busid` (a string
//!   compare, so lowercase `dddd:bb:dd.f` as NCCL prints it), `ncclTopoFillNet` a NIC's
//!   `net` element by `name`, and, when the file has no such `net`, the NIC's `pci` by
//!   bus id (Azure's published `topology/ndv5-topo.xml` in Azure/azhpc-images is such a
//!   skeleton: bridges in domain `ffff`, bare `pci` leaves NCCL fills in).
//!   `ncclTopoTrimXml` then removes every `pci`, `cpu`, `nic`, `net` branch without a
//!   device NCCL uses, so unmatched entries are harmless, and matched ones keep the
//!   file's placement.
//! - Real dumps (HGX H100) list one `nvlink` per NVSwitch (counts 5, 5, 4, 4); NCCL makes
//!   a single NVS node of them all, so one target with all 18 links is the same graph.
//!   Where the switch is hidden (VMs, GB200) NCCL writes target `fffffff:ff:ff.0`.
//! - **Bus ids.** A file with invented bus ids would put real NICs (matched by name)
//!   under invented switches, away from their GPUs, and NCCL would then refuse GPUDirect
//!   RDMA. So bus ids are the declared ones (`gpus bus-ids=`, `nics bus-ids=`) when known;
//!   otherwise they are synthetic, unique and deterministic, the file is for review only,
//!   and [`env_file`] does not point `NCCL_TOPO_FILE` at it (see `render::fabric`). With
//!   declared ids the bridges (never declared) get synthetic ids in domain `ffff`, where
//!   no real device sits.
//!
//! Layout: `cpu` per NUMA node > a bridge `pci` (class `0x060400`) per PCIe switch > the
//! GPUs' and NICs' `pci`; devices on no switch directly below their `cpu`. Siblings are
//! sorted by bus id (as NCCL keeps them), indentation is two spaces, the file ends in a
//! newline. NVLink: with `nvswitch`, one `nvlink` to [`NVSWITCH_BUS_ID`] with all links
//! (`tclass="0x068000"`); without, one to each other GPU of the domain with
//! `links / peers` (at least 1) links.
//!
//! `NCCL_IB_HCA`: a leading `=` makes NCCL match the names exactly instead of as prefixes
//! (NCCL's env docs; `matchIf` in `src/misc/utils.cc`; `mlx5_1` would otherwise also
//! select `mlx5_10`), without `:port`: `matchPort` takes any port then.

mod class;

pub use class::{NCCL_DIR, env_for, settings, topology};

use std::collections::{BTreeMap, BTreeSet};
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
pub(crate) const NVSWITCH_BUS_ID: &str = "0000:ff:00.0";

pub use crate::units::normalize_bus_id;

/// Whether every GPU and NIC has a declared bus id (the file then matches the node).
pub(crate) fn bus_ids_declared(t: &NodeTopo) -> bool {
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

/// Bus ids: the declared ones, else synthetic ones, all distinct. Synthetic: PCIe switch
/// `j` is the bridge on bus `0x10 + 0x10*j` with its devices on the next buses; devices on
/// no switch get buses from `0x80` up. An id already taken (a declared one, or a switch
/// past the seventh, or a switch with more than 15 devices) moves to the next free bus.
/// When any device has a declared id, synthetic ids use PCI domain `ffff` (as Azure's
/// published topology files do for their bridges), so that no invented id can be a real
/// device of the node.
struct Ids {
    switch: BTreeMap<String, String>,
    gpu: BTreeMap<u32, String>,
    nic: BTreeMap<u32, String>,
}

/// Synthetic bus ids, unique among themselves and `taken`.
struct Alloc {
    domain: u32,
    taken: BTreeSet<String>,
    /// Where the search for a free bus goes on (bus number, domain carried above 0xff).
    next_free: u32,
}

impl Alloc {
    /// Bus `bus` (above 0xff: the next domain up from 0000, down from ffff).
    fn id(&self, bus: u32) -> String {
        let domain = if self.domain == 0 {
            bus / 0x100
        } else {
            self.domain - (bus / 0x100).min(self.domain)
        };
        format!("{domain:04x}:{:02x}:00.0", bus % 0x100)
    }

    /// `preferred` when free, else the next free bus.
    fn take(&mut self, preferred: u32) -> (String, u32) {
        let mut b = preferred;
        if b > 0xff || self.taken.contains(&self.id(b)) {
            b = self.next_free;
            while self.taken.contains(&self.id(b)) {
                b += 1;
            }
        }
        let id = self.id(b);
        self.taken.insert(id.clone());
        (id, b)
    }
}

fn ids(t: &NodeTopo) -> Ids {
    let declared: BTreeSet<String> = t
        .gpus
        .iter()
        .filter_map(|g| g.bus_id.clone())
        .chain(t.nics.iter().filter_map(|n| n.bus_id.clone()))
        .collect();
    let mut a = Alloc {
        domain: if declared.is_empty() { 0 } else { 0xffff },
        taken: declared,
        next_free: 0x100,
    };
    let mut next_in: BTreeMap<String, u32> = BTreeMap::new();
    let mut switch = BTreeMap::new();
    for (j, s) in t.pcie_switches.iter().enumerate() {
        if switch.contains_key(s) {
            continue;
        }
        let (id, b) = a.take(0x10 + 0x10 * j as u32);
        switch.insert(s.clone(), id);
        next_in.insert(s.clone(), b + 1);
    }
    let mut loose = 0x80u32;
    let mut take = |sw: &Option<String>| -> String {
        let slot = match sw.as_ref().and_then(|s| next_in.get_mut(s)) {
            Some(n) => n,
            None => &mut loose,
        };
        let (id, b) = a.take(*slot);
        *slot = b + 1;
        id
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

/// The topology file of one node class: `cpu` elements in NUMA order; below each, its
/// PCIe switches (a bridge `pci`) and its devices on no switch, sorted by bus id (as NCCL
/// keeps them); below a bridge its GPUs and NICs, sorted by bus id. A switch belongs to
/// the NUMA node of its first device (GPUs first); a device of an unknown NUMA node, or a
/// switch without devices, to the first NUMA node. No NUMA node declared: one, id 0.
pub fn topology_xml(t: &NodeTopo) -> String {
    let ids = ids(t);
    let unknown = [NumaTopo {
        id: 0,
        cores: Vec::new(),
    }];
    let numa: &[NumaTopo] = if t.numa.is_empty() { &unknown } else { &t.numa };
    let home = |n: u32| {
        if numa.iter().any(|x| x.id == n) {
            n
        } else {
            numa[0].id
        }
    };
    let on_switch =
        |sw: &Option<String>| sw.as_ref().filter(|s| t.pcie_switches.contains(s)).cloned();
    let mut s = String::from("<system version=\"1\">\n");
    for n in numa {
        let _ = write!(s, "  <cpu numaid=\"{}\"", n.id);
        if !n.cores.is_empty() {
            let _ = write!(s, " affinity=\"{}\"", cpumask(&n.cores));
        }
        let _ = writeln!(s, " arch=\"{}\">", esc(&t.cpu_arch));
        // (bus id, element) of everything directly below this cpu.
        let mut kids: Vec<(String, String)> = Vec::new();
        for sw in ids.switch.keys() {
            let first = t
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
            if home(first.unwrap_or(numa[0].id)) != n.id {
                continue;
            }
            let id = &ids.switch[sw];
            let mut e = format!(
                "    <pci busid=\"{id}\" class=\"0x060400\" link_speed=\"{}\" link_width=\"16\">\n",
                esc(&t.link_speed)
            );
            for (_, d) in devices(t, &ids, |dsw, _| dsw.as_ref() == Some(sw), "      ") {
                e.push_str(&d);
            }
            e.push_str("    </pci>\n");
            kids.push((id.clone(), e));
        }
        kids.extend(devices(
            t,
            &ids,
            |dsw, dnuma| on_switch(dsw).is_none() && home(dnuma) == n.id,
            "    ",
        ));
        kids.sort();
        for (_, e) in kids {
            s.push_str(&e);
        }
        s.push_str("  </cpu>\n");
    }
    s.push_str("</system>\n");
    s
}

/// The GPUs and NICs for which `here(switch, numa)` holds, as (bus id, element), sorted
/// by bus id.
fn devices(
    t: &NodeTopo,
    ids: &Ids,
    here: impl Fn(&Option<String>, u32) -> bool,
    ind: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for g in t.gpus.iter().filter(|g| here(&g.pcie_switch, g.numa)) {
        let id = &ids.gpu[&g.index];
        let mut s = format!(
            "{ind}<pci busid=\"{id}\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x{:04x}\" link_speed=\"{}\" link_width=\"16\">\n",
            g.pci_device,
            esc(&t.link_speed)
        );
        let links = nvlinks(t, ids, g.index);
        if links.is_empty() {
            let _ = writeln!(s, "{ind}  <gpu dev=\"{}\" sm=\"{}\"/>", g.index, g.sm);
        } else {
            let _ = writeln!(s, "{ind}  <gpu dev=\"{}\" sm=\"{}\">", g.index, g.sm);
            for (target, count, tclass) in links {
                let _ = writeln!(
                    s,
                    "{ind}    <nvlink target=\"{target}\" count=\"{count}\" tclass=\"{tclass}\"/>"
                );
            }
            let _ = writeln!(s, "{ind}  </gpu>");
        }
        let _ = writeln!(s, "{ind}</pci>");
        out.push((id.clone(), s));
    }
    for n in t.nics.iter().filter(|n| here(&n.pcie_switch, n.numa)) {
        let id = &ids.nic[&n.index];
        let mut s = format!(
            "{ind}<pci busid=\"{id}\" class=\"{}\" link_speed=\"{}\" link_width=\"16\">\n",
            if n.roce { "0x020000" } else { "0x020700" },
            esc(&t.link_speed)
        );
        let _ = writeln!(s, "{ind}  <nic>");
        let _ = writeln!(
            s,
            "{ind}    <net name=\"{}\" dev=\"{}\" speed=\"{}\" port=\"1\"/>",
            esc(&n.name),
            n.index,
            n.speed_mbps
        );
        let _ = writeln!(s, "{ind}  </nic>");
        let _ = writeln!(s, "{ind}</pci>");
        out.push((id.clone(), s));
    }
    out.sort();
    out
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
pub(crate) fn ib_hca_value(names: &[String]) -> String {
    format!("={}", names.join(","))
}

impl NcclEnv {
    /// The variables, sorted by name.
    pub(crate) fn vars(&self) -> Vec<(String, String)> {
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
pub(crate) fn env_file(header: &str, notes: &[String], e: &NcclEnv) -> String {
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

    /// Every `busid="..."` of a file, in order.
    fn busids(x: &str) -> Vec<&str> {
        x.split("busid=\"")
            .skip(1)
            .map(|r| &r[..r.find('"').unwrap()])
            .collect()
    }

    fn assert_unique_busids(x: &str) {
        let v = busids(x);
        let set: BTreeSet<&str> = v.iter().copied().collect();
        assert_eq!(set.len(), v.len(), "repeated bus id in\n{x}");
    }

    /// An L40S node: 2 NUMA nodes, no PCIe switch declared, no NVLink, 2 RoCE NICs.
    fn l40s() -> NodeTopo {
        NodeTopo {
            numa: vec![
                NumaTopo {
                    id: 0,
                    cores: Vec::new(),
                },
                NumaTopo {
                    id: 1,
                    cores: Vec::new(),
                },
            ],
            pcie_switches: Vec::new(),
            gpus: (0..4)
                .map(|g| GpuTopo {
                    index: g,
                    numa: g / 2,
                    pcie_switch: None,
                    sm: 89,
                    pci_device: 0x26b9,
                    bus_id: None,
                })
                .collect(),
            nics: (0..2)
                .map(|i| NicTopo {
                    index: i,
                    name: format!("mlx5_{i}"),
                    numa: i,
                    pcie_switch: None,
                    speed_mbps: 200_000,
                    roce: true,
                    bus_id: None,
                })
                .collect(),
            nvlink_domains: Vec::new(),
            nvswitch: false,
            nvlinks_per_gpu: 0,
            cpu_arch: "x86_64".into(),
            link_speed: "16.0 GT/s PCIe".into(),
        }
    }

    #[test]
    fn l40s_has_no_nvlink_and_ethernet_nics_on_their_numa_node() {
        let x = topology_xml(&l40s());
        assert!(!x.contains("<nvlink"));
        assert!(!x.contains("0x060400"), "no switch declared, no bridge");
        assert_eq!(x.matches("class=\"0x020000\"").count(), 2);
        assert_eq!(x.matches("<gpu ").count(), 4);
        assert!(x.contains("<gpu dev=\"3\" sm=\"89\"/>"));
        assert!(
            !x.contains("gdr="),
            "GPUDirect RDMA is probed by NCCL, never asserted"
        );
        // mlx5_1 sits under the second cpu element.
        let cpu1 = x.find("<cpu numaid=\"1\"").unwrap();
        assert!(x.find("name=\"mlx5_1\"").unwrap() > cpu1);
        assert!(x.find("name=\"mlx5_0\"").unwrap() < cpu1);
        assert!(
            !x.contains("affinity"),
            "unknown cores: NCCL reads the affinity"
        );
        assert_unique_busids(&x);
        assert!(x.ends_with("</system>\n"));
    }

    #[test]
    fn empty_nvlink_domains_or_zero_links_write_no_nvlink() {
        let mut t = h100();
        t.nvlink_domains.clear();
        assert!(!topology_xml(&t).contains("<nvlink"));
        let mut t = h100();
        t.nvlinks_per_gpu = 0;
        assert!(!topology_xml(&t).contains("<nvlink"));
        // A domain of one GPU links to nothing.
        let mut t = h100();
        t.nvswitch = false;
        t.nvlink_domains = vec![vec![0]];
        assert!(!topology_xml(&t).contains("<nvlink"));
    }

    #[test]
    fn lines_are_indented_by_two_spaces_per_level() {
        let x = topology_xml(&h100());
        let mut depth = 0usize;
        for l in x.lines() {
            let closing = l.trim_start().starts_with("</");
            if closing {
                depth -= 1;
            }
            assert_eq!(l.len() - l.trim_start().len(), 2 * depth, "{l}");
            if !closing && !l.ends_with("/>") {
                depth += 1;
            }
        }
        assert_eq!(depth, 0);
    }

    #[test]
    fn synthetic_bus_ids_never_collide() {
        // 10 switches (the 8th would take bus 0x80, where devices on no switch start),
        // one switch with 20 devices, devices on no switch and on an undeclared switch.
        let mut t = h100();
        t.pcie_switches = (0..10).map(|i| format!("pex{i}")).collect();
        t.gpus = (0..20)
            .map(|g| GpuTopo {
                index: g,
                numa: 0,
                pcie_switch: Some("pex9".into()),
                sm: 90,
                pci_device: 0x2330,
                bus_id: None,
            })
            .collect();
        t.nics = (0..6)
            .map(|i| NicTopo {
                index: i,
                name: format!("mlx5_{i}"),
                numa: i % 2,
                pcie_switch: match i {
                    0 => Some("pex7".into()),
                    1 => Some("nowhere".into()),
                    _ => None,
                },
                speed_mbps: 400_000,
                roce: false,
                bus_id: None,
            })
            .collect();
        let x = topology_xml(&t);
        assert_unique_busids(&x);
        assert_eq!(x.matches("<gpu ").count(), 20);
        assert_eq!(x.matches("<net ").count(), 6);
        assert_eq!(x.matches("class=\"0x060400\"").count(), 10);
    }

    #[test]
    fn declared_bus_ids_are_kept_and_synthetic_ones_move_to_domain_ffff() {
        let mut t = h100();
        // The bus a synthetic bridge would take in domain 0000.
        t.gpus[0].bus_id = Some("0000:10:00.0".into());
        t.nics[7].bus_id = Some("0000:0f:00.0".into());
        let x = topology_xml(&t);
        assert_unique_busids(&x);
        assert!(x.contains("busid=\"0000:10:00.0\" class=\"0x030200\""));
        assert!(x.contains("busid=\"0000:0f:00.0\" class=\"0x020700\""));
        assert!(x.contains("busid=\"ffff:10:00.0\" class=\"0x060400\""));
        // Below pex0, the declared GPU (0000:10) sorts before its synthetic peers (ffff:..).
        let pex0 = x.find("busid=\"ffff:10:00.0\"").unwrap();
        let rest = &x[pex0..];
        assert!(rest.find("0000:10:00.0").unwrap() < rest.find("ffff:11:00.0").unwrap());
    }

    #[test]
    fn no_numa_declared_gives_one_cpu_and_unknown_numa_goes_to_the_first() {
        let mut t = l40s();
        t.numa.clear();
        let x = topology_xml(&t);
        assert_eq!(x.matches("<cpu ").count(), 1);
        assert_eq!(x.matches("<gpu ").count(), 4);
        let mut t = l40s();
        t.gpus[3].numa = 7;
        let x = topology_xml(&t);
        assert_eq!(x.matches("<gpu ").count(), 4);
        assert!(x.find("dev=\"3\"").unwrap() < x.find("<cpu numaid=\"1\"").unwrap());
    }

    #[test]
    fn names_are_escaped() {
        let mut t = l40s();
        t.nics[0].name = "a<&\"b".into();
        let x = topology_xml(&t);
        assert!(x.contains("name=\"a&lt;&amp;&quot;b\""));
    }

    #[test]
    fn env_file_leaves_out_what_is_unknown() {
        let e = NcclEnv {
            ib_hca: Vec::new(),
            socket_ifname: None,
            gid_index: None,
            topo_file: Some("/etc/gpuplan/nccl/topo.xml".into()),
        };
        assert_eq!(
            env_file("a\nb", &["n".into()], &e),
            "# a\n# b\n# n\nNCCL_TOPO_FILE=/etc/gpuplan/nccl/topo.xml\n"
        );
    }
}
