//! Decoding the policy: teams, priorities, workloads, MIG and pools.

use super::name_of;
use crate::spec::reader::{GP005, NodeView};
use crate::spec::*;

/// `team "name" guarantee=... burst=... parent=... { quota ... }`.
pub(super) fn team(v: &NodeView, diags: &mut Diagnostics) -> Option<TeamDecl> {
    let name = name_of(v)?;
    Some(TeamDecl {
        name,
        span: v.head_span(),
        guarantee: v.prop_u32("guarantee"),
        burst: v.prop_u32("burst"),
        parent: v.prop_str("parent"),
        weight: team_weight(v, diags),
        quotas: v
            .children_named("quota")
            .iter()
            .map(|c| QuotaDecl {
                span: c.head_span(),
                model: c.prop_str("model"),
                pool: c.prop_str("pool"),
                guarantee: c.prop_u32("guarantee"),
                burst: c.prop_u32("burst"),
                scheduler: c.prop_str("scheduler"),
            })
            .collect(),
    })
}

/// The most a team's `weight` may be: Kueue, KAI and Slurm all read it as a 32-bit
/// share, and a million to one is already more contrast than fair sharing can show.
pub(crate) const MAX_WEIGHT: u32 = 1_000_000;

/// A team's fair-share `weight`, reported (GP005) when 0 or above [`MAX_WEIGHT`]:
/// Kueue reads a weight of 0 as "borrow only when nobody else wants it" and KAI as "no
/// share beyond the quota", neither of which is a weight.
fn team_weight(v: &NodeView, diags: &mut Diagnostics) -> Option<S<u32>> {
    let e = v.prop_entry("weight")?;
    let kdl::KdlValue::Integer(n) = e.value() else {
        return None;
    };
    let (n, span) = (*n, v.entry_span(e));
    if (1..=MAX_WEIGHT as i128).contains(&n) {
        return Some(Spanned::new(n as u32, span));
    }
    diags.push(
        Diagnostic::error(GP005, format!("team weight {n} is out of range"))
            .at(span, "out of range")
            .with_help(format!("a weight is a whole number from 1 to {MAX_WEIGHT}; leave it out to weigh the team by its guarantee")),
    );
    None
}

/// `priority "name" value=... preempts=... preemption=... { preempts ... }`.
pub(super) fn priority(v: &NodeView, diags: &mut Diagnostics) -> Option<PriorityDecl> {
    let name = name_of(v)?;
    let mut preempts: Vec<S<String>> = v.prop_str("preempts").into_iter().collect();
    for c in v.children_named("preempts") {
        preempts.extend(c.args_str());
    }
    Some(PriorityDecl {
        name,
        span: v.head_span(),
        value: priority_value(v, diags),
        preempts,
        never_preempts: v
            .prop_str("preemption")
            .map(|s| Spanned::new(s.value == "never", s.span)),
        description: v.prop_str("description"),
    })
}

/// A priority's `value`, reported (GP005) when outside what Kubernetes allows.
fn priority_value(v: &NodeView, diags: &mut Diagnostics) -> Option<S<i64>> {
    let e = v.prop_entry("value")?;
    let kdl::KdlValue::Integer(n) = e.value() else {
        return None;
    };
    let (n, span) = (*n, v.entry_span(e));
    if (i32::MIN as i128..=1_000_000_000).contains(&n) {
        return Some(Spanned::new(n as i64, span));
    }
    diags.push(
        Diagnostic::error(GP005, format!("priority value {n} is out of range"))
            .at(span, "out of range")
            .with_help("priority values must lie between -2147483648 and 1000000000 (Kubernetes reserves larger values for system classes)"),
    );
    None
}

/// A node's known children, read once; the last of a name wins, as in
/// [`NodeView::child`].
struct Children<'n>(Vec<NodeView<'n>>);

impl<'n> Children<'n> {
    /// The known children of `v`.
    fn of(v: &NodeView<'n>) -> Self {
        Children(v.children())
    }

    /// The last child named `name`.
    fn last(&self, name: &str) -> Option<NodeView<'n>> {
        self.0.iter().rev().find(|c| c.def.name() == name).copied()
    }
}

/// The `models` child: acceptable GPU models and where they were written.
fn models(m: Option<NodeView>) -> (Vec<S<String>>, Option<Span>) {
    match m {
        Some(m) => (m.args_str(), Some(m.head_span())),
        None => (Vec::new(), None),
    }
}

