//! A small structural JSON Schema validator for the schemas gpuplan ships (type, const,
//! enum, required, properties, additionalProperties, items, minimum, local `$ref`):
//! enough for `additionalProperties: false` to catch a field the schema lacks.

use serde_json::Value;

pub fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// Appends `path: problem` for every mismatch of `v` against `s`.
pub fn validate(root: &Value, s: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        match root["$defs"].get(name) {
            Some(d) => validate(root, d, v, path, errors),
            None => errors.push(format!("{path}: unknown $ref {r}")),
        }
        return;
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| type_ok(t, v)),
            _ => false,
        };
        if !ok {
            errors.push(format!("{path}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            errors.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{path}: {v} is not one of {e:?}"));
        }
    }
    if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            errors.push(format!("{path}: {x} < {min}"));
        }
    }
    if let Some(obj) = v.as_object() {
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(k) = r.as_str() {
                if !obj.contains_key(k) {
                    errors.push(format!("{path}: missing `{k}`"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, x) in obj {
            let p = format!("{path}.{k}");
            match (props.and_then(|m| m.get(k)), s.get("additionalProperties")) {
                (Some(ps), _) => validate(root, ps, x, &p, errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{p}: not in the schema")),
                (None, Some(extra)) if extra.is_object() => validate(root, extra, x, &p, errors),
                _ => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            validate(root, items, x, &format!("{path}[{i}]"), errors);
        }
    }
}
