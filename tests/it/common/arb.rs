//! Random valid clusters for the property tests (`tests/it/ilp_props.rs`,
//! `tests/it/plan_props.rs`): two leaves under a spine (nodes of 2, 4 or 8 GPUs, an H100 or
//! A100 leaf, a GPU down), teams with a parent and ceilings, three priority levels,
//! gangs with required tiers, MIG and whole-GPU inference, time-slice dev classes, packed
//! inference (fractions and whole GPUs with CPU and memory requests); leaf b may be spot
//! capacity, with gangs that may not use it, may, or may also straddle; every node owned
//! by one scheduler (Kueue, Volcano, KAI, Slurm) or none declared; the GPUs of
//! Kubernetes-side nodes handed out by the device plugin or through DRA (Kubernetes
//! 1.34, `gpu-allocation "dra"`).
//! (The tiny clusters of the oracle properties are `tests/it/tiny`.)

use proptest::prelude::*;

/// What [`decls`] writes: counts and sizes, each class as a tuple.
#[derive(Clone, Debug)]
pub struct Spec {
    pub a_nodes: u32,
    pub b_nodes: u32,
    pub gpus: u32,
    pub model_b: bool,
    pub down: Option<u32>,
    pub ceilings: (u32, u32),
    /// Training: (nodes, replicas, priority level, tier: node, leaf, cluster).
    pub gangs: Vec<(u32, u32, u8, u8)>,
    /// MIG inference: (replicas, memory GiB, priority level).
    pub mig: Vec<(u32, u32, u8)>,
    /// Time-slice dev classes: (replicas, per GPU, priority level).
    pub shared: Vec<(u32, u32, u8)>,
    /// Whole-GPU inference: (replicas, GPUs, priority level).
    pub whole: Vec<(u32, u32, u8)>,
    /// Leaf b's nodes are spot capacity.
    pub spot_b: bool,
    /// Per gang (by index, cycling): 0 may not be interrupted, 1 preemptible and
    /// checkpointing (may use spot), 2 that and `spot straddle=#true`.
    pub gang_spot: (u8, u8, u8),
    /// The scheduler owning every node: 0 none declared, 1 kueue, 2 volcano, 3 slurm,
    /// 4 plain kubernetes (no gangs of several pods: GP035), 5 kai (no MIG: GP039).
    pub scheduler: u8,
    /// Packed inference: (replicas, share of one GPU in 1/1000 or 0 for one whole GPU,
    /// CPU cores, priority level).
    pub packed: Vec<(u32, u32, u32, u8)>,
    /// The cluster hands out GPUs through DRA (declared only where the scheduler takes
    /// DRA claims: none, kueue, volcano, plain kubernetes).
    pub dra: bool,
}

/// Random [`Spec`]s; most give a valid cluster (each property test file checks its
/// share of invalid ones).
pub fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            1u32..4,
            1u32..4,
            prop::sample::select(vec![2u32, 4, 8]),
            any::<bool>(),
        ),
        (prop::option::of(0u32..2), (1u32..40, 1u32..40)),
        prop::collection::vec((1u32..4, 1u32..3, 0u8..3, 0u8..3), 0..3),
        prop::collection::vec((1u32..12, 4u32..40, 0u8..3), 0..3),
        prop::collection::vec((1u32..10, 1u32..5, 0u8..3), 0..2),
        prop::collection::vec((1u32..5, 1u32..3, 0u8..3), 0..2),
        (
            prop::bool::weighted(0.3),
            (0u8..3, 0u8..3, 0u8..3),
            0u8..6,
            prop::collection::vec(
                (
                    1u32..8,
                    prop::sample::select(vec![0u32, 100, 250, 300, 500]),
                    1u32..5,
                    0u8..3,
                ),
                0..3,
            ),
            prop::bool::weighted(0.35),
        ),
    )
        .prop_map(
            |(
                (a, b, g, mb),
                (down, ceilings),
                gangs,
                mig,
                shared,
                whole,
                (spot_b, gang_spot, scheduler, packed, dra),
            )| {
                Spec {
                    a_nodes: a,
                    b_nodes: b,
                    gpus: g,
                    model_b: mb,
                    down,
                    ceilings,
                    gangs,
                    mig,
                    shared,
                    whole,
                    spot_b,
                    gang_spot,
                    scheduler,
                    packed,
                    dra,
                }
            },
        )
}

/// The configuration, with `extra` more nodes in leaf b (same class), as top-level
/// declarations (one string each).
pub fn decls(s: &Spec, extra: u32) -> Vec<String> {
    let mut v = base_decls(s, extra);
    v.extend(class_decls(s));
    v
}

