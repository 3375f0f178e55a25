//! The operations of gpuplan: the planning pipeline, apply and the state backends, saved plans, NVML and importers, drift and generated clusters.
//!
//! One crate of the workspace (docs/architecture.md): it uses only the crates below it,
//! whose modules it re-exports under their own names so that `crate::model` means the
//! same module in every crate.

pub use gpuplan_core::{
    catalog, codes, diag, fmt, json, limits, load, model, names, par, source, spec, suggest, units,
    validate,
};
pub use gpuplan_render::{plan, realize, render, report, state};
pub use gpuplan_solve::{placement, solve};

pub mod apply;
pub mod backend;
pub mod discover;
pub mod drift;
pub mod generate;
pub mod import;
pub mod pipeline;
pub mod saved;
