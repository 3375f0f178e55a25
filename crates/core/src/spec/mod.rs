//! KDL text -> spanned spec values.
//!
//! The spec is what the user wrote, checked for shape (known nodes, properties, value
//! types and units) but not for meaning: names are not resolved yet. Every error in
//! every file is collected; a file with KDL syntax errors yields only its GP001s.

mod budget;
mod decode;
pub mod language;
mod nesting;
mod parse;
pub mod reader;
pub mod schema;

pub use budget::GP047;
pub use decode::decode_document;
pub use nesting::{MAX_NESTING, nesting_guard};

use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{FileId, SourceMap, Span, Spanned};
use crate::units::{Bandwidth, Bytes, Duration};

type S<T> = Spanned<T>;

pub(crate) const GP001: &str = "GP001";

#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub clusters: Vec<ClusterDecl>,
    pub gpu_models: Vec<GpuModelDecl>,
    pub classes: Vec<ClassDecl>,
    pub node_groups: Vec<NodesDecl>,
    pub switches: Vec<SwitchDecl>,
    pub mnnvl_domains: Vec<MnnvlDecl>,
    pub teams: Vec<TeamDecl>,
    pub priorities: Vec<PriorityDecl>,
    pub workloads: Vec<WorkloadDecl>,
    pub mig: MigDecl,
    pub pools: Vec<PoolDecl>,
    pub storages: Vec<StorageDecl>,
    /// `backend` nodes (one is valid) and `moved` renames (`decode/state.rs`).
    pub backends: Vec<BackendDecl>,
    pub moves: Vec<MovedDecl>,
}

/// `backend "local"|"pg" workspace=... keep=...`: where the state is kept and locked.
#[derive(Clone, Debug)]
pub struct BackendDecl {
    pub span: Span,
    pub kind: Option<S<String>>,
    pub workspace: Option<S<String>>,
    pub keep: Option<S<u32>>,
    /// Properties that would carry a connection or credentials (`dsn=`, `password=`,
    /// a `postgresql://` value, ...): never read, reported (GP065).
    pub credentials: Vec<S<String>>,
}

/// `moved from="old" to="new" kind="class"|"node"|"pool"`: a rename.
#[derive(Clone, Debug)]
pub struct MovedDecl {
    pub span: Span,
    pub from: Option<S<String>>,
    pub to: Option<S<String>>,
    pub kind: Option<S<String>>,
}

/// `capacity=`, `price-per-hour=` and `interruptions=` of a node class or range.
#[derive(Clone, Debug, Default)]
pub struct CapacityDecl {
    pub capacity: Option<S<String>>,
    pub price_per_hour: Option<S<f64>>,
    /// Interruptions per hour.
    pub interruptions: Option<S<f64>>,
}

/// `storage "NAME" write-bandwidth=... pool=... leaf=...`.
#[derive(Clone, Debug)]
pub struct StorageDecl {
    pub name: S<String>,
    pub span: Span,
    pub write_bandwidth: Option<S<Bandwidth>>,
    pub pool: Option<S<String>>,
    pub leaf: Option<S<String>>,
}

#[derive(Clone, Debug)]
pub struct ClusterDecl {
    pub name: S<String>,
    pub span: Span,
    pub slurm_version: Option<S<Vec<u32>>>,
    pub kubernetes_version: Option<S<Vec<u32>>>,
    pub volcano_version: Option<S<Vec<u32>>>,
    pub kueue_version: Option<S<Vec<u32>>>,
    pub kai_version: Option<S<Vec<u32>>>,
    /// `scheduler "NAME"`: the default scheduling authority.
    pub scheduler: Option<S<String>>,
    /// `gpu-allocation "dra"`: how Kubernetes-managed nodes hand out GPUs.
    pub gpu_allocation: Option<S<String>>,
}

#[derive(Clone, Debug)]
pub struct GpuModelDecl {
    pub name: S<String>,
    pub span: Span,
    pub base: Option<S<String>>,
    pub memory: Option<S<Bytes>>,
    pub nvlink_gen: Option<S<u32>>,
    pub nvlink_bandwidth: Option<S<Bandwidth>>,
    pub price_per_hour: Option<S<f64>>,
    pub product_name: Option<S<String>>,
    /// `driver="535.104.05"`: the NVIDIA driver on nodes with this model.
    pub driver: Option<S<Vec<u32>>>,
    /// (catalog profile, driver name)
    pub mig_names: Vec<(S<String>, S<String>)>,
}

