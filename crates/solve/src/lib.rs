//! The planner of gpuplan: the exact ILP and the greedy baseline, the placement they give and its independent checker.
//!
//! One crate of the workspace (docs/architecture.md): it uses only the crates below it,
//! whose modules it re-exports under their own names so that `crate::model` means the
//! same module in every crate.

pub use gpuplan_core::{
    catalog, codes, diag, fmt, json, limits, load, model, names, par, source, spec, suggest, units,
    validate,
};

pub mod placement;
pub mod solve;
