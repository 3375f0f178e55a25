//! GP005: a value of the right type whose content is invalid.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP005",
    name: "invalid-value",
    severity: Severity::Error,
    summary: "a unit, range, name pattern, enumeration value or number is malformed or out of range",
    docs: r#"
**What.** A value has the right type but cannot be read: a memory size with an unknown
unit (`80Gib`), a duration without unit (`"15"`), a backwards index range (`"7-0"`), a
node-name pattern with an unclosed bracket, an enumeration value that does not exist
(`required="rack"`), or a number out of range.

**Why.** Units are typed so that `80GB` and `80GiB` are never confused, and a malformed
range would otherwise select the wrong nodes.

**Example.**
```text
inference "chat" team="apps" priority="serving" {
    memory "18Gb"
}
```

**Fix.** Use the units in `docs/language.md`: memory `B KiB MiB GiB TiB` (binary) or
`KB MB GB TB` (decimal), durations `s m h d`, bandwidth `Gbps Tbps GB/s`.
"#,
    check: None,
};
