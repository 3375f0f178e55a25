//! `gpuplan generate superpod`: a DGX SuperPOD-like cluster plus demand.
//!
//! # Hardware
//!
//! `ceil(gpus / 8)` nodes. Training nodes are DGX H100 (`dgx-00001`, ...: 8x
//! `h100-sxm5-80gb` on one NVSwitch domain, 2 NUMA nodes, 8 rail NICs at 400 Gb/s NDR).
//! With `--mix mixed` a quarter of the nodes, with `--mix inference` three quarters,
//! are HGX A100 80GB serving nodes (`hgx-00001`, ...), in scalable units of their own,
//! split into a MIG pool, a whole-GPU pool and a time-sliced development pool.
//!
//! # Fabric
//!
//! * **leaf** = one scalable unit (SU) of 32 nodes, written as one rail group
//!   (`leaf ... rails=8`: eight rail leaves, NIC i to leaf i), as in the DGX SuperPOD
//!   reference architecture; a gang "under one leaf" stays inside one SU (256 GPUs).
//! * **spine** = a spine group above 16 SUs (512 nodes, 4,096 GPUs).
//! * **core** = one core group above all spine groups, present when there is more than
//!   one spine group.
//!
//! So 1,024 GPUs are 128 nodes, 4 leaves, 1 spine and no core; 100,000 GPUs are
//! 12,500 nodes, 391 leaves, 25 spines and one core.
//!
//! # Demand
//!
//! `--classes K` workload classes (default `gpus / 10`, clamped to 10..=2000) over
//! `max(3, K / 50)` teams whose guarantees add up to at most 70% of the GPUs. Four
//! priorities: serving > production > research > scavenger. Each kind of capacity gets
//! a budget of 95-105% of its GPUs, shared out over its classes with heavy-tailed
//! (log-normal) weights; each class takes the shape closest to its share and passes
//! the rounding error on to the next, so the total lands near the budget. Demand is
//! counted in GPU-equivalents: gang x replicas for training, `gpus` for whole-GPU
//! replicas, the footprint rounded up to 1/8, 2/8, 4/8 or 1 of an 80 GB GPU for MIG
//! replicas, and 1/`per-gpu` for time-sliced sessions.

mod workloads;

use super::Rng;
use std::fmt::Write;

pub use workloads::mig_equivalent;

/// GPUs per node (DGX H100, HGX A100).
pub(crate) const GPUS_PER_NODE: u64 = 8;
/// Nodes per leaf (one scalable unit, eight rail leaves as one rail group).
pub(crate) const NODES_PER_LEAF: u64 = 32;
/// Leaves (SUs) per spine group.
pub(crate) const LEAVES_PER_SPINE: usize = 16;
/// The most GPUs a generated cluster may have (a node range expands to at most 100,000
/// names).
pub(crate) const MAX_GPUS: u64 = 800_000;
pub(crate) const MAX_CLASSES: u32 = 100_000;

const H100: &str = "h100-sxm5-80gb";
const A100: &str = "a100-sxm4-80gb";

/// Which demand (and which nodes) to generate.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Mix {
    /// DGX H100 only, training gangs and sweeps.
    #[default]
    Training,
    /// 75% A100 serving nodes; mostly inference, some fine-tuning and dev.
    Inference,
    /// 25% A100 serving nodes; training, inference and dev.
    Mixed,
}

