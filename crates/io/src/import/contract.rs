//! The import contract, the same for every importer (docs/import.md, "The contract"):
//! every node and GPU of the source is either in the output or listed as left out, with
//! a code and a reason. An importer fills a [`Report`] as it reads (what it saw, what it
//! wrote, what it left out, what it wrote but the user must complete); the command
//! ([`crate::commands::import`]) prints its summary, writes the output only when nothing
//! was left out (or `--partial` was given, then with the list of what is missing) and
//! exits 0 only when nothing was left out ([`Report::exit_code`]).
//!
//! The tallies balance: for nodes and for GPUs, `seen = imported + left out`. A report
//! that does not balance is a bug of its importer; it is treated as a loss (never exit 0)
//! and said as such ([`Report::unaccounted`]).

use serde::Serialize;

/// The version of the JSON report (`import ... --format json`).
pub const FORMAT_VERSION: u32 = 1;

/// GP750: the import left part of the source out, so nothing was written (or, with
/// `--partial`, what was written is incomplete).
pub const GP750: &str = "GP750";
/// GP751: a node or GPUs of the source are not in the output and the importer stated
/// no reason (a bug of the importer; reported, never hidden).
pub(crate) const GP751: &str = "GP751";

/// What a left-out or flagged item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItemKind {
    /// A whole node (its GPUs with it).
    Node,
    /// GPUs of a node that is in the output.
    Gpus,
    /// A MIG layout (the node and its GPUs are in the output).
    MigLayout,
    /// A partition, node pool or node group.
    Pool,
    /// A switch, block or topology domain.
    Switch,
    /// A taint or label of a node.
    Taint,
    /// A GPU model (declared with placeholders, or mapped by assumption).
    GpuModel,
    /// A whole input file, or a part of one that is not about a node.
    Input,
}

impl ItemKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ItemKind::Node => "node",
            ItemKind::Gpus => "gpus",
            ItemKind::MigLayout => "mig layout",
            ItemKind::Pool => "pool",
            ItemKind::Switch => "switch",
            ItemKind::Taint => "taint",
            ItemKind::GpuModel => "gpu model",
            ItemKind::Input => "input",
        }
    }
}

/// One thing of the source: left out of the output, or in it but to be completed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Item {
    pub kind: ItemKind,
    /// The node, pool, switch, model or file it is about, as the source names it.
    pub name: String,
    /// GPUs it takes out of the output (a left-out node's GPUs, left-out GPUs); 0 when
    /// none or unknown.
    pub gpus: u64,
    /// The diagnostic code saying why.
    pub code: String,
    /// Why, in one line.
    pub reason: String,
}

impl Item {
    pub(crate) fn new(
        kind: ItemKind,
        name: impl Into<String>,
        code: &str,
        reason: impl Into<String>,
    ) -> Self {
        Item {
            kind,
            name: name.into(),
            gpus: 0,
            code: code.to_string(),
            reason: reason.into(),
        }
    }

    /// With the GPUs it takes out of the output.
    pub(crate) fn gpus(mut self, gpus: u64) -> Self {
        self.gpus = gpus;
        self
    }
}

/// Seen in the source, written to the output, left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub seen: u64,
    pub imported: u64,
    pub left_out: u64,
}

/// One input file and what the importer read it as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Input {
    pub path: String,
    /// What it was recognised as (`nvidia-smi -q`, `slurm.conf`, `gres.conf`, ...).
    pub kind: String,
}

/// What an importer saw, wrote and left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The importer (`slurm`, `k8s-nodes`, `nvidia-smi`, ...).
    pub importer: String,
    pub inputs: Vec<Input>,
    pub nodes: Tally,
    pub gpus: Tally,
    /// Not in the output.
    pub left_out: Vec<Item>,
    /// In the output, but incomplete: the user must fill something in (an unknown GPU
    /// count or memory) before `validate` accepts it, or check an assumption.
    pub flagged: Vec<Item>,
}

/// What the command does with an import's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Write the output (stdout or `-o FILE`).
    pub write: bool,
    /// The exit status: 0 complete, 1 nothing written (an error, or a loss without
    /// `--partial`), 2 written with `--partial` but incomplete.
    pub exit: u8,
}

impl Report {
    pub fn new(importer: &str) -> Self {
        Report {
            importer: importer.to_string(),
            inputs: Vec::new(),
            nodes: Tally::default(),
            gpus: Tally::default(),
            left_out: Vec::new(),
            flagged: Vec::new(),
        }
    }

    /// An input file read as `kind`.
    pub fn input(&mut self, path: &str, kind: &str) {
        self.inputs.push(Input {
            path: path.to_string(),
            kind: kind.to_string(),
        });
    }

    /// A node of the source, with its GPUs (0 when it has none or they are unknown).
    pub fn saw_node(&mut self, gpus: u64) {
        self.nodes.seen += 1;
        self.gpus.seen += gpus;
    }

    /// A node written to the output with `gpus` of its GPUs.
    pub fn imported_node(&mut self, gpus: u64) {
        self.nodes.imported += 1;
        self.gpus.imported += gpus;
    }

