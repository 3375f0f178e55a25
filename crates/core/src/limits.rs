//! Bounds on the work one run may do, so that a small hostile input (a pull request, a
//! CI artifact) cannot make gpuplan take gigabytes or minutes (docs/fuzzing.md).
//!
//! Every limit is a coded refusal with a span (GP047 for the configuration, GP000 for
//! input bytes, the importers' own codes for their sources), never a silent clamp. The
//! limits a real fleet may outgrow are set with `--limit KEY=N` on the command line,
//! never from the KDL: a configuration under review must not raise its own bounds.
//!
//! The values are process-wide: `main` sets them once from the command line before any
//! command runs ([`set`]); library callers and tests get [`Limits::default`].

use std::sync::OnceLock;

/// The most GPUs one node may declare: more than any server built (16 on the largest
/// HGX/DGX boards, 20 single-width PCIe cards in the densest chassis). Not settable:
/// beyond it a number is a typo or an attack, not a server.
pub const MAX_GPUS_PER_NODE: u64 = 64;

/// The largest number the language reads exactly (2^53, an f64's integers): a number
/// property past it is GP005, so nothing gpuplan writes may exceed it.
pub const MAX_NUMBER: u64 = 1 << 53;

/// Bounds on one run's input and on what it expands to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes read from every input file of one run together, counted while reading.
    pub input_bytes: u64,
    /// Nodes a configuration may declare (after its name patterns are expanded).
    pub nodes: u64,
    /// GPUs a configuration may declare, over every node.
    pub gpus: u64,
    /// Names every bracket pattern of one input may expand to, together (node ranges,
    /// leaf and pool members, MIG layouts' nodes, NIC names, Slurm hostlists).
    pub names: u64,
}

impl Default for Limits {
    /// Sized so that any input within them validates and plans (`--time-limit 0.5`) in
    /// under 2 s and 256 MiB on a 2-core machine (tests/it/bounded.rs, docs/fuzzing.md): a
    /// CI job fed a hostile pull request stays small. Larger fleets raise them on the
    /// command line (the 100,000-GPU benchmark runs with `--limit gpus=150000 --limit
    /// nodes=20000`).
    fn default() -> Self {
        Limits {
            input_bytes: 8 * 1024 * 1024,
            nodes: 8_192,
            gpus: 32_768,
            names: 100_000,
        }
    }
}

/// The keys of `--limit KEY=N`, with what each bounds.
pub(crate) const KEYS: &[(&str, &str)] = &[
    ("input-bytes", "bytes read from every input file together"),
    ("nodes", "nodes a configuration declares"),
    ("gpus", "GPUs a configuration declares"),
    ("names", "names all bracket patterns expand to together"),
];

impl Limits {
    /// Applies one `KEY=N` setting (`--limit`).
    pub fn set_key(&mut self, setting: &str) -> Result<(), String> {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| format!("`{setting}` is not KEY=N"))?;
        let n: u64 = value
            .trim()
            .replace('_', "")
            .parse()
            .map_err(|_| format!("`{value}` is not a whole number"))?;
        if n == 0 {
            return Err(format!("`{key}` must be at least 1"));
        }
        match key.trim() {
            "input-bytes" => self.input_bytes = n,
            "nodes" => self.nodes = n,
            "gpus" => self.gpus = n,
            "names" => self.names = n,
            other => {
                let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "unknown limit `{other}` (one of: {})",
                    keys.join(", ")
                ));
            }
        }
        Ok(())
    }
}

static CURRENT: OnceLock<Limits> = OnceLock::new();

/// Sets the limits of this process (once, from the command line); later calls are
/// ignored.
pub fn set(l: Limits) {
    let _ = CURRENT.set(l);
}

/// The limits in force: those [`set`] from the command line, else the defaults.
pub fn current() -> Limits {
    CURRENT.get().copied().unwrap_or_default()
}

/// The hint every limit refusal carries.
pub fn hint(key: &str) -> String {
    format!(
        "if this input is trusted and really this large, raise the bound with `--limit {key}=N` \
         (docs/fuzzing.md lists every limit)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_refuse() {
        let mut l = Limits::default();
        l.set_key("gpus=1_000_000").unwrap();
        assert_eq!(l.gpus, 1_000_000);
        l.set_key("input-bytes=10").unwrap();
        assert_eq!(l.input_bytes, 10);
        assert!(l.set_key("gpu=5").unwrap_err().contains("unknown limit"));
        assert!(l.set_key("nodes").is_err());
        assert!(l.set_key("nodes=-1").is_err());
        assert!(l.set_key("nodes=0").is_err());
    }
}