impl Mix {
    pub fn as_str(self) -> &'static str {
        match self {
            Mix::Training => "training",
            Mix::Inference => "inference",
            Mix::Mixed => "mixed",
        }
    }

    /// Share of nodes that are serving nodes.
    fn serving_share(self) -> f64 {
        match self {
            Mix::Training => 0.0,
            Mix::Inference => 0.75,
            Mix::Mixed => 0.25,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuperpodOptions {
    pub gpus: u64,
    pub mix: Mix,
    pub seed: u64,
    /// Workload classes; `None`: `gpus / 10` clamped to 10..=2000.
    pub classes: Option<u32>,
}

impl Default for SuperpodOptions {
    fn default() -> Self {
        SuperpodOptions {
            gpus: 1024,
            mix: Mix::Training,
            seed: 42,
            classes: None,
        }
    }
}

impl SuperpodOptions {
    pub(crate) fn class_count(&self) -> u32 {
        self.classes
            .unwrap_or_else(|| (self.gpus / 10).clamp(10, 2000) as u32)
    }
}

/// What was generated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub nodes: u64,
    pub training_nodes: u64,
    pub serving_nodes: u64,
    pub gpus: u64,
    pub leaves: usize,
    pub spines: usize,
    pub cores: usize,
    pub teams: usize,
    pub training_classes: usize,
    pub inference_classes: usize,
    pub dev_classes: usize,
    /// Requested demand in GPU-equivalents.
    pub demand_gpus: f64,
}

impl Stats {
    pub fn classes(&self) -> usize {
        self.training_classes + self.inference_classes + self.dev_classes
    }

    pub fn demand_percent(&self) -> f64 {
        if self.gpus == 0 {
            0.0
        } else {
            100.0 * self.demand_gpus / self.gpus as f64
        }
    }
}

/// Generates the files of a SuperPOD-like cluster: `(file name, KDL text)` pairs.
pub fn superpod(opts: &SuperpodOptions) -> Result<Vec<(String, String)>, String> {
    superpod_with_stats(opts).map(|(f, _)| f)
}

struct Leaf {
    name: String,
    prefix: &'static str,
    lo: u64,
    hi: u64,
    training: bool,
}

impl Leaf {
    fn nodes(&self) -> u64 {
        self.hi - self.lo + 1
    }
}

fn pattern(prefix: &str, lo: u64, hi: u64, w: usize) -> String {
    if lo == hi {
        format!("{prefix}-{lo:0w$}")
    } else {
        format!("{prefix}-[{lo:0w$}-{hi:0w$}]")
    }
}

fn digits(n: u64) -> usize {
    n.max(1).to_string().len()
}

/// Tier capacities in H100 GPUs (for choosing gang tiers that GP016 accepts).
#[derive(Clone, Copy, Debug)]
struct Caps {
    leaf: u64,
    spine: u64,
    core: Option<u64>,
    cluster: u64,
}

impl Caps {
    /// The largest leaf and spine in H100 GPUs; the core and the cluster hold every
    /// training node.
    fn of(leaves: &[Leaf], spines: &[&[Leaf]], training: u64) -> Caps {
        let h100_gpus = |ls: &[Leaf]| -> u64 {
            ls.iter()
                .filter(|l| l.training)
                .map(|l| l.nodes() * GPUS_PER_NODE)
                .sum()
        };
        Caps {
            leaf: leaves
                .iter()
                .filter(|l| l.training)
                .map(|l| l.nodes() * GPUS_PER_NODE)
                .max()
                .unwrap_or(0),
            spine: spines.iter().map(|s| h100_gpus(s)).max().unwrap_or(0),
            core: (spines.len() > 1).then_some(training * GPUS_PER_NODE),
            cluster: training * GPUS_PER_NODE,
        }
    }
}

/// Generates the files and reports what they hold.
pub fn superpod_with_stats(
    opts: &SuperpodOptions,
) -> Result<(Vec<(String, String)>, Stats), String> {
    let k = check_options(opts)?;
    let mut rng = Rng::new(opts.seed);

    // ---- nodes
    let total_nodes = opts.gpus.div_ceil(GPUS_PER_NODE);
    let serving = serving_nodes(opts.mix, total_nodes);
    let training = total_nodes - serving;
    let w = digits(training.max(serving)).max(5);

    // ---- fabric: leaves of 32 nodes (training SUs first), spines of 16 leaves
    let leaves = leaves(training, serving);
    let spines: Vec<&[Leaf]> = leaves.chunks(LEAVES_PER_SPINE).collect();
    let sw = digits(spines.len() as u64).max(2);
    let has_core = spines.len() > 1;
    let caps = Caps::of(&leaves, &spines, training);

    let gpus = total_nodes * GPUS_PER_NODE;
    let mut stats = Stats {
        nodes: total_nodes,
        training_nodes: training,
        serving_nodes: serving,
        gpus,
        leaves: leaves.len(),
        spines: spines.len(),
        cores: usize::from(has_core),
        ..Stats::default()
    };
    let pools = serving_pools(serving);

    let cluster = cluster_kdl(opts, &stats, serving > 0);
    let hardware = hardware_kdl(&leaves, w, serving > 0, &pools);
    let fabric = fabric_kdl(&spines, w, sw, has_core, &stats);
    let (teams_kdl, teams) = teams_kdl(&mut rng, k, gpus);
    stats.teams = teams.len();
    let nodes = workloads::Nodes {
        training,
        serving,
        caps,
    };
    let workloads = workloads::workloads_kdl(&mut rng, opts, k, nodes, &teams, &mut stats);

    Ok((
        vec![
            ("cluster.kdl".to_string(), cluster),
            ("hardware.kdl".to_string(), hardware),
            ("fabric.kdl".to_string(), fabric),
            ("teams.kdl".to_string(), teams_kdl),
            ("workloads.kdl".to_string(), workloads),
        ],
        stats,
    ))
}

/// The number of workload classes, or why the options cannot be generated.
fn check_options(opts: &SuperpodOptions) -> Result<u32, String> {
    if opts.gpus == 0 {
        return Err("--gpus must be at least 1".to_string());
    }
    if opts.gpus > MAX_GPUS {
        return Err(format!(
            "--gpus {} is more than this generator supports ({MAX_GPUS})",
            opts.gpus
        ));
    }
    let k = opts.class_count();
    if k == 0 {
        return Err("--classes must be at least 1".to_string());
    }
    if k > MAX_CLASSES {
        return Err(format!(
            "--classes {k} is more than this generator supports ({MAX_CLASSES})"
        ));
    }
    Ok(k)
}

/// How many of `total_nodes` are serving nodes: the mix's share, keeping at least one
/// node of each kind when the mix has both.
fn serving_nodes(mix: Mix, total_nodes: u64) -> u64 {
    let share = mix.serving_share();
    if share == 0.0 {
        0
    } else if total_nodes >= 2 {
        ((total_nodes as f64 * share).round() as u64).clamp(1, total_nodes - 1)
    } else if mix == Mix::Inference {
        1
    } else {
        0
    }
}

/// Scalable units of up to 32 nodes, training nodes first, named `su001`...
fn leaves(training: u64, serving: u64) -> Vec<Leaf> {
    let mut leaves: Vec<Leaf> = Vec::new();
    for (prefix, count, is_training) in [("dgx", training, true), ("hgx", serving, false)] {
        let mut lo = 1;
        while lo <= count {
            let hi = (lo + NODES_PER_LEAF - 1).min(count);
            leaves.push(Leaf {
                name: String::new(),
                prefix,
                lo,
                hi,
                training: is_training,
            });
            lo = hi + 1;
        }
    }
    let lw = digits(leaves.len() as u64).max(3);
    for (i, l) in leaves.iter_mut().enumerate() {
        l.name = format!("su{:0lw$}", i + 1);
    }
    leaves
}

/// Pools on the serving nodes (name, mode, first and last node): 50% MIG, 35% whole
/// GPUs, 15% dev; none with fewer than three serving nodes.
fn serving_pools(serving: u64) -> Vec<(&'static str, &'static str, u64, u64)> {
    if serving < 3 {
        return Vec::new();
    }
    let mig = ((serving as f64 * 0.5).round() as u64).clamp(1, serving - 2);
    let whole = ((serving as f64 * 0.35).round() as u64).clamp(1, serving - mig - 1);
    vec![
        ("serving-mig", "mig", 1, mig),
        ("serving-whole", "whole-gpu", mig + 1, mig + whole),
        ("dev", "time-slice", mig + whole + 1, serving),
    ]
}

fn cluster_kdl(opts: &SuperpodOptions, st: &Stats, serving: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by `gpuplan generate superpod --gpus {} --mix {} --seed {}{}`.",
        opts.gpus,
        opts.mix.as_str(),
        opts.seed,
        opts.classes
            .map(|c| format!(" --classes {c}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "// {} nodes ({} DGX H100{}), {} GPUs; {} leaves (SUs), {} spine group(s){}.",
        st.nodes,
        st.training_nodes,
        if serving {
            format!(", {} HGX A100 serving", st.serving_nodes)
        } else {
            String::new()
        },
        st.gpus,
        st.leaves,
        st.spines,
        if st.cores > 0 { ", one core" } else { "" }
    );
    let _ = writeln!(
        s,
        "//\n//   cluster.kdl    cluster name, scheduler versions, GPU prices\n//   hardware.kdl   node classes and node ranges{}\n//   fabric.kdl     the InfiniBand fabric\n//   teams.kdl      teams and priorities\n//   workloads.kdl  workload classes\n",
        if serving { ", pools, MIG policy" } else { "" }
    );
    let _ = writeln!(s, "cluster \"superpod-{}\" {{", opts.gpus);
    // Kueue owns every node: it admits gangs and every sharing mode the mixes use.
    let _ = writeln!(s, "    scheduler \"kueue\"");
    let _ = writeln!(s, "    slurm version=\"23.11\"");
    let _ = writeln!(s, "    kubernetes version=\"1.31\"");
    if serving {
        let _ = writeln!(s, "    kueue version=\"0.10\"");
    }
    let _ = writeln!(s, "}}\n");
    let _ = writeln!(s, "gpu-model \"{H100}\" price-per-hour=2.90");
    if serving {
        let _ = writeln!(s, "gpu-model \"{A100}\" price-per-hour=1.60");
    }
    s
}

fn hardware_kdl(
    leaves: &[Leaf],
    w: usize,
    serving: bool,
    pools: &[(&str, &str, u64, u64)],
) -> String {
    let mut s = String::new();
    s.push_str(
        "// DGX H100: 2x Xeon Platinum 8480C, 2 TiB, 8x H100 SXM5 80GB on NVSwitch, 8 ConnectX-7\n\
         // NDR (400 Gb/s) compute NICs, one per GPU (rail); GPUs 0-3 and NICs 0-3 on NUMA 0.\n\n",
    );
    s.push_str(
        "node-class \"dgx-h100\" {\n\
         \x20   cpu sockets=2 cores-per-socket=56 threads-per-core=2\n\
         \x20   memory \"2TiB\"\n\
         \x20   gpus 8 model=\"h100-sxm5-80gb\"\n\
         \x20   nvlink-domain gpus=\"0-7\"\n\
         \x20   numa 0 gpus=\"0-3\" nics=\"0-3\" cores=\"0-55\"\n\
         \x20   numa 1 gpus=\"4-7\" nics=\"4-7\" cores=\"56-111\"\n",
    );
    for i in 0..8 {
        let _ = writeln!(s, "    pcie-switch \"pex{i}\" gpus=\"{i}\" nics=\"{i}\"");
    }
    s.push_str(
        "    nics 8 speed=\"400Gbps\" kind=\"infiniband\"\n\
         \x20   label \"nvidia.com/gpu.family\" \"hopper\"\n\
         \x20   label \"gpuplan.io/role\" \"training\"\n}\n\n",
    );
    if serving {
        s.push_str(
            "// HGX A100 80GB serving nodes: 2x EPYC 7763, 1 TiB, 8x A100 SXM4 on NVSwitch,\n\
             // 8 HDR (200 Gb/s) rail NICs.\n\
             node-class \"hgx-a100\" {\n\
             \x20   cpu sockets=2 cores-per-socket=64 threads-per-core=2\n\
             \x20   memory \"1TiB\"\n\
             \x20   gpus 8 model=\"a100-sxm4-80gb\"\n\
             \x20   nvlink-domain gpus=\"0-7\"\n\
             \x20   numa 0 gpus=\"0-3\" nics=\"0-3\" cores=\"0-63\"\n\
             \x20   numa 1 gpus=\"4-7\" nics=\"4-7\" cores=\"64-127\"\n\
             \x20   nics 8 speed=\"200Gbps\" kind=\"infiniband\"\n\
             \x20   label \"nvidia.com/gpu.family\" \"ampere\"\n\
             \x20   label \"gpuplan.io/role\" \"serving\"\n}\n\n",
        );
    }
    s.push_str("// One range per scalable unit.\n");
    for l in leaves {
        let class = if l.training { "dgx-h100" } else { "hgx-a100" };
        let _ = writeln!(
            s,
            "nodes \"{}\" class=\"{class}\" {{\n    label \"gpuplan.io/su\" \"{}\"\n}}",
            pattern(l.prefix, l.lo, l.hi, w),
            l.name
        );
    }
    if !pools.is_empty() {
        s.push_str("\n// What the serving nodes' GPUs are for.\n");
        for (name, mode, lo, hi) in pools {
            let _ = writeln!(
                s,
                "pool \"{name}\" mode=\"{mode}\" nodes=\"{}\"",
                pattern("hgx", *lo, *hi, w)
            );
        }
    }
    if serving {
        s.push_str(
            "\n// MIG policy: right-size footprints with 5% headroom.\nmig {\n    headroom \"5%\"\n}\n",
        );
    }
    s
}

fn fabric_kdl(spines: &[&[Leaf]], w: usize, sw: usize, has_core: bool, st: &Stats) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "// Compute fabric: InfiniBand, rail-optimized fat tree (DGX SuperPOD RA).\n\
         //\n\
         // Layout chosen by the generator:\n\
         //   leaf  = one scalable unit (SU) of {NODES_PER_LEAF} nodes, written as one rail group\n\
         //           (`rails=8`: eight rail leaves, NIC i of every node to leaf i)\n\
         //   spine = a spine group above {LEAVES_PER_SPINE} SUs ({} nodes, {} GPUs)\n\
         //   core  = one core group above all spine groups, when there are several\n\
         //\n\
         // Here: {} leaves, {} spine group(s){}.\n\n",
        NODES_PER_LEAF * LEAVES_PER_SPINE as u64,
        NODES_PER_LEAF * LEAVES_PER_SPINE as u64 * GPUS_PER_NODE,
        st.leaves,
        st.spines,
        if has_core { ", one core" } else { ", no core" }
    );
    s.push_str("fabric {\n");
    let mut indent = "    ";
    if has_core {
        s.push_str("    core \"core\" link-speed=\"400Gbps\" {\n");
        indent = "        ";
    }
    for (i, sp) in spines.iter().enumerate() {
        let _ = writeln!(
            s,
            "{indent}spine \"spine-{:0sw$}\" link-speed=\"400Gbps\" {{",
            i + 1
        );
        for l in sp.iter() {
            let speed = if l.training { "400Gbps" } else { "200Gbps" };
            let _ = writeln!(
                s,
                "{indent}    leaf \"{}\" nodes=\"{}\" rails=8 link-speed=\"{speed}\"",
                l.name,
                pattern(l.prefix, l.lo, l.hi, w)
            );
        }
        let _ = writeln!(s, "{indent}}}");
    }
    if has_core {
        s.push_str("    }\n");
    }
    s.push_str("}\n");
    s
}

