//! Exact pricing of small nodes: one or two usable GPUs, packed replicas only.
//!
//! The per-GPU relaxation ([`super::relax`]) pools a group's CPU and memory, which is
//! loose on nodes with few GPUs: two fills that each take 60% of a two-GPU node's CPU
//! pass the pool but no node. On such nodes the relaxation keeps node patterns instead,
//! priced here exactly: every choice of whole-GPU replicas (none, one, or two of one
//! GPU each), then the fractions of the GPUs left by a branch and bound over the items
//! (value per GPU share first), each GPU within 100% and the node within its CPU and
//! memory, pruned by the unbounded knapsack over GPU shares alone. Past its budget the
//! search still returns a valid bound (CPU and memory left out).

use super::pattern::{Item, Need, NodeShape, Pattern, Slots, gcd};
use super::pricing::{Priced, Values};

/// Steps of the branch and bound per pricing call.
const BUDGET: u32 = 50_000;

/// Whether a group's nodes are priced here: at most two usable GPUs, every item a
/// packed replica.
pub(crate) fn applies(shape: &NodeShape, items: &[Item]) -> bool {
    let g = shape.gpus();
    // A DRA node keeps one class's fractions per GPU, a rule this search does not know:
    // such groups are priced by the node MIP, which does.
    !shape.dra && (1..=2).contains(&g) && items.iter().all(|i| matches!(i, Item::Packed { .. }))
}

/// `items` without those another item dominates: one that needs no less of anything
/// (`key`: needs, value) and is worth no more is never needed in a node pattern or a
/// fill, whose counts are not bounded here (every use of it can take the other
/// instead). Of equal items the first stays.
pub(super) fn undominated<T>(items: Vec<T>, key: impl Fn(&T) -> ([u64; 3], f64)) -> Vec<T> {
    let keys: Vec<([u64; 3], f64)> = items.iter().map(&key).collect();
    let dominated = |k: usize| {
        let (nb, vb) = keys[k];
        keys.iter().enumerate().any(|(j, (na, va))| {
            j != k
                && (0..3).all(|r| na[r] <= nb[r])
                && *va >= vb
                && (na != &nb || *va > vb || j < k)
        })
    };
    let keep: Vec<bool> = (0..items.len()).map(|k| !dominated(k)).collect();
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(x, k)| k.then_some(x))
        .collect()
}

/// One item as the search sees it.
#[derive(Clone, Copy)]
struct It {
    item: Item,
    need: Need,
    value: f64,
}

/// The best node pattern under `vals` (see the module docs).
pub(crate) fn price(
    shape: &NodeShape,
    items: &[Item],
    vals: &Values,
    need: &impl Fn(Item) -> Need,
) -> Priced {
    let list: Vec<It> = items
        .iter()
        .map(|i| It {
            item: *i,
            need: need(*i),
            value: vals.net.get(i).copied().unwrap_or(0.0),
        })
        .filter(|x| x.value > 0.0)
        .collect();
    let gpus = shape.gpus();
    let whole: Vec<It> = list
        .iter()
        .copied()
        .filter(|x| x.need.milli == 0 && (1..=gpus).contains(&x.need.gpus))
        .collect();
    let whole = undominated(whole, |x| {
        ([x.need.gpus as u64, x.need.cpu, x.need.mem], x.value)
    });
    let frac: Vec<It> = list.into_iter().filter(|x| x.need.milli > 0).collect();
    let mut frac = undominated(frac, |x| {
        ([x.need.milli as u64, x.need.cpu, x.need.mem], x.value)
    });
    frac.sort_by(|a, b| {
        (b.value / b.need.milli as f64)
            .total_cmp(&(a.value / a.need.milli as f64))
            .then(a.item.cmp(&b.item))
    });
    let mut s = Search {
        frac: &frac,
        reach: Reach::of(
            &frac,
            |x| x.need.milli,
            |x| x.need.cpu,
            |x| x.need.mem,
            |x| x.value,
        ),
        best: 0.0,
        best_counts: Vec::new(),
        counts: Vec::new(),
        budget: BUDGET,
    };
    let (cpu, mem) = (shape.cpu.unwrap_or(u64::MAX), shape.mem.unwrap_or(u64::MAX));
    for chosen in whole_choices(&whole, gpus) {
        let taken: u32 = chosen.iter().map(|x| x.need.gpus).sum();
        let c: u64 = chosen.iter().map(|x| x.need.cpu).sum();
        let m: u64 = chosen.iter().map(|x| x.need.mem).sum();
        if c > cpu || m > mem {
            continue;
        }
        let v: f64 = chosen.iter().map(|x| x.value).sum();
        s.counts = chosen.iter().map(|x| (x.item, 0u8, 1u32)).collect();
        let free = (gpus - taken) as usize;
        s.fill(
            0,
            [1000 * (free >= 1) as u32, 1000 * (free >= 2) as u32],
            cpu - c,
            mem - m,
            v,
        );
    }
    let exact = s.budget > 0;
    let mut best = (s.best, s.best_counts);
    let bound = if exact {
        best.0
    } else {
        // Past its budget: the CPU-bucketed dynamic program bounds every pattern (and
        // may find a better one); so does the Lagrangian relaxation of CPU and memory.
        let grid = Grid::new(shape, &whole, &frac, s.reach.unit);
        let (lagrangian, _) = super::pricing::lagrangian(shape, items, vals, need);
        if let Some((v, counts)) = grid
            .best(false)
            .filter(|(v, c)| *v > best.0 + 1e-12 && shape.mem.is_none_or(|x| mem_of(c, need) <= x))
        {
            best = (v, counts);
        }
        grid.best(true)
            .map_or(lagrangian, |(b, _)| b.min(lagrangian))
    };
    let pattern = lay_out(shape, &best.1, need);
    let value = if pattern.is_some() { best.0 } else { 0.0 };
    Priced {
        pattern,
        value,
        bound: bound.max(value),
    }
}

