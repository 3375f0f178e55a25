//! GP039: a GPU mode the owning scheduler's device plumbing cannot serve.
use super::prelude::*;
use crate::model::sizing::{self, Usage};
use crate::model::{Authority, PoolMode};

pub static RULE: Rule = Rule {
    code: "GP039",
    name: "mode-unsupported-by-authority",
    severity: Severity::Error,
    summary: "a pool or class needs GPU sharing its scheduler cannot express",
    docs: r#"
**What.** A pool owned by `slurm` has `mode="time-slice"` or `mode="mps"`, or a class
running under `slurm` shares GPUs (`share`/`isolation` `time-slice` or `mps`, or a
`fraction`), while the cluster names a Slurm older than 22.05.

**Why.** Kubernetes-managed nodes (`kubernetes`, `kueue`, `volcano`) get every mode from
the NVIDIA device plugin: MIG (`mixed` strategy), time-slicing and MPS. Slurm shares a
GPU between jobs with `gres/shard` (time-slicing and fractions) or `gres/mps`, which
gpuplan renders (1000 per GPU, a job's thousandths from one GPU); `gres/shard` exists
from Slurm 22.05, so an older Slurm can only run whole GPUs and MIG instances.

**Example.**
```text
pool "notebooks" mode="time-slice" nodes="n-[01-02]" scheduler="slurm"
```

**Fix.** Upgrade Slurm (`cluster { slurm version="22.05" }`), own the pool with a
Kubernetes scheduler (`scheduler="kueue"`), or use MIG (`share "mig"`) on Slurm nodes.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for p in &m.pools {
        let Some(mode) = PoolMode::from_decl(&p.mode) else {
            continue;
        };
        let owners: Vec<Authority> = {
            let mut v: Vec<Authority> = p
                .nodes
                .iter()
                .filter_map(|&n| m.node_authority(n))
                .collect();
            v.sort();
            v.dedup();
            v
        };
        for a in owners
            .into_iter()
            .filter(|a| !a.supports(mode, &m.slurm_version))
        {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("pool `{}` is `{}`, which {a} {} cannot serve", p.name, p.mode, version(&m.slurm_version)),
                )
                .at(p.span, format!("{} under {a}", p.mode))
                .with_help(format!("Slurm shares GPUs (gres/shard) from 22.05: declare slurm version=\"22.05\" or later, own the pool with a Kubernetes scheduler (scheduler=\"kueue\"), or use mode=\"mig\" or \"whole-gpu\" under {a}")),
            );
        }
    }
    for w in &m.workloads {
        let Some(a) = m.authority_of(w) else { continue };
        let mode = match sizing::usage(w, 1) {
            Usage::Shared { mps, .. } => PoolMode::shared(mps),
            Usage::Packed { milli } if milli % 1000 != 0 => PoolMode::TimeSlice,
            _ => continue,
        };
        if a.supports(mode, &m.slurm_version) {
            continue;
        }
        let Some(decl) = cx.workload_decl(&w.name) else {
            continue;
        };
        let span = decl
            .share
            .as_ref()
            .or(decl.isolation.as_ref())
            .map(|s| s.span)
            .or(decl.fraction.as_ref().map(|f| f.span))
            .unwrap_or(decl.span);
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "{} `{}` shares GPUs ({}), which {a} {} cannot serve",
                    w.kind.as_str(),
                    w.name,
                    mode.as_str(),
                    version(&m.slurm_version)
                ),
            )
            .at(span, format!("sharing under {a}"))
            .with_help(format!("Slurm shares GPUs (gres/shard) from 22.05: declare slurm version=\"22.05\" or later, run it under a Kubernetes scheduler (scheduler=\"kueue\"), or give it MIG instances (share \"mig\") under {a}")),
        );
    }
}

/// `21.08` for a version.
fn version(v: &[u32]) -> String {
    match v {
        [a, b, ..] => format!("{a}.{b:02}"),
        _ => v.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
    }
}
