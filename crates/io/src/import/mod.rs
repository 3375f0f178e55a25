//! Importers of what cluster managers already know: `kubectl get nodes` ([`k8s`]),
//! Slurm's slurm.conf, gres.conf and topology.conf ([`slurm`]); [`contract`]: the
//! report every importer fills (every node and GPU in the output or listed as left out);
//! [`memory`]: the rounding of node memory every importer applies;
//! [`names`]: name patterns and DNS-label names shared by importers; [`nvidia_smi`]: one
//! machine from its `nvidia-smi` outputs.

pub mod contract;
pub mod k8s;
pub mod memory;
pub mod names;
pub mod nvidia_smi;
pub mod slurm;
