//! A bound for groups with fractional packed classes, where node patterns are hard to
//! price exactly (a knapsack over GPUs, CPU and memory per node).
//!
//! The relaxation keeps each GPU exact and the node's CPU and memory per group: a
//! group's whole-GPU nodes hold item counts (whole-GPU items) and *GPU fills* (the
//! fractional replicas of one GPU, at most 100%), with the group's GPUs, CPU and memory
//! as capacities. Every node placement gives such a solution, so this LP (with every
//! fill) bounds every placement; fills are priced exactly by a one-dimensional knapsack,
//! so column generation converges fast. Everything else is the master as it is (rows,
//! locks, stage costs); the master's node patterns of these groups are switched off.

use super::lp::{ColId, Live, Lp, RowId, Status};
use super::master::{Master, Objective};
use super::pattern::{Item, Pattern};
use super::small;
use crate::par;
use std::collections::BTreeMap;

const INF: f64 = f64::INFINITY;

/// The fills found so far, per group (kept between stages).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Pool {
    pub fills: BTreeMap<usize, Vec<Vec<(Item, u32)>>>,
    /// Node patterns priced for the groups kept as patterns, per group.
    pub patterns: BTreeMap<usize, Vec<Pattern>>,
}

/// Pattern groups holding fractional items (where the relaxation applies).
fn fractional(m: &Master) -> Vec<usize> {
    (0..m.p.groups.len())
        .filter(|g| {
            !m.volume.contains_key(g)
                && !m.patterns[*g].is_empty()
                && m.items[*g].iter().any(|i| m.need(*i).milli > 0)
        })
        .collect()
}

/// The groups the relaxation replaces by fills: fractional groups whose nodes are not
/// priced exactly as patterns ([`small`]).
pub(crate) fn groups(m: &Master) -> Vec<usize> {
    fractional(m)
        .into_iter()
        .filter(|g| !small::applies(&m.p.groups[*g].shape, &m.items[*g]))
        .collect()
}

/// Rows and columns of one relaxed group.
struct Caps {
    gpu: RowId,
    cpu: Option<RowId>,
    mem: Option<RowId>,
    /// The fill columns (one GPU each) and the whole-GPU item columns.
    fills: Vec<(ColId, Vec<(Item, u32)>)>,
    whole: Vec<(ColId, Item)>,
}

/// The replicas one fill puts on a GPU: (item, count), sorted.
pub(crate) type FillItems = Vec<(Item, u32)>;

/// The relaxation's solution, read by [`super::dive`]: per relaxed group, how many GPUs
/// take each fill and how many units of each whole-GPU item it holds; and the relaxed
/// program's values of the master's own columns (pattern and volume groups).
#[derive(Clone, Debug, Default)]
pub(crate) struct Solved {
    pub fills: BTreeMap<usize, Vec<(FillItems, f64)>>,
    pub whole: BTreeMap<usize, Vec<(Item, f64)>>,
    /// Per group kept as patterns: how many of its nodes take each pattern.
    pub nodes: BTreeMap<usize, Vec<(Pattern, f64)>>,
}

/// The relaxation of a stage: its bound, and its solution when it was solved.
pub(crate) struct Relaxed {
    /// A valid lower bound (minimisation) on the stage's optimum (`NEG_INFINITY`: none).
    pub bound: f64,
    pub solved: Option<Solved>,
}

