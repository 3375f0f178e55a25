//! Importers of what cluster managers already know: `kubectl get nodes` ([`k8s`]);
//! [`names`]: name patterns and DNS-label names shared by importers.

pub mod k8s;
pub mod names;