/// Host memory the chosen items take.
fn mem_of(counts: &[(Item, u8, u32)], need: &impl Fn(Item) -> Need) -> u64 {
    counts
        .iter()
        .map(|(i, _, k)| need(*i).mem * *k as u64)
        .sum()
}

/// A node's items as the searches write them: (item, the GPU (0 or 1) a fraction is on, count).
type Counts = Vec<(Item, u8, u32)>;

/// CPU buckets per node in [`Grid`].
const BUCKETS: u64 = 100;

/// The node as a grid of GPU share (in `unit` thousandths) by CPU (in buckets of the
/// node's CPU): the best fill of one GPU for each share and CPU budget, an unbounded
/// knapsack in two dimensions, memory left out. With each replica's CPU rounded down
/// to buckets it bounds every fill (and so every node); rounded up, its fills keep to
/// the node's CPU.
struct Grid<'a> {
    whole: &'a [It],
    frac: &'a [It],
    unit: u32,
    gpus: u32,
    /// CPU per bucket (1/1000 cores), and the node's buckets.
    bucket: u64,
    cap: usize,
}

impl<'a> Grid<'a> {
    fn new(shape: &NodeShape, whole: &'a [It], frac: &'a [It], unit: u32) -> Grid<'a> {
        let cpu = shape.cpu.unwrap_or(0);
        let bucket = (cpu / BUCKETS).max(1);
        Grid {
            whole,
            frac,
            unit,
            gpus: shape.gpus(),
            bucket,
            cap: if shape.cpu.is_some() {
                (cpu / bucket) as usize
            } else {
                0
            },
        }
    }

    /// A replica's CPU in buckets (rounded down for the bound, up for a column).
    fn cpu(&self, cpu: u64, down: bool) -> usize {
        if self.cap == 0 {
            0
        } else if down {
            (cpu / self.bucket) as usize
        } else {
            cpu.div_ceil(self.bucket) as usize
        }
    }

    /// The best node (value, counts as the search writes them) in this grid; `down`:
    /// CPU rounded down (a bound), else up (a node that keeps to its CPU).
    fn best(&self, down: bool) -> Option<(f64, Counts)> {
        let shares = (1000 / self.unit) as usize;
        let cols = self.cap + 1;
        // f[s][c]: best value of one GPU's fractions within share s and CPU c, and the
        // last item taken (usize::MAX: none; the value carries from s-1 or c-1).
        let mut f = vec![(0.0f64, usize::MAX); (shares + 1) * cols];
        for sh in 0..=shares {
            for c in 0..cols {
                let mut b = (0.0, usize::MAX);
                if sh > 0 && f[(sh - 1) * cols + c].0 > b.0 {
                    b = (f[(sh - 1) * cols + c].0, usize::MAX - 1);
                }
                if c > 0 && f[sh * cols + c - 1].0 > b.0 {
                    b = (f[sh * cols + c - 1].0, usize::MAX - 2);
                }
                for (k, x) in self.frac.iter().enumerate() {
                    let (s1, c1) = (
                        (x.need.milli / self.unit) as usize,
                        self.cpu(x.need.cpu, down),
                    );
                    if s1 <= sh && c1 <= c {
                        let v = f[(sh - s1) * cols + c - c1].0 + x.value;
                        if v > b.0 + 1e-12 {
                            b = (v, k);
                        }
                    }
                }
                f[sh * cols + c] = b;
            }
        }
        let fill = |c: usize| f[shares * cols + c].0;
        // The node: whole items (none, one, a pair of one-GPU items), the rest in fills.
        let mut best: Option<(f64, Vec<It>, Vec<usize>)> = None;
        for chosen in whole_choices(self.whole, self.gpus) {
            let used: u32 = chosen.iter().map(|x| x.need.gpus).sum();
            let c0: usize = chosen.iter().map(|x| self.cpu(x.need.cpu, down)).sum();
            if c0 > self.cap && self.cap > 0 || (self.cap == 0 && c0 > 0) {
                continue;
            }
            let v0: f64 = chosen.iter().map(|x| x.value).sum();
            let room = self.cap - c0.min(self.cap);
            let (v, split) = match self.gpus - used {
                0 => (0.0, vec![]),
                1 => (fill(room), vec![room]),
                _ => (0..=room)
                    .map(|a| (fill(a) + fill(room - a), vec![a, room - a]))
                    .fold(
                        (0.0, vec![room, 0]),
                        |b, x| if x.0 > b.0 + 1e-12 { x } else { b },
                    ),
            };
            if best.as_ref().is_none_or(|b| v0 + v > b.0 + 1e-12) {
                best = Some((v0 + v, chosen, split));
            }
        }
        let (value, chosen, split) = best?;
        let mut counts: Vec<(Item, u8, u32)> = chosen.iter().map(|x| (x.item, 0, 1)).collect();
        for (gpu, c) in split.into_iter().enumerate() {
            let (mut sh, mut c) = (shares, c);
            while sh > 0 || c > 0 {
                let (_, k) = f[sh * cols + c];
                if k == usize::MAX {
                    break;
                } else if k == usize::MAX - 1 {
                    sh -= 1;
                } else if k == usize::MAX - 2 {
                    c -= 1;
                } else {
                    let x = self.frac[k];
                    counts.push((x.item, gpu as u8, 1));
                    sh -= (x.need.milli / self.unit) as usize;
                    c -= self.cpu(x.need.cpu, down);
                }
            }
        }
        Some((value, counts))
    }
}

