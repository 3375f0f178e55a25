//! Discovery and importers (issue 7): every real `nvidia-smi` output under
//! `tests/fixtures/discover/` is imported; complete ones must give KDL that the real
//! validator accepts with no errors, truncated ones a diagnostic with a code and a span.
//! A fake `GpuSource` drives the NVML path (discovery -> KDL -> validate).

use gpuplan::diag::{Diagnostic, Report};
use gpuplan::discover::{
    self, ComputeInstanceFacts, GpuFacts, GpuInstanceFacts, GpuSource, Inventory, MigFacts, Naming,
    NvlinkFacts, Snapshot, SourceError, SystemInfo,
};
use gpuplan::import::nvidia_smi::{inventory, lgip, topo, xml};
use gpuplan::source::{FileId, SourceMap};
use gpuplan::validate;

const DIR: &str = "tests/fixtures/discover";

fn load(rel: &str) -> (SourceMap, FileId) {
    let path = format!("{DIR}/{rel}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut sources = SourceMap::new();
    let id = sources.add(rel.to_string(), text);
    (sources, id)
}

fn naming(model: Option<&str>) -> Naming {
    Naming {
        node: "node-01".into(),
        class: None,
        model: model.map(String::from),
    }
}

fn codes(d: &[Diagnostic]) -> Vec<&'static str> {
    d.iter().map(|d| d.code).collect()
}

/// Validates `kdl` (plus `extra` files) with the real validator; panics on any error.
fn assert_valid(name: &str, kdl: &str, extra: &[(&str, &str)]) -> validate::Outcome {
    let mut sources = SourceMap::new();
    sources.add(format!("{name}.kdl"), kdl.to_string());
    for (n, t) in extra {
        sources.add(n.to_string(), t.to_string());
    }
    let outcome = validate::validate(&sources);
    let errors: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(
        errors.is_empty(),
        "{name}: generated KDL does not validate:\n{}\n{kdl}",
        Report::new(&sources, &outcome.diagnostics).human(false)
    );
    outcome
}

fn report(sources: &SourceMap, diags: &[Diagnostic]) -> String {
    Report::new(sources, diags).human(false)
}

fn import_topo(rel: &str, model: &str) -> (Inventory, Vec<Diagnostic>) {
    let (sources, id) = load(rel);
    let (inv, diags) = topo::import(&sources, id, &naming(Some(model)));
    let inv = inv.unwrap_or_else(|| panic!("{rel}: {}", report(&sources, &diags)));
    (inv, diags)
}

// ------------------------------------------------------------------------------------
// nvidia-smi topo -m

/// An RTX 4090 is not in the catalog: the user declares it next to the imported file.
const RTX4090: (&str, &str) = (
    "rtx4090.kdl",
    "gpu-model \"rtx-4090\" memory=\"24GiB\" nvlink-gen=0\n",
);

#[test]
fn topo_hgx_h100_nv18_is_one_8_gpu_domain() {
    let (inv, diags) = import_topo(
        "topo/02_HGX_H100_SXM_8gpu_NV18__NVIDIA-nccl-issue1264.txt",
        "h100-sxm5-80gb",
    );
    assert_eq!(inv.nvlink_domains, vec![(0..8).collect::<Vec<u32>>()]);
    assert_eq!(inv.nvlink_links, Some(18));
    assert_eq!(inv.nics.len(), 10);
    // NIC3's row is cut and NIC4-NIC9 have none: warnings, never errors.
    assert!(diags.iter().all(|d| !d.is_error()));
    assert_eq!(codes(&diags), vec!["GP713", "GP713"]);
    let text = inventory::render(&inv, "02_HGX_H100_SXM_8gpu_NV18");
    let out = assert_valid("hgx", &text, &[]);
    let m = out.model.unwrap();
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(m.nodes[0].gpus.len(), 8);
    insta::assert_snapshot!("topo_02_hgx_h100", text);
}

