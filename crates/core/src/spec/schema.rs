//! A JSON Schema (draft 2020-12) of the gpuplan language, generated from
//! [`language::NODES`].
//!
//! KDL has no JSON form of its own, so the schema describes a plain mapping of a KDL
//! document (documented at the top of `docs/language.md`):
//!
//! * a document is a JSON array of node objects;
//! * a node is `{ "name": "...", "args": [...], "props": {...}, "children": [...] }`
//!   (`args`, `props` and `children` may be left out when empty);
//! * KDL strings, integers, decimals and `#true`/`#false` map to JSON strings, integers,
//!   numbers and booleans.
//!
//! There is one `$defs` entry per node id, with `/` replaced by `.` (`node-class.gpus`).
//! Unit-typed strings (memory sizes, durations, ...) carry a `pattern` derived from the
//! parsers in [`crate::units`]; the patterns check syntax only (not ranges such as
//! "at most 4095" or "ranges must not run backwards"). The committed copy lives in
//! `schemas/gpuplan-language.schema.json`; `tests/it/schema_drift.rs` keeps it current.

use super::language::{self, ArgDef, NodeDef, PropDef, Ty};
use serde_json::{Map, Value, json};

/// The `$schema` dialect.
pub(crate) const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";
/// The schema's `$id`.
pub(crate) const SCHEMA_ID: &str =
    "https://example.invalid/gpuplan/schemas/gpuplan-language.schema.json";

/// How a KDL document maps onto JSON; also the schema's top-level `description`.
pub(crate) const MAPPING: &str = "gpuplan language (KDL v2), as JSON. A KDL document is modelled as a JSON array of node objects {\"name\": ..., \"args\": [...], \"props\": {...}, \"children\": [...]}; args are the node's positional arguments in order, props its key=value properties, children the nodes of its { } block (args, props and children may be left out when empty). KDL strings, integers, decimals and #true/#false map to JSON strings, integers, numbers and booleans. There is one $defs entry per node id (the path of node names from the top, with '/' replaced by '.', e.g. node-class.gpus). Unit-typed strings carry a syntax-only pattern; ranges and cross-references are checked by `gpuplan validate`, not by this schema.";

/// A decimal number as `units::split_number` reads it: digits with optional `_`
/// separators and at most one `.`, with at least one digit.
const NUM: &str = r"(?:[0-9_]*[0-9][0-9_]*(?:\.[0-9_]*)?|[0-9_]*\.[0-9_]*[0-9][0-9_]*)";

/// The `$defs` key of a node id.
pub fn def_key(id: &str) -> String {
    id.replace('/', ".")
}

/// A syntax-only regular expression for a unit-typed string, derived from the parser
/// that reads it (`units::parse_*`, `reader::parse_version`). `None` for types without one.
pub(crate) fn pattern(ty: Ty) -> Option<String> {
    Some(match ty {
        // units::parse_bytes: number, optional unit (binary or decimal), whitespace trimmed.
        Ty::Bytes => format!(r"^\s*{NUM}\s*(?:B|KiB|MiB|GiB|TiB|KB|kB|MB|GB|TB)?\s*$"),
        // units::parse_duration: one or more <digits><unit>, unit in s m h d, no inner spaces.
        Ty::Duration => r"^\s*(?:[0-9]+[smhd])+\s*$".to_string(),
        // units::parse_bandwidth: number and a required bit or byte rate unit.
        Ty::Bandwidth => {
            format!(
                r"^\s*{NUM}\s*(?:Mbps|Mb/s|Gbps|Gb/s|Tbps|Tb/s|MBps|MB/s|GBps|GB/s|TBps|TB/s)\s*$"
            )
        }
        // units::parse_percent: a decimal number (Rust f64 syntax) followed by `%`.
        Ty::Percent => {
            r"^\s*\+?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*%\s*$".to_string()
        }
        // units::parse_index_set: comma-separated indexes or `a-b` ranges.
        Ty::IndexSet => {
            let item = r"\+?[0-9]+(?:\s*-\s*\+?[0-9]+)?";
            format!(r"^\s*{item}(?:\s*,\s*{item})*\s*$")
        }
        // units::expand_names + validate_node_name: lowercase letters, digits, `-` and
        // `.`, with `[...]` groups of zero-padded ranges (`001-032`) or literal items.
        Ty::NamePattern => {
            let lit_item = r"(?:[a-z0-9.]+|[a-z0-9.]*[a-z.][a-z0-9.]*-[a-z0-9.-]*|-[a-z0-9.-]*)";
            let item = format!(r"\s*(?:[0-9]+-[0-9]+|{lit_item})\s*");
            let group = format!(r"\[{item}(?:,{item})*\]");
            format!(r"^(?:[a-z0-9]|{group})(?:[a-z0-9.-]|{group})*$")
        }
        // reader::parse_version: optional leading `v`, 1 to 4 numeric parts.
        Ty::Version => r"^\s*v*\+?[0-9]+(?:\.\+?[0-9]+){0,3}\s*$".to_string(),
        // units::parse_rate: a number, `/` and a unit of time.
        Ty::Rate => format!(r"^\s*{NUM}\s*/\s*(?:h|hour|d|day|w|week)\s*$"),
        _ => return None,
    })
}

