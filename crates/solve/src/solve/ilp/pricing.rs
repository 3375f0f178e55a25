//! Pricing: the best pattern of a group under the master's duals.
//!
//! A pattern's reduced cost is `cost - dual(convexity) - sum(count * value(item))`
//! minus the duals of the "at least j gangs" rows it enters. So the best pattern
//! maximises item values on one node, subject to the node's capacity: a small knapsack.
//!
//! - whole-GPU items only (gangs, whole-GPU packed replicas): an exact dynamic program
//!   over GPUs, with NVLink-bound gangs per domain ([`dp`]);
//! - with fractional, CPU or memory requests: a greedy fill first, then an exact small
//!   MIP over the node's GPUs ([`mip`]), whose dual bound keeps the master's bound valid;
//! - small groups: every pattern, enumerated once ([`enumerate`]).
//!
//! Every pattern returned has passed [`pattern::fit`], so it is a real node placement.

use super::lp::{Live, Lp, Status};
use super::pattern::{self, Item, Need, NodeShape, Pattern};
use std::collections::BTreeMap;

/// Item values on one group under the current duals.
#[derive(Clone, Debug, Default)]
pub(crate) struct Values {
    /// Net value of one unit of each item (duals of its rows minus its cost).
    pub net: BTreeMap<Item, f64>,
    /// Per (shape, mode) of share items: the dual of "at least j gangs" by `j`.
    pub gr: BTreeMap<(u32, u32), Vec<(u32, f64)>>,
}

impl Values {
    /// The value of a multiset of items.
    pub(crate) fn of(&self, items: &[(Item, u32)]) -> f64 {
        let mut v = 0.0;
        let mut shares: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        for (i, k) in items {
            v += self.net.get(i).copied().unwrap_or(0.0) * *k as f64;
            if let Item::Share { s, m, .. } = i {
                *shares.entry((*s, *m)).or_default() += k;
            }
        }
        for ((s, m), k) in shares {
            for (j, d) in self.gr.get(&(s, m)).map(Vec::as_slice).unwrap_or(&[]) {
                if k >= *j {
                    v += d;
                }
            }
        }
        v
    }
}

/// The best pattern found, its value, and an upper bound on the best value of any
/// pattern of the group (equal to the value when the search was exact).
#[derive(Clone, Debug)]
pub(crate) struct Priced {
    pub pattern: Option<Pattern>,
    pub value: f64,
    pub bound: f64,
}

/// Every feasible pattern of `items` on `shape`, or `None` when there are more than
/// `cap`.
pub(crate) fn enumerate(
    shape: &NodeShape,
    items: &[Item],
    need: &impl Fn(Item) -> Need,
    cap: usize,
) -> Option<Vec<Pattern>> {
    fn go(
        i: usize,
        items: &[Item],
        counts: &mut Vec<(Item, u32)>,
        shape: &NodeShape,
        need: &impl Fn(Item) -> Need,
        out: &mut Vec<Pattern>,
        cap: usize,
    ) -> bool {
        if i == items.len() {
            if let Some(p) = pattern::fit(shape, counts, need) {
                out.push(p);
            }
            return out.len() <= cap;
        }
        if !go(i + 1, items, counts, shape, need, out, cap) {
            return false;
        }
        let mut k = 1;
        loop {
            counts.push((items[i], k));
            let ok = pattern::fit(shape, counts, need).is_some();
            if ok && !go(i + 1, items, counts, shape, need, out, cap) {
                counts.pop();
                return false;
            }
            counts.pop();
            if !ok || k >= 4096 {
                return true;
            }
            k += 1;
        }
    }
    let mut out = Vec::new();
    let mut counts = Vec::new();
    go(0, items, &mut counts, shape, need, &mut out, cap).then_some(out)
}

/// Whether the DP is exact for these items: whole GPUs only, no CPU or memory request
/// the node limits.
pub(crate) fn dp_exact(shape: &NodeShape, items: &[Item], need: &impl Fn(Item) -> Need) -> bool {
    items.iter().all(|i| {
        let n = need(*i);
        n.milli == 0 && !shape.cpu_binds(&n) && (n.mem == 0 || shape.mem.is_none())
    })
}

/// One choice of a knapsack group: GPUs, value, item counts.
type Choice = (usize, f64, Vec<(Item, u32)>);

/// A best value and the item counts that reach it.
type Best = (f64, Vec<(Item, u32)>);

