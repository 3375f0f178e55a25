//! The oracle's view of a cluster, re-derived from the model the way the checker
//! (`crates/solve/src/placement/check`) reads it: nodes with their usable GPUs, node kinds (what the
//! per-node search depends on), the gang classes, the single-node classes (MIG,
//! time-slice/MPS, packed) and the team ledger, all in integer units of GPU-equivalents.

use gpuplan::catalog::{MigProfile, MigSpec};
use gpuplan::model::PoolMode;
use gpuplan::model::sizing;
use gpuplan::model::{Cluster, Isolation, NodeIdx, Tier, Workload};
use gpuplan::spec::WorkloadKind;
use std::collections::BTreeMap;

/// Admitted GPU-equivalents per priority level (highest first), in [`Problem::unit`]s.
pub(super) type Value = Vec<u64>;

/// What the per-node search depends on: the GPU model, CPU and host memory, the pinned
/// pool mode and the declared pool (quotas may count it).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Kind {
    pub model: String,
    pub mig: Option<&'static MigSpec>,
    pub cpu: Option<u64>,
    pub mem: Option<u64>,
    pub pin: Option<PoolMode>,
    pub pool: Option<String>,
}

impl Kind {
    pub fn allows(&self, mode: PoolMode) -> bool {
        self.pin.is_none_or(|m| m == mode)
    }
}

/// A node with at least one usable GPU.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub ni: NodeIdx,
    /// Usable GPU indexes (not down, node not cordoned).
    pub usable: Vec<u32>,
    /// Every GPU of the node, down ones included (the default `gpus-per-node`).
    pub total: u32,
    pub kind: usize,
    /// Nodes of one group are interchangeable for gangs (same kind, GPU counts and
    /// domains at every tier above the node).
    pub group: usize,
}

/// A class placed as gangs of whole GPUs (training, whole-GPU inference).
#[derive(Clone, Debug)]
pub(super) struct GangClass {
    pub wi: usize,
    pub size: u32,
    /// GPUs one gang takes per node (per node position).
    pub per: Vec<u32>,
    /// Whether a gang may use the node (model accepted, whole-GPU mode allowed).
    pub runs: Vec<bool>,
    /// Node positions of each domain of the required tier.
    pub domains: Vec<Vec<usize>>,
    pub replicas: u32,
    pub level: usize,
    /// Ledger counters one GPU charges, per node kind.
    pub charge: Vec<Vec<usize>>,
}

/// How a single-node class uses a node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Use {
    /// One MIG instance of the right-sized profile per replica.
    Mig,
    /// `per_gpu` replicas of one class per GPU, in this mode.
    Shared(PoolMode, u32),
    /// `milli` of a GPU per replica (whole GPUs from 1000 on), CPU and host memory.
    Packed { milli: u64, cpu: u64, mem: u64 },
}

/// A class whose replicas each stay on one node: MIG, time-slice/MPS, packed.
#[derive(Clone, Debug)]
pub(super) struct SingleClass {
    pub wi: usize,
    pub how: Use,
    pub replicas: u32,
    pub level: usize,
    /// Right-sized MIG profile per node kind (MIG classes).
    pub profile: Vec<Option<&'static MigProfile>>,
    /// Units one replica counts per node kind; `None`: it cannot run there.
    pub eq: Vec<Option<u64>>,
    /// Ledger counters one replica charges, per node kind.
    pub charge: Vec<Vec<usize>>,
}

/// A team's ledger counters: its own (if its ceiling can bind) and its quotas' as
/// (quota index, counter).
#[derive(Default)]
struct TeamCounters {
    own: Option<usize>,
    quotas: Vec<(usize, usize)>,
}

/// Ledger counters per team name.
type Counters = BTreeMap<String, TeamCounters>;

pub(super) struct Problem<'c> {
    pub c: &'c Cluster,
    /// Units per GPU: a multiple of 1000 (fractions), of every `per-gpu` and of every
    /// model's MIG memory slices, so that every charge is an integer.
    pub unit: u64,
    pub levels: Vec<i64>,
    pub kinds: Vec<Kind>,
    pub nodes: Vec<Node>,
    pub gangs: Vec<GangClass>,
    pub singles: Vec<SingleClass>,
    /// Ceiling of each ledger counter (teams and quotas that can bind), in units.
    pub ceiling: Vec<u64>,
}

/// Priority values used by the workloads, highest first (unknown priorities last).
pub fn priority_levels(c: &Cluster) -> Vec<i64> {
    let mut v: Vec<i64> = c.workloads.iter().map(|w| value(c, w)).collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v.dedup();
    v
}

