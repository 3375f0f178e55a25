//! The demand of a generated SuperPOD: training, inference and dev classes drawn to
//! budgets (see the parent module's docs, "Demand").
//!
//! The draws from the [`Rng`] happen in a fixed order (the budget factor, then the
//! classes of each kind in turn), so the same options always give the same classes.

use super::{A100, Caps, GPUS_PER_NODE, H100, Mix, Stats, SuperpodOptions, digits};
use crate::generate::Rng;
use std::fmt::Write;

/// The nodes the demand is drawn for.
#[derive(Clone, Copy, Debug)]
pub(super) struct Nodes {
    pub training: u64,
    pub serving: u64,
    /// Tier capacities of the training nodes.
    pub caps: Caps,
}

/// Splits `total` over `n` classes with log-normal weights (`sigma`: how heavy the
/// tail is); each share is at least `floor` when the total is large enough for it.
fn allocate(rng: &mut Rng, total: f64, n: usize, sigma: f64, floor: f64) -> Vec<f64> {
    let w: Vec<f64> = (0..n).map(|_| (rng.normal() * sigma).exp()).collect();
    let sum: f64 = w.iter().sum();
    let floor = if total >= floor * n as f64 * 1.1 {
        floor
    } else {
        0.0
    };
    let rest = total - floor * n as f64;
    w.iter().map(|x| floor + rest * x / sum).collect()
}

const GANGS: &[u64] = &[8, 16, 32, 64, 128, 256, 512, 1024];

/// The tightest tier that holds `g` H100 GPUs, and the next looser one.
fn tiers_for(g: u64, caps: Caps) -> Vec<&'static str> {
    let mut v = Vec::new();
    if g <= GPUS_PER_NODE {
        v.push("node");
    }
    if g <= caps.leaf {
        v.push("leaf");
    }
    if g <= caps.spine {
        v.push("spine");
    }
    if caps.core.is_some_and(|c| g <= c) {
        v.push("core");
    }
    v.push("cluster");
    v
}

/// GPU-equivalents of one MIG replica: footprint / 80 GiB rounded up to 1/8, 2/8, 4/8, 1.
pub fn mig_equivalent(gib: f64) -> f64 {
    let f = gib / 80.0;
    [0.125, 0.25, 0.5, 1.0]
        .into_iter()
        .find(|x| *x >= f)
        .unwrap_or(1.0)
}

// (family, size, precision, footprint GiB)
const MIG_MODELS: &[(&str, &str, &str, u32)] = &[
    ("embed", "1b", "fp16", 5),
    ("rerank", "1b", "fp16", 6),
    ("chat", "7b", "int8", 9),
    ("chat", "7b", "fp16", 15),
    ("code", "7b", "fp16", 15),
    ("summarize", "13b", "int8", 16),
    ("chat", "13b", "fp16", 27),
    ("code", "13b", "fp16", 27),
    ("chat", "34b", "int8", 36),
    ("code", "34b", "int8", 36),
];
// (family, size, precision, footprint GiB, GPUs)
const WHOLE_MODELS: &[(&str, &str, &str, u32, u64)] = &[
    ("code", "34b", "fp16", 70, 1),
    ("chat", "70b", "int8", 72, 1),
    ("search", "70b", "int8", 72, 1),
    ("chat", "70b", "fp16", 140, 2),
    ("assistant", "70b", "fp16", 140, 2),
];

/// How many classes of each kind, and the GPUs each kind's demand is drawn from.
#[derive(Clone, Copy, Debug)]
struct Budget {
    n_train: usize,
    n_dev: usize,
    n_inf: usize,
    n_whole: usize,
    n_mig: usize,
    train_cap: f64,
    serve_cap: f64,
    mig_share: f64,
    whole_share: f64,
    dev_share: f64,
}