#[derive(Clone, Debug)]
pub struct CpuDecl {
    pub span: Span,
    pub sockets: Option<S<u32>>,
    pub cores_per_socket: Option<S<u32>>,
    pub threads_per_core: Option<S<u32>>,
}

#[derive(Clone, Debug)]
pub struct GpusDecl {
    pub span: Span,
    pub count: Option<S<u32>>,
    pub model: Option<S<String>>,
    pub bus_ids: Option<S<String>>,
    pub driver: Option<S<Vec<u32>>>,
}

#[derive(Clone, Debug)]
pub struct NumaDecl {
    pub span: Span,
    pub id: Option<S<u32>>,
    pub gpus: Option<S<Vec<u32>>>,
    pub nics: Option<S<Vec<u32>>>,
    pub cores: Option<S<Vec<u32>>>,
}

#[derive(Clone, Debug)]
pub struct PcieDecl {
    pub span: Span,
    pub name: Option<S<String>>,
    pub gpus: Option<S<Vec<u32>>>,
    pub nics: Option<S<Vec<u32>>>,
}

#[derive(Clone, Debug)]
pub struct NicsDecl {
    pub span: Span,
    pub count: Option<S<u32>>,
    pub speed: Option<S<Bandwidth>>,
    pub kind: Option<S<String>>,
    /// `names="mlx5_[0-7]"`: the pattern as written, expanded.
    pub names: Option<S<String>>,
    pub socket_ifname: Option<S<String>>,
    pub gid_index: Option<S<u32>>,
    pub bus_ids: Option<S<String>>,
}

#[derive(Clone, Debug)]
pub struct LabelDecl {
    pub span: Span,
    pub key: S<String>,
    pub value: S<String>,
}

#[derive(Clone, Debug)]
pub struct TaintDecl {
    pub span: Span,
    pub key: S<String>,
    pub value: Option<S<String>>,
    pub effect: Option<S<String>>,
}

#[derive(Clone, Debug)]
pub struct ClassDecl {
    pub name: S<String>,
    pub span: Span,
    pub cpu: Option<CpuDecl>,
    pub memory: Option<S<Bytes>>,
    /// The `gpus` lines, one per GPU model, in order: GPU indexes run across them (the
    /// first line's GPUs are 0..N-1, the next line's continue at N).
    pub gpus: Vec<GpusDecl>,
    pub nvlink_domains: Vec<S<Vec<u32>>>,
    pub numa: Vec<NumaDecl>,
    pub pcie_switches: Vec<PcieDecl>,
    pub nics: Option<NicsDecl>,
    pub labels: Vec<LabelDecl>,
    pub taints: Vec<TaintDecl>,
    pub capacity: CapacityDecl,
}

impl ClassDecl {
    /// GPUs per node: the counts of every `gpus` line, added up (saturating).
    pub(crate) fn gpu_total(&self) -> u32 {
        self.gpus
            .iter()
            .filter_map(|g| g.count.as_ref())
            .fold(0u32, |t, c| t.saturating_add(c.value))
    }
}

#[derive(Clone, Debug)]
pub struct NodeOverrideDecl {
    pub name: S<String>,
    pub span: Span,
    pub gpus_down: Option<S<Vec<u32>>>,
    pub cordon: Option<S<bool>>,
    pub labels: Vec<LabelDecl>,
    pub taints: Vec<TaintDecl>,
}

#[derive(Clone, Debug)]
pub struct NodesDecl {
    /// The pattern as written, with the expanded names as value.
    pub names: S<Vec<String>>,
    pub pattern: String,
    pub span: Span,
    pub class: Option<S<String>>,
    pub labels: Vec<LabelDecl>,
    pub taints: Vec<TaintDecl>,
    pub overrides: Vec<NodeOverrideDecl>,
    pub capacity: CapacityDecl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchTier {
    Leaf,
    Spine,
    Core,
}

impl SwitchTier {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SwitchTier::Leaf => "leaf",
            SwitchTier::Spine => "spine",
            SwitchTier::Core => "core",
        }
    }
}