/// The schema of one value of type `ty`, with `doc` in its description.
pub(crate) fn value_schema(ty: Ty, name: &str, doc: &str) -> Value {
    let mut m = Map::new();
    m.insert("title".into(), json!(name));
    let describe = ty.describe();
    m.insert("description".into(), json!(format!("{doc} ({describe})")));
    match ty {
        Ty::Int => {
            m.insert("type".into(), json!("integer"));
            m.insert("minimum".into(), json!(0));
            m.insert("maximum".into(), json!(u32::MAX));
        }
        Ty::Number => {
            m.insert("type".into(), json!("number"));
        }
        Ty::Bool => {
            m.insert("type".into(), json!("boolean"));
        }
        Ty::Enum(values) => {
            m.insert("type".into(), json!("string"));
            m.insert("enum".into(), json!(values));
        }
        Ty::Str | Ty::Ref(_) => {
            m.insert("type".into(), json!("string"));
            m.insert("minLength".into(), json!(1));
            // The reader refuses blank names as well as empty ones.
            m.insert("pattern".into(), json!(r"\S"));
            if let Ty::Ref(what) = ty {
                m.insert("x-gpuplan-ref".into(), json!(what));
            }
        }
        Ty::Bytes
        | Ty::Duration
        | Ty::Bandwidth
        | Ty::Percent
        | Ty::IndexSet
        | Ty::NamePattern
        | Ty::Version
        | Ty::Rate => {
            m.insert("type".into(), json!("string"));
            m.insert("pattern".into(), json!(pattern(ty)));
        }
    }
    Value::Object(m)
}

fn arg_schema(a: &ArgDef) -> Value {
    value_schema(a.ty, a.name, a.doc)
}

fn prop_schema(p: &PropDef) -> Value {
    value_schema(p.ty, p.name, p.doc)
}

fn ref_to(id: &str) -> Value {
    json!({ "$ref": format!("#/$defs/{}", def_key(id)) })
}