#[test]
fn topo_rtx4090_pcie_only_has_no_domain() {
    let (inv, diags) = import_topo(
        "topo/01_8x_RTX4090_PCIe_SYS-only__NVIDIA-go-gpuallocator-issue17.txt",
        "rtx-4090",
    );
    assert!(inv.nvlink_domains.is_empty());
    assert!(diags.is_empty(), "{diags:?}");
    // NUMA from the affinity columns, NICs on the NUMA node of GPU6 (PHB).
    assert_eq!(inv.numa.len(), 2);
    assert_eq!(inv.numa[1].gpus, vec![4, 5, 6, 7]);
    assert_eq!(inv.numa[1].nics, vec![0, 1]);
    let text = inventory::render(&inv, "01_8x_RTX4090_PCIe_SYS-only");
    assert_valid("rtx4090-node", &text, &[RTX4090]);
    insta::assert_snapshot!("topo_01_rtx4090", text);
}

#[test]
fn topo_4x_h100_nv6_is_one_4_gpu_domain() {
    let (inv, diags) = import_topo(
        "topo/04_4x_H100_NV6__NVIDIA-nccl-issue1617.txt",
        "h100-pcie-80gb",
    );
    assert_eq!(inv.nvlink_domains, vec![vec![0, 1, 2, 3]]);
    assert_eq!(inv.nvlink_links, Some(6));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(inv.pcie_switches.len(), 4);
    assert_eq!(inv.pcie_switches[2].gpus, vec![2]);
    assert_eq!(inv.pcie_switches[2].nics, vec![2]);
    let text = inventory::render(&inv, "04_4x_H100_NV6");
    assert_valid("h100x4", &text, &[]);
    insta::assert_snapshot!("topo_04_h100_nv6", text);
}

#[test]
fn topo_8x_h100_without_nic_columns() {
    let (inv, diags) = import_topo(
        "topo/08_H100_8gpu_NV18_noNIC__stas00-ml-engineering.txt",
        "h100-sxm5-80gb",
    );
    assert_eq!(inv.nvlink_domains, vec![(0..8).collect::<Vec<u32>>()]);
    assert!(inv.nics.is_empty());
    assert!(diags.is_empty(), "{diags:?}");
    let text = inventory::render(&inv, "08_H100_8gpu_NV18_noNIC");
    assert_valid("h100x8", &text, &[]);
    insta::assert_snapshot!("topo_08_h100_no_nic", text);
}

#[test]
fn topo_missing_gpu_rows_are_an_error_not_a_guess() {
    let rel = "topo/05_8gpu_PCIe_2017_PIX-PHB-SYS__kubernetes-issue53497.txt";
    let (sources, id) = load(rel);
    let (inv, diags) = topo::import(&sources, id, &naming(Some("a100-pcie-40gb")));
    assert!(inv.is_none());
    assert_eq!(codes(&diags), vec!["GP711", "GP711", "GP711"]);
    let r = report(&sources, &diags);
    assert!(r.contains("no row for GPU5"), "{r}");
    insta::assert_snapshot!("topo_05_truncated_report", r);
}

#[test]
fn topo_cut_gpu_row_is_an_error_with_a_span() {
    let text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\n";
    let mut sources = SourceMap::new();
    let id = sources.add("cut.txt", text);
    let (inv, diags) = topo::import(&sources, id, &naming(Some("h100-sxm5-80gb")));
    assert!(inv.is_none());
    assert_eq!(codes(&diags), vec!["GP711"]);
    let span = diags[0].span.unwrap();
    assert_eq!(sources.get(id).unwrap().line_col(span.offset).0, 3);
}

#[test]
fn topo_bad_cell_and_no_matrix() {
    let mut sources = SourceMap::new();
    let bad = sources.add("bad.txt", "\tGPU0\tGPU1\nGPU0\t X \tNVX\nGPU1\tNVX\t X \n");
    let (_, diags) = topo::import(&sources, bad, &naming(Some("h100-sxm5-80gb")));
    assert!(codes(&diags).contains(&"GP712"), "{diags:?}");
    let empty = sources.add("empty.txt", "hello\n");
    let (_, diags) = topo::import(&sources, empty, &naming(None));
    assert_eq!(codes(&diags), vec!["GP710"]);
}

