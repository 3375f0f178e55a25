//! The state file: what the last `gpuplan apply` wrote.
//!
//! Default path `.gpuplan/state.json` (`--state` changes it). It holds every rendered
//! artifact with its SHA-256 digest and text (so `plan` can show a unified diff without
//! the output folder, as Terraform keeps attributes in its state), the placement that
//! produced them (MIG layouts included), a `lineage` (random, fixed at the first apply)
//! and a `serial` (+1 per apply). A saved plan records the lineage, serial and digest of
//! the state it was made against; `apply` refuses it when any of them changed.
//!
//! Pure: parsing, digests and building the next state. Reading, locking and the atomic
//! write live in [`crate::apply`].

// An apply fails once, with the one `Diagnostic` that explains it; boxing buys nothing.
#![allow(clippy::result_large_err)]

use crate::diag::Diagnostic;
use crate::placement::Placement;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the state format. A state written by a newer gpuplan is refused.
pub const FORMAT_VERSION: u32 = 1;

/// Default state path, relative to the working directory.
pub const DEFAULT_PATH: &str = ".gpuplan/state.json";

/// GP920: the state file cannot be read or is not a gpuplan state.
pub const GP920: &str = "GP920";

/// GP927: a path gpuplan was asked to write (or found in a saved plan or the state) is
/// not a plain relative path inside the output folder.
pub const GP927: &str = "GP927";

/// The marker file of an output folder (see `apply::MARKER`): no artifact may use it.
const MARKER: &str = ".gpuplan-render";

/// Why `path` cannot be an artifact path: it must be relative, made of `/`-separated
/// plain names (no empty, `.` or `..` part, no backslash, no control character), at
/// most 255 bytes a part and 4096 in all, and not the output folder's marker file.
/// Artifact paths come from the renderers, from saved plans and from the state: the
/// last two are files anyone with access to a CI artifact can edit.
pub(crate) fn artifact_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("it is empty".into());
    }
    if path.len() > 4096 {
        return Err("it is longer than 4096 bytes".into());
    }
    if path.starts_with('/') {
        return Err("it is absolute".into());
    }
    if let Some(c) = path.chars().find(|c| c.is_control() || *c == '\\') {
        return Err(format!(
            "it contains {}",
            if c == '\\' {
                "a backslash".to_string()
            } else {
                format!("the control character U+{:04X}", c as u32)
            }
        ));
    }
    for part in path.split('/') {
        match part {
            "" => return Err("it has an empty part (`//` or a trailing `/`)".into()),
            "." | ".." => return Err(format!("it has a `{part}` part")),
            p if p.len() > 255 => return Err("a part is longer than 255 bytes".into()),
            _ => {}
        }
    }
    if path == MARKER {
        return Err(format!("`{MARKER}` is the output folder's marker"));
    }
    // What the OS would make of it: only plain names.
    if !std::path::Path::new(path)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return Err("it is not a plain relative path".into());
    }
    Ok(())
}

/// Checks every artifact path of a set (a plan's, the state's or a render's): each is
/// an [`artifact_path`], and no path is both a file and the folder of another.
/// `source` says where the paths come from, for the message.
pub fn check_artifact_paths<'a>(
    paths: impl IntoIterator<Item = &'a String>,
    source: &str,
) -> Result<(), Diagnostic> {
    let mut seen: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for p in paths {
        if let Err(why) = artifact_path(p) {
            return Err(unsafe_path(source, p, &why));
        }
        seen.insert(p.as_str());
    }
    for p in &seen {
        let mut prefix = *p;
        while let Some((dir, _)) = prefix.rsplit_once('/') {
            if seen.contains(dir) {
                return Err(unsafe_path(
                    source,
                    p,
                    &format!("`{dir}` is also a file, so it cannot be a folder"),
                ));
            }
            prefix = dir;
        }
    }
    Ok(())
}

fn unsafe_path(source: &str, path: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        GP927,
        format!(
            "{source} names the file {:?}, which is not a plain path inside the output folder: {why}",
            path
        ),
    )
    .with_help(
        "nothing was written; gpuplan writes only plain relative paths under --out-dir. A saved \
         plan or state with such a path was edited: make the plan again with `gpuplan plan -o PLAN`",
    )
}

/// `sha256:<hex>` of some bytes.
pub fn sha256(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    // Two hex digits per byte without `format!` (tens of thousands of artifacts).
    for b in d {
        s.push(HEX[usize::from(b >> 4)] as char);
        s.push(HEX[usize::from(b & 0xf)] as char);
    }
    s
}

/// One file gpuplan wrote: its digest and its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub sha256: String,
    pub text: String,
}

impl Artifact {
    pub(crate) fn new(text: String) -> Self {
        Artifact {
            sha256: sha256(text.as_bytes()),
            text,
        }
    }
}

