//! A small linear/integer program over the raw HiGHS C API.
//!
//! The column-generation master needs what neither good_lp nor the `highs` crate
//! exposes: adding columns to a solved LP and re-solving from its basis, reading row
//! duals, and switching the same model to integer columns for the final solve. [`Lp`]
//! holds the model as plain data (so it can be rebuilt and inspected); [`Live`] is one
//! HiGHS instance built from it, kept alive between column-generation rounds.
//!
//! Always a minimisation: callers negate what they maximise.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A column's index in the program.
pub(crate) type ColId = usize;
/// A row's index in the program.
pub(crate) type RowId = usize;

#[derive(Clone, Debug, Default)]
pub(crate) struct Lp {
    pub cost: Vec<f64>,
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    pub integer: Vec<bool>,
    /// Column-wise coefficients: (row, value).
    pub entries: Vec<Vec<(RowId, f64)>>,
    pub row_lo: Vec<f64>,
    pub row_hi: Vec<f64>,
    /// HiGHS settings every instance of this program gets.
    pub highs: crate::solve::Highs,
    /// When set, every instance of this program stops once the flag is raised (work done
    /// ahead that turned out not to be needed, see `super::ahead`).
    pub stop: Option<Arc<AtomicBool>>,
}

impl Lp {
    pub(crate) fn col(&mut self, cost: f64, lo: f64, hi: f64, integer: bool) -> ColId {
        self.cost.push(cost);
        self.lo.push(lo);
        self.hi.push(hi);
        self.integer.push(integer);
        self.entries.push(Vec::new());
        self.cost.len() - 1
    }

    /// A row `lo <= sum <= hi` (use infinities for one-sided rows); coefficients are
    /// set with [`Lp::set`].
    pub(crate) fn row(&mut self, lo: f64, hi: f64) -> RowId {
        self.row_lo.push(lo);
        self.row_hi.push(hi);
        self.row_lo.len() - 1
    }

    /// Adds `value` to the coefficient of `col` in `row`.
    pub(crate) fn set(&mut self, row: RowId, col: ColId, value: f64) {
        if value == 0.0 {
            return;
        }
        let e = &mut self.entries[col];
        match e.iter_mut().find(|(r, _)| *r == row) {
            Some(x) => x.1 += value,
            None => e.push((row, value)),
        }
    }

    pub(crate) fn cols(&self) -> usize {
        self.cost.len()
    }

    pub(crate) fn rows(&self) -> usize {
        self.row_lo.len()
    }

    /// The row activities of `x`.
    pub(crate) fn activity(&self, x: &[f64]) -> Vec<f64> {
        let mut act = vec![0.0; self.rows()];
        for (j, e) in self.entries.iter().enumerate() {
            let v = x.get(j).copied().unwrap_or(0.0);
            if v != 0.0 {
                for &(r, a) in e {
                    act[r] += a * v;
                }
            }
        }
        act
    }

    /// Whether `x` satisfies every bound and row within `tol`.
    pub(crate) fn feasible(&self, x: &[f64], tol: f64) -> bool {
        x.len() == self.cols()
            && x.iter()
                .enumerate()
                .all(|(j, v)| *v >= self.lo[j] - tol && *v <= self.hi[j] + tol)
            && self
                .activity(x)
                .iter()
                .enumerate()
                .all(|(r, a)| *a >= self.row_lo[r] - tol && *a <= self.row_hi[r] + tol)
    }

    pub(crate) fn objective(&self, x: &[f64]) -> f64 {
        self.cost.iter().zip(x).map(|(c, v)| c * v).sum()
    }

    /// `x` with its integer columns rounded (HiGHS returns them within its tolerance),
    /// the others as they are.
    pub(crate) fn round_integers(&self, x: &[f64]) -> Vec<f64> {
        x.iter()
            .enumerate()
            .map(|(j, v)| {
                if self.integer.get(j).copied().unwrap_or(false) {
                    v.round()
                } else {
                    *v
                }
            })
            .collect()
    }

