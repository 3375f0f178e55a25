//! What a pool's GPUs are used for: model vocabulary shared by the solvers, the
//! placement and the renderers.

use serde::{Deserialize, Serialize};

/// What a pool's GPUs are used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolMode {
    /// Whole GPUs: training gangs and whole-GPU inference.
    WholeGpu,
    Mig,
    TimeSlice,
    Mps,
}

impl PoolMode {
    pub const ALL: [PoolMode; 4] = [
        PoolMode::WholeGpu,
        PoolMode::Mig,
        PoolMode::TimeSlice,
        PoolMode::Mps,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PoolMode::WholeGpu => "whole-gpu",
            PoolMode::Mig => "mig",
            PoolMode::TimeSlice => "time-slice",
            PoolMode::Mps => "mps",
        }
    }

    /// The mode of a shared-GPU class: MPS or time-slicing.
    pub fn shared(mps: bool) -> PoolMode {
        if mps {
            PoolMode::Mps
        } else {
            PoolMode::TimeSlice
        }
    }

    /// The mode of a `pool` declaration (`training` pools hold whole GPUs).
    pub fn from_decl(s: &str) -> Option<PoolMode> {
        Some(match s {
            "training" | "whole-gpu" => PoolMode::WholeGpu,
            "mig" => PoolMode::Mig,
            "time-slice" => PoolMode::TimeSlice,
            "mps" => PoolMode::Mps,
            _ => return None,
        })
    }
}
