//! Quantities as the schedulers read them: Kubernetes resource quantities (`"12Gi"`,
//! `"500m"`, `4`, `1e3`) in thousandths of a unit, and Slurm memory sizes (`--mem`,
//! `RealMemory`, `GrpTRES=mem=`) in MiB. Written here, not shared with the renderers.

/// A Kubernetes quantity in thousandths of its unit (`"500m"` -> 500, `"2"` -> 2000,
/// `"1Ki"` -> 1,024,000), rounded up as the API server rounds to milli; `None` when it
/// is not a quantity, is negative or does not fit.
pub(crate) fn milli(text: &str) -> Option<i128> {
    let s = text.trim();
    let (s, negative) = match s.strip_prefix('-') {
        Some(rest) => (rest, true),
        None => (s.strip_prefix('+').unwrap_or(s), false),
    };
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') || number.len() > 30 {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mantissa: i128 = digits.parse().ok()?;
    // value = mantissa / 10^places * num / den
    let places = frac.len() as u32;
    let (num, den) = multiplier(suffix)?;
    let top = mantissa.checked_mul(num)?.checked_mul(1000)?;
    let bottom = 10i128.checked_pow(places)?.checked_mul(den)?;
    let value = (top + bottom - 1) / bottom;
    if negative && value != 0 {
        return None;
    }
    Some(value)
}

/// The multiplier of a suffix as a fraction (numerator, denominator).
fn multiplier(suffix: &str) -> Option<(i128, i128)> {
    let binary = |n: u32| Some((1i128 << (10 * n), 1));
    let decimal = |n: u32| Some((10i128.pow(n), 1));
    match suffix {
        "" => decimal(0),
        "n" => Some((1, 1_000_000_000)),
        "u" => Some((1, 1_000_000)),
        "m" => Some((1, 1000)),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exp = suffix.strip_prefix(['e', 'E'])?;
            let e: i32 = exp.parse().ok()?;
            if !(-18..=18).contains(&e) {
                return None;
            }
            if e >= 0 {
                decimal(e as u32)
            } else {
                Some((1, 10i128.pow(e.unsigned_abs())))
            }
        }
    }
}

/// A quantity in thousandths, written back the way a person reads it: `8`, `500m`,
/// `12Gi` for whole binary sizes.
pub(crate) fn show(milli: i128, resource: &str) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let v = milli / 1000;
    if resource.ends_with("memory") && v > 0 {
        for (unit, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            if v % (1i128 << shift) == 0 {
                return format!("{}{unit}", v >> shift);
            }
        }
    }
    v.to_string()
}

/// A Slurm memory size in MiB: a number with an optional `K`, `M` (default), `G`, `T`
/// suffix (powers of 1024), rounded up to whole MiB.
pub(crate) fn slurm_mib(text: &str) -> Option<u64> {
    let s = text.trim();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    let n: u64 = number.parse().ok()?;
    let kib = match suffix.to_ascii_uppercase().as_str() {
        "K" | "KB" => n,
        "" | "M" | "MB" => n.checked_mul(1024)?,
        "G" | "GB" => n.checked_mul(1 << 20)?,
        "T" | "TB" => n.checked_mul(1 << 30)?,
        _ => return None,
    };
    Some(kib.div_ceil(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_quantities() {
        assert_eq!(milli("500m"), Some(500));
        assert_eq!(milli("2"), Some(2000));
        assert_eq!(milli(" 1.5 "), Some(1500));
        assert_eq!(milli("12Gi"), Some(12 * (1 << 30) * 1000));
        assert_eq!(milli("1k"), Some(1_000_000));
        assert_eq!(milli("1e3"), Some(1_000_000));
        assert_eq!(milli("1E"), Some(10i128.pow(21)));
        assert_eq!(milli("1n"), Some(1), "rounded up to a milli");
        assert_eq!(milli("0"), Some(0));
        for bad in [
            "",
            "abc",
            "1.2.3",
            "-1",
            "1Xi",
            "1e99",
            ".",
            "9".repeat(40).as_str(),
        ] {
            assert_eq!(milli(bad), None, "{bad}");
        }
        assert_eq!(show(500, "cpu"), "500m");
        assert_eq!(show(12 * (1 << 30) * 1000, "memory"), "12Gi");
        assert_eq!(show(8000, "nvidia.com/gpu"), "8");
    }

    #[test]
    fn slurm_sizes() {
        assert_eq!(slurm_mib("1024"), Some(1024));
        assert_eq!(slurm_mib("2G"), Some(2048));
        assert_eq!(slurm_mib("1T"), Some(1 << 20));
        assert_eq!(slurm_mib("1500K"), Some(2));
        assert_eq!(slurm_mib("12X"), None);
        assert_eq!(slurm_mib("G"), None);
    }
}