/// `children` (or the document) as an array of the allowed nodes; non-repeatable nodes
/// may appear at most once.
fn children_schema(children: &[&'static NodeDef], description: &str) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("array"));
    m.insert("description".into(), json!(description));
    if children.is_empty() {
        m.insert("maxItems".into(), json!(0));
        return Value::Object(m);
    }
    m.insert(
        "items".into(),
        json!({ "oneOf": children.iter().map(|c| ref_to(c.id)).collect::<Vec<_>>() }),
    );
    let once: Vec<Value> = children
        .iter()
        .filter(|c| !c.repeatable)
        .map(|c| {
            json!({
                "contains": { "properties": { "name": { "const": c.name() } }, "required": ["name"] },
                "minContains": 0,
                "maxContains": 1,
            })
        })
        .collect();
    if !once.is_empty() {
        m.insert("allOf".into(), Value::Array(once));
    }
    Value::Object(m)
}

/// The `args` array of a node: its positional arguments in order, the last repeated
/// when variadic.
fn args_schema(def: &NodeDef) -> Value {
    let variadic = def.args.last().is_some_and(|a| a.variadic);
    let min_args = def.args.iter().filter(|a| a.required).count();
    let mut args = Map::new();
    args.insert("type".into(), json!("array"));
    args.insert("description".into(), json!(args_description(def)));
    if !def.args.is_empty() {
        args.insert(
            "prefixItems".into(),
            Value::Array(def.args.iter().map(arg_schema).collect()),
        );
    }
    match def.args.last() {
        Some(last) if variadic => {
            args.insert("items".into(), arg_schema(last));
        }
        _ => {
            args.insert("items".into(), json!(false));
        }
    }
    if min_args > 0 {
        args.insert("minItems".into(), json!(min_args));
    }
    Value::Object(args)
}

/// `positional arguments: name [optional] many...`.
fn args_description(def: &NodeDef) -> String {
    if def.args.is_empty() {
        return "takes no arguments".to_string();
    }
    format!(
        "positional arguments: {}",
        def.args
            .iter()
            .map(|a| if a.variadic {
                format!("{}...", a.name)
            } else if a.required {
                a.name.to_string()
            } else {
                format!("[{}]", a.name)
            })
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// The `props` object of a node, and the names of its required properties.
fn props_schema(def: &NodeDef) -> (Value, Vec<&'static str>) {
    let mut props = Map::new();
    props.insert("type".into(), json!("object"));
    props.insert(
        "properties".into(),
        Value::Object(
            def.props
                .iter()
                .map(|p| (p.name.to_string(), prop_schema(p)))
                .collect(),
        ),
    );
    let required: Vec<&str> = def
        .props
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    if !required.is_empty() {
        props.insert("required".into(), json!(required));
    }
    props.insert("additionalProperties".into(), json!(false));
    (Value::Object(props), required)
}

fn node_schema(def: &'static NodeDef) -> Value {
    let min_args = def.args.iter().filter(|a| a.required).count();
    let (props, required) = props_schema(def);
    let children: Vec<&'static NodeDef> = language::children_of(Some(def.id));
    let mut node_required = vec!["name"];
    if min_args > 0 {
        node_required.push("args");
    }
    if !required.is_empty() {
        node_required.push("props");
    }
    json!({
        "type": "object",
        "title": def.id,
        "description": def.summary,
        "x-gpuplan-repeatable": def.repeatable,
        "properties": {
            "name": { "const": def.name() },
            "args": args_schema(def),
            "props": props,
            "children": children_schema(&children, "child nodes"),
        },
        "required": node_required,
        "additionalProperties": false,
    })
}

/// The JSON Schema of the language.
pub fn json_schema() -> Value {
    let defs: Map<String, Value> = language::NODES
        .iter()
        .map(|d| (def_key(d.id), node_schema(d)))
        .collect();
    let top: Vec<&'static NodeDef> = language::top_level().collect();
    let mut root = match children_schema(&top, MAPPING) {
        Value::Object(m) => m,
        _ => unreachable!("children_schema returns an object"),
    };
    root.insert("$schema".into(), json!(DIALECT));
    root.insert("$id".into(), json!(SCHEMA_ID));
    root.insert("title".into(), json!("gpuplan configuration"));
    root.insert("$defs".into(), Value::Object(defs));
    Value::Object(root)
}

/// The schema as committed: pretty JSON with a trailing newline.
pub fn json_schema_text() -> String {
    let mut s = serde_json::to_string_pretty(&json_schema()).expect("a JSON value serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_has_a_def() {
        let schema = json_schema();
        let defs = schema["$defs"].as_object().unwrap();
        assert_eq!(defs.len(), language::NODES.len());
        assert_eq!(
            defs["node-class.gpus"]["properties"]["name"]["const"],
            "gpus"
        );
    }

    #[test]
    fn patterns_exist_for_unit_types() {
        for ty in [
            Ty::Bytes,
            Ty::Duration,
            Ty::Bandwidth,
            Ty::Percent,
            Ty::IndexSet,
            Ty::NamePattern,
            Ty::Version,
            Ty::Rate,
        ] {
            let p = pattern(ty).unwrap();
            assert!(p.starts_with('^') && p.ends_with('$'), "{p}");
        }
        assert!(pattern(Ty::Str).is_none());
    }
}
