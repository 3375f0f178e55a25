//! Typed quantities written as strings in KDL: memory (`80GiB`), durations (`15m`),
//! bandwidth (`400Gbps`), percentages (`10%`), index sets (`0-3,6`) and node-name
//! ranges (`dgx-[001-128]`). Parsers return a plain message on error; the caller
//! attaches the span and the code.

use serde::Serialize;
use std::fmt;

/// A number of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Bytes(pub u64);

pub(crate) const KIB: u64 = 1024;
pub(crate) const MIB: u64 = 1024 * KIB;
pub(crate) const GIB: u64 = 1024 * MIB;
pub(crate) const TIB: u64 = 1024 * GIB;

impl Bytes {
    pub fn gib(self) -> f64 {
        self.0 as f64 / GIB as f64
    }
    pub fn mib(self) -> u64 {
        self.0 / MIB
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, size) in [("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)] {
            if b >= size {
                let v = b as f64 / size as f64;
                return if (v - v.round()).abs() < 1e-9 {
                    write!(f, "{}{unit}", v.round() as u64)
                } else {
                    write!(f, "{:.2}{unit}", v)
                };
            }
        }
        write!(f, "{b}B")
    }
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let num: String = s[..end].chars().filter(|c| *c != '_').collect();
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, s[end..].trim()))
}

/// Parses `80GiB`, `2TiB`, `512MiB`, `18GB` (decimal), or a plain number of bytes.
pub(crate) fn parse_bytes(s: &str) -> Result<Bytes, String> {
    let (v, unit) = split_number(s).ok_or_else(|| format!("`{s}` is not a memory size"))?;
    let mult: f64 = match unit {
        "" | "B" => 1.0,
        "KiB" => KIB as f64,
        "MiB" => MIB as f64,
        "GiB" => GIB as f64,
        "TiB" => TIB as f64,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => {
            return Err(format!(
                "unknown memory unit `{unit}` in `{s}` (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)"
            ));
        }
    };
    let b = v * mult;
    if b > u64::MAX as f64 / 2.0 {
        return Err(format!("`{s}` is too large"));
    }
    Ok(Bytes(b.round() as u64))
}

/// A duration in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Duration(pub u64);

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = self.0;
        if s == 0 {
            return f.write_str("0s");
        }
        for (unit, size) in [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)] {
            if s >= size {
                write!(f, "{}{unit}", s / size)?;
                s %= size;
            }
        }
        Ok(())
    }
}

/// Parses `15m`, `1h30m`, `45s`, `2d`, `500ms` is refused (whole seconds only).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    let mut total: u64 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .find(|(_, c)| !c.is_ascii_digit())
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        if end == 0 {
            return Err(format!(
                "`{s}` is not a duration (write e.g. `15m`, `1h30m`, `2d`)"
            ));
        }
        let n: u64 = rest[..end]
            .parse()
            .map_err(|_| format!("`{s}` is too large"))?;
        rest = &rest[end..];
        let uend = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit())
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let unit = &rest[..uend];
        rest = &rest[uend..];
        let mult = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86400,
            "" => return Err(format!("`{s}` has a number without a unit (s, m, h, d)")),
            _ => {
                return Err(format!(
                    "unknown duration unit `{unit}` in `{s}` (use s, m, h, d)"
                ));
            }
        };
        total = n
            .checked_mul(mult)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("`{s}` is too large"))?;
    }
    Ok(Duration(total))
}

/// Bandwidth in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Bandwidth(pub u64);

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1_000_000_000_000 && b % 1_000_000_000_000 == 0 {
            write!(f, "{}Tbps", b / 1_000_000_000_000)
        } else if b >= 1_000_000_000 && b % 1_000_000_000 == 0 {
            write!(f, "{}Gbps", b / 1_000_000_000)
        } else {
            write!(f, "{}Mbps", b / 1_000_000)
        }
    }
}

