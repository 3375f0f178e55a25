//! Every NCCL topology file gpuplan renders (`fabric/<class>/topo.xml`), and files made
//! directly by `render::nccl::topology_xml`, are checked against NCCL's grammar as NCCL's
//! own sources define it ([`common::nccl_grammar`], written independently of the
//! generator). The checker is itself checked: it takes a file shaped like NCCL's own dumps
//! and refuses broken ones. The env files are checked too: one `KEY=VALUE` per line, NCCL
//! names only.

use crate::common;

use crate::common::nccl_grammar::check;
use gpuplan::render::nccl::{self, GpuTopo, NicTopo, NodeTopo, NumaTopo};
use gpuplan::render::{self, Target};
use gpuplan::solve::SolverKind;
use std::path::Path;

fn rendered() -> Vec<(String, String)> {
    let mut dirs = common::examples();
    dirs.push("tests/fixtures/hetero-gb200-h100".into());
    let mut out = Vec::new();
    for d in dirs {
        let c = common::load_dir(Path::new(&d));
        let p = common::plan(&c, SolverKind::Ilp);
        let files = render::render(&c, &p, &[Target::Fabric], &render::Options::default())
            .unwrap()
            .files;
        for (path, text) in files {
            out.push((format!("{}: {path}", d.display()), text));
        }
    }
    out
}

#[test]
fn every_rendered_topology_file_follows_nccls_grammar() {
    let files = rendered();
    let xmls: Vec<&(String, String)> = files.iter().filter(|(p, _)| p.ends_with(".xml")).collect();
    assert!(xmls.len() >= 5, "{}", xmls.len());
    for (path, text) in xmls {
        check(text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"));
    }
}

#[test]
fn env_files_hold_nccl_variables_only() {
    let files = rendered();
    let mut topo_files = 0;
    for (path, text) in files.iter().filter(|(p, _)| p.ends_with("nccl.env")) {
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("{path}: {l}"));
            assert!(
                [
                    "NCCL_IB_HCA",
                    "NCCL_SOCKET_IFNAME",
                    "NCCL_IB_GID_INDEX",
                    "NCCL_TOPO_FILE"
                ]
                .contains(&k),
                "{path}: {k}"
            );
            assert!(
                !v.is_empty() && !v.contains(['$', '`', '"', ' ']),
                "{path}: {l}"
            );
            topo_files += (k == "NCCL_TOPO_FILE") as u32;
        }
    }
    // The fixture declares bus ids for its H100 class: there, and only there, the file
    // is pointed at.
    assert_eq!(topo_files, 1);
}

/// A node: `numa` NUMA nodes, `per_switch` GPUs and as many NICs below each of `switches`
/// switches (none: devices on no switch, 2 per NUMA node).
fn node(numa: u32, switches: u32, gpus: u32, nvswitch: bool, links: u32) -> NodeTopo {
    let sw = |i: u32| (switches > 0).then(|| format!("pex{}", i * switches / gpus));
    NodeTopo {
        numa: (0..numa)
            .map(|id| NumaTopo {
                id,
                cores: (id * 32..id * 32 + 32).collect(),
            })
            .collect(),
        pcie_switches: (0..switches).map(|i| format!("pex{i}")).collect(),
        gpus: (0..gpus)
            .map(|g| GpuTopo {
                index: g,
                numa: g * numa / gpus,
                pcie_switch: sw(g),
                sm: 90,
                pci_device: 0x2330,
                bus_id: None,
            })
            .collect(),
        nics: (0..gpus)
            .map(|i| NicTopo {
                index: i,
                name: format!("mlx5_{i}"),
                numa: i * numa / gpus,
                pcie_switch: sw(i),
                speed_mbps: 400_000,
                roce: !nvswitch,
                bus_id: None,
            })
            .collect(),
        nvlink_domains: if links > 0 {
            vec![(0..gpus).collect()]
        } else {
            Vec::new()
        },
        nvswitch,
        nvlinks_per_gpu: links,
        cpu_arch: "x86_64".into(),
        link_speed: "32.0 GT/s PCIe".into(),
    }
}

#[test]
fn generated_files_follow_nccls_grammar() {
    let mut declared = node(2, 4, 8, true, 18);
    for (i, g) in declared.gpus.iter_mut().enumerate() {
        g.bus_id = Some(format!("0000:{:02x}:00.0", 0x18 + 0x10 * i));
    }
    for (i, n) in declared.nics.iter_mut().enumerate() {
        n.bus_id = Some(format!("0000:{:02x}:00.0", 0x10 * (i + 1)));
    }
    let cases = [
        ("8x H100 SXM, 4 switches", node(2, 4, 8, true, 18)),
        ("4x L40S, no switch, no NVLink", node(2, 0, 4, false, 0)),
        ("4 GPUs, NVLink peers", node(1, 2, 4, false, 12)),
        ("16 switches", node(2, 16, 16, true, 18)),
        ("declared bus ids", declared),
    ];
    for (what, t) in cases {
        let x = nccl::topology_xml(&t);
        check(&x).unwrap_or_else(|e| panic!("{what}: {e}\n{x}"));
        assert!(x.ends_with("</system>\n"), "{what}");
    }
}

