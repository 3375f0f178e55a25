//! Tiny clusters for the oracle properties: the [`Tiny`] description, its KDL text
//! ([`kdl`]) and proptest strategies per feature family ([`Mix`]): 1-4 nodes of 1-8
//! GPUs (any count, not only powers of two), GPUs down, one leaf or two leaves under a
//! spine, gangs with required tiers node/leaf/spine/cluster (multi-node ones sharing
//! nodes, with or without `gpus-per-node`), whole-GPU inference, MIG inference on H100
//! and A100, time-slice and MPS dev classes, packed fractional and whole-GPU classes
//! with CPU and memory requests, 2-3 priority levels, teams with a parent and ceilings,
//! a per-model quota.

#![allow(dead_code)] // each test binary uses its own subset

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub gpus: u32,
    pub a100: bool,
    /// GPU indexes out of service.
    pub down: Vec<u32>,
}

#[derive(Clone, Debug)]
pub enum What {
    /// `training` gang; `per_node: None` leaves `gpus-per-node` out.
    Gang {
        gpus: u32,
        per_node: Option<u32>,
        tier: &'static str,
    },
    /// Whole-GPU inference, `gpus` per replica.
    Whole { gpus: u32 },
    /// MIG inference by footprint (GiB) or explicit profile.
    Mig {
        memory: u32,
        profile: Option<&'static str>,
    },
    /// `dev` sharing GPUs by time-slicing or MPS.
    Shared { mps: bool, per_gpu: u32 },
    /// Packed inference: `fraction` (percent; `None`: whole GPUs, `gpus` per replica)
    /// with CPU (cores) and host memory (GiB) requests.
    Packed {
        percent: Option<u32>,
        gpus: u32,
        cpu: u32,
        memory: u32,
    },
}

#[derive(Clone, Debug)]
pub struct ClassSpec {
    pub what: What,
    pub replicas: u32,
    /// Priority index: `p0` is the highest.
    pub prio: u8,
    /// 0: `t1` (child of `org`), 1: `t2`, 2: `org`.
    pub team: u8,
}

#[derive(Clone, Debug)]
pub struct Tiny {
    pub nodes: Vec<NodeSpec>,
    /// Nodes in the first leaf; all of them: one leaf, else two under a spine.
    pub split: usize,
    /// Priority levels declared (2 or 3).
    pub levels: u8,
    /// Burst ceilings of `org`, `t1` (capped by `org`'s) and `t2`; `None`: every GPU.
    pub ceilings: [Option<u32>; 3],
    /// A quota of `t2` on A100 GPUs (declared only when the cluster has some).
    pub quota: Option<u32>,
    pub classes: Vec<ClassSpec>,
}

/// Which features a strategy draws from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mix {
    /// Node sizes from 1 to 8 (else 1, 2, 4, 8) and GPUs down.
    pub any_size: bool,
    pub down: bool,
    /// Gangs over several nodes (tiers leaf/spine/cluster, `gpus-per-node` below the
    /// gang or left out); else node-local gangs only.
    pub multi_node: bool,
    pub whole: bool,
    pub mig: bool,
    pub shared: bool,
    pub packed: bool,
    pub a100: bool,
}

impl Mix {
    /// Non-power-of-two nodes, GPUs down, node-local gangs, whole-GPU replicas.
    pub const SIZES: Mix = Mix {
        any_size: true,
        down: true,
        multi_node: false,
        whole: true,
        mig: false,
        shared: false,
        packed: false,
        a100: false,
    };
    /// Multi-node gangs sharing nodes, beside whole-GPU replicas.
    pub const GANGS: Mix = Mix {
        any_size: true,
        down: false,
        multi_node: true,
        whole: true,
        mig: false,
        shared: false,
        packed: false,
        a100: false,
    };
    /// Packed fractional and whole-GPU classes beside gangs.
    pub const PACKED: Mix = Mix {
        any_size: true,
        down: true,
        multi_node: false,
        whole: false,
        mig: false,
        shared: false,
        packed: true,
        a100: false,
    };
    /// MIG on H100 and A100 beside time-slice/MPS classes and gangs.
    pub const MIG: Mix = Mix {
        any_size: true,
        down: true,
        multi_node: false,
        whole: false,
        mig: true,
        shared: true,
        packed: false,
        a100: true,
    };
    /// Everything.
    pub const ALL: Mix = Mix {
        any_size: true,
        down: true,
        multi_node: true,
        whole: true,
        mig: true,
        shared: true,
        packed: true,
        a100: true,
    };
}

