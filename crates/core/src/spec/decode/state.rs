//! Decoding where the state lives (`backend`) and renames (`moved`).

use crate::spec::reader::NodeView;
use crate::spec::*;

/// Property names that would carry a connection or credentials: never read from the
/// configuration (GP065; credentials come from the environment).
const CREDENTIALS: &[&str] = &[
    "dsn",
    "url",
    "uri",
    "conninfo",
    "connection",
    "connection-string",
    "host",
    "port",
    "user",
    "username",
    "password",
    "passwd",
    "dbname",
    "database",
    "sslmode",
    "access-key",
    "secret-key",
    "access-key-id",
    "secret-access-key",
    "token",
];

/// Whether a property of a `backend` would carry credentials: a name of
/// [`CREDENTIALS`], or a value that looks like a connection string.
fn is_credential(key: &str, value: &kdl::KdlValue) -> bool {
    let k = key.to_ascii_lowercase();
    CREDENTIALS.contains(&k.as_str())
        || k.contains("password")
        || k.contains("secret")
        || value.as_string().is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("://") || v.contains("password=") || v.contains("host=")
        })
}

/// The spans of the properties of a `backend` node that carry credentials.
pub(super) fn credential_spans(v: &NodeView) -> Vec<Span> {
    credentials(v).into_iter().map(|c| c.span).collect()
}

fn credentials(v: &NodeView) -> Vec<S<String>> {
    v.node
        .entries()
        .iter()
        .filter_map(|e| {
            let key = e.name()?.value();
            is_credential(key, e.value()).then(|| Spanned::new(key.to_string(), v.entry_span(e)))
        })
        .collect()
}

/// `backend "pg" workspace="prod" keep=50`.
pub(super) fn backend(v: &NodeView) -> BackendDecl {
    BackendDecl {
        span: v.head_span(),
        kind: v.arg_str(0),
        workspace: v.prop_str("workspace"),
        keep: v.prop_u32("keep"),
        credentials: credentials(v),
    }
}

/// `moved from="embed" to="embed-v2" kind="class"`.
pub(super) fn moved(v: &NodeView) -> MovedDecl {
    MovedDecl {
        span: v.head_span(),
        from: v.prop_str("from"),
        to: v.prop_str("to"),
        kind: v.prop_str("kind"),
    }
}
