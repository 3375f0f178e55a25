//! Catalog sanity: identities are unique and resolvable, MIG tables are internally
//! consistent, and the pinned facts from `../shared/reference/mig.md` hold.

use super::{GpuSpec, MigSpec, all, lookup, lookup_pci, lookup_product};
use std::collections::BTreeSet;

const REQUIRED: [&str; 43] = [
    "a800-pcie-40gb",
    "a800-sxm4-80gb",
    "a800-pcie-80gb",
    "pg506-96gb",
    "h800-sxm5-80gb",
    "h800-pcie-80gb",
    "h800-nvl-94gb",
    "h100-sxm5-96gb",
    "gh200-144gb",
    "gb300-288gb",
    "rtx-pro-6000-blackwell-96gb",
    "rtx-pro-6000-blackwell-ws-96gb",
    "p100-sxm2-16gb",
    "p100-pcie-16gb",
    "v100-sxm2-16gb",
    "v100-sxm2-32gb",
    "v100-pcie-16gb",
    "v100-pcie-32gb",
    "a10-24gb",
    "a10g-24gb",
    "a16-16gb",
    "a40-48gb",
    "rtx-a6000-48gb",
    "h20-96gb",
    "gh200-96gb",
    "l40-48gb",
    "rtx-6000-ada-48gb",
    "b300-288gb",
    "a30-24gb",
    "a100-sxm4-40gb",
    "a100-pcie-40gb",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "h100-sxm5-80gb",
    "h100-pcie-80gb",
    "h100-nvl-94gb",
    "h200-sxm-141gb",
    "h200-nvl-141gb",
    "b200-180gb",
    "gb200-186gb",
    "l40s-48gb",
    "l4-24gb",
    "t4-16gb",
];

fn model(id: &str) -> &'static GpuSpec {
    all()
        .iter()
        .find(|g| g.id == id)
        .unwrap_or_else(|| panic!("{id} in the catalog"))
}

fn mig(id: &str) -> &'static MigSpec {
    model(id).mig.unwrap_or_else(|| panic!("{id} has MIG"))
}

#[test]
fn every_required_model_is_present() {
    for id in REQUIRED {
        assert_eq!(lookup(id).map(|g| g.id), Some(id));
    }
    assert_eq!(all().len(), REQUIRED.len());
}

#[test]
fn ids_and_aliases_are_unique_lowercase_and_resolve() {
    let mut seen = BTreeSet::new();
    for g in all() {
        for name in std::iter::once(&g.id).chain(g.aliases) {
            assert_eq!(*name, name.to_ascii_lowercase(), "{name} is lowercase");
            assert!(seen.insert(*name), "{name} is used twice");
            assert_eq!(lookup(name).map(|m| m.id), Some(g.id), "{name}");
            let upper = name.to_ascii_uppercase();
            assert_eq!(lookup(&upper).map(|m| m.id), Some(g.id), "{upper}");
        }
    }
}

#[test]
fn product_names_and_pci_ids_are_unique_and_resolve() {
    let mut products = BTreeSet::new();
    let mut pci = BTreeSet::new();
    for g in all() {
        assert!(!g.product_names.is_empty(), "{}", g.id);
        assert!(!g.pci_device_ids.is_empty(), "{}", g.id);
        for p in g.product_names {
            assert!(products.insert(p.to_ascii_lowercase()), "{p} twice");
            assert_eq!(lookup_product(p).map(|m| m.id), Some(g.id), "{p}");
            let padded = format!("  {}\n", p.to_ascii_uppercase());
            assert_eq!(lookup_product(&padded).map(|m| m.id), Some(g.id));
        }
        for &d in g.pci_device_ids {
            assert!(pci.insert(d), "{d:#06x} twice");
            assert_eq!(lookup_pci(d).map(|m| m.id), Some(g.id), "{d:#06x}");
        }
    }
    assert!(lookup("").is_none());
    assert!(lookup_product("NVIDIA Nonexistent").is_none());
    assert!(lookup_pci(0xFFFF).is_none());
}