#[test]
fn topo_without_model_asks_for_one() {
    let (sources, id) = load("topo/04_4x_H100_NV6__NVIDIA-nccl-issue1617.txt");
    let (inv, diags) = topo::import(&sources, id, &naming(None));
    assert!(inv.is_none());
    assert_eq!(codes(&diags), vec!["GP714"]);
    assert!(diags[0].help.as_deref().unwrap().contains("NV6"));
}

// ------------------------------------------------------------------------------------
// nvidia-smi mig -lgip

#[test]
fn lgip_h100_nvl_partial_table() {
    let (sources, id) = load("nvidia-smi/mig_lgip_H100NVL_94GB__NVIDIA-gpu-operator-pr903.txt");
    let (r, diags) = lgip::import(&sources, id, None);
    let r = r.expect("report");
    // The H800 NVL (export variant) has the same MIG table.
    assert_eq!(r.models, vec!["h100-nvl-94gb", "h800-nvl-94gb"]);
    assert_eq!(r.profiles.len(), 3);
    assert!(!r.complete);
    // The cut 2g.24gb row is reported, not guessed.
    assert_eq!(
        codes(&diags).iter().filter(|c| **c == "GP713").count(),
        2,
        "{diags:?}"
    );
    assert!(diags.iter().all(|d| !d.is_error()));
    let text = lgip::render(&r, "mig_lgip_H100NVL_94GB");
    assert_valid("lgip-h100nvl", &text, &[]);
    insta::assert_snapshot!("lgip_h100nvl", text);
    insta::assert_snapshot!("lgip_h100nvl_report", report(&sources, &diags));
}

#[test]
fn lgip_h200_matches_both_h200_models() {
    let (sources, id) = load("nvidia-smi/mig_lgip_H200_141GB__NVIDIA-mig-parted-issue120.txt");
    let (r, diags) = lgip::import(&sources, id, None);
    let r = r.expect("report");
    assert_eq!(r.profiles.len(), 6);
    assert_eq!(r.models.len(), 2, "{:?}", r.models);
    assert!(r.models.iter().all(|m| m.starts_with("h200")));
    assert!(r.mig_names.is_empty());
    assert!(diags.iter().all(|d| !d.is_error()));
    let text = lgip::render(&r, "mig_lgip_H200_141GB");
    assert_valid("lgip-h200", &text, &[]);
    insta::assert_snapshot!("lgip_h200", text);
}

/// RTX PRO 6000 Blackwell (issue 19): the complete published `-lgip` table, Blackwell's
/// `+gfx`, `+me.all` and `-me` variants included, matches the catalog row for row (IDs
/// and usable memory) for both editions.
#[test]
fn lgip_rtx_pro_6000_matches_the_catalog() {
    let (sources, id) =
        load("nvidia-smi/mig_lgip_RTX-PRO-6000-Blackwell__slicing-gpus-in-kubernetes-blog.txt");
    let (r, diags) = lgip::import(&sources, id, None);
    let r = r.expect("report");
    assert_eq!(r.profiles.len(), 11);
    assert_eq!(
        r.models,
        vec![
            "rtx-pro-6000-blackwell-96gb",
            "rtx-pro-6000-blackwell-ws-96gb"
        ]
    );
    assert!(r.complete);
    assert!(r.mig_names.is_empty());
    assert!(diags.is_empty(), "{diags:?}");
    let text = lgip::render(&r, "mig_lgip_RTX-PRO-6000-Blackwell");
    assert_valid("lgip-rtx-pro-6000", &text, &[]);
}

