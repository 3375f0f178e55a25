//! Importers of what cluster managers already know: `kubectl get nodes` ([`k8s`]).

pub mod k8s;
