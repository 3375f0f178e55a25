//! NVIDIA node-side configuration: the mig-parted config (`version: v1`, one named
//! config per distinct node layout), the k8s-device-plugin configs (one per node group:
//! whole GPUs, MIG `mixed`, time-slicing or MPS with its replica count), the node ->
//! config label assignments, and one `mig/<node>.sh` script per MIG node that brings
//! the node's GPUs to the planned layout with `nvidia-smi`.

use super::facts::{Facts, MIG_CONFIG_LABEL, PLUGIN_CONFIG_LABEL};
use super::{Files, run};
use crate::diag::Diagnostic;
use minijinja::Environment;
use serde::Serialize;
use std::collections::BTreeMap;

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

#[derive(Serialize)]
struct Assign {
    node: String,
    value: String,
}

#[derive(Serialize)]
pub(super) struct Ctx {
    header: String,
    mig_configs: Vec<MigConfig>,
    plugin_configs: Vec<PluginConfig>,
    mig_label: &'static str,
    plugin_label: &'static str,
    mig_assign: Vec<Assign>,
    plugin_assign: Vec<Assign>,
    /// The rendered files, for embedding in ConfigMaps.
    mig_parted_text: String,
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

pub(super) fn context(f: &Facts, env: &Environment) -> Result<Ctx, Diagnostic> {
    let mut mig_configs = vec![MigConfig {
        name: "all-disabled".into(),
        specs: vec![Spec {
            devices: "all".into(),
            enabled: false,
            devices_map: Vec::new(),
        }],
    }];
    for (name, layout) in &f.mig_configs {
        // GPUs with the same layout form one spec (disjoint specs, as mig-parted expects).
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
        mig_configs.push(MigConfig {
            name: name.clone(),
            specs,
        });
    }
    let plugin_configs: Vec<PluginConfig> = f
        .plugin_configs
        .iter()
        .map(|(name, (strategy, replicas))| PluginConfig {
            name: name.clone(),
            strategy: strategy.clone(),
            replicas: *replicas,
        })
        .collect();
    let mig_assign = f
        .nodes
        .iter()
        .filter_map(|n| {
            n.labels.get(MIG_CONFIG_LABEL).map(|v| Assign {
                node: n.name.clone(),
                value: v.clone(),
            })
        })
        .collect();
    let plugin_assign = f
        .nodes
        .iter()
        .map(|n| Assign {
            node: n.name.clone(),
            value: n.plugin_config.clone(),
        })
        .collect();
    let mut ctx = Ctx {
        header: f.header(),
        mig_configs,
        plugin_configs,
        mig_label: MIG_CONFIG_LABEL,
        plugin_label: PLUGIN_CONFIG_LABEL,
        mig_assign,
        plugin_assign,
        mig_parted_text: String::new(),
        plugin_texts: Vec::new(),
    };
    ctx.mig_parted_text = run(env, "mig/mig-parted.yaml.j2", &ctx)?;
    let mut texts = Vec::new();
    for p in &ctx.plugin_configs {
        #[derive(Serialize)]
        struct One<'a> {
            header: String,
            p: &'a PluginConfig,
        }
        let text = run(
            env,
            "mig/device-plugin.yaml.j2",
            &One {
                header: ctx.header.clone(),
                p,
            },
        )?;
        texts.push((p.name.clone(), text));
    }
    ctx.plugin_texts = texts;
    Ok(ctx)
}

pub(super) fn render(f: &Facts, env: &Environment) -> Result<Files, Diagnostic> {
    let ctx = context(f, env)?;
    let mut files = Files::new();
    files.insert("mig-parted.yaml".into(), ctx.mig_parted_text.clone());
    for (name, text) in &ctx.plugin_texts {
        files.insert(format!("device-plugin/{name}.yaml"), text.clone());
    }
    files.insert(
        "node-configs.tsv".into(),
        node_table(&ctx.mig_assign, &ctx.plugin_assign),
    );
    for n in f.nodes.iter().filter(|n| !n.mig.is_empty()) {
        files.insert(
            format!("{}.sh", n.name),
            super::migscript::render(f, n, env)?,
        );
    }
    Ok(files)
}

/// `node <TAB> mig.config <TAB> device-plugin.config`, one line per GPU node.
fn node_table(mig: &[Assign], plugin: &[Assign]) -> String {
    let mut out = String::from("# node\tnvidia.com/mig.config\tnvidia.com/device-plugin.config\n");
    for p in plugin {
        let m = mig
            .iter()
            .find(|m| m.node == p.node)
            .map(|m| m.value.as_str())
            .unwrap_or("-");
        out.push_str(&format!("{}\t{m}\t{}\n", p.node, p.value));
    }
    out
}
