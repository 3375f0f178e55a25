//! Arguments of the state backends: `--backend`, `--workspace`, `--lock-timeout`, and the
//! `state` and `force-unlock` subcommands.

use super::Format;
use clap::{Subcommand, ValueEnum};
use std::path::PathBuf;

/// A state backend named on the command line.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// The state file (`--state`, default `.gpuplan/state.json`) and its lock file.
    Local,
    /// PostgreSQL: the connection from GPUPLAN_PG_DSN, or PGHOST, PGPORT, PGUSER,
    /// PGPASSWORD and PGDATABASE.
    Pg,
}

/// Where the state is: `--backend` and `--workspace` win over the configuration's
/// `backend` node; neither: the local file at `--state`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BackendArgs {
    /// The state backend (default: the configuration's `backend`, else `local`).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// The workspace in a shared backend: one state and one lock each (default: the
    /// configuration's, else `default`).
    #[arg(long, value_name = "NAME")]
    pub workspace: Option<String>,
}

/// Which state a `state` or `force-unlock` command works on.
#[derive(clap::Args, Debug, Clone)]
pub struct StoreArgs {
    /// A configuration (KDL files or folders) whose `backend` node names the backend.
    #[arg(long = "config", value_name = "PATH")]
    pub config: Vec<PathBuf>,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The local state file.
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
}

/// `gpuplan state ...`.
#[derive(Subcommand, Debug)]
pub enum StateKind {
    /// Every state version the backend keeps, newest first, and the lock's holder.
    List {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// One state version (default: the current one): serial, lineage, plan, files.
    Show {
        /// The serial of the version to show.
        serial: Option<u64>,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Print a state version's JSON exactly as stored (default: the current one).
    Pull {
        /// The serial of the version to print.
        serial: Option<u64>,
        #[command(flatten)]
        store: StoreArgs,
        /// Write it to this file instead of stdout.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Write a state file into the backend (migration from a local state): refused when
    /// the backend's state has another lineage or a serial not older than the file's.
    Push {
        /// The state file to write.
        file: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
        /// Wait this long for the lock: `30s`, `5m` (default 0: one attempt).
        #[arg(long, default_value = "0s", value_parser = parse_lock_timeout)]
        lock_timeout: f64,
    },
}

/// `gpuplan force-unlock ID`.
#[derive(clap::Args, Debug, Clone)]
pub struct ForceUnlockArgs {
    /// The lock's ID, as GP921 or `gpuplan state list` shows it.
    pub id: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `--lock-timeout`: `0`, `30s`, `5m`, or plain seconds; 0 is one attempt.
pub(crate) fn parse_lock_timeout(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(format!(
                "`{s}`: the lock timeout must be 0 or a positive duration"
            ))
        };
    }
    Ok(crate::units::parse_duration(s)?.0 as f64)
}