// ------------------------------------------------------------------ strategies

fn node(mix: Mix) -> impl Strategy<Value = NodeSpec> {
    let sizes: Vec<u32> = if mix.any_size {
        (1..=8).collect()
    } else {
        vec![1, 2, 4, 8]
    };
    (
        prop::sample::select(sizes),
        prop::bool::weighted(if mix.a100 { 0.4 } else { 0.0 }),
        prop::collection::vec(0u32..8, 0..3),
        prop::bool::weighted(if mix.down { 0.4 } else { 0.0 }),
    )
        .prop_map(|(gpus, a100, mut down, any_down)| {
            down.retain(|&g| any_down && g < gpus);
            down.sort_unstable();
            down.dedup();
            NodeSpec { gpus, a100, down }
        })
}

/// A gang of `nodes x per` GPUs (one node for the node tier), `gpus-per-node` left out
/// one time in four; [`fit_gang`] shrinks it to the cluster drawn.
fn gang(mix: Mix) -> BoxedStrategy<What> {
    let tiers = if mix.multi_node {
        vec!["node", "leaf", "leaf", "spine", "cluster"]
    } else {
        vec!["node"]
    };
    (
        prop::sample::select(vec![1u32, 2, 2, 3, 4, 4, 6, 8]),
        1u32..4,
        prop::sample::select(tiers),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(per, nodes, tier, omit)| {
            let nodes = if tier == "node" { 1 } else { nodes };
            What::Gang {
                gpus: per * nodes,
                per_node: (!omit).then_some(per),
                tier,
            }
        })
        .boxed()
}

fn whole() -> BoxedStrategy<What> {
    (1u32..4).prop_map(|gpus| What::Whole { gpus }).boxed()
}

fn mig() -> BoxedStrategy<What> {
    (
        prop::sample::select(vec![5u32, 9, 12, 19, 25, 39, 45]),
        prop::sample::select(vec![None, None, None, Some("2g.20gb"), Some("1g.10gb")]),
    )
        .prop_map(|(memory, profile)| {
            // An explicit profile must hold the footprint (19.5 GiB for a `2g.20gb`).
            let holds = |p: &str| {
                if p == "1g.10gb" {
                    memory <= 9
                } else {
                    memory <= 19
                }
            };
            What::Mig {
                memory,
                profile: profile.filter(|p| holds(p)),
            }
        })
        .boxed()
}

fn shared() -> BoxedStrategy<What> {
    // per-gpu 1, 2, 4: shares exact in the plan's four decimals.
    (any::<bool>(), prop::sample::select(vec![1u32, 2, 4]))
        .prop_map(|(mps, per_gpu)| What::Shared { mps, per_gpu })
        .boxed()
}

fn packed() -> BoxedStrategy<What> {
    (
        prop::sample::select(vec![
            Some(10u32),
            Some(25),
            Some(30),
            Some(40),
            Some(50),
            Some(60),
            Some(75),
            None,
        ]),
        1u32..3,
        1u32..4,
        prop::sample::select(vec![16u32, 64, 100]),
    )
        .prop_map(|(percent, gpus, cpu, memory)| What::Packed {
            percent,
            gpus,
            cpu,
            memory,
        })
        .boxed()
}

fn what(mix: Mix) -> BoxedStrategy<What> {
    let mut options = vec![gang(mix)];
    if mix.whole {
        options.push(whole());
    }
    if mix.mig {
        options.extend([mig(), mig()]);
    }
    if mix.shared {
        options.push(shared());
    }
    if mix.packed {
        options.extend([packed(), packed()]);
    }
    Union::new(options).boxed()
}

