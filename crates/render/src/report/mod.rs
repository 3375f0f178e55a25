//! Reports computed from a placement (`gpuplan report ...`).

pub mod chargeback;
pub mod graph;
pub mod html;
