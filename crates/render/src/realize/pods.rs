//! A pod template as kube-scheduler and the API server read it: labels, nodeSelector,
//! required node affinity (terms ORed, expressions ANDed; In, NotIn, Exists,
//! DoesNotExist, Gt, Lt; `matchFields` on `metadata.name`), tolerations against node
//! taints (NoSchedule and NoExecute must be tolerated; an empty effect tolerates every
//! effect; an empty key with Exists tolerates every taint), and the pod's resources:
//! per container the request, or the limit when no request is given; extended
//! resources need a limit, and a request equal to it; the pod asks the sum.

use super::yaml::{self, at, seq_at, str_at};
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}:{}", self.key, self.value, self.effect)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Toleration {
    key: String,
    exists: bool,
    value: String,
    effect: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Expr {
    key: String,
    op: Op,
    values: Vec<String>,
}

/// One node selector term: label expressions and field expressions, ANDed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    labels: Vec<Expr>,
    fields: Vec<Expr>,
}

/// What a pod template says about where its pods land and what they ask.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pod {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    terms: Option<Vec<Term>>,
    tolerations: Vec<Toleration>,
    /// Per pod, thousandths: each container's request (or limit), summed.
    pub requests: BTreeMap<String, i128>,
    /// `cpu`/`memory` that some container does not request (a ResourceQuota on them
    /// makes the API server refuse the pod).
    pub unrequested: BTreeSet<String>,
    pub priority_class: Option<String>,
    pub scheduler: Option<String>,
    /// DRA: `spec.resourceClaims` that some container uses (`resources.claims`).
    pub claims: Vec<PodClaim>,
}

/// One entry of a pod's `spec.resourceClaims`: a template (each pod gets a claim of its
/// own) or a named claim (every pod naming it shares it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodClaim {
    pub name: String,
    pub template: Option<String>,
    pub claim: Option<String>,
}

/// Why a node is not selected: the label key that fails, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Miss {
    pub key: String,
    pub text: String,
}

/// Reads a pod template (`{metadata, spec}`).
pub(crate) fn parse(t: &Value) -> Result<Pod, String> {
    let spec = at(t, &["spec"]).ok_or("the pod template has no spec")?;
    let mut p = Pod {
        labels: yaml::string_map(t, &["metadata", "labels"])?,
        annotations: yaml::string_map(t, &["metadata", "annotations"])?,
        node_selector: yaml::string_map(spec, &["nodeSelector"])?,
        priority_class: str_at(spec, &["priorityClassName"]).map(String::from),
        scheduler: str_at(spec, &["schedulerName"]).map(String::from),
        ..Pod::default()
    };
    let req = [
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ];
    if let Some(r) = at(spec, &req).filter(|x| !x.is_null()) {
        let terms: Result<Vec<Term>, String> =
            seq_at(r, &["nodeSelectorTerms"]).iter().map(term).collect();
        p.terms = Some(terms?);
    }
    p.tolerations = seq_at(spec, &["tolerations"])
        .iter()
        .map(toleration)
        .collect::<Result<_, _>>()?;
    let containers = seq_at(spec, &["containers"]);
    if containers.is_empty() {
        return Err("the pod template has no containers".into());
    }
    let mut used = std::collections::BTreeSet::new();
    for c in containers {
        container(c, &mut p)?;
        for r in seq_at(c, &["resources", "claims"]) {
            used.insert(str_at(r, &["name"]).unwrap_or_default().to_string());
        }
    }
    p.claims = claims(spec, &used)?;
    Ok(p)
}

/// The pod's resource claims that a container uses (kubelet gives a container only the
/// devices of the claims it names); a name a container uses that the pod does not
/// declare is refused by the API server.
fn claims(
    spec: &Value,
    used: &std::collections::BTreeSet<String>,
) -> Result<Vec<PodClaim>, String> {
    let mut out = Vec::new();
    for c in seq_at(spec, &["resourceClaims"]) {
        let name = str_at(c, &["name"]).ok_or("a resource claim has no name")?;
        let template = str_at(c, &["resourceClaimTemplateName"]).map(String::from);
        let claim = str_at(c, &["resourceClaimName"]).map(String::from);
        if template.is_some() == claim.is_some() {
            return Err(format!(
                "resource claim `{name}` needs exactly one of resourceClaimName and resourceClaimTemplateName"
            ));
        }
        if used.contains(name) {
            out.push(PodClaim {
                name: name.to_string(),
                template,
                claim,
            });
        }
    }
    if let Some(u) = used.iter().find(|u| !out.iter().any(|c| &c.name == *u)) {
        return Err(format!(
            "a container uses resource claim `{u}`, which the pod does not declare"
        ));
    }
    Ok(out)
}