#[test]
fn nvml_names_and_pci_ids_from_the_reference() {
    let cases: [(&str, &str, u16); 15] = [
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb", 0x20B0),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb", 0x20B1),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb", 0x20B2),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb", 0x20B5),
        ("NVIDIA A30", "a30-24gb", 0x20B7),
        ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb", 0x2330),
        ("NVIDIA H100 PCIe", "h100-pcie-80gb", 0x2331),
        ("NVIDIA H100 NVL", "h100-nvl-94gb", 0x2321),
        ("NVIDIA H200", "h200-sxm-141gb", 0x2335),
        ("NVIDIA H200 NVL", "h200-nvl-141gb", 0x233B),
        ("NVIDIA B200", "b200-180gb", 0x2901),
        ("NVIDIA GB200", "gb200-186gb", 0x2941),
        ("NVIDIA L40S", "l40s-48gb", 0x26B9),
        ("NVIDIA L4", "l4-24gb", 0x27B8),
        ("Tesla T4", "t4-16gb", 0x1EB8),
    ];
    for (product, id, pci) in cases {
        assert_eq!(lookup_product(product).map(|g| g.id), Some(id), "{product}");
        assert_eq!(lookup_pci(pci).map(|g| g.id), Some(id), "{pci:#06x}");
    }
    for (alias, id) in [
        ("h100", "h100-sxm5-80gb"),
        ("a100", "a100-sxm4-80gb"),
        ("a100-80gb", "a100-sxm4-80gb"),
        ("a100-40gb", "a100-sxm4-40gb"),
        ("h200", "h200-sxm-141gb"),
        ("b200", "b200-180gb"),
        ("gb200", "gb200-186gb"),
        ("l40s", "l40s-48gb"),
        ("l4", "l4-24gb"),
        ("t4", "t4-16gb"),
        ("a30", "a30-24gb"),
    ] {
        assert_eq!(lookup(alias).map(|g| g.id), Some(id), "{alias}");
    }
}

#[test]
fn memory_sizes() {
    for (id, mib) in [
        ("t4-16gb", 15360),
        ("a30-24gb", 24576),
        ("a100-sxm4-40gb", 40960),
        ("a100-pcie-40gb", 40960),
        ("a100-sxm4-80gb", 81920),
        ("a100-pcie-80gb", 81920),
        ("h100-sxm5-80gb", 81559),
        ("h100-pcie-80gb", 81559),
        ("h100-nvl-94gb", 95830),
        ("h200-sxm-141gb", 143771),
        ("h200-nvl-141gb", 143771),
        ("l4-24gb", 23034),
        ("l40s-48gb", 46068),
        ("b200-180gb", 183359),
        ("gb200-186gb", 189471),
    ] {
        assert_eq!(model(id).memory_mib, mib, "{id}");
    }
}

#[test]
fn nvlink_generations_links_and_bandwidth() {
    // id, NVLink (generation, links, GB/s)
    for (id, nvlink) in [
        ("t4-16gb", None),
        ("a30-24gb", Some((3, 4, 200))),
        ("a100-sxm4-40gb", Some((3, 12, 600))),
        ("a100-pcie-40gb", Some((3, 12, 600))),
        ("a100-sxm4-80gb", Some((3, 12, 600))),
        ("a100-pcie-80gb", Some((3, 12, 600))),
        ("h100-sxm5-80gb", Some((4, 18, 900))),
        ("h100-pcie-80gb", Some((4, 12, 600))),
        ("h100-nvl-94gb", Some((4, 12, 600))),
        ("h200-sxm-141gb", Some((4, 18, 900))),
        ("h200-nvl-141gb", Some((4, 18, 900))),
        ("l4-24gb", None),
        ("l40s-48gb", None),
        ("b200-180gb", Some((5, 18, 1800))),
        ("gb200-186gb", Some((5, 18, 1800))),
    ] {
        let nv = model(id)
            .nvlink
            .map(|n| (n.generation, n.links, n.bandwidth_gbs));
        assert_eq!(nv, nvlink, "{id}");
    }
}