    /// Something of the source not in the output. A node counts as a left-out node
    /// with its GPUs; `Gpus` items count their GPUs; other kinds count nothing in the
    /// tallies but are losses all the same.
    pub(crate) fn leave_out(&mut self, item: Item) {
        match item.kind {
            ItemKind::Node => {
                self.nodes.left_out += 1;
                self.gpus.left_out += item.gpus;
            }
            ItemKind::Gpus => self.gpus.left_out += item.gpus,
            _ => {}
        }
        self.left_out.push(item);
    }

    /// Something in the output that the user must complete or check.
    pub(crate) fn flag(&mut self, item: Item) {
        self.flagged.push(item);
    }

    /// Nodes and GPUs seen but neither imported nor left out (a bug of the importer
    /// when not zero), or counted twice (negative).
    pub fn unaccounted(&self) -> (i128, i128) {
        let gap = |t: &Tally| i128::from(t.seen) - i128::from(t.imported) - i128::from(t.left_out);
        (gap(&self.nodes), gap(&self.gpus))
    }

    /// Nothing was left out and the tallies balance.
    pub fn complete(&self) -> bool {
        self.left_out.is_empty() && self.unaccounted() == (0, 0)
    }

    /// Counts the source's nodes against the output's, by name: every node `seen`
    /// (name, GPUs) is imported when `imported` has it (with its GPUs there; fewer GPUs
    /// leave the rest out), else left out with the reason `why` gives (the importer's
    /// own, recorded where it dropped the node), or, when it gives none, GP751: a loss
    /// nobody explained, never hidden. A name seen twice counts twice: the second is
    /// left out unless `why` says otherwise.
    pub(crate) fn reconcile(
        &mut self,
        seen: &[(String, u64)],
        imported: &std::collections::BTreeMap<String, u64>,
        why: &std::collections::BTreeMap<String, (String, String)>,
    ) {
        let mut taken = std::collections::BTreeSet::new();
        for (name, gpus) in seen {
            self.saw_node(*gpus);
            match imported.get(name) {
                Some(&got) if taken.insert(name.as_str()) => {
                    self.imported_node(got);
                    if got < *gpus {
                        let (code, reason) = why.get(name).cloned().unwrap_or_else(|| {
                            (
                                GP751.into(),
                                format!("the source has {gpus} GPUs, the output {got}"),
                            )
                        });
                        self.leave_out(
                            Item::new(ItemKind::Gpus, name.clone(), &code, reason).gpus(gpus - got),
                        );
                    } else if got > *gpus {
                        // More GPUs out than the source showed at a glance (a count
                        // only the import can tell, as MIG devices over GPUs): the GPUs
                        // written were seen.
                        self.gpus.seen += got - gpus;
                    }
                }
                _ => {
                    let (code, reason) = why.get(name).cloned().unwrap_or_else(|| {
                        (GP751.into(), "not in the output, for no reason the importer stated (a bug: please report it)".into())
                    });
                    self.leave_out(
                        Item::new(ItemKind::Node, name.clone(), &code, reason).gpus(*gpus),
                    );
                }
            }
        }
    }

    /// Sorts the lists, so that the report is the same whatever order the source
    /// listed things in.
    pub fn finish(&mut self) {
        self.left_out.sort();
        self.left_out.dedup();
        self.flagged.sort();
        self.flagged.dedup();
    }

    /// What to do with the output: `has_output` is whether the importer produced one
    /// (no error), `partial` whether `--partial` was given.
    pub fn decide(&self, has_output: bool, partial: bool) -> Decision {
        match (has_output, self.complete(), partial) {
            (false, _, _) => Decision {
                write: false,
                exit: 1,
            },
            (true, true, _) => Decision {
                write: true,
                exit: 0,
            },
            (true, false, true) => Decision {
                write: true,
                exit: 2,
            },
            (true, false, false) => Decision {
                write: false,
                exit: 1,
            },
        }
    }

    /// The summary printed on stderr: the tallies, then each left-out and flagged item
    /// on a line (at most `limit` of each; the JSON report lists them all).
    pub fn summary(&self, limit: usize) -> String {
        let mut s = format!(
            "import {}: {} of {} node(s) and {} of {} GPU(s) imported",
            self.importer, self.nodes.imported, self.nodes.seen, self.gpus.imported, self.gpus.seen
        );
        if !self.left_out.is_empty() {
            s.push_str(&format!(
                "; left out: {} node(s), {} GPU(s), {} item(s) in all",
                self.nodes.left_out,
                self.gpus.left_out,
                self.left_out.len()
            ));
        }
        if !self.flagged.is_empty() {
            s.push_str(&format!("; {} flagged", self.flagged.len()));
        }
        s.push('\n');
        let (n, g) = self.unaccounted();
        if (n, g) != (0, 0) {
            s.push_str(&format!(
                "  unaccounted for: {n} node(s), {g} GPU(s) seen but neither imported nor listed as left out (a bug of the importer: please report it)\n"
            ));
        }
        for (title, items) in [
            ("left out (not in the output)", &self.left_out),
            (
                "flagged (in the output: complete or check it)",
                &self.flagged,
            ),
        ] {
            if items.is_empty() {
                continue;
            }
            s.push_str(&format!("{title}:\n"));
            for i in items.iter().take(limit) {
                s.push_str(&format!("  {}\n", line(i)));
            }
            if items.len() > limit {
                s.push_str(&format!(
                    "  ... and {} more (`--format json` lists them all)\n",
                    items.len() - limit
                ));
            }
        }
        s
    }

