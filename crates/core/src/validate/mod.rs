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
        for r in rules::ALL
            .iter()
            .filter(|r| !rules::ONLY_WHEN_VALID.contains(&r.code))
        {
            if let Some(check) = r.check {
                check(&cx, &mut diags);
            }
        }
        // Advice about a configuration that could be planned is noise next to errors.
        if !diags.has_errors() {
            for r in rules::ALL
                .iter()
                .filter(|r| rules::ONLY_WHEN_VALID.contains(&r.code))
            {
                if let Some(check) = r.check {
                    check(&cx, &mut diags);
                }
            }
        }
        Some(model)
    };
    Outcome {
        spec,
        model,
        diagnostics: diags.into_sorted(),
    }
}