/// The relaxed program solved by column generation over fills: a valid lower bound
/// (minimisation) on the stage's optimum (`NEG_INFINITY` when it cannot be solved in
/// time), and its solution.
///
/// Groups kept as patterns are priced too (small ones exactly by [`small`], the others
/// as the stage prices them), so the bound holds over all patterns; `complete` says
/// which groups already have every pattern as a column.
pub(crate) fn relax(
    m: &Master,
    obj: &Objective,
    pool: &mut Pool,
    complete: &[bool],
    deadline: std::time::Instant,
) -> Relaxed {
    if fractional(m).is_empty() {
        return Relaxed {
            bound: f64::NEG_INFINITY,
            solved: None,
        };
    }
    let gs = groups(m);
    let mut lp: Lp = m.lp.clone();
    // Rows tied to a single pattern column (kept previous patterns) are relaxed.
    for (g, row) in &m.pattern_keep_rows {
        if gs.contains(g) {
            lp.row_hi[*row] = INF;
        }
    }
    let mut caps: BTreeMap<usize, Caps> = BTreeMap::new();
    for &g in &gs {
        let cp = relax_group(&mut lp, m, g, obj, pool);
        caps.insert(g, cp);
    }
    let mut nodes = Nodes::default();
    for g in (0..m.p.groups.len()).filter(|g| !gs.contains(g) && !m.patterns[*g].is_empty()) {
        let cols: Vec<(ColId, Pattern)> = m.patterns[g]
            .iter()
            .map(|pc| (pc.col, pc.pattern.clone()))
            .collect();
        nodes.cols.insert(g, cols);
        if !complete.get(g).copied().unwrap_or(false) {
            nodes.priced.push(g);
            for pat in pool.patterns.get(&g).cloned().unwrap_or_default() {
                nodes.add(&mut lp, m, g, pat, obj);
            }
        }
    }
    generate(lp, m, obj, pool, caps, nodes, deadline)
}

/// The groups the relaxation keeps as node patterns: their columns in the relaxed
/// program, and those whose patterns are priced (not all columns yet).
#[derive(Default)]
struct Nodes {
    cols: BTreeMap<usize, Vec<(ColId, Pattern)>>,
    priced: Vec<usize>,
}

impl Nodes {
    /// Adds pattern `pat` of group `g` to `lp` unless its item counts are a column
    /// already; returns the new column.
    fn add(
        &mut self,
        lp: &mut Lp,
        m: &Master,
        g: usize,
        pat: Pattern,
        obj: &Objective,
    ) -> Option<ColId> {
        let cols = self.cols.entry(g).or_default();
        if cols.iter().any(|(_, p)| p.items == pat.items) {
            return None;
        }
        let size = m.p.groups[g].nodes.len() as f64;
        let col = lp.col(m.pattern_cost(g, &pat, obj), 0.0, size, false);
        for (r, v) in m.pattern_entries(g, &pat) {
            lp.set(r, col, v);
        }
        cols.push((col, pat));
        Some(col)
    }
}

/// Replaces group `g`'s pattern columns in `lp`: its whole-GPU nodes, their GPU, CPU and
/// memory rows, a column per whole-GPU item and one per fill in the pool (the fills of
/// the group's patterns added first).
fn relax_group(lp: &mut Lp, m: &Master, g: usize, obj: &Objective, pool: &mut Pool) -> Caps {
    for pc in &m.patterns[g] {
        lp.hi[pc.col] = 0.0;
    }
    let shape = &m.p.groups[g].shape;
    let size = m.p.groups[g].nodes.len() as f64;
    let w = lp.col(0.0, 0.0, size, false);
    if let Some(r) = m.conv_row(g) {
        lp.set(r, w, 1.0);
    }
    if let Some(r) = m.whole_keep_row(g) {
        lp.set(r, w, -1.0);
    }
    let gpu = lp.row(-INF, 0.0);
    lp.set(gpu, w, -(shape.gpus() as f64));
    let cpu = shape.cpu.map(|c| {
        let r = lp.row(-INF, 0.0);
        lp.set(r, w, -(c as f64));
        r
    });
    let mem = shape.mem.map(|c| {
        let r = lp.row(-INF, 0.0);
        lp.set(r, w, -(c as f64));
        r
    });
    let mut cp = Caps {
        gpu,
        cpu,
        mem,
        fills: Vec::new(),
        whole: Vec::new(),
    };
    for &i in &m.items[g] {
        let n = m.need(i);
        if n.milli == 0 {
            let mut entries = entries(m, g, &cp, &[(i, 1)]);
            // A replica that takes every GPU of a node leaves that node's CPU and memory
            // to nothing else: it spends all of them (a valid tightening of the pool).
            if n.gpus == shape.gpus() {
                entries.retain(|(r, _)| Some(*r) != cp.cpu && Some(*r) != cp.mem);
                entries.extend(cp.cpu.zip(shape.cpu).map(|(r, c)| (r, c as f64)));
                entries.extend(cp.mem.zip(shape.mem).map(|(r, x)| (r, x as f64)));
            }
            let col = lp.col(m.item_cost(g, i, obj), 0.0, INF, false);
            for (r, v) in entries {
                lp.set(r, col, v);
            }
            cp.whole.push((col, i));
        }
    }
    seed_fills(m, g, pool);
    for f in pool.fills.get(&g).cloned().unwrap_or_default() {
        let col = add_fill(lp, m, g, &cp, &f, obj);
        cp.fills.push((col, f));
    }
    cp
}

