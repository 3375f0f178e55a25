//! `cargo bench --bench mig`: MIG packing for a 10,000-GPU H100 inference pool (issue #4).
//!
//! Demand: a realistic serving mix (7B to 70B models at FP16/INT8, footprints with the
//! KV cache, replicas in the hundreds). The ILP chooses per-GPU layouts (patterns) from
//! the real placement rules. Compared with: mig-parted's stock layouts `all-1g.10gb`
//! (seven 1g.10gb per GPU) and `all-balanced` (2x 1g.10gb + 2g.20gb + 3g.40gb per GPU),
//! with one whole GPU per replica, and with the LP lower bound (memory slices / 8 per GPU,
//! compute slices / 7, whichever is larger). A stock layout serves a replica only with an
//! instance of exactly its right-sized profile (a pod under the mixed strategy requests
//! `nvidia.com/mig-<profile>`); classes it cannot serve are listed as unserved.

use gpuplan::pipeline::{self, Settings};
use gpuplan::solve::SolveStatus;
use gpuplan::source::SourceMap;
use std::collections::BTreeMap;

/// (class, footprint GiB, replicas): weights + KV cache at serving batch sizes.
const MIX: &[(&str, u32, u32)] = &[
    ("llama-7b-int8", 8, 900),    // ~7 GB weights
    ("llama-7b-fp16", 16, 800),   // ~14 GB
    ("mistral-7b-fp16", 17, 600), // ~14.5 GB + cache
    ("llama-13b-int8", 15, 700),  // ~13 GB
    ("llama-13b-fp16", 28, 600),  // ~26 GB
    ("codellama-34b-int8", 36, 500),
    ("mixtral-8x7b-int4", 26, 400),
    ("llama-70b-int4", 38, 400),
    ("llama-70b-int8", 70, 300),
    ("embed-small", 4, 1200),
];

fn kdl(nodes: u32) -> String {
    let mut s = String::from(
        r#"cluster "mig-bench"
node-class "hgx-h100" {
    cpu sockets=2 cores-per-socket=48 threads-per-core=2
    memory "2TiB"
    gpus 8 model="h100-sxm5-80gb"
    nvlink-domain gpus="0-7"
}
mig {
    allow "1g.10gb" "1g.20gb" "2g.20gb" "3g.40gb" "4g.40gb" "7g.80gb"
    headroom "10%"
}
team "serving" guarantee=0 burst=100000
priority "serving" value=100
"#,
    );
    s.push_str(&format!(
        "nodes \"h-[00001-{nodes:05}]\" class=\"hgx-h100\"\n"
    ));
    s.push_str("fabric {\n    spine \"sp\" {\n");
    let per_leaf = 32;
    let mut first = 1;
    let mut leaf = 0;
    while first <= nodes {
        let last = (first + per_leaf - 1).min(nodes);
        s.push_str(&format!(
            "        leaf \"l{leaf:03}\" nodes=\"h-[{first:05}-{last:05}]\"\n"
        ));
        first = last + 1;
        leaf += 1;
    }
    s.push_str("    }\n}\n");
    s.push_str(&format!(
        "pool \"mig\" mode=\"mig\" nodes=\"h-[00001-{nodes:05}]\"\n"
    ));
    for (name, gib, replicas) in MIX {
        s.push_str(&format!(
            "inference \"{name}\" team=\"serving\" priority=\"serving\" replicas={replicas} {{\n    memory \"{gib}GiB\"\n    isolation \"mig\"\n}}\n"
        ));
    }
    s
}

fn main() {
    let nodes = 1250; // 10,000 GPUs
    let mut sources = SourceMap::new();
    sources.add("mig-bench.kdl".to_string(), kdl(nodes));
    let outcome = gpuplan::validate::validate(&sources);
    let errors: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let c = outcome.model.expect("model");
    // Solve, build the placement and check it, as `gpuplan plan` does; the solve phase
    // is timed by the pipeline.
    let (plan, timings) = match pipeline::place(&c, None, &Settings::default(), &mut |_| {}) {
        Ok(done) => done,
        Err((problems, _)) => panic!("checker: {problems:#?}"),
    };
    assert_ne!(
        plan.solver.status,
        SolveStatus::Fallback,
        "checker: {:?}",
        plan.solver.note
    );
    let solve_s = timings
        .0
        .iter()
        .find(|(phase, _)| phase == "solve")
        .map_or(0.0, |(_, s)| *s);
    // The compaction stage's gap (the solver's own).
    let gap = plan.solver.compaction.as_ref().map_or(0.0, |s| s.gap);

    // Right-sized profile and admitted replicas per class, from the plan.
    let model = c.models.get("h100-sxm5-80gb").expect("catalog model");
    let spec = model.mig.expect("MIG");
    let mut per_profile: BTreeMap<String, u32> = BTreeMap::new();
    let mut replicas = 0u32;
    let mut placed = 0u32;
    for w in &plan.workloads {
        replicas += w.replicas_requested;
        placed += w.replicas_placed;
        if let Some(p) = w.mig_profiles.values().next() {
            *per_profile.entry(p.clone()).or_default() += w.replicas_requested;
        }
    }
    let used_gpus = plan.mig_layouts.len() as u32;
    // LP bound over memory and compute slices.
    let (mut mem, mut compute) = (0u64, 0u64);
    for (p, n) in &per_profile {
        let q = model.mig_profile(p).expect("profile");
        mem += q.memory_slices as u64 * *n as u64;
        compute += q.compute_slices as u64 * *n as u64;
    }
    let bound = mem
        .div_ceil(spec.memory_slices as u64)
        .max(compute.div_ceil(spec.compute_slices as u64));
    println!(
        "MIG packing, {} H100 GPUs, {} classes, {replicas} replicas",
        nodes * 8,
        MIX.len()
    );
    println!("right-sized profiles: {per_profile:?}");
    println!("| layout | GPUs needed | replicas it can serve |\n|---|---|---|");
    println!(
        "| gpuplan ILP ({} , gap {:.2}%, solve {solve_s:.2} s) | {used_gpus} | {placed} of {replicas} |",
        plan.solver.status,
        gap * 100.0
    );
    println!("| LP lower bound | {bound} | - |");
    for (name, offer) in [
        ("mig-parted all-1g.10gb", &[("1g.10gb", 7)][..]),
        (
            "mig-parted all-balanced",
            &[("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)][..],
        ),
    ] {
        let (gpus, unserved) = stock(&per_profile, offer);
        let unserved = if unserved.is_empty() {
            "none".to_string()
        } else {
            unserved.join(", ")
        };
        println!("| {name} | {gpus} | unserved: {unserved} |");
    }
    println!("| one whole GPU per replica | {replicas} | all (if that many GPUs) |");
}

/// GPUs a fixed mig-parted layout (`offer`: profile and instances per GPU) needs for
/// the replicas per profile, and the profiles it does not offer.
fn stock(per_profile: &BTreeMap<String, u32>, offer: &[(&str, u32)]) -> (u64, Vec<String>) {
    let mut gpus = 0u64;
    let mut unserved = Vec::new();
    for (p, n) in per_profile {
        match offer.iter().find(|(q, _)| q == p) {
            Some((_, k)) => gpus = gpus.max((*n as u64).div_ceil(*k as u64)),
            None => unserved.push(format!("{p} x{n}")),
        }
    }
    (gpus, unserved)
}