/// Driver 535 on A100 80GB advertises `3g.39gb` and `7g.79gb` (mig-parted#31,
/// gpu-operator#351): the names are pinned with `mig-name`.
#[test]
fn lgip_driver_renames_are_pinned() {
    let table = "\
+-----------------------------------------------------------------------------+
| GPU instance profiles:                                                      |
| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |
|                              Free/Total   GiB              CE    JPEG  OFA  |
|=============================================================================|
|   0  MIG 1g.10gb       19     7/7        9.50       No     14     0     0   |
|                                                             1     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 3g.39gb        9     2/2        39.25      No     42     2     0   |
|                                                             3     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 7g.79gb        0     1/1        79.00      No     98     5     0   |
|                                                             7     1     1   |
+-----------------------------------------------------------------------------+
";
    let mut sources = SourceMap::new();
    let id = sources.add("lgip.txt", table);
    let (r, diags) = lgip::import(&sources, id, Some("a100-sxm4-80gb"));
    let r = r.expect("report");
    assert!(r.complete);
    assert_eq!(
        r.mig_names,
        vec![
            ("3g.40gb".into(), "3g.39gb".into()),
            ("7g.80gb".into(), "7g.79gb".into())
        ]
    );
    assert_eq!(codes(&diags).iter().filter(|c| **c == "GP720").count(), 2);
    // A complete table without 1g.20gb/2g.20gb/4g.40gb/1g.10gb+me: reported as missing.
    assert!(codes(&diags).contains(&"GP722"));
    let text = lgip::render(&r, "a100 driver 535");
    assert!(
        text.contains("mig-name \"3g.40gb\" driver=\"3g.39gb\""),
        "{text}"
    );
    // The pinned driver names are usable in layouts.
    let cluster = "node-class \"a\" {\n    gpus 1 model=\"a100-sxm4-80gb\"\n}\nnodes \"a-01\" class=\"a\"\nmig {\n    layout \"3g.39gb\" \"3g.39gb\" nodes=\"a-01\"\n}\n";
    assert_valid("pins", &text, &[("cluster.kdl", cluster)]);
    insta::assert_snapshot!("lgip_renames", text);
}

#[test]
fn lgip_without_rows_is_an_error() {
    let mut sources = SourceMap::new();
    let id = sources.add("x.txt", "No MIG-enabled devices found.\n");
    let (r, diags) = lgip::import(&sources, id, None);
    assert!(r.is_none());
    assert_eq!(codes(&diags), vec!["GP710"]);
}

// ------------------------------------------------------------------------------------
// nvidia-smi -q -x

#[test]
fn xml_truncated_excerpt_is_an_error() {
    let rel = "nvidia-smi/q_x_A100-SXM4-80GB_MIG-enabled__influxdata-telegraf-issue5812.xml.txt";
    let (sources, id) = load(rel);
    let (inv, diags) = xml::import(&sources, id, &naming(None));
    assert!(inv.is_none());
    assert_eq!(codes(&diags), vec!["GP711"]);
    insta::assert_snapshot!("xml_truncated_report", report(&sources, &diags));
}

#[test]
fn xml_complete_document() {
    let (sources, id) = load("constructed/q_x_2x_H100-80GB_MIG.xml");
    let (inv, diags) = xml::import(&sources, id, &naming(None));
    let inv = inv.unwrap_or_else(|| panic!("{}", report(&sources, &diags)));
    assert_eq!(inv.model.catalog, Some("h100-sxm5-80gb"));
    assert_eq!(inv.model.matched_by, "pci-device-id");
    assert_eq!(inv.system.driver_version.as_deref(), Some("550.90.07"));
    // GPU 1: MIG pending.
    assert_eq!(codes(&diags), vec!["GP703"]);
    let gis = &inv.gpus[0].mig.as_ref().unwrap().gpu_instances;
    assert_eq!(gis.len(), 2);
    assert_eq!(gis[0].memory_mib, Some(40192));
    let text = inventory::render(&inv, "constructed 2x H100");
    assert!(
        !text.contains("layout"),
        "no layout guessed without profile names:\n{text}"
    );
    assert_valid("xml", &text, &[]);
    insta::assert_snapshot!("xml_constructed", text);
}

#[test]
fn xml_gpu_count_mismatch_is_truncation() {
    let doc = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<attached_gpus>2</attached_gpus>\n<gpu id=\"00000000:01:00.0\"><product_name>NVIDIA A100-SXM4-80GB</product_name></gpu>\n</nvidia_smi_log>\n";
    let mut sources = SourceMap::new();
    let id = sources.add("x.xml", doc);
    let (inv, diags) = xml::import(&sources, id, &naming(None));
    assert!(inv.is_none());
    assert_eq!(codes(&diags), vec!["GP711"]);
    assert_eq!(
        sources.snippet(diags[0].span.unwrap()),
        "<attached_gpus>2</attached_gpus>"
    );
}