/// Relative distance between the relaxation and its Lasdon bound at which column
/// generation stops (see [`generate`]): 5e-5 of 6,000 GPU-equivalents is 0.3 of a GPU.
const TAILING_OFF: f64 = 5e-5;

/// Column generation over fills on the relaxed `lp` of the groups in `caps`, until no
/// fill improves or the deadline passes; the LP value plus the Lasdon term.
fn generate(
    mut lp: Lp,
    m: &Master,
    obj: &Objective,
    pool: &mut Pool,
    mut caps: BTreeMap<usize, Caps>,
    mut nodes: Nodes,
    deadline: std::time::Instant,
) -> Relaxed {
    let mut live = Live::new(&lp, false);
    // Columns join a solved program: its basis stays primal feasible, so the primal
    // simplex goes on from it (the dual simplex would start over; measured: half the
    // time per round on the openb lists).
    live.option_int("simplex_strategy", 4);
    loop {
        let sol = live.run(false);
        if sol.status != Status::Optimal {
            return Relaxed {
                bound: f64::NEG_INFINITY,
                solved: None,
            };
        }
        let out_of_time = std::time::Instant::now() > deadline;
        let mut added = 0;
        // Lasdon: a group's fills use at most its GPUs, so no column can improve the
        // objective by more than (GPUs) x (its reduced cost): a valid bound at any round.
        let mut lasdon = 0.0;
        let mut exact = true;
        for (g, p) in price_all(m, &caps, &nodes, &sol.duals, obj, out_of_time) {
            match p {
                Priced::Fill((bound, fills)) => {
                    let cp = caps.get_mut(&g).expect("a fill group");
                    // rc = -value - dual(gpu row); no fill does better than -bound - dual.
                    let gpus =
                        (m.p.groups[g].nodes.len() * m.p.groups[g].shape.gpus() as usize) as f64;
                    lasdon += gpus * (-bound - sol.duals[cp.gpu]).min(0.0);
                    for (value, fill) in fills {
                        let rc = -value - sol.duals[cp.gpu];
                        if rc >= -1e-7 || out_of_time {
                            break;
                        }
                        let col = add_fill(&mut lp, m, g, cp, &fill, obj);
                        live.add_col(lp.cost[col], lp.lo[col], lp.hi[col], &lp.entries[col]);
                        pool.fills.entry(g).or_default().push(fill.clone());
                        cp.fills.push((col, fill));
                        added += 1;
                    }
                }
                Priced::Node(priced) => {
                    let c0 = m.pattern_constant(g, &sol.duals);
                    if !priced.bound.is_finite() {
                        exact = false;
                    }
                    let size = m.p.groups[g].nodes.len() as f64;
                    lasdon += size * (c0 - priced.bound).min(0.0);
                    let Some(pat) = priced.pattern.filter(|_| c0 - priced.value < -1e-7) else {
                        continue;
                    };
                    if out_of_time {
                        continue;
                    }
                    if let Some(col) = nodes.add(&mut lp, m, g, pat.clone(), obj) {
                        live.add_col(lp.cost[col], lp.lo[col], lp.hi[col], &lp.entries[col]);
                        pool.patterns.entry(g).or_default().push(pat);
                        added += 1;
                    }
                }
            }
        }
        // The bound-improvement rule: once no column can improve the relaxation by more
        // than TAILING_OFF of it (the Lasdon bound is that close), the next rounds only
        // add columns of no consequence (measured on the openb gpuspec33 list, seed 42:
        // 115 rounds, the last 35 of them adding one column each and moving the
        // objective by less than 0.001 GPU); the Lasdon bound is returned, valid as is.
        let settled = exact && -lasdon <= TAILING_OFF * sol.objective.abs().max(1.0);
        if added == 0 || settled {
            return Relaxed {
                bound: if exact {
                    sol.objective + lasdon
                } else {
                    f64::NEG_INFINITY
                },
                solved: Some(solved(&caps, &nodes, &sol.x)),
            };
        }
    }
}

