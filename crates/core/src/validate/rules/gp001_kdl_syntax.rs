//! GP001: the file is not valid KDL v2.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP001",
    name: "kdl-syntax",
    severity: Severity::Error,
    summary: "the file is not valid KDL v2",
    docs: r#"
**What.** The KDL parser rejected the file. Every syntax error in the file is reported,
not only the first.

**Why.** Nothing can be read from a file that does not parse; other files are still
parsed so that all syntax errors surface in one run.

**Example.**
```text
nodes "dgx-[001-004]" class="dgx-h100" {
    label "rack" "r1"
// missing closing brace
```

**Fix.** Follow the KDL v2 syntax (https://kdl.dev): strings in double quotes, booleans
`#true`/`#false`, children in `{ }`, properties `key=value`.
"#,
    check: None,
};
