//! GP011: a GPU or NIC index that the node does not have.
use super::prelude::*;
use crate::spec::ClassDecl;

pub(crate) static RULE: Rule = Rule {
    code: "GP011",
    name: "index-out-of-range",
    severity: Severity::Error,
    summary: "an NVLink domain, NUMA node, PCIe switch, override or MIG layout names a GPU or NIC the node does not have",
    docs: r#"
**What.** A GPU index in `nvlink-domain gpus=`, `numa gpus=`, `pcie-switch gpus=`,
`node gpus-down=` or `mig layout gpus=` is not below the class's `gpus` count; or a NIC
index in `nics=` is not below its `nics` count.

**Why.** GPUs are numbered from 0 as `nvidia-smi` numbers them; an index past the end is
a typo that would leave a real GPU out of its domain.

**Example.**
```text
node-class "hgx" {
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-8"
}
```

**Fix.** Use indexes `0` to `count - 1` (`gpus="0-7"`).
"#,
    check: Some(check),
};

/// Reports the indexes of `set` (in `what`) at or above `limit`, the number of `unit`s
/// `owner` has.
fn over(
    what: &str,
    set: &Spanned<Vec<u32>>,
    limit: u32,
    unit: &str,
    owner: &str,
    out: &mut Diagnostics,
) {
    let bad: Vec<u32> = set.value.iter().copied().filter(|&i| i >= limit).collect();
    if bad.is_empty() {
        return;
    }
    out.push(
        Diagnostic::error(
            RULE.code,
            format!(
                "{what} names {unit} {} but {owner} has {limit} {unit}s",
                crate::units::format_index_set(&bad)
            ),
        )
        .at(
            set.span,
            format!("{unit}s are numbered 0 to {}", limit.saturating_sub(1)),
        )
        .with_help(if limit == 0 {
            format!("declare the {unit}s first (`{unit}s N ...`)")
        } else {
            format!("use indexes 0-{}", limit - 1)
        }),
    );
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for c in &cx.spec.classes {
        check_class(c, out);
    }
    check_gpus_down(cx, out);
    check_layouts(cx, out);
}

/// A node class's NVLink domains, NUMA nodes and PCIe switches against its GPU, NIC
/// and core counts.
fn check_class(c: &ClassDecl, out: &mut Diagnostics) {
    let gpus = c.gpu_total();
    let nics = c
        .nics
        .as_ref()
        .and_then(|n| n.count.as_ref())
        .map(|c| c.value)
        .unwrap_or(0);
    let owner = format!("class `{}`", c.name.value);
    for d in &c.nvlink_domains {
        over("nvlink-domain", d, gpus, "GPU", &owner, out);
    }
    for n in &c.numa {
        if let Some(g) = &n.gpus {
            over("numa", g, gpus, "GPU", &owner, out);
        }
        if let Some(x) = &n.nics {
            over("numa", x, nics, "NIC", &owner, out);
        }
        if let (Some(cores), Some(cpu)) = (&n.cores, &c.cpu) {
            let total = cpu.sockets.as_ref().map(|s| s.value).unwrap_or(1)
                * cpu.cores_per_socket.as_ref().map(|s| s.value).unwrap_or(1)
                * cpu.threads_per_core.as_ref().map(|s| s.value).unwrap_or(1);
            over("numa cores", cores, total, "core", &owner, out);
        }
    }
    for p in &c.pcie_switches {
        if let Some(g) = &p.gpus {
            over("pcie-switch", g, gpus, "GPU", &owner, out);
        }
        if let Some(x) = &p.nics {
            over("pcie-switch", x, nics, "NIC", &owner, out);
        }
    }
}

/// `gpus-down` of node overrides against their class's GPU count.
fn check_gpus_down(cx: &Ctx, out: &mut Diagnostics) {
    for g in &cx.spec.node_groups {
        let count = g
            .class
            .as_ref()
            .and_then(|c| cx.model.classes.get(&c.value))
            .map(|c| c.gpu_count);
        for o in &g.overrides {
            if let (Some(d), Some(count)) = (&o.gpus_down, count) {
                let owner = format!("node `{}`", o.name.value);
                over("gpus-down", d, count, "GPU", &owner, out);
            }
        }
    }
}

/// A MIG layout's `gpus` against the node with the fewest GPUs among its nodes.
fn check_layouts(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for (i, l) in cx.spec.mig.layouts.iter().enumerate() {
        let Some(gpus) = &l.gpus else { continue };
        let Some(layout) = m.mig.layouts.get(i) else {
            continue;
        };
        if let Some((node, min)) = layout
            .nodes
            .iter()
            .map(|&n| (&m.nodes[n], m.nodes[n].gpus.len() as u32))
            .min_by_key(|x| x.1)
        {
            let owner = format!("node `{}`", node.name);
            over("the MIG layout", gpus, min, "GPU", &owner, out);
        }
    }
}
