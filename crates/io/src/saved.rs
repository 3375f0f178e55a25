//! Reopening a saved plan (`gpuplan plan -o PLAN`): the one check every command that
//! reads a saved plan uses (`apply`, `show`, `graph`, `report`), so that what is applied
//! or displayed is exactly what its inputs and placement give.
//!
//! A saved plan arrives as a CI artifact and may be edited by whoever can write it
//! (docs/apply.md, "Threat model"). It names its inputs; it does not choose what gpuplan
//! reads: the configuration is the one the user passes, or the plan's own `arguments`
//! resolved inside the plan file's folder, or else inside the current folder (relative,
//! no `..`, a folder or a `*.kdl` file, and after links are resolved still inside that
//! folder); anything else is refused (GP935) before it is opened. The plan file itself is read bounded, and only
//! if it is a regular file.

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

use crate::diag::{Diagnostic, quoted};
use crate::model::Cluster;
use crate::plan::{self, GP923, Plan, inputs_of};
use crate::source::SourceMap;
use crate::state::Loaded;
use std::path::{Component, Path, PathBuf};

/// GP928: a saved plan is not what its own inputs and placement give.
pub(crate) const GP928: &str = "GP928";
/// GP935: a saved plan names an input gpuplan will not read.
pub(crate) const GP935: &str = "GP935";

/// The most bytes of a saved plan read (its rendered files are in it: a 100,000-GPU
/// plan is tens of MB).
pub const MAX_PLAN_BYTES: u64 = 1 << 30;

/// A saved plan that passed every check, with what it was checked against.
#[derive(Debug)]
pub struct Reopened {
    pub plan: Plan,
    pub sources: SourceMap,
    pub model: Cluster,
}

/// A saved plan as the first argument (a file that is not KDL), and the configuration
/// to check it against (the other arguments; none: the plan's own inputs).
pub fn split(paths: &[PathBuf]) -> Option<(&Path, &[PathBuf])> {
    match paths {
        [p, rest @ ..] if p.is_file() && p.extension().is_none_or(|e| e != "kdl") => {
            Some((p.as_path(), rest))
        }
        _ => None,
    }
}

/// Reads a saved plan: a regular file, at most [`MAX_PLAN_BYTES`], a valid plan whose
/// artifact paths are plain relative paths (GP927) — returned with its text.
pub fn read(path: &Path) -> Result<(Plan, String), Diagnostic> {
    let shown = path.display().to_string();
    let mut budget = MAX_PLAN_BYTES;
    let text =
        crate::load::read_file(path, crate::load::Links::Follow, &mut budget).map_err(|d| {
            Diagnostic::error(
                GP923,
                format!(
                    "cannot read the saved plan {}: {}",
                    quoted(&shown),
                    d.message
                ),
            )
            .with_help("save one with `gpuplan plan PATH... -o PLAN`")
        })?;
    let plan = plan::parse(&shown, &text)?;
    Ok((plan, text))
}

/// Reopens a saved plan already read from `path` (its text `text`): reads its inputs
/// (`config` when given, else its `arguments` inside its folder), refuses it when stale
/// against the inputs or `prior` (the state, GP922), and verifies that it is byte for
/// byte the plan its inputs, placement and state give (GP928).
pub fn reopen_read(
    path: &Path,
    plan: Plan,
    text: &str,
    config: &[PathBuf],
    prior: Option<&Loaded>,
) -> Result<Reopened, Vec<Diagnostic>> {
    let sources = inputs(path, &plan, config)?;
    let mut stale = crate::apply::stale_state(&plan, prior);
    if let Some(mut d) = crate::apply::stale_inputs(&plan, &inputs_of(&sources)) {
        if config.is_empty() {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            d.help = Some(format!(
                "{}; the plan's inputs are read inside its folder ({}) or the current folder: \
                 to check it against another copy of the configuration, pass it after the plan \
                 (`gpuplan apply PLAN PATH...`)",
                d.help.take().unwrap_or_default(),
                quoted(&dir.map_or(".".into(), |d| d.display().to_string()))
            ));
        }
        stale.push(d);
    }
    if !stale.is_empty() {
        return Err(stale);
    }
    let model = verify(&path.display().to_string(), &plan, text, &sources, prior)?;
    Ok(Reopened {
        plan,
        sources,
        model,
    })
}

/// The inputs of a saved plan: `config` when given, else its own arguments
/// ([`arguments_inside`]).
pub fn inputs(path: &Path, plan: &Plan, config: &[PathBuf]) -> Result<SourceMap, Vec<Diagnostic>> {
    if config.is_empty() {
        let args = arguments_inside(path, &plan.arguments).map_err(|d| vec![d])?;
        Ok(load_as(&args))
    } else {
        Ok(crate::load::load_paths(config).0)
    }
}

