//! "Did you mean" suggestions by edit distance.

/// Levenshtein distance between two strings (by chars).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate, if close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    let wlen = word.chars().count();
    for c in candidates {
        let limit = (c.chars().count().max(wlen) / 3).max(1) + 1;
        // The distance is at least the difference in length: skip hopeless candidates
        // cheaply (a megabyte-long name against every known name).
        if c.chars().count().abs_diff(wlen) > limit && !c.contains(lower.as_str()) {
            continue;
        }
        let d = if c.eq_ignore_ascii_case(word) {
            0
        } else if c.contains(lower.as_str()) && lower.len() >= 3 {
            1
        } else {
            distance(&lower, &c.to_ascii_lowercase())
        };
        if d <= limit && best.is_none_or(|(bd, bc)| (d, c) < (bd, bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// A `hint:` text for an unknown name.
pub fn hint<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
    what: &str,
) -> String {
    match did_you_mean(word, candidates.clone()) {
        Some(c) => format!("did you mean `{c}`?"),
        None => {
            let mut all: Vec<&str> = candidates.into_iter().collect();
            all.sort_unstable();
            all.dedup();
            if all.is_empty() {
                format!("no {what} is declared")
            } else if all.len() <= 12 {
                format!(
                    "known {what}s: {}",
                    all.iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                format!("{} {what}s are known; see `docs/language.md`", all.len())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(
            did_you_mean("h100-sxm-80gb", ["h100-sxm5-80gb", "a100-sxm4-80gb"]),
            Some("h100-sxm5-80gb")
        );
        assert_eq!(
            did_you_mean("guarante", ["guarantee", "burst"]),
            Some("guarantee")
        );
        assert_eq!(did_you_mean("zzz", ["guarantee", "burst"]), None);
    }
}
