//! Command-line types (clap derive) and their value parsers.

use clap::{Parser, Subcommand, ValueEnum};

mod state;
pub use state::{BackendArgs, BackendKind, ForceUnlockArgs, StateKind, StoreArgs};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "gpuplan", version, about = "Terraform for GPU clusters: plan topology-aware GPU layouts from KDL", long_about = None)]
pub(crate) struct Cli {
    /// When to use colour: auto (terminal and NO_COLOR unset), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print nothing but results and errors.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Plans: list every class, file and object instead of grouping repeated ones.
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// Set a bound on one run's work, `KEY=N` (repeatable): input-bytes, nodes, gpus,
    /// names. A refusal names the key it hit; docs/fuzzing.md lists the defaults.
    #[arg(long = "limit", global = true, value_name = "KEY=N", value_parser = parse_limit)]
    pub limits: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Human,
    Json,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum SolverChoice {
    #[default]
    Ilp,
    Greedy,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Check configuration files: syntax, references, topology, MIG layouts, quotas.
    Validate {
        /// KDL files, or folders whose `*.kdl` files form one configuration.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format for diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Solve the placement and show the plan: pools, gangs, MIG layouts, shares, what
    /// was left out and why, team usage and headroom.
    Plan(PlanArgs),
    /// Plan, then write the scheduler configuration the plan implies: Kubernetes, Volcano,
    /// Kueue, Slurm and the NVIDIA MIG / device-plugin files, into one folder per target.
    Render(RenderArgs),
    /// Check that a rendered folder carries out the plan: every planned gang, replica,
    /// MIG instance and shared slot matched to an object that can carry it, nodes,
    /// shares, MIG layouts, quotas, topology and references (exit 1 when not).
    CheckRender(CheckRenderArgs),
    /// Apply a saved plan (`gpuplan apply PLAN`) exactly as reviewed, or plan and apply
    /// in one step (`gpuplan apply PATH...`, asking for confirmation on a terminal):
    /// write the rendered files into --out-dir and record them in the state.
    Apply(ApplyArgs),
    /// Compare what nodes report (NVML discovery or `nvidia-smi` outputs) with the
    /// declared layout and the last applied state. Exit 2 on drift.
    Drift(DriftArgs),
    /// The state in its backend: `list` its versions, `show` or `pull` one, `push` a
    /// state file (migration from a local state).
    State {
        #[command(subcommand)]
        what: StateKind,
    },
    /// Remove the state's lock left by a crashed apply: `gpuplan force-unlock ID` (the ID
    /// GP921 shows). Only once you know no gpuplan holds it.
    ForceUnlock(ForceUnlockArgs),
    /// Show the resolved model of a configuration, or a saved plan (`show PLAN`).
    Show {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// The state a saved plan was made against (what the last `apply` wrote).
        #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
        state: PathBuf,
    },
    /// Read this node's GPUs through NVML and print them as a node class, a node and the
    /// observed MIG state (needs the NVIDIA driver; loaded at run time).
    Discover {
        #[command(flatten)]
        naming: NamingArgs,
        /// Output: gpuplan KDL, or the facts read as JSON.
        #[arg(long, value_enum, default_value_t = DataFormat::Kdl)]
        format: DataFormat,
        /// Write the output to this file instead of stdout.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Convert outputs operators already collect into gpuplan's language.
    Import {
        #[command(subcommand)]
        kind: ImportKind,
    },
    /// Generate a synthetic cluster and its demand in gpuplan's language.
    Generate {
        #[command(subcommand)]
        what: GenerateKind,
    },
    /// List the validation rules, or explain one (`gpuplan explain GP013`).
    Explain { code: Option<String> },
    /// Reports computed from a plan: `report chargeback` (GPU-hours and cost per team).
    Report {
        #[command(subcommand)]
        what: ReportKind,
    },
    /// Rewrite gpuplan files in the canonical layout (`--check` for CI: exit 1 when a
    /// file would change).
    Fmt(FmtArgs),
    /// Write a starter configuration into DIR (this node's hardware when NVML is
    /// present, an example otherwise) and a `.gitignore` for the state folder.
    Init {
        /// Folder to write `cluster.kdl` and `.gitignore` into.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Write the example hardware even where NVML is present.
        #[arg(long)]
        no_discover: bool,
    },
    /// Print a shell completion script: `gpuplan completions bash > /etc/bash_completion.d/gpuplan`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The topology as Graphviz DOT (`--placement`: where each class landed); render
    /// it with `dot -Tsvg`.
    Graph(GraphArgs),
    /// Write man pages: `gpuplan.1` and one per subcommand (`gpuplan-plan.1`, ...).
    Man {
        /// Folder to write the pages into.
        #[arg(short = 'o', long = "out-dir", value_name = "DIR")]
        out_dir: PathBuf,
    },
}

/// Output of `gpuplan graph`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum GraphFormat {
    /// Graphviz DOT (`dot -Tsvg graph.dot > graph.svg` draws it).
    #[default]
    Dot,
}

/// Arguments of `gpuplan graph`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct GraphArgs {
    /// A saved plan (`gpuplan plan -o PLAN`), or KDL files / folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Plan (or read the saved plan) and draw where each class landed, nodes filled by
    /// pool mode.
    #[arg(long)]
    pub placement: bool,
    /// Also draw node-local NVLink domains and every GPU (large clusters: large graphs).
    #[arg(long)]
    pub gpus: bool,
    /// Only DOT: gpuplan has no graph layout of its own (Graphviz draws it).
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    pub format: GraphFormat,
    /// Write the graph to this file instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The state a saved plan was made against (what the last `apply` wrote).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Arguments of `gpuplan fmt`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct FmtArgs {
    /// KDL files or folders (their `*.kdl` files); `-` formats standard input to standard
    /// output.
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Change nothing; list the files that are not formatted and exit 1 if there are any.
    #[arg(long)]
    pub check: bool,
    /// Print the changes as a unified diff.
    #[arg(long)]
    pub diff: bool,
    /// Also format the `*.kdl` files of sub-folders (hidden folders and links skipped).
    #[arg(long, short = 'r')]
    pub recursive: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ReportKind {
    /// GPU-hours and cost per team over a period, by GPU model, MIG profile, shared GPU
    /// and capacity, split into guaranteed and burst use, plus idle capacity
    /// (docs/chargeback.md).
    Chargeback(ChargebackArgs),
    /// The plan as one self-contained HTML page (inline SVG, no network): fabric tiles
    /// by use, MIG slot diagrams and their changes, teams, headroom, what was left out
    /// (docs/report.md).
    Html(HtmlArgs),
}

/// Arguments of `gpuplan report html`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct HtmlArgs {
    /// A saved plan (`gpuplan plan -o PLAN`), or KDL files / folders to plan.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// The state to compare with when planning from KDL (what the last `apply` wrote).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Output of `report chargeback`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ReportFormat {
    #[default]
    Table,
    Csv,
    Json,
}

/// Arguments of `gpuplan report chargeback`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ChargebackArgs {
    /// A saved plan (`gpuplan plan -o PLAN`), or KDL files / folders to plan.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The period charged: `30d`, `7d`, `720h` (the plan is a steady-state layout).
    #[arg(long, default_value = "30d")]
    pub period: String,
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// The state a saved plan was made against (what the last `apply` wrote).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Arguments of `gpuplan check-render`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct CheckRenderArgs {
    /// The rendered folder (`gpuplan render ... --out-dir DIR`).
    pub dir: PathBuf,
    /// A saved plan (`gpuplan plan -o PLAN`), or KDL files / folders to plan as
    /// `render` does.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Output: the violations as text, or the report as JSON.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// The state a saved plan was made against (what the last `apply` wrote).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Arguments of `gpuplan plan`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PlanArgs {
    /// KDL files, or folders whose `*.kdl` files form one configuration.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Output format of the plan.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub solve: SolveArgs,
    /// Save the plan (versioned JSON) to this file, for `gpuplan apply PLAN`.
    #[arg(short = 'o', long = "out", value_name = "PLAN")]
    pub out: Option<PathBuf>,
    /// The state to compare with (what the last `apply` wrote).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Exit 0 when nothing changes, 2 when something does (1 stays an error).
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Move as little as possible from this placement: a saved plan (`plan -o`), a
    /// state file, or a placement JSON. Default: the state's placement, if any.
    #[arg(long, value_name = "FILE", conflicts_with = "no_previous")]
    pub previous: Option<PathBuf>,
    /// Plan from scratch, ignoring the state's placement (the diff still compares
    /// with the state).
    #[arg(long)]
    pub no_previous: bool,
}

