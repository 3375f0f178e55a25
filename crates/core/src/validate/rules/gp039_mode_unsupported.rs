//! GP039: a GPU mode the owning scheduler's device plumbing cannot serve.
use super::prelude::*;
use crate::model::sizing::{self, Usage};
use crate::model::{Authority, PoolMode};

pub(crate) static RULE: Rule = Rule {
    code: "GP039",
    name: "mode-unsupported-by-authority",
    severity: Severity::Error,
    summary: "a pool or class needs GPU sharing its scheduler cannot express",
    docs: r#"
**What.** A pool owned by `slurm` has `mode="time-slice"` or `mode="mps"`, or a class
running under `slurm` shares GPUs (`share`/`isolation` `time-slice` or `mps`, or a
`fraction`), while the cluster names a Slurm older than 22.05.

A pool owned by `kai` has `mode="mig"` or `mode="mps"`, or a class under `kai` asks
for MIG instances or MPS.

**Why.** Kubernetes-managed nodes (`kubernetes`, `kueue`, `volcano`) get every mode from
the NVIDIA device plugin: MIG (`mixed` strategy), time-slicing and MPS. KAI Scheduler
shares GPUs itself (`gpu-fraction`, `gpu-memory` on GPUs the device plugin advertises
whole); it counts a MIG instance `Ng.Mgb` as N whole GPUs against its queues and reads
no other profile name, and its MPS needs an MPS server on every node outside KAI, so
gpuplan renders neither for it. Slurm shares a
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
                    format!(
                        "pool `{}` is `{}`, which {} cannot serve",
                        p.name,
                        p.mode,
                        who(a, &m.slurm_version)
                    ),
                )
                .at(p.span, format!("{} under {a}", p.mode))
                .with_help(help(
                    a,
                    "own the pool with",
                    "use mode=\"mig\" or \"whole-gpu\"",
                )),
            );
        }
    }
    for w in &m.workloads {
        let Some(a) = m.authority_of(w) else { continue };
        let mode = match sizing::usage(w, 1) {
            Usage::Shared { mps, .. } => PoolMode::shared(mps),
            Usage::Packed { milli } if milli % 1000 != 0 => PoolMode::TimeSlice,
            Usage::Mig if a == Authority::Kai => PoolMode::Mig,
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
                    "{} `{}` shares GPUs ({}), which {} cannot serve",
                    w.kind.as_str(),
                    w.name,
                    mode.as_str(),
                    who(a, &m.slurm_version)
                ),
            )
            .at(span, format!("sharing under {a}"))
            .with_help(help(
                a,
                "run it under",
                "give it MIG instances (share \"mig\")",
            )),
        );
    }
}

/// The scheduler, with its version where the version is why (Slurm).
fn who(a: Authority, slurm: &[u32]) -> String {
    if a == Authority::Slurm {
        format!("{a} {}", version(slurm))
    } else {
        a.to_string()
    }
}

/// What to do instead: `own`/`instead` complete the sentence for a pool or a class.
fn help(a: Authority, own: &str, instead: &str) -> String {
    if a == Authority::Kai {
        format!(
            "KAI shares GPUs itself (gpu-fraction, gpu-memory) and gpuplan renders neither MIG nor MPS for it: use time-slice or fractions under kai, or {own} another scheduler (scheduler=\"kueue\")"
        )
    } else {
        format!(
            "Slurm shares GPUs (gres/shard) from 22.05: declare slurm version=\"22.05\" or later, {own} a Kubernetes scheduler (scheduler=\"kueue\"), or {instead} under {a}"
        )
    }
}

/// `21.08` for a version.
fn version(v: &[u32]) -> String {
    match v {
        [a, b, ..] => format!("{a}.{b:02}"),
        _ => v.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
    }
}
