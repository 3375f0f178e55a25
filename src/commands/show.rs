//! `gpuplan show PATH...`: the resolved model (nodes, GPUs, fabric, policy).

use super::Output;
use crate::cli::Format;
use crate::{load, validate};
use std::fmt::Write;
use std::path::PathBuf;

pub(crate) fn run(paths: &[PathBuf], format: Format, state: &std::path::Path, out: &Output) -> u8 {
    if let Some(p) = crate::saved::split(paths) {
        return show_plan(p, format, state, out);
    }
    let (sources, mut diags) = load::load_paths(paths);
    let outcome = validate::validate(&sources);
    diags.extend(outcome.diagnostics.iter().cloned());
    let Some(model) = outcome
        .model
        .filter(|_| !diags.iter().any(|d| d.is_error()))
    else {
        out.diagnostics(&sources, &diags, Format::Human);
        return 1;
    };
    out.diagnostics(&sources, &diags, Format::Human);
    match format {
        Format::Json => out.data(&format!(
            "{}\n",
            serde_json::to_string_pretty(&model).unwrap_or_default()
        )),
        Format::Human => out.data(&human(&model)),
    }
    0
}

/// `show PLAN`: a saved plan, as text or as its JSON, once it is checked exactly as
/// `apply` checks it (unchanged inputs and state, and what its inputs give).
fn show_plan(
    path: (&std::path::Path, &[PathBuf]),
    format: Format,
    state: &std::path::Path,
    out: &Output,
) -> u8 {
    let plan = match super::support::planning::from_saved(path, state, out) {
        Ok(r) => r.plan,
        Err(d) => return out.fail(&d),
    };
    match format {
        Format::Json => out.data(&crate::plan::view::json(&plan)),
        Format::Human => {
            let mut s = String::new();
            let _ = writeln!(
                s,
                "saved plan for cluster `{}` (format {}, gpuplan {})",
                plan.placement.cluster, plan.format_version, plan.gpuplan_version
            );
            let _ = writeln!(
                s,
                "inputs: {} ({} files, {})\n",
                plan.arguments.join(" "),
                plan.inputs.len(),
                plan.inputs_digest
            );
            s.push_str(&crate::plan::view::human_detail(
                &plan,
                out.color_stdout,
                out.verbose,
            ));
            out.data(&s);
        }
    }
    0
}

fn human(m: &crate::model::Cluster) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "cluster {}", m.name);
    let _ = writeln!(
        s,
        "  nodes: {}   GPUs: {} ({} usable)",
        m.nodes.len(),
        m.nodes.iter().map(|n| n.gpus.len()).sum::<usize>(),
        m.usable_gpu_count()
    );
    for (name, c) in &m.classes {
        let count = m.nodes.iter().filter(|n| &n.class == name).count();
        let _ = writeln!(s, "  class {name}: {count} nodes x {}", c.gpus_text());
    }
    for t in crate::model::Tier::ALL {
        let d = m.topology.domains(m, t);
        let largest = d.iter().map(|d| d.gpus.len()).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "  tier {:<8} {:>5} domains, largest {largest} GPUs",
            t.as_str(),
            d.len()
        );
    }
    for p in &m.priorities {
        let _ = writeln!(s, "  priority {} = {}", p.name, p.value);
    }
    for t in m.teams.values() {
        let _ = writeln!(
            s,
            "  team {}: guarantee {} burst {}",
            t.name,
            t.guarantee,
            t.ceiling()
        );
    }
    for w in &m.workloads {
        let _ = writeln!(
            s,
            "  {} {} (team {}, priority {}, replicas {})",
            w.kind.as_str(),
            w.name,
            w.team,
            w.priority,
            w.replicas
        );
    }
    s
}
