//! Aggregation: the cluster and its demand as a small problem.
//!
//! Nodes that are identical for planning (same class, usable GPU count, leaf,
//! multi-node NVLink domain and pinned pool) form one [`Group`]; training gangs with the
//! same shape (gang size, GPUs per node, tiers, acceptable models) form one [`Shape`].
//! The number of ILP variables grows with groups x shapes, not with GPUs.

use super::pattern::NodeShape;
use crate::catalog::MigProfile;
use crate::model::PoolMode;
use crate::model::sizing::{self, Usage};
use crate::model::{Cluster, NodeIdx, Tier};
use crate::solve::Layouts;
use std::collections::BTreeMap;

/// Gang shapes are keyed by (gang GPUs, GPUs per node, modes, acceptable models, the
/// teams of the chain with a per-model quota).
type ShapeKey = (u32, u32, Vec<(Tier, bool, bool)>, Vec<String>, Vec<String>);

/// Identical nodes share: fabric path, multi-node NVLink domain, class/model, usable
/// GPUs, pinned mode, (for nodes with fixed MIG layouts) the node itself, and the
/// current MIG layout of each GPU (`mig layout ... current=#true`).
type GroupKey = (
    Vec<String>,
    String,
    String,
    u32,
    Option<PoolMode>,
    Option<NodeIdx>,
    Vec<(u32, Vec<&'static str>)>,
    NodeShape,
);

#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// Member nodes, name order.
    pub nodes: Vec<NodeIdx>,
    pub model: String,
    /// Usable GPUs per node.
    pub gpus: u32,
    /// Largest node-local NVLink domain (GPUs).
    pub nvlink: u32,
    pub pinned: Option<PoolMode>,
    /// Nodes with fixed MIG layouts (each such node is its own group).
    pub fixed_mig: bool,
    /// Domain name per tier (leaf and above; multi-node NVLink domain for `nvlink`).
    pub domain: BTreeMap<Tier, String>,
    /// Order of the group in the fabric (for compaction).
    pub ord: usize,
    /// Current MIG layouts of each member node (the same on every member): distinct
    /// layouts with how many GPUs of one node have each, GPUs with fixed layouts left out.
    pub current: Vec<(Vec<&'static MigProfile>, u32)>,
    /// What whole-GPU work can use on each member node (NVLink domains, CPU, memory).
    pub shape: NodeShape,
}

/// One way to place gangs of a shape: inside one domain of `tier`.
#[derive(Clone, Debug)]
pub(crate) struct Mode {
    pub tier: Tier,
    /// Gangs fit inside one node (node tier, or a node-local NVLink domain).
    pub node_local: bool,
    /// Cost of a gang placed this way (0 for the preferred tier).
    pub penalty: f64,
    /// A gang keeps to one side of spot capacity: spot groups form their own domains
    /// (see [`crate::model::Cluster::gang_side`]).
    pub split_spot: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub gpus: u32,
    pub per_node: u32,
    /// Shares (nodes) per gang.
    pub shares: u32,
    pub modes: Vec<Mode>,
    pub models: Vec<String>,
    /// Workloads of this shape (indexes into `Cluster::workloads`).
    pub workloads: Vec<usize>,
    /// CPU (1/1000 cores) each pod takes on its node: one for a Slurm job (every job
    /// takes a CPU, beside packed jobs' requests), none on Kubernetes (the pods ask for
    /// none). The shape's models carry the scheduler, so all its workloads agree.
    pub cpu_per_pod: u64,
    /// Teams of the workloads' chains that have a per-model quota (the same for every
    /// workload of the shape, so its GPUs per model count against exactly these).
    pub quota_teams: Vec<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub groups: Vec<Group>,
    pub shapes: Vec<Shape>,
    /// MIG demand: workload -> (model -> profile).
    pub mig: BTreeMap<usize, BTreeMap<String, &'static MigProfile>>,
    /// Shared demand: workload -> (mps, per_gpu, models).
    pub shared: BTreeMap<usize, (bool, u32, Vec<String>)>,
    /// Packed demand (CPU, host memory, GPU share per node): workload -> models.
    pub packed: BTreeMap<usize, Vec<String>>,
    /// The device-plugin sharing a fractional packed workload needs of its nodes
    /// ([`Cluster::fraction_slots`]).
    pub slots: BTreeMap<usize, crate::model::sharing::Slots>,
    /// GPU-equivalents of one replica, per workload and model.
    pub equiv: BTreeMap<(usize, String), f64>,
    /// Fixed MIG layouts: (node, gpu) -> catalog profiles.
    pub fixed_layouts: Layouts,
    /// Current MIG layouts (`current=#true`) of usable GPUs without a fixed layout,
    /// largest profile first.
    pub current_layouts: Layouts,
}

impl Problem {
    /// `previous`: the previous placement's MIG layouts (see
    /// [`crate::model::current_mig_layouts`]).
    pub fn build(c: &Cluster, previous: &BTreeMap<(NodeIdx, u32), Vec<String>>) -> Problem {
        let fixed_layouts = fixed_layouts(c);
        let current_layouts = crate::solve::keepable_layouts(c, &fixed_layouts, previous);
        let groups = groups(c, &fixed_layouts, &current_layouts);
        let mut p = Problem {
            groups,
            shapes: Vec::new(),
            mig: BTreeMap::new(),
            shared: BTreeMap::new(),
            packed: BTreeMap::new(),
            slots: BTreeMap::new(),
            equiv: BTreeMap::new(),
            fixed_layouts,
            current_layouts,
        };
        p.demand(c);
        p
    }

    /// The demand of every workload some group can run with at least one replica: its
    /// GPU-equivalents per model, and its gang shape, MIG profiles, shared or packed
    /// demand.
    fn demand(&mut self, c: &Cluster) {
        let mut shapes: BTreeMap<ShapeKey, Shape> = BTreeMap::new();
        for (wi, w) in c.workloads.iter().enumerate() {
            let models: Vec<String> = c
                .models
                .values()
                .filter(|m| sizing::runs_on(c, w, m))
                .map(|m| m.name.clone())
                .collect();
            let eligible: Vec<&Group> = self
                .groups
                .iter()
                .filter(|g| models.contains(&g.model))
                .collect();
            if eligible.is_empty() || w.replicas == 0 {
                continue;
            }
            let maxg = eligible.iter().map(|g| g.gpus).max().unwrap_or(0);
            for m in &models {
                let model = &c.models[m];
                self.equiv
                    .insert((wi, m.clone()), sizing::gpu_equivalent(c, w, model, maxg));
            }
            match sizing::usage(w, maxg) {
                Usage::Gang { gpus, per_node } => {
                    if let Some((key, shape)) = gang_shape(c, w, gpus, per_node, &models, &eligible)
                    {
                        shapes.entry(key).or_insert(shape).workloads.push(wi);
                    }
                }
                Usage::Mig => {
                    let per: BTreeMap<String, &'static MigProfile> = models
                        .iter()
                        .filter_map(|m| {
                            sizing::mig_profile(c, w, &c.models[m]).map(|p| (m.clone(), p))
                        })
                        .collect();
                    if !per.is_empty() {
                        self.mig.insert(wi, per);
                    }
                }
                Usage::Shared { mps, per_gpu } => {
                    self.shared.insert(wi, (mps, per_gpu, models));
                }
                Usage::Packed { .. } => {
                    if let Some(s) = c.fraction_slots(w) {
                        self.slots.insert(wi, s);
                    }
                    self.packed.insert(wi, models);
                }
            }
        }
        self.shapes = shapes.into_values().collect();
    }

    /// The shape of each gang workload: workload -> index into `shapes`.
    pub(crate) fn shape_of(&self) -> BTreeMap<usize, usize> {
        self.shapes
            .iter()
            .enumerate()
            .flat_map(|(si, s)| s.workloads.iter().map(move |&w| (w, si)))
            .collect()
    }

    /// The group of each node that has one: node -> index into `groups`.
    pub(crate) fn group_of(&self) -> BTreeMap<NodeIdx, usize> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| g.nodes.iter().map(move |&n| (n, gi)))
            .collect()
    }

    /// Groups a mode of a shape may use, with their domain key (`None` = node-local).
    pub(crate) fn domain_of(&self, g: &Group, mode: &Mode) -> Option<String> {
        if mode.node_local {
            None
        } else {
            let d = if mode.tier == Tier::Cluster {
                Some("cluster".to_string())
            } else {
                g.domain.get(&mode.tier).cloned()
            };
            // Spot groups form domains of their own for gangs that may not straddle.
            let spot = mode.split_spot && g.model.ends_with(crate::model::authority::SPOT_TAG);
            d.map(|d| {
                if spot {
                    d + crate::model::authority::SPOT_TAG
                } else {
                    d
                }
            })
        }
    }
}

