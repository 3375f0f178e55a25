//! Untrusted text as diagnostics show it: cut short, control characters replaced.

/// A label value as a message shows it: at most 64 characters, control characters as
/// `?` (a hostile value cannot break the terminal or the line).
pub(crate) fn shown(v: &str) -> String {
    shown_up_to(v, 64)
}

/// [`shown`], at most `max` characters.
pub(crate) fn shown_up_to(v: &str, max: usize) -> String {
    let mut out: String = v
        .chars()
        .take(max)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if v.chars().nth(max).is_some() {
        out.push_str("...");
    }
    out
}
