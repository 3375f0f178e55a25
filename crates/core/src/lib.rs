//! The base of gpuplan: files and spans, the one diagnostic type and the registry of codes, names and units, the GPU catalog, the KDL language, the resolved model and the validation rules.
//!
//! One crate of the workspace (docs/architecture.md): it uses only the crates below it,
//! whose modules it re-exports under their own names so that `crate::model` means the
//! same module in every crate.

pub mod catalog;
pub mod codes;
pub mod diag;
pub mod fmt;
pub mod json;
pub mod limits;
pub mod load;
pub mod model;
pub mod names;
pub mod par;
pub mod source;
pub mod spec;
pub mod suggest;
pub mod units;
pub mod validate;
