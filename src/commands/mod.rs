//! Subcommands: one file each. Each turns settings into an operation, renders the
//! result and returns the exit code. Exit codes (docs/exit-codes.md): 0 success, 1 error
//! (or invalid input), 2 changes present (`plan --detailed-exitcode`) or drift found
//! (`drift`).

mod apply;
mod check_render;
pub mod discover;
mod drift;
mod explain;
mod fmt;
mod generate;
pub mod import;
mod init;
mod man;
mod output;
mod plan;
mod render;
mod report;
mod show;
mod state;
mod support;
mod validate;

pub use crate::cli::{parse_gap, parse_time_limit};
pub use output::Output;

use crate::cli::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

/// GP900: an invalid argument (see [`crate::codes`]).
pub(crate) const GP900: &str = "GP900";
/// GP904: the output folder of `generate` cannot be used.
pub(crate) const GP904: &str = "GP904";

/// The pipeline's settings from the solver arguments; HiGHS' log and options from
/// `GPUPLAN_HIGHS_LOG` and `GPUPLAN_HIGHS_OPTIONS` (the library reads no environment).
fn settings(a: &crate::cli::SolveArgs) -> crate::pipeline::Settings {
    crate::pipeline::Settings {
        solver: match a.solver {
            crate::cli::SolverChoice::Ilp => crate::solve::SolverKind::Ilp,
            crate::cli::SolverChoice::Greedy => crate::solve::SolverKind::Greedy,
        },
        time_limit: a.time_limit,
        gap: a.gap,
        admission_gap: a.admission_gap,
        highs: crate::solve::Highs {
            log: std::env::var_os("GPUPLAN_HIGHS_LOG").is_some(),
            options: std::env::var("GPUPLAN_HIGHS_OPTIONS")
                .map(|v| crate::solve::Highs::parse_options(&v))
                .unwrap_or_default(),
        },
    }
}

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
    let mut limits = crate::limits::Limits::default();
    for l in &cli.limits {
        // Checked by clap's value parser already.
        let _ = limits.set_key(l);
    }
    crate::limits::set(limits);
    let mut out = Output::new(cli.color, cli.quiet);
    out.verbose = cli.verbose;
    ExitCode::from(run(cli.command, &out))
}

/// Runs one command; returns the process exit code.
pub(crate) fn run(cmd: Command, out: &Output) -> u8 {
    match cmd {
        Command::Validate { paths, format } => validate::run(&paths, format, out),
        Command::Show {
            paths,
            format,
            state,
        } => show::run(&paths, format, &state, out),
        Command::Explain { code } => explain::run(code.as_deref(), out),
        Command::Plan(a) => plan::run(&plan::Settings::from(a), out),
        Command::Render(a) => render::run(&render::Settings::from(a), out),
        Command::CheckRender(a) => check_render::run(&a, out),
        Command::Apply(a) => apply::run(&a, out),
        Command::Drift(a) => drift::run(&a, out),
        Command::State { what } => state::run(&what, out),
        Command::ForceUnlock(a) => state::force_unlock(&a, out),
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
        Command::Import {
            kind:
                crate::cli::ImportKind::NvidiaSmi {
                    files,
                    format,
                    out: file,
                    partial,
                    naming,
                },
        } => import::smi::run(
            &files,
            &import::naming(&naming),
            &import::Target {
                format,
                out: file.as_deref(),
                partial,
            },
            out,
        ),
        Command::Import { kind } => import::run(&kind, out),
        Command::Generate { what } => generate::run(what, out),
        Command::Report { what } => match what {
            crate::cli::ReportKind::Chargeback(a) => report::chargeback(&a, out),
            crate::cli::ReportKind::Html(a) => report::html(&a, out),
        },
        Command::Fmt(a) => fmt::run(&a, out),
        Command::Init { dir, no_discover } => init::run(&dir, no_discover, out),
        Command::Completions { shell } => man::completions(shell, out),
        Command::Man { out_dir } => man::man_pages(&out_dir, out),
        Command::Graph(a) => report::graph(&a, out),
    }
}