#[test]
fn short_names() {
    for (id, short) in [
        ("t4-16gb", "t4"),
        ("a30-24gb", "a30"),
        ("a100-sxm4-40gb", "a100"),
        ("a100-pcie-40gb", "a100"),
        ("a100-sxm4-80gb", "a100"),
        ("a100-pcie-80gb", "a100"),
        ("h100-sxm5-80gb", "h100"),
        ("h100-pcie-80gb", "h100"),
        ("h100-nvl-94gb", "h100"),
        ("h200-sxm-141gb", "h200"),
        ("h200-nvl-141gb", "h200"),
        ("l4-24gb", "l4"),
        ("l40s-48gb", "l40s"),
        ("b200-180gb", "b200"),
        ("gb200-186gb", "gb200"),
    ] {
        assert_eq!(model(id).short_name, short, "{id}");
    }
}

#[test]
fn mig_minimum_drivers() {
    for (id, driver) in [
        ("t4-16gb", None),
        ("a30-24gb", Some("R460")),
        ("a100-sxm4-40gb", Some("R450")),
        ("a100-pcie-40gb", Some("R450")),
        ("a100-sxm4-80gb", Some("R450")),
        ("a100-pcie-80gb", Some("R450")),
        ("h100-sxm5-80gb", Some("R525")),
        ("h100-pcie-80gb", Some("R525")),
        ("h100-nvl-94gb", Some("R525")),
        ("h200-sxm-141gb", Some("R550")),
        ("h200-nvl-141gb", Some("R550")),
        ("l4-24gb", None),
        ("l40s-48gb", None),
        ("b200-180gb", Some("R570")),
        ("gb200-186gb", Some("R570")),
    ] {
        assert_eq!(model(id).mig.map(|m| m.min_driver), driver, "{id}");
    }
}

#[test]
fn profile_tables_are_consistent() {
    for g in all() {
        let Some(spec) = g.mig else { continue };
        let mut ids = BTreeSet::new();
        let mut names = BTreeSet::new();
        let total_gib = g.memory_mib as f64 / 1024.0;
        for p in spec.profiles {
            assert!(ids.insert(p.id), "{}: id {} twice", g.id, p.id);
            assert!(names.insert(p.name), "{}: {} twice", g.id, p.name);
            assert!(
                !p.starts.is_empty() && p.max_count >= 1,
                "{} {}",
                g.id,
                p.name
            );
            assert!(
                p.starts.windows(2).all(|w| w[0] < w[1]),
                "{} {}",
                g.id,
                p.name
            );
            for &s in p.starts {
                let end = s as u32 + p.memory_slices as u32;
                assert!(end <= spec.memory_slices as u32, "{} {}@{s}", g.id, p.name);
            }
            assert!(
                p.compute_slices <= spec.compute_slices,
                "{} {}",
                g.id,
                p.name
            );
            assert!(p.max_count <= spec.max_instances, "{} {}", g.id, p.name);
            let share = total_gib * p.memory_slices as f64 / spec.memory_slices as f64;
            assert!(
                p.memory_gib > 0.0 && p.memory_gib <= share,
                "{} {}: {} GiB of a {share:.2} GiB share",
                g.id,
                p.name,
                p.memory_gib
            );
            check_name(g.id, p.name, p.compute_slices, p.media_extensions);
        }
        let me: Vec<_> = spec
            .profiles
            .iter()
            .filter(|p| p.media_extensions)
            .collect();
        assert!(me.iter().all(|p| p.max_count == 1), "{}: +me max 1", g.id);
    }
}

