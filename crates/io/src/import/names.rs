//! Names for imported objects: DNS labels from arbitrary values, deduplication, and one
//! node-name pattern for any set of names (docs/language.md "Node-name patterns").

use std::collections::BTreeSet;

/// Lowercase letters, digits and single `-`, at most `max` characters, never empty.
pub fn sanitize(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(max);
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "x".into() } else { out }
}

/// `base`, or `base-2`, `base-3`... : the first not yet in `used` (which then holds it).
pub(crate) fn unique(base: &str, used: &mut BTreeSet<String>) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while !used.insert(name.clone()) {
        name = format!("{base}-{k}");
        k += 1;
    }
    name
}

/// One node-name pattern for a set of names: its compressed range when there is one,
/// else the names as alternatives after their common prefix (`gke-pool-[0k2d,7qxz]`).
/// An alternative must not be empty nor read as a range (`1-01`): the prefix shrinks
/// until none is.
pub(crate) fn one_pattern(names: &[String]) -> String {
    let compressed = crate::units::compress_names(names);
    if let [one] = compressed.as_slice() {
        return one.clone();
    }
    let mut sorted = names.to_vec();
    sorted.sort();
    sorted.dedup();
    let first = sorted.first().map_or("", String::as_str);
    let mut len = sorted.iter().fold(first.len(), |l, n| {
        l.min(
            first
                .bytes()
                .zip(n.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        )
    });
    let bad = |item: &str| {
        item.is_empty()
            || item
                .split_once('-')
                .is_some_and(|(a, _)| !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()))
    };
    while len > 0 && sorted.iter().any(|n| bad(&n[len..])) {
        len -= 1;
    }
    let items: Vec<&str> = sorted.iter().map(|n| &n[len..]).collect();
    format!("{}[{}]", &first[..len], items.join(","))
}