/// Every group priced at once, on the machine's cores (results in group order: the fill
/// groups, then the node groups).
fn price_all(
    m: &Master,
    caps: &BTreeMap<usize, Caps>,
    nodes: &Nodes,
    duals: &[f64],
    obj: &Objective,
    out_of_time: bool,
) -> Vec<(usize, Priced)> {
    let jobs: Vec<(usize, bool)> = caps
        .keys()
        .map(|g| (*g, true))
        .chain(nodes.priced.iter().map(|g| (*g, false)))
        .collect();
    let priced = par::map(&jobs, |&(g, fill)| {
        if fill {
            Priced::Fill(best_fill(m, g, &caps[&g], duals, obj))
        } else {
            Priced::Node(price_node(m, g, duals, obj, out_of_time))
        }
    });
    jobs.iter().map(|(g, _)| *g).zip(priced).collect()
}

/// What pricing one group gives: a fill (value, bound, items) or a node pattern.
enum Priced {
    Fill((f64, Vec<(f64, FillItems)>)),
    Node(super::pricing::Priced),
}

/// The best pattern of group `g` kept as patterns: exactly for small nodes
/// ([`small`]), else as the stage prices it.
fn price_node(
    m: &Master,
    g: usize,
    duals: &[f64],
    obj: &Objective,
    bound_only: bool,
) -> super::pricing::Priced {
    let shape = &m.p.groups[g].shape;
    if small::applies(shape, &m.items[g]) {
        let vals = m.values(g, duals, obj);
        let need = |i| m.need(i);
        return small::price(shape, &m.items[g], &vals, &need);
    }
    super::stage::price(m, g, duals, obj, bound_only)
}

/// The relaxed solution `x` read per group (values below 1e-9 left out).
fn solved(caps: &BTreeMap<usize, Caps>, nodes: &Nodes, x: &[f64]) -> Solved {
    let at = |c: ColId| x.get(c).copied().unwrap_or(0.0);
    let mut out = Solved::default();
    for (&g, cols) in &nodes.cols {
        let used: Vec<(Pattern, f64)> = cols
            .iter()
            .filter(|(c, _)| at(*c) > 1e-9)
            .map(|(c, p)| (p.clone(), at(*c)))
            .collect();
        out.nodes.insert(g, used);
    }
    for (&g, cp) in caps {
        let fills: Vec<(Vec<(Item, u32)>, f64)> = cp
            .fills
            .iter()
            .filter(|(c, _)| at(*c) > 1e-9)
            .map(|(c, f)| (f.clone(), at(*c)))
            .collect();
        let whole: Vec<(Item, f64)> = cp
            .whole
            .iter()
            .filter(|(c, _)| at(*c) > 1e-9)
            .map(|(c, i)| (*i, at(*c)))
            .collect();
        out.fills.insert(g, fills);
        out.whole.insert(g, whole);
    }
    out
}

/// Adds to the pool the fills of every GPU of the group's node patterns: then every
/// solution of the master is one of this relaxation too, so it is feasible whenever the
/// master is (replica counts locked by earlier stages included).
fn seed_fills(m: &Master, g: usize, pool: &mut Pool) {
    let fills = pool.fills.entry(g).or_default();
    let mut seen: std::collections::BTreeSet<Vec<(Item, u32)>> = fills.iter().cloned().collect();
    for pc in &m.patterns[g] {
        let mut per_gpu: BTreeMap<u16, BTreeMap<Item, u32>> = BTreeMap::new();
        let mut places = pc.pattern.places.iter();
        for (item, k) in &pc.pattern.items {
            for _ in 0..*k {
                let Some(at) = places.next() else { break };
                if m.need(*item).milli > 0 {
                    if let Some(gpu) = at.first() {
                        *per_gpu.entry(*gpu).or_default().entry(*item).or_default() += 1;
                    }
                }
            }
        }
        for fill in per_gpu.into_values() {
            let fill: Vec<(Item, u32)> = fill.into_iter().collect();
            if seen.insert(fill.clone()) {
                fills.push(fill);
            }
        }
    }
}