impl Budget {
    /// The split of `k` classes and of the GPUs by the mix.
    fn new(mix: Mix, k: usize, nodes: Nodes) -> Budget {
        let (train_frac, dev_frac) = match mix {
            Mix::Training => (1.0, 0.0),
            Mix::Mixed => (0.65, 0.05),
            Mix::Inference => (0.10, 0.10),
        };
        let round = |x: f64| x.round() as usize;
        let (n_train, n_dev) = if mix == Mix::Training {
            (k, 0)
        } else if k < 3 {
            (0, 0)
        } else {
            let t = if nodes.training > 0 {
                round(k as f64 * train_frac).max(1)
            } else {
                0
            };
            (t, round(k as f64 * dev_frac).max(1))
        };
        let n_inf = k - n_train - n_dev;
        let n_whole = round(n_inf as f64 * 0.35);
        let n_mig = n_inf - n_whole;
        let (train_cap, serve_cap) = capacities(nodes, n_train, n_inf + n_dev);
        let (mut mig_share, whole_share, mut dev_share) = (0.5, 0.35, 0.15);
        if n_dev == 0 {
            mig_share += dev_share;
            dev_share = 0.0;
        }
        let (mig_share, whole_share) = if n_whole == 0 {
            (mig_share + whole_share, 0.0)
        } else if n_mig == 0 {
            (0.0, mig_share + whole_share)
        } else {
            (mig_share, whole_share)
        };
        Budget {
            n_train,
            n_dev,
            n_inf,
            n_whole,
            n_mig,
            train_cap,
            serve_cap,
            mig_share,
            whole_share,
            dev_share,
        }
    }
}

/// GPUs for training and for serving (inference and dev): each kind of node for its
/// own, or a 75/25 split of an all-training cluster.
fn capacities(nodes: Nodes, n_train: usize, n_serve: usize) -> (f64, f64) {
    let total = ((nodes.training + nodes.serving) * GPUS_PER_NODE) as f64;
    if n_train == 0 {
        (0.0, total)
    } else if n_serve == 0 {
        (total, 0.0)
    } else if nodes.serving == 0 {
        (total * 0.75, total * 0.25)
    } else {
        (
            (nodes.training * GPUS_PER_NODE) as f64,
            (nodes.serving * GPUS_PER_NODE) as f64,
        )
    }
}

/// Class names `<family>-<number>`, numbered across all kinds.
struct Names {
    idx: usize,
    width: usize,
}

impl Names {
    fn next(&mut self, family: &str) -> String {
        self.idx += 1;
        format!("{family}-{:0w$}", self.idx, w = self.width)
    }
}

/// What the class generators share: the draws, the teams, the names and the running
/// demand in GPU-equivalents.
struct Draw<'a> {
    rng: &'a mut Rng,
    teams: &'a [String],
    names: Names,
    demand: f64,
}

pub(super) fn workloads_kdl(
    rng: &mut Rng,
    opts: &SuperpodOptions,
    k: u32,
    nodes: Nodes,
    teams: &[String],
    st: &mut Stats,
) -> String {
    let k = k as usize;
    let b = Budget::new(opts.mix, k, nodes);
    let u = rng.range_f64(0.95, 1.05);
    let mut d = Draw {
        rng,
        teams,
        names: Names {
            idx: 0,
            width: digits(k as u64).max(4),
        },
        demand: 0.0,
    };
    let train = training_classes(&mut d, b.train_cap * u, b.n_train, nodes.caps);
    let train_demand = d.demand;
    let mut inf = mig_classes(&mut d, b.serve_cap * u * b.mig_share, b.n_mig);
    inf.push_str(&whole_classes(
        &mut d,
        b.serve_cap * u * b.whole_share,
        b.n_whole,
    ));
    let inf_demand = d.demand - train_demand;
    let dev = dev_classes(&mut d, b.serve_cap * u * b.dev_share, b.n_dev);
    let demand = d.demand;
    let dev_demand = demand - train_demand - inf_demand;

    st.training_classes = b.n_train;
    st.inference_classes = b.n_inf;
    st.dev_classes = b.n_dev;
    st.demand_gpus = demand;

    let mut s = String::new();
    let _ = writeln!(
        s,
        "// {k} workload classes: {} training, {} inference ({} MIG, {} whole-GPU), {} dev.\n\
         // Requested demand: {:.1} GPU-equivalents, {:.1}% of {} GPUs\n\
         // (training {:.1}, inference {:.1}, dev {:.1}). MIG replicas count as their footprint\n\
         // rounded up to 1/8, 2/8, 4/8 or 1 GPU; time-sliced sessions as 1/per-gpu.",
        b.n_train,
        b.n_inf,
        b.n_mig,
        b.n_whole,
        b.n_dev,
        demand,
        st.demand_percent(),
        st.gpus,
        train_demand,
        inf_demand,
        dev_demand
    );
    for (title, body) in [
        ("training", train),
        ("inference", inf),
        ("development", dev),
    ] {
        if !body.is_empty() {
            let _ = writeln!(s, "\n// ---- {title}\n");
            s.push_str(&body);
        }
    }
    s
}

