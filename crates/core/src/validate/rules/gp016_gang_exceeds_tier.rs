//! GP016: a gang larger than any domain of its required tier can hold.
use super::prelude::*;
use crate::model::capacity::capacity_by_domain;
use crate::model::{Cluster, Tier, Workload};
use crate::spec::{WorkloadDecl, WorkloadKind};
use std::collections::BTreeMap;

pub(crate) static RULE: Rule = Rule {
    code: "GP016",
    name: "gang-exceeds-tier",
    severity: Severity::Error,
    summary: "a training gang is larger than the largest domain of its required topology tier",
    docs: r#"
**What.** A training gang must land inside one domain of its `required` tier (one NVLink
domain, node, leaf, spine, core, or the whole cluster when none is required), using
`gpus-per-node` GPUs of an acceptable model on each node. No domain of that tier has
enough such GPUs, even with the cluster empty.

**Why.** All-or-nothing gangs that can never fit stay pending forever (or, worse, get
admitted by quota and then never scheduled). The message names the largest domain and
what it can hold.

**Example.** A 128-GPU gang that must stay in one leaf, with 12 DGX nodes per leaf:
```text
training "llama" team="nlp" priority="prod" {
    gang gpus=128 gpus-per-node=8
    topology required="leaf"
}
```

**Fix.** Relax `required` to a wider tier (keep the tight tier as `preferred`), shrink
the gang, or add nodes to the leaf.
"#,
    check: Some(check),
};

/// The best domain of a tier for a gang: `(domain name, usable GPUs, nodes)`.
type Best = (String, u32, u32);

/// What a domain holds for a gang depends only on its models, per-node split and tier:
/// the best domain is computed once per distinct key (large fleets declare thousands of
/// gangs, and a tier has up to one domain per GPU).
struct BestDomains<'m> {
    model: &'m Cluster,
    memo: BTreeMap<GangKey<'m>, Option<Best>>,
}

/// What a domain's capacity for a gang depends on: acceptable models, GPUs per node,
/// gang size and tier.
type GangKey<'m> = (&'m [String], Option<u32>, u32, Tier);

impl<'m> BestDomains<'m> {
    fn new(model: &'m Cluster) -> Self {
        BestDomains {
            model,
            memo: BTreeMap::new(),
        }
    }

    /// The domain of `tier` that holds the most of `w`'s gang, if any holds some.
    fn best(&mut self, w: &'m Workload, tier: Tier) -> Option<&Best> {
        let m = self.model;
        let key = (w.models.as_slice(), w.gpus_per_node, w.gang_gpus, tier);
        self.memo
            .entry(key)
            .or_insert_with(|| capacity_by_domain(m, w, tier).into_iter().next())
            .as_ref()
    }

    /// Whether one domain of `tier` holds the whole gang.
    fn fits(&mut self, w: &'m Workload, tier: Tier) -> bool {
        self.best(w, tier).is_some_and(|c| c.1 >= w.gang_gpus)
    }
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let mut domains = BestDomains::new(cx.model);
    for w in cx
        .model
        .workloads
        .iter()
        // A class that accepts no model (its `memory` is too large): GP015.
        .filter(|w| w.kind == WorkloadKind::Training && w.gang_gpus > 0 && !w.accepts_none())
    {
        let tier = w.required_tier.unwrap_or(Tier::Cluster);
        if domains.fits(w, tier) {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let largest = largest_domain(domains.best(w, tier), tier);
        let wider = Tier::ALL
            .iter()
            .copied()
            .find(|t| *t > tier && domains.fits(w, *t));
        out.push(too_large(w, decl, tier, &largest, wider));
    }
}

/// What the largest domain of `tier` can hold, for the message.
fn largest_domain(best: Option<&Best>, tier: Tier) -> String {
    match best {
        Some((name, cap, nodes)) if tier != Tier::Cluster => {
            format!(
                "the largest {}, `{name}`, can hold {cap} on {nodes} node(s)",
                tier.as_str()
            )
        }
        Some((_, cap, _)) => format!("the whole cluster can hold {cap}"),
        None => "no node has GPUs of an acceptable model".to_string(),
    }
}

/// The diagnostic for a gang that no domain of `tier` holds; `wider` is the first wider
/// tier one of whose domains does.
fn too_large(
    w: &Workload,
    decl: &WorkloadDecl,
    tier: Tier,
    largest: &str,
    wider: Option<Tier>,
) -> Diagnostic {
    let gpn = w
        .gpus_per_node
        .map(|g| format!(" ({} per node)", g))
        .unwrap_or_default();
    let span = decl
        .required_tier
        .as_ref()
        .map(|t| t.span)
        .or(decl.gang_gpus.as_ref().map(|g| g.span))
        .unwrap_or(decl.span);
    let mut d = Diagnostic::error(
        RULE.code,
        format!(
            "gang `{}` needs {} GPUs{gpn} inside one {}; {largest}",
            w.name,
            w.gang_gpus,
            tier.as_str()
        ),
    )
    .at(span, format!("no {} is large enough", tier.as_str()));
    if let Some(g) = &decl.gang_gpus {
        if g.span != span {
            d = d.with_related(g.span, "gang size");
        }
    }
    d.with_help(match wider {
        Some(t) => format!(
            "the gang fits inside one {}: write required=\"{}\" preferred=\"{}\"",
            t.as_str(),
            t.as_str(),
            tier.as_str()
        ),
        None => "shrink the gang or add capacity: it does not fit in the whole cluster".to_string(),
    })
}