    /// Whether `other` is the same program up to the objective (which each stage sets
    /// from the master): the same columns with their bounds, integrality and
    /// coefficients, the same rows, the same HiGHS settings.
    pub(crate) fn same_program(&self, other: &Lp) -> bool {
        self.lo == other.lo
            && self.hi == other.hi
            && self.integer == other.integer
            && self.entries == other.entries
            && self.row_lo == other.row_lo
            && self.row_hi == other.row_hi
            && self.highs == other.highs
    }
}

/// How a solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Optimal,
    /// Stopped by a limit with a feasible solution.
    Limit,
    Infeasible,
    /// Anything else (unbounded, error, a limit without a solution).
    Failed,
}

/// A solve's result.
#[derive(Clone, Debug)]
pub(crate) struct Solution {
    pub status: Status,
    pub x: Vec<f64>,
    /// Row duals (LP solves only): the reduced cost of a column is
    /// `cost - sum(dual[r] * a[r])`.
    pub duals: Vec<f64>,
    pub objective: f64,
    /// A valid lower bound on the optimum (the MIP dual bound; the objective for an
    /// optimal LP).
    pub bound: f64,
}

/// One HiGHS instance.
pub(crate) struct Live {
    ptr: *mut c_void,
    cols: usize,
    rows: usize,
    /// The stop flag HiGHS's interrupt callbacks read (kept alive while they may).
    stop: Option<Arc<AtomicBool>>,
}

/// HiGHS's interrupt callback: asks the solve to stop once the flag it was given is
/// raised.
///
/// # Safety
/// `user` is the `AtomicBool` of the [`Live`] the callback was set on (alive as long as
/// the instance); `data_in` is HiGHS's input block or null.
unsafe extern "C" fn interrupt(
    _kind: c_int,
    _message: *const c_char,
    _out: *const highs_sys::HighsCallbackDataOut,
    data_in: *mut highs_sys::HighsCallbackDataIn,
    user: *mut c_void,
) {
    if data_in.is_null() || user.is_null() {
        return;
    }
    // SAFETY: see the function's contract.
    let flag = unsafe { &*(user as *const AtomicBool) };
    if flag.load(Ordering::Relaxed) {
        // SAFETY: non-null, HiGHS's own block for this call.
        unsafe { (*data_in).user_interrupt = 1 };
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from Highs_create and is destroyed once.
        unsafe { highs_sys::Highs_destroy(self.ptr) }
    }
}

const INF: f64 = f64::INFINITY;

fn clamp_inf(v: f64) -> f64 {
    if v >= 1e30 {
        INF
    } else if v <= -1e30 {
        -INF
    } else {
        v
    }
}

impl Live {
    /// A HiGHS instance holding `lp` (integrality as `lp.integer` when `mip`, else all
    /// continuous), quiet, one thread.
    pub(crate) fn new(lp: &Lp, mip: bool) -> Live {
        // SAFETY: Highs_create returns a fresh instance owned by `Live`.
        let ptr = unsafe { highs_sys::Highs_create() };
        let mut live = Live {
            ptr,
            cols: 0,
            rows: 0,
            stop: lp.stop.clone(),
        };
        if let Some(flag) = &live.stop {
            // SAFETY: valid instance; the flag outlives it (held by `live`).
            unsafe {
                highs_sys::Highs_setCallback(
                    ptr,
                    Some(interrupt),
                    Arc::as_ptr(flag) as *mut c_void,
                );
                highs_sys::Highs_startCallback(ptr, highs_sys::kHighsCallbackMipInterrupt);
                highs_sys::Highs_startCallback(ptr, highs_sys::kHighsCallbackSimplexInterrupt);
            }
        }
        let log = mip && lp.highs.log;
        live.option_bool("output_flag", log);
        live.option_bool("log_to_console", log);
        live.option_int("threads", 1);
        live.add_rows(&lp.row_lo, &lp.row_hi);
        live.add_cols(lp);
        if mip {
            live.integrality(&lp.integer);
            for (k, v) in &lp.highs.options {
                let (k, v) = (k.as_str(), v.as_str());
                if let Ok(i) = v.parse::<i32>() {
                    live.option_int(k, i);
                } else if let Ok(f) = v.parse::<f64>() {
                    live.option_f64(k, f);
                } else if let Ok(b) = v.parse::<bool>() {
                    live.option_bool(k, b);
                } else {
                    live.option_str(k, v);
                }
            }
        }
        live
    }