/// The whole-GPU choices of a node of `gpus` GPUs: none, each item alone, and (two
/// GPUs) each pair of one-GPU items.
fn whole_choices(whole: &[It], gpus: u32) -> Vec<Vec<It>> {
    let mut out = vec![Vec::new()];
    for (a, x) in whole.iter().enumerate() {
        out.push(vec![*x]);
        if gpus == 2 && x.need.gpus == 1 {
            for y in &whole[a..] {
                if y.need.gpus == 1 {
                    out.push(vec![*x, *y]);
                }
            }
        }
    }
    out
}

/// `ub[c]`: the best value of GPU shares adding up to at most `c` units of `unit`
/// thousandths (an unbounded knapsack, CPU and memory left out); `item` gives each
/// item's share in thousandths and its value. Used by both exact fill searches (the
/// 1-2 GPU patterns here and the per-GPU fills of `relax`).
pub(super) fn share_table<T>(items: &[T], unit: u32, item: impl Fn(&T) -> (u32, f64)) -> Vec<f64> {
    let cap = (1000 / unit.max(1)) as usize;
    let mut best = vec![0.0f64; cap + 1];
    for c in 1..=cap {
        best[c] = best[c - 1];
        for x in items {
            let (milli, value) = item(x);
            let s = (milli / unit) as usize;
            if s <= c && best[c - s] + value > best[c] + 1e-12 {
                best[c] = best[c - s] + value;
            }
        }
    }
    best
}

/// The most value per unit of one resource (`amount`: the item's use of it, `value` its
/// value) of any item; infinite when an item of value uses none. A bound on what that
/// resource's remainder can add to a search.
pub(super) fn best_ratio<T>(
    items: &[T],
    amount: impl Fn(&T) -> u64,
    value: impl Fn(&T) -> f64,
) -> f64 {
    items
        .iter()
        .map(|x| match amount(x) {
            0 => f64::INFINITY,
            r => value(x) / r as f64,
        })
        .fold(0.0, f64::max)
}

/// What the rest of an exact fill search can add at most, the bound both searches (the
/// 1-2 GPU patterns here and the per-GPU fills of `relax`) prune with: the share table
/// ([`share_table`]) on each GPU's room, capped by the best value per unit of CPU and of
/// memory times what is left of each.
pub(super) struct Reach {
    /// The share table, per `unit` thousandths of a GPU.
    pub ub: Vec<f64>,
    /// The greatest common divisor of the items' shares and 1000.
    pub unit: u32,
    per_cpu: f64,
    per_mem: f64,
}

impl Reach {
    /// The bound of `items`: `milli` gives an item's GPU share, `cpu` and `mem` its
    /// use of the node's CPU and memory, `value` its value.
    pub(super) fn of<T>(
        items: &[T],
        milli: impl Fn(&T) -> u32,
        cpu: impl Fn(&T) -> u64,
        mem: impl Fn(&T) -> u64,
        value: impl Fn(&T) -> f64,
    ) -> Reach {
        let unit = items.iter().fold(1000u32, |a, x| gcd(a, milli(x)));
        Reach {
            ub: share_table(items, unit, |x| (milli(x), value(x))),
            unit,
            per_cpu: best_ratio(items, cpu, &value),
            per_mem: best_ratio(items, mem, &value),
        }
    }