/// A class: 1-3 gangs or whole-GPU replicas, 1-8 single-node replicas (enough to fill
/// a GPU with MIG instances or shares).
fn class(mix: Mix) -> impl Strategy<Value = ClassSpec> {
    (what(mix), 1u32..9, 0u8..3, 0u8..3).prop_map(|(what, r, prio, team)| {
        let replicas = match what {
            What::Gang { .. } | What::Whole { .. } => 1 + r % 3,
            _ => r,
        };
        ClassSpec {
            what,
            replicas,
            prio,
            team,
        }
    })
}

/// Tiny clusters drawing from the features of `mix`.
pub fn tiny(mix: Mix) -> impl Strategy<Value = Tiny> {
    (
        prop::collection::vec(node(mix), 1..5),
        any::<bool>(),
        2u8..4,
        (
            prop::option::weighted(0.4, 1u32..16),
            prop::option::weighted(0.3, 1u32..16),
            prop::option::weighted(0.3, 1u32..16),
            prop::option::weighted(0.3, 1u32..8),
        ),
        prop::collection::vec(class(mix), 1..5),
    )
        .prop_map(|(nodes, two, levels, (c0, c1, c2, quota), mut classes)| {
            let split = if two && nodes.len() >= 2 {
                nodes.len().div_ceil(2)
            } else {
                nodes.len()
            };
            for c in &mut classes {
                c.prio %= levels;
                fit_gang(&nodes, split, &mut c.what);
            }
            Tiny {
                nodes,
                split,
                levels,
                ceilings: [c0, c1, c2],
                quota,
                classes,
            }
        })
}

/// Shrinks a gang until some domain of its tier holds it in the empty cluster (what
/// validation requires): `gpus-per-node` at most a node's usable GPUs, as many nodes as
/// one domain has with that many.
fn fit_gang(nodes: &[NodeSpec], split: usize, what: &mut What) {
    let What::Gang {
        gpus,
        per_node,
        tier,
    } = what
    else {
        return;
    };
    let usable: Vec<u32> = nodes.iter().map(|n| n.gpus - n.down.len() as u32).collect();
    let domains: Vec<&[u32]> = match *tier {
        "node" => usable.chunks(1).collect(),
        "leaf" => {
            let (a, b) = usable.split_at(split);
            [a, b].into_iter().filter(|d| !d.is_empty()).collect()
        }
        _ => vec![&usable[..]],
    };
    match *per_node {
        Some(p) => {
            let per = p.min(usable.iter().copied().max().unwrap_or(1)).max(1);
            let room = |d: &&[u32]| d.iter().filter(|&&u| u >= per).count() as u32;
            let most = domains.iter().map(room).max().unwrap_or(1);
            *per_node = Some(per);
            *gpus = per * (*gpus / p).clamp(1, most.max(1));
        }
        None => {
            let most = domains.iter().map(|d| d.iter().sum::<u32>()).max();
            *gpus = (*gpus).min(most.unwrap_or(1)).max(1);
        }
    }
}

/// Any of the families, or all of them at once.
pub fn any_tiny() -> impl Strategy<Value = Tiny> {
    prop_oneof![
        tiny(Mix::SIZES),
        tiny(Mix::GANGS),
        tiny(Mix::PACKED),
        tiny(Mix::MIG),
        tiny(Mix::ALL),
        tiny(Mix::ALL),
    ]
}

// ------------------------------------------------------------------ KDL

const H100: &str = "h100-sxm5-80gb";
const A100: &str = "a100-sxm4-80gb";

fn model(n: &NodeSpec) -> &'static str {
    if n.a100 { A100 } else { H100 }
}

fn class_name(n: &NodeSpec) -> String {
    format!("c{}{}", n.gpus, if n.a100 { "a" } else { "h" })
}

fn node_classes(t: &Tiny) -> String {
    let mut names: Vec<(String, &NodeSpec)> = t.nodes.iter().map(|n| (class_name(n), n)).collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    names.dedup_by(|a, b| a.0 == b.0);
    names
        .iter()
        .map(|(name, n)| {
            format!(
                "node-class \"{name}\" {{\n    cpu sockets=1 cores-per-socket=8 threads-per-core=1\n    memory \"256GiB\"\n    gpus {} model=\"{}\"\n}}\n",
                n.gpus,
                model(n)
            )
        })
        .collect()
}

