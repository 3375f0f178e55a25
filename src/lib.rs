//! gpuplan: Terraform for GPU clusters.
//!
//! # Architecture
//!
//! Data flows one way; only `commands/`, `load` and `discover::nvml` touch the outside world:
//!
//! ```text
//! KDL files --load--> SourceMap --spec--> spanned spec (syntax, shapes, units)
//!           --model--> typed Cluster (ids, units, topology graph) --validate--> Diagnostics
//! Cluster --solve--> Assignment --placement::build--> Placement --check, view--> plan
//! NVML / nvidia-smi outputs --discover--> Inventory --discover::kdl--> KDL (or JSON)
//! Cluster + Placement --render--> scheduler files (k8s, volcano, kueue, slurm, mig)
//! files + Placement + State --plan::build--> Plan (changes, disruption, rollout)
//! Plan --apply--> output folder + State;  observations + layouts --drift--> Report
//! ```
//!
//! | module | owns | reads from disk |
//! |---|---|---|
//! | [`source`] | files, spans | - |
//! | [`diag`] | the one diagnostic type, human + JSON rendering | - |
//! | [`load`] | expanding paths into `*.kdl` files | the user's files and folders |
//! | [`spec`] | KDL document -> spanned spec values, unknown names, units | - |
//! | [`units`] | typed quantities: bytes, durations, bandwidth, ranges | - |
//! | [`catalog`] | built-in GPU models, MIG profiles, placement rules | - |
//! | [`model`] | the resolved cluster: nodes, GPUs, fabric, teams, workloads, topology graph | - |
//! | [`validate`] | the rules (`GP0xx`), one per file, with their docs | - |
//! | [`solve`] | model -> `Assignment` (ILP or greedy first-fit), MIG right-sizing | - |
//! | [`placement`] | `Assignment` -> `Placement` value, reasons, independent checker, views | - |
//! | [`render`] | Placement + Cluster -> files per target, through the templates in `templates/` (embedded) | - |
//! | [`generate`] | synthetic clusters and demand as KDL text (pure, seeded) | - |
//! | [`discover`] | NVML (behind the `GpuSource` trait) and `nvidia-smi` importers -> inventory, KDL, JSON | NVML at run time (`discover` only) |
//! | [`state`] | the state file's format, digests, parsing | - |
//! | [`plan`] | artifacts + placement vs state -> `Plan` (changes, disruption, rollout), views | - |
//! | [`apply`] | state lock, stale-plan check, atomic writes of the output folder and state | the state; writes the output folder |
//! | [`drift`] | observations (`discover` JSON, `mig -lgi`) vs declared and applied layouts | - |
//! | [`commands`] | one file per subcommand: settings -> operation -> view -> exit code | via `load` |

pub mod apply;
pub mod catalog;
pub mod cli;
pub mod codes;
pub mod commands;
pub mod diag;
pub mod discover;
pub mod drift;
pub mod generate;
pub mod load;
pub mod model;
pub mod names;
pub mod pipeline;
pub mod placement;
pub mod plan;
pub mod render;
pub mod solve;
pub mod source;
pub mod spec;
pub mod state;
pub mod suggest;
pub mod units;
pub mod validate;
