//! GP012: one GPU, NIC or node in two groups that must be disjoint.
use super::prelude::*;
use crate::model::Cluster;
use crate::spec::ClassDecl;
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP012",
    name: "overlapping-groups",
    severity: Severity::Error,
    summary: "a GPU in two NVLink domains, NUMA nodes or PCIe switches; a node in two multi-node NVLink domains or pools; a GPU in two MIG layouts",
    docs: r#"
**What.** Groups that partition the hardware overlap: a GPU listed by two
`nvlink-domain`s, two `numa` nodes or two `pcie-switch`es of a class; a NIC under two
NUMA nodes; a node in two multi-node `nvlink-domain`s or two `pool`s; a GPU covered by
two fixed `mig layout`s, or by two `current=#true` ones (one fixed and one current layout
on a GPU is a planned reconfiguration, not an overlap).

**Why.** Each of these is physically one place. Overlaps make the topology ambiguous (which
domain does GPU 3 belong to?) and would render contradictory scheduler configuration.

**Example.**
```text
node-class "hgx" {
    gpus 8 model="h100-sxm5-80gb"
    numa 0 gpus="0-4"
    numa 1 gpus="4-7"
}
```

**Fix.** Make the groups disjoint.
"#,
    check: Some(check),
};

fn overlap<'a>(
    what: &str,
    unit: &str,
    sets: impl IntoIterator<Item = &'a Spanned<Vec<u32>>>,
    out: &mut Diagnostics,
) {
    let mut owner: BTreeMap<u32, Span> = BTreeMap::new();
    for s in sets {
        let mut clash: Vec<u32> = Vec::new();
        let mut first = None;
        for &i in &s.value {
            match owner.get(&i) {
                Some(f) if *f != s.span => {
                    clash.push(i);
                    first.get_or_insert(*f);
                }
                _ => {
                    owner.insert(i, s.span);
                }
            }
        }
        if let Some(f) = first {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "{unit} {} in two {what}s",
                        crate::units::format_index_set(&clash)
                    ),
                )
                .at(s.span, "overlaps")
                .with_related(f, "already listed here")
                .with_help(format!("each {unit} belongs to one {what}")),
            );
        }
    }
}

/// A named group of node names, as written.
type NamedNodes<'a> = (&'a str, Option<&'a Spanned<Vec<String>>>);

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for c in &cx.spec.classes {
        check_class(c, out);
    }
    node_groups(
        "multi-node NVLink domain",
        cx.spec
            .mnnvl_domains
            .iter()
            .map(|d| (d.name.value.as_str(), d.nodes.as_ref())),
        out,
    );
    node_groups(
        "pool",
        cx.spec
            .pools
            .iter()
            .map(|d| (d.name.value.as_str(), d.nodes.as_ref())),
        out,
    );
    mig_layouts(cx.model, out);
}

/// A node class's NVLink domains, NUMA nodes and PCIe switches, each a partition of
/// the class's GPUs (and NICs).
fn check_class(c: &ClassDecl, out: &mut Diagnostics) {
    overlap("NVLink domain", "GPU", &c.nvlink_domains, out);
    overlap(
        "NUMA node",
        "GPU",
        c.numa.iter().filter_map(|n| n.gpus.as_ref()),
        out,
    );
    overlap(
        "NUMA node",
        "NIC",
        c.numa.iter().filter_map(|n| n.nics.as_ref()),
        out,
    );
    overlap(
        "PCIe switch",
        "GPU",
        c.pcie_switches.iter().filter_map(|n| n.gpus.as_ref()),
        out,
    );
    overlap(
        "PCIe switch",
        "NIC",
        c.pcie_switches.iter().filter_map(|n| n.nics.as_ref()),
        out,
    );
}

/// Groups of nodes (`what`: multi-node NVLink domains, pools) of which a node belongs
/// to at most one.
fn node_groups<'a>(
    what: &str,
    groups: impl IntoIterator<Item = NamedNodes<'a>>,
    out: &mut Diagnostics,
) {
    let mut owner: BTreeMap<&str, (&str, Span)> = BTreeMap::new();
    for (name, nodes) in groups {
        let Some(nodes) = nodes else { continue };
        let mut clash = Vec::new();
        let mut first = None;
        for n in &nodes.value {
            match owner.get(n.as_str()) {
                Some(f) => {
                    clash.push(n.clone());
                    first.get_or_insert(*f);
                }
                None => {
                    owner.insert(n, (name, nodes.span));
                }
            }
        }
        if let Some((fname, fspan)) = first {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "{} node(s) in two {what}s, `{fname}` and `{name}`: {}",
                        clash.len(),
                        crate::units::compress_names(&clash).join(", ")
                    ),
                )
                .at(nodes.span, "overlaps")
                .with_related(fspan, format!("`{fname}` lists them"))
                .with_help(format!("a node belongs to at most one {what}")),
            );
        }
    }
}

/// MIG layouts: a GPU has one fixed layout and one current layout; the two may differ
/// (that is a reconfiguration), so they are checked separately.
fn mig_layouts(m: &Cluster, out: &mut Diagnostics) {
    let mut owner: BTreeMap<(bool, usize, u32), Span> = BTreeMap::new();
    for l in &m.mig.layouts {
        let mut clash = Vec::new();
        let mut first = None;
        for &n in &l.nodes {
            let gpus: Vec<u32> = if l.gpus.is_empty() {
                m.nodes[n].gpus.iter().map(|g| g.index).collect()
            } else {
                l.gpus.clone()
            };
            for g in gpus {
                match owner.get(&(l.current, n, g)) {
                    Some(f) => {
                        clash.push(format!("{}/gpu{g}", m.nodes[n].name));
                        first.get_or_insert(*f);
                    }
                    None => {
                        owner.insert((l.current, n, g), l.span);
                    }
                }
            }
        }
        if let Some(f) = first {
            out.push(
                Diagnostic::error(RULE.code, format!("{} GPU(s) get two MIG layouts: {}", clash.len(), clash.iter().take(4).cloned().collect::<Vec<_>>().join(", ")))
                    .at(l.span, "second layout")
                    .with_related(f, "first layout")
                    .with_help("a GPU has one MIG layout; narrow `nodes=` or `gpus=` so the layouts do not overlap"),
            );
        }
    }
}