/// The cluster, its two node classes, nodes, fabric, teams and priorities.
fn base_decls(s: &Spec, extra: u32) -> Vec<String> {
    let model_b = if s.model_b {
        "a100-sxm4-80gb"
    } else {
        "h100-sxm5-80gb"
    };
    let (g, gm, a) = (s.gpus, s.gpus - 1, s.a_nodes);
    let b = s.b_nodes + extra;
    let c0 = s.ceilings.0.max(s.ceilings.1).max(2);
    let c1 = s.ceilings.1.min(s.ceilings.0.max(2)).max(1);
    let scheduler =
        ["", "kueue", "volcano", "slurm", "kubernetes", "kai"][s.scheduler as usize % 6];
    let dra = if s.dra && !matches!(scheduler, "slurm" | "kai") {
        "    kubernetes version=\"1.34\"\n    gpu-allocation \"dra\"\n"
    } else {
        ""
    };
    vec![
        if scheduler.is_empty() && dra.is_empty() {
            "cluster \"prop\"\n".to_string()
        } else if scheduler.is_empty() {
            format!("cluster \"prop\" {{\n{dra}}}\n")
        } else {
            format!("cluster \"prop\" {{\n    scheduler \"{scheduler}\"\n{dra}}}\n")
        },
        format!(
            "node-class \"ca\" {{\n    cpu sockets=1 cores-per-socket=8 threads-per-core=1\n    memory \"256GiB\"\n    gpus {g} model=\"h100-sxm5-80gb\"\n    nvlink-domain gpus=\"0-{gm}\"\n}}\n"
        ),
        format!(
            "node-class \"cb\"{} {{\n    cpu sockets=1 cores-per-socket=8 threads-per-core=1\n    memory \"256GiB\"\n    gpus {g} model=\"{model_b}\"\n}}\n",
            if s.spot_b {
                " capacity=\"spot\" price-per-hour=1 interruptions=\"2/day\""
            } else {
                ""
            }
        ),
        format!(
            "nodes \"a-[1-{a}]\" class=\"ca\" {}\n",
            match s.down {
                Some(i) => format!("{{\n    node \"a-1\" gpus-down=\"{i}\"\n}}"),
                None => String::new(),
            }
        ),
        format!("nodes \"b-[1-{b}]\" class=\"cb\"\n"),
        format!(
            "fabric {{\n    spine \"sp\" {{\n        leaf \"leaf-a\" nodes=\"a-[1-{a}]\"\n        leaf \"leaf-b\" nodes=\"b-[1-{b}]\"\n    }}\n}}\n"
        ),
        format!("team \"org\" guarantee=2 burst={c0}\n"),
        format!("team \"t1\" parent=\"org\" guarantee=1 burst={c1}\n"),
        format!("team \"t2\" guarantee=1 burst={c1}\n"),
        "priority \"p0\" value=300\n".to_string(),
        "priority \"p1\" value=200\n".to_string(),
        "priority \"p2\" value=100\n".to_string(),
    ]
}

/// The workload classes: gangs, MIG, shared, whole-GPU and packed.
fn class_decls(s: &Spec) -> Vec<String> {
    let g = s.gpus;
    let mut v = Vec::new();
    let team = |i: usize| if i % 2 == 0 { "t1" } else { "t2" };
    let tiers = ["node", "leaf", "cluster"];
    for (i, (nodes, reps, prio, tier)) in s.gangs.iter().enumerate() {
        // The tier depends on the base cluster only (so that `extra` adds capacity and
        // nothing else).
        let tier = if *nodes > s.a_nodes.max(s.b_nodes) {
            "cluster"
        } else {
            tiers[*tier as usize]
        };
        let nodes = if tier == "node" { 1 } else { *nodes };
        let spot = [s.gang_spot.0, s.gang_spot.1, s.gang_spot.2][i % 3];
        let spot = match spot {
            0 => "",
            1 => "    preemptible\n    checkpoint every=\"30m\"\n",
            _ => "    preemptible\n    checkpoint every=\"30m\"\n    spot straddle=#true\n",
        };
        v.push(format!(
            "training \"gang{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    gang gpus={} gpus-per-node={g}\n    topology required=\"{tier}\"\n{spot}}}\n",
            team(i),
            nodes * g
        ));
    }
    for (i, (reps, mem, prio)) in s.mig.iter().enumerate() {
        v.push(format!(
            "inference \"mig{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    memory \"{mem}GiB\"\n    isolation \"mig\"\n}}\n",
            team(i + 1)
        ));
    }
    for (i, (reps, per, prio)) in s.shared.iter().enumerate() {
        v.push(format!(
            "dev \"nb{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    share \"time-slice\" per-gpu={per}\n    memory \"8GiB\"\n}}\n",
            team(i)
        ));
    }
    for (i, (reps, gpus, prio)) in s.whole.iter().enumerate() {
        v.push(format!(
            "inference \"whole{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus {}\n}}\n",
            team(i + 1),
            (*gpus).min(g)
        ));
    }
    for (i, (reps, milli, cpu, prio)) in s.packed.iter().enumerate() {
        let size = if *milli == 0 {
            "    gpus 1\n".to_string()
        } else {
            format!("    fraction \"{}%\"\n", *milli as f64 / 10.0)
        };
        v.push(format!(
            "inference \"pk{i}\" team=\"{}\" priority=\"p{prio}\" replicas={reps} {{\n{size}    requests cpu={cpu} memory=\"8GiB\"\n}}\n",
            team(i)
        ));
    }
    v
}

/// The whole configuration as one file.
pub fn kdl(s: &Spec) -> String {
    decls(s, 0).concat()
}