fn container(c: &Value, p: &mut Pod) -> Result<(), String> {
    let limits = yaml::quantities(c, &["resources", "limits"])?;
    let requests = yaml::quantities(c, &["resources", "requests"])?;
    let name = str_at(c, &["name"]).unwrap_or("?");
    for r in ["cpu", "memory"] {
        if !requests.contains_key(r) && !limits.contains_key(r) {
            p.unrequested.insert(r.to_string());
        }
    }
    let keys: BTreeSet<&String> = limits.keys().chain(requests.keys()).collect();
    for k in keys {
        let extended = k.contains('/');
        let (l, r) = (limits.get(k), requests.get(k));
        if extended && l.is_none() {
            return Err(format!(
                "container `{name}` requests {k} without a limit (the API server refuses it)"
            ));
        }
        if extended && r.is_some_and(|r| Some(r) != l) {
            return Err(format!(
                "container `{name}`: request and limit of {k} differ (the API server refuses it)"
            ));
        }
        if extended && l.is_some_and(|l| l % 1000 != 0) {
            return Err(format!("container `{name}` asks a fraction of {k}"));
        }
        let v = r.or(l).copied().unwrap_or(0);
        *p.requests.entry(k.clone()).or_default() += v;
    }
    Ok(())
}

fn expr(v: &Value) -> Result<Expr, String> {
    let key = str_at(v, &["key"]).ok_or("a match expression has no key")?;
    let op = match str_at(v, &["operator"]).unwrap_or("") {
        "In" => Op::In,
        "NotIn" => Op::NotIn,
        "Exists" => Op::Exists,
        "DoesNotExist" => Op::DoesNotExist,
        "Gt" => Op::Gt,
        "Lt" => Op::Lt,
        o => return Err(format!("`{key}`: unknown operator `{o}`")),
    };
    let values: Vec<String> = seq_at(v, &["values"])
        .iter()
        .filter_map(yaml::scalar)
        .collect();
    Ok(Expr {
        key: key.to_string(),
        op,
        values,
    })
}

fn term(v: &Value) -> Result<Term, String> {
    Ok(Term {
        labels: seq_at(v, &["matchExpressions"])
            .iter()
            .map(expr)
            .collect::<Result<_, _>>()?,
        fields: seq_at(v, &["matchFields"])
            .iter()
            .map(expr)
            .collect::<Result<_, _>>()?,
    })
}

fn toleration(v: &Value) -> Result<Toleration, String> {
    let exists = match str_at(v, &["operator"]).unwrap_or("Equal") {
        "Equal" => false,
        "Exists" => true,
        o => return Err(format!("unknown toleration operator `{o}`")),
    };
    let get = |k: &str| at(v, &[k]).and_then(yaml::scalar).unwrap_or_default();
    Ok(Toleration {
        key: get("key"),
        exists,
        value: get("value"),
        effect: get("effect"),
    })
}

/// Reads a Node's taints (`spec.taints`).
pub(crate) fn taints(node: &Value) -> Vec<Taint> {
    taint_list(seq_at(node, &["spec", "taints"]))
}

/// Reads a list of taints (a Node's, a Kueue flavor's `nodeTaints`).
pub(crate) fn taint_list(list: &[Value]) -> Vec<Taint> {
    list.iter()
        .map(|t| {
            let get = |k: &str| at(t, &[k]).and_then(yaml::scalar).unwrap_or_default();
            Taint {
                key: get("key"),
                value: get("value"),
                effect: get("effect"),
            }
        })
        .collect()
}

fn holds(e: &Expr, value: Option<&str>) -> bool {
    let num = |s: &str| s.parse::<i64>().ok();
    match e.op {
        Op::In => value.is_some_and(|v| e.values.iter().any(|x| x == v)),
        Op::NotIn => value.is_none_or(|v| !e.values.iter().any(|x| x == v)),
        Op::Exists => value.is_some(),
        Op::DoesNotExist => value.is_none(),
        Op::Gt | Op::Lt => {
            let (Some(v), Some(x)) = (value.and_then(num), e.values.first().and_then(|x| num(x)))
            else {
                return false;
            };
            if e.op == Op::Gt { v > x } else { v < x }
        }
    }
}

fn miss(e: &Expr, value: Option<&str>) -> Miss {
    let has = value.map_or("does not have it".to_string(), |v| format!("has `{v}`"));
    let op = format!("{:?}", e.op);
    Miss {
        key: e.key.clone(),
        text: format!(
            "`{}` {op} [{}] (the node {has})",
            e.key,
            e.values.join(", ")
        ),
    }
}