/// Coefficients of a column holding `items` (counts) on group `g`: the items' own rows
/// and the group's CPU and memory rows.
fn entries(m: &Master, g: usize, cp: &Caps, items: &[(Item, u32)]) -> Vec<(RowId, f64)> {
    let mut out: BTreeMap<RowId, f64> = BTreeMap::new();
    for (i, k) in items {
        let n = m.need(*i);
        let k = *k as f64;
        for (r, v) in m.item_rows(g, *i) {
            *out.entry(r).or_default() += v * k;
        }
        if n.gpus > 0 {
            *out.entry(cp.gpu).or_default() += n.gpus as f64 * k;
        }
        if let Some(r) = cp.cpu {
            *out.entry(r).or_default() += n.cpu as f64 * k;
        }
        if let Some(r) = cp.mem {
            *out.entry(r).or_default() += n.mem as f64 * k;
        }
    }
    out.into_iter().filter(|(_, v)| *v != 0.0).collect()
}

fn add_fill(
    lp: &mut Lp,
    m: &Master,
    g: usize,
    cp: &Caps,
    fill: &[(Item, u32)],
    obj: &Objective,
) -> ColId {
    let cost: f64 = fill
        .iter()
        .map(|(i, k)| m.item_cost(g, *i, obj) * *k as f64)
        .sum();
    let mut e = entries(m, g, cp, fill);
    e.push((cp.gpu, 1.0));
    let col = lp.col(cost, 0.0, INF, false);
    for (r, v) in e {
        lp.set(r, col, v);
    }
    col
}

/// The most valuable fill of one GPU of group `g` under `duals`: its value (without the
/// GPU row's dual), an upper bound on every fill's value (equal to it when the search
/// was exact) and the fill. A fill lives on one node, so its replicas' CPU and memory
/// stay within one node's: an exact branch and bound ([`Fill`]) over the items by
/// value per GPU share, bounded by the unbounded knapsack over GPU shares alone
/// (CPU and memory left out), which is also the bound when the search runs out of
/// budget.
fn best_fill(
    m: &Master,
    g: usize,
    cp: &Caps,
    duals: &[f64],
    obj: &Objective,
) -> (f64, Vec<(f64, FillItems)>) {
    let frac = priced_items(m, g, cp, duals, obj);
    let reach = small::Reach::of(&frac, |x| x.milli, |x| x.cpu, |x| x.mem, |x| x.value);
    let shape = &m.p.groups[g].shape;
    let mut search = Fill {
        items: &frac,
        reach: &reach,
        best: 0.0,
        found: Vec::new(),
        counts: vec![0; frac.len()],
        budget: FILL_BUDGET,
    };
    // The share knapsack's own best fill, when the node's CPU and memory hold it, is
    // the best fill: the search would only prove it.
    let top = knapsack_fill(&frac, &reach.ub, reach.unit);
    let fits = |resource: fn(&FillItem) -> u64, cap: Option<u64>| {
        let used: u64 = frac
            .iter()
            .zip(&top)
            .map(|(f, k)| resource(f) * *k as u64)
            .sum();
        cap.is_none_or(|c| used <= c)
    };
    let top_value: f64 = frac
        .iter()
        .zip(&top)
        .map(|(f, k)| f.value * *k as f64)
        .sum();
    let exact = top_value >= reach.ub[reach.ub.len() - 1] - 1e-9;
    if exact && fits(|f| f.cpu, shape.cpu) && fits(|f| f.mem, shape.mem) && top_value > 0.0 {
        search.best = top_value;
        search.found.push((top_value, top));
    } else {
        search.go(
            0,
            1000,
            shape.cpu.unwrap_or(u64::MAX),
            shape.mem.unwrap_or(u64::MAX),
            0.0,
        );
    }
    let bound = if search.budget == 0 {
        reach.share(1000)
    } else {
        search.best
    };
    let fills = as_fills(&frac, &search.found);
    (bound.max(search.best), fills)
}

