//! The exhaustive search, in two memoised phases.
//!
//! 1. Gang classes, one replica at a time: leave the rest of the class out, or place
//!    the next gang on any shape the checker accepts inside any domain of the required
//!    tier. State: class, gangs placed of it, free GPUs and "has gangs" per node, ledger.
//! 2. When every gang class is decided, the single-node classes node by node: each node
//!    takes one of its configurations (`node::configs`). State: the nodes left (kind,
//!    free GPUs, has gangs), replicas left per class, ledger.
//!
//! Values are per-level vectors compared lexicographically; lexicographic order is
//! compatible with addition, so the best completion of a state does not depend on how
//! the state was reached, which makes memoisation exact. States are keyed up to
//! permutations of interchangeable nodes (phase 1: nodes of one group; phase 2: the
//! node list is sorted), and moves that lead to the same key are tried once.

use super::node::{self, Config};
use super::problem::{Problem, Value};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// One node as phase 2 sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Desc {
    kind: usize,
    gpus: u32,
    /// Gangs use the node: whole-GPU mode.
    forced: bool,
}

#[derive(Clone, Debug)]
struct State {
    class: usize,
    placed: u32,
    free: Vec<u32>,
    forced: Vec<bool>,
    used: Vec<u64>,
}

type Key1 = (usize, u32, Vec<(usize, u32, bool)>, Vec<u64>);
type Key2 = (Vec<Desc>, Vec<u32>, Vec<u64>);

/// A gang of one class: (node position, GPUs) per node it uses.
pub(super) type Shape = Vec<(usize, u32)>;

struct Move {
    state: State,
    gain: Value,
    shape: Shape,
}

/// What the best placement found is made of.
pub(super) struct Choice {
    /// (gang class, shape) per gang placed.
    pub gangs: Vec<(usize, Shape)>,
    /// (node position, configuration) per node holding single-node replicas.
    pub nodes: Vec<(usize, Config)>,
}

pub(super) struct Search<'p> {
    p: &'p Problem<'p>,
    memo1: HashMap<Key1, Value>,
    memo2: HashMap<Key2, Value>,
    configs: HashMap<Desc, Rc<Vec<Config>>>,
}