/// `n` training classes sharing `budget` GPUs; each takes the shape closest to its
/// share and passes the rounding error on.
fn training_classes(d: &mut Draw, budget: f64, n: usize, caps: Caps) -> String {
    let mut train = String::new();
    let max_gang = GANGS
        .iter()
        .copied()
        .filter(|g| *g == 8 || *g * 2 <= caps.cluster)
        .max()
        .unwrap_or(8);
    let mut carry = 0.0;
    for b in allocate(d.rng, budget, n, 1.5, 8.0) {
        let target = b + carry;
        let team = d.rng.pick(d.teams);
        let sweep = d.rng.chance(0.3);
        let (g, gpn) = gang_shape(d.rng, target, sweep, max_gang);
        let max_rep = if sweep { 32 } else { 4 };
        let replicas = ((target / g as f64).round() as u64).clamp(1, max_rep);
        let actual = (g * replicas) as f64;
        carry = target - actual;
        d.demand += actual;
        let class = TrainingClass {
            team,
            sweep,
            g,
            gpn,
            replicas,
        };
        class.write(d, caps, &mut train);
    }
    train
}

/// Gang size and GPUs per node for a class wanting about `target` GPUs: small gangs on
/// one node, 8-GPU sweeps, or the largest gang up to `max_gang` that fits the target,
/// sometimes one or two sizes smaller.
fn gang_shape(rng: &mut Rng, target: f64, sweep: bool, max_gang: u64) -> (u64, u64) {
    if target < 6.0 {
        let g = [4u64, 2, 1]
            .into_iter()
            .find(|g| *g as f64 <= target)
            .unwrap_or(1);
        return (g, g);
    }
    if sweep {
        return (8, 8);
    }
    let sizes: Vec<u64> = GANGS.iter().copied().filter(|g| *g <= max_gang).collect();
    let mut i = sizes.iter().rposition(|g| *g as f64 <= target).unwrap_or(0);
    if i > 0 && rng.chance(0.4) {
        i -= 1;
    }
    if i > 0 && rng.chance(0.15) {
        i -= 1;
    }
    (sizes[i], 8)
}

/// One training class, its shape drawn.
struct TrainingClass<'a> {
    team: &'a String,
    sweep: bool,
    g: u64,
    gpn: u64,
    replicas: u64,
}

impl TrainingClass<'_> {
    /// Draws its topology, family, priority and checkpoint interval, and writes it.
    fn write(&self, d: &mut Draw, caps: Caps, out: &mut String) {
        let (g, sweep) = (self.g, self.sweep);
        let tiers = tiers_for(g, caps);
        let (required, preferred) = if g <= GPUS_PER_NODE && (sweep || g < 8) {
            ("node", None)
        } else if tiers.len() >= 2 && d.rng.chance(0.35) {
            (tiers[1], Some(tiers[0]))
        } else {
            (tiers[0], None)
        };
        let (family, priority, checkpoint) = training_kind(d.rng, g, sweep);
        let name = d.names.next(family);
        let rep = if self.replicas > 1 {
            format!(" replicas={}", self.replicas)
        } else {
            String::new()
        };
        let team = self.team;
        let _ = writeln!(
            out,
            "training \"{name}\" team=\"{team}\" priority=\"{priority}\"{rep} {{"
        );
        let _ = writeln!(out, "    gang gpus={g} gpus-per-node={}", self.gpn);
        match preferred {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "    topology required=\"{required}\" preferred=\"{p}\""
                );
            }
            None => {
                let _ = writeln!(out, "    topology required=\"{required}\"");
            }
        }
        let _ = writeln!(out, "    checkpoint every=\"{checkpoint}\"");
        if priority != "production" {
            let _ = writeln!(out, "    preemptible");
        }
        let _ = writeln!(out, "    models \"{H100}\"\n}}");
    }
}

