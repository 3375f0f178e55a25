//! `gpuplan explain [CODE]`: every diagnostic code (the validation rules, then the
//! codes of discovery, import, planning, rendering and apply from [`crate::codes`]), or
//! one code's documentation.

use super::Output;
use crate::diag::Diagnostic;
use crate::validate::{self, rules};

pub(crate) fn run(code: Option<&str>, out: &Output) -> u8 {
    let Some(c) = code else {
        let mut s = String::new();
        for r in rules::ALL {
            s.push_str(&format!("{}  {:<28} {}\n", r.code, r.name, r.summary));
        }
        for k in crate::codes::ALL {
            s.push_str(&format!("{}  {:<28} {}\n", k.code, k.area, k.summary));
        }
        out.data(&s);
        return 0;
    };
    if let Some(r) = validate::rule(c) {
        out.data(&format!("# {} {}\n\n{}\n", r.code, r.name, r.docs.trim()));
        return 0;
    }
    if let Some(k) = crate::codes::lookup(c) {
        out.data(&format!(
            "# {} ({})\n\n{}.\n\nWhat to do: {}.\n",
            k.code, k.area, k.summary, k.help
        ));
        return 0;
    }
    let known = rules::ALL
        .iter()
        .map(|r| r.code)
        .chain(crate::codes::ALL.iter().map(|k| k.code));
    out.fail(&[Diagnostic::error(super::GP900, format!("no code `{c}`"))
        .with_help(crate::suggest::hint(c, known, "code"))])
}
