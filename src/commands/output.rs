//! Where output goes: data to stdout, diagnostics and progress to stderr, colour only
//! on a terminal without `NO_COLOR`.

use crate::cli::{ColorChoice, Format};
use crate::diag::{Diagnostic, Report};
use crate::source::SourceMap;
use std::io::{IsTerminal, Write};

pub struct Output {
    pub color: bool,
    pub quiet: bool,
}

impl Output {
    pub fn new(choice: ColorChoice, quiet: bool) -> Self {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stderr().is_terminal()
            }
        };
        Output { color, quiet }
    }

    /// Writes data to stdout; a closed pipe is not an error.
    pub fn data(&self, text: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }

    /// Writes a status line to stderr (suppressed by `--quiet`).
    pub fn status(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }

    /// Renders diagnostics: human text to stderr, or a JSON document to stdout.
    pub fn diagnostics(&self, sources: &SourceMap, diags: &[Diagnostic], format: Format) {
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
