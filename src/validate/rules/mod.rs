//! The rule registry. Each rule lives in its own file, named after its code.

#[allow(unused_imports)]
pub(crate) mod prelude {
    pub use crate::diag::{Diagnostic, Diagnostics, Severity};
    pub use crate::source::{Span, Spanned};
    pub use crate::validate::{Ctx, Rule};
}

mod gp000_input_files;
mod gp001_kdl_syntax;
mod gp002_unknown_node;
mod gp003_unknown_property;
mod gp004_wrong_arguments;
mod gp005_invalid_value;

use super::Rule;

/// Every rule, in code order.
pub static ALL: &[&Rule] = &[
    &gp000_input_files::RULE,
    &gp001_kdl_syntax::RULE,
    &gp002_unknown_node::RULE,
    &gp003_unknown_property::RULE,
    &gp004_wrong_arguments::RULE,
    &gp005_invalid_value::RULE,
];
