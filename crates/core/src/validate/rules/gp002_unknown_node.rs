//! GP002: a node name gpuplan does not know.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP002",
    name: "unknown-node",
    severity: Severity::Error,
    summary: "a KDL node that gpuplan does not know, at the top level or inside another",
    docs: r#"
**What.** A node name is not part of the language at that place, e.g. `nodess` at the top
level, or `gpu` inside a `node-class` (the node is `gpus`). The hint suggests the closest
known name, or says where the node belongs.

**Why.** A misspelt node would otherwise be ignored and its content silently lost.

**Example.**
```text
node-class "dgx" {
    gpu 8 model="h100-sxm5-80gb"
}
```

**Fix.** Use a node from `docs/language.md`; here `gpus 8 model="h100-sxm5-80gb"`.
"#,
    check: None,
};