// ------------------------------------------------------------------------------------
// discover through a fake NVML

/// An HGX H100 (8 GPUs on 4 NVSwitches, two NUMA nodes) with MIG on GPUs 0-1 in the
/// `3g.40gb 2g.20gb 1g.10gb 1g.10gb` layout and MIG pending on GPU 7.
fn hgx_h100() -> Snapshot {
    let switches = [
        "00000000:A5:00.0",
        "00000000:A6:00.0",
        "00000000:A7:00.0",
        "00000000:A8:00.0",
    ];
    let gpus = (0..8u32)
        .map(|i| {
            let mig = match i {
                0 | 1 => Some(MigFacts {
                    current: true,
                    pending: true,
                    gpu_instances: [
                        (1, 9, "3g.40gb", 4, 4),
                        (3, 14, "2g.20gb", 0, 2),
                        (9, 19, "1g.10gb", 2, 1),
                        (10, 19, "1g.10gb", 3, 1),
                    ]
                    .iter()
                    .map(|&(id, pid, name, start, size)| GpuInstanceFacts {
                        id,
                        profile_id: Some(pid),
                        profile: Some(name.into()),
                        start: Some(start),
                        size: Some(size),
                        memory_mib: None,
                        compute_instances: vec![ComputeInstanceFacts {
                            id: 0,
                            profile_id: None,
                            slices: None,
                        }],
                    })
                    .collect(),
                }),
                7 => Some(MigFacts {
                    current: false,
                    pending: true,
                    gpu_instances: vec![],
                }),
                _ => Some(MigFacts::default()),
            };
            GpuFacts {
                index: i,
                name: Some("NVIDIA H100 80GB HBM3".into()),
                pci_device_id: Some(0x2330),
                bus_id: Some(format!("00000000:{:02X}:00.0", 0x18 + 0x10 * i)),
                uuid: Some(format!("GPU-fake-{i}")),
                memory_mib: Some(81559),
                mig,
                nvlinks: (0..18)
                    .map(|l| NvlinkFacts {
                        link: l,
                        remote_bus_id: switches[(l % 4) as usize].into(),
                    })
                    .collect(),
                numa_node: Some(i / 4),
                cpu_affinity: Some(
                    if i < 4 {
                        "0-55,112-167"
                    } else {
                        "56-111,168-223"
                    }
                    .into(),
                ),
            }
        })
        .collect();
    Snapshot {
        system: SystemInfo {
            driver_version: Some("550.90.07".into()),
            cuda_version: Some("12.4".into()),
        },
        gpus,
    }
}

#[test]
fn fake_nvml_hgx_with_mig_validates() {
    let snap = hgx_h100();
    let collected = discover::collect(&snap.source()).unwrap();
    assert_eq!(collected, snap);
    let (inv, diags) = discover::inventory("nvml", &collected, &naming(None)).unwrap();
    assert_eq!(inv.model.catalog, Some("h100-sxm5-80gb"));
    assert_eq!(inv.nvlink_domains, vec![(0..8).collect::<Vec<u32>>()]);
    assert_eq!(inv.numa.len(), 2);
    assert_eq!(codes(&diags), vec!["GP703"]);
    let text = inventory::render(&inv, "fake HGX H100");
    assert!(
        text.contains(
            "layout \"3g.40gb\" \"2g.20gb\" \"1g.10gb*2\" nodes=\"node-01\" gpus=\"0-1\" current=#true"
        ),
        "{text}"
    );
    let out = assert_valid("fake", &text, &[]);
    assert_eq!(out.model.unwrap().nodes[0].gpus.len(), 8);
    insta::assert_snapshot!("discover_fake_hgx", text);
    let json = serde_json::to_value(&inv).unwrap();
    assert_eq!(json["format_version"], "1");
    assert_eq!(
        json["gpus"][0]["mig"]["gpu_instances"][0]["profile"],
        "3g.40gb"
    );
    assert_eq!(json["gpus"][0]["mig"]["gpu_instances"][0]["start"], 4);
}

