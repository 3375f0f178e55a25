//! GP003: a property name gpuplan does not know.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP003",
    name: "unknown-property",
    severity: Severity::Error,
    summary: "a property that the node does not take",
    docs: r#"
**What.** A `key=value` property is not defined for that node. The hint names the
closest known property.

**Why.** A typo such as `guarante=64` would otherwise drop the quota without a word.

**Example.**
```text
team "nlp" guarante=64 burst=128
```

**Fix.** Spell the property as documented: `team "nlp" guarantee=64 burst=128`.
"#,
    check: None,
};