/// The ways gangs of this size may be placed: the required tier, plus the preferred one
/// when it is tighter. A node-local mode holds the whole gang on one node (node tier, or
/// the NVLink tier on nodes whose NVLink domain is inside the node); the NVLink tier on
/// multi-node domains (NVL72) is a domain mode.
fn modes(
    required: Option<Tier>,
    preferred: Option<Tier>,
    gpus: u32,
    per_node: u32,
    eligible: &[&Group],
) -> Vec<Mode> {
    let req = required.unwrap_or(Tier::Cluster);
    let one_node = per_node >= gpus;
    let mk = |t: Tier, penalty: f64| -> Vec<Mode> {
        let mut v = Vec::new();
        match t {
            Tier::Node => {
                if one_node && eligible.iter().any(|g| g.gpus >= gpus) {
                    v.push(Mode {
                        tier: t,
                        node_local: true,
                        penalty,
                        split_spot: false,
                    });
                }
            }
            Tier::Nvlink => {
                if one_node
                    && eligible
                        .iter()
                        .any(|g| !g.domain.contains_key(&Tier::Nvlink) && g.nvlink >= gpus)
                {
                    v.push(Mode {
                        tier: t,
                        node_local: true,
                        penalty,
                        split_spot: false,
                    });
                }
                if eligible
                    .iter()
                    .any(|g| g.domain.contains_key(&Tier::Nvlink))
                {
                    v.push(Mode {
                        tier: t,
                        node_local: false,
                        penalty,
                        split_spot: false,
                    });
                }
            }
            _ => v.push(Mode {
                tier: t,
                node_local: false,
                penalty,
                split_spot: false,
            }),
        }
        v
    };
    let mut v = Vec::new();
    if let Some(p) = preferred.filter(|p| *p < req) {
        v.extend(mk(p, 0.0));
    }
    let pen = if v.is_empty() {
        0.0
    } else {
        (gpus as f64 / 8.0).max(1.0)
    };
    v.extend(mk(req, pen));
    v
}

