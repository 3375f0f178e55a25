//! Values against their types: what [`super::NodeView::check`] reports about one
//! argument or property, and what the typed getters skip.

use crate::limits::MAX_NUMBER;
use crate::spec::language::Ty;
use crate::suggest;
use crate::units;
use kdl::KdlValue;

use super::{GP004, GP005};

/// What is wrong with a value: its code, message and hint.
pub(super) type Problem = (&'static str, String, Option<String>);

fn kind_of(v: &KdlValue) -> &'static str {
    match v {
        KdlValue::String(_) => "a string",
        KdlValue::Integer(_) => "an integer",
        KdlValue::Float(_) => "a number",
        KdlValue::Bool(_) => "a boolean",
        KdlValue::Null => "#null",
    }
}

fn expects(ty: Ty) -> &'static str {
    match ty {
        Ty::Int => "an integer",
        Ty::Number => "a number",
        Ty::Bool => "a boolean",
        _ => "a string",
    }
}

/// Checks a value against a type.
pub(super) fn check_value(ty: Ty, v: &KdlValue) -> Result<(), Problem> {
    match ty {
        Ty::Int => match v {
            KdlValue::Integer(n) if (0..=u32::MAX as i128).contains(n) => Ok(()),
            KdlValue::Integer(n) => Err((
                GP005,
                format!("{n} is out of range (0 to {})", u32::MAX),
                None,
            )),
            _ => Err(wrong_kind(ty, v)),
        },
        Ty::Number => match v {
            KdlValue::Integer(n) if n.unsigned_abs() <= u128::from(MAX_NUMBER) => Ok(()),
            // Bounded like the integers: a price of 1e308 would make every cost `inf`.
            KdlValue::Float(f) if f.is_finite() && f.abs() <= MAX_NUMBER as f64 => Ok(()),
            KdlValue::Integer(_) | KdlValue::Float(_) => Err((
                GP005,
                format!("number out of range (at most {MAX_NUMBER} in magnitude)"),
                None,
            )),
            _ => Err(wrong_kind(ty, v)),
        },
        Ty::Bool => match v {
            KdlValue::Bool(_) => Ok(()),
            _ => Err(wrong_kind(ty, v)),
        },
        _ => match v.as_string() {
            Some(s) => check_string(ty, s),
            None => Err(wrong_kind(ty, v)),
        },
    }
}

/// GP004 for a value of the wrong kind (a string where a number belongs...), with a
/// hint when the fix is obvious.
fn wrong_kind(ty: Ty, v: &KdlValue) -> Problem {
    let hint = match (ty, v) {
        (Ty::Int | Ty::Number, KdlValue::String(s)) if s.trim().parse::<f64>().is_ok() => {
            Some(format!("write the number without quotes: {}", s.trim()))
        }
        (Ty::Bool, KdlValue::String(s)) if s == "true" || s == "false" => {
            Some(format!("KDL v2 booleans are written #{s}"))
        }
        (Ty::Bytes, KdlValue::Integer(n)) => {
            Some(format!("write the size with a unit, e.g. \"{n}GiB\""))
        }
        (Ty::Duration, KdlValue::Integer(n)) => {
            Some(format!("write the duration with a unit, e.g. \"{n}m\""))
        }
        (Ty::Version, KdlValue::Float(f)) => Some(format!(
            "quote versions so that trailing zeros survive: \"{f}\""
        )),
        _ => None,
    };
    (
        GP004,
        format!(
            "expected {} ({}), found {}",
            expects(ty),
            ty.describe(),
            kind_of(v)
        ),
        hint,
    )
}

/// Checks a string against a string-valued type (units, patterns, enums, names).
fn check_string(ty: Ty, s: &str) -> Result<(), Problem> {
    let bad = |m: String| Err((GP005, m, None));
    match ty {
        Ty::Bytes => units::parse_bytes(s).map(|_| ()).or_else(bad),
        Ty::Duration => units::parse_duration(s).map(|_| ()).or_else(bad),
        Ty::Bandwidth => units::parse_bandwidth(s).map(|_| ()).or_else(bad),
        Ty::Percent => units::parse_percent(s).map(|_| ()).or_else(bad),
        Ty::IndexSet => units::parse_index_set(s).map(|_| ()).or_else(bad),
        Ty::NamePattern => units::expand_names(s).map(|_| ()).or_else(bad),
        Ty::Version => parse_version(s).map(|_| ()).or_else(bad),
        Ty::Rate => units::parse_rate(s).map(|_| ()).or_else(bad),
        Ty::Enum(vals) if vals.contains(&s) => Ok(()),
        Ty::Enum(vals) => Err((
            GP005,
            format!("`{s}` is not {}", ty.describe()),
            Some(suggest::hint(s, vals.iter().copied(), "value")),
        )),
        Ty::Str | Ty::Ref(_) if s.trim().is_empty() => bad("empty name".into()),
        Ty::Str | Ty::Ref(_) => Ok(()),
        Ty::Int | Ty::Number | Ty::Bool => unreachable!("not string types"),
    }
}

/// Parses `22.05`, `1.31`, `0.19.2` into numeric parts.
pub fn parse_version(s: &str) -> Result<Vec<u32>, String> {
    let parts: Result<Vec<u32>, _> = s
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse::<u32>())
        .collect();
    match parts {
        Ok(v) if !v.is_empty() && v.len() <= 4 => Ok(v),
        _ => Err(format!("`{s}` is not a version like \"22.05\"")),
    }
}
