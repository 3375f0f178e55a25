//! Validation: the rules, one per file under `rules/`, each with a stable code, its
//! documentation (what, why, example, fix) and a failing fixture in `tests/rules/`.
//!
//! Codes GP000-GP005 are raised while reading files and decoding KDL (`load`, `spec`);
//! their rule files hold the documentation. Every other rule is a function over the
//! spec (what was written, with spans) and the model (what it resolves to).

pub mod rules;

use crate::diag::{Diagnostic, Diagnostics, Severity};
use crate::model::{self, Cluster, Workload};
use crate::source::SourceMap;
use crate::spec::{self, Spec};

/// What a rule sees.
pub struct Ctx<'a> {
    pub spec: &'a Spec,
    pub model: &'a Cluster,
}

impl<'a> Ctx<'a> {
    /// The first declaration of the workload named `name` (the one the model keeps).
    pub(crate) fn workload_decl(&self, name: &str) -> Option<&'a crate::spec::WorkloadDecl> {
        self.spec.workloads.iter().find(|d| d.name.value == name)
    }

    /// The resolved workload named `name`: the model holds one per name, sorted by name.
    pub(crate) fn workload(&self, name: &str) -> Option<&'a Workload> {
        let ws = &self.model.workloads;
        debug_assert!(ws.is_sorted_by(|a, b| a.name < b.name));
        ws.binary_search_by(|w| w.name.as_str().cmp(name))
            .ok()
            .map(|i| &ws[i])
    }
}

/// A validation rule and its documentation.
pub struct Rule {
    pub code: &'static str,
    /// Short kebab-case name.
    pub name: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
    /// Markdown: what, why, example, fix.
    pub docs: &'static str,
    /// `None` for codes raised while reading and decoding input.
    pub check: Option<fn(&Ctx, &mut Diagnostics)>,
}

pub fn rule(code: &str) -> Option<&'static Rule> {
    rules::ALL
        .iter()
        .copied()
        .find(|r| r.code.eq_ignore_ascii_case(code))
}

/// The result of validating a configuration.
pub struct Outcome {
    pub spec: Spec,
    pub model: Option<Cluster>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Outcome {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// A rule's check.
type Check = fn(&Ctx, &mut Diagnostics);

/// Runs `checks` over `cx` into `diags`, on the machine's cores ([`crate::par`]), what
/// each check found kept in the order of `checks`, as when they run one after the other.
/// Checks only read the spec and the model and only push diagnostics. At 100,000 GPUs
/// the checks take 0.1 s of the validation's 0.4 s.
fn run_checks(cx: &Ctx, checks: &[Check], diags: &mut Diagnostics) {
    for found in crate::par::map(checks, |check| {
        let mut d = Diagnostics::new();
        check(cx, &mut d);
        d
    }) {
        diags.extend(found);
    }
}

/// Parses, decodes, resolves and checks every file of `sources`.
pub fn validate(sources: &SourceMap) -> Outcome {
    let mut diags = Diagnostics::new();
    let spec = spec::parse_all(sources, &mut diags);
    diags.extend(rules::gp047_limits::check_spec(
        &spec,
        &crate::limits::current(),
    ));
    // Nothing is built from a file that does not parse or from a configuration past a
    // limit (building it is the work the limit bounds).
    let syntax_failed = diags
        .iter()
        .any(|d| d.code == spec::GP001 || d.code == spec::GP047);
    let model = if syntax_failed {
        // A file that does not parse contributes nothing: checking references against
        // the rest would only report consequences of the syntax error.
        None
    } else {
        let model = model::build(&spec);
        let cx = Ctx {
            spec: &spec,
            model: &model,
        };
        let checks = |when_valid: bool| -> Vec<Check> {
            rules::ALL
                .iter()
                .filter(|r| rules::ONLY_WHEN_VALID.contains(&r.code) == when_valid)
                .filter_map(|r| r.check)
                .collect()
        };
        run_checks(&cx, &checks(false), &mut diags);
        // Advice about a configuration that could be planned is noise next to errors.
        if !diags.has_errors() {
            run_checks(&cx, &checks(true), &mut diags);
        }
        Some(model)
    };
    Outcome {
        spec,
        model,
        diagnostics: diags.into_sorted(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check that takes a moment, then reports `N`.
    fn report<const N: usize>(_: &Ctx, d: &mut Diagnostics) {
        std::thread::sleep(std::time::Duration::from_millis(2));
        d.push(Diagnostic::warning("GP000", N.to_string()));
    }

    #[test]
    fn checks_report_in_their_order_whatever_thread_ran_them() {
        let mut sources = SourceMap::new();
        sources.add("c.kdl", "cluster \"c\"\n".to_string());
        let out = validate(&sources);
        let model = out.model.expect("a model");
        let cx = Ctx {
            spec: &out.spec,
            model: &model,
        };
        let checks: [Check; 12] = [
            report::<0>,
            report::<1>,
            report::<2>,
            report::<3>,
            report::<4>,
            report::<5>,
            report::<6>,
            report::<7>,
            report::<8>,
            report::<9>,
            report::<10>,
            report::<11>,
        ];
        let mut diags = Diagnostics::new();
        run_checks(&cx, &checks, &mut diags);
        let order: Vec<String> = diags.iter().map(|d| d.message.clone()).collect();
        let expected: Vec<String> = (0..12).map(|n| n.to_string()).collect();
        assert_eq!(order, expected);
    }
}
