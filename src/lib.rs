//! gpuplan: Terraform for GPU clusters.
//!
//! # Architecture
//!
//! Layers, lowest first; a module uses only modules above it in this table (enforced
//! by the crates of the workspace, `crates/core` <- `crates/solve` <- `crates/render` <-
//! `crates/io` <- this one, and inside each by `tests/it/architecture.rs`;
//! docs/architecture.md says where new work goes). Only
//! `load` (the user's files), `apply` (the output folder and the state), `state`'s
//! readers, `discover::nvml` (NVML at run time) and `commands` touch the outside world;
//! only `commands` prints or reads the environment.
//!
//! ```text
//! KDL files --load--> SourceMap --spec--> spanned spec --model--> Cluster --validate--> Diagnostics
//! Cluster (+ previous Placement) --solve--> Assignment --placement::build--> Placement
//! Placement --placement::check--> Violations;  Cluster + Placement --render--> files
//! files + Cluster + Placement --realize::check--> Report (is the plan carried out?)
//! files + Placement + State --plan::build--> Plan --apply--> output folder + State
//! pipeline: check() = validate, solve, build, check; plan() = check, render, compare
//! NVML --discover--> Inventory;  cluster files, nvidia-smi outputs --import--> Document --import::doc::kdl--> KDL
//! observations --drift--> Report
//! ```
//!
//! | layer | module | owns |
//! |---|---|---|
//! | base | [`source`], [`diag`], [`codes`], [`names`], [`units`], [`suggest`], [`json`], [`par`], [`limits`], [`load`] | files and spans, the one diagnostic type, the registry of codes, name rules, typed quantities, hints, JSON text, work on the machine's cores, bounds on a run's work, reading input files |
//! | facts | [`catalog`] | built-in GPU models, MIG profiles, placement rules |
//! | input | [`spec`] | KDL document -> spanned spec values |
//! | model | [`model`] | the resolved cluster, pool modes, sizing, current MIG layouts, topology graph |
//! | rules | [`validate`] | the rules (`GP0xx`), one file each |
//! | solver | [`solve`] | model -> `Assignment` (ILP, greedy), the previous placement's value |
//! | result | [`placement`] | `Assignment` -> `Placement`, reasons, the independent checker, previous/moves, views |
//! | verification | [`realize`] | rendered files + Placement + Cluster -> `Report`: do the files make the schedulers carry out the plan (shares nothing with `render`) |
//! | output | [`render`] | Placement + Cluster -> files per target (templates in `templates/`) |
//! | change | [`state`], [`plan`] | the state file; artifacts + placement vs state -> `Plan` |
//! | operation | [`pipeline`] | the one planning operation: settings in, plan, timings and diagnostics out |
//! | effects | [`apply`], [`backend`], [`saved`], [`discover`], [`generate`], [`import`], [`drift`] | atomic writes and the lock; where the state lives and its lock (local file, PostgreSQL); reopening a saved plan; NVML discovery; synthetic clusters; every importer (`kubectl get nodes`, Slurm, `nvidia-smi`, openb) through one document model and one KDL writer; drift |
//! | interface | [`cli`], [`commands`] | clap types and value parsers; one file per subcommand: arguments -> operation -> print -> exit code |

pub use gpuplan_core::{
    catalog, codes, diag, fmt, json, limits, load, model, names, par, source, spec, suggest, units,
    validate,
};
pub use gpuplan_io::{apply, backend, discover, drift, generate, import, pipeline, saved};
pub use gpuplan_render::{plan, realize, render, report, state};
pub use gpuplan_solve::{placement, solve};

pub mod cli;
pub mod commands;
