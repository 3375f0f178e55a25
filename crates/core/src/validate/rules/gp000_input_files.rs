//! GP000: an input path cannot be read.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP000",
    name: "input-files",
    severity: Severity::Error,
    summary: "an input path is missing, unreadable, too large or not UTF-8",
    docs: r#"
**What.** A path given to gpuplan does not exist, cannot be read, is a folder without
`*.kdl` files, is larger than 64 MiB, or is not UTF-8 text.

**Why.** gpuplan reads exactly the files it is given; a missing file would silently plan a
smaller cluster.

**Example.** `gpuplan validate cluster/` where `cluster/` holds only `cluster.yaml`.

**Fix.** Pass KDL files (UTF-8), or a folder that contains them.
"#,
    check: None,
};