    pub(crate) fn option_bool(&mut self, name: &str, v: bool) {
        let n = CString::new(name).expect("option name");
        // SAFETY: valid instance and NUL-terminated name.
        unsafe { highs_sys::Highs_setBoolOptionValue(self.ptr, n.as_ptr(), v as i32) };
    }

    pub(crate) fn option_int(&mut self, name: &str, v: i32) {
        let n = CString::new(name).expect("option name");
        // SAFETY: as above.
        unsafe { highs_sys::Highs_setIntOptionValue(self.ptr, n.as_ptr(), v as _) };
    }

    pub(crate) fn option_f64(&mut self, name: &str, v: f64) {
        let n = CString::new(name).expect("option name");
        // SAFETY: as above.
        unsafe { highs_sys::Highs_setDoubleOptionValue(self.ptr, n.as_ptr(), v) };
    }

    pub(crate) fn option_str(&mut self, name: &str, v: &str) {
        let n = CString::new(name).expect("option name");
        let v = CString::new(v).expect("option value");
        // SAFETY: as above.
        unsafe { highs_sys::Highs_setStringOptionValue(self.ptr, n.as_ptr(), v.as_ptr()) };
    }

    fn add_rows(&mut self, lo: &[f64], hi: &[f64]) {
        if lo.is_empty() {
            return;
        }
        let lo: Vec<f64> = lo.iter().map(|v| clamp_inf(*v)).collect();
        let hi: Vec<f64> = hi.iter().map(|v| clamp_inf(*v)).collect();
        let starts = vec![0 as highs_sys::HighsInt; lo.len()];
        // SAFETY: arrays of the declared lengths; no coefficients.
        unsafe {
            highs_sys::Highs_addRows(
                self.ptr,
                lo.len() as _,
                lo.as_ptr(),
                hi.as_ptr(),
                0,
                starts.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        self.rows += lo.len();
    }

    /// Adds every column of `lp` in one call (continuous; see [`Live::integrality`]): the
    /// same program as adding them one by one, without a call per column (18,000
    /// columns at 100,000 GPUs).
    fn add_cols(&mut self, lp: &Lp) {
        let n = lp.cols();
        if n == 0 {
            return;
        }
        let nz: usize = lp.entries.iter().map(Vec::len).sum();
        let mut starts: Vec<highs_sys::HighsInt> = Vec::with_capacity(n);
        let mut index: Vec<highs_sys::HighsInt> = Vec::with_capacity(nz);
        let mut value: Vec<f64> = Vec::with_capacity(nz);
        for e in &lp.entries {
            starts.push(index.len() as _);
            index.extend(e.iter().map(|(r, _)| *r as highs_sys::HighsInt));
            value.extend(e.iter().map(|(_, v)| *v));
        }
        let lo: Vec<f64> = lp.lo.iter().map(|v| clamp_inf(*v)).collect();
        let hi: Vec<f64> = lp.hi.iter().map(|v| clamp_inf(*v)).collect();
        // SAFETY: n costs and bounds, n starts into index/value of nz entries, rows
        // exist.
        unsafe {
            highs_sys::Highs_addCols(
                self.ptr,
                n as _,
                lp.cost.as_ptr(),
                lo.as_ptr(),
                hi.as_ptr(),
                nz as _,
                starts.as_ptr(),
                index.as_ptr(),
                value.as_ptr(),
            )
        };
        self.cols += n;
    }

    /// Adds a column (continuous; see [`Live::integrality`]).
    pub(crate) fn add_col(&mut self, cost: f64, lo: f64, hi: f64, entries: &[(RowId, f64)]) {
        let idx: Vec<highs_sys::HighsInt> = entries.iter().map(|(r, _)| *r as _).collect();
        let val: Vec<f64> = entries.iter().map(|(_, v)| *v).collect();
        // SAFETY: index/value arrays of equal length, rows exist.
        unsafe {
            highs_sys::Highs_addCol(
                self.ptr,
                cost,
                clamp_inf(lo),
                clamp_inf(hi),
                idx.len() as _,
                idx.as_ptr(),
                val.as_ptr(),
            )
        };
        self.cols += 1;
    }

    /// Sets the integrality of every column (`true` = integer).
    pub(crate) fn integrality(&mut self, integer: &[bool]) {
        if integer.is_empty() {
            return;
        }
        let kinds: Vec<highs_sys::HighsInt> = integer.iter().map(|i| *i as _).collect();
        // SAFETY: one entry per column in range.
        unsafe {
            highs_sys::Highs_changeColsIntegralityByRange(
                self.ptr,
                0,
                (kinds.len() - 1) as _,
                kinds.as_ptr(),
            )
        };
    }

    /// A starting point for the MIP (a feasible integer solution speeds it up).
    pub(crate) fn start(&mut self, x: &[f64]) {
        if x.len() != self.cols {
            return;
        }
        // SAFETY: col_value has num_col entries; the other arrays may be null.
        unsafe {
            highs_sys::Highs_setSolution(
                self.ptr,
                x.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
    }

    /// Runs HiGHS; `mip` says whether integrality is set (for the bound's meaning).
    pub(crate) fn run(&mut self, mip: bool) -> Solution {
        // SAFETY: valid instance.
        unsafe { highs_sys::Highs_run(self.ptr) };
        // SAFETY: valid instance.
        let model = unsafe { highs_sys::Highs_getModelStatus(self.ptr) };
        let mut x = vec![0.0; self.cols];
        let mut col_dual = vec![0.0; self.cols];
        let mut row_value = vec![0.0; self.rows];
        let mut duals = vec![0.0; self.rows];
        // SAFETY: arrays sized to the model.
        unsafe {
            highs_sys::Highs_getSolution(
                self.ptr,
                x.as_mut_ptr(),
                col_dual.as_mut_ptr(),
                row_value.as_mut_ptr(),
                duals.as_mut_ptr(),
            )
        };
        // SAFETY: valid instance.
        let objective = unsafe { highs_sys::Highs_getObjectiveValue(self.ptr) };
        let mut primal: highs_sys::HighsInt = 0;
        let key = CString::new("primal_solution_status").expect("info name");
        // SAFETY: valid instance, NUL-terminated name, out pointer.
        unsafe { highs_sys::Highs_getIntInfoValue(self.ptr, key.as_ptr(), &mut primal) };
        let has_solution = primal == 2; // kHighsSolutionStatusFeasible
        let status = match model {
            7 => Status::Optimal,
            8 => Status::Infeasible,
            12 | 13 | 14 | 16 | 17 | 18 if has_solution => Status::Limit,
            _ => Status::Failed,
        };
        let bound = if mip {
            let mut b = objective;
            let key = CString::new("mip_dual_bound").expect("info name");
            // SAFETY: as above.
            unsafe { highs_sys::Highs_getDoubleInfoValue(self.ptr, key.as_ptr(), &mut b) };
            if b.is_finite() { b } else { f64::NEG_INFINITY }
        } else if status == Status::Optimal {
            objective
        } else {
            f64::NEG_INFINITY
        };
        Solution {
            status,
            x,
            duals,
            objective,
            bound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// min -x - y  s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0: optimum at (1.6, 1.2).
    fn tiny() -> Lp {
        let mut lp = Lp::default();
        let r1 = lp.row(-INF, 4.0);
        let r2 = lp.row(-INF, 6.0);
        let x = lp.col(-1.0, 0.0, INF, true);
        let y = lp.col(-1.0, 0.0, INF, true);
        lp.set(r1, x, 1.0);
        lp.set(r1, y, 2.0);
        lp.set(r2, x, 3.0);
        lp.set(r2, y, 1.0);
        lp
    }

    #[test]
    fn lp_duals_give_reduced_costs() {
        let lp = tiny();
        let mut live = Live::new(&lp, false);
        let s = live.run(false);
        assert_eq!(s.status, Status::Optimal);
        assert!((s.objective + 2.8).abs() < 1e-9, "{}", s.objective);
        // Basic columns have zero reduced cost: cost - sum(dual * a).
        for j in 0..2 {
            let rc = lp.cost[j]
                - lp.entries[j]
                    .iter()
                    .map(|(r, a)| s.duals[*r] * a)
                    .sum::<f64>();
            assert!(rc.abs() < 1e-9, "column {j}: {rc}");
        }
        // A new column z with cost -1.5 and a = (1, 1): reduced cost -1.5 + 0.4 + 0.2 < 0,
        // so it improves; adding it and solving again uses it.
        let rc = -1.5 - (s.duals[0] + s.duals[1]);
        assert!(rc < 0.0);
        live.add_col(-1.5, 0.0, INF, &[(0, 1.0), (1, 1.0)]);
        let s2 = live.run(false);
        assert!(s2.objective < s.objective - 1e-6);
    }

    #[test]
    fn mip_is_integer_with_a_bound() {
        let lp = tiny();
        let mut live = Live::new(&lp, true);
        let s = live.run(true);
        assert_eq!(s.status, Status::Optimal);
        assert!(s.x.iter().all(|v| (v - v.round()).abs() < 1e-9));
        assert!((s.objective + 2.0).abs() < 1e-9, "{}", s.objective);
        assert!(s.bound <= s.objective + 1e-9);
        assert!(lp.feasible(&s.x.iter().map(|v| v.round()).collect::<Vec<_>>(), 1e-9));
    }

    /// A 40-item knapsack whose root LP is fractional: not solved by presolve alone.
    fn knapsack() -> Lp {
        let mut lp = Lp::default();
        let cap = lp.row(-INF, 1000.0);
        for i in 0..40u32 {
            let w = 37.0 + f64::from((i * 53) % 97);
            let v = w + f64::from((i * 29) % 31);
            let x = lp.col(-v, 0.0, 1.0, true);
            lp.set(cap, x, w);
        }
        lp
    }

    #[test]
    fn a_raised_stop_flag_interrupts_the_solve() {
        let mut lp = knapsack();
        lp.stop = Some(Arc::new(AtomicBool::new(false)));
        assert_eq!(Live::new(&lp, true).run(true).status, Status::Optimal);
        lp.stop = Some(Arc::new(AtomicBool::new(true)));
        assert_ne!(Live::new(&lp, true).run(true).status, Status::Optimal);
    }

    #[test]
    fn a_reached_objective_target_is_a_limit_with_its_solution() {
        let lp = knapsack();
        let optimum = Live::new(&lp, true).run(true).objective;
        // A target any good solution beats (minimisation: below it): HiGHS stops there.
        let target = optimum * 0.9;
        let mut live = Live::new(&lp, true);
        live.option_f64("objective_target", target);
        let s = live.run(true);
        assert_eq!(s.status, Status::Limit);
        assert!(s.objective < target, "{} {target}", s.objective);
        let x = lp.round_integers(&s.x);
        assert!(lp.feasible(&x, 1e-9));
        assert!((lp.objective(&x) - s.objective).abs() < 1e-6);
    }
}
