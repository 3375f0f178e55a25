//! GP031: a name that cannot be used by every target gpuplan renders.
use super::prelude::*;
use crate::names::{self, CLUSTER_NAME_MAX, DNS_LABEL_MAX};
use crate::spec::WorkloadKind;

pub(crate) static RULE: Rule = Rule {
    code: "GP031",
    name: "unsafe-name",
    severity: Severity::Error,
    summary: "a name that would become a file name, Kubernetes/Volcano/Kueue object, Slurm name or shell word is not a DNS-1123 label",
    docs: r#"
**What.** The names of the cluster, GPU models, node classes, switches, NVLink domains,
teams, priorities, workloads and pools must be DNS-1123 labels: lowercase letters, digits
and `-`, starting and ending with a letter or digit, at most 63 characters. Tighter
limits where a target builds longer names from them:

| name | becomes | at most |
|---|---|---|
| `cluster` | Slurm `ClusterName` (slurmdbd table names `<cluster>_<suffix>`, 64 characters in MySQL) | 40 |
| training workload | file names, Job names, Volcano pods `<name>-worker-<index>` whose hostnames are DNS labels | 63 minus `-worker-` and the digits of the last pod index |
| every other name | namespaces, queues, PriorityClasses, label values, partitions, accounts, QOS, HyperNodes, flavors, file names | 63 |

A `mig-name` driver name must look like a MIG profile (`3g.40gb`, optionally with a
`+me`, `+gfx` or `-me` suffix): it is written into node scripts and mig-parted files.

**Why.** These names become paths under the output folder (`k8s/workloads/NAME.yaml`),
Kubernetes object names and label values, Slurm partitions, accounts and QOS, Volcano
queues and HyperNodes, Kueue flavors and queues, and words in the generated shell
scripts that operators run as root. A name valid for one target but not another would
fail late, in one renderer, or worse, escape the output folder (`../x`) or the shell
word it was meant to be (`a; rm -rf /`). The rule is the strictest any target needs, so
a valid configuration renders everywhere.

**Example.**
```text
team "ML Research" guarantee=8 burst=16
inference "../../etc/cron.d/x" team="ml" priority="serving" { gpus 1 }
```

**Fix.** Rename it with lowercase letters, digits and `-` (`ml-research`), within the
length the table gives. References (`team="..."`) must be renamed too.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let s = cx.spec;
    for c in &s.clusters {
        name(
            "cluster",
            &c.name,
            CLUSTER_NAME_MAX,
            "Slurm accounting",
            out,
        );
    }
    for m in &s.gpu_models {
        name("gpu-model", &m.name, DNS_LABEL_MAX, "", out);
        for (_, driver) in &m.mig_names {
            if let Err(why) = names::mig_profile(&driver.value) {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!(
                            "MIG profile name {} {why}",
                            crate::diag::quoted(&driver.value)
                        ),
                    )
                    .at(
                        driver.span,
                        "written into node scripts and mig-parted files",
                    )
                    .with_help("give the name exactly as `nvidia-smi mig -lgip` prints it"),
                );
            }
        }
    }
    for c in &s.classes {
        name("node class", &c.name, DNS_LABEL_MAX, "", out);
    }
    for x in &s.switches {
        name("switch", &x.name, DNS_LABEL_MAX, "", out);
    }
    for x in &s.mnnvl_domains {
        name("NVLink domain", &x.name, DNS_LABEL_MAX, "", out);
    }
    for x in &s.teams {
        name("team", &x.name, DNS_LABEL_MAX, "", out);
    }
    for x in &s.priorities {
        name("priority", &x.name, DNS_LABEL_MAX, "", out);
    }
    for x in &s.pools {
        name("pool", &x.name, DNS_LABEL_MAX, "", out);
    }
    for w in &s.workloads {
        let (max, why) = workload_max(w);
        name("workload", &w.name, max, &why, out);
    }
}

/// A training class's pods are named `<name>-worker-<index>` by Volcano and become
/// hostnames (DNS labels, at most 63 characters).
fn workload_max(w: &crate::spec::WorkloadDecl) -> (usize, String) {
    if w.kind != WorkloadKind::Training {
        return (DNS_LABEL_MAX, String::new());
    }
    let gang = w.gang_gpus.as_ref().map_or(1, |g| g.value.max(1));
    let per_node = w.gpus_per_node.as_ref().map_or(1, |g| g.value.max(1));
    let pods = gang.div_ceil(per_node).max(1);
    let digits = (pods - 1).to_string().len();
    let max = DNS_LABEL_MAX - "-worker-".len() - digits;
    (
        max,
        format!("its {pods} pod(s) are named `<name>-worker-<index>`, a hostname of at most 63"),
    )
}

fn name(kind: &str, n: &Spanned<String>, max: usize, limit_why: &str, out: &mut Diagnostics) {
    let Err(why) = names::dns_label(&n.value, max) else {
        return;
    };
    let label = if limit_why.is_empty() || !why.contains("at most") {
        "becomes a file, object, Slurm or shell name".to_string()
    } else {
        format!("too long: {limit_why}")
    };
    out.push(
        Diagnostic::error(
            RULE.code,
            format!("{kind} name {} {why}", crate::diag::quoted(&n.value)),
        )
        .at(n.span, label)
        .with_help(format!(
            "use lowercase letters, digits and `-`, starting and ending with a letter or digit, at most {max} characters (e.g. {})",
            crate::diag::quoted(&suggest(&n.value, max))
        )),
    );
}

/// A nearby valid name: lowercased, other characters as `-`, trimmed to `max`.
pub(crate) fn suggest(name: &str, max: usize) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let mut s: String = s.trim_matches('-').chars().take(max).collect();
    while s.ends_with('-') {
        s.pop();
    }
    if s.is_empty() { "name".into() } else { s }
}
