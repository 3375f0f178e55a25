//! A plan is a value: the desired artifacts and placement compared with the applied
//! [`State`](crate::state::State), as a list of changes (create / update / delete /
//! no-op, each with a reason), the disruption they cause and a rollout order.
//!
//! [`build`] is pure: the caller loads the inputs, solves and renders; here the results
//! are compared. The JSON form (`plan -o PLAN`, `plan --format json`, `show PLAN`) is
//! versioned ([`FORMAT_VERSION`]) and deterministic: everything is sorted and nothing
//! depends on the clock (the solver's wall time is left out), so the same inputs give
//! byte-identical plans whatever the order of the input files.
//!
//! | file | owns |
//! |---|---|
//! | `files.rs` | per file and per resource (YAML document) changes, unified diffs |
//! | `disruption.rs` | MIG layout changes, moved gangs, lost admission, rollout batches |
//! | `view.rs` | the human plan (`Plan: N to add, ...`) and the JSON |

pub mod disruption;
mod files;
pub mod view;

pub use disruption::{
    AdmissionLoss, Affected, Batch, Disruption, GangMove, MigChange, NodeDisruption,
};
pub use files::{Action, FileChange, ResourceChange};

use crate::diag::Diagnostic;
use crate::model::Cluster;
use crate::placement::{Placement, SolverSummary};
use crate::state::{self, Artifacts};
use serde::{Deserialize, Serialize};

/// Version of the saved plan format.
pub(crate) const FORMAT_VERSION: &str = "1";

/// GP923: the saved plan cannot be read (missing, not JSON, another format version,
/// an artifact whose digest does not match its text).
pub const GP923: &str = "GP923";

/// One input file and its digest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InputFile {
    pub path: String,
    pub sha256: String,
}

/// What the plan was compared against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorState {
    pub lineage: String,
    pub serial: u64,
    /// Digest of the state file's bytes.
    pub digest: String,
}

/// Resource counts, as in `Plan: N to add, M to change, K to destroy.`
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSummary {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
    pub unchanged: u32,
}

impl ChangeSummary {
    pub(crate) fn has_changes(&self) -> bool {
        self.add + self.change + self.destroy > 0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format_version: String,
    pub gpuplan_version: String,
    /// The paths given on the command line, sorted; `apply PLAN` reads them again to
    /// check that the inputs did not change.
    pub arguments: Vec<String>,
    /// Every input file read, sorted by path.
    pub inputs: Vec<InputFile>,
    pub inputs_digest: String,
    /// `null` when there was no state (first apply).
    pub prior_state: Option<PriorState>,
    pub summary: ChangeSummary,
    /// The renames (`moved`) this plan carries out: the state's placement is read
    /// under the new names, so the renamed things keep what they held (no disruption).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<crate::model::moved::Move>,
    /// One entry per artifact path (no-op included), sorted by path.
    pub changes: Vec<FileChange>,
    pub disruption: Disruption,
    /// The solver's summary (also in `placement.solver`); `seconds` is always 0 here.
    pub solver: SolverSummary,
    pub placement: Placement,
    /// The desired artifacts: exactly what `apply` writes.
    pub artifacts: Artifacts,
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.summary.has_changes()
    }
}

/// Digest over the sorted input files (path and content digest).
pub fn inputs_digest(inputs: &[InputFile]) -> String {
    let mut sorted: Vec<&InputFile> = inputs.iter().collect();
    sorted.sort();
    let mut text = String::new();
    for i in sorted {
        text.push_str(&i.path);
        text.push('\0');
        text.push_str(&i.sha256);
        text.push('\n');
    }
    state::sha256(text.as_bytes())
}

