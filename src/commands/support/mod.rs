//! What several commands share, as cargo's `command_prelude` is: choosing the state
//! backend, the plan a command works on, and writing a command's output. Command files
//! call the library and this, never each other (tests/it/architecture.rs).

pub mod backend;
pub mod planning;

use super::Output;
use crate::cli::Format;
use crate::diag::Diagnostic;
use crate::source::SourceMap;
use serde::Serialize;
use std::path::Path;

/// GP704: the output file could not be written.
pub const GP704: &str = "GP704";

/// A value as pretty JSON with a final newline.
pub(crate) fn to_json<T: Serialize>(v: &T) -> String {
    crate::json::pretty_line(v)
}

/// Writes the output to stdout, or to `-o FILE` atomically.
pub(crate) fn emit(out: &Output, path: Option<&Path>, text: &str) -> u8 {
    match path {
        None => {
            out.data(text);
            0
        }
        Some(p) => match crate::apply::write_atomically(p, text) {
            Ok(()) => {
                out.status(&format!("wrote {}", p.display()));
                0
            }
            Err(e) => {
                let d = Diagnostic::error(GP704, format!("cannot write `{}`: {e}", p.display()));
                out.diagnostics(&SourceMap::new(), &[d], Format::Human);
                1
            }
        },
    }
}

/// This host's name, from the kernel (no libc call needed).
pub(crate) fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}