fn value(c: &Cluster, w: &Workload) -> i64 {
    c.priority(&w.priority).map(|p| p.value).unwrap_or(i64::MIN)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

fn unit_of(c: &Cluster) -> u64 {
    let mut u = 1000;
    for w in &c.workloads {
        u = lcm(u, w.per_gpu.unwrap_or(1).max(1) as u64);
    }
    for m in c.models.values().filter_map(|m| m.mig) {
        u = lcm(u, m.memory_slices.max(1) as u64);
    }
    u
}

impl<'c> Problem<'c> {
    pub fn new(c: &'c Cluster) -> Problem<'c> {
        assert!(
            c.mig.layouts.iter().all(|l| l.current),
            "oracle: fixed `mig layout`s are not supported"
        );
        let mut p = Problem {
            c,
            unit: unit_of(c),
            levels: priority_levels(c),
            kinds: Vec::new(),
            nodes: Vec::new(),
            gangs: Vec::new(),
            singles: Vec::new(),
            ceiling: Vec::new(),
        };
        p.add_nodes();
        let counters = p.add_ledger();
        for (wi, w) in c.workloads.iter().enumerate() {
            p.add_class(wi, w, &counters);
        }
        p.group_nodes();
        p
    }

    fn add_nodes(&mut self) {
        let c = self.c;
        for (ni, n) in c.nodes.iter().enumerate() {
            let usable: Vec<u32> = n.usable_gpus().map(|g| g.index).collect();
            let Some(first) = n.usable_gpus().next() else {
                continue;
            };
            let model = first.model.clone().unwrap_or_default();
            assert!(
                n.usable_gpus().all(|g| g.model.as_deref() == Some(&model)),
                "oracle: node `{}` mixes GPU models",
                n.name
            );
            let pool = c.pool_of(ni);
            let kind = Kind {
                mig: c.models.get(&model).and_then(|m| m.mig),
                model,
                cpu: c.node_cpu_milli(ni),
                mem: c.node_memory(ni),
                pin: pool.and_then(|p| PoolMode::from_decl(&p.mode)),
                pool: pool.map(|p| p.name.clone()),
            };
            let kind = match self.kinds.iter().position(|k| *k == kind) {
                Some(k) => k,
                None => {
                    self.kinds.push(kind);
                    self.kinds.len() - 1
                }
            };
            self.nodes.push(Node {
                ni,
                usable,
                total: n.gpus.len() as u32,
                kind,
                group: 0,
            });
        }
    }

    /// Counters for the teams and quotas whose ceiling is below the usable GPUs (the
    /// others can never bind: a GPU never counts more than one GPU-equivalent).
    fn add_ledger(&mut self) -> Counters {
        let total: u64 = self.nodes.iter().map(|n| n.usable.len() as u64).sum();
        let mut out = BTreeMap::new();
        for t in self.c.teams.values() {
            let own = self.counter(t.ceiling() as u64, total);
            let quotas = t
                .quotas
                .iter()
                .enumerate()
                .filter_map(|(qi, q)| self.counter(q.ceiling() as u64, total).map(|k| (qi, k)))
                .collect();
            out.insert(t.name.clone(), TeamCounters { own, quotas });
        }
        out
    }

    fn counter(&mut self, ceiling: u64, total: u64) -> Option<usize> {
        (ceiling < total).then(|| {
            self.ceiling.push(ceiling * self.unit);
            self.ceiling.len() - 1
        })
    }

    /// The counters a charge of team `team` on node kind `kind` adds to.
    fn charges(&self, team: &str, kind: &Kind, counters: &Counters) -> Vec<usize> {
        let mut out = Vec::new();
        for t in self.c.team_chain(team) {
            let Some(tc) = counters.get(&t.name) else {
                continue;
            };
            out.extend(tc.own);
            for &(qi, k) in &tc.quotas {
                if t.quotas[qi].covers(&kind.model, kind.pool.as_deref()) {
                    out.push(k);
                }
            }
        }
        out
    }

    fn level(&self, w: &Workload) -> usize {
        let v = value(self.c, w);
        self.levels.iter().position(|x| *x == v).unwrap()
    }

    fn add_class(&mut self, wi: usize, w: &Workload, counters: &Counters) {
        let charge: Vec<Vec<usize>> = self
            .kinds
            .iter()
            .map(|k| self.charges(&w.team, k, counters))
            .collect();
        let how = if w.packed() {
            let milli = w.packed_gpu_milli();
            if milli == 0 {
                return; // CPU-only: never admits a GPU-equivalent
            }
            Use::Packed {
                milli,
                cpu: w.cpu_milli,
                mem: w.host_memory.0,
            }
        } else if w.kind == WorkloadKind::Training {
            return self.add_gang(wi, w, charge);
        } else {
            match w.isolation.or(w.share).unwrap_or(Isolation::WholeGpu) {
                Isolation::WholeGpu => return self.add_gang(wi, w, charge),
                Isolation::Mig => Use::Mig,
                Isolation::TimeSlice => Use::Shared(PoolMode::TimeSlice, per_gpu(w)),
                Isolation::Mps => Use::Shared(PoolMode::Mps, per_gpu(w)),
            }
        };
        let profile: Vec<Option<&'static MigProfile>> =
            self.kinds.iter().map(|k| self.profile(w, k)).collect();
        let eq = self
            .kinds
            .iter()
            .zip(&profile)
            .map(|(k, prof)| self.single_eq(w, how, k, *prof))
            .collect();
        self.singles.push(SingleClass {
            wi,
            how,
            replicas: w.replicas,
            level: self.level(w),
            profile,
            eq,
            charge,
        });
    }

    /// The right-sized MIG profile (`solve::sizing`, the model's vocabulary) of a MIG
    /// class on a kind, when the class accepts its model.
    fn profile(&self, w: &Workload, k: &Kind) -> Option<&'static MigProfile> {
        let model = self.c.models.get(&k.model)?;
        if !w.accepts(&k.model) || k.mig.is_none() {
            return None;
        }
        sizing::mig_profile(self.c, w, model)
    }

    /// Units one replica of a single-node class counts on kind `k`.
    fn single_eq(
        &self,
        w: &Workload,
        how: Use,
        k: &Kind,
        prof: Option<&'static MigProfile>,
    ) -> Option<u64> {
        if !w.accepts(&k.model) {
            return None;
        }
        let u = self.unit;
        match how {
            Use::Mig => {
                let spec = k.mig?;
                Some(prof?.memory_slices as u64 * u / spec.memory_slices as u64)
            }
            Use::Shared(_, per) => Some(u / per as u64),
            Use::Packed { milli, .. } => Some(milli * u / 1000),
        }
    }

    fn add_gang(&mut self, wi: usize, w: &Workload, charge: Vec<Vec<usize>>) {
        let training = w.kind == WorkloadKind::Training;
        let size = if training {
            w.gang_gpus.max(1)
        } else {
            w.gpus_per_replica.max(1)
        };
        // The checker's `gang_shape`: one per-node count for the class
        // (`Cluster::gang_per_node`: `gpus-per-node`, by default the gang capped by the
        // largest usable node it accepts); a whole-GPU replica is one node's worth.
        let class_per = if training {
            self.c.gang_per_node(w)
        } else {
            size
        };
        let per = self.nodes.iter().map(|_| class_per).collect();
        let runs = self
            .nodes
            .iter()
            .map(|n| {
                let k = &self.kinds[n.kind];
                w.accepts(&k.model) && k.allows(PoolMode::WholeGpu)
            })
            .collect();
        let tier = w.required_tier.unwrap_or(Tier::Cluster);
        let domains = self.domains(tier);
        self.gangs.push(GangClass {
            wi,
            size,
            per,
            runs,
            domains: domains.into_values().collect(),
            replicas: w.replicas,
            level: self.level(w),
            charge,
        });
    }

    /// Node positions per domain of `tier` (by the domain of each node's GPUs).
    fn domains(&self, tier: Tier) -> BTreeMap<usize, Vec<usize>> {
        assert!(
            tier != Tier::Nvlink,
            "oracle: required=\"nvlink\" is not supported"
        );
        let doms = self.c.topology.domains(self.c, tier);
        let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (pos, n) in self.nodes.iter().enumerate() {
            let gpu = (n.ni, n.usable[0]);
            let d = doms.iter().position(|d| d.gpus.contains(&gpu)).unwrap();
            assert!(
                n.usable.iter().all(|g| doms[d].gpus.contains(&(n.ni, *g))),
                "oracle: a node's GPUs span several {} domains",
                tier.as_str()
            );
            out.entry(d).or_default().push(pos);
        }
        out
    }

    /// Groups interchangeable nodes: same kind, GPU counts and domain at every tier
    /// above the node.
    fn group_nodes(&mut self) {
        let tiers = [Tier::Leaf, Tier::Spine, Tier::Core, Tier::Cluster];
        let of: Vec<BTreeMap<usize, Vec<usize>>> = tiers.iter().map(|t| self.domains(*t)).collect();
        let domain_of = |pos: usize, d: &BTreeMap<usize, Vec<usize>>| {
            d.iter().find(|(_, v)| v.contains(&pos)).map(|(k, _)| *k)
        };
        let mut keys = Vec::new();
        for pos in 0..self.nodes.len() {
            let n = &self.nodes[pos];
            let key = (
                n.kind,
                n.usable.len(),
                n.total,
                of.iter().map(|d| domain_of(pos, d)).collect::<Vec<_>>(),
            );
            self.nodes[pos].group = match keys.iter().position(|k| *k == key) {
                Some(g) => g,
                None => {
                    keys.push(key);
                    keys.len() - 1
                }
            };
        }
    }
}

fn per_gpu(w: &Workload) -> u32 {
    w.per_gpu.unwrap_or(1).max(1)
}
