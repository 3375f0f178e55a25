//! Which Volcano fields the declared Volcano release has (`cluster { volcano
//! version="..." }`), read from the CRDs of each release tag of volcano-sh/volcano
//! (`config/crd/volcano/bases/`; docs/render.md, "Volcano versions"). Without a
//! declared version every field is rendered (the newest release, 1.15). A field the
//! release lacks is left out, and what it carried is said (GP950), never dropped
//! silently.

use super::facts::Facts;
use crate::diag::Diagnostic;

/// GP950: the declared Volcano release lacks a field that carries part of the plan.
pub(crate) const GP950: &str = "GP950";

/// Queue `spec.parent` and `spec.deserved` (hierarchical queues).
pub(crate) const QUEUE_PARENT: [u32; 2] = [1, 9];
/// Queue `spec.priority`.
pub(crate) const QUEUE_PRIORITY: [u32; 2] = [1, 10];
/// `topology.volcano.sh/v1alpha1` HyperNode (`spec.tier`, `members`) and Job
/// `spec.networkTopology` (`mode`, `highestTierAllowed`).
pub(crate) const HYPERNODE: [u32; 2] = [1, 12];
/// HyperNode `spec.tierName` (and Job `networkTopology.highestTierName`).
pub(crate) const TIER_NAME: [u32; 2] = [1, 14];

/// The fields one render may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gates {
    pub parent: bool,
    pub priority: bool,
    pub hypernodes: bool,
    pub tier_name: bool,
}

impl Gates {
    /// The fields of the declared release (every field when none is declared).
    pub(crate) fn of(version: Option<&[u32]>) -> Gates {
        let has = |first: &[u32]| version.is_none_or(|v| v >= first);
        Gates {
            parent: has(&QUEUE_PARENT),
            priority: has(&QUEUE_PRIORITY),
            hypernodes: has(&HYPERNODE),
            tier_name: has(&TIER_NAME),
        }
    }
}

fn text(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

/// GP950 for what the declared release cannot carry: the team tree (no `parent`
/// before 1.9) and the topology of gangs that need one domain (no HyperNode before
/// 1.12). `pinned`: the training classes whose gangs of several pods require a tier.
pub(crate) fn warnings(f: &Facts, g: Gates, pinned: &[&str]) -> Vec<Diagnostic> {
    let Some(v) = f.c.volcano_version.as_deref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let nested: Vec<&str> = f
        .teams
        .iter()
        .filter(|t| t.parent.is_some())
        .map(|t| t.name.as_str())
        .collect();
    if !g.parent && !nested.is_empty() {
        out.push(
            Diagnostic::warning(
                GP950,
                format!(
                    "the cluster names Volcano {}, whose Queue has no `parent` (from {}): queues of teams {} are rendered flat, without their parent's limits",
                    text(v),
                    text(&QUEUE_PARENT),
                    nested.join(", ")
                ),
            )
            .with_help("declare the Volcano release you run (`cluster { volcano version=\"1.12\" }`), or upgrade Volcano"),
        );
    }
    if !g.hypernodes && !pinned.is_empty() {
        out.push(
            Diagnostic::warning(
                GP950,
                format!(
                    "the cluster names Volcano {}, which has no HyperNode nor Job networkTopology (from {}): the gangs of {} are not kept in one fabric domain by Volcano",
                    text(v),
                    text(&HYPERNODE),
                    pinned.join(", ")
                ),
            )
            .with_help("upgrade Volcano to 1.12 or later; until then only the node affinity on the domain the plan chose holds each gang together"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_follow_the_release_tags() {
        assert_eq!(
            Gates::of(None),
            Gates {
                parent: true,
                priority: true,
                hypernodes: true,
                tier_name: true
            }
        );
        let g = Gates::of(Some(&[1, 13, 3]));
        assert!(g.hypernodes && !g.tier_name && g.priority);
        assert!(Gates::of(Some(&[1, 14])).tier_name);
        let g = Gates::of(Some(&[1, 11]));
        assert!(!g.hypernodes && g.priority && g.parent);
        let g = Gates::of(Some(&[1, 8]));
        assert!(!g.parent && !g.priority);
    }
}