const TEAM_STEMS: &[&str] = &[
    "foundation",
    "applied-research",
    "search",
    "assistant",
    "ads",
    "vision",
    "speech",
    "robotics",
    "recsys",
    "safety",
    "evaluation",
    "multimodal",
    "code",
    "translation",
    "fraud",
    "health",
    "maps",
    "video",
    "music",
    "platform",
];

fn teams_kdl(rng: &mut Rng, k: u32, gpus: u64) -> (String, Vec<String>) {
    let n = (k as usize / 50).max(3);
    let names: Vec<String> = (0..n)
        .map(|i| {
            let stem = TEAM_STEMS[i % TEAM_STEMS.len()];
            if n <= TEAM_STEMS.len() {
                stem.to_string()
            } else {
                format!("{stem}-{}", i / TEAM_STEMS.len() + 1)
            }
        })
        .collect();
    let weights: Vec<f64> = (0..n).map(|_| rng.range_f64(0.5, 1.5)).collect();
    let sum: f64 = weights.iter().sum();
    let pool = gpus as f64 * 0.7;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// {n} teams. Guarantees add up to at most 70% of the {gpus} GPUs; the rest is\n\
         // borrowable up to each team's burst ceiling.\n"
    );
    let mut total = 0;
    for (name, w) in names.iter().zip(&weights) {
        let g = (pool * w / sum).floor() as u64;
        total += g;
        let burst = ((g as f64 * rng.range_f64(1.5, 3.0)).ceil() as u64)
            .max(g + (gpus as f64 * 0.02).ceil() as u64)
            .min(gpus)
            .max(g);
        if g > 0 {
            let _ = writeln!(s, "team \"{name}\" guarantee={g} burst={burst}");
        } else {
            let _ = writeln!(s, "team \"{name}\" burst={burst}");
        }
    }
    debug_assert!(total as f64 <= pool);
    s.push_str(
        "\n// serving > production > research > scavenger; each preempts the classes below it\n\
         // (serving does not preempt flagship production runs).\n\
         priority \"serving\" value=100000 description=\"User-facing inference\" {\n\
         \x20   preempts \"research\" \"scavenger\"\n}\n\
         priority \"production\" value=10000 description=\"Flagship training and batch inference\" {\n\
         \x20   preempts \"research\" \"scavenger\"\n}\n\
         priority \"research\" value=1000 preempts=\"scavenger\" description=\"Fine-tuning, evaluation, notebooks\"\n\
         priority \"scavenger\" value=100 preemption=\"never\" description=\"Sweeps on idle GPUs\"\n",
    );
    (s, names)
}
