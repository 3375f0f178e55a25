//! The committed JSON Schema (`schemas/gpuplan-language.schema.json`) must match what
//! `gpuplan::spec::schema::json_schema()` generates from the language table.
//!
//! After changing `crates/core/src/spec/language.rs`, regenerate it with
//! `GPUPLAN_UPDATE=1 cargo test --test it schema_drift::`.

use gpuplan::spec::language::{self, Ty};
use gpuplan::spec::schema;
use serde_json::Value;
use std::path::PathBuf;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/gpuplan-language.schema.json")
}

#[test]
fn committed_schema_is_current() {
    let generated = schema::json_schema_text();
    let path = schema_path();
    if std::env::var("GPUPLAN_UPDATE").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}\nregenerate it with GPUPLAN_UPDATE=1 cargo test --test it schema_drift::",
            path.display()
        )
    });
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()) + 1);
        panic!(
            "{} is out of date (first difference at line {first});\nregenerate it with GPUPLAN_UPDATE=1 cargo test --test it schema_drift::",
            path.display()
        );
    }
}

/// Collects every `$ref` in the document.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    out.push(x.as_str().expect("$ref is a string").to_string());
                } else {
                    refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// Walks every subschema position and checks keyword types the way a draft 2020-12
/// meta-schema would (the subset of keywords the generator uses).
/// The JSON Schema keywords gpuplan's schema may use.
const KNOWN: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "pattern",
    "minLength",
    "minimum",
    "maximum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "contains",
    "minContains",
    "maxContains",
    "properties",
    "required",
    "additionalProperties",
    "oneOf",
    "allOf",
];

fn check_subschema(v: &Value, at: &str) {
    let m = match v {
        Value::Bool(_) => return,
        Value::Object(m) => m,
        _ => panic!("{at}: a schema must be an object or a boolean"),
    };
    for (k, x) in m {
        if k.starts_with("x-") {
            continue;
        }
        assert!(
            KNOWN.contains(&k.as_str()),
            "{at}: unexpected keyword `{k}`"
        );
        match k.as_str() {
            "type" => {
                let t = x.as_str().unwrap_or_else(|| panic!("{at}: type"));
                assert!(
                    [
                        "object", "array", "string", "integer", "number", "boolean", "null"
                    ]
                    .contains(&t),
                    "{at}: bad type {t}"
                );
            }
            "title" | "description" | "$schema" | "$id" | "$ref" | "pattern" => {
                assert!(x.is_string(), "{at}: {k} must be a string")
            }
            "minLength" | "minItems" | "maxItems" | "minContains" | "maxContains" => {
                assert!(x.is_u64(), "{at}: {k} must be a non-negative integer")
            }
            "minimum" | "maximum" => assert!(x.is_number(), "{at}: {k} must be a number"),
            "enum" | "required" => {
                let a = x
                    .as_array()
                    .unwrap_or_else(|| panic!("{at}: {k} must be an array"));
                assert!(!a.is_empty(), "{at}: {k} is empty");
                if k == "required" {
                    assert!(a.iter().all(Value::is_string), "{at}: required");
                }
            }
            "items" | "contains" | "additionalProperties" => {
                check_subschema(x, &format!("{at}/{k}"))
            }
            "prefixItems" | "oneOf" | "allOf" => {
                let a = x
                    .as_array()
                    .unwrap_or_else(|| panic!("{at}: {k} must be an array"));
                assert!(!a.is_empty(), "{at}: {k} is empty");
                for (i, s) in a.iter().enumerate() {
                    check_subschema(s, &format!("{at}/{k}/{i}"));
                }
            }
            "properties" | "$defs" => {
                let o = x
                    .as_object()
                    .unwrap_or_else(|| panic!("{at}: {k} must be an object"));
                for (name, s) in o {
                    check_subschema(s, &format!("{at}/{k}/{name}"));
                }
            }
            _ => {}
        }
    }
    if let Some(req) = m.get("required").and_then(Value::as_array) {
        let props = m.get("properties").and_then(Value::as_object);
        for r in req {
            let r = r.as_str().unwrap();
            assert!(
                props.is_some_and(|p| p.contains_key(r)),
                "{at}: required `{r}` is not among the properties"
            );
        }
    }
}

#[test]
fn schema_is_well_formed() {
    let s = schema::json_schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    check_subschema(&s, "#");
    let defs = s["$defs"].as_object().expect("$defs");
    let mut all = Vec::new();
    refs(&s, &mut all);
    assert!(!all.is_empty());
    for r in &all {
        let key = r
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("$ref {r} does not point into $defs"));
        assert!(defs.contains_key(key), "$ref {r} does not resolve");
    }
    // One def per node, each naming its node and referring to exactly its children.
    assert_eq!(defs.len(), language::NODES.len());
    for n in language::NODES {
        let d = &defs[&schema::def_key(n.id)];
        assert_eq!(d["properties"]["name"]["const"], n.name(), "{}", n.id);
        let mut child_refs = Vec::new();
        refs(&d["properties"]["children"], &mut child_refs);
        let expected: Vec<String> = n
            .children
            .iter()
            .map(|c| format!("#/$defs/{}", schema::def_key(c)))
            .collect();
        assert_eq!(child_refs, expected, "children of {}", n.id);
        let props = d["properties"]["props"]["properties"].as_object().unwrap();
        assert_eq!(props.len(), n.props.len(), "props of {}", n.id);
        for p in n.props {
            let ps = &props[p.name];
            if let Ty::Ref(what) = p.ty {
                assert_eq!(ps["x-gpuplan-ref"], what, "{}.{}", n.id, p.name);
            }
            assert!(ps["description"].as_str().unwrap().contains(p.doc));
        }
        let args = &d["properties"]["args"];
        let prefix = args["prefixItems"].as_array().map(Vec::len).unwrap_or(0);
        assert_eq!(prefix, n.args.len(), "args of {}", n.id);
        let variadic = n.args.last().is_some_and(|a| a.variadic);
        assert_eq!(args["items"] == Value::Bool(false), !variadic, "{}", n.id);
    }
    // The top level lists exactly the top-level nodes.
    let mut top = Vec::new();
    refs(&s["items"], &mut top);
    assert_eq!(top.len(), language::top_level().count());
}

#[test]
fn committed_schema_parses_as_json() {
    let Ok(text) = std::fs::read_to_string(schema_path()) else {
        return; // reported by committed_schema_is_current
    };
    let v: Value = serde_json::from_str(&text).expect("schema file is JSON");
    assert!(v.get("$defs").is_some());
}
