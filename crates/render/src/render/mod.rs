//! Renders a [`Placement`] (plus the [`Cluster`] it was planned for) into the files each
//! scheduler reads: Kubernetes core objects, Volcano and Kueue custom resources, Slurm
//! configuration and the NVIDIA MIG / device-plugin configuration with per-node MIG
//! scripts.
//!
//! Every target module prepares a flat, serialisable context from [`facts::Facts`] (the
//! one place where plan numbers are turned into scheduler vocabulary: pool names, label
//! keys, quotas, tiers) and feeds it to the minijinja templates under `templates/`,
//! which are embedded in the binary and run with strict undefined behaviour: a typo in a
//! template is an error, never an empty string. Templates hold no business logic, only
//! loops and formatting. Output is deterministic: every list is sorted, node names are
//! compressed into hostlist ranges (`dgx-[001-032]`) where the target supports them.
//!
//! Large clusters (100,000 GPUs) stay fast: no step compares every node with every
//! other, targets render concurrently, each converts its context to template values
//! once for all its files, and the one per-label loop that runs for every node (k8s
//! `nodes.yaml` and `label-nodes.sh`) is formatted in Rust with the templates' own
//! quoting (`quote`, `sh_word`), the templates laying out each node around it.
//!
//! No I/O here: [`render`] returns the files as `relative path -> text`;
//! `commands::render` writes them atomically.

// A render fails at most once per target, so a large error value costs nothing.
#![allow(clippy::result_large_err)]

mod dra;
pub mod fabric;
pub mod facts;
mod k8s;
mod kai;
mod kueue;
mod mig;
mod migscript;
pub mod nccl;
mod operator;
mod slurm;
mod volcano;
mod volcano_versions;
mod workload;

use crate::diag::Diagnostic;
use crate::model::Cluster;
use crate::placement::Placement;
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// GP910: the plan cannot be expressed in a target (a name that is not a valid
/// Kubernetes name or label value, a priority value out of a target's range).
pub(crate) const GP910: &str = "GP910";
/// GP912: a template failed to render (a bug in gpuplan, never in the input).
pub(crate) const GP912: &str = "GP912";
/// GP913: the target version named in the KDL is older than what gpuplan renders.
pub(crate) const GP913: &str = "GP913";
/// GP914: the target's scheduler owns no node (warning; nothing rendered for it).
pub(crate) const GP914: &str = "GP914";
/// GP919: a target cannot carry part of the plan (warning; that part is left out).
pub(crate) const GP919: &str = "GP919";

/// A render target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    K8s,
    Volcano,
    Kueue,
    Kai,
    Slurm,
    Mig,
    Fabric,
}

impl Target {
    pub const ALL: [Target; 7] = [
        Target::K8s,
        Target::Volcano,
        Target::Kueue,
        Target::Kai,
        Target::Slurm,
        Target::Mig,
        Target::Fabric,
    ];

    /// The target's folder in the output directory.
    pub fn dir(self) -> &'static str {
        match self {
            Target::K8s => "k8s",
            Target::Volcano => "volcano",
            Target::Kueue => "kueue",
            Target::Kai => "kai",
            Target::Slurm => "slurm",
            Target::Mig => "mig",
            Target::Fabric => "fabric",
        }
    }
}

/// Options that change what is rendered (not the plan).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Overrides the Slurm version named in the KDL (`--slurm-version`).
    pub slurm_version: Option<Vec<u32>>,
    /// Warn (GP914) when a target's scheduler owns no node: the user named that target.
    /// Without it (`--target all`, `plan`) such a target is left out silently: the plan's
    /// file list already says what is rendered.
    pub warn_empty: bool,
}

/// Rendered files: path relative to the output directory -> contents.
pub type Files = BTreeMap<String, String>;

/// What rendering produced: the files, plus warnings.
#[derive(Debug, Default)]
pub struct Rendered {
    pub files: Files,
    pub warnings: Vec<Diagnostic>,
    /// Seconds per phase: the facts, then each target (as data: the caller prints).
    pub timings: Vec<(String, f64)>,
}

