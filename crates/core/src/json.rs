//! JSON output shared by every crate.

use serde::Serialize;

/// `v` as pretty JSON with a final newline, the newline appended in place (a plan at
/// 100,000 GPUs is 46 MB: `format!("{}\n", ...)` copied it once more, at the command's
/// peak memory).
pub fn pretty_line<T: Serialize + ?Sized>(v: &T) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn pretty_json_ends_with_one_newline() {
        assert_eq!(super::pretty_line(&[1, 2]), "[\n  1,\n  2\n]\n");
    }
}
