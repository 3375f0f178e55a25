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
mod gp006_unknown_gpu_model;
mod gp007_duplicate_name;
mod gp008_dangling_reference;
mod gp009_node_in_two_leaves;
mod gp010_node_without_leaf;
mod gp011_index_out_of_range;
mod gp012_overlapping_groups;
mod gp013_invalid_mig_layout;
mod gp014_unknown_mig_profile;
mod gp015_footprint_too_large;
mod gp016_gang_exceeds_tier;
mod gp017_quota_exceeds_capacity;
mod gp018_preemption_cycle;
mod gp019_mig_without_mig_gpu;
mod gp020_gang_shape;
mod gp021_team_quota_shape;
mod gp022_preferred_wider_than_required;
mod gp023_priority_order;
mod gp024_team_parent_cycle;
mod gp025_workload_shape;
mod gp026_training_on_mig;
mod gp027_mig_in_whole_gpu_pool;
mod gp028_partial_mig_layout;
mod gp029_shared_gpu_memory;
mod gp030_mps_with_mig;
mod gp031_unsafe_name;
mod gp032_invalid_label;
mod gp033_authority_undeclared;
mod gp034_node_without_authority;
mod gp035_gang_without_gang_admission;
mod gp036_class_authority;
mod gp037_preemption_across_authorities;
mod gp038_quota_authority;
mod gp039_mode_unsupported;
mod gp040_gang_fabric;
mod gp041_nic_names;
mod gp042_cuda_driver;
mod gp043_cuda_architecture;
mod gp044_capacity;
mod gp045_spot_class;
mod gp046_storage;
pub(crate) mod gp047_limits;
mod gp048_fraction_carrier;
mod gp049_slurm_job_cpus;
mod gp050_mixed_gpus_on_kubernetes;
mod gp051_mixed_gpu_driver;
mod gp052_dra_kubernetes_version;
mod gp053_dra_without_kubernetes_nodes;
mod gp054_gang_across_gpu_allocations;
mod gp055_dra_model_product_name;
mod gp056_kueue_shared_on_dra;
mod gp058_kai_parent_team_class;
pub mod gp065_backend;
mod gp066_moved;
mod gp067_moved_conflict;

use super::Rule;

/// Rules that only run on a configuration without errors (advice, not problems).
pub(crate) static ONLY_WHEN_VALID: &[&str] = &["GP033"];

/// Every rule, in code order.
pub static ALL: &[&Rule] = &[
    &gp000_input_files::RULE,
    &gp001_kdl_syntax::RULE,
    &gp002_unknown_node::RULE,
    &gp003_unknown_property::RULE,
    &gp004_wrong_arguments::RULE,
    &gp005_invalid_value::RULE,
    &gp006_unknown_gpu_model::RULE,
    &gp007_duplicate_name::RULE,
    &gp008_dangling_reference::RULE,
    &gp009_node_in_two_leaves::RULE,
    &gp010_node_without_leaf::RULE,
    &gp011_index_out_of_range::RULE,
    &gp012_overlapping_groups::RULE,
    &gp013_invalid_mig_layout::RULE,
    &gp014_unknown_mig_profile::RULE,
    &gp015_footprint_too_large::RULE,
    &gp016_gang_exceeds_tier::RULE,
    &gp017_quota_exceeds_capacity::RULE,
    &gp018_preemption_cycle::RULE,
    &gp019_mig_without_mig_gpu::RULE,
    &gp020_gang_shape::RULE,
    &gp021_team_quota_shape::RULE,
    &gp022_preferred_wider_than_required::RULE,
    &gp023_priority_order::RULE,
    &gp024_team_parent_cycle::RULE,
    &gp025_workload_shape::RULE,
    &gp026_training_on_mig::RULE,
    &gp027_mig_in_whole_gpu_pool::RULE,
    &gp028_partial_mig_layout::RULE,
    &gp029_shared_gpu_memory::RULE,
    &gp030_mps_with_mig::RULE,
    &gp031_unsafe_name::RULE,
    &gp032_invalid_label::RULE,
    &gp033_authority_undeclared::RULE,
    &gp034_node_without_authority::RULE,
    &gp035_gang_without_gang_admission::RULE,
    &gp036_class_authority::RULE,
    &gp037_preemption_across_authorities::RULE,
    &gp038_quota_authority::RULE,
    &gp039_mode_unsupported::RULE,
    &gp040_gang_fabric::RULE,
    &gp041_nic_names::RULE,
    &gp042_cuda_driver::RULE,
    &gp043_cuda_architecture::RULE,
    &gp044_capacity::RULE,
    &gp045_spot_class::RULE,
    &gp046_storage::RULE,
    &gp047_limits::RULE,
    &gp048_fraction_carrier::RULE,
    &gp049_slurm_job_cpus::RULE,
    &gp050_mixed_gpus_on_kubernetes::RULE,
    &gp051_mixed_gpu_driver::RULE,
    &gp052_dra_kubernetes_version::RULE,
    &gp053_dra_without_kubernetes_nodes::RULE,
    &gp054_gang_across_gpu_allocations::RULE,
    &gp055_dra_model_product_name::RULE,
    &gp056_kueue_shared_on_dra::RULE,
    &gp058_kai_parent_team_class::RULE,
    &gp065_backend::RULE,
    &gp066_moved::RULE,
    &gp067_moved_conflict::RULE,
];