/// The items of group `g` that may share a GPU, valued under `duals` (less their cost),
/// those of no value and those another dominates left out, best value per GPU share
/// first.
fn priced_items(m: &Master, g: usize, cp: &Caps, duals: &[f64], obj: &Objective) -> Vec<FillItem> {
    let frac: Vec<FillItem> = m.items[g]
        .iter()
        .filter(|i| m.need(**i).milli > 0)
        .map(|i| {
            let n = m.need(*i);
            let mut v: f64 = m
                .item_rows(g, *i)
                .iter()
                .map(|(r, coef)| duals[*r] * coef)
                .sum();
            if let Some(r) = cp.cpu {
                v += duals[r] * n.cpu as f64;
            }
            if let Some(r) = cp.mem {
                v += duals[r] * n.mem as f64;
            }
            FillItem {
                item: *i,
                milli: n.milli,
                cpu: n.cpu,
                mem: n.mem,
                value: v - m.item_cost(g, *i, obj),
            }
        })
        .filter(|f| f.value > 0.0)
        .collect();
    let mut frac = small::undominated(frac, |f| ([f.milli as u64, f.cpu, f.mem], f.value));
    frac.sort_by(|a, b| {
        (b.value / b.milli as f64)
            .total_cmp(&(a.value / a.milli as f64))
            .then(a.item.cmp(&b.item))
    });
    frac
}

/// The search's last incumbents, best first, as fills (items by index, with counts).
fn as_fills(frac: &[FillItem], found: &[(f64, Vec<u32>)]) -> Vec<(f64, FillItems)> {
    found
        .iter()
        .rev()
        .take(FILLS_PER_ROUND)
        .map(|(value, counts)| {
            let mut fill: Vec<(Item, u32)> = frac
                .iter()
                .zip(counts)
                .filter(|(_, k)| **k > 0)
                .map(|(f, k)| (f.item, *k))
                .collect();
            fill.sort();
            (*value, fill)
        })
        .collect()
}

/// The fills a group may add per round: the search's last incumbents, best first (each
/// is a column of its own when its reduced cost is negative). Measured on the openb
/// gpuspec33 list (seed 42): one per round needed about 80 rounds.
const FILLS_PER_ROUND: usize = 4;

/// Nodes the branch and bound of one fill may visit.
const FILL_BUDGET: u32 = 20_000;

/// A fractional item as the fill search sees it.
struct FillItem {
    item: Item,
    milli: u32,
    cpu: u64,
    mem: u64,
    value: f64,
}

/// The counts of the fill [`small::share_table`] found for a whole GPU (`ub`: its table).
fn knapsack_fill(frac: &[FillItem], ub: &[f64], unit: u32) -> Vec<u32> {
    let mut counts = vec![0u32; frac.len()];
    let mut c = ub.len() - 1;
    while c > 0 {
        if (ub[c] - ub[c - 1]).abs() <= 1e-12 {
            c -= 1;
            continue;
        }
        let Some(k) = frac.iter().position(|f| {
            let s = (f.milli / unit) as usize;
            s <= c && (ub[c - s] + f.value - ub[c]).abs() <= 1e-9
        }) else {
            break;
        };
        counts[k] += 1;
        c -= (frac[k].milli / unit) as usize;
    }
    counts
}

/// The exact search of one fill: items in order, each taken as often as fits, then
/// fewer times, pruned by [`small::share_table`] on the share left.
struct Fill<'a> {
    items: &'a [FillItem],
    reach: &'a small::Reach,
    best: f64,
    /// Every incumbent the search found, in order (the last is the best).
    found: Vec<(f64, Vec<u32>)>,
    counts: Vec<u32>,
    budget: u32,
}

impl Fill<'_> {
    fn go(&mut self, i: usize, share: u32, cpu: u64, mem: u64, value: f64) {
        if value > self.best + 1e-12 {
            self.best = value;
            self.found.push((value, self.counts.clone()));
        }
        if i == self.items.len() || self.budget == 0 {
            return;
        }
        if value + self.reach.at(&[share], cpu, mem) <= self.best + 1e-12 {
            return;
        }
        self.budget -= 1;
        let f = &self.items[i];
        let most = (share / f.milli)
            .min(cpu.checked_div(f.cpu).map_or(u32::MAX, |k| k as u32))
            .min(mem.checked_div(f.mem).map_or(u32::MAX, |k| k as u32));
        for k in (0..=most).rev() {
            self.counts[i] = k;
            self.go(
                i + 1,
                share - k * f.milli,
                cpu - k as u64 * f.cpu,
                mem - k as u64 * f.mem,
                value + k as f64 * f.value,
            );
        }
        self.counts[i] = 0;
    }
}