/// `training`, `inference` or `dev` "name" team=... priority=... { ... }.
pub(super) fn workload(v: &NodeView) -> Option<WorkloadDecl> {
    let name = name_of(v)?;
    let kind = match v.def.id {
        "training" => WorkloadKind::Training,
        "inference" => WorkloadKind::Inference,
        _ => WorkloadKind::Dev,
    };
    let kids = Children::of(v);
    let (models, models_span) = models(kids.last("models"));
    let gang = kids.last("gang");
    let topo = kids.last("topology");
    let share = kids.last("share");
    let requests = kids.last("requests");
    let memory = kids.last("memory");
    let checkpoint = kids.last("checkpoint");
    let spot = kids.last("spot");
    Some(WorkloadDecl {
        kind,
        name,
        span: v.head_span(),
        team: v.prop_str("team"),
        priority: v.prop_str("priority"),
        replicas: v.prop_u32("replicas"),
        scheduler: v.prop_str("scheduler"),
        cuda: kids.last("cuda").and_then(|c| c.arg_version(0)),
        cuda_compat: kids.last("cuda").and_then(|c| c.prop_bool("compat")),
        models,
        models_span,
        gang_span: gang.map(|g| g.head_span()),
        gang_gpus: gang.and_then(|g| g.prop_u32("gpus")),
        gpus_per_node: gang.and_then(|g| g.prop_u32("gpus-per-node")),
        required_tier: topo.and_then(|t| t.prop_str("required")),
        preferred_tier: topo.and_then(|t| t.prop_str("preferred")),
        checkpoint: checkpoint.and_then(|c| c.prop_duration("every")),
        checkpoint_span: checkpoint.map(|c| c.head_span()),
        checkpoint_size: checkpoint.and_then(|c| c.prop_bytes("size")),
        restart: checkpoint.and_then(|c| c.prop_duration("restart")),
        max_idle: checkpoint.and_then(|c| c.prop_percent("max-idle")),
        spot: spot.map(|c| {
            c.arg_bool(0)
                .unwrap_or_else(|| Spanned::new(true, c.head_span()))
        }),
        straddle: spot.and_then(|c| c.prop_bool("straddle")),
        preemptible: kids.last("preemptible").map(|c| {
            c.arg_bool(0)
                .unwrap_or_else(|| Spanned::new(true, c.head_span()))
        }),
        memory: memory.and_then(|c| c.arg_bytes(0)),
        memory_given: memory.is_some(),
        isolation: kids.last("isolation").and_then(|c| c.arg_str(0)),
        profile: kids.last("profile").and_then(|c| c.arg_str(0)),
        gpus_per_replica: kids.last("gpus").and_then(|c| c.arg_u32(0)),
        min_compute: kids.last("min-compute").and_then(|c| c.arg_u32(0)),
        share: share.and_then(|s| s.arg_str(0)),
        per_gpu: share.and_then(|s| s.prop_u32("per-gpu")),
        cpu_request: requests.and_then(|c| c.prop_f64("cpu")),
        memory_request: requests.and_then(|c| c.prop_bytes("memory")),
        fraction: kids.last("fraction").and_then(|c| c.arg_percent(0)),
    })
}

/// `mig { allow ... layout ... headroom ... }`, merged into `mig` (several `mig`
/// nodes add up).
pub(super) fn mig(v: &NodeView, mig: &mut MigDecl, diags: &mut Diagnostics) {
    mig.span.get_or_insert(v.head_span());
    for c in v.children_named("allow") {
        mig.allow.extend(c.args_str());
    }
    for c in v.children_named("layout") {
        mig.layouts.push(layout(&c, diags));
    }
    if let Some(h) = v.child("headroom").and_then(|c| c.arg_percent(0)) {
        mig.headroom = Some(h);
    }
}

/// `layout "1g.10gb*4" "3g.40gb" nodes=... gpus=... current=...`, with counts
/// expanded (GP005 for a bad count).
fn layout(c: &NodeView, diags: &mut Diagnostics) -> LayoutDecl {
    let mut profiles = Vec::new();
    for a in c.args_str() {
        match expand_profile_count(&a.value) {
            Ok((p, n)) => profiles.extend(std::iter::repeat_n(Spanned::new(p, a.span), n)),
            Err(m) => diags.push(
                Diagnostic::error(GP005, m)
                    .at(a.span, "invalid count")
                    .with_help(
                        "write a profile, or a profile and a count: \"1g.10gb*4\" (at most 8)",
                    ),
            ),
        }
    }
    LayoutDecl {
        span: c.head_span(),
        nodes: c.prop_names("nodes"),
        gpus: c.prop_index_set("gpus"),
        profiles,
        current: c.prop_bool("current"),
    }
}

/// `1g.10gb*4` -> ("1g.10gb", 4); `3g.40gb` -> ("3g.40gb", 1).
pub(crate) fn expand_profile_count(s: &str) -> Result<(String, usize), String> {
    match s.split_once('*') {
        None => Ok((s.trim().to_string(), 1)),
        Some((p, n)) => {
            let n: usize = n
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: the count after `*` must be a number"))?;
            if n == 0 || n > 8 {
                return Err(format!("`{s}`: a GPU holds 1 to 8 instances of a profile"));
            }
            Ok((p.trim().to_string(), n))
        }
    }
}

/// `pool "name" mode=... nodes=... max-disrupted=...`.
pub(super) fn pool(v: &NodeView) -> Option<PoolDecl> {
    let name = name_of(v)?;
    Some(PoolDecl {
        name,
        span: v.head_span(),
        mode: v.prop_str("mode"),
        nodes: v.prop_names("nodes"),
        max_disrupted: v.prop_u32("max-disrupted"),
        scheduler: v.prop_str("scheduler"),
        gpu_allocation: v.prop_str("gpu-allocation"),
    })
}