/// A file in the shape of NCCL's own `NCCL_TOPO_DUMP_FILE` output on an HGX H100 (one
/// GPU: four NVSwitch targets whose counts add up to 18, all attributes NCCL writes),
/// plus an Azure-style bridge in domain ffff holding a bare `pci` leaf (NCCL fills the
/// device in), a NIC straight under the cpu and a hidden NVSwitch.
const DUMP_LIKE: &str = r#"<system version="1">
  <cpu host_hash="0x1234" numaid="0" affinity="ffffffff,00000000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:15:01.0" class="0x060400" vendor="0x1000" device="0xc030" subsystem_vendor="0x1000" subsystem_device="0xa064" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" subsystem_vendor="0x10de" subsystem_device="0x16c1" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1">
          <nvlink target="0000:07:00.0" count="5" tclass="0x068000"/>
          <nvlink target="0000:06:00.0" count="5" tclass="0x068000"/>
          <nvlink target="0000:05:00.0" count="4" tclass="0x068000"/>
          <nvlink target="0000:08:00.0" count="4" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:19:00.0" class="0x020700" vendor="0x15b3" device="0x1021" subsystem_vendor="0x15b3" subsystem_device="0x0023" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic>
          <net name="mlx5_0" dev="0" speed="400000" port="1" latency="0.000000" guid="0x1c2d3e0003a4b5c6" maxconn="131072" gdr="1"/>
        </nic>
      </pci>
    </pci>
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0001:00:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>
    </pci>
    <nic>
      <net name="eth0" dev="1" speed="10000" port="0" latency="0.000000" guid="0x0" maxconn="65536" gdr="0"/>
    </nic>
  </cpu>
  <cpu numaid="1" arch="x86_64">
    <pci busid="0000:9a:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="100" gdr="1">
        <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>
      </gpu>
    </pci>
  </cpu>
</system>
"#;

#[test]
fn the_checker_takes_a_file_shaped_like_nccls_dumps() {
    check(DUMP_LIKE).unwrap();
}

#[test]
fn the_checker_refuses_broken_files() {
    let good = nccl::topology_xml(&node(2, 4, 8, true, 18));
    check(&good).unwrap();
    let peers = nccl::topology_xml(&node(1, 2, 4, false, 12));
    check(&peers).unwrap();
    let first_gpu_bus = "0000:11:00.0";
    let bad: Vec<(&str, String)> = vec![
        ("missing sm", good.replacen(" sm=\"90\"", "", 1)),
        (
            "missing busid",
            good.replacen(" busid=\"0000:11:00.0\"", "", 1),
        ),
        (
            "missing net speed",
            good.replacen(" speed=\"400000\"", "", 1),
        ),
        ("bad busid", good.replacen(first_gpu_bus, "0:11:0.0", 1)),
        (
            "uppercase busid",
            good.replacen(first_gpu_bus, "0000:1A:00.0", 1),
        ),
        (
            "repeated busid",
            good.replacen("0000:12:00.0", first_gpu_bus, 1),
        ),
        (
            "repeated gpu dev",
            good.replacen("dev=\"1\" sm", "dev=\"0\" sm", 1),
        ),
        (
            "repeated net name",
            good.replacen("mlx5_1\"", "mlx5_0\"", 1),
        ),
        (
            "unknown link speed",
            good.replacen("32.0 GT/s PCIe", "32 Gbps", 1),
        ),
        ("class not hex", good.replacen("0x030200", "GPU", 1)),
        (
            "dev not a number",
            good.replacen("dev=\"0\"", "dev=\"zero\"", 1),
        ),
        ("unknown arch", good.replacen("x86_64", "riscv", 1)),
        (
            "nvlink to an unknown GPU",
            peers.replacen("0000:12:00.0\" count", "0000:77:00.0\" count", 1),
        ),
        (
            "nvlink to a NIC as an NVSwitch",
            good.replacen("0000:ff:00.0", "0000:13:00.0", 1),
        ),
        (
            "nvlink to a GPU named as a switch",
            good.replacen("0000:ff:00.0", "0000:21:00.0", 1),
        ),
        (
            "nvlink count 0",
            good.replacen("count=\"18\"", "count=\"0\"", 1),
        ),
        (
            "gpu below a bridge",
            good.replacen("class=\"0x030200\"", "class=\"0x060400\"", 1),
        ),
        (
            "gpu under cpu",
            good.replacen(
                "<pci busid=\"0000:10:00.0\"",
                "<gpu dev=\"9\" sm=\"90\"/><pci busid=\"0000:10:00.0\"",
                1,
            ),
        ),
        ("unknown element", good.replacen("<nic>", "<nic><port/>", 1)),
        (
            "tag on two lines",
            good.replacen(" sm=\"90\"", "\n sm=\"90\"", 1),
        ),
        ("two spaces", good.replacen(" sm=\"90\"", "  sm=\"90\"", 1)),
        (
            "an entity NCCL would not decode",
            good.replacen("mlx5_0", "mlx5&amp;0", 1),
        ),
        (
            "wrong root",
            good.replacen("version=\"1\"", "version=\"2\"", 1),
        ),
        ("not XML", good.replacen("</system>", "", 1)),
    ];
    for (what, b) in bad {
        assert_ne!(b, good, "{what}: the replacement changed nothing");
        assert!(check(&b).is_err(), "accepted: {what}\n{b}");
    }
}
