//! The home of the importers: what a cluster or a machine already says, in gpuplan's
//! language. Every importer reads its input into its own facts, builds one [`doc`]
//! document (the model of what a cluster has) and writes it with the one KDL writer
//! ([`doc::kdl::write`]).
//!
//! [`k8s`]: `kubectl get nodes`; [`slurm`]: Slurm's slurm.conf, gres.conf and
//! topology.conf; [`nvidia_smi`]: one machine from its `nvidia-smi` outputs (the parsers
//! of `topo -m`, `-q -x`, `-q` and the `mig` tables) and any machine's inventory,
//! `discover`'s too; [`openb`]: the Alibaba trace's cluster and sampled pods;
//! [`contract`]: the report every importer fills (every node and GPU in the output or
//! listed as left out); [`memory`]: the rounding of node memory every importer applies;
//! [`names`]: name patterns and DNS-label names shared by importers.

pub mod contract;
pub mod doc;
pub mod k8s;
pub mod memory;
pub mod names;
pub mod nvidia_smi;
pub mod openb;
pub mod slurm;
