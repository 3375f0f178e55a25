//! GP040: a multi-node gang without a compute fabric to talk over.
use super::prelude::*;
use crate::model::{Cluster, NodeIdx, Tier, Workload, WorkloadKind};
use std::collections::BTreeSet;

pub(crate) static RULE: Rule = Rule {
    code: "GP040",
    name: "gang-fabric",
    severity: Severity::Error,
    summary: "a gang needs several nodes, but its nodes have no compute NICs or mix InfiniBand and RoCE",
    docs: r#"
**What.** A training class whose gang spans more than one node (and not one multi-node
NVLink domain) may only land on nodes whose class declares `nics 0` (a class without a
`nics` node says nothing: its NICs are unknown, not absent); or its
nodes mix NIC kinds (`infiniband` and `roce`/`ethernet`) where one gang can span both:
its required tier is wider than `leaf`, or a leaf holds both kinds.

**Why.** NCCL moves a multi-node gang's collectives over the compute NICs
(`NCCL_IB_HCA`): without them it falls back to TCP sockets over the management
network, orders of magnitude slower; InfiniBand and RoCE are different link layers and
one NCCL communicator cannot use both.

**Example.**
```text
node-class "pcie-box" { gpus 4 model="l40s"; nics 0; }   // no compute NICs
training "ft" team="t" priority="low" { gang gpus=8 gpus-per-node=4 }
```

**Fix.** Declare the compute NICs (`nics 8 speed="400Gbps" kind="infiniband"`), keep the
gang on one node (`gang gpus-per-node=` equal to the gang), or restrict it to one NIC kind
(`models`, a pool, or `topology required="leaf"` on uniform leaves).
"#,
    check: Some(check),
};

/// Nodes a class may land on: an accepted model, owned by its scheduler.
fn candidates(m: &Cluster, w: &Workload) -> Vec<NodeIdx> {
    let a = m.authority_of(w);
    (0..m.nodes.len())
        .filter(|&n| {
            m.nodes[n]
                .usable_gpus()
                .any(|g| g.model.as_deref().is_some_and(|x| w.accepts(x)))
                && (a.is_none() || m.node_authority(n) == a)
        })
        .collect()
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for w in m
        .workloads
        .iter()
        .filter(|w| w.kind == WorkloadKind::Training)
    {
        if m.gang_pods(w) <= 1 || w.required_tier == Some(Tier::Nvlink) {
            continue;
        }
        let nodes = candidates(m, w);
        if nodes.is_empty() {
            continue;
        }
        let class = |n: NodeIdx| m.classes.get(&m.nodes[n].class);
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.gang_span.unwrap_or(decl.span);
        // A class that declares no `nics` at all says nothing about its NICs (unknown,
        // not absent); only `nics 0` says there are none.
        let declared_none = |n: NodeIdx| {
            cx.spec.classes.iter().any(|k| {
                k.name.value == m.nodes[n].class
                    && k.nics
                        .as_ref()
                        .is_some_and(|x| x.count.as_ref().is_some_and(|c| c.value == 0))
            })
        };
        if nodes.iter().all(|&n| declared_none(n)) {
            let classes: BTreeSet<&str> =
                nodes.iter().map(|&n| m.nodes[n].class.as_str()).collect();
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "training `{}` spans {} nodes per gang, but its node classes ({}) declare no compute NICs",
                        w.name,
                        m.gang_pods(w),
                        classes.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                )
                .at(span, "multi-node gang")
                .with_help("declare the compute NICs in the node class (nics 8 speed=\"400Gbps\" kind=\"infiniband\"), or keep each gang on one node"),
            );
            continue;
        }
        let kind = |n: NodeIdx| {
            class(n)
                .filter(|k| k.nics > 0)
                .map(|k| match k.nic_kind.as_deref() {
                    Some("infiniband") | None => "infiniband",
                    Some(_) => "roce",
                })
        };
        let kinds: BTreeSet<&str> = nodes.iter().filter_map(|&n| kind(n)).collect();
        if kinds.len() < 2 {
            continue;
        }
        let wide = w.required_tier.is_none_or(|t| t > Tier::Leaf);
        let mixed_leaf = m.switches.iter().any(|s| {
            s.tier == crate::model::SwitchTier::Leaf
                && s.nodes
                    .iter()
                    .filter(|n| nodes.contains(n))
                    .filter_map(|&n| kind(n))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
        });
        if wide || mixed_leaf {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "a gang of training `{}` may span InfiniBand and RoCE nodes{}",
                        w.name,
                        if mixed_leaf { " under one leaf" } else { "" }
                    ),
                )
                .at(span, "one communicator, two link layers")
                .with_help("restrict the class to one NIC kind (models or a pool), or require topology required=\"leaf\" on leaves of one kind"),
            );
        }
    }
}