/// The shape of a gang workload `w` of `gpus` GPUs (`per_node` per node as sized) on
/// `models`, with its key (workloads left empty); `None` when no mode can place it.
fn gang_shape(
    c: &Cluster,
    w: &crate::model::Workload,
    gpus: u32,
    per_node: u32,
    models: &[String],
    eligible: &[&Group],
) -> Option<(ShapeKey, Shape)> {
    let per_node = if w.kind == crate::model::WorkloadKind::Training {
        c.gang_per_node(w)
    } else {
        per_node.max(1)
    };
    let shares = gpus.div_ceil(per_node);
    let mut modes = modes(w.required_tier, w.preferred_tier, gpus, per_node, eligible);
    if modes.is_empty() {
        return None;
    }
    let split_spot = c.has_spot() && !w.straddle;
    for m in &mut modes {
        m.split_spot = split_spot;
    }
    let key_modes: Vec<(Tier, bool, bool)> = modes
        .iter()
        .map(|m| (m.tier, m.node_local, m.split_spot))
        .collect();
    let quota_teams: Vec<String> = c
        .team_chain(&w.team)
        .iter()
        .filter(|t| {
            t.quotas
                .iter()
                .any(|q| q.model.is_some() && q.burst.is_some())
        })
        .map(|t| t.name.clone())
        .collect();
    let key = (
        gpus,
        per_node,
        key_modes,
        models.to_vec(),
        quota_teams.clone(),
    );
    let shape = Shape {
        quota_teams,
        gpus,
        per_node,
        shares,
        modes,
        models: models.to_vec(),
        workloads: Vec::new(),
        cpu_per_pod: if c.authority_of(w) == Some(crate::model::Authority::Slurm) {
            1000
        } else {
            0
        },
    };
    Some((key, shape))
}