    /// The share table's best for `share` thousandths of one GPU.
    pub(super) fn share(&self, share: u32) -> f64 {
        self.ub[(share / self.unit) as usize]
    }

    /// At most what GPUs with `rooms` thousandths free and `cpu`, `mem` left can add.
    pub(super) fn at(&self, rooms: &[u32], cpu: u64, mem: u64) -> f64 {
        let by_share: f64 = rooms.iter().map(|r| self.share(*r)).sum();
        by_share
            .min(self.per_cpu * cpu as f64)
            .min(self.per_mem * mem as f64)
    }
}

/// The branch and bound: `counts` holds (item, GPU 0/1 for a fraction, count); whole
/// items are entered with GPU 0 and laid out before the fractions.
struct Search<'a> {
    frac: &'a [It],
    reach: Reach,
    best: f64,
    best_counts: Vec<(Item, u8, u32)>,
    counts: Vec<(Item, u8, u32)>,
    budget: u32,
}

impl Search<'_> {
    fn fill(&mut self, i: usize, room: [u32; 2], cpu: u64, mem: u64, value: f64) {
        if value > self.best + 1e-12 {
            self.best = value;
            self.best_counts = self.counts.clone();
        }
        if i == self.frac.len() || self.budget == 0 {
            return;
        }
        if value + self.reach.at(&room, cpu, mem) <= self.best + 1e-12 {
            return;
        }
        self.budget -= 1;
        let x = self.frac[i];
        let by = |cap: u64, per: u64| cap.checked_div(per).map_or(u32::MAX, |k| k as u32);
        let most = by(cpu, x.need.cpu).min(by(mem, x.need.mem));
        let m0 = (room[0] / x.need.milli).min(most);
        for k0 in (0..=m0).rev() {
            // Two GPUs with equal room are alike: the first takes at least as many.
            let twin = room[0] == room[1];
            let m1 = (room[1] / x.need.milli).min(most - k0);
            let m1 = if twin { m1.min(k0) } else { m1 };
            for k1 in (0..=m1).rev() {
                let k = k0 + k1;
                let before = self.counts.len();
                if k0 > 0 {
                    self.counts.push((x.item, 0, k0));
                }
                if k1 > 0 {
                    self.counts.push((x.item, 1, k1));
                }
                self.fill(
                    i + 1,
                    [room[0] - k0 * x.need.milli, room[1] - k1 * x.need.milli],
                    cpu - k as u64 * x.need.cpu,
                    mem - k as u64 * x.need.mem,
                    value + k as f64 * x.value,
                );
                self.counts.truncate(before);
            }
        }
    }
}

/// The pattern of the search's answer: whole items on the first free positions, each
/// GPU's fractions on one position of its own, checked against the node's sharing.
fn lay_out(
    shape: &NodeShape,
    counts: &[(Item, u8, u32)],
    need: &impl Fn(Item) -> Need,
) -> Option<Pattern> {
    if counts.is_empty() {
        return None;
    }
    let mut slots = Slots::all(shape);
    let mut free: Vec<u16> = slots.free.iter().flatten().copied().collect();
    free.sort_unstable();
    let mut places: Vec<(Item, Vec<u16>)> = Vec::new();
    // Whole items first, then the fractions of GPU 0 and GPU 1 on the positions left.
    for (item, _, k) in counts.iter().filter(|(i, _, _)| need(*i).milli == 0) {
        for _ in 0..*k {
            let n = need(*item).gpus as usize;
            if free.len() < n {
                return None;
            }
            let at: Vec<u16> = free.drain(..n).collect();
            if !slots.take(&at) {
                return None;
            }
            places.push((*item, at));
        }
    }
    for gpu in 0..2u8 {
        let on: Vec<&(Item, u8, u32)> = counts
            .iter()
            .filter(|(i, g, _)| need(*i).milli > 0 && *g == gpu)
            .collect();
        if on.is_empty() {
            continue;
        }
        let at = *free.first()?;
        free.remove(0);
        for (item, _, k) in on {
            for _ in 0..*k {
                if !slots.add_fraction(at, &need(*item)) {
                    return None;
                }
                places.push((*item, vec![at]));
            }
        }
    }
    places.sort_by_key(|a| a.0);
    let mut items: Vec<(Item, u32)> = Vec::new();
    for (i, _) in &places {
        match items.last_mut() {
            Some((j, k)) if j == i => *k += 1,
            _ => items.push((*i, 1)),
        }
    }
    Some(Pattern {
        items,
        places: places.into_iter().map(|(_, p)| p).collect(),
    })
}
