//! Subcommands: one file each. Each turns settings into an operation, renders the
//! result and returns the exit code. Exit codes (docs/exit-codes.md): 0 success, 1 error
//! (or invalid input), 2 changes present (`plan --detailed-exitcode`) or drift found
//! (`drift`).

mod apply;
pub mod discover;
mod drift;
mod explain;
mod generate;
pub mod import;
mod output;
mod plan;
mod render;
mod show;
mod validate;

pub use output::Output;
pub use plan::{parse_gap, parse_time_limit};

use crate::cli::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

pub const GP900: &str = "GP900";

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let out = Output::new(cli.color, cli.quiet);
    ExitCode::from(run(cli.command, &out))
}

/// Runs one command; returns the process exit code.
pub fn run(cmd: Command, out: &Output) -> u8 {
    match cmd {
        Command::Validate { paths, format } => validate::run(&paths, format, out),
        Command::Show { paths, format } => show::run(&paths, format, out),
        Command::Explain { code } => explain::run(code.as_deref(), out),
        Command::Plan {
            paths,
            format,
            solver,
            time_limit,
            gap,
            out: file,
            state,
            detailed_exitcode,
            previous,
            no_previous,
        } => plan::run(
            &plan::Settings {
                paths,
                format,
                solver,
                time_limit,
                gap,
                out: file,
                state,
                detailed_exitcode,
                previous: match (previous, no_previous) {
                    (Some(f), _) => plan::PreviousSource::File(f),
                    (None, true) => plan::PreviousSource::Ignore,
                    (None, false) => plan::PreviousSource::State,
                },
            },
            out,
        ),
        Command::Render {
            paths,
            target,
            out_dir,
            slurm_version,
            solver,
            time_limit,
            gap,
        } => render::run(
            &render::Settings {
                paths,
                targets: target,
                out_dir,
                slurm_version,
                solver,
                time_limit,
                gap,
            },
            out,
        ),
        Command::Apply {
            paths,
            out_dir,
            state,
            auto_approve,
            dry_run,
            solve,
        } => apply::run(
            &apply::Settings {
                paths,
                out_dir,
                state,
                auto_approve,
                dry_run,
                solve,
            },
            out,
        ),
        Command::Drift {
            paths,
            observed,
            state,
            format,
            solve,
        } => drift::run(
            &drift::Settings {
                paths,
                observed,
                state,
                format,
                solve,
            },
            out,
        ),
        Command::Discover {
            naming,
            format,
            out: file,
        } => discover::run(
            &discover::Settings {
                naming,
                format,
                out: file,
            },
            out,
        ),
        Command::Import { kind } => import::run(&kind, out),
        Command::Generate { what } => generate::run(what, out),
    }
}
