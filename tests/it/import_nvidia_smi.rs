//! `gpuplan import nvidia-smi FILE...` (issue 30): the text of `nvidia-smi -q` of six
//! published machines (tests/fixtures/nvidia-smi/SOURCES.md) read with the right model,
//! GPU count, memory and bus ids, and a published MIG-enabled excerpt with its MIG mode
//! and MIG device; every kind recognised and said; the files of one
//! machine merged into one node, contradictory ones refused; the import contract (what
//! is left out, exit codes); the specific importers naming a file of another kind.

use crate::common::{Run, Scratch, codes, gpuplan, run_of};
use gpuplan::diag::{Diagnostic, Report};
use gpuplan::discover::{self, Naming};
use gpuplan::import::nvidia_smi as smi;
use gpuplan::import::nvidia_smi::qtext;
use gpuplan::source::SourceMap;

const Q: &str = "tests/fixtures/nvidia-smi/q";
const LGI: &str = "tests/fixtures/nvidia-smi/mig/lgi_A100-80GB_2gpu__NVIDIA-DCGM-issue138.txt";
const TOPO_H100: &str =
    "tests/fixtures/discover/topo/02_HGX_H100_SXM_8gpu_NV18__NVIDIA-nccl-issue1264.txt";

fn q(name: &str) -> String {
    format!("{Q}/q_{name}__thamada-gls.txt")
}

fn naming() -> Naming {
    Naming {
        node: "node-01".into(),
        class: None,
        model: None,
    }
}

fn run(args: &[&str]) -> Run {
    run_of(&gpuplan(args))
}

/// Validates KDL with the real validator and checks it is `gpuplan fmt`'s layout.
fn assert_valid_and_formatted(name: &str, kdl: &str) {
    let mut sources = SourceMap::new();
    let id = sources.add(format!("{name}.kdl"), kdl.to_string());
    let outcome = gpuplan::validate::validate(&sources);
    let errors: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(
        errors.is_empty(),
        "{name}: does not validate:\n{}\n{kdl}",
        Report::new(&sources, &outcome.diagnostics).human(false)
    );
    let formatted = gpuplan::fmt::format(id, kdl).expect("formats");
    assert_eq!(formatted, kdl, "{name}: not `gpuplan fmt`-clean");
}

/// (fixture, catalog model, GPUs, MiB per GPU, bus ids, MIG mode current).
#[allow(clippy::type_complexity)]
const MACHINES: &[(&str, &str, usize, u64, &[&str], Option<bool>)] = &[
    (
        "H100SXMx8",
        "h100-sxm5-80gb",
        8,
        81559,
        &["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"],
        Some(false),
    ),
    (
        "A100SXMx4",
        "a100-sxm4-80gb",
        4,
        81920,
        &["68", "9E", "C2", "D4"],
        Some(false),
    ),
    (
        "V100_x8",
        "v100-sxm2-16gb",
        8,
        16384,
        &[
            "00:04", "00:05", "00:06", "00:07", "00:08", "00:09", "00:0A", "00:0B",
        ],
        None,
    ),
    (
        "A40x10",
        "a40-48gb",
        10,
        46068,
        &["4F", "52", "53", "56", "57", "CE", "D1", "D2", "D5", "D6"],
        None,
    ),
    (
        "H100NVLx2",
        "h100-nvl-94gb",
        2,
        95830,
        &["AD", "AE"],
        Some(false),
    ),
    ("GH200", "gh200-96gb", 1, 97871, &["DD"], Some(false)),
];

/// `00000000:18:00.0` from `18`; `00000000:00:04.0` from `00:04`.
fn bus(short: &str) -> String {
    if short.contains(':') {
        format!("00000000:{short}.0")
    } else {
        format!("00000000:{short}:00.0")
    }
}

