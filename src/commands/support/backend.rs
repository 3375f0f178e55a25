//! Which state backend a command uses, and opening it: `--backend`/`--workspace` win
//! over the configuration's `backend` node (read from the KDL with its rule, GP065,
//! before anything is opened), else the local file at `--state`. The connection comes
//! from the environment ([`crate::backend::pg::Connect::from_env`]), read here: the
//! library reads no environment.

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

use crate::backend::{self, Choice, Store};
use crate::cli::{BackendArgs, BackendKind};
use crate::diag::Diagnostic;
use crate::source::SourceMap;
use std::path::Path;

/// The backend declared in `sources` (the `backend` node), checked by GP065. Sources
/// that cannot hold one are not parsed: that parse is a second one of the whole
/// configuration (0.3 s of CPU at 100,000 GPUs, beside validation's).
fn declared(sources: &SourceMap) -> Result<Option<crate::spec::BackendDecl>, Vec<Diagnostic>> {
    if !sources.files().iter().any(|f| may_declare(&f.text)) {
        return Ok(None);
    }
    let mut diags = crate::diag::Diagnostics::new();
    let spec = crate::spec::parse_all(sources, &mut diags);
    let problems = crate::validate::rules::gp065_backend::problems(&spec);
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(spec.backends.into_iter().next())
}

/// Whether `text` may hold a `backend` node: the name written out, or a backslash (an
/// escape in a quoted name, `"back\u{65}nd"`, or a whitespace escape could spell it
/// otherwise). GP065 reads nothing but `backend` nodes.
fn may_declare(text: &str) -> bool {
    text.contains("backend") || text.contains('\\')
}

/// The backend for `args`, the configuration `sources` (if any) and the local `state`.
pub(crate) fn choose(
    args: &BackendArgs,
    state: &Path,
    sources: Option<&SourceMap>,
) -> Result<Choice, Vec<Diagnostic>> {
    let decl = match sources {
        Some(s) => declared(s)?,
        None => None,
    };
    let kind = match (args.backend, &decl) {
        (Some(k), _) => k,
        (None, Some(d)) if d.kind.as_ref().is_some_and(|k| k.value == "pg") => BackendKind::Pg,
        _ => BackendKind::Local,
    };
    match kind {
        BackendKind::Local => Ok(Choice::Local(state.to_path_buf())),
        BackendKind::Pg => {
            let from_decl = decl
                .as_ref()
                .filter(|d| d.kind.as_ref().is_some_and(|k| k.value == "pg"));
            let workspace = args
                .workspace
                .clone()
                .or_else(|| from_decl.and_then(|d| d.workspace.as_ref().map(|w| w.value.clone())))
                .unwrap_or_else(|| backend::DEFAULT_WORKSPACE.to_string());
            if let Err(why) = backend::check_workspace(&workspace) {
                return Err(vec![
                    Diagnostic::error(backend::GP961, format!("invalid workspace name: {why}"))
                        .with_help("a workspace is 1 to 200 characters, no control character"),
                ]);
            }
            let keep = from_decl.and_then(|d| d.keep.as_ref().map(|k| u64::from(k.value)));
            Ok(Choice::Pg { workspace, keep })
        }
    }
}

/// Opens the chosen backend, its connection from the environment.
pub(crate) fn open(choice: &Choice) -> Result<Box<dyn Store>, Vec<Diagnostic>> {
    let connect = backend::pg::Connect::from_env(|k| std::env::var(k).ok());
    choice.open(&connect).map_err(|d| vec![d])
}

/// [`choose`] then [`open`].
pub(crate) fn store(
    args: &BackendArgs,
    state: &Path,
    sources: Option<&SourceMap>,
) -> Result<Box<dyn Store>, Vec<Diagnostic>> {
    open(&choose(args, state, sources)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(text: &str) -> SourceMap {
        let mut s = SourceMap::new();
        s.add("a.kdl", "cluster \"c\"\n");
        s.add("b.kdl", text.to_string());
        s
    }

    /// A configuration that cannot name a backend is not parsed for one; a backend
    /// spelled with an escape is still found, and GP065 still refuses credentials.
    #[test]
    fn the_backend_is_found_however_its_node_is_spelled() {
        assert!(!may_declare("cluster \"c\"\nteam \"t\" guarantee=8\n"));
        assert!(
            declared(&sources("team \"t\" guarantee=8\n"))
                .unwrap()
                .is_none()
        );
        for text in [
            "backend \"pg\" workspace=\"w\"\n",
            "\"b\\u{61}ckend\" \"pg\" workspace=\"w\"\n",
            "\"back\\\n    end\" \"pg\" workspace=\"w\"\n",
        ] {
            let d = declared(&sources(text)).unwrap().expect(text);
            assert_eq!(d.kind.map(|k| k.value).as_deref(), Some("pg"), "{text}");
        }
        let err = declared(&sources("backend \"pg\" dsn=\"postgresql://u:p@h/db\"\n"))
            .expect_err("credentials");
        assert_eq!(err[0].code, "GP065");
    }
}