/// A driver that names 3g.40gb `3g.39gb`: the layout keeps the driver's name and the
/// output pins it, so it validates.
#[test]
fn fake_nvml_renamed_profile_is_pinned() {
    let mut snap = hgx_h100();
    for g in &mut snap.gpus {
        if let Some(m) = &mut g.mig {
            for gi in &mut m.gpu_instances {
                if gi.profile.as_deref() == Some("3g.40gb") {
                    gi.profile = Some("3g.39gb".into());
                }
            }
        }
    }
    let (inv, diags) = discover::inventory("nvml", &snap, &naming(None)).unwrap();
    assert_eq!(
        inv.mig_names,
        vec![("3g.40gb".to_string(), "3g.39gb".to_string())]
    );
    assert!(codes(&diags).contains(&"GP720"));
    let text = inventory::render(&inv, "renamed");
    assert!(text.contains("mig-name \"3g.40gb\" driver=\"3g.39gb\""));
    assert_valid("renamed", &text, &[]);
}

#[test]
fn fake_nvml_unknown_gpu_declares_a_model() {
    let snap = Snapshot {
        system: SystemInfo::default(),
        gpus: (0..2)
            .map(|i| GpuFacts {
                index: i,
                name: Some("NVIDIA GeForce RTX 4090".into()),
                pci_device_id: Some(0x2684),
                memory_mib: Some(24564),
                ..GpuFacts::default()
            })
            .collect(),
    };
    let (inv, diags) = discover::inventory("nvml", &snap, &naming(None)).unwrap();
    assert_eq!(codes(&diags), vec!["GP702"]);
    let text = inventory::render(&inv, "rtx");
    assert!(
        text.contains("gpu-model \"geforce-rtx-4090\" memory=\"24564MiB\""),
        "{text}"
    );
    assert_valid("rtx", &text, &[]);
}

struct Broken;
impl GpuSource for Broken {
    fn system(&self) -> Result<SystemInfo, SourceError> {
        Ok(SystemInfo::default())
    }
    fn gpu_count(&self) -> Result<u32, SourceError> {
        Ok(2)
    }
    fn gpu(&self, i: u32) -> Result<GpuFacts, SourceError> {
        Err(SourceError {
            code: discover::GP701,
            message: format!("GPU {i} fell off the bus"),
            help: None,
        })
    }
}

#[test]
fn a_failing_gpu_stops_discovery() {
    let e = discover::collect(&Broken).unwrap_err();
    assert_eq!(e.code, "GP701");
}

// ------------------------------------------------------------------------------------
// truncation at every byte

