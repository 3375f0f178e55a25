//! Where output goes: data to stdout, diagnostics and progress to stderr, colour only
//! on a terminal without `NO_COLOR`.

use crate::cli::{ColorChoice, Format};
use crate::diag::{Diagnostic, Report};
use crate::source::SourceMap;
use std::io::{IsTerminal, Write};

pub struct Output {
    /// Colour on stderr (diagnostics).
    pub color: bool,
    /// Colour on stdout (the plan's diff).
    pub color_stdout: bool,
    pub quiet: bool,
    /// Plans list every class, file and object (`--verbose`).
    pub verbose: bool,
    /// Progress bars: a terminal on stderr, no `--quiet`, not in CI (`CI` set).
    pub progress: bool,
}

impl Output {
    pub fn new(choice: ColorChoice, quiet: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let pick = |terminal: bool| match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && terminal,
        };
        let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        Output {
            color: pick(std::io::stderr().is_terminal()),
            color_stdout: pick(std::io::stdout().is_terminal()),
            quiet,
            verbose: false,
            progress: !quiet && !in_ci && std::io::stderr().is_terminal(),
        }
    }

    /// A spinner on stderr for long work (solve, render), or `None` when progress is off.
    pub(crate) fn spinner(&self, msg: &str) -> Option<indicatif::ProgressBar> {
        if !self.progress {
            return None;
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message(msg.to_string());
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        Some(pb)
    }

    /// A bar over `len` steps on stderr, or `None` when progress is off.
    pub(crate) fn bar(&self, len: u64, msg: &str) -> Option<indicatif::ProgressBar> {
        if !self.progress {
            return None;
        }
        let pb = indicatif::ProgressBar::new(len);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
        {
            pb.set_style(style.progress_chars("=> "));
        }
        pb.set_message(msg.to_string());
        Some(pb)
    }

    /// Writes data to stdout; a closed pipe is not an error.
    pub(crate) fn data(&self, text: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }

    /// Writes a status line to stderr (suppressed by `--quiet`).
    pub(crate) fn status(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }

    /// Prints diagnostics that point into no file (arguments, I/O, saved plans) and
    /// returns exit code 1: the one way a command fails.
    pub(crate) fn fail(&self, diags: &[Diagnostic]) -> u8 {
        self.diagnostics(&SourceMap::new(), diags, Format::Human);
        1
    }

    /// Prints a pipeline failure (its diagnostics, then why there is no plan); exit 1.
    pub(crate) fn failed(&self, f: &crate::pipeline::Failed) -> u8 {
        self.diagnostics(&f.sources, &f.diagnostics, Format::Human);
        self.status(f.stage.message());
        timings(&f.timings);
        1
    }

    /// Renders diagnostics: human text to stderr, or a JSON document to stdout.
    pub(crate) fn diagnostics(&self, sources: &SourceMap, diags: &[Diagnostic], format: Format) {
        let report = Report::new(sources, diags);
        match format {
            Format::Human => {
                if !diags.is_empty() {
                    let _ = std::io::stderr()
                        .lock()
                        .write_all(report.human(self.color).as_bytes());
                }
            }
            Format::Json => {
                let errors = diags.iter().filter(|d| d.is_error()).count();
                let doc = serde_json::json!({
                    "format_version": "1",
                    "valid": errors == 0,
                    "error_count": errors,
                    "warning_count": diags.len() - errors,
                    "diagnostics": report.json_items(),
                });
                self.data(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&doc).unwrap_or_default()
                ));
            }
        }
    }
}

/// Shows the pipeline's progress: validation warnings as soon as they are known, what
/// is being planned, a spinner while solving and rendering, a fallback to greedy.
pub(crate) struct Progress<'a> {
    out: &'a Output,
    spinner: Option<indicatif::ProgressBar>,
}

impl<'a> Progress<'a> {
    pub(crate) fn new(out: &'a Output) -> Self {
        Progress { out, spinner: None }
    }

    pub(crate) fn event(&mut self, e: crate::pipeline::Event<'_>) {
        use crate::pipeline::Event;
        match e {
            Event::Validated { sources, warnings } => {
                self.out.diagnostics(sources, warnings, Format::Human)
            }
            Event::Solving { nodes, classes } => {
                self.out.status(&format!(
                    "planning {nodes} nodes, {classes} workload classes"
                ));
                self.spinner = self.out.spinner("solving");
            }
            Event::Rendering => self.spinner = self.out.spinner("rendering"),
            Event::Solved | Event::Rendered => {
                if let Some(pb) = self.spinner.take() {
                    pb.finish_and_clear();
                }
            }
            Event::FellBack => self
                .out
                .status("the ILP placement failed its check; using the greedy placement"),
        }
    }
}

/// Prints phase timings on stderr when `GPUPLAN_TIMINGS` is set (for benchmarks; never
/// part of the plan, which must stay byte-identical between runs).
pub(crate) fn timings(t: &crate::pipeline::Timings) {
    if std::env::var_os("GPUPLAN_TIMINGS").is_none() {
        return;
    }
    let mut e = std::io::stderr().lock();
    for (name, secs) in &t.0 {
        let _ = writeln!(e, "timing {name:<32} {secs:>9.3} s");
    }
}