/// Renders the selected targets. Errors are returned all together.
pub fn render(
    c: &Cluster,
    plan: &Placement,
    targets: &[Target],
    opts: &Options,
) -> Result<Rendered, Vec<Diagnostic>> {
    let t0 = std::time::Instant::now();
    let facts = facts::Facts::build(c, plan, opts)?;
    let mut out = Rendered::default();
    out.timings
        .push(("render facts".to_string(), t0.elapsed().as_secs_f64()));
    let env = environment();
    let mut errors = Vec::new();
    // With authorities declared, each target sees only its schedulers' nodes and
    // classes; a target whose schedulers own no node renders nothing (GP914).
    let scoped: Vec<(Target, Option<facts::Facts>)> =
        targets.iter().map(|&t| (t, facts.scoped(t))).collect();
    let mut live = Vec::new();
    for (t, s) in &scoped {
        match s {
            Some(f) if f.nodes.is_empty() && !opts.warn_empty => {}
            Some(f) if f.nodes.is_empty() => out.warnings.push(Diagnostic::warning(
                GP914,
                format!(
                    "no node is owned by {}: nothing rendered for target `{}`",
                    f.serves
                        .iter()
                        .map(|a| a.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    t.dir()
                ),
            )
            .with_help("give that scheduler nodes (pool ... scheduler=\"...\"), or leave the target out")),
            _ => live.push((*t, s.as_ref().unwrap_or(&facts))),
        }
    }
    out.warnings.extend(uncarried_warnings(&live));
    out.warnings.extend(dra::warnings(&live));
    // Targets render concurrently (they only read the facts); results are taken in
    // target order, so the output does not depend on scheduling.
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = live
            .iter()
            .map(|&(t, facts)| {
                let env = &env;
                scope.spawn(move || {
                    let t0 = std::time::Instant::now();
                    let mut warnings = Vec::new();
                    let r = match t {
                        Target::K8s => k8s::render(facts, env),
                        Target::Volcano => volcano::render(facts, env, &mut warnings),
                        Target::Kueue => kueue::render(facts, env, &mut warnings),
                        Target::Kai => kai::render(facts, env, &mut warnings),
                        Target::Slurm => slurm::render(facts, env, &mut warnings),
                        Target::Mig => mig::render(facts, env),
                        Target::Fabric => fabric::render(facts),
                    };
                    (t, r, warnings, t0.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles.into_iter().map(crate::par::joined).collect()
    });
    for (t, r, warnings, secs) in results {
        out.timings.push((format!("render {}", t.dir()), secs));
        out.warnings.extend(warnings);
        match r {
            Ok(files) => {
                for (p, text) in files {
                    out.files.insert(format!("{}/{p}", t.dir()), text);
                }
            }
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// GP919 per class whose fractions a Kubernetes target cannot carry (only without
/// declared authorities: the planner keeps declared classes to what their scheduler
/// carries).
fn uncarried_warnings(live: &[(Target, &facts::Facts)]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (t, f) in live {
        if !matches!(t, Target::K8s | Target::Kueue | Target::Volcano) {
            continue;
        }
        for (class, nodes) in &f.uncarried {
            if !f.classes.iter().any(|c| &c.name == class) {
                continue;
            }
            out.push(
                Diagnostic::warning(
                    GP919,
                    format!(
                        "target `{}` leaves out replicas of `{class}` on {}: NVIDIA's device plugin shares every GPU of a node with one replica count, and those nodes also hold whole-GPU work or more fractional replicas per GPU than the fraction allows",
                        t.dir(),
                        crate::units::compress_names(nodes).join(",")
                    ),
                )
                .with_help("declare the scheduler (`cluster { scheduler \"kubernetes\" }`): the plan then keeps fractions to what the device plugin carries; or run the class under Slurm (gres/shard)"),
            );
        }
    }
    out
}

macro_rules! templates {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../../templates/", $name)))),*]
    };
}

/// Every template, embedded so the binary works from any directory.
const TEMPLATES: &[(&str, &str)] = templates![
    "k8s/namespaces.yaml.j2",
    "k8s/priorityclasses.yaml.j2",
    "k8s/resourcequotas.yaml.j2",
    "k8s/nodes.yaml.j2",
    "k8s/label-nodes.sh.j2",
    "k8s/workload.yaml.j2",
    "k8s/pod.yaml.j2",
    "k8s/gpu-operator.yaml.j2",
    "k8s/dra/deviceclasses.yaml.j2",
    "k8s/dra/claims.yaml.j2",
    "k8s/gpu-operator-drivers.yaml.j2",
    "k8s/gpu-operator-policy.yaml.j2",
    "volcano/queues.yaml.j2",
    "volcano/hypernodes.yaml.j2",
    "volcano/job.yaml.j2",
    "kueue/resourceflavors.yaml.j2",
    "kueue/topology.yaml.j2",
    "kueue/clusterqueues.yaml.j2",
    "kueue/cohorts.yaml.j2",
    "kueue/localqueues.yaml.j2",
    "kueue/workloadpriorityclasses.yaml.j2",
    "kueue/job.yaml.j2",
    "kueue/dra-configuration.yaml.j2",
    "kai/queues.yaml.j2",
    "kai/topology.yaml.j2",
    "kai/podgroup.yaml.j2",
    "slurm/slurm.conf.j2",
    "slurm/gres.conf.j2",
    "slurm/accounting.conf.j2",
    "slurm/topology.conf.j2",
    "slurm/topology.yaml.j2",
    "slurm/sacctmgr.sh.j2",
    "slurm/job.sbatch.j2",
    "mig/mig-parted.yaml.j2",
    "mig/device-plugin.yaml.j2",
    "mig/node.sh.j2",
];

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    for (name, src) in TEMPLATES {
        env.add_template(name, src)
            .unwrap_or_else(|e| panic!("built-in template {name} does not parse: {e:#}"));
    }
    env.add_filter("q", |v: String| quote(&v));
    env.add_filter("sh", |v: String| sh_word(&v).into_owned());
    env
}

/// The `q` filter: a double-quoted string, valid in YAML and JSON.
pub(crate) fn quote(v: &str) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The `sh` filter: `v` as one shell word, single-quoted unless it is made of letters,
/// digits and `-_./=:,@%+` only (and does not start with `=`).
pub(crate) fn sh_word(v: &str) -> Cow<'_, str> {
    // A leading `=` stays quoted: `X==a` is legal sh but reads as a typo (SC1097).
    if !v.is_empty()
        && !v.starts_with('=')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        Cow::Borrowed(v)
    } else {
        Cow::Owned(format!("'{}'", v.replace('\'', r"'\''")))
    }
}

/// Renders one template with a context.
pub(crate) fn run<S: Serialize>(
    env: &Environment<'_>,
    name: &str,
    ctx: &S,
) -> Result<String, Diagnostic> {
    let tmpl = env
        .get_template(name)
        .map_err(|e| Diagnostic::error(GP912, format!("template `{name}`: {e:#}")))?;
    tmpl.render(ctx).map_err(|e| {
        Diagnostic::error(GP912, format!("template `{name}` failed: {e:#}"))
            .with_help("this is a bug in gpuplan; please report it with the input files")
    })
}
