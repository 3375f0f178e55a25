//! GP065: a `backend` declaration that writes credentials into the configuration, that
//! is declared twice, or whose settings do not fit its kind.
use super::prelude::*;
use crate::spec::Spec;

pub(crate) static RULE: Rule = Rule {
    code: "GP065",
    name: "backend",
    severity: Severity::Error,
    summary: "a `backend` carries a connection string or credentials, is declared more than once, or has settings its kind does not take",
    docs: r#"
**What.** The state backend (`backend "local"` or `backend "pg"`) is declared at most once,
names no connection and no credentials (a `dsn=`, `password=`, `host=`, `user=`, a
`postgresql://` URL, ...), and `workspace=`/`keep=` only for `pg` (a workspace of 1 to
200 characters without control characters, `keep` at least 1).

**Why.** The configuration lives in git and is read by every pull request's plan job:
a password written there is a leaked password. gpuplan reads the connection only from
the environment (`GPUPLAN_PG_DSN`, or libpq's `PGHOST`, `PGUSER`, `PGPASSWORD`, ...),
which CI fills from its secret store, and never reads these properties. Two backends
would split the state in two.

**Example.**
```text
backend "pg" dsn="postgresql://ci:hunter2@db/gpuplan"
```

**Fix.** Remove the property and set the connection in the environment of the jobs that
plan and apply: `GPUPLAN_PG_DSN=postgresql://ci@db/gpuplan` with `PGPASSWORD` from a
secret; keep `backend "pg" workspace="prod"` in the configuration.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    out.extend(problems(cx.spec));
}

/// What is wrong with the `backend` declarations of `spec`: also run before a command
/// opens the backend, where the model may not be built yet.
pub fn problems(spec: &Spec) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for b in &spec.backends {
        for c in &b.credentials {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!(
                        "`backend` property `{}` would put a connection or credentials in the configuration",
                        c.value
                    ),
                )
                .at(c.span, "not read: credentials come from the environment")
                .with_help(
                    "remove it; set GPUPLAN_PG_DSN (or PGHOST, PGPORT, PGUSER, PGPASSWORD, \
                     PGDATABASE) in the environment of the jobs that plan and apply",
                ),
            );
        }
        let local = b.kind.as_ref().is_some_and(|k| k.value == "local");
        for (name, span) in [
            ("workspace", b.workspace.as_ref().map(|w| w.span)),
            ("keep", b.keep.as_ref().map(|k| k.span)),
        ] {
            if let (true, Some(span)) = (local, span) {
                out.push(
                    Diagnostic::error(
                        RULE.code,
                        format!("`{name}` is a setting of a shared backend, not of `local`"),
                    )
                    .at(span, "`local` keeps one state file")
                    .with_help(format!("remove `{name}=`, or use `backend \"pg\"`")),
                );
            }
        }
        if let Some(w) = &b.workspace {
            if let Err(why) = crate::names::workspace(&w.value) {
                out.push(
                    Diagnostic::error(RULE.code, format!("invalid workspace name: {why}"))
                        .at(w.span, "invalid")
                        .with_help("a workspace is 1 to 200 characters, no control character"),
                );
            }
        }
        if let Some(k) = b.keep.as_ref().filter(|k| k.value == 0) {
            out.push(
                Diagnostic::error(RULE.code, "`keep=0` would keep no state at all")
                    .at(k.span, "at least 1")
                    .with_help("leave `keep` out to keep every version, or keep at least 1"),
            );
        }
    }
    if let [first, rest @ ..] = spec.backends.as_slice() {
        for b in rest {
            out.push(
                Diagnostic::error(RULE.code, "a second `backend` declaration")
                    .at(b.span, "second backend")
                    .with_related(first.span, "the first one")
                    .with_help("declare one backend: the state must live in one place"),
            );
        }
    }
    out
}