#[derive(Clone, Debug)]
pub struct SwitchDecl {
    pub tier: SwitchTier,
    pub name: S<String>,
    pub span: Span,
    /// Index of the parent switch in `Spec::switches`.
    pub parent: Option<usize>,
    pub nodes: Option<S<Vec<String>>>,
    pub rails: Option<S<u32>>,
    pub link_speed: Option<S<Bandwidth>>,
}

#[derive(Clone, Debug)]
pub struct MnnvlDecl {
    pub name: S<String>,
    pub span: Span,
    pub nodes: Option<S<Vec<String>>>,
}

#[derive(Clone, Debug)]
pub struct QuotaDecl {
    pub span: Span,
    pub model: Option<S<String>>,
    pub pool: Option<S<String>>,
    pub guarantee: Option<S<u32>>,
    pub burst: Option<S<u32>>,
    pub scheduler: Option<S<String>>,
}

#[derive(Clone, Debug)]
pub struct TeamDecl {
    pub name: S<String>,
    pub span: Span,
    pub guarantee: Option<S<u32>>,
    pub burst: Option<S<u32>>,
    pub parent: Option<S<String>>,
    /// Fair-share weight (Kueue `fairSharing.weight`, KAI `overQuotaWeight`, Slurm
    /// `Fairshare`, Volcano `weight`).
    pub weight: Option<S<u32>>,
    pub quotas: Vec<QuotaDecl>,
}

#[derive(Clone, Debug)]
pub struct PriorityDecl {
    pub name: S<String>,
    pub span: Span,
    pub value: Option<S<i64>>,
    pub preempts: Vec<S<String>>,
    pub never_preempts: Option<S<bool>>,
    pub description: Option<S<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    Training,
    Inference,
    Dev,
}

impl WorkloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Training => "training",
            WorkloadKind::Inference => "inference",
            WorkloadKind::Dev => "dev",
        }
    }
}

#[derive(Clone, Debug)]
pub struct WorkloadDecl {
    pub kind: WorkloadKind,
    pub name: S<String>,
    pub span: Span,
    pub team: Option<S<String>>,
    pub priority: Option<S<String>>,
    pub replicas: Option<S<u32>>,
    pub scheduler: Option<S<String>>,
    /// `cuda "12.4"`: the CUDA runtime the image needs.
    pub cuda: Option<S<Vec<u32>>>,
    /// `cuda ... compat=#true`: the image ships the forward-compatibility package.
    pub cuda_compat: Option<S<bool>>,
    pub models: Vec<S<String>>,
    pub models_span: Option<Span>,
    // training
    pub gang_span: Option<Span>,
    pub gang_gpus: Option<S<u32>>,
    pub gpus_per_node: Option<S<u32>>,
    pub required_tier: Option<S<String>>,
    pub preferred_tier: Option<S<String>>,
    pub checkpoint: Option<S<Duration>>,
    /// The `checkpoint` node.
    pub checkpoint_span: Option<Span>,
    pub checkpoint_size: Option<S<Bytes>>,
    pub restart: Option<S<Duration>>,
    pub max_idle: Option<S<f64>>,
    pub preemptible: Option<S<bool>>,
    /// `spot #true|#false` (the value, spanned on the node when no argument is given).
    pub spot: Option<S<bool>>,
    pub straddle: Option<S<bool>>,
    // inference / dev
    pub memory: Option<S<Bytes>>,
    /// A `memory` node was written (even if its value was invalid).
    pub memory_given: bool,
    pub isolation: Option<S<String>>,
    pub profile: Option<S<String>>,
    pub gpus_per_replica: Option<S<u32>>,
    pub min_compute: Option<S<u32>>,
    pub share: Option<S<String>>,
    pub per_gpu: Option<S<u32>>,
    /// `requests cpu=`: CPU cores per replica.
    pub cpu_request: Option<S<f64>>,
    /// `requests memory=`: host memory per replica.
    pub memory_request: Option<S<Bytes>>,
    /// `fraction`: share of one GPU per replica (0..1).
    pub fraction: Option<S<f64>>,
}

#[derive(Clone, Debug)]
pub struct LayoutDecl {
    pub span: Span,
    pub nodes: Option<S<Vec<String>>>,
    pub gpus: Option<S<Vec<u32>>>,
    /// Profiles, repeated for counts (`1g.10gb*4` expanded), each with its span.
    pub profiles: Vec<S<String>>,
    /// `current=#true`: the GPUs' layout now, not a requirement.
    pub current: Option<S<bool>>,
}