impl Pod {
    /// Whether the pod may land on `node` with `labels` (which must include
    /// `kubernetes.io/hostname`): the first condition that fails.
    pub(crate) fn selects(
        &self,
        node: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), Miss> {
        for (k, v) in &self.node_selector {
            if labels.get(k) != Some(v) {
                let e = Expr {
                    key: k.clone(),
                    op: Op::In,
                    values: vec![v.clone()],
                };
                return Err(miss(&e, labels.get(k).map(String::as_str)));
            }
        }
        let Some(terms) = &self.terms else {
            return Ok(());
        };
        let mut first = None;
        for t in terms {
            let failed = t
                .labels
                .iter()
                .map(|e| (e, labels.get(&e.key).map(String::as_str)))
                .chain(
                    t.fields
                        .iter()
                        .map(|e| (e, (e.key == "metadata.name").then_some(node))),
                )
                .find(|(e, v)| !holds(e, *v));
            match failed {
                None if !(t.labels.is_empty() && t.fields.is_empty()) => return Ok(()),
                None => {}
                Some((e, v)) => {
                    first.get_or_insert_with(|| miss(e, v));
                }
            }
        }
        Err(first.unwrap_or(Miss {
            key: String::new(),
            text: "its required node affinity has no term that can match".into(),
        }))
    }

    /// The first NoSchedule/NoExecute taint the pod does not tolerate.
    pub(crate) fn untolerated<'t>(&self, taints: &'t [Taint]) -> Option<&'t Taint> {
        untolerated(&self.tolerations, taints)
    }
}

/// The first NoSchedule/NoExecute taint none of `tolerations` tolerates.
pub(crate) fn untolerated<'t>(
    tolerations: &[Toleration],
    taints: &'t [Taint],
) -> Option<&'t Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|o| tolerates(o, t)))
}

fn tolerates(o: &Toleration, t: &Taint) -> bool {
    let effect = o.effect.is_empty() || o.effect == t.effect;
    let key = if o.key.is_empty() {
        o.exists
    } else {
        o.key == t.key && (o.exists || o.value == t.value)
    };
    effect && key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: &str) -> Pod {
        let t: Value = serde_yaml::from_str(&format!(
            "spec:\n  containers:\n    - name: c\n      resources: {{limits: {{nvidia.com/gpu: 2}}, requests: {{cpu: 500m}}}}\n{spec}"
        ))
        .unwrap();
        parse(&t).unwrap()
    }

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn affinity_terms_or_expressions_and() {
        let p = pod(
            "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n          - matchExpressions:\n              - {key: pool, operator: In, values: [a]}\n              - {key: gen, operator: Gt, values: [\"2\"]}\n          - matchFields:\n              - {key: metadata.name, operator: In, values: [n9]}\n",
        );
        assert!(
            p.selects("n1", &labels(&[("pool", "a"), ("gen", "3")]))
                .is_ok()
        );
        let m = p
            .selects("n1", &labels(&[("pool", "a"), ("gen", "2")]))
            .unwrap_err();
        assert_eq!(m.key, "gen");
        assert!(
            p.selects("n9", &labels(&[])).is_ok(),
            "matchFields on the name"
        );
        assert_eq!(p.requests["nvidia.com/gpu"], 2000);
        assert_eq!(p.requests["cpu"], 500);
        assert!(p.unrequested.contains("memory"));
    }

    #[test]
    fn tolerations_against_taints() {
        let t = |k: &str, v: &str, e: &str| Taint {
            key: k.into(),
            value: v.into(),
            effect: e.into(),
        };
        let p = pod(
            "  tolerations:\n    - {key: pool, operator: Equal, value: a, effect: NoSchedule}\n    - {key: x, operator: Exists}\n",
        );
        assert!(
            p.untolerated(&[t("pool", "a", "NoSchedule"), t("x", "1", "NoExecute")])
                .is_none()
        );
        assert!(p.untolerated(&[t("pool", "b", "NoSchedule")]).is_some());
        assert!(
            p.untolerated(&[t("pool", "b", "PreferNoSchedule")])
                .is_none()
        );
        let all = pod("  tolerations:\n    - {operator: Exists}\n");
        assert!(all.untolerated(&[t("any", "v", "NoExecute")]).is_none());
    }

    #[test]
    fn extended_resources_need_equal_limits() {
        let bad: Value = serde_yaml::from_str("spec:\n  containers:\n    - name: c\n      resources: {requests: {nvidia.com/gpu: 1}}\n").unwrap();
        assert!(parse(&bad).is_err());
        let differ: Value = serde_yaml::from_str("spec:\n  containers:\n    - name: c\n      resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}\n").unwrap();
        assert!(parse(&differ).is_err());
    }
}