fn add(a: &Value, b: &Value) -> Value {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

impl<'p> Search<'p> {
    pub fn new(p: &'p Problem<'p>) -> Search<'p> {
        Search {
            p,
            memo1: HashMap::new(),
            memo2: HashMap::new(),
            configs: HashMap::new(),
        }
    }

    /// Memoised states (a measure of the work done).
    pub fn states(&self) -> usize {
        self.memo1.len() + self.memo2.len()
    }

    fn start(&self) -> State {
        State {
            class: 0,
            placed: 0,
            free: self.p.nodes.iter().map(|n| n.usable.len() as u32).collect(),
            forced: vec![false; self.p.nodes.len()],
            used: vec![0; self.p.ceiling.len()],
        }
    }

    /// The optimum and one placement reaching it.
    pub fn run(&mut self) -> (Value, Choice) {
        let s = self.start();
        let best = self.best(&s);
        let choice = self.walk(s, &best);
        (best, choice)
    }

    // -------------------------------------------------------------- phase 1: gangs

    fn key1(&self, s: &State) -> Key1 {
        let mut nodes: Vec<(usize, u32, bool)> = (0..s.free.len())
            .map(|i| (self.p.nodes[i].group, s.free[i], s.forced[i]))
            .collect();
        nodes.sort_unstable();
        (s.class, s.placed, nodes, s.used.clone())
    }

    fn skip(&self, s: &State) -> State {
        State {
            class: s.class + 1,
            placed: 0,
            ..s.clone()
        }
    }

    fn best(&mut self, s: &State) -> Value {
        if s.class == self.p.gangs.len() {
            let (descs, _) = self.descs(s);
            return self.best2(&descs, self.all_replicas(), &s.used);
        }
        let key = self.key1(s);
        if let Some(v) = self.memo1.get(&key) {
            return v.clone();
        }
        let mut best = self.best(&self.skip(s));
        for m in self.moves(s) {
            let v = add(&self.best(&m.state), &m.gain);
            if v > best {
                best = v;
            }
        }
        self.memo1.insert(key, best.clone());
        best
    }

    /// Every next gang of the current class, one per distinct resulting state.
    fn moves(&self, s: &State) -> Vec<Move> {
        let g = &self.p.gangs[s.class];
        if s.placed >= g.replicas {
            return Vec::new();
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for dom in &g.domains {
            for shape in self.shapes(s, dom) {
                let Some(state) = self.place(s, &shape) else {
                    continue;
                };
                if !seen.insert(self.key1(&state)) {
                    continue;
                }
                let mut gain = vec![0; self.p.levels.len()];
                gain[g.level] = g.size as u64 * self.p.unit;
                out.push(Move { state, gain, shape });
            }
        }
        out
    }

    /// The state after placing one gang of the current class on `shape`, unless a
    /// ledger ceiling forbids it.
    fn place(&self, s: &State, shape: &Shape) -> Option<State> {
        let p = self.p;
        let g = &p.gangs[s.class];
        let mut t = State {
            placed: s.placed + 1,
            ..s.clone()
        };
        for &(pos, x) in shape {
            t.free[pos] -= x;
            t.forced[pos] = true;
            for &k in &g.charge[p.nodes[pos].kind] {
                t.used[k] += x as u64 * p.unit;
            }
        }
        t.used
            .iter()
            .zip(&p.ceiling)
            .all(|(u, c)| u <= c)
            .then_some(t)
    }

    /// Every shape of one gang inside a domain that the checker accepts: GPUs on
    /// distinct nodes, at most `per` on each, exactly `size` in all, and at most one
    /// node holding fewer than `per`.
    fn shapes(&self, s: &State, dom: &[usize]) -> Vec<Shape> {
        let g = &self.p.gangs[s.class];
        let mut out = Vec::new();
        let mut cur = Vec::new();
        shapes_from(g, dom, &s.free, g.size, false, &mut cur, &mut out);
        out
    }

    // -------------------------------------------------------------- phase 2: nodes

    fn all_replicas(&self) -> Vec<u32> {
        self.p.singles.iter().map(|s| s.replicas).collect()
    }

    /// The nodes with GPUs left, sorted, with their positions.
    fn descs(&self, s: &State) -> (Vec<Desc>, Vec<usize>) {
        let mut v: Vec<(Desc, usize)> = (0..s.free.len())
            .filter(|&i| s.free[i] > 0)
            .map(|i| {
                let d = Desc {
                    kind: self.p.nodes[i].kind,
                    gpus: s.free[i],
                    forced: s.forced[i],
                };
                (d, i)
            })
            .collect();
        v.sort();
        v.into_iter().unzip()
    }

    fn configs(&mut self, d: Desc) -> Rc<Vec<Config>> {
        let p = self.p;
        self.configs
            .entry(d)
            .or_insert_with(|| Rc::new(node::configs(p, d.kind, d.gpus, d.forced)))
            .clone()
    }

    /// Replicas left and ledger after a configuration, if it fits them.
    fn apply(&self, cfg: &Config, left: &[u32], used: &[u64]) -> Option<(Vec<u32>, Vec<u64>)> {
        let mut l = left.to_vec();
        for (x, t) in l.iter_mut().zip(&cfg.take) {
            *x = x.checked_sub(*t)?;
        }
        let mut u = used.to_vec();
        for ((x, c), ceil) in u.iter_mut().zip(&cfg.charge).zip(&self.p.ceiling) {
            *x += c;
            if *x > *ceil {
                return None;
            }
        }
        Some((l, u))
    }

    fn best2(&mut self, descs: &[Desc], left: Vec<u32>, used: &[u64]) -> Value {
        let Some(&d) = descs.first() else {
            return vec![0; self.p.levels.len()];
        };
        let key = (descs.to_vec(), left, used.to_vec());
        if let Some(v) = self.memo2.get(&key) {
            return v.clone();
        }
        let mut best = vec![0; self.p.levels.len()];
        let configs = self.configs(d);
        for cfg in configs.iter() {
            let Some((l, u)) = self.apply(cfg, &key.1, used) else {
                continue;
            };
            let v = add(&self.best2(&descs[1..], l, &u), &cfg.gain);
            if v > best {
                best = v;
            }
        }
        self.memo2.insert(key, best.clone());
        best
    }

    // -------------------------------------------------------------- reconstruction

    /// Follows the best moves from `s` (all values are memoised by now).
    fn walk(&mut self, mut s: State, target: &Value) -> Choice {
        let mut want = target.clone();
        let mut gangs = Vec::new();
        while s.class < self.p.gangs.len() {
            let skip = self.skip(&s);
            if self.best(&skip) == want {
                s = skip;
                continue;
            }
            let m = self
                .moves(&s)
                .into_iter()
                .find(|m| add(&self.best(&m.state), &m.gain) == want)
                .expect("oracle: a move reaches the memoised value");
            want = want.iter().zip(&m.gain).map(|(x, y)| x - y).collect();
            gangs.push((s.class, m.shape));
            s = m.state;
        }
        let nodes = self.walk2(&s, &want);
        Choice { gangs, nodes }
    }

    fn walk2(&mut self, s: &State, target: &Value) -> Vec<(usize, Config)> {
        let (descs, positions) = self.descs(s);
        let mut want = target.clone();
        let mut left = self.all_replicas();
        let mut used = s.used.clone();
        let mut out = Vec::new();
        for (i, &d) in descs.iter().enumerate() {
            let configs = self.configs(d);
            let (cfg, l, u) = configs
                .iter()
                .find_map(|cfg| {
                    let (l, u) = self.apply(cfg, &left, &used)?;
                    let v = add(&self.best2(&descs[i + 1..], l.clone(), &u), &cfg.gain);
                    (v == want).then_some((cfg, l, u))
                })
                .expect("oracle: a configuration reaches the memoised value");
            want = want.iter().zip(&cfg.gain).map(|(x, y)| x - y).collect();
            if cfg.mode.is_some() {
                out.push((positions[i], cfg.clone()));
            }
            (left, used) = (l, u);
        }
        out
    }
}

fn shapes_from(
    g: &super::problem::GangClass,
    dom: &[usize],
    free: &[u32],
    need: u32,
    short: bool,
    cur: &mut Shape,
    out: &mut Vec<Shape>,
) {
    if need == 0 {
        out.push(cur.clone());
        return;
    }
    let Some((&pos, rest)) = dom.split_first() else {
        return;
    };
    shapes_from(g, rest, free, need, short, cur, out);
    if !g.runs[pos] {
        return;
    }
    let per = g.per[pos];
    for x in 1..=per.min(free[pos]).min(need) {
        let is_short = x < per;
        if is_short && short {
            continue;
        }
        cur.push((pos, x));
        shapes_from(g, rest, free, need - x, short || is_short, cur, out);
        cur.pop();
    }
}