/// Exact pricing for whole-GPU items by dynamic programming over GPUs: a knapsack of
/// the unbound items and shares over any GPUs ([`fill_any`]), NVLink-bound gangs per
/// domain ([`fill_nvlink`], [`fill_domains`]), and the best split of the node's GPUs
/// between the two.
pub(crate) fn dp(
    shape: &NodeShape,
    items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> Priced {
    let total = shape.gpus() as usize;
    let (groups, bound_items) = choice_groups(total, items, vals, need);
    let any = fill_any(&groups, total);
    let nv = fill_nvlink(shape, &bound_items, vals, need);
    let f = fill_domains(shape, &nv);
    let mut best = (0.0, Vec::new());
    for (left, (v, counts)) in &f {
        let cand = v + any[(*left).min(total)].0;
        if cand > best.0 + 1e-12 {
            let mut c = counts.clone();
            c.extend(any[(*left).min(total)].1.iter().copied());
            best = (cand, c);
        }
    }
    let counts = merge(best.1);
    let pattern = pattern::fit(shape, &counts, need);
    let value = if pattern.is_some() {
        vals.of(&counts)
    } else {
        0.0
    };
    Priced {
        pattern,
        value,
        bound: best.0.max(0.0),
    }
}

/// The choice groups of the "anywhere" knapsack over `total` GPUs: each whole-GPU item
/// that is not NVLink-bound (1, 2, ... of it), and the shares of each (shape, mode)
/// (full and partial share counts together, for their "at least j gangs" values); and
/// the NVLink-bound items apart.
fn choice_groups(
    total: usize,
    items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> (Vec<Vec<Choice>>, Vec<Item>) {
    let net = |i: &Item| vals.net.get(i).copied().unwrap_or(0.0);
    // Choice groups for the "anywhere" knapsack: each is a list of (gpus, value, counts).
    let mut groups: Vec<Vec<Choice>> = Vec::new();
    let mut pairs: BTreeMap<(u32, u32), (Option<Item>, Option<Item>)> = BTreeMap::new();
    let mut bound_items: Vec<Item> = Vec::new();
    for &i in items {
        let n = need(i);
        match i {
            Item::Share { s, m, partial } => {
                let e = pairs.entry((s, m)).or_default();
                if partial {
                    e.1 = Some(i);
                } else {
                    e.0 = Some(i);
                }
            }
            _ if n.nvlink => bound_items.push(i),
            _ => {
                if net(&i) > 0.0 && n.gpus > 0 {
                    let max = total / n.gpus as usize;
                    groups.push(
                        (1..=max)
                            .map(|k| (k * n.gpus as usize, net(&i) * k as f64, vec![(i, k as u32)]))
                            .collect(),
                    );
                }
            }
        }
    }
    for (full, part) in pairs.into_values() {
        let choices = share_choices(total, full, part, vals, need);
        if !choices.is_empty() {
            groups.push(choices);
        }
    }
    (groups, bound_items)
}

/// Every count of full and partial shares of one (shape, mode) that fits `total` GPUs
/// and is worth something.
fn share_choices(
    total: usize,
    full: Option<Item>,
    part: Option<Item>,
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> Vec<Choice> {
    let gf = full.map_or(0, |i| need(i).gpus as usize);
    let gp = part.map_or(0, |i| need(i).gpus as usize);
    let mut choices = Vec::new();
    let max_f = total.checked_div(gf).unwrap_or(0);
    for f in 0..=max_f {
        let left = total - f * gf;
        let max_p = left.checked_div(gp).unwrap_or(0);
        for q in 0..=max_p {
            if f + q == 0 {
                continue;
            }
            let mut counts = Vec::new();
            if f > 0 {
                counts.push((full.expect("full share"), f as u32));
            }
            if q > 0 {
                counts.push((part.expect("partial share"), q as u32));
            }
            let v = vals.of(&counts);
            if v > 0.0 {
                choices.push((f * gf + q * gp, v, counts));
            }
        }
    }
    choices
}

/// `any[t]`: the best value of the choice groups (at most one choice each) with at most
/// `t` GPUs, and its counts.
fn fill_any(groups: &[Vec<Choice>], total: usize) -> Vec<Best> {
    let mut any: Vec<Best> = vec![(0.0, Vec::new()); total + 1];
    for choices in groups {
        let prev = any.clone();
        for t in 0..=total {
            for (g, v, counts) in choices {
                if *g <= t {
                    let cand = prev[t - g].0 + v;
                    if cand > any[t].0 + 1e-12 {
                        let mut c = prev[t - g].1.clone();
                        c.extend(counts.iter().copied());
                        any[t] = (cand, c);
                    }
                }
            }
        }
    }
    any
}

/// NVLink-bound gangs in one domain: `nv[u]`, the best value with at most `u` GPUs
/// (unbounded counts), up to the largest domain.
fn fill_nvlink(
    shape: &NodeShape,
    bound_items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> Vec<Best> {
    let net = |i: &Item| vals.net.get(i).copied().unwrap_or(0.0);
    let max_dom = shape.domains.iter().copied().max().unwrap_or(0) as usize;
    let mut nv: Vec<Best> = vec![(0.0, Vec::new()); max_dom + 1];
    for u in 1..=max_dom {
        nv[u] = nv[u - 1].clone();
        for i in bound_items {
            let g = need(*i).gpus as usize;
            if g > 0 && g <= u && net(i) > 0.0 {
                let cand = nv[u - g].0 + net(i);
                if cand > nv[u].0 + 1e-12 {
                    let mut c = nv[u - g].1.clone();
                    c.push((*i, 1));
                    nv[u] = (cand, c);
                }
            }
        }
    }
    nv
}

/// Over the node's domains: `f[leftover]`, the best NVLink value with that many GPUs
/// left for the rest.
fn fill_domains(shape: &NodeShape, nv: &[Best]) -> BTreeMap<usize, Best> {
    let mut f: BTreeMap<usize, Best> = BTreeMap::from([(0, (0.0, Vec::new()))]);
    for &size in &shape.domains {
        let size = size as usize;
        let mut next: BTreeMap<usize, Best> = BTreeMap::new();
        for (left, (v, counts)) in &f {
            for (used, (nv_value, nv_counts)) in nv.iter().enumerate().take(size + 1) {
                let cand = v + nv_value;
                let key = left + size - used;
                if next.get(&key).is_none_or(|x| cand > x.0 + 1e-12) {
                    let mut c = counts.clone();
                    c.extend(nv_counts.iter().copied());
                    next.insert(key, (cand, c));
                }
            }
        }
        f = next;
    }
    f
}

/// Sums the counts of equal items (sorted).
fn merge(mut counts: Vec<(Item, u32)>) -> Vec<(Item, u32)> {
    counts.sort();
    let mut out: Vec<(Item, u32)> = Vec::new();
    for (i, k) in counts {
        match out.last_mut() {
            Some((j, n)) if *j == i => *n += k,
            _ => out.push((i, k)),
        }
    }
    out
}

/// A quick feasible pattern: items by net value, each added as many times as fits.
pub(crate) fn greedy(
    shape: &NodeShape,
    items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> Priced {
    let mut order: Vec<Item> = items
        .iter()
        .copied()
        .filter(|i| vals.net.get(i).copied().unwrap_or(0.0) > 0.0)
        .collect();
    // Value per unit of the node's scarcest resource the item uses.
    let weight = |i: &Item| {
        let n = need(*i);
        let g = shape.gpus().max(1) as f64;
        let mut w = (n.gpus as f64 + n.milli as f64 / 1000.0) / g;
        if let Some(c) = shape.cpu.filter(|c| *c > 0) {
            w = w.max(n.cpu as f64 / c as f64);
        }
        if let Some(m) = shape.mem.filter(|m| *m > 0) {
            w = w.max(n.mem as f64 / m as f64);
        }
        w.max(1e-6)
    };
    order.sort_by(|a, b| {
        let va = vals.net[a] / weight(a);
        let vb = vals.net[b] / weight(b);
        vb.total_cmp(&va).then(a.cmp(b))
    });
    let mut counts: Vec<(Item, u32)> = Vec::new();
    let mut current = Pattern::empty();
    for i in order {
        loop {
            let mut trial = counts.clone();
            match trial.iter_mut().find(|(j, _)| *j == i) {
                Some(x) => x.1 += 1,
                None => trial.push((i, 1)),
            }
            trial.sort();
            if vals.of(&trial) <= vals.of(&counts) + 1e-12 {
                break;
            }
            match pattern::fit(shape, &trial, need) {
                Some(p) => {
                    counts = trial;
                    current = p;
                }
                None => break,
            }
        }
    }
    let value = vals.of(&counts);
    Priced {
        pattern: (!counts.is_empty()).then_some(current),
        value,
        bound: f64::INFINITY,
    }
}

/// Exact pricing by a small MIP over the node: counts of whole-GPU items, NVLink-bound
/// gangs per domain, fractional replicas per GPU, CPU and memory ([`NodeMip`]).
pub(crate) fn mip(
    shape: &NodeShape,
    items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
    time_limit: f64,
) -> Priced {
    let node = NodeMip::build(shape, items, vals, need);
    let mut live = Live::new(&node.lp, true);
    live.option_f64("time_limit", time_limit.max(0.01));
    live.option_f64("mip_rel_gap", 1e-6);
    let sol = live.run(true);
    let bound = if sol.bound.is_finite() {
        (-sol.bound).max(0.0)
    } else {
        f64::INFINITY
    };
    if !matches!(sol.status, Status::Optimal | Status::Limit) {
        return Priced {
            pattern: None,
            value: 0.0,
            bound,
        };
    }
    let mut chosen: Vec<(Item, usize, u32)> = Vec::new();
    for ((i, at), x) in node.cols.iter().zip(&node.col_ids) {
        let k = sol.x[*x].round().max(0.0) as u32;
        if k > 0 {
            chosen.push((*i, *at, k));
        }
    }
    let counts = merge(chosen.iter().map(|(i, _, k)| (*i, *k)).collect());
    // The MIP packed the fractions per GPU: lay the pattern out from that (a search of
    // its own could run out of budget on many small fractions).
    let pattern = assemble(shape, &chosen, need).or_else(|| pattern::fit(shape, &counts, need));
    let value = if pattern.is_some() {
        vals.of(&counts)
    } else {
        0.0
    };
    Priced {
        pattern,
        value,
        bound: bound.max(value),
    }
}

/// The pricing MIP of one node (minimising minus the value), with its item columns.
struct NodeMip {
    lp: Lp,
    /// Per item column: the item and where it sits (the GPU index of a fraction, the
    /// NVLink domain of a bound gang, `usize::MAX` otherwise).
    cols: Vec<(Item, usize)>,
    col_ids: Vec<usize>,
}

/// The node's capacity rows in the pricing MIP.
struct NodeRows {
    gpu: usize,
    cpu: Option<usize>,
    mem: Option<usize>,
    domains: Vec<usize>,
    /// The fractional load of each GPU (when some item is a fraction).
    load: Vec<usize>,
}

impl NodeMip {
    /// The capacity rows, a column per item (per GPU for a fraction, per domain for an
    /// NVLink-bound gang) and the "at least j gangs" columns of shares.
    fn build(
        shape: &NodeShape,
        items: &[Item],
        vals: &Values,
        need: &impl Fn(Item) -> Need,
    ) -> NodeMip {
        let mut node = NodeMip {
            lp: Lp::default(),
            cols: Vec::new(),
            col_ids: Vec::new(),
        };
        let rows = node.rows(shape, items, vals, need);
        let shares = node.item_columns(shape, items, vals, need, &rows);
        node.gang_thresholds(shape, vals, &shares);
        node.one_class_per_gpu(shape, need);
        node
    }

    /// On a DRA node a GPU's fractions are one class's (a device belongs to one
    /// ResourceClaim): per GPU, a binary per fractional item, the item's count on the
    /// GPU only where its binary is set, and at most one binary set.
    fn one_class_per_gpu(&mut self, shape: &NodeShape, need: &impl Fn(Item) -> Need) {
        if !shape.dra {
            return;
        }
        let mut per_gpu: BTreeMap<usize, Vec<(usize, f64)>> = BTreeMap::new();
        for ((i, at), &x) in self.cols.iter().zip(&self.col_ids) {
            let n = need(*i);
            if n.milli > 0 {
                let most = (1000 / n.milli.max(1)) as f64;
                per_gpu.entry(*at).or_default().push((x, most));
            }
        }
        let lp = &mut self.lp;
        for cols in per_gpu.values().filter(|c| c.len() > 1) {
            let one = lp.row(-f64::INFINITY, 1.0);
            for &(x, most) in cols {
                let u = lp.col(0.0, 0.0, 1.0, true);
                let link = lp.row(-f64::INFINITY, 0.0);
                lp.set(link, x, 1.0);
                lp.set(link, u, -most);
                lp.set(one, u, 1.0);
            }
        }
    }

    /// The GPU, CPU, memory and domain rows; with fractional items, a column per GPU
    /// ("holds fractions", ordered for symmetry) and its load row.
    fn rows(
        &mut self,
        shape: &NodeShape,
        items: &[Item],
        vals: &Values,
        need: &impl Fn(Item) -> Need,
    ) -> NodeRows {
        let net = |i: &Item| vals.net.get(i).copied().unwrap_or(0.0);
        let g_total = shape.gpus() as f64;
        let lp = &mut self.lp;
        let inf = f64::INFINITY;
        let gpu_row = lp.row(-inf, g_total);
        let cpu_row = shape.cpu.map(|c| lp.row(-inf, c as f64));
        let mem_row = shape.mem.map(|m| lp.row(-inf, m as f64));
        let dom_rows: Vec<usize> = shape
            .domains
            .iter()
            .map(|d| lp.row(-inf, *d as f64))
            .collect();
        let ngpu = shape.gpus() as usize;
        // Fractional GPUs: f_j, with their load rows and symmetry.
        let frac: Vec<Item> = items
            .iter()
            .copied()
            .filter(|i| need(*i).milli > 0 && net(i) > 0.0)
            .collect();
        let mut load_rows = Vec::new();
        let mut f_cols = Vec::new();
        if !frac.is_empty() {
            for j in 0..ngpu {
                let f = lp.col(0.0, 0.0, 1.0, true);
                lp.set(gpu_row, f, 1.0);
                let row = lp.row(-inf, 0.0);
                lp.set(row, f, -1000.0);
                load_rows.push(row);
                f_cols.push(f);
                if j > 0 {
                    let sym = lp.row(-inf, 0.0);
                    lp.set(sym, f_cols[j], 1.0);
                    lp.set(sym, f_cols[j - 1], -1.0);
                }
            }
        }
        NodeRows {
            gpu: gpu_row,
            cpu: cpu_row,
            mem: mem_row,
            domains: dom_rows,
            load: load_rows,
        }
    }

    /// A column per item worth something: per GPU for a fraction, per domain for an
    /// NVLink-bound gang, one otherwise. Returns the share columns per (shape, mode).
    fn item_columns(
        &mut self,
        shape: &NodeShape,
        items: &[Item],
        vals: &Values,
        need: &impl Fn(Item) -> Need,
        rows: &NodeRows,
    ) -> BTreeMap<(u32, u32), Vec<usize>> {
        let net = |i: &Item| vals.net.get(i).copied().unwrap_or(0.0);
        let lp = &mut self.lp;
        let (cpu_row, mem_row) = (rows.cpu, rows.mem);
        let mut shares: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
        for &i in items {
            let n = need(i);
            let v = net(&i);
            if v <= 0.0 {
                continue;
            }
            if n.milli > 0 {
                for (j, &load) in rows.load.iter().enumerate() {
                    let x = lp.col(-v, 0.0, (1000 / n.milli.max(1)) as f64, true);
                    lp.set(load, x, n.milli as f64);
                    add_cpu_mem(lp, cpu_row, mem_row, x, n);
                    self.cols.push((i, j));
                    self.col_ids.push(x);
                }
                continue;
            }
            if n.nvlink {
                for (d, size) in shape.domains.iter().enumerate() {
                    if n.gpus == 0 || n.gpus > *size {
                        continue;
                    }
                    let x = lp.col(-v, 0.0, (*size / n.gpus) as f64, true);
                    lp.set(rows.domains[d], x, n.gpus as f64);
                    lp.set(rows.gpu, x, n.gpus as f64);
                    self.cols.push((i, d));
                    self.col_ids.push(x);
                }
                continue;
            }
            let ub = shape.gpus().checked_div(n.gpus).map_or(1e6, |k| k as f64);
            let x = lp.col(-v, 0.0, ub, true);
            lp.set(rows.gpu, x, n.gpus as f64);
            add_cpu_mem(lp, cpu_row, mem_row, x, n);
            if let Item::Share { s, m, .. } = i {
                shares.entry((s, m)).or_default().push(x);
            }
            self.cols.push((i, usize::MAX));
            self.col_ids.push(x);
        }
        shares
    }

    /// "At least j gangs": `e_j = 1` when the node holds `j` or more shares of (s, m),
    /// valued at the dual of its row.
    fn gang_thresholds(
        &mut self,
        shape: &NodeShape,
        vals: &Values,
        shares: &BTreeMap<(u32, u32), Vec<usize>>,
    ) {
        let g_total = shape.gpus() as f64;
        let lp = &mut self.lp;
        for ((s, m), xs) in shares {
            for (j, d) in vals.gr.get(&(*s, *m)).map(Vec::as_slice).unwrap_or(&[]) {
                let e = lp.col(-d, 0.0, 1.0, true);
                let row = lp.row(-f64::INFINITY, (*j - 1) as f64);
                for x in xs {
                    lp.set(row, *x, 1.0);
                }
                lp.set(row, e, -g_total.max(1.0));
            }
        }
    }
}

/// A pattern from the MIP's choice: `(item, GPU index for a fraction, count)`; each
/// GPU holding fractions becomes one whole GPU to place, its fractions then share it.
fn assemble(
    shape: &NodeShape,
    chosen: &[(Item, usize, u32)],
    need: &impl Fn(Item) -> Need,
) -> Option<Pattern> {
    let mut inst: Vec<(Item, Option<usize>)> = Vec::new();
    for (i, at, k) in chosen {
        let n = need(*i);
        if n.slots.is_some() {
            // The device plugin's sharing is a rule of the whole node: `fit` checks it.
            return None;
        }
        let frac = n.milli > 0;
        for _ in 0..*k {
            inst.push((*i, frac.then_some(*at)));
        }
    }
    inst.sort();
    // On a DRA node, one class's fractions per GPU (the MIP's rule; checked again).
    let mut classes: BTreeMap<usize, Item> = BTreeMap::new();
    for (i, g) in &inst {
        if let Some(g) = g {
            if shape.dra && *classes.entry(*g).or_insert(*i) != *i {
                return None;
            }
        }
    }
    let frac_gpus: Vec<usize> = {
        let mut v: Vec<usize> = inst.iter().filter_map(|(_, g)| *g).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut needs: Vec<Need> = inst
        .iter()
        .filter(|(_, g)| g.is_none())
        .map(|(i, _)| need(*i))
        .collect();
    let whole = needs.len();
    needs.extend(frac_gpus.iter().map(|_| Need {
        gpus: 1,
        ..Need::default()
    }));
    let got = pattern::fit_in(pattern::Slots::all(shape), &needs)?;
    let mut places = Vec::with_capacity(inst.len());
    let mut w = 0;
    for (_, g) in &inst {
        match g {
            None => {
                places.push(got[w].clone());
                w += 1;
            }
            Some(g) => {
                let k = frac_gpus.iter().position(|x| x == g)?;
                places.push(got[whole + k].clone());
            }
        }
    }
    let items = merge(inst.iter().map(|(i, _)| (*i, 1)).collect());
    Some(Pattern { items, places })
}

fn add_cpu_mem(lp: &mut Lp, cpu: Option<usize>, mem: Option<usize>, x: usize, n: Need) {
    if let Some(r) = cpu {
        lp.set(r, x, n.cpu as f64);
    }
    if let Some(r) = mem {
        lp.set(r, x, n.mem as f64);
    }
}

/// An upper bound on the best pattern value of a node by Lagrangian relaxation of its
/// CPU and memory: for multipliers `(lc, lm) >= 0`, the best whole-GPU and fractional
/// packing of items valued `value - lc * cpu - lm * mem`, plus `lc * CPU + lm * memory`,
/// bounds every pattern (NVLink domains and "at least j gangs" penalties are left out,
/// which only raises it). Exact dynamic programs per GPU and per node; the multipliers
/// are searched coordinate-wise (the bound is convex in them). Also returns a pattern
/// built from the relaxation's best packing at the final multipliers, trimmed to the
/// node's CPU and memory (a column candidate), when one fits.
pub(crate) fn lagrangian(
    shape: &NodeShape,
    items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> (f64, Option<Pattern>) {
    let list: Vec<(Item, Need, f64)> = items
        .iter()
        .map(|i| (*i, need(*i), vals.net.get(i).copied().unwrap_or(0.0)))
        .filter(|(_, _, v)| *v > 0.0)
        .collect();
    if list.is_empty() {
        return (0.0, None);
    }
    let cap_c = shape.cpu.map(|c| c as f64);
    let cap_m = shape.mem.map(|m| m as f64);
    // Unlimited CPU-only items (no GPU, no limit) make the node unbounded.
    if list.iter().any(|(_, n, _)| {
        n.gpus == 0
            && n.milli == 0
            && (n.cpu == 0 || cap_c.is_none())
            && (n.mem == 0 || cap_m.is_none())
    }) {
        return (f64::INFINITY, None);
    }
    let gpus = shape.gpus() as usize;
    let (best, arg) = multipliers(&list, gpus, cap_c, cap_m);
    // The relaxation's packing at the best multipliers, trimmed to CPU and memory.
    let (_, counts) = node_best(gpus, &list, arg.0, arg.1);
    let column = trim(shape, merge(counts), vals, need, (cap_c, cap_m));
    (best.max(0.0), column)
}

/// The coordinate-wise search of the Lagrangian multipliers of CPU (`cap_c`) and
/// memory (`cap_m`): the best bound found and its multipliers.
fn multipliers(
    list: &[(Item, Need, f64)],
    gpus: usize,
    cap_c: Option<f64>,
    cap_m: Option<f64>,
) -> (f64, (f64, f64)) {
    let eval = |lc: f64, lm: f64| -> f64 {
        node_best(gpus, list, lc, lm).0 + lc * cap_c.unwrap_or(0.0) + lm * cap_m.unwrap_or(0.0)
    };
    // Largest useful multipliers: past them every item using the resource is worthless.
    let max_ratio = |f: fn(&Need) -> u64| {
        list.iter()
            .filter(|(_, n, _)| f(n) > 0)
            .map(|(_, n, v)| v / f(n) as f64)
            .fold(0.0_f64, f64::max)
    };
    let hi_c = if cap_c.is_some() {
        max_ratio(|n| n.cpu)
    } else {
        0.0
    };
    let hi_m = if cap_m.is_some() {
        max_ratio(|n| n.mem)
    } else {
        0.0
    };
    let (mut lc, mut lm) = (0.0, 0.0);
    let mut best = eval(lc, lm);
    let mut arg = (0.0, 0.0);
    for _ in 0..2 {
        if hi_c > 0.0 {
            lc = golden(|x| eval(x, lm), 0.0, hi_c);
            let v = eval(lc, lm);
            if v < best {
                best = v;
                arg = (lc, lm);
            }
        }
        if hi_m > 0.0 {
            lm = golden(|x| eval(lc, x), 0.0, hi_m);
            let v = eval(lc, lm);
            if v < best {
                best = v;
                arg = (lc, lm);
            }
        }
    }
    (best, arg)
}

/// The pattern of `counts` once trimmed to fit the node (CPU `caps.0`, memory
/// `caps.1`): while it does not fit, one unit of the item worth least per unit of the
/// scarcest resource goes. `None` when nothing is left.
fn trim(
    shape: &NodeShape,
    mut counts: Vec<(Item, u32)>,
    vals: &Values,
    need: &impl Fn(Item) -> Need,
    (cap_c, cap_m): (Option<f64>, Option<f64>),
) -> Option<Pattern> {
    let gpus = shape.gpus() as usize;
    loop {
        if let Some(p) = pattern::fit(shape, &counts, need) {
            break (!counts.is_empty()).then_some(p);
        }
        // Drop one unit of the item worth least per unit of the scarcest resource.
        let worst = counts
            .iter()
            .enumerate()
            .min_by(|(_, (a, _)), (_, (b, _))| {
                let r = |i: &Item| {
                    let n = need(*i);
                    let w = (n.cpu as f64 / cap_c.unwrap_or(f64::INFINITY))
                        .max(n.mem as f64 / cap_m.unwrap_or(f64::INFINITY))
                        .max((n.gpus as f64 + n.milli as f64 / 1000.0) / gpus.max(1) as f64)
                        .max(1e-9);
                    vals.net.get(i).copied().unwrap_or(0.0) / w
                };
                r(a).total_cmp(&r(b))
            })
            .map(|(k, _)| k);
        match worst {
            Some(k) => {
                counts[k].1 -= 1;
                if counts[k].1 == 0 {
                    counts.remove(k);
                }
            }
            None => break None,
        }
    }
}

/// The argmin of a convex function on `[lo, hi]` (golden-section search).
fn golden(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - r * (hi - lo), lo + r * (hi - lo));
    let (mut fa, mut fb) = (f(a), f(b));
    for _ in 0..30 {
        if fa <= fb {
            hi = b;
            b = a;
            fb = fa;
            a = hi - r * (hi - lo);
            fa = f(a);
        } else {
            lo = a;
            a = b;
            fa = fb;
            b = lo + r * (hi - lo);
            fb = f(b);
        }
    }
    if f(lo) <= fa.min(fb) {
        lo
    } else if fa <= fb {
        a
    } else {
        b
    }
}

/// The best priced value of `gpus` GPU slots (each holds part of a whole-GPU item or
/// one fractional fill: an unbounded knapsack over 1/1000 of a GPU), and its items.
fn node_best(gpus: usize, list: &[(Item, Need, f64)], lc: f64, lm: f64) -> (f64, Vec<(Item, u32)>) {
    let price = |n: &Need, v: f64| v - lc * n.cpu as f64 - lm * n.mem as f64;
    let unit = list
        .iter()
        .filter(|(_, n, _)| n.milli > 0)
        .fold(1000u32, |g, (_, n, _)| pattern::gcd(g, n.milli)) as usize;
    let cap = 1000 / unit.max(1);
    // fill[c] = (value, item chosen last) for capacity c.
    let mut fill: Vec<(f64, Option<usize>)> = vec![(0.0, None); cap + 1];
    for c in 1..=cap {
        fill[c] = (fill[c - 1].0, None);
        for (k, (_, n, v)) in list.iter().enumerate().filter(|(_, x)| x.1.milli > 0) {
            let s = n.milli as usize / unit;
            let pv = price(n, *v);
            if s <= c && pv > 0.0 && fill[c - s].0 + pv > fill[c].0 + 1e-12 {
                fill[c] = (fill[c - s].0 + pv, Some(k));
            }
        }
    }
    let mut one_fill: Vec<(Item, u32)> = Vec::new();
    let mut c = cap;
    while c > 0 {
        match fill[c].1 {
            Some(k) => {
                one_fill.push((list[k].0, 1));
                c -= list[k].1.milli as usize / unit;
            }
            None => c -= 1,
        }
    }
    let per_gpu = fill[cap].0;
    // best[t] = (value, choice): a fill (None) or a whole item.
    let mut best: Vec<(f64, Option<usize>)> = vec![(0.0, None); gpus + 1];
    for t in 1..=gpus {
        best[t] = (best[t - 1].0 + per_gpu.max(0.0), None);
        for (k, (_, n, v)) in list.iter().enumerate().filter(|(_, x)| x.1.gpus > 0) {
            let g = n.gpus as usize;
            let pv = price(n, *v);
            if g <= t && pv > 0.0 && best[t - g].0 + pv > best[t].0 + 1e-12 {
                best[t] = (best[t - g].0 + pv, Some(k));
            }
        }
    }
    let mut counts: Vec<(Item, u32)> = Vec::new();
    let mut t = gpus;
    while t > 0 {
        match best[t].1 {
            Some(k) => {
                counts.push((list[k].0, 1));
                t -= list[k].1.gpus as usize;
            }
            None => {
                if per_gpu > 0.0 {
                    counts.extend(one_fill.iter().copied());
                }
                t -= 1;
            }
        }
    }
    (best[gpus].0, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(i: Item) -> Need {
        match i {
            Item::Local { s, m } => Need {
                gpus: s,
                nvlink: m == 1,
                ..Need::default()
            },
            Item::Share { s, .. } => Need {
                gpus: s,
                ..Need::default()
            },
            Item::Packed { w } => Need {
                milli: w,
                cpu: 1_000,
                ..Need::default()
            },
        }
    }

    fn shape(d: &[u32], cpu: Option<u64>) -> NodeShape {
        NodeShape {
            domains: d.to_vec(),
            cpu,
            mem: None,
            dra: false,
        }
    }

    #[test]
    fn dp_finds_the_best_fill_of_seven_gpus() {
        // Items of 2 (value 3) and 4 (value 5) on 7 GPUs: 3 x 2 = 9 beats 4 + 2 = 8.
        let items = [Item::Local { s: 2, m: 0 }, Item::Local { s: 4, m: 0 }];
        let mut vals = Values::default();
        vals.net.insert(items[0], 3.0);
        vals.net.insert(items[1], 5.0);
        let p = dp(&shape(&[7], None), &items, &vals, &need);
        assert_eq!(p.value, 9.0);
        assert_eq!(p.bound, 9.0);
        assert_eq!(p.pattern.unwrap().items, vec![(items[0], 3)]);
    }

    #[test]
    fn dp_respects_nvlink_domains_and_gang_thresholds() {
        // NVLink-bound 3-GPU gangs on two domains of 4: two fit (one per domain).
        let items = [Item::Local { s: 3, m: 1 }];
        let mut vals = Values::default();
        vals.net.insert(items[0], 1.0);
        let p = dp(&shape(&[4, 4], None), &items, &vals, &need);
        assert_eq!(p.value, 2.0);
        // Shares with a penalty for holding two of the same shape: one share only.
        let sh = Item::Share {
            s: 2,
            m: 0,
            partial: false,
        };
        let mut vals = Values::default();
        vals.net.insert(sh, 1.0);
        vals.gr.insert((2, 0), vec![(2, -5.0)]);
        let p = dp(&shape(&[8], None), &[sh], &vals, &need);
        assert_eq!(p.value, 1.0);
    }

    #[test]
    fn mip_packs_fractions_under_cpu() {
        // Fractions of 600 (value 6) and 400 (value 4), 2 GPUs, 3 cores (1 per replica):
        // 600 + 400 + 600 = 16 within 3 cores.
        let items = [Item::Packed { w: 600 }, Item::Packed { w: 400 }];
        let mut vals = Values::default();
        vals.net.insert(items[0], 6.0);
        vals.net.insert(items[1], 4.0);
        let p = mip(&shape(&[2], Some(3_000)), &items, &vals, &need, 5.0);
        assert!((p.value - 16.0).abs() < 1e-6, "{p:?}");
        assert!(p.bound >= p.value - 1e-6 && p.bound < 16.0 + 1e-3);
        let g = greedy(&shape(&[2], Some(3_000)), &items, &vals, &need);
        assert!(g.value <= p.value + 1e-9);
    }

    #[test]
    fn enumeration_lists_every_pattern() {
        // One item of 2 GPUs on 4 GPUs: counts 0, 1, 2.
        let all = enumerate(
            &shape(&[4], None),
            &[Item::Share {
                s: 2,
                m: 0,
                partial: false,
            }],
            &need,
            100,
        )
        .unwrap();
        assert_eq!(all.len(), 3);
        assert!(
            enumerate(
                &shape(&[8], None),
                &[
                    Item::Share {
                        s: 1,
                        m: 0,
                        partial: false
                    },
                    Item::Share {
                        s: 1,
                        m: 1,
                        partial: false
                    }
                ],
                &need,
                5
            )
            .is_none()
        );
    }
}
