//! `gpuplan explain [CODE]`: the rule list, or one rule's documentation.

use super::Output;
use crate::diag::Diagnostic;
use crate::validate::{self, rules};

pub fn run(code: Option<&str>, out: &Output) -> u8 {
    match code {
        None => {
            let mut s = String::new();
            for r in rules::ALL {
                s.push_str(&format!("{}  {:<28} {}\n", r.code, r.name, r.summary));
            }
            out.data(&s);
            0
        }
        Some(c) => match validate::rule(c) {
            Some(r) => {
                out.data(&format!("# {} {}\n\n{}\n", r.code, r.name, r.docs.trim()));
                0
            }
            None => {
                let d = Diagnostic::error(super::GP900, format!("no rule `{c}`")).with_help(
                    crate::suggest::hint(c, rules::ALL.iter().map(|r| r.code), "rule"),
                );
                out.diagnostics(
                    &crate::source::SourceMap::new(),
                    &[d],
                    crate::cli::Format::Human,
                );
                1
            }
        },
    }
}