/// Parses `400Gbps`, `100Gb/s`, `900GB/s` (bytes, times 8), `1.6Tbps`.
pub(crate) fn parse_bandwidth(s: &str) -> Result<Bandwidth, String> {
    let (v, unit) = split_number(s).ok_or_else(|| format!("`{s}` is not a bandwidth"))?;
    let mult: f64 = match unit {
        "Mbps" | "Mb/s" => 1e6,
        "Gbps" | "Gb/s" => 1e9,
        "Tbps" | "Tb/s" => 1e12,
        "MB/s" | "MBps" => 8e6,
        "GB/s" | "GBps" => 8e9,
        "TB/s" | "TBps" => 8e12,
        _ => {
            return Err(format!(
                "unknown bandwidth unit `{unit}` in `{s}` (use Gbps, Tbps, GB/s, TB/s)"
            ));
        }
    };
    let b = v * mult;
    if b > 1e18 {
        return Err(format!("`{s}` is too large"));
    }
    Ok(Bandwidth(b.round() as u64))
}

/// Parses an event rate, `3/day`, `0.5/hour`, `2/week`, into events per hour.
pub(crate) fn parse_rate(s: &str) -> Result<f64, String> {
    let (num, unit) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}` is not a rate (write it as `3/day`)"))?;
    let (v, rest) = split_number(num).ok_or_else(|| format!("`{s}` is not a rate"))?;
    if !rest.is_empty() {
        return Err(format!("`{s}` is not a rate (write it as `3/day`)"));
    }
    let hours = match unit.trim() {
        "h" | "hour" => 1.0,
        "d" | "day" => 24.0,
        "w" | "week" => 168.0,
        u => {
            return Err(format!(
                "unknown rate unit `{u}` in `{s}` (use /hour, /day or /week)"
            ));
        }
    };
    let r = v / hours;
    if r > 1e6 {
        return Err(format!("`{s}` is too large"));
    }
    Ok(r)
}

/// Parses `10%` into a fraction (0.10).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t
        .strip_suffix('%')
        .ok_or_else(|| format!("`{s}` is not a percentage (write e.g. `10%`)"))?;
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("`{s}` is out of range (0% to 1000%)"));
    }
    Ok(v / 100.0)
}

/// The most indices an index set may name: guards against `0-4000000000`.
pub(crate) const MAX_INDEX: u32 = 4095;

/// Parses an index set such as `0-7`, `0-3,6`, `5`.
pub fn parse_index_set(s: &str) -> Result<Vec<u32>, String> {
    let mut out = std::collections::BTreeSet::new();
    let t = s.trim();
    if t.is_empty() {
        return Err("empty index set (write e.g. `0-7` or `0,2,4`)".into());
    }
    for part in t.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: u32 = a
            .parse()
            .map_err(|_| format!("`{part}` in `{s}` is not an index or range like `0-7`"))?;
        let b: u32 = b
            .parse()
            .map_err(|_| format!("`{part}` in `{s}` is not an index or range like `0-7`"))?;
        if a > b {
            return Err(format!("range `{part}` runs backwards"));
        }
        if b > MAX_INDEX {
            return Err(format!("index {b} is too large (at most {MAX_INDEX})"));
        }
        out.extend(a..=b);
    }
    Ok(out.into_iter().collect())
}

/// Formats sorted indices compactly: `[0,1,2,3,6]` -> `0-3,6`.
pub fn format_index_set(v: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if j == i {
            parts.push(v[i].to_string());
        } else {
            parts.push(format!("{}-{}", v[i], v[j]));
        }
        i = j + 1;
    }
    parts.join(",")
}

/// The most names one range may expand to.
pub(crate) const MAX_RANGE_NAMES: usize = 100_000;

/// How many names a comma-separated list of bracket patterns expands to, counted
/// without expanding it (saturating; a malformed item counts as one name: expanding it
/// reports the error). For budgets checked before any name is made ([`crate::limits`]).
pub fn count_pattern_list(list: &str) -> u64 {
    top_level_items(list).fold(0u64, |total, p| total.saturating_add(count_pattern(p)))
}

/// The items of a comma-separated list of bracket patterns, in order: commas inside
/// brackets separate range items and do not split the list.
fn top_level_items(list: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    list.split(move |ch: char| {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        ch == ',' && depth == 0
    })
}

/// How many names one bracket pattern expands to (see [`count_pattern_list`]).
fn count_pattern(pattern: &str) -> u64 {
    let mut total = 1u64;
    let mut rest = pattern;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| c + open) else {
            return total;
        };
        let mut items = 0u64;
        for part in rest[open + 1..close].split(',') {
            let part = part.trim();
            let n = match part.split_once('-') {
                Some((a, b)) if !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) => {
                    match (a.parse::<u64>(), b.parse::<u64>()) {
                        (Ok(lo), Ok(hi)) if hi >= lo => (hi - lo).saturating_add(1),
                        _ => 1,
                    }
                }
                _ => 1,
            };
            items = items.saturating_add(n);
        }
        total = total.saturating_mul(items.max(1));
        rest = &rest[close + 1..];
    }
    total
}

/// Expands a node-name pattern: `dgx-[001-128]`, `gpu[1-4]-[a,b]`, `node-[1-3,7]`.
/// Zero padding follows the width of the range's first bound. A name without brackets
/// expands to itself.
pub fn expand_names(pattern: &str) -> Result<Vec<String>, String> {
    let results = expand_pattern(pattern)?;
    for r in &results {
        validate_node_name(r)?;
    }
    Ok(results)
}

/// Expands a comma-separated list of bracket patterns (`mlx5_[0-3],mlx5_[6-7]`; commas
/// inside brackets separate range items), in order, without node naming rules.
pub fn expand_pattern_list(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in top_level_items(list) {
        out.extend(expand_pattern(item)?);
    }
    Ok(out)
}

/// Expands a bracket pattern like [`expand_names`] without holding the results to node
/// naming rules (device names such as `mlx5_[0-7]`).
pub fn expand_pattern(pattern: &str) -> Result<Vec<String>, String> {
    let mut results: Vec<String> = vec![String::new()];
    let mut rest = pattern;
    if pattern.is_empty() {
        return Err("empty node name".into());
    }
    while let Some(open) = rest.find('[') {
        let lit = &rest[..open];
        if lit.contains(']') {
            return Err(format!("unmatched `]` in `{pattern}`"));
        }
        let close = rest[open..]
            .find(']')
            .map(|c| c + open)
            .ok_or_else(|| format!("unclosed `[` in `{pattern}`"))?;
        let inner = &rest[open + 1..close];
        if inner.contains('[') {
            return Err(format!("nested `[` in `{pattern}`"));
        }
        let items = expand_bracket(inner, pattern)?;
        // Checked before allocating: `n[0-99999][0-99999]` would ask for 10^10 names.
        if results.len().saturating_mul(items.len()) > MAX_RANGE_NAMES {
            return Err(format!(
                "`{pattern}` expands to more than {MAX_RANGE_NAMES} names"
            ));
        }
        let mut next = Vec::with_capacity(results.len() * items.len());
        for r in &results {
            for it in &items {
                next.push(format!("{r}{lit}{it}"));
            }
        }
        if next.len() > MAX_RANGE_NAMES {
            return Err(format!(
                "`{pattern}` expands to more than {MAX_RANGE_NAMES} names"
            ));
        }
        results = next;
        rest = &rest[close + 1..];
    }
    if rest.contains(']') {
        return Err(format!("unmatched `]` in `{pattern}`"));
    }
    for r in &mut results {
        r.push_str(rest);
    }
    Ok(results)
}

fn expand_bracket(inner: &str, pattern: &str) -> Result<Vec<String>, String> {
    if inner.trim().is_empty() {
        return Err(format!("empty `[]` in `{pattern}`"));
    }
    let mut out = Vec::new();
    for part in inner.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) if !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) => {
                if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(format!(
                        "`{part}` in `{pattern}` is not a range like `001-128`"
                    ));
                }
                let width = a.len();
                let lo: u64 = a.parse().map_err(|_| format!("`{a}` is too large"))?;
                let hi: u64 = b.parse().map_err(|_| format!("`{b}` is too large"))?;
                if lo > hi {
                    return Err(format!("range `{part}` in `{pattern}` runs backwards"));
                }
                if hi - lo >= MAX_RANGE_NAMES as u64 {
                    return Err(format!(
                        "`{pattern}` expands to more than {MAX_RANGE_NAMES} names"
                    ));
                }
                for n in lo..=hi {
                    out.push(format!("{n:0width$}"));
                }
            }
            _ => {
                if part.is_empty() {
                    return Err(format!("empty item in `[{inner}]` of `{pattern}`"));
                }
                out.push(part.to_string());
            }
        }
    }
    Ok(out)
}

/// The longest node name: Kubernetes allows 253 characters, but a node's MIG script is
/// the file `NAME.sh`, and file names have at most 255 bytes.
pub(crate) const NODE_NAME_MAX: usize = 252;

/// Node names must be usable as Kubernetes node names and Slurm node names:
/// lowercase DNS-1123 labels joined by dots, at most [`NODE_NAME_MAX`] characters.
pub fn validate_node_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > NODE_NAME_MAX {
        return Err(format!(
            "node name `{name}` must have 1 to {NODE_NAME_MAX} characters (its MIG script is \
             `NAME.sh`, and a file name has at most 255 bytes)"
        ));
    }
    let ok = name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.');
    if !ok || crate::names::dns_subdomain(name).is_err() {
        return Err(format!(
            "node name {} must be lowercase letters, digits, `-` and `.`, each dot-separated part starting and ending with a letter or digit",
            crate::diag::quoted(name)
        ));
    }
    Ok(())
}

/// Compresses node names into hostlist ranges: `dgx-001, dgx-002, dgx-003` ->
/// `dgx-[001-003]`. Names are grouped by prefix and digit width, where numbers without
/// leading zeros are one group whatever their width (`dev6 ... dev11` -> `dev[6-11]`:
/// a range pads to its first bound, which then pads nothing); the output is sorted.
pub fn compress_names(names: &[String]) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut groups: BTreeMap<(String, usize, String), Vec<u64>> = BTreeMap::new();
    let mut plain = Vec::new();
    // (prefix, digits) of every name with a numeric tail of at most 18 digits.
    let split: Vec<Option<(&str, &str)>> = names
        .iter()
        .map(|n| {
            let i = n
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_digit())
                .last()
                .map(|(i, _)| i)?;
            (n.len() - i <= 18).then(|| (&n[..i], &n[i..]))
        })
        .collect();
    // Widths that some name pads to (a leading zero): same-width names join them.
    let padded: std::collections::BTreeSet<(&str, usize)> = split
        .iter()
        .flatten()
        .filter(|(_, d)| d.len() > 1 && d.starts_with('0'))
        .map(|(p, d)| (*p, d.len()))
        .collect();
    for (n, parts) in names.iter().zip(&split) {
        match parts {
            Some((prefix, digits)) => {
                let num: u64 = digits.parse().unwrap_or(0);
                let width = if padded.contains(&(*prefix, digits.len())) {
                    digits.len()
                } else {
                    0
                };
                groups
                    .entry((prefix.to_string(), width, String::new()))
                    .or_default()
                    .push(num);
            }
            None => plain.push(n.clone()),
        }
    }
    let mut out = plain;
    for ((prefix, width, _), mut nums) in groups {
        nums.sort_unstable();
        nums.dedup();
        if nums.len() == 1 {
            out.push(format!("{prefix}{:0width$}", nums[0]));
            continue;
        }
        let mut parts = Vec::new();
        let mut i = 0;
        while i < nums.len() {
            let mut j = i;
            while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
                j += 1;
            }
            if i == j {
                parts.push(format!("{:0width$}", nums[i]));
            } else {
                parts.push(format!("{:0width$}-{:0width$}", nums[i], nums[j]));
            }
            i = j + 1;
        }
        out.push(format!("{prefix}[{}]", parts.join(",")));
    }
    out.sort();
    out
}

/// A bus id in NCCL's spelling: `00000000:18:00.0` / `0000:18:00.0` -> `0000:18:00.0`,
/// lowercase. `None` when it is not `[domain:]bus:device.function` in hex.
pub fn normalize_bus_id(s: &str) -> Option<String> {
    let s = s.trim().to_ascii_lowercase();
    let parts: Vec<&str> = s.split(':').collect();
    let (domain, bus, devfn) = match parts.as_slice() {
        [d, b, df] => (*d, *b, *df),
        [b, df] => ("0", *b, *df),
        _ => return None,
    };
    let (dev, func) = devfn.split_once('.')?;
    let hex = |x: &str, max: u32| {
        (!x.is_empty() && x.len() <= 8)
            .then(|| u32::from_str_radix(x, 16).ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let d = hex(domain, 0xffff)?;
    let b = hex(bus, 0xff)?;
    let dv = hex(dev, 0x1f)?;
    let f = hex(func, 0x7)?;
    Some(format!("{d:04x}:{b:02x}:{dv:02x}.{f:x}"))
}

#[cfg(test)]
mod tests {

    #[test]
    fn compress_joins_unpadded_widths_and_round_trips() {
        let names: Vec<String> = [6, 7, 8, 9, 10, 11, 20]
            .iter()
            .map(|i| format!("dev{i}"))
            .chain(
                ["gpu-01", "gpu-02", "gpu-100", "gpu-0"]
                    .iter()
                    .map(|s| s.to_string()),
            )
            .collect();
        let c = compress_names(&names);
        assert_eq!(c, ["dev[6-11,20]", "gpu-[0,100]", "gpu-[01-02]"]);
        let mut back: Vec<String> = c.iter().flat_map(|p| expand_pattern(p).unwrap()).collect();
        back.sort();
        let mut want = names.clone();
        want.sort();
        assert_eq!(back, want);
    }
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("3/day").unwrap(), 3.0 / 24.0);
        assert_eq!(parse_rate("0.5/hour").unwrap(), 0.5);
        assert_eq!(parse_rate(" 2 / w ").unwrap(), 2.0 / 168.0);
        assert_eq!(parse_rate("1_0/d").unwrap(), 10.0 / 24.0);
        for bad in ["3", "3/month", "/day", "x/day", "3x/day", "1e9/hour"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pattern_lists_keep_their_order() {
        assert_eq!(
            expand_pattern_list("mlx5_2,mlx5_[0-1],ib[a,b]").unwrap(),
            ["mlx5_2", "mlx5_0", "mlx5_1", "iba", "ibb"]
        );
        assert!(expand_pattern_list("a,").is_err());
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("80GiB").unwrap(), Bytes(80 * GIB));
        assert_eq!(parse_bytes("2TiB").unwrap(), Bytes(2 * TIB));
        assert_eq!(parse_bytes("18GB").unwrap(), Bytes(18_000_000_000));
        assert_eq!(parse_bytes("1.5GiB").unwrap(), Bytes(3 * GIB / 2));
        assert!(parse_bytes("80Gib").is_err());
        assert!(parse_bytes("GiB").is_err());
        assert!(parse_bytes("99999999999999999999TiB").is_err());
        assert_eq!(Bytes(80 * GIB).to_string(), "80GiB");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15m").unwrap(), Duration(900));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration(5400));
        assert_eq!(parse_duration("2d").unwrap(), Duration(172800));
        assert!(parse_duration("15").is_err());
        assert!(parse_duration("15x").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
        assert_eq!(Duration(5400).to_string(), "1h30m");
    }

    #[test]
    fn bandwidth() {
        assert_eq!(
            parse_bandwidth("400Gbps").unwrap(),
            Bandwidth(400_000_000_000)
        );
        assert_eq!(
            parse_bandwidth("900GB/s").unwrap(),
            Bandwidth(7_200_000_000_000)
        );
        assert!(parse_bandwidth("400").is_err());
    }

    #[test]
    fn index_sets() {
        assert_eq!(parse_index_set("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(format_index_set(&[0, 1, 2, 3, 6]), "0-3,6");
        assert!(parse_index_set("3-1").is_err());
        assert!(parse_index_set("0-99999").is_err());
        assert!(parse_index_set("a").is_err());
    }

    #[test]
    fn names() {
        let v = expand_names("dgx-[001-003]").unwrap();
        assert_eq!(v, ["dgx-001", "dgx-002", "dgx-003"]);
        let v = expand_names("r[1-2]-n[a,b]").unwrap();
        assert_eq!(v, ["r1-na", "r1-nb", "r2-na", "r2-nb"]);
        assert!(expand_names("dgx-[001-").is_err());
        assert!(expand_names("dgx-[3-1]").is_err());
        assert!(expand_names("DGX-1").is_err());
        assert!(expand_names("n[0-999999999]").is_err());
        assert_eq!(
            compress_names(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
            ["r1-na", "r1-nb", "r2-na", "r2-nb"]
        );
        let d: Vec<String> = expand_names("dgx-[001-016,018]").unwrap();
        assert_eq!(compress_names(&d), ["dgx-[001-016,018]"]);
    }
}