/// Rendered files by path relative to the output folder.
pub(crate) type Artifacts = BTreeMap<String, Artifact>;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format_version: u32,
    /// Fixed at the first apply; a state from another lineage is another cluster.
    pub lineage: String,
    /// 1 after the first apply, +1 per apply.
    pub serial: u64,
    pub gpuplan_version: String,
    /// Digest of the input files the applied plan was made from.
    pub inputs_digest: String,
    /// Digest of the applied plan (its JSON).
    pub plan_digest: String,
    /// The folder the artifacts were written to, as given to `--out-dir`.
    pub out_dir: String,
    pub artifacts: Artifacts,
    pub placement: Placement,
}

/// A state as read from disk: the value and the digest of its bytes.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub state: State,
    pub digest: String,
    /// The bytes read (`gpuplan state pull` prints them as they are).
    pub text: String,
}

/// Parses a state file's text, kept in the [`Loaded`] it gives (an owned text is moved
/// there, not copied: 45 MB at 100,000 GPUs). `path` is only used in messages.
pub fn parse(path: &str, text: impl Into<String>) -> Result<Loaded, Diagnostic> {
    let owned: String = text.into();
    let text = owned.as_str();
    let corrupt = |detail: String| {
        Diagnostic::error(
            GP920,
            format!("`{path}` is not a valid gpuplan state: {detail}"),
        )
        .with_help(
            "restore the file from a backup (or version control); to start over, move it away \
             and apply again",
        )
    };
    // One pass in the usual case: the file read as a `State`, then its version checked.
    // Only a file that is no `State` is read again, for its version (a file of another
    // version need not be one) or its syntax error. Only an object is a state (serde
    // would read a matching array as one too).
    let object = text.trim_start().starts_with('{');
    let state: State = match object.then(|| serde_json::from_str::<State>(text)) {
        Some(Ok(state)) if state.format_version == FORMAT_VERSION => state,
        Some(Ok(state)) => return Err(other_version(path, u64::from(state.format_version))),
        read => {
            let error = read.and_then(Result::err);
            return Err(not_a_state(path, text, object, error, corrupt));
        }
    };
    check_artifact_paths(state.artifacts.keys(), &format!("the state `{path}`"))?;
    for (p, a) in &state.artifacts {
        if sha256(a.text.as_bytes()) != a.sha256 {
            return Err(corrupt(format!(
                "the digest of artifact `{p}` does not match its text"
            )));
        }
    }
    let digest = sha256(text.as_bytes());
    Ok(Loaded {
        state,
        digest,
        text: owned,
    })
}

/// GP920 for a state of another format version.
fn other_version(path: &str, v: u64) -> Diagnostic {
    Diagnostic::error(
        GP920,
        format!(
            "`{path}` has state format_version {v}; this gpuplan reads version {FORMAT_VERSION}"
        ),
    )
    .with_help("use the gpuplan version that wrote it (or a newer one)")
}

/// Why a text that did not read as a `State` (`error`, when it was an object) is none:
/// not JSON (where), no `format_version`, another version, or what serde found wrong.
fn not_a_state(
    path: &str,
    text: &str,
    object: bool,
    error: Option<serde_json::Error>,
    corrupt: impl Fn(String) -> Diagnostic,
) -> Diagnostic {
    #[derive(Deserialize)]
    struct Version {
        format_version: Option<serde_json::Value>,
    }
    let version = object
        .then(|| serde_json::from_str::<Version>(text).ok())
        .flatten();
    if version.is_none() {
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            return corrupt(e.to_string());
        }
    }
    match version
        .and_then(|v| v.format_version)
        .as_ref()
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if v == u64::from(FORMAT_VERSION) => {
            corrupt(error.map_or_else(|| "no `format_version`".into(), |e| e.to_string()))
        }
        Some(v) => other_version(path, v),
        None => corrupt("no `format_version`".into()),
    }
}

/// The state's JSON text (pretty, newline-terminated).
pub fn to_text(s: &State) -> String {
    crate::json::pretty_line(s)
}

/// A new lineage: 32 hex digits from a seed the caller supplies (time, process id...),
/// so this module stays free of clocks.
pub fn lineage_from_seed(seed: &str) -> String {
    let h = sha256(seed.as_bytes());
    let hex = &h["sha256:".len()..];
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(
            sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn corrupt_and_future_states_are_diagnostics() {
        let d = parse("s.json", "{not json").unwrap_err();
        assert_eq!(d.code, GP920);
        assert!(d.help.is_some());
        let d = parse("s.json", r#"{"format_version": 99}"#).unwrap_err();
        assert!(d.message.contains("format_version 99"), "{}", d.message);
        let d = parse("s.json", r#"{"format_version": 1}"#).unwrap_err();
        assert!(d.message.contains("not a valid gpuplan state"));
        for not_an_object in ["[]", "[1]", "1"] {
            let d = parse("s.json", not_an_object).unwrap_err();
            assert!(d.message.contains("no `format_version`"), "{}", d.message);
        }
    }

    #[test]
    fn lineage_looks_like_a_uuid() {
        let l = lineage_from_seed("x");
        assert_eq!(l.len(), 36);
        assert_eq!(l.matches('-').count(), 4);
    }
}
