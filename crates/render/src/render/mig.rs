//! NVIDIA node-side configuration: the mig-parted config (`version: v1`, one named
//! config per distinct node layout), the k8s-device-plugin configs (one per node group:
//! whole GPUs, MIG `mixed`, time-slicing or MPS with its replica count), the node ->
//! config label assignments, and one `mig/<node>.sh` script per MIG node that brings
//! the node's GPUs to the planned layout with `nvidia-smi`.

use super::facts::{Facts, Layout, MIG_CONFIG_LABEL, PLUGIN_CONFIG_LABEL};
use super::{Files, run};
use crate::diag::Diagnostic;
use minijinja::Environment;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One spec of a mig-parted config: GPUs that share a layout.
#[derive(Serialize)]
struct Spec {
    devices: String,
    enabled: bool,
    /// profile -> count, in the plan's order (largest first)
    devices_map: Vec<(String, u32)>,
}

#[derive(Serialize)]
struct MigConfig {
    name: String,
    specs: Vec<Spec>,
}

#[derive(Serialize)]
struct PluginConfig {
    name: String,
    /// `none`, `mig`, `time-slicing`, `mps`.
    strategy: String,
    replicas: u32,
}

/// The context of the mig-parted config.
#[derive(Serialize)]
struct MigPartedCtx<'a> {
    header: &'a str,
    mig_configs: Vec<MigConfig>,
    mig_label: &'static str,
}

/// The context of one device-plugin config.
#[derive(Serialize)]
struct PluginCtx<'a> {
    header: &'a str,
    p: &'a PluginConfig,
}

/// The GPU Operator's configuration files, rendered (also embedded in ConfigMaps by
/// the `k8s` target).
#[derive(Serialize)]
pub(super) struct Ctx {
    header: String,
    /// The mig-parted config.
    mig_parted_text: String,
    /// Device-plugin config name -> its text.
    plugin_texts: Vec<(String, String)>,
}

fn counts(profiles: &[String]) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for p in profiles {
        match out.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => out.push((p.clone(), 1)),
        }
    }
    out
}

/// Renders the mig-parted config and every device-plugin config.
pub(super) fn context(f: &Facts, env: &Environment) -> Result<Ctx, Diagnostic> {
    let header = f.header();
    let mig_parted_text = run(
        env,
        "mig/mig-parted.yaml.j2",
        &MigPartedCtx {
            header: &header,
            mig_configs: mig_configs(f),
            mig_label: MIG_CONFIG_LABEL,
        },
    )?;
    let mut plugin_texts = Vec::new();
    for (name, (strategy, replicas)) in &f.plugin_configs {
        let p = PluginConfig {
            name: name.clone(),
            strategy: strategy.clone(),
            replicas: *replicas,
        };
        let text = run(
            env,
            "mig/device-plugin.yaml.j2",
            &PluginCtx {
                header: &header,
                p: &p,
            },
        )?;
        plugin_texts.push((p.name, text));
    }
    Ok(Ctx {
        header,
        mig_parted_text,
        plugin_texts,
    })
}

/// `all-disabled` (MIG off on every GPU), then every named layout of the plan.
fn mig_configs(f: &Facts) -> Vec<MigConfig> {
    let disabled = MigConfig {
        name: "all-disabled".into(),
        specs: vec![Spec {
            devices: "all".into(),
            enabled: false,
            devices_map: Vec::new(),
        }],
    };
    let named = f.mig_configs.iter().map(|(name, layout)| MigConfig {
        name: name.clone(),
        specs: specs(layout),
    });
    std::iter::once(disabled).chain(named).collect()
}

/// The specs of one layout: GPUs with the same layout form one spec (disjoint specs, as
/// mig-parted expects), sorted by their device list.
fn specs(layout: &Layout) -> Vec<Spec> {
    let mut groups: BTreeMap<&Vec<String>, Vec<u32>> = BTreeMap::new();
    for (gpu, profiles) in layout {
        groups.entry(profiles).or_default().push(*gpu);
    }
    let mut specs: Vec<Spec> = groups
        .into_iter()
        .map(|(profiles, gpus)| Spec {
            devices: format!(
                "[{}]",
                gpus.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            enabled: true,
            devices_map: counts(profiles),
        })
        .collect();
    specs.sort_by(|a, b| a.devices.cmp(&b.devices));
    specs
}

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let ctx = context(f, env)?;
    let mut files = Files::new();
    files.insert("mig-parted.yaml".into(), ctx.mig_parted_text);
    for (name, text) in ctx.plugin_texts {
        files.insert(format!("device-plugin/{name}.yaml"), text);
    }
    files.insert("node-configs.tsv".into(), node_table(f));
    for n in f.nodes.iter().filter(|n| !n.mig.is_empty()) {
        files.insert(
            format!("{}.sh", n.name),
            super::migscript::render(f, n, env)?,
        );
    }
    Ok(files)
}

/// `node <TAB> mig.config <TAB> device-plugin.config`, one line per GPU node (`-`: the
/// node has no such label: no mig.config, or no device plugin on a DRA node).
fn node_table(f: &Facts) -> String {
    let mut out = format!(
        "# {}\n# node\tnvidia.com/mig.config\tnvidia.com/device-plugin.config\n",
        f.header()
    );
    for n in &f.nodes {
        let m = n
            .labels
            .get(MIG_CONFIG_LABEL)
            .map(String::as_str)
            .unwrap_or("-");
        let p = n
            .labels
            .get(PLUGIN_CONFIG_LABEL)
            .map(String::as_str)
            .unwrap_or("-");
        let _ = writeln!(out, "{}\t{m}\t{p}", n.name);
    }
    out
}
