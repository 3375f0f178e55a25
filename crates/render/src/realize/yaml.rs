//! The YAML documents of a target folder, read as the API server reads them: every
//! `*.yaml`/`*.yml` file, split at `---`, each document an object with `apiVersion`,
//! `kind` and `metadata.name`. Helpers read fields and report what is malformed as a
//! plain message (the caller makes it a [`Violation`](super::Violation)).

use serde::Deserialize;
use serde_yaml::Value;
use std::collections::BTreeMap;

/// One Kubernetes object of a rendered file.
#[derive(Clone, Debug)]
pub(crate) struct Doc {
    pub file: String,
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// `metadata.namespace`, empty for cluster-scoped objects.
    pub namespace: String,
    pub value: Value,
}

impl Doc {
    /// `Kind/namespace/name` (or `Kind/name`), the object's name in reports.
    pub(crate) fn id(&self) -> String {
        if self.namespace.is_empty() {
            format!("{}/{}", self.kind, self.name)
        } else {
            format!("{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }

    pub(crate) fn is(&self, api_group: &str, kind: &str) -> bool {
        self.kind == kind && group(&self.api_version) == api_group
    }
}

/// The API group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``).
pub(crate) fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The documents of a YAML text (empty documents skipped).
pub(crate) fn documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for d in serde_yaml::Deserializer::from_str(text) {
        let v = Value::deserialize(d).map_err(|e| e.to_string())?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// The objects of one file, or why one of them is not an object.
pub(crate) fn objects(file: &str, text: &str) -> Result<Vec<Doc>, String> {
    let mut out = Vec::new();
    for (i, v) in documents(text)?.into_iter().enumerate() {
        let field = |k: &str| str_at(&v, &[k]).map(str::to_string);
        let (Some(api_version), Some(kind)) = (field("apiVersion"), field("kind")) else {
            return Err(format!("document {} has no apiVersion and kind", i + 1));
        };
        // A component configuration (Kueue's `config.kueue.x-k8s.io` Configuration) is
        // a file a controller reads, not an API object: it has no name.
        let config = group(&api_version).starts_with("config.");
        let name = match str_at(&v, &["metadata", "name"]) {
            Some(n) => n.to_string(),
            None if config => String::new(),
            None => return Err(format!("document {} ({kind}) has no metadata.name", i + 1)),
        };
        let namespace = str_at(&v, &["metadata", "namespace"])
            .unwrap_or("")
            .to_string();
        out.push(Doc {
            file: file.to_string(),
            api_version,
            kind,
            name,
            namespace,
            value: v,
        });
    }
    Ok(out)
}

/// The value at a path of mapping keys.
pub(crate) fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.as_mapping()?.get(*k))
}

pub(crate) fn str_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    at(v, path)?.as_str()
}

/// A sequence at a path (absent: empty).
pub(crate) fn seq_at<'v>(v: &'v Value, path: &[&str]) -> &'v [Value] {
    at(v, path)
        .and_then(Value::as_sequence)
        .map_or(&[], Vec::as_slice)
}

/// A scalar as text (strings as they are, numbers and booleans written out).
pub(crate) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A non-negative integer at a path: `Ok(None)` when absent.
pub(crate) fn uint_at(v: &Value, path: &[&str]) -> Result<Option<u64>, String> {
    match at(v, path) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{}` is not a whole number", path.join("."))),
    }
}

/// The map at a path: `None` when absent or null, an error when it is not a map.
fn map_at<'v>(v: &'v Value, path: &[&str]) -> Result<Option<&'v serde_yaml::Mapping>, String> {
    match at(v, path).filter(|x| !x.is_null()) {
        None => Ok(None),
        Some(m) => m
            .as_mapping()
            .map(Some)
            .ok_or_else(|| format!("`{}` is not a map", path.join("."))),
    }
}

/// A map of strings at a path (labels, annotations, nodeSelector): every value must be
/// a string, as the API server requires. Absent: empty.
pub(crate) fn string_map(v: &Value, path: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let Some(m) = map_at(v, path)? else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (k, x) in m {
        let (Some(k), Some(x)) = (k.as_str(), x.as_str()) else {
            return Err(format!(
                "`{}` holds a value that is not a string: {}",
                path.join("."),
                scalar(x).unwrap_or_else(|| "a structure".into())
            ));
        };
        out.insert(k.to_string(), x.to_string());
    }
    Ok(out)
}

/// A map of quantities (`resources.limits`, `spec.hard`, `capability`) in thousandths.
pub(crate) fn quantities(v: &Value, path: &[&str]) -> Result<BTreeMap<String, i128>, String> {
    let Some(m) = map_at(v, path)? else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (k, x) in m {
        let k = k.as_str().unwrap_or_default();
        let q = scalar(x)
            .and_then(|s| super::quantity::milli(&s))
            .ok_or_else(|| format!("`{}.{k}` is not a quantity", path.join(".")))?;
        out.insert(k.to_string(), q);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_and_fields() {
        let text = "# c\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: n\n  labels: {a: b}\nspec:\n  replicas: 3\n---\n";
        let docs = objects("f.yaml", text).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].id(), "Deployment/n/x");
        assert!(docs[0].is("apps", "Deployment"));
        assert_eq!(uint_at(&docs[0].value, &["spec", "replicas"]), Ok(Some(3)));
        assert_eq!(
            string_map(&docs[0].value, &["metadata", "labels"]).unwrap()["a"],
            "b"
        );
        assert!(objects("f", "kind: X\n").is_err());
        assert!(objects("f", "a: [\n").is_err());
        let bad = serde_yaml::from_str::<Value>("labels: {a: true}").unwrap();
        assert!(string_map(&bad, &["labels"]).is_err());
    }
}