/// Whether a group can hold gangs of `gpus` in `mode`.
pub(crate) fn group_fits(g: &Group, mode: &Mode, gpus: u32, per_node: u32) -> bool {
    if g.gpus < per_node.min(gpus) {
        return false;
    }
    match (mode.tier, mode.node_local) {
        (Tier::Node, _) => g.gpus >= gpus,
        (Tier::Nvlink, true) => !g.domain.contains_key(&Tier::Nvlink) && g.nvlink >= gpus,
        (Tier::Nvlink, false) => g.domain.contains_key(&Tier::Nvlink),
        _ => true,
    }
}

fn fixed_layouts(c: &Cluster) -> Layouts {
    let mut out = BTreeMap::new();
    for l in c.mig.layouts.iter().filter(|l| !l.current) {
        for &n in &l.nodes {
            for g in &c.nodes[n].gpus {
                if !(l.gpus.is_empty() || l.gpus.contains(&g.index)) {
                    continue;
                }
                let Some(model) = c.model_of(g) else { continue };
                let profiles: Option<Vec<&'static MigProfile>> =
                    l.profiles.iter().map(|p| model.mig_profile(p)).collect();
                if let Some(ps) = profiles {
                    out.entry((n, g.index)).or_insert(ps);
                }
            }
        }
    }
    out
}

/// The groups of identical nodes (see [`GroupKey`]), in the name order of their first
/// node.
fn groups(c: &Cluster, fixed: &Layouts, current: &Layouts) -> Vec<Group> {
    let mut groups: Vec<Group> = group_nodes(c, fixed, current)
        .into_iter()
        .map(
            |((_, mnnvl, _, usable, pin, fixed_node, _, shape), nodes)| {
                let n0 = nodes[0];
                let node = &c.nodes[n0];
                let mut domain = BTreeMap::new();
                for t in [Tier::Leaf, Tier::Spine, Tier::Core] {
                    let v = c.topology.ancestor_at(c, n0, t);
                    domain.insert(t, format!("{}#{}", t.as_str(), v.index()));
                }
                if !mnnvl.is_empty() {
                    domain.insert(Tier::Nvlink, format!("nvlink#{mnnvl}"));
                }
                let nvlink = if mnnvl.is_empty() {
                    largest_nvlink_domain(node)
                } else {
                    usable
                };
                Group {
                    model: node
                        .usable_gpus()
                        .find_map(|g| g.model.clone())
                        .unwrap_or_default(),
                    current: current_kinds(current, n0),
                    nodes,
                    gpus: usable,
                    nvlink,
                    pinned: pin,
                    fixed_mig: fixed_node.is_some(),
                    domain,
                    ord: 0,
                    shape,
                }
            },
        )
        .collect();
    groups.sort_by(|a, b| c.nodes[a.nodes[0]].name.cmp(&c.nodes[b.nodes[0]].name));
    for (i, g) in groups.iter_mut().enumerate() {
        g.ord = i;
    }
    groups
}

