//! The rules a name must follow to be usable by every target gpuplan renders: a file
//! name under the output folder, a Kubernetes object name or label, a Slurm name, a
//! Volcano or Kueue object, a word in a generated shell script.
//!
//! Pure predicates that say *why* a name is refused; the validation rules (GP031 for
//! names, GP032 for labels and taints) attach the span and the hint, and the renderers
//! check the same predicates again before anything is written.

/// Longest DNS-1123 label (Kubernetes namespaces, most object names, label values).
pub const DNS_LABEL_MAX: usize = 63;

/// Longest Slurm `ClusterName` that accounting can store: slurmdbd names its tables
/// `<cluster>_<suffix>`, the longest suffix has 24 characters and MySQL/MariaDB table
/// names at most 64.
pub(crate) const CLUSTER_NAME_MAX: usize = 40;

/// Prefix of the labels gpuplan writes.
pub const LABEL_PREFIX: &str = "gpuplan.io";
/// The node label (and taint key) that names a node's pool.
pub const POOL_LABEL: &str = "gpuplan.io/pool";
pub const MODEL_LABEL: &str = "gpuplan.io/gpu-model";
/// The scheduling authority that owns a node (label and `NoSchedule` taint key).
pub const SCHEDULER_LABEL: &str = "gpuplan.io/scheduler";
/// How a node is bought (`on-demand`, `reserved`, `spot`): a label on every node once
/// any capacity is declared, and a `NoSchedule` taint on spot nodes that only classes
/// which may be interrupted tolerate.
pub const CAPACITY_LABEL: &str = "gpuplan.io/capacity";
/// The GPU Operator's MIG manager reads this label.
pub const MIG_CONFIG_LABEL: &str = "nvidia.com/mig.config";
/// The device plugin reads this label.
pub const PLUGIN_CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";
/// The GPU Operator deploys the device plugin on a node unless this label is `false`;
/// gpuplan sets it so on nodes that hand out GPUs through DRA.
pub const DEVICE_PLUGIN_DEPLOY_LABEL: &str = "nvidia.com/gpu.deploy.device-plugin";
/// The NVIDIA driver a node runs (`gpus driver=`, else its GPU model's), which the GPU
/// Operator's NVIDIADriver objects select.
pub const DRIVER_LABEL: &str = "gpuplan.io/driver";
/// The label gpuplan puts on the pods of a rendered workload class.
pub const CLASS_LABEL: &str = "gpuplan.io/class";

/// Label keys gpuplan writes itself, one value per node computed from the plan: a
/// label or taint the user declares with one of these keys would be overwritten.
pub(crate) const RESERVED_LABEL_KEYS: &[&str] = &[
    POOL_LABEL,
    SCHEDULER_LABEL,
    CAPACITY_LABEL,
    DRIVER_LABEL,
    MODEL_LABEL,
    MIG_CONFIG_LABEL,
    PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    CLASS_LABEL,
    "gpuplan.io/nvlink-domain",
    "gpuplan.io/leaf",
    "gpuplan.io/spine",
    "gpuplan.io/core",
    "kubernetes.io/hostname",
];

/// Why a name is refused (a phrase that completes "must ...").
pub(crate) type Why = String;

/// A DNS-1123 label of at most `max` characters: lowercase letters, digits and `-`,
/// starting and ending with a letter or digit. The strictest form of name any target
/// needs: a Kubernetes namespace or object name, a label value, a Slurm partition,
/// account or QOS, a file name, and a shell word that needs no quoting.
pub fn dns_label(name: &str, max: usize) -> Result<(), Why> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > max {
        return Err(format!(
            "must have at most {max} characters (it has {})",
            name.chars().count()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "must use only lowercase letters, digits and `-` (it has {})",
            describe(c)
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// Whether `name` is a DNS-1123 label of at most 63 characters.
pub fn is_dns_label(name: &str) -> bool {
    dns_label(name, DNS_LABEL_MAX).is_ok()
}

/// A Kubernetes label value (also a taint value): empty, or at most 63 letters, digits,
/// `-`, `_` and `.`, starting and ending with a letter or digit.
pub(crate) fn label_value(v: &str) -> Result<(), Why> {
    if v.is_empty() {
        return Ok(());
    }
    qualified_part(v)
}

/// Whether `v` is a valid Kubernetes label value.
pub fn is_label_value(v: &str) -> bool {
    label_value(v).is_ok()
}

/// A Kubernetes label key (also a taint key): an optional prefix, a DNS-1123
/// subdomain of at most 253 characters followed by `/`, then a name of at most 63
/// letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit.
pub fn label_key(key: &str) -> Result<(), Why> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("must not start with `/` (the prefix before `/` is empty)".into());
        }
        dns_subdomain(p).map_err(|why| format!("prefix `{p}` {why}"))?;
    }
    if name.is_empty() {
        return Err("must have a name (after the `/` of a prefix)".into());
    }
    match prefix {
        Some(_) => qualified_part(name).map_err(|why| format!("name `{name}` {why}")),
        None => qualified_part(name),
    }
}

/// A DNS-1123 subdomain: lowercase DNS labels joined by dots, at most 253 characters.
pub(crate) fn dns_subdomain(s: &str) -> Result<(), Why> {
    if s.len() > 253 {
        return Err(format!(
            "must have at most 253 characters (it has {})",
            s.chars().count()
        ));
    }
    for part in s.split('.') {
        if part.is_empty() {
            return Err("must not have an empty part between dots".into());
        }
        dns_label(part, DNS_LABEL_MAX)?;
    }
    Ok(())
}