fn nodes(t: &Tiny) -> String {
    let mut s = String::new();
    for (i, n) in t.nodes.iter().enumerate() {
        let name = format!("n-{}", i + 1);
        s += &format!("nodes \"{name}\" class=\"{}\"", class_name(n));
        if n.down.is_empty() {
            s += "\n";
        } else {
            let list: Vec<String> = n.down.iter().map(u32::to_string).collect();
            s += &format!(
                " {{\n    node \"{name}\" gpus-down=\"{}\"\n}}\n",
                list.join(",")
            );
        }
    }
    s
}

fn range(lo: usize, hi: usize) -> String {
    if lo == hi {
        format!("n-{lo}")
    } else {
        format!("n-[{lo}-{hi}]")
    }
}

fn fabric(t: &Tiny) -> String {
    let n = t.nodes.len();
    if t.split < n {
        format!(
            "fabric {{\n    spine \"sp\" {{\n        leaf \"l0\" nodes=\"{}\"\n        leaf \"l1\" nodes=\"{}\"\n    }}\n}}\n",
            range(1, t.split),
            range(t.split + 1, n)
        )
    } else {
        format!("fabric {{\n    leaf \"l0\" nodes=\"{}\"\n}}\n", range(1, n))
    }
}

fn teams(t: &Tiny) -> String {
    let total: u32 = t.nodes.iter().map(|n| n.gpus).sum();
    let [c0, c1, c2] = t.ceilings.map(|c| c.unwrap_or(total).clamp(1, total));
    let mut s = format!(
        "team \"org\" guarantee=0 burst={c0}\nteam \"t1\" parent=\"org\" guarantee=0 burst={}\nteam \"t2\" guarantee=0 burst={c2}",
        c1.min(c0)
    );
    match t.quota {
        Some(q) if t.nodes.iter().any(|n| n.a100) => {
            s += &format!(" {{\n    quota model=\"{A100}\" guarantee=0 burst={q}\n}}\n");
        }
        _ => s += "\n",
    }
    for i in 0..t.levels {
        s += &format!("priority \"p{i}\" value={}\n", 300 - 100 * i as u32);
    }
    s
}

fn workload(i: usize, c: &ClassSpec) -> String {
    let team = ["t1", "t2", "org"][c.team as usize % 3];
    let head = |kind: &str| {
        format!(
            "{kind} \"w{i}\" team=\"{team}\" priority=\"p{}\" replicas={} {{\n",
            c.prio, c.replicas
        )
    };
    let body = match &c.what {
        What::Gang {
            gpus,
            per_node,
            tier,
        } => {
            let per = per_node.map_or(String::new(), |p| format!(" gpus-per-node={p}"));
            format!(
                "{}    gang gpus={gpus}{per}\n    topology required=\"{tier}\"\n",
                head("training")
            )
        }
        What::Whole { gpus } => format!(
            "{}    memory \"40GiB\"\n    isolation \"whole-gpu\"\n    gpus {gpus}\n",
            head("inference")
        ),
        What::Mig { memory, profile } => {
            let prof = profile.map_or(String::new(), |p| format!("    profile \"{p}\"\n"));
            format!(
                "{}    memory \"{memory}GiB\"\n    isolation \"mig\"\n{prof}",
                head("inference")
            )
        }
        What::Shared { mps, per_gpu } => format!(
            "{}    share \"{}\" per-gpu={per_gpu}\n    memory \"8GiB\"\n",
            head("dev"),
            if *mps { "mps" } else { "time-slice" }
        ),
        What::Packed {
            percent,
            gpus,
            cpu,
            memory,
        } => {
            let share = match percent {
                Some(p) => format!("    fraction \"{p}%\"\n"),
                None => format!("    isolation \"whole-gpu\"\n    gpus {gpus}\n"),
            };
            format!(
                "{}{share}    requests cpu={cpu} memory=\"{memory}GiB\"\n",
                head("inference")
            )
        }
    };
    body + "}\n"
}

/// The cluster as one KDL file.
pub fn kdl(t: &Tiny) -> String {
    let mut s = String::from("cluster \"tiny\"\n");
    s += &node_classes(t);
    s += &nodes(t);
    s += &fabric(t);
    s += &teams(t);
    for (i, c) in t.classes.iter().enumerate() {
        s += &workload(i, c);
    }
    s
}