/// The plan's arguments as paths to read: each relative, without `..`, a folder or a
/// `*.kdl` file, found in the plan file's folder or else in the current folder, and
/// inside that folder once links are resolved. Returns (path to read, path as the plan
/// names it).
fn arguments_inside(plan: &Path, args: &[String]) -> Result<Vec<(PathBuf, String)>, Diagnostic> {
    let dir = plan
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for a in args {
        let p = Path::new(a);
        let plain = !a.is_empty()
            && !a.chars().any(char::is_control)
            && p.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !plain {
            return Err(outside(
                plan,
                a,
                "it is not a relative path inside the plan's folder",
            ));
        }
        let in_dir = if dir == Path::new(".") {
            p.to_path_buf()
        } else {
            dir.join(p)
        };
        // The plan's folder first; the current folder where the plan was saved
        // elsewhere (`plan cluster/ -o /tmp/plan.json`). Missing in both: read (and
        // reported as a changed input) from the plan's folder.
        let (joined, base) = [(in_dir.clone(), dir), (p.to_path_buf(), Path::new("."))]
            .into_iter()
            .find(|(j, _)| std::fs::symlink_metadata(j).is_ok())
            .unwrap_or((in_dir, dir));
        let root = std::fs::canonicalize(base).map_err(|e| {
            Diagnostic::error(
                GP923,
                format!(
                    "cannot read the folder {}: {e}",
                    quoted(&base.display().to_string())
                ),
            )
        })?;
        match std::fs::canonicalize(&joined) {
            Ok(real) if !real.starts_with(&root) => {
                return Err(outside(plan, a, "it leads outside its folder"));
            }
            Ok(real) if !real.is_dir() && p.extension().is_none_or(|e| e != "kdl") => {
                return Err(outside(
                    plan,
                    a,
                    "it is neither a folder nor a `*.kdl` file",
                ));
            }
            // Missing: reported as a changed input, the same words as a changed one.
            _ => {}
        }
        out.push((joined, a.clone()));
    }
    Ok(out)
}

fn outside(plan: &Path, arg: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        GP935,
        format!(
            "the saved plan {} names the input {}, which gpuplan does not read: {why}",
            quoted(&plan.display().to_string()),
            quoted(arg)
        ),
    )
    .with_help(
        "a saved plan's inputs are read inside its own folder; pass the configuration \
         instead (`gpuplan apply PLAN PATH...`), or make the plan again",
    )
}

/// Loads `(path, name)` pairs; every file is recorded under the name the plan gave its
/// argument, so that digests compare with the plan's `inputs` wherever the plan lies.
fn load_as(args: &[(PathBuf, String)]) -> SourceMap {
    let paths: Vec<PathBuf> = args.iter().map(|(p, _)| p.clone()).collect();
    let (loaded, _) = crate::load::load_paths(&paths);
    let mut out = SourceMap::new();
    for f in loaded.files() {
        let name = args
            .iter()
            .find_map(|(p, a)| {
                let shown = p.to_string_lossy().replace('\\', "/");
                f.path
                    .strip_prefix(shown.as_str())
                    .map(|rest| format!("{a}{rest}"))
            })
            .unwrap_or_else(|| f.path.clone());
        out.add(name, f.text.clone());
    }
    out
}

fn tampered(shown: &str, what: String) -> Diagnostic {
    Diagnostic::error(
        GP928,
        format!(
            "{} is not the plan its inputs and placement give: {what}",
            quoted(shown)
        ),
    )
    .with_help(
        "nothing was written; the plan was edited after `gpuplan plan -o PLAN` (or made by \
         another gpuplan): make it again, review it, then apply it",
    )
}

/// A saved plan must be exactly what `plan` would write for its own placement: the
/// inputs (unchanged, see [`crate::apply::stale`]) are validated again, the placement
/// passes the independent checker, every target is rendered from it and the plan is
/// rebuilt against the state; the result must be byte-identical to the file. So the
/// artifacts apply writes are those the placement renders to, and the changes and
/// disruption the reviewer saw are those of that placement (docs/apply.md, "What a saved
/// plan guarantees"). Returns the inputs' model.
pub(crate) fn verify(
    shown: &str,
    saved: &Plan,
    text: &str,
    sources: &SourceMap,
    prior: Option<&Loaded>,
) -> Result<Cluster, Vec<Diagnostic>> {
    let (model, files) = verify_placement(shown, saved, sources)?;
    let rebuilt = plan::build(
        plan::Desired {
            model: &model,
            placement: &saved.placement,
            files: &files,
            arguments: saved.arguments.clone(),
            inputs: inputs_of(sources),
        },
        prior,
    );
    let json = plan::view::json(&rebuilt);
    if json == text {
        return Ok(model);
    }
    Err(vec![tampered(
        shown,
        difference(saved, &rebuilt, text, &json),
    )])
}