/// The name part of a label key, or a label value: at most 63 characters, letters
/// (either case), digits, `-`, `_`, `.`, starting and ending with a letter or digit.
fn qualified_part(s: &str) -> Result<(), Why> {
    if s.len() > DNS_LABEL_MAX {
        return Err(format!(
            "must have at most {DNS_LABEL_MAX} characters (it has {})",
            s.chars().count()
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
    {
        return Err(format!(
            "must use only letters, digits, `-`, `_` and `.` (it has {})",
            describe(c)
        ));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(s.chars().next()) || !alnum(s.chars().last()) {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A MIG profile name as the driver reports it (`mig-name`): `<n>g.<m>gb`, optionally
/// followed by `+me`, `+gfx`, `-me`, `+me.all` and similar suffixes. These names become
/// shell words in the node scripts, mig-parted configurations and, with `+` written as
/// `.`, Kubernetes resource names, so the grammar is closed.
pub(crate) fn mig_profile(name: &str) -> Result<(), Why> {
    let bad = || {
        Err(
            "must look like `3g.40gb`, optionally with a `+me`, `+gfx` or `-me` suffix \
             (lowercase letters, digits, `.`, `+`, `-`)"
                .to_string(),
        )
    };
    if name.is_empty() || name.len() > 40 {
        return bad();
    }
    let Some((g, rest)) = name.split_once("g.") else {
        return bad();
    };
    if g.is_empty() || !g.bytes().all(|b| b.is_ascii_digit()) {
        return bad();
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let after = &rest[digits..];
    let Some(suffix) = after.strip_prefix("gb") else {
        return bad();
    };
    if digits == 0 {
        return bad();
    }
    // Suffixes: `+word` or `-word`, words of lowercase letters, digits and `.`.
    let mut s = suffix;
    while !s.is_empty() {
        let Some(rest) = s.strip_prefix('+').or_else(|| s.strip_prefix('-')) else {
            return bad();
        };
        let word = rest
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'.')
            .count();
        if word == 0 || rest.as_bytes()[0] == b'.' || rest.as_bytes()[word - 1] == b'.' {
            return bad();
        }
        s = &rest[word..];
    }
    Ok(())
}

/// A character as a message shows it: printable ones in backticks, others by name or
/// code point.
fn describe(c: char) -> String {
    match c {
        '\n' => "a line break".into(),
        '\t' => "a tab".into(),
        ' ' => "a space".into(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        '`' => "a backtick".into(),
        c => format!("`{c}`"),
    }
}

/// A workspace of a shared state backend (`backend "pg" workspace=...`, `--workspace`):
/// 1 to 200 characters, none a control character. It is only ever a query parameter,
/// never part of a path or of SQL text.
pub fn workspace(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if name.chars().count() > 200 {
        return Err("it is longer than 200 characters".into());
    }
    if name.chars().any(char::is_control) {
        return Err("it contains a control character".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        for ok in ["a", "team-1", "0abc", &"x".repeat(63)] {
            assert!(dns_label(ok, 63).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("-a", "start and end"),
            ("a-", "start and end"),
            ("A", "`A`"),
            ("a_b", "`_`"),
            ("a.b", "`.`"),
            ("../x", "`.`"),
            ("a\nb; rm -rf /", "a line break"),
            ("a b", "a space"),
            ("a\u{7}", "U+0007"),
        ] {
            let e = dns_label(bad, 63).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(dns_label(&"x".repeat(64), 63).unwrap_err().contains("64"));
        assert!(dns_label("abcde", 4).is_err());
    }

    #[test]
    fn label_keys_and_values() {
        for ok in [
            "zone",
            "gpuplan.io/rack",
            "topology.kubernetes.io/zone",
            "A_b.c-D",
            "nvidia.com/gpu.product",
        ] {
            assert!(label_key(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a/b/c",
            "Example.com/x",
            "a..b/x",
            "-a",
            "a b",
            &format!("{}/x", "a".repeat(254)),
            &"a".repeat(64),
        ] {
            assert!(label_key(bad).is_err(), "{bad:?}");
        }
        for ok in ["", "a", "A.b_c-1", &"v".repeat(63)] {
            assert!(label_value(ok).is_ok(), "{ok}");
        }
        for bad in ["-a", "a-", "a/b", "a b", &"v".repeat(64), "$(id)"] {
            assert!(label_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mig_profiles() {
        for ok in [
            "1g.10gb",
            "3g.40gb",
            "1g.10gb+me",
            "1g.24gb+gfx",
            "1g.23gb+me.all",
            "1g.23gb-me",
            "7g.80gb",
            "3g.39gb",
        ] {
            assert!(mig_profile(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "g.10gb",
            "1g.gb",
            "1g.10",
            "1g.10gb+",
            "1g.10gb+.x",
            "1g.10gb+x.",
            "1g.10gb x",
            "1g.10gb;id",
            "1G.10GB",
            "1g.10gb+ME",
        ] {
            assert!(mig_profile(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn subdomains() {
        assert!(dns_subdomain("a.b.c").is_ok());
        assert!(dns_subdomain("a..b").is_err());
        assert!(dns_subdomain(".a").is_err());
    }
}
