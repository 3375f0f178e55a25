//! GP032: a label or taint Kubernetes would refuse, or one gpuplan writes itself.
use super::prelude::*;
use crate::names;
use crate::spec::{LabelDecl, TaintDecl};

pub(crate) static RULE: Rule = Rule {
    code: "GP032",
    name: "invalid-label",
    severity: Severity::Error,
    summary: "a label or taint key or value that breaks Kubernetes' rules, or a key gpuplan sets itself",
    docs: r#"
**What.** A `label` or `taint` (on a node class, a node range or a node) whose key or
value Kubernetes would refuse, or whose key is one gpuplan computes from the plan.

- A key is an optional prefix, a DNS subdomain of at most 253 characters (lowercase
  labels joined by dots) followed by `/`, then a name of at most 63 letters, digits,
  `-`, `_` and `.`, starting and ending with a letter or digit.
- A value is empty or at most 63 letters, digits, `-`, `_` and `.`, starting and ending
  with a letter or digit.
- Keys gpuplan sets on every node from the plan cannot be declared:
  `gpuplan.io/pool`, `gpuplan.io/gpu-model`, `gpuplan.io/class`, the fabric tier labels
  `gpuplan.io/nvlink-domain`, `gpuplan.io/leaf`, `gpuplan.io/spine`, `gpuplan.io/core`,
  `nvidia.com/mig.config`, `nvidia.com/device-plugin.config` and
  `kubernetes.io/hostname`.

**Why.** Labels and taints are written into `k8s/nodes.yaml`, `k8s/label-nodes.sh` (as
shell words run with `kubectl`), Kueue flavors and the tolerations of every rendered
workload. The API server refuses an invalid one when the files are applied, long after
the plan was reviewed; a reserved key would be silently replaced by the planned value.

**Example.**
```text
node-class "dgx" {
    label "Rack Number" "r 07"
    taint "gpuplan.io/pool" "mine"
}
```

**Fix.** Use a valid key and value (`label "example.com/rack" "r07"`), and another key
than the reserved ones (`gpuplan.io/pool` is set from the `pool` declarations).
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let s = cx.spec;
    for c in &s.classes {
        each(&c.labels, &c.taints, out);
    }
    for g in &s.node_groups {
        each(&g.labels, &g.taints, out);
        for o in &g.overrides {
            each(&o.labels, &o.taints, out);
        }
    }
}

fn each(labels: &[LabelDecl], taints: &[TaintDecl], out: &mut Diagnostics) {
    for l in labels {
        key("label", &l.key, out);
        value("label", &l.key.value, &l.value, out);
    }
    for t in taints {
        key("taint", &t.key, out);
        if let Some(v) = &t.value {
            value("taint", &t.key.value, v, out);
        }
    }
}

fn key(what: &str, k: &Spanned<String>, out: &mut Diagnostics) {
    if let Err(why) = names::label_key(&k.value) {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!("{what} key {} {why}", crate::diag::quoted(&k.value)),
            )
            .at(k.span, "not a Kubernetes label key")
            .with_help(
                "write `[prefix/]name`: a lowercase DNS prefix such as `example.com/`, then at \
                 most 63 letters, digits, `-`, `_` and `.`",
            ),
        );
    } else if names::RESERVED_LABEL_KEYS.contains(&k.value.as_str()) {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!("{what} key `{}` is set by gpuplan from the plan", k.value),
            )
            .at(k.span, "reserved")
            .with_help(
                "use your own key (e.g. `example.com/role`); pools, models, fabric tiers and \
                 MIG configurations are labelled by gpuplan",
            ),
        );
    }
}

fn value(what: &str, key: &str, v: &Spanned<String>, out: &mut Diagnostics) {
    if let Err(why) = names::label_value(&v.value) {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{what} {} value {} {why}",
                    crate::diag::quoted(key),
                    crate::diag::quoted(&v.value)
                ),
            )
            .at(v.span, "not a Kubernetes label value")
            .with_help(
                "a value is empty or at most 63 letters, digits, `-`, `_` and `.`, starting and \
                 ending with a letter or digit",
            ),
        );
    }
}