    /// The comment written at the top of a `--partial` output: what is missing.
    pub fn partial_comment(&self) -> String {
        let mut s = format!(
            "// PARTIAL IMPORT (--partial): {} node(s) and {} GPU(s) of the source are not in this file\n",
            self.nodes.left_out, self.gpus.left_out
        );
        for i in &self.left_out {
            s.push_str(&format!("// left out: {}\n", one_line(&line(i))));
        }
        s
    }
}

/// `node gpu-17 (8 GPUs): GP745 MIG devices not placed`.
fn line(i: &Item) -> String {
    let gpus = match i.gpus {
        0 => String::new(),
        1 => " (1 GPU)".into(),
        n => format!(" ({n} GPUs)"),
    };
    format!(
        "{} {}{gpus}: {} {}",
        i.kind.as_str(),
        i.name,
        i.code,
        i.reason
    )
}

/// A line safe inside a `//` comment: no line breaks (KDL's U+2028 and U+2029 too, which
/// `is_control` misses: a node name carrying one injected nodes into `--partial` output),
/// no control characters ([`crate::fmt::comment`]).
fn one_line(s: &str) -> String {
    crate::fmt::comment(s)
}

/// The JSON document of `import ... --format json`: the report and what was read.
#[derive(Serialize)]
pub struct JsonOut<'a, T: Serialize> {
    pub format_version: u32,
    pub report: &'a Report,
    /// What the importer read, in its own terms (absent when nothing could be read).
    pub read: Option<&'a T>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        let mut r = Report::new("test");
        for g in [8, 8, 2] {
            r.saw_node(g);
        }
        r.imported_node(8);
        r.imported_node(8);
        r
    }

    /// Issue 30: what a source names cannot end the `--partial` header's comments.
    #[test]
    fn the_partial_header_is_comments_only() {
        let mut r = report();
        let name = "n3\u{2028}team \"evil\" guarantee=999\u{2029}x\ny";
        r.leave_out(Item::new(ItemKind::Node, name, "GP755", "two\u{85}models").gpus(2));
        let header = r.partial_comment();
        let doc = kdl::KdlDocument::parse_v2(&header).expect("parses");
        assert!(doc.nodes().is_empty(), "{header:?}");
    }

    #[test]
    fn a_left_out_node_balances_and_is_a_loss() {
        let mut r = report();
        assert!(!r.complete(), "a node neither imported nor left out");
        assert_eq!(r.unaccounted(), (1, 2));
        r.leave_out(Item::new(ItemKind::Node, "n3", "GP745", "MIG devices not placed").gpus(2));
        assert_eq!(r.unaccounted(), (0, 0));
        assert!(!r.complete());
        assert_eq!(
            r.decide(true, false),
            Decision {
                write: false,
                exit: 1
            }
        );
        assert_eq!(
            r.decide(true, true),
            Decision {
                write: true,
                exit: 2
            }
        );
        assert_eq!(
            r.decide(false, true),
            Decision {
                write: false,
                exit: 1
            }
        );
        let s = r.summary(10);
        assert!(s.contains("2 of 3 node(s) and 16 of 18 GPU(s)"), "{s}");
        assert!(
            s.contains("node n3 (2 GPUs): GP745 MIG devices not placed"),
            "{s}"
        );
        assert!(r.partial_comment().contains("// left out: node n3"));
    }

    #[test]
    fn complete_imports_exit_zero_and_flags_do_not_count_as_losses() {
        let mut r = report();
        r.saw_node(0);
        r.imported_node(2);
        r.imported_node(0);
        r.flag(Item::new(
            ItemKind::Node,
            "cpu-1",
            "GP747",
            "GPU count unknown",
        ));
        assert!(r.complete());
        assert_eq!(
            r.decide(true, false),
            Decision {
                write: true,
                exit: 0
            }
        );
        assert!(r.summary(10).contains("flagged"));
    }

    #[test]
    fn an_unbalanced_report_is_never_complete() {
        let mut r = report();
        r.imported_node(2);
        r.imported_node(2);
        assert_eq!(r.unaccounted(), (-1, -2));
        assert!(!r.complete());
        assert!(r.summary(10).contains("a bug of the importer"));
    }

    #[test]
    fn summaries_are_bounded_and_comments_stay_comments() {
        let mut r = Report::new("test");
        for i in 0..30 {
            r.saw_node(1);
            r.leave_out(Item::new(ItemKind::Node, format!("n{i}\n// x"), "GP1", "r").gpus(1));
        }
        r.finish();
        let s = r.summary(5);
        assert!(s.contains("... and 25 more"), "{s}");
        for l in r.partial_comment().lines() {
            assert!(l.starts_with("// "), "{l}");
        }
    }
}