/// Family, priority and checkpoint interval of a training class: sweeps scavenge,
/// pretraining runs (256 GPUs and more) are mostly production, the rest mostly research.
fn training_kind(rng: &mut Rng, g: u64, sweep: bool) -> (&'static str, &'static str, &'static str) {
    if sweep || g < 8 {
        ("sweep", "scavenger", *rng.pick(&["10m", "15m", "30m"]))
    } else if g >= 256 {
        (
            "pretrain",
            if rng.chance(0.7) {
                "production"
            } else {
                "research"
            },
            *rng.pick(&["30m", "1h"]),
        )
    } else {
        (
            *rng.pick(&["finetune", "rlhf", "distill", "eval"]),
            if rng.chance(0.3) {
                "production"
            } else {
                "research"
            },
            *rng.pick(&["15m", "20m", "30m", "1h", "2h"]),
        )
    }
}

/// Serving first, sometimes production.
fn serving_priority(rng: &mut Rng) -> &'static str {
    if rng.chance(0.75) {
        "serving"
    } else {
        "production"
    }
}

/// The models an inference or dev class accepts.
fn serving_models() -> String {
    format!("\"{A100}\" \"{H100}\"")
}

/// `n` MIG inference classes sharing `budget` GPU-equivalents.
fn mig_classes(d: &mut Draw, budget: f64, n: usize) -> String {
    let mut inf = String::new();
    let models = serving_models();
    let mut carry = 0.0;
    for b in allocate(d.rng, budget, n, 0.9, 0.0) {
        let target = b + carry;
        let (family, size, prec, gib) = *d.rng.pick(MIG_MODELS);
        let eq = mig_equivalent(gib as f64);
        let replicas = ((target / eq).round() as u64).clamp(1, 4000);
        let actual = eq * replicas as f64;
        carry = target - actual;
        d.demand += actual;
        let team = d.rng.pick(d.teams);
        let priority = serving_priority(d.rng);
        let name = d.names.next(&format!("{family}-{size}-{prec}"));
        let _ = writeln!(
            inf,
            "inference \"{name}\" team=\"{team}\" priority=\"{priority}\" replicas={replicas} {{\n    memory \"{gib}GiB\"\n    isolation \"mig\"\n    models {models}\n}}"
        );
    }
    inf
}

/// `n` whole-GPU inference classes sharing `budget` GPUs.
fn whole_classes(d: &mut Draw, budget: f64, n: usize) -> String {
    let mut inf = String::new();
    let models = serving_models();
    let mut carry = 0.0;
    for b in allocate(d.rng, budget, n, 0.9, 0.0) {
        let target = b + carry;
        let (family, size, prec, gib, g) = *d.rng.pick(WHOLE_MODELS);
        let replicas = ((target / g as f64).round() as u64).clamp(1, 4000);
        let actual = (g * replicas) as f64;
        carry = target - actual;
        d.demand += actual;
        let team = d.rng.pick(d.teams);
        let priority = serving_priority(d.rng);
        let name = d.names.next(&format!("{family}-{size}-{prec}"));
        let _ = writeln!(
            inf,
            "inference \"{name}\" team=\"{team}\" priority=\"{priority}\" replicas={replicas} {{\n    memory \"{gib}GiB\"\n    isolation \"whole-gpu\"\n    gpus {g}\n    models {models}\n}}"
        );
    }
    inf
}

/// `n` time-sliced dev classes (4 sessions per GPU) sharing `budget` GPUs.
fn dev_classes(d: &mut Draw, budget: f64, n: usize) -> String {
    let mut dev = String::new();
    let models = serving_models();
    let mut carry = 0.0;
    for b in allocate(d.rng, budget, n, 0.9, 0.0) {
        let target = b + carry;
        let per_gpu = 4u64;
        let replicas = ((target * per_gpu as f64).round() as u64).clamp(1, 16000);
        let actual = replicas as f64 / per_gpu as f64;
        carry = target - actual;
        d.demand += actual;
        let team = d.rng.pick(d.teams);
        // 4 x 18 GiB stays below an 80 GB GPU (GP029: time-slicing has no memory isolation).
        let gib = *d.rng.pick(&[8u32, 12, 16, 18]);
        let name = d.names.next("notebooks");
        let _ = writeln!(
            dev,
            "dev \"{name}\" team=\"{team}\" priority=\"research\" replicas={replicas} {{\n    share \"time-slice\" per-gpu={per_gpu}\n    memory \"{gib}GiB\"\n    models {models}\n}}"
        );
    }
    dev
}
