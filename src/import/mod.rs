//! Importers of what cluster managers already know: `kubectl get nodes` ([`k8s`]),
//! Slurm's slurm.conf, gres.conf and topology.conf ([`slurm`]);
//! [`names`]: name patterns and DNS-label names shared by importers.

pub mod k8s;
pub mod names;
pub mod slurm;
