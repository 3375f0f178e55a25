//! GP004: missing, extra or mistyped arguments and properties.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP004",
    name: "wrong-arguments",
    severity: Severity::Error,
    summary: "a required argument or property is missing, one is extra, or a value has the wrong type",
    docs: r#"
**What.** The node's shape does not match the language: a required argument or property
is missing, there are more arguments than the node takes, a value has the wrong type
(`gpus "8"` instead of `gpus 8`), a property is given twice, or a node that may appear
once appears twice.

**Why.** gpuplan never guesses what a value was meant to be.

**Example.**
```text
node-class "dgx" {
    gpus "8" model="h100-sxm5-80gb"
}
```

**Fix.** Write values with the documented type: numbers without quotes, sizes and
durations as strings with units, booleans as `#true`/`#false`.
"#,
    check: None,
};
