//! Slurm hostlists (`dgx-[001-016,018],hpc-01`, `rack[1-2]-n[01-04]`) and device
//! ranges (`/dev/nvidia[0-3]`) expanded as Slurm expands them: comma-separated items
//! outside brackets, each bracket a list of numbers or `lo-hi` ranges keeping the
//! width of `lo`, several brackets multiplied out. Our own expander: the renderers
//! compress names with other code, so a mistake on either side shows.

/// The most names the hostlists of one file may expand to (a bound on hostile input).
pub(crate) const MAX_NAMES: usize = 1_000_000;

/// Every name of a hostlist, in order, counted against `left` (the names the file may
/// still expand to), which it decreases.
pub(crate) fn expand_within(list: &str, left: &mut usize) -> Result<Vec<String>, String> {
    let out = expand_max(list, *left)?;
    *left -= out.len();
    Ok(out)
}

/// Every name of a hostlist, in order (at most [`MAX_NAMES`]).
#[cfg(test)]
pub(crate) fn expand(list: &str) -> Result<Vec<String>, String> {
    expand_max(list, MAX_NAMES)
}

fn expand_max(list: &str, max: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in top_level(list)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let mut names = vec![String::new()];
        let mut rest = item;
        while !rest.is_empty() {
            match rest.find('[') {
                None => {
                    names.iter_mut().for_each(|n| n.push_str(rest));
                    rest = "";
                }
                Some(open) => {
                    let close = rest[open..]
                        .find(']')
                        .map(|c| open + c)
                        .ok_or_else(|| format!("`{item}` has an unclosed `[`"))?;
                    let prefix = &rest[..open];
                    let numbers = bracket(&rest[open + 1..close], max)
                        .map_err(|e| format!("`{item}`: {e}"))?;
                    if names.len().saturating_mul(numbers.len()) + out.len() > max {
                        return Err(format!("`{item}` names more than {max} hosts"));
                    }
                    names = names
                        .iter()
                        .flat_map(|n| numbers.iter().map(move |x| format!("{n}{prefix}{x}")))
                        .collect();
                    rest = &rest[close + 1..];
                }
            }
        }
        out.extend(names);
        if out.len() > max {
            return Err(format!("the hostlists name more than {max} hosts"));
        }
    }
    Ok(out)
}

/// The items of a list split at the commas outside brackets.
fn top_level(list: &str) -> Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("`{list}` has unbalanced brackets"));
        }
    }
    if depth != 0 {
        return Err(format!("`{list}` has an unclosed `[`"));
    }
    items.push(&list[start..]);
    Ok(items)
}

/// The numbers of one bracket, zero-padded to the width of each range's start.
fn bracket(inside: &str, max: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in inside.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return Err(format!("`{part}` is not a number or a range"));
        }
        let (a, b): (u64, u64) = (lo.parse().unwrap_or(0), hi.parse().unwrap_or(0));
        if b < a {
            return Err(format!("`{part}` runs backwards"));
        }
        if (b - a) as usize + out.len() >= max {
            return Err(format!("`{part}` names more than {max} hosts"));
        }
        let width = lo.len();
        out.extend((a..=b).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn slurm_hostlists() {
        assert_eq!(
            expand("dgx-[001-003,005],hpc-01").unwrap(),
            ["dgx-001", "dgx-002", "dgx-003", "dgx-005", "hpc-01"]
        );
        assert_eq!(
            expand("r[1-2]-n[1-2]").unwrap(),
            ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
        );
        assert_eq!(
            expand("/dev/nvidia[0-1]").unwrap(),
            ["/dev/nvidia0", "/dev/nvidia1"]
        );
        assert_eq!(expand("a,,b").unwrap(), ["a", "b"]);
        assert_eq!(expand("n[8-10]").unwrap(), ["n8", "n9", "n10"]);
        for bad in [
            "n[1-",
            "n[3-1]",
            "n[a]",
            "n]1[",
            "n[[1]]",
            "n[0-99999999999]",
        ] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }
}