/// `<g>g.<mem>gb[+me]` with `g` == compute slices (Blackwell GB20x also `+gfx`,
/// `+me.all`, `-me`).
fn check_name(model: &str, name: &str, compute: u8, me: bool) {
    let name = ["+gfx", "+me.all", "-me"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    let (base, has_me) = match name.strip_suffix("+me") {
        Some(b) => (b, true),
        None => (name, false),
    };
    assert_eq!(has_me, me, "{model} {name}: +me flag");
    let parsed = base
        .split_once("g.")
        .and_then(|(g, rest)| Some((g.parse::<u8>().ok()?, rest.strip_suffix("gb")?)))
        .and_then(|(g, mem)| Some((g, mem.parse::<u32>().ok()?)));
    let Some((g, mem)) = parsed else {
        panic!("{model}: `{name}` is not <g>g.<mem>gb[+me]");
    };
    assert_eq!(g, compute, "{model} {name}: g == compute slices");
    assert!(mem > 0, "{model} {name}");
}

#[test]
fn mig_capability_and_profile_names_per_model() {
    let expect: [(&str, [&str; 7]); 4] = [
        (
            "a100-sxm4-40gb",
            [
                "1g.5gb",
                "1g.5gb+me",
                "1g.10gb",
                "2g.10gb",
                "3g.20gb",
                "4g.20gb",
                "7g.40gb",
            ],
        ),
        (
            "h100-nvl-94gb",
            [
                "1g.12gb",
                "1g.12gb+me",
                "1g.24gb",
                "2g.24gb",
                "3g.47gb",
                "4g.47gb",
                "7g.94gb",
            ],
        ),
        (
            "b200-180gb",
            [
                "1g.23gb",
                "1g.23gb+me",
                "1g.45gb",
                "2g.45gb",
                "3g.90gb",
                "4g.90gb",
                "7g.180gb",
            ],
        ),
        (
            "gb200-186gb",
            [
                "1g.23gb",
                "1g.23gb+me",
                "1g.47gb",
                "2g.47gb",
                "3g.93gb",
                "4g.93gb",
                "7g.186gb",
            ],
        ),
    ];
    for (id, names) in expect {
        let got: Vec<&str> = mig(id).profiles.iter().map(|p| p.name).collect();
        assert_eq!(got, names, "{id}");
    }
    for id in ["l40s-48gb", "l4-24gb", "t4-16gb"] {
        assert!(model(id).mig.is_none(), "{id} has no MIG");
    }
    let a30: Vec<(&str, u32)> = mig("a30-24gb")
        .profiles
        .iter()
        .map(|p| (p.name, p.id))
        .collect();
    assert_eq!(
        a30,
        [
            ("1g.6gb", 14),
            ("1g.6gb+me", 21),
            ("2g.12gb", 5),
            ("2g.12gb+me", 6),
            ("4g.24gb", 0)
        ]
    );
    assert_eq!(mig("a30-24gb").max_instances, 4);
    // Variants of one product share the MIG table.
    assert_eq!(mig("h100-pcie-80gb"), mig("h100-sxm5-80gb"));
    assert_eq!(mig("a100-pcie-80gb"), mig("a100-sxm4-80gb"));
    assert_eq!(mig("a100-pcie-40gb"), mig("a100-sxm4-40gb"));
    assert_eq!(mig("h200-nvl-141gb"), mig("h200-sxm-141gb"));
}

#[test]
fn observed_memory_matches_the_transcripts() {
    let observed: [(&str, &str, f64); 13] = [
        ("h100-sxm5-80gb", "1g.10gb", 9.75),
        ("h100-sxm5-80gb", "1g.20gb", 19.62),
        ("h100-sxm5-80gb", "3g.40gb", 39.50),
        ("a100-sxm4-80gb", "1g.10gb", 9.50),
        ("a100-sxm4-80gb", "2g.20gb", 19.50),
        ("a100-sxm4-80gb", "4g.40gb", 39.25),
        ("a100-sxm4-80gb", "7g.80gb", 79.00),
        ("h100-nvl-94gb", "1g.12gb", 10.75),
        ("h100-nvl-94gb", "2g.24gb", 21.62),
        ("h100-nvl-94gb", "3g.47gb", 46.38),
        ("h200-sxm-141gb", "1g.18gb+me", 16.00),
        ("h200-sxm-141gb", "1g.35gb", 32.25),
        ("h200-sxm-141gb", "4g.71gb", 69.50),
    ];
    for (id, name, gib) in observed {
        let p = mig(id)
            .profile(name)
            .unwrap_or_else(|| panic!("{id} {name}"));
        assert_eq!(
            (p.memory_gib, p.memory_observed),
            (gib, true),
            "{id} {name}"
        );
    }
    for id in ["a30-24gb", "a100-sxm4-40gb", "b200-180gb", "gb200-186gb"] {
        assert!(mig(id).profiles.iter().all(|p| !p.memory_observed), "{id}");
    }
}

#[test]
fn usable_memory_grows_with_memory_slices() {
    // Same memory slices => same usable memory; more slices => more memory.
    for g in all() {
        let Some(spec) = g.mig else { continue };
        for a in spec.profiles {
            for b in spec.profiles {
                if a.memory_slices == b.memory_slices {
                    assert_eq!(a.memory_gib, b.memory_gib, "{} {} {}", g.id, a.name, b.name);
                }
                if b.memory_slices > a.memory_slices {
                    assert!(
                        b.memory_gib > a.memory_gib,
                        "{} {} {}",
                        g.id,
                        a.name,
                        b.name
                    );
                }
            }
        }
    }
}

#[test]
fn identify_reads_every_tool_s_spelling() {
    let id = |s: &str| super::identify(s).map(|g| g.id);
    // NVML product names, GPU Feature Discovery label values (with the suffixes GFD adds
    // under the single MIG strategy and time-slicing renames), Slurm GRES types.
    assert_eq!(id("NVIDIA H100 80GB HBM3"), Some("h100-sxm5-80gb"));
    assert_eq!(id("NVIDIA-H100-80GB-HBM3"), Some("h100-sxm5-80gb"));
    assert_eq!(
        id("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"),
        Some("a100-sxm4-40gb")
    );
    assert_eq!(id("NVIDIA-A100-SXM4-80GB-SHARED"), Some("a100-sxm4-80gb"));
    assert_eq!(id("Tesla-V100-SXM2-16GB"), Some("v100-sxm2-16gb"));
    assert_eq!(id("Tesla-T4"), Some("t4-16gb"));
    assert_eq!(id("tesla_v100"), Some("v100-sxm2-32gb"));
    assert_eq!(id("nvidia_a100-sxm4-80gb"), Some("a100-sxm4-80gb"));
    assert_eq!(id("a100_3g.40gb"), Some("a100-sxm4-80gb"));
    assert_eq!(id("h100"), Some("h100-sxm5-80gb"));
    assert_eq!(
        id("NVIDIA-RTX-6000-Ada-Generation"),
        Some("rtx-6000-ada-48gb")
    );
    assert_eq!(id("NVIDIA-GH200-480GB"), Some("gh200-96gb"));
    assert_eq!(id("NVIDIA-A10G"), Some("a10g-24gb"));
    assert_eq!(id("NVIDIA B300 SXM6 AC"), Some("b300-288gb"));
    assert_eq!(id("NVIDIA-GeForce-RTX-4090"), None);
    assert_eq!(id(""), None);
    assert_eq!(id("-MIG-"), None);
}

#[test]
fn catalog_ids_names_and_pci_ids_are_unique() {
    use std::collections::BTreeSet;
    let mut names = BTreeSet::new();
    let mut pci = BTreeSet::new();
    for g in super::all() {
        assert!(names.insert(g.id.to_string()), "{}", g.id);
        for a in g.aliases {
            assert!(names.insert(a.to_string()), "alias {a} of {}", g.id);
        }
        for p in g.product_names {
            assert_eq!(super::identify(p).map(|s| s.id), Some(g.id), "{p}");
        }
        for d in g.pci_device_ids {
            assert!(pci.insert(*d), "pci id {d:#06x} of {}", g.id);
        }
    }
}