#[derive(Clone, Debug, Default)]
pub struct MigDecl {
    pub allow: Vec<S<String>>,
    pub layouts: Vec<LayoutDecl>,
    pub headroom: Option<S<f64>>,
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub struct PoolDecl {
    pub name: S<String>,
    pub span: Span,
    pub mode: Option<S<String>>,
    pub nodes: Option<S<Vec<String>>>,
    pub max_disrupted: Option<S<u32>>,
    pub scheduler: Option<S<String>>,
    /// `gpu-allocation=`: device plugin or DRA on the pool's Kubernetes nodes.
    pub gpu_allocation: Option<S<String>>,
}

/// Converts kdl's parse errors into GP001 diagnostics, one per problem.
pub(crate) fn syntax_diagnostics(file: FileId, text: &str, err: &kdl::KdlError) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for d in &err.diagnostics {
        let (offset, len) = clamp_to_chars(text, d.span.offset(), d.span.len());
        let message = d
            .message
            .clone()
            .unwrap_or_else(|| "invalid KDL".to_string());
        let mut diag = Diagnostic::error(
            GP001,
            format!("KDL syntax error: {}", message.trim_end_matches('.')),
        )
        .at(
            Span::new(file, offset, len),
            d.label.clone().unwrap_or_else(|| "here".into()),
        );
        diag = diag.with_help(d.help.clone().unwrap_or_else(|| {
            "gpuplan reads KDL v2 (https://kdl.dev): strings in double quotes, booleans as #true/#false".into()
        }));
        out.push(diag);
    }
    if out.is_empty() {
        out.push(
            Diagnostic::error(GP001, "KDL syntax error")
                .at(Span::new(file, 0, 0), "the document could not be parsed")
                .with_help("gpuplan reads KDL v2 (https://kdl.dev)"),
        );
    }
    out
}

/// Keeps a span inside the text and on character boundaries.
pub(crate) fn clamp_to_chars(text: &str, offset: usize, len: usize) -> (usize, usize) {
    let mut start = offset.min(text.len());
    while start > 0 && !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = offset.saturating_add(len).min(text.len()).max(start);
    while end < text.len() && !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end - start)
}

/// Parses one file (with the nesting guard and the parser's deep stack), or the
/// diagnostics that say why it does not parse. For tools that work on the KDL text
/// itself (`gpuplan fmt`).
pub(crate) fn parse_one(file: FileId, text: &str) -> Result<kdl::KdlDocument, Vec<Diagnostic>> {
    if let Some(d) = nesting_guard(file, text) {
        return Err(vec![d]);
    }
    match parse::parse_texts(&[text]).pop() {
        Some(Ok(doc)) => Ok(doc),
        Some(Err(e)) => Err(syntax_diagnostics(file, text, &e)),
        None => Err(Vec::new()),
    }
}

/// Parses and decodes every file of `sources` into one merged [`Spec`]. Files are
/// parsed concurrently (module `parse`) and decoded in order.
pub fn parse_all(sources: &SourceMap, diags: &mut Diagnostics) -> Spec {
    let files = sources.files();
    let guarded: Vec<Option<Diagnostic>> =
        files.iter().map(|f| nesting_guard(f.id, &f.text)).collect();
    let texts: Vec<&str> = files
        .iter()
        .zip(&guarded)
        .filter(|(_, g)| g.is_none())
        .map(|(f, _)| &*f.text)
        .collect();
    let mut parsed = parse::parse_texts(&texts).into_iter();
    let mut docs = Vec::new();
    for (f, guard) in files.iter().zip(guarded) {
        if let Some(d) = guard {
            diags.push(d);
            continue;
        }
        match parsed.next().expect("one parse per guarded file") {
            Ok(doc) => docs.push((f.id, doc)),
            Err(e) => diags.extend(syntax_diagnostics(f.id, &f.text, &e)),
        }
    }
    let mut spec = Spec::default();
    let refs: Vec<(FileId, &kdl::KdlDocument)> = docs.iter().map(|(f, d)| (*f, d)).collect();
    if let Some(d) = budget::check(&refs, crate::limits::current().names) {
        diags.push(d);
        return spec;
    }
    for (file, doc) in &docs {
        decode_document(doc, *file, &mut spec, diags);
    }
    spec
}