/// Arguments of `gpuplan render`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct RenderArgs {
    /// KDL files, or folders whose `*.kdl` files form one configuration.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Targets to render (repeat or comma-separate); `all` renders every target.
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub target: Vec<RenderTarget>,
    /// Output folder; replaced as a whole (atomically) when gpuplan wrote it before.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// Render Slurm syntax for this version instead of the one the KDL names (`22.05`).
    #[arg(long, value_name = "VERSION")]
    pub slurm_version: Option<String>,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Arguments of `gpuplan apply`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ApplyArgs {
    /// A saved plan (`gpuplan plan -o PLAN`), or KDL files and folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Output folder; replaced as a whole (atomically).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// The state file (created by the first apply).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Wait this long for the state's lock: `30s`, `5m` (default 0: one attempt, then
    /// GP921 naming the holder).
    #[arg(long, default_value = "0s", value_parser = state::parse_lock_timeout)]
    pub lock_timeout: f64,
    /// Apply without asking (needed without a terminal, unless PLAN is saved).
    #[arg(long)]
    pub auto_approve: bool,
    /// Take the real path (lock aside), but write nothing: no files, no state.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Arguments of `gpuplan drift`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DriftArgs {
    /// KDL files, or folders whose `*.kdl` files form one configuration; or a saved plan
    /// (`plan -o`), checked as `apply` checks it, to compare with what it planned.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Folder of observations, one file per node: `NODE.json` (`gpuplan discover
    /// --format json`) or `NODE.lgi.txt` (`nvidia-smi mig -lgi`).
    #[arg(long, value_name = "DIR")]
    pub observed: PathBuf,
    /// The state file (what the last `apply` wrote).
    #[arg(long, value_name = "PATH", default_value = crate::state::DEFAULT_PATH)]
    pub state: PathBuf,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Solver options of every command that plans (`plan`, `render`, `apply PATH...`, `drift`).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SolveArgs {
    /// Solver: the ILP, or the greedy first-fit baseline.
    #[arg(long, value_enum, default_value_t = SolverChoice::Ilp)]
    pub solver: SolverChoice,
    /// Wall-clock budget of the whole plan (validation, solve, checks, rendering): `30s`,
    /// `2m`, or plain seconds. The solver gets what validation leaves, less a tenth.
    #[arg(long, default_value = "30s", value_parser = parse_time_limit)]
    pub time_limit: f64,
    /// Relative MIP gap at which a stage stops: `0.01%`, `1%`, or a fraction.
    #[arg(long, default_value = "0.01%", value_parser = parse_gap)]
    pub gap: f64,
    /// Relative gap at which an admission stage of packed replicas only (`requests`,
    /// `fraction`: no gangs, MIG or shared GPUs) stops; other admission stages are exact.
    /// Lower it (`0.05%`) for a tighter packing at the cost of time (docs/solver.md).
    #[arg(long, default_value = "0.2%", value_parser = parse_gap)]
    pub admission_gap: f64,
}

/// What `gpuplan render` writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub(crate) enum RenderTarget {
    /// Kubernetes core objects, node labels/taints, GPU Operator objects, examples.
    K8s,
    /// Volcano queues, HyperNodes and gang jobs.
    Volcano,
    /// Kueue v1beta2 flavors, topology, cohorts, queues and priority classes.
    Kueue,
    /// KAI Scheduler queues, topologies, PodGroups and workloads.
    Kai,
    /// slurm.conf fragment, gres.conf, topology.conf or topology.yaml, sacctmgr script.
    Slurm,
    /// mig-parted and device-plugin configs, per-node MIG scripts.
    Mig,
    /// NCCL settings and topology files per node class.
    Fabric,
    /// Every target.
    All,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum GenMix {
    /// DGX H100 nodes only; training gangs and sweeps.
    #[default]
    Training,
    /// 75% A100 serving nodes; mostly inference, some fine-tuning and dev.
    Inference,
    /// 25% A100 serving nodes; training, inference and dev.
    Mixed,
}

#[derive(Subcommand, Debug)]
pub(crate) enum GenerateKind {
    /// A DGX SuperPOD-like cluster (SUs of 32 DGX H100, rail-optimized leaves, spines,
    /// core) plus teams, priorities and workload classes.
    Superpod {
        /// GPUs in the cluster (rounded up to whole 8-GPU nodes).
        #[arg(long)]
        gpus: u64,
        /// What the demand is made of.
        #[arg(long, value_enum, default_value_t = GenMix::Training)]
        mix: GenMix,
        /// Seed of the generator: the same options give the same files.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Workload classes (default: gpus / 10, clamped to 10..=2000).
        #[arg(long)]
        classes: Option<u32>,
        /// Write the files into this folder instead of printing them.
        #[arg(short = 'o', long = "out-dir")]
        out_dir: Option<PathBuf>,
        /// Write into a folder that is not empty (overwriting same-named files).
        #[arg(long, requires = "out_dir")]
        force: bool,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum DataFormat {
    #[default]
    Kdl,
    Json,
}

/// How a discovered or imported node is named.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NamingArgs {
    /// Node name (default: this host's name for `discover`, `node-01` for imports).
    #[arg(long)]
    pub node: Option<String>,
    /// Node-class name (default: `<model>-x<gpus>`).
    #[arg(long)]
    pub class: Option<String>,
    /// GPU model: a catalog id, or a `gpu-model` declared elsewhere (default: matched
    /// from the PCI device id or product name; required for `nvidia-smi-topo`).
    #[arg(long)]
    pub model: Option<String>,
}

/// Options shared by every importer.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ImportArgs {
    /// The saved output to read.
    pub file: PathBuf,
    /// Output: gpuplan KDL, or the import report and what was read as JSON.
    #[arg(long, value_enum, default_value_t = DataFormat::Kdl)]
    pub format: DataFormat,
    /// Write the output to this file instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write what could be imported even when part of the source is left out: the
    /// output starts with the list of what is missing and the command exits 2.
    /// Without it, an import that leaves anything out writes nothing and exits 1.
    #[arg(long)]
    pub partial: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ImportKind {
    /// The `nvidia-smi` outputs of one machine, in any order, each recognised from its
    /// text: `-q`, `-q -x`, `topo -m`, `mig -lgip`, `mig -lgi`, `mig -lci`; merged into
    /// one node (docs/import.md). The kinds below read one output each.
    NvidiaSmi {
        /// The saved outputs (one machine's).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Output: gpuplan KDL, or the import report and what was read as JSON.
        #[arg(long, value_enum, default_value_t = DataFormat::Kdl)]
        format: DataFormat,
        /// Write the output to this file instead of stdout.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
        /// Write what could be imported even when part of the source is left out (the
        /// output lists what is missing; exit 2).
        #[arg(long)]
        partial: bool,
        #[command(flatten)]
        naming: NamingArgs,
    },
    /// `nvidia-smi topo -m`: NVLink domains, NUMA and PCIe grouping, NIC affinity (as
    /// `import nvidia-smi` with this one file).
    NvidiaSmiTopo {
        #[command(flatten)]
        args: ImportArgs,
        #[command(flatten)]
        naming: NamingArgs,
    },
    /// `nvidia-smi -q -x`: GPUs, model, memory, MIG mode and instances.
    NvidiaSmiXml {
        #[command(flatten)]
        args: ImportArgs,
        #[command(flatten)]
        naming: NamingArgs,
    },
    /// `nvidia-smi mig -lgip`: MIG profiles and usable memory, checked against the
    /// catalog; driver renames become `mig-name` pins.
    MigLgip {
        #[command(flatten)]
        args: ImportArgs,
        /// Catalog model to compare with (default: the best match).
        #[arg(long)]
        model: Option<String>,
    },
    /// `kubectl get nodes -o json` (or `-o yaml`): node classes from GPU Feature Discovery
    /// labels and capacity, name ranges, current MIG layouts, NVLink cliques, switch tiers
    /// from topology labels, taints and node pools (docs/import.md).
    K8sNodes {
        #[command(flatten)]
        args: ImportArgs,
        /// Map a `nvidia.com/gpu.product` value to a catalog model, e.g.
        /// `--model NVIDIA-A10=a10-24gb` (repeatable); `unknown-gpu=ID` maps the GPUs of
        /// nodes without a product label (no GPU Feature Discovery).
        #[arg(long = "model", value_name = "PRODUCT=ID", value_parser = parse_assignment)]
        models: Vec<(String, String)>,
        /// The node label naming a switch tier: `--tier leaf=KEY`, `spine=KEY`, `core=KEY`
        /// (repeatable; `leaf=` turns a tier off). Default: detected (docs/import.md).
        #[arg(long = "tier", value_name = "TIER=KEY", value_parser = parse_tier)]
        tiers: Vec<(String, String)>,
        /// A node label whose value names the node's pool (repeatable; default:
        /// `cloud.google.com/gke-nodepool`, `eks.amazonaws.com/nodegroup`,
        /// `karpenter.sh/nodepool`, `kubernetes.azure.com/agentpool`, `agentpool`).
        #[arg(long = "pool-label", value_name = "KEY")]
        pool_labels: Vec<String>,
    },
    /// A Slurm cluster's slurm.conf (NodeName and PartitionName lines, Includes) with
    /// gres.conf and topology.conf beside it: node classes, nodes, MIG layouts, pools
    /// and the fabric (docs/import.md).
    Slurm {
        /// slurm.conf, or the folder that holds it (e.g. /etc/slurm).
        path: PathBuf,
        /// Map a GRES GPU type to a catalog model (`--model a100=a100-sxm4-40gb`) or to
        /// the name of a `gpu-model` you declare (`--model m60=tesla-m60`); `gpu=ID` for
        /// untyped `gpu:N` GRES (repeatable). Without it, a type outside the catalog is
        /// declared as a `gpu-model` named after it, for you to complete.
        #[arg(long = "model", value_name = "TYPE=ID", value_parser = parse_assignment)]
        models: Vec<(String, String)>,
        /// Output: gpuplan KDL, or the import report and what was read as JSON.
        #[arg(long, value_enum, default_value_t = DataFormat::Kdl)]
        format: DataFormat,
        /// Write the output to this file instead of stdout.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
        /// Write what could be imported even when part of the source is left out (the
        /// output lists what is missing; exit 2).
        #[arg(long)]
        partial: bool,
    },
    /// The Alibaba GPU trace (openb, the FGD paper's benchmark): nodes with GPU model,
    /// CPU and memory; pods sampled until their GPUs reach `--load` x capacity.
    Openb {
        /// Node list, e.g. `openb_node_list_gpu_node.csv`.
        #[arg(long)]
        nodes: PathBuf,
        /// Pod list, e.g. `openb_pod_list_default.csv`.
        #[arg(long)]
        pods: PathBuf,
        /// Requested GPUs to sample, as a multiple of the cluster's GPUs.
        #[arg(long, default_value_t = 1.0)]
        load: f64,
        /// Seed of the sampling (the paper uses 42 to 51).
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// One class per sampled pod, named in arrival order (`pod-000001`...), instead of
        /// one class per distinct pod: `--solver greedy` then places them online.
        #[arg(long)]
        per_pod: bool,
        /// Folder to write `cluster.kdl` and `workloads.kdl` into.
        #[arg(short = 'o', long = "out-dir", value_name = "DIR")]
        out_dir: PathBuf,
    },
}

/// `KEY=VALUE` (the key not empty; the value may be).
pub(crate) fn parse_assignment(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}

/// `TIER=KEY` with TIER one of `leaf`, `spine`, `core`.
pub(crate) fn parse_tier(s: &str) -> Result<(String, String), String> {
    let (tier, key) = parse_assignment(s)?;
    if !["leaf", "spine", "core"].contains(&tier.as_str()) {
        return Err(format!(
            "the tier must be leaf, spine or core, not `{tier}`"
        ));
    }
    Ok((tier, key))
}

/// `30s`, `2m`, `1h30m`, or plain seconds (`45`, `2.5`).
/// Checks one `--limit KEY=N` setting.
pub(crate) fn parse_limit(s: &str) -> Result<String, String> {
    crate::limits::Limits::default().set_key(s)?;
    Ok(s.to_string())
}

pub fn parse_time_limit(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("`{s}`: the time limit must be a positive duration"))
        };
    }
    let d = crate::units::parse_duration(s)?;
    if d.0 == 0 {
        return Err(format!("`{s}`: the time limit must be a positive duration"));
    }
    Ok(d.0 as f64)
}

/// `1%` (a percentage) or `0.01` (a fraction).
pub fn parse_gap(s: &str) -> Result<f64, String> {
    if s.trim().ends_with('%') {
        return crate::units::parse_percent(s);
    }
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=10.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a gap (write e.g. `1%` or `0.01`)")),
    }
}