/// Parses a saved plan's text (`shown` names it in messages): the format version, the
/// fields, every artifact path ([`state::check_artifact_paths`], GP927) and every
/// artifact digest. Pure; `apply` checks the rest against the inputs and the state.
#[allow(clippy::result_large_err)] // one diagnostic, once per command
pub fn parse(shown: &str, text: &str) -> Result<Plan, Diagnostic> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Diagnostic::error(GP923, format!("`{shown}` is not a saved plan: {e}"))
            .with_help("save one with `gpuplan plan PATH... -o PLAN`; KDL files end in `.kdl`")
    })?;
    match value.get("format_version").and_then(|v| v.as_str()) {
        Some(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(Diagnostic::error(
                GP923,
                format!(
                    "`{shown}` has plan format_version {}; this gpuplan reads version {}",
                    crate::diag::quoted(v),
                    FORMAT_VERSION
                ),
            )
            .with_help("make the plan again with this gpuplan"));
        }
        None => {
            return Err(Diagnostic::error(
                GP923,
                format!("`{shown}` is not a saved plan: no `format_version`"),
            )
            .with_help("save one with `gpuplan plan PATH... -o PLAN`"));
        }
    }
    let plan: Plan = serde_json::from_value(value).map_err(|e| {
        Diagnostic::error(GP923, format!("`{shown}` is not a valid saved plan: {e}"))
            .with_help("make the plan again with `gpuplan plan PATH... -o PLAN`")
    })?;
    crate::state::check_artifact_paths(
        plan.artifacts.keys(),
        &format!("the saved plan `{shown}`"),
    )?;
    for (p, a) in &plan.artifacts {
        if crate::state::sha256(a.text.as_bytes()) != a.sha256 {
            return Err(Diagnostic::error(
                GP923,
                format!(
                    "`{shown}` was edited: the digest of {} does not match its text",
                    crate::diag::quoted(p)
                ),
            )
            .with_help("make the plan again with `gpuplan plan PATH... -o PLAN`"));
        }
    }
    Ok(plan)
}

/// Everything [`build`] compares.
pub struct Desired<'a> {
    pub model: &'a Cluster,
    pub placement: &'a Placement,
    pub files: &'a crate::render::Files,
    pub arguments: Vec<String>,
    pub inputs: Vec<InputFile>,
}

/// The input files as a plan records them (path and digest).
pub fn inputs_of(sources: &crate::source::SourceMap) -> Vec<InputFile> {
    sources
        .files()
        .iter()
        .map(|f| InputFile {
            path: f.path.clone(),
            sha256: crate::state::sha256(f.text.as_bytes()),
        })
        .collect()
}

/// Compares the desired artifacts and placement with the prior state (if any).
pub fn build(d: Desired<'_>, prior: Option<&state::Loaded>) -> Plan {
    let artifacts: Artifacts = d
        .files
        .iter()
        .map(|(p, t)| (p.clone(), state::Artifact::new(t.clone())))
        .collect();
    let mut placement = d.placement.clone();
    placement.solver.seconds = 0.0;
    let prior_state = prior.map(|l| l.state.clone());
    let changes = files::compare(prior_state.as_ref().map(|s| &s.artifacts), &artifacts);
    let summary = files::summarize(&changes);
    // What ran, under this configuration's names (`moved`).
    let before = prior_state
        .as_ref()
        .map(|s| crate::placement::moved::renamed(&s.placement, &d.model.moves));
    let moved = prior_state
        .as_ref()
        .map(|s| {
            crate::placement::moved::applicable(&s.placement, &d.model.moves)
                .into_iter()
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let disruption = disruption::compute(d.model, before.as_ref(), &placement);
    let mut arguments = d.arguments;
    arguments.sort();
    arguments.dedup();
    let mut inputs = d.inputs;
    inputs.sort();
    Plan {
        format_version: FORMAT_VERSION.to_string(),
        gpuplan_version: env!("CARGO_PKG_VERSION").to_string(),
        arguments,
        inputs_digest: inputs_digest(&inputs),
        inputs,
        prior_state: prior.map(|l| PriorState {
            lineage: l.state.lineage.clone(),
            serial: l.state.serial,
            digest: l.digest.clone(),
        }),
        summary,
        moved,
        changes,
        disruption,
        solver: placement.solver.clone(),
        placement,
        artifacts,
    }
}