/// The nodes with usable GPUs by their [`GroupKey`].
fn group_nodes(
    c: &Cluster,
    fixed: &Layouts,
    current: &Layouts,
) -> BTreeMap<GroupKey, Vec<NodeIdx>> {
    let pinned: BTreeMap<NodeIdx, PoolMode> = c
        .pools
        .iter()
        .flat_map(|p| {
            p.nodes
                .iter()
                .filter_map(move |&n| PoolMode::from_decl(&p.mode).map(|m| (n, m)))
        })
        .collect();
    // Group key: leaf path, multi-node NVLink domain, class, usable count, pin.
    let mut by_key: BTreeMap<GroupKey, Vec<NodeIdx>> = BTreeMap::new();
    for (ni, n) in c.nodes.iter().enumerate() {
        let usable = n.usable_gpus().count() as u32;
        let Some(model) = n.usable_gpus().find_map(|g| g.model.clone()) else {
            continue;
        };
        if usable == 0 {
            continue;
        }
        let has_fixed = fixed.keys().any(|(fnode, _)| *fnode == ni);
        let cur: Vec<(u32, Vec<&'static str>)> = current
            .range((ni, 0)..=(ni, u32::MAX))
            .map(|((_, g), ps)| (*g, ps.iter().map(|q| q.name).collect()))
            .collect();
        let path: Vec<String> = [Tier::Leaf, Tier::Spine, Tier::Core]
            .iter()
            .map(|t| {
                let v = c.topology.ancestor_at(c, ni, *t);
                format!("{:?}", v.index())
            })
            .collect();
        let mnnvl = n
            .mnnvl
            .first()
            .map(|d| c.nvlink_domains[*d].name.clone())
            .unwrap_or_default();
        let pin = if has_fixed {
            Some(PoolMode::Mig)
        } else {
            pinned.get(&ni).copied()
        };
        by_key
            .entry((
                path,
                mnnvl,
                format!("{}/{model}", n.class),
                usable,
                pin,
                has_fixed.then_some(ni),
                cur,
                NodeShape::of(c, ni),
            ))
            .or_default()
            .push(ni);
    }
    by_key
}

/// The distinct current layouts of node `n`'s GPUs, with how many GPUs have each.
fn current_kinds(current: &Layouts, n: NodeIdx) -> Vec<(Vec<&'static MigProfile>, u32)> {
    let mut kinds: Vec<(Vec<&'static MigProfile>, u32)> = Vec::new();
    for (_, ps) in current.range((n, 0)..=(n, u32::MAX)) {
        match kinds.iter_mut().find(|(l, _)| l == ps) {
            Some((_, k)) => *k += 1,
            None => kinds.push((ps.clone(), 1)),
        }
    }
    kinds
}

/// The usable GPUs of a node's largest node-local NVLink domain (1 without one).
fn largest_nvlink_domain(node: &crate::model::Node) -> u32 {
    let mut sizes: BTreeMap<usize, u32> = BTreeMap::new();
    for g in node.usable_gpus() {
        if let Some(d) = g.nvlink_domain {
            *sizes.entry(d).or_default() += 1;
        }
    }
    sizes.values().copied().max().unwrap_or(1)
}

/// Valid layouts of a model using only allowed profiles that nothing else fits into
/// (maximal): enough for covering constraints, since any layout is contained in one.
pub(crate) fn maximal_layouts(
    c: &Cluster,
    model: &crate::model::GpuModel,
) -> Vec<Vec<&'static MigProfile>> {
    let Some(spec) = model.mig else {
        return Vec::new();
    };
    let allowed = |q: &MigProfile| {
        !q.media_extensions
            && model.driver_has(q.name)
            && (c.mig.allow.is_empty()
                || c.mig
                    .allow
                    .iter()
                    .any(|a| model.mig_profile(a).is_some_and(|x| x.name == q.name)))
    };
    let all: Vec<Vec<&'static MigProfile>> = crate::catalog::placement::enumerate_layouts(spec)
        .into_iter()
        .filter(|l| l.iter().all(|q| allowed(q)))
        .collect();
    let count = |l: &[&MigProfile]| -> BTreeMap<&str, usize> {
        let mut m = BTreeMap::new();
        for q in l {
            *m.entry(q.name).or_default() += 1;
        }
        m
    };
    let counts: Vec<BTreeMap<&str, usize>> = all.iter().map(|l| count(l)).collect();
    all.iter()
        .enumerate()
        .filter(|(i, _)| {
            !counts.iter().enumerate().any(|(j, cj)| {
                j != *i
                    && cj.len() >= counts[*i].len()
                    && counts[*i]
                        .iter()
                        .all(|(k, v)| cj.get(k).is_some_and(|x| x >= v))
                    && cj != &counts[*i]
            })
        })
        .map(|(_, l)| l.clone())
        .collect()
}