#[test]
fn six_published_machines_read_right() {
    for &(name, model, count, mib, buses, mig) in MACHINES {
        let path = q(name);
        let mut sources = SourceMap::new();
        let id = sources.add(path.clone(), std::fs::read_to_string(&path).unwrap());
        let (r, diags) = qtext::parse(&sources, id);
        let r =
            r.unwrap_or_else(|| panic!("{name}: {}", Report::new(&sources, &diags).human(false)));
        assert!(diags.is_empty(), "{name}: {diags:?}");
        assert_eq!(r.attached, Some(count as u32), "{name}");
        assert!(r.left_out.is_empty(), "{name}: {:?}", r.left_out);
        let gpus = &r.snapshot.gpus;
        assert_eq!(gpus.len(), count, "{name}");
        let got: Vec<String> = gpus.iter().map(|g| g.bus_id.clone().unwrap()).collect();
        let want: Vec<String> = buses.iter().map(|b| bus(b)).collect();
        assert_eq!(got, want, "{name}");
        for g in gpus {
            assert_eq!(g.memory_mib, Some(mib), "{name}");
            assert_eq!(g.mig.as_ref().map(|m| m.current), mig, "{name}");
            assert!(
                g.uuid.as_deref().is_some_and(|u| u.starts_with("GPU-")),
                "{name}"
            );
        }
        assert!(r.snapshot.system.driver_version.is_some(), "{name}");
        let (inv, _) = discover::inventory("nvidia-smi", &r.snapshot, &naming()).unwrap();
        assert_eq!(inv.model.catalog, Some(model), "{name}");
        assert_eq!(inv.model.matched_by, "pci-device-id", "{name}");
    }
}

#[test]
fn import_nvidia_smi_writes_a_valid_formatted_node_and_says_what_it_read() {
    for &(name, model, count, ..) in MACHINES {
        let path = q(name);
        let r = run(&["import", "nvidia-smi", &path]);
        assert_eq!(r.0, 0, "{name}: {}", r.2);
        assert!(
            r.2.contains(&format!("{path}: recognised as `nvidia-smi -q`")),
            "{name}: {}",
            r.2
        );
        assert!(
            r.2.contains(&format!(
                "1 of 1 node(s) and {count} of {count} GPU(s) imported"
            )),
            "{}",
            r.2
        );
        assert!(
            r.1.contains(&format!("gpus {count} model=\"{model}\"")),
            "{}",
            r.1
        );
        assert!(r.1.contains("bus-ids="), "{}", r.1);
        assert_valid_and_formatted(name, &r.1);
        let j = run(&["import", "nvidia-smi", &path, "--format", "json"]);
        assert_eq!(j.0, 0, "{}", j.2);
        let json: serde_json::Value = serde_json::from_str(&j.1).unwrap();
        assert_eq!(json["report"]["importer"], "nvidia-smi");
        assert_eq!(json["report"]["inputs"][0]["kind"], "nvidia-smi -q");
        assert_eq!(json["report"]["gpus"]["seen"], count);
        assert_eq!(json["report"]["gpus"]["imported"], count);
    }
}

#[test]
fn query_and_topology_merge_into_one_node() {
    let r = run(&["import", "nvidia-smi", TOPO_H100, &q("H100SXMx8")]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains("recognised as `nvidia-smi topo -m`"),
        "{}",
        r.2
    );
    assert!(r.2.contains("recognised as `nvidia-smi -q`"), "{}", r.2);
    assert!(r.1.contains("model=\"h100-sxm5-80gb\""), "{}", r.1);
    assert!(r.1.contains("nvlink-domain gpus=\"0-7\""), "{}", r.1);
    assert!(r.1.contains("bus-ids="), "{}", r.1);
    assert_valid_and_formatted("merged", &r.1);
}

