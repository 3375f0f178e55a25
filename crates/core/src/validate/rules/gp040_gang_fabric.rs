//! GP040: a multi-node gang without a compute fabric to talk over.
use super::prelude::*;
use crate::model::{Authority, Cluster, NodeIdx, Tier, Workload, WorkloadKind};
use std::collections::{BTreeMap, BTreeSet};

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

/// What the rule asks of the nodes a class may land on. The same for every class with
/// the same scheduler and models, so computed once for each (a 100,000-GPU superpod has
/// thousands of training classes and a few such pairs: validation took 0.4 s here).
struct Reach {
    /// No node at all.
    empty: bool,
    /// Every node's class declares `nics 0`; their classes, sorted.
    none: Option<Vec<String>>,
    /// The nodes mix NIC kinds (InfiniBand and RoCE).
    mixed: bool,
    /// A leaf holds nodes of both kinds.
    mixed_leaf: bool,
}

fn reach(cx: &Ctx, w: &Workload) -> Reach {
    let m = cx.model;
    let nodes = candidates(m, w);
    let class = |n: NodeIdx| m.classes.get(&m.nodes[n].class);
    // A class that declares no `nics` at all says nothing about its NICs (unknown, not
    // absent); only `nics 0` says there are none.
    let declared_none = |n: NodeIdx| {
        cx.spec.classes.iter().any(|k| {
            k.name.value == m.nodes[n].class
                && k.nics
                    .as_ref()
                    .is_some_and(|x| x.count.as_ref().is_some_and(|c| c.value == 0))
        })
    };
    let none = nodes.iter().all(|&n| declared_none(n)).then(|| {
        let classes: BTreeSet<&str> = nodes.iter().map(|&n| m.nodes[n].class.as_str()).collect();
        classes.into_iter().map(str::to_string).collect()
    });
    let kind = |n: NodeIdx| {
        class(n)
            .filter(|k| k.nics > 0)
            .map(|k| match k.nic_kind.as_deref() {
                Some("infiniband") | None => "infiniband",
                Some(_) => "roce",
            })
    };
    let kinds: BTreeSet<&str> = nodes.iter().filter_map(|&n| kind(n)).collect();
    let mixed = kinds.len() >= 2;
    let on: BTreeSet<NodeIdx> = if mixed {
        nodes.iter().copied().collect()
    } else {
        BTreeSet::new()
    };
    let mixed_leaf = mixed
        && m.switches.iter().any(|s| {
            s.tier == crate::model::SwitchTier::Leaf
                && s.nodes
                    .iter()
                    .filter(|n| on.contains(n))
                    .filter_map(|&n| kind(n))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
        });
    Reach {
        empty: nodes.is_empty(),
        none,
        mixed,
        mixed_leaf,
    }
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let mut seen: BTreeMap<(Option<Authority>, Vec<String>), Reach> = BTreeMap::new();
    for w in m
        .workloads
        .iter()
        .filter(|w| w.kind == WorkloadKind::Training)
    {
        if m.gang_pods(w) <= 1 || w.required_tier == Some(Tier::Nvlink) {
            continue;
        }
        let r = seen
            .entry((m.authority_of(w), w.models.clone()))
            .or_insert_with(|| reach(cx, w));
        if r.empty {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl.gang_span.unwrap_or(decl.span);
        if let Some(classes) = &r.none {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "training `{}` spans {} nodes per gang, but its node classes ({}) declare no compute NICs",
                        w.name,
                        m.gang_pods(w),
                        classes.join(", ")
                    ),
                )
                .at(span, "multi-node gang")
                .with_help("declare the compute NICs in the node class (nics 8 speed=\"400Gbps\" kind=\"infiniband\"), or keep each gang on one node"),
            );
            continue;
        }
        if !r.mixed {
            continue;
        }
        let wide = w.required_tier.is_none_or(|t| t > Tier::Leaf);
        if wide || r.mixed_leaf {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "a gang of training `{}` may span InfiniBand and RoCE nodes{}",
                        w.name,
                        if r.mixed_leaf { " under one leaf" } else { "" }
                    ),
                )
                .at(span, "one communicator, two link layers")
                .with_help("restrict the class to one NIC kind (models or a pool), or require topology required=\"leaf\" on leaves of one kind"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::source::SourceMap;

    /// GP040's messages for `text`.
    fn gp040(text: &str) -> Vec<String> {
        let mut sources = SourceMap::new();
        sources.add("gp040.kdl", text.to_string());
        crate::validate::validate(&sources)
            .diagnostics
            .iter()
            .filter(|d| d.code == "GP040")
            .map(|d| d.message.clone())
            .collect()
    }

    const HEAD: &str = r#"
cluster "c" { scheduler "volcano"; }
node-class "ib" {
    gpus 4 model="h100"
    nics 4 speed="400Gbps" kind="infiniband"
}
node-class "roce" {
    gpus 4 model="h100"
    nics 4 speed="400Gbps" kind="roce"
}
node-class "pcie" {
    gpus 4 model="l40s"
    nics 0
}
nodes "i-[01-02]" class="ib"
nodes "r-[01-02]" class="roce"
nodes "p-[01-02]" class="pcie"
priority "low" value=10
team "t" guarantee=64 burst=64
"#;

    #[test]
    fn every_class_of_the_same_models_gets_its_own_finding() {
        // Two classes with the same scheduler and models share what their nodes are
        // (computed once): each is still reported.
        let text = format!(
            "{HEAD}fabric {{\n    leaf \"l1\" nodes=\"i-[01-02]\"\n    leaf \"l2\" nodes=\"r-[01-02]\"\n    leaf \"l3\" nodes=\"p-[01-02]\"\n}}\n\
             training \"a\" team=\"t\" priority=\"low\" {{ gang gpus=8 gpus-per-node=4; models \"l40s\"; }}\n\
             training \"b\" team=\"t\" priority=\"low\" {{ gang gpus=8 gpus-per-node=4; models \"l40s\"; }}\n\
             training \"c\" team=\"t\" priority=\"low\" {{ gang gpus=8 gpus-per-node=4; models \"h100\"; }}\n\
             training \"d\" team=\"t\" priority=\"low\" {{ gang gpus=8 gpus-per-node=4; models \"h100\"; topology required=\"leaf\"; }}\n"
        );
        let found = gp040(&text);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].contains("`a` spans 2 nodes per gang") && found[0].contains("(pcie)"));
        assert!(found[1].contains("`b` spans 2 nodes per gang"));
        // `c` may span both kinds (no tier); `d` stays in a leaf of one kind.
        assert!(found[2].contains("training `c` may span InfiniBand and RoCE nodes"));
        assert!(!found[2].contains("under one leaf"));
    }

    #[test]
    fn a_leaf_of_both_kinds_is_reported_for_leaf_gangs() {
        let head = HEAD
            .replace(
                "nodes \"i-[01-02]\" class=\"ib\"",
                "nodes \"m-1\" class=\"ib\"\nnodes \"m-3\" class=\"ib\"",
            )
            .replace(
                "nodes \"r-[01-02]\" class=\"roce\"",
                "nodes \"m-2\" class=\"roce\"\nnodes \"m-4\" class=\"roce\"",
            );
        let text = format!(
            "{head}fabric {{\n    leaf \"l1\" nodes=\"m-[1-2]\"\n    leaf \"l2\" nodes=\"m-[3-4]\"\n    leaf \"l3\" nodes=\"p-[01-02]\"\n}}\n\
             training \"d\" team=\"t\" priority=\"low\" {{ gang gpus=8 gpus-per-node=4; models \"h100\"; topology required=\"leaf\"; }}\n"
        );
        let found = gp040(&text);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("`d` may span InfiniBand and RoCE nodes under one leaf"));
    }
}