fn fixture_files() -> Vec<String> {
    let mut v = Vec::new();
    for sub in ["topo", "nvidia-smi", "constructed"] {
        let mut names: Vec<String> = std::fs::read_dir(format!("{DIR}/{sub}"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| format!("{sub}/{}", e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        v.extend(names);
    }
    v
}

/// Every prefix of every input, through every importer: no panic, and a topology
/// matrix that imports has a row for every GPU column of its header (a cut never
/// silently drops GPUs).
#[test]
fn every_prefix_of_every_input_is_handled() {
    for rel in fixture_files() {
        let text = std::fs::read_to_string(format!("{DIR}/{rel}")).unwrap();
        let ends: Vec<usize> = (0..=text.len())
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        for end in ends {
            let mut sources = SourceMap::new();
            let id = sources.add(rel.clone(), text[..end].to_string());
            let (inv, diags) = topo::import(&sources, id, &naming(Some("h100-sxm5-80gb")));
            match inv {
                Some(inv) => {
                    let header_gpus = text[..end]
                        .lines()
                        .find(|l| l.starts_with([' ', '\t']) && l.contains("GPU0"))
                        .map(|l| {
                            l.split_whitespace()
                                .filter(|c| c.starts_with("GPU") && c[3..].parse::<u32>().is_ok())
                                .count()
                        })
                        .unwrap();
                    assert_eq!(inv.gpus.len(), header_gpus, "{rel} cut at {end}");
                }
                None => assert!(
                    diags.iter().any(|d| d.is_error()),
                    "{rel} cut at {end}: no error"
                ),
            }
            let (inv, diags) = xml::import(&sources, id, &naming(None));
            assert!(
                inv.is_some() || diags.iter().any(|d| d.is_error()),
                "{rel} cut at {end}"
            );
            let (r, diags) = lgip::import(&sources, id, None);
            assert!(
                r.is_some() || diags.iter().any(|d| d.is_error()),
                "{rel} cut at {end}"
            );
        }
    }
}

/// The `discover` command over a recorded source: KDL to `-o FILE`, exit 0, and the file
/// validates; JSON carries the format version.
#[test]
fn discover_command_over_a_recorded_source() {
    use gpuplan::cli::{ColorChoice, DataFormat, NamingArgs};
    use gpuplan::commands::{Output, discover as cmd};
    let dir = std::env::temp_dir().join(format!("gpuplan-discover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let snap = hgx_h100();
    let out = Output::new(ColorChoice::Never, true);
    for (format, name) in [
        (DataFormat::Kdl, "node.kdl"),
        (DataFormat::Json, "node.json"),
    ] {
        let settings = cmd::Settings {
            naming: NamingArgs::default(),
            format,
            out: Some(dir.join(name)),
        };
        let code = cmd::run_with(
            &snap.source(),
            Some("HGX-07.lab.example".into()),
            &settings,
            &out,
        );
        assert_eq!(code, 0);
    }
    let kdl = std::fs::read_to_string(dir.join("node.kdl")).unwrap();
    assert!(kdl.contains("nodes \"hgx-07.lab.example\""), "{kdl}");
    assert_valid("discovered", &kdl, &[]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("node.json")).unwrap()).unwrap();
    assert_eq!(json["format_version"], "1");
    assert_eq!(json["nvlink_domains"][0].as_array().unwrap().len(), 8);
    // A host name that is no node name needs --node.
    let settings = cmd::Settings {
        naming: NamingArgs::default(),
        format: DataFormat::Kdl,
        out: Some(dir.join("x.kdl")),
    };
    assert_eq!(
        cmd::run_with(&snap.source(), Some("__".into()), &settings, &out),
        1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A current driver's layout: `NODE`/`PXB` cells and a `NIC Legend` naming the NICs.
#[test]
fn topo_nic_legend_and_pxb_groups() {
    let text = "\
\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV12\tNODE\tNODE\tPXB\tNODE\t0-31\t0\t\tN/A
GPU1\tNV12\t X \tNODE\tNODE\tPXB\tNODE\t0-31\t0\t\tN/A
GPU2\tNODE\tNODE\t X \tNV12\tNODE\tPXB\t0-31\t0\t\tN/A
GPU3\tNODE\tNODE\tNV12\t X \tNODE\tPXB\t0-31\t0\t\tN/A
NIC0\tPXB\tPXB\tNODE\tNODE\t X \tNODE
NIC1\tNODE\tNODE\tPXB\tPXB\tNODE\t X 

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
";
    let mut sources = SourceMap::new();
    let id = sources.add("legend.txt", text);
    let (inv, diags) = topo::import(&sources, id, &naming(Some("a100-sxm4-80gb")));
    let inv = inv.unwrap_or_else(|| panic!("{}", report(&sources, &diags)));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(inv.nvlink_domains, vec![vec![0, 1], vec![2, 3]]);
    assert_eq!(inv.nics[1].device.as_deref(), Some("mlx5_1"));
    assert_eq!(inv.pcie_switches.len(), 2);
    assert_eq!(inv.pcie_switches[1].gpus, vec![2, 3]);
    assert_eq!(inv.pcie_switches[1].nics, vec![1]);
    assert_eq!(inv.numa[0].nics, vec![0, 1]);
    let kdl = inventory::render(&inv, "legend");
    assert!(kdl.contains("NIC1=mlx5_1"), "{kdl}");
    // The legend's device names become `nics names=` (NCCL_IB_HCA in fabric/).
    assert!(kdl.contains("names=\"mlx5_0,mlx5_1\""), "{kdl}");
    assert_valid("legend", &kdl, &[]);
}