#[test]
fn contradictory_files_are_refused() {
    // 4 GPUs in the report, 8 in the matrix: not one machine.
    let r = run(&["import", "nvidia-smi", &q("A100SXMx4"), TOPO_H100]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP707".to_string()), "{}", r.2);
    assert!(r.1.is_empty());
    // Instances on GPUs whose MIG mode the report says is disabled.
    let r = run(&["import", "nvidia-smi", &q("A100SXMx4"), LGI]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.2.contains("whose MIG mode is disabled"), "{}", r.2);
    // Instances on GPUs without MIG (V100: MIG mode N/A).
    let r = run(&["import", "nvidia-smi", &q("V100_x8"), LGI]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.2.contains("which has no MIG mode"), "{}", r.2);
    // Two different reports.
    let r = run(&["import", "nvidia-smi", &q("A100SXMx4"), &q("GH200")]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP707".to_string()), "{}", r.2);
}

#[test]
fn current_instances_merge_into_the_mig_layout() {
    // The A100 report with MIG enabled on GPUs 0 and 1 (as it would read after `-mig 1`),
    // with the published `mig -lgi` of A100 80GB GPUs 0 and 1.
    let s = Scratch::new("smi-lgi");
    let text = std::fs::read_to_string(q("A100SXMx4")).unwrap();
    let mut n = 0;
    let text: String = text
        .split_inclusive('\n')
        .map(|l| {
            if l.starts_with("        Current                           : Disabled")
                || l.starts_with("        Pending                           : Disabled")
            {
                n += 1;
                // MIG mode is the one `Disabled` pair of each block: GPUs 0 and 1.
                if n <= 4 {
                    return l.replace("Disabled", "Enabled");
                }
            }
            l.to_string()
        })
        .collect();
    s.write("q.txt", &text);
    s.copy_in(LGI, "lgi.txt");
    let r = s.run(&["import", "nvidia-smi", "q.txt", "lgi.txt"]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(
        r.2.contains("recognised as `nvidia-smi mig -lgi`"),
        "{}",
        r.2
    );
    assert!(
        r.1.contains("layout \"3g.40gb\" \"2g.20gb\" \"1g.10gb*2\" nodes=\"node-01\" gpus=\"0-1\" current=#true"),
        "{}",
        r.1
    );
    assert_valid_and_formatted("lgi", &r.1);
}

#[test]
fn gpus_the_report_counts_but_does_not_describe_are_left_out() {
    // `nvidia-smi -q -i 0` on an 8-GPU machine: `Attached GPUs : 8`, one block.
    let s = Scratch::new("smi-i");
    let text = std::fs::read_to_string(q("H100SXMx8")).unwrap();
    let second = text.find("\nGPU 00000000:2A:00.0").unwrap();
    s.write("q.txt", &text[..second + 1]);
    let r = s.run(&["import", "nvidia-smi", "q.txt"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP750".to_string()), "{}", r.2);
    assert!(r.2.contains("GP709"), "{}", r.2);
    assert!(
        r.2.contains("1 of 1 node(s) and 1 of 8 GPU(s) imported"),
        "{}",
        r.2
    );
    assert!(r.1.is_empty());
    let r = s.run(&["import", "nvidia-smi", "q.txt", "--partial"]);
    assert_eq!(r.0, 2, "{}", r.2);
    assert!(r.1.starts_with("// PARTIAL IMPORT"), "{}", r.1);
    assert!(r.1.contains("gpus 1 model=\"h100-sxm5-80gb\""), "{}", r.1);
    // A report cut inside its second block: that GPU is left out too.
    let fb2 = text[second..].find("    FB Memory Usage").unwrap() + second;
    s.write("cut.txt", &text[..fb2]);
    let r = s.run(&["import", "nvidia-smi", "cut.txt", "--format", "json"]);
    assert_eq!(r.0, 1, "{}", r.2);
    let json: serde_json::Value = serde_json::from_str(&r.1).unwrap();
    assert_eq!(json["report"]["gpus"]["seen"], 8);
    assert_eq!(json["report"]["gpus"]["imported"], 1);
    assert_eq!(json["report"]["gpus"]["left_out"], 7);
    let reasons = json["report"]["left_out"].to_string();
    assert!(reasons.contains("cut before its end"), "{reasons}");
    assert!(reasons.contains("GP709"), "{reasons}");
}

#[test]
fn a_duplicated_gpu_or_conflicting_key_is_refused() {
    let s = Scratch::new("smi-dup");
    let text = std::fs::read_to_string(q("H100NVLx2")).unwrap();
    let second = text.find("\nGPU 00000000:AE:00.0").unwrap() + 1;
    let twice = format!("{}{}", &text, &text[second..]);
    s.write("twice.txt", &twice);
    let r = s.run(&["import", "nvidia-smi", "twice.txt"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(
        r.2.contains("GP715") && r.2.contains("listed twice"),
        "{}",
        r.2
    );
    let conflicting = text.replacen(
        "        Total                             : 95830 MiB\n",
        "        Total                             : 95830 MiB\n        Total                             : 81920 MiB\n",
        1,
    );
    s.write("conflict.txt", &conflicting);
    let r = s.run(&["import", "nvidia-smi", "conflict.txt"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(
        r.2.contains("GP715") && r.2.contains("given twice"),
        "{}",
        r.2
    );
}

#[test]
fn files_that_are_no_nvidia_smi_output_or_no_gpus_are_refused() {
    let r = run(&["import", "nvidia-smi", "Cargo.toml"]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP706".to_string()), "{}", r.2);
    let r = run(&["import", "nvidia-smi", LGI]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP716".to_string()), "{}", r.2);
}

#[test]
fn mig_lgi_given_to_import_mig_lgip_is_named() {
    let r = run(&["import", "mig-lgip", LGI]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(codes(&r).contains(&"GP708".to_string()), "{}", r.2);
    assert!(
        r.2.contains(
            "this is `nvidia-smi mig -lgi` (current GPU instances), not `nvidia-smi mig -lgip`"
        ),
        "{}",
        r.2
    );
    assert!(!r.2.contains("cut or unreadable"), "{}", r.2);
    // The other specific kinds say it too.
    let r = run(&["import", "nvidia-smi-xml", &q("GH200")]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.2.contains("this is `nvidia-smi -q`"), "{}", r.2);
}

#[test]
fn the_specific_kinds_stay_as_aliases() {
    let r = run(&[
        "import",
        "nvidia-smi-xml",
        "tests/fixtures/discover/constructed/q_x_2x_H100-80GB_MIG.xml",
    ]);
    assert_eq!(r.0, 0, "{}", r.2);
    let r = run(&[
        "import",
        "nvidia-smi",
        "tests/fixtures/discover/constructed/q_x_2x_H100-80GB_MIG.xml",
    ]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.2.contains("recognised as `nvidia-smi -q -x`"), "{}", r.2);
    let r = run(&[
        "import",
        "nvidia-smi",
        "tests/fixtures/discover/nvidia-smi/mig_lgip_H100NVL_94GB__NVIDIA-gpu-operator-pr903.txt",
    ]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert!(r.1.contains("gpu-model \"h100-nvl-94gb\""), "{}", r.1);
}

#[test]
fn merging_in_process_reports_every_input() {
    let mut sources = SourceMap::new();
    let a = sources.add(
        q("H100SXMx8"),
        std::fs::read_to_string(q("H100SXMx8")).unwrap(),
    );
    let b = sources.add(TOPO_H100, std::fs::read_to_string(TOPO_H100).unwrap());
    let o = smi::import(&sources, &[a, b], &naming());
    assert!(
        o.diagnostics.iter().all(|d| !d.is_error()),
        "{:?}",
        o.diagnostics
    );
    let kinds: Vec<&str> = o.report.inputs.iter().map(|i| i.kind.as_str()).collect();
    assert_eq!(kinds, ["nvidia-smi -q", "nvidia-smi topo -m"]);
    assert!(o.report.complete());
    let inv = o.inventory.unwrap();
    assert_eq!(inv.nvlink_domains, vec![(0..8).collect::<Vec<u32>>()]);
    assert_eq!(inv.gpus.len(), 8);
}

#[test]
fn an_older_drivers_layout_reads_and_an_excerpt_leaves_gpus_out() {
    let path = format!("{Q}/q_V100-SXM2-16GB_DGX-1_excerpt__NVIDIA-nvidia-docker-issue868.txt");
    let mut sources = SourceMap::new();
    let id = sources.add(path.clone(), std::fs::read_to_string(&path).unwrap());
    let (r, diags) = qtext::parse(&sources, id);
    let r = r.unwrap_or_else(|| panic!("{}", Report::new(&sources, &diags).human(false)));
    assert_eq!(r.attached, Some(8));
    assert_eq!(r.gpus_seen(), 8);
    let g = &r.snapshot.gpus[0];
    assert_eq!(g.name.as_deref(), Some("Tesla V100-SXM2-16GB"));
    assert_eq!(g.bus_id.as_deref(), Some("00000000:06:00.0"));
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-86e60957-0cc5-7959-855b-28f0d7bac243")
    );
    assert_eq!(g.mig, None);
    assert_eq!(r.left_out.iter().map(|l| l.gpus).sum::<u32>(), 7);
    let (inv, _) = discover::inventory("nvidia-smi", &r.snapshot, &naming()).unwrap();
    assert_eq!(inv.model.catalog, Some("v100-sxm2-16gb"));
    assert_eq!(inv.model.matched_by, "product-name");
    let r = run(&["import", "nvidia-smi", &path, "--partial"]);
    assert_eq!(r.0, 2, "{}", r.2);
    assert!(r.2.contains("1 of 8 GPU(s) imported"), "{}", r.2);
}

#[test]
fn a_published_mig_enabled_excerpt_reads_mig_mode_and_its_mig_device() {
    // A later driver's layout: `MIG Device` straight under the GPU, no `MIG Devices`
    // around it; the source trimmed it to one GPU block of a few sections.
    let path = format!(
        "{Q}/q_RTX-PRO-6000-Blackwell-SE_MIG-enabled_excerpt__bigstack-oss-cube-cos-api.txt"
    );
    let mut sources = SourceMap::new();
    let id = sources.add(path.clone(), std::fs::read_to_string(&path).unwrap());
    let (r, diags) = qtext::parse(&sources, id);
    let r = r.unwrap_or_else(|| panic!("{}", Report::new(&sources, &diags).human(false)));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(r.attached, None);
    assert!(r.left_out.is_empty(), "{:?}", r.left_out);
    let gpus = &r.snapshot.gpus;
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!(
        g.name.as_deref(),
        Some("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    );
    assert_eq!(g.bus_id.as_deref(), Some("00000001:04:00.0"));
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-171566b8-60f0-9c5e-7388-59b5583f7b97")
    );
    assert_eq!(g.memory_mib, Some(97887), "the GPU's, not the MIG device's");
    let m = g.mig.as_ref().expect("MIG mode read");
    assert!(m.current && m.pending);
    let gis: Vec<(u32, Option<u64>, usize)> = m
        .gpu_instances
        .iter()
        .map(|gi| (gi.id, gi.memory_mib, gi.compute_instances.len()))
        .collect();
    assert_eq!(
        gis,
        vec![(3, Some(23680), 0)],
        "no compute instance id kept"
    );
    let (inv, _) = discover::inventory("nvidia-smi", &r.snapshot, &naming()).unwrap();
    assert_eq!(inv.model.catalog, Some("rtx-pro-6000-blackwell-96gb"));
    assert_eq!(inv.model.matched_by, "product-name");
    // The command recognises the excerpt (no `NVSMI LOG` header: a GPU block with its
    // product name) and imports the GPU.
    let out = run(&["import", "nvidia-smi", &path, "--node", "cn13"]);
    assert_eq!(out.0, 0, "{}", out.2);
    assert!(out.2.contains("recognised as `nvidia-smi -q`"), "{}", out.2);
    assert!(
        out.1
            .contains(r#"gpus 1 model="rtx-pro-6000-blackwell-96gb" bus-ids="0001:04:00.0""#),
        "{}",
        out.1
    );
    assert_valid_and_formatted("mig excerpt", &out.1);
}
