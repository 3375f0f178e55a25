//! What gpuplan writes: scheduler files from a placement, the realizability checker, the state, the plan and its reports.
//!
//! One crate of the workspace (docs/architecture.md): it uses only the crates below it,
//! whose modules it re-exports under their own names so that `crate::model` means the
//! same module in every crate.

pub use gpuplan_core::{
    catalog, codes, diag, fmt, json, limits, load, model, names, par, source, spec, suggest, units,
    validate,
};
pub use gpuplan_solve::{placement, solve};

pub mod plan;
pub mod realize;
pub mod render;
pub mod report;
pub mod state;
