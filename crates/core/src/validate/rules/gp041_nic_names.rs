//! GP041: NIC device names that do not match the NICs or are unsafe.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP041",
    name: "nic-names",
    severity: Severity::Error,
    summary: "`nics names=` does not expand to one name per NIC, a name or interface is not a device name, or a `bus-ids=` entry is not a PCI bus id",
    docs: r#"
**What.** `nics N names="mlx5_[0-7]"` (patterns, comma-separated, in rail order) must
expand to exactly N device names, each made of
letters, digits, `_`, `-`, `.` and `:`; `socket-ifname` is one or more interface names
or prefixes, comma-separated, optionally led by `^` (exclude) or `=` (exact), as NCCL
reads `NCCL_SOCKET_IFNAME`, each a Linux interface name (at most 15 characters, not `.`
or `..`, not starting with `-`); `gid-index` only makes sense for RoCE. Every entry of
`gpus bus-ids=` and `nics bus-ids=` must be a PCI bus id (`0000:18:00.0` or `18:00.0`).

**Why.** The names become `NCCL_IB_HCA` and the NCCL topology file of the class, and
values in an environment file read by shells and systemd: a wrong count puts a rail on
the wrong NIC, an unsafe character breaks (or injects into) the file.

**Example.**
```text
nics 8 speed="400Gbps" kind="infiniband" names="mlx5_[0-3]"   // 4 names, 8 NICs
```

**Fix.** Write one name per NIC, in rail order: `names="mlx5_[0-7]"`.
"#,
    check: Some(check),
};

fn device_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
}

/// A Linux interface name or prefix: what `ip link` accepts (IFNAMSIZ is 16 with the
/// NUL), and never a word a shell or NCCL would read as an option or a path.
fn interface_name(s: &str) -> bool {
    device_name(s) && s.len() <= 15 && s != "." && s != ".." && !s.starts_with('-')
}

/// GP041 for a `bus-ids=` entry that is not a PCI bus id (never replaced silently).
fn bus_ids(what: &str, v: Option<&Spanned<String>>, out: &mut Diagnostics) {
    let Some(v) = v else { return };
    if let Some(bad) = v
        .value
        .split(',')
        .find(|id| crate::units::normalize_bus_id(id).is_none())
    {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{what} bus id {} is not a PCI bus id",
                    crate::diag::quoted(bad.trim())
                ),
            )
            .at(v.span, "not a list of PCI bus ids")
            .with_help(
                "write them as `nvidia-smi` does, comma-separated: \"0000:18:00.0,0000:2a:00.0\"",
            ),
        );
    }
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for k in &cx.spec.classes {
        for g in &k.gpus {
            bus_ids("GPU", g.bus_ids.as_ref(), out);
        }
        bus_ids("NIC", k.nics.as_ref().and_then(|n| n.bus_ids.as_ref()), out);
    }
    for k in &cx.spec.classes {
        let Some(nics) = &k.nics else { continue };
        let count = nics.count.as_ref().map(|c| c.value).unwrap_or(0);
        if let Some(p) = &nics.names {
            match crate::units::expand_pattern_list(&p.value) {
                Err(e) => out.push(
                    Diagnostic::error(RULE.code, format!("NIC names: {e}"))
                        .at(p.span, "not a name pattern")
                        .with_help("write the names as a pattern, e.g. \"mlx5_[0-7]\""),
                ),
                Ok(names) => {
                    if let Some(bad) = names.iter().find(|n| !device_name(n)) {
                        out.push(
                            Diagnostic::error(
                                RULE.code,
                                format!("NIC name {} is not a device name", crate::diag::quoted(bad)),
                            )
                            .at(p.span, "unsafe name")
                            .with_help("device names are letters, digits, `_`, `-`, `.` and `:` (e.g. mlx5_0)"),
                        );
                    } else if names.len() as u32 != count {
                        out.push(
                            Diagnostic::error(
                                RULE.code,
                                format!("{} NIC names for {count} NICs", names.len()),
                            )
                            .at(p.span, format!("{} names", names.len()))
                            .with_help(format!("write one name per NIC, in rail order ({count})")),
                        );
                    }
                }
            }
        }
        if let Some(s) = &nics.socket_ifname {
            let ok = s.value.split(',').enumerate().all(|(i, part)| {
                let part = if i == 0 {
                    part.trim_start_matches(['^', '='])
                } else {
                    part
                };
                interface_name(part)
            });
            if !ok {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!("socket interface {} is not an interface list", crate::diag::quoted(&s.value)),
                    )
                    .at(s.span, "unsafe interface name")
                    .with_help("write interface names or prefixes, comma-separated, e.g. \"eth0\" or \"^docker,lo\""),
                );
            }
        }
        if let (Some(g), Some(kind)) = (&nics.gid_index, &nics.kind) {
            if kind.value == "infiniband" {
                out.push(
                    Diagnostic::error(RULE.code, "`gid-index` on InfiniBand NICs")
                        .at(g.span, "only RoCE uses a GID index")
                        .with_help("remove gid-index, or set kind=\"roce\""),
                );
            }
        }
    }
}