/// What a saved plan's inputs and placement give, checked without the state: this
/// gpuplan's version, inputs that validate, a placement the checker accepts, and every
/// artifact exactly what that placement renders. Returns the model and the files.
fn verify_placement(
    shown: &str,
    saved: &Plan,
    sources: &SourceMap,
) -> Result<(Cluster, crate::render::Files), Vec<Diagnostic>> {
    check_version(shown, saved).map_err(|d| vec![d])?;
    let outcome = crate::validate::validate(sources);
    let valid = !outcome.has_errors();
    let Some(model) = outcome.model.filter(|_| valid) else {
        return Err(vec![tampered(shown, "its inputs do not validate".into())]);
    };
    let problems = crate::placement::check(&model, &saved.placement);
    if let Some(p) = problems.first() {
        return Err(vec![tampered(
            shown,
            format!(
                "its placement fails the checker ({} problem(s); first: {p})",
                problems.len()
            ),
        )]);
    }
    let rendered = crate::render::render(
        &model,
        &saved.placement,
        &crate::render::Target::ALL,
        &crate::render::Options::default(),
    )
    .map_err(|_| vec![tampered(shown, "its placement cannot be rendered".into())])?;
    if let Some(what) = files_difference(saved, &rendered.files) {
        return Err(vec![tampered(shown, what)]);
    }
    Ok((model, rendered.files))
}

/// A saved plan made by another gpuplan version is refused (GP928).
pub fn check_version(shown: &str, saved: &Plan) -> Result<(), Diagnostic> {
    let version = env!("CARGO_PKG_VERSION");
    if saved.gpuplan_version == version {
        return Ok(());
    }
    Err(Diagnostic::error(
        GP928,
        format!(
            "{} was made by gpuplan {}; this is gpuplan {version}",
            quoted(shown),
            quoted(&saved.gpuplan_version)
        ),
    )
    .with_help("make the plan again with this gpuplan, review it, then apply it"))
}

/// A saved plan to display (`show`, `graph`, `report`): its inputs must be unchanged,
/// its placement accepted by the checker and its files what that placement renders.
/// When `prior` is the state the plan was made against, the whole plan must be what
/// apply would accept ([`reopen_read`]); when the state moved on since (the plan was
/// applied, say), its changes and disruption cannot be rebuilt and are shown as the plan
/// records them, with a warning.
pub fn reopen_to_display(
    path: &Path,
    config: &[PathBuf],
    prior: Option<&Loaded>,
) -> Result<(Reopened, Option<Diagnostic>), Vec<Diagnostic>> {
    let (plan, text) = read(path).map_err(|d| vec![d])?;
    if crate::apply::stale_state(&plan, prior).is_empty() {
        return reopen_read(path, plan, &text, config, prior).map(|r| (r, None));
    }
    let sources = inputs(path, &plan, config)?;
    // The inputs part of the stale check (the state is known to differ).
    if let Some(d) = crate::apply::stale_inputs(&plan, &inputs_of(&sources)) {
        return Err(vec![d]);
    }
    let shown = path.display().to_string();
    let (model, _) = verify_placement(&shown, &plan, &sources)?;
    let note = Diagnostic::warning(
        crate::apply::GP922,
        format!(
            "the state moved on since {} was made: its files and placement are checked, its changes and disruption are shown as the plan records them",
            quoted(&shown)
        ),
    )
    .with_help("pass `--state` with the state the plan was made against to check all of it");
    Ok((
        Reopened {
            plan,
            sources,
            model,
        },
        Some(note),
    ))
}

/// The first file of a saved plan that is not what its placement renders, in words.
fn files_difference(saved: &Plan, files: &crate::render::Files) -> Option<String> {
    let a = &saved.artifacts;
    if let Some(p) = a.keys().find(|p| !files.contains_key(*p)) {
        return Some(format!(
            "it would write {}, which its placement does not render",
            quoted(p)
        ));
    }
    if let Some(p) = files.keys().find(|p| !a.contains_key(*p)) {
        return Some(format!(
            "it leaves out {}, which its placement renders",
            quoted(p)
        ));
    }
    a.iter()
        .find(|(p, art)| files[*p] != art.text)
        .map(|(p, _)| {
            format!(
                "the text of {} is not what its placement renders",
                quoted(p)
            )
        })
}

/// The first difference between a saved plan and the rebuilt one, in words.
fn difference(saved: &Plan, rebuilt: &Plan, text: &str, json: &str) -> String {
    let files: crate::render::Files = rebuilt
        .artifacts
        .iter()
        .map(|(p, a)| (p.clone(), a.text.clone()))
        .collect();
    if let Some(what) = files_difference(saved, &files) {
        return what;
    }
    let section = [
        ("the list of changes", saved.changes != rebuilt.changes),
        ("the change summary", saved.summary != rebuilt.summary),
        ("the disruption", saved.disruption != rebuilt.disruption),
        ("the list of inputs", saved.inputs != rebuilt.inputs),
        ("the prior state", saved.prior_state != rebuilt.prior_state),
    ]
    .into_iter()
    .find(|(_, differs)| *differs);
    if let Some((what, _)) = section {
        return format!("{what} is not what its placement gives");
    }
    let line = text
        .lines()
        .zip(json.lines())
        .position(|(x, y)| x != y)
        .unwrap_or_else(|| text.lines().count().min(json.lines().count()))
        + 1;
    format!("the file differs from the plan it describes from line {line} on")
}
