#!/usr/bin/env bash
# Renders every example with `--target all`, checks that the files carry out the plan
# (`gpuplan check-render`, the independent realizability checker), and checks the output
# with the real upstream tools in ../shared/conformance (run its setup.sh first):
#   k8s/check.sh    Kubernetes core objects (k8s/, plus the core Jobs in kueue/, volcano/
#                   and kai/); with `-k 1.34.0` where DRA objects (resource.k8s.io/v1) were
#                   rendered
#   crd/check.sh    Volcano, Kueue, KAI and GPU Operator custom resources and the DRA
#                   driver's ComputeDomains (upstream CRD schemas + CEL rules)
#   slurm/check.sh  a real slurmctld + one slurmd per node (--nodes), and every rendered
#                   batch script submitted with `sbatch --test-only`: accepted, and the
#                   nodes Slurm picks are where the plan put the class (scripts/slurm_jobs.py;
#                   with authorities: the Slurm-owned nodes only, the only ones rendered)
# Slurm here is 22.05: an example that names Slurm >= 24.05 (topology/block, or
# topology.yaml from 25.05) is checked in its 22.05 rendering (--slurm-version 22.05);
# the block and topology.yaml syntax itself is not.
# usage: scripts/conformance.sh [EXAMPLE_DIR...]   (default: examples/*/)
set -euo pipefail
cd "$(dirname "$0")/.."
CONF=${GPUPLAN_CONFORMANCE_DIR:-../shared/conformance}
[ -d "$CONF" ] || { echo "missing $CONF (the shared conformance checks)"; exit 1; }
# GPUPLAN_BIN: a gpuplan already built (.ci/run passes the one its tests ran); else
# the debug build.
if [ -n "${GPUPLAN_BIN:-}" ]; then
  BIN=$GPUPLAN_BIN
else
  cargo build --quiet --locked
  BIN=${CARGO_TARGET_DIR:-target}/debug/gpuplan
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuplan-conformance.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=()
# check LABEL CMD...: runs a check, prints its last line (everything when it fails)
check() {
  local label=$1; shift
  if "$@" > "$TMP/log" 2>&1; then tail -1 "$TMP/log"; else cat "$TMP/log"; fails+=("$label"); fi
}
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(examples/*/)
for e in "${examples[@]}"; do
  name=$(basename "$e")
  out="$TMP/$name"
  echo "=== $name: render --target all"
  "$BIN" --quiet render "$e" --target all --out-dir "$out"
  # The independent realizability checker: the files carry out the plan.
  echo "--- $name: gpuplan check-render"
  check "$name check-render" "$BIN" --quiet check-render "$out" "$e"
  # With scheduling authorities a target renders only its scheduler's nodes, and a
  # target whose scheduler owns none is not rendered at all: check what exists.
  k8s_dirs=(); crd_dirs=()
  for d in k8s kueue volcano kai; do [ -d "$out/$d" ] && k8s_dirs+=("$out/$d"); done
  # k8s/ holds the GPU Operator's ClusterPolicy and NVIDIADriver objects (and, with DRA,
  # the ComputeDomains next to the workloads); kai/ KAI's.
  for d in k8s volcano kueue kai; do [ -d "$out/$d" ] && crd_dirs+=("$out/$d"); done
  # DRA: resource.k8s.io/v1 is served from Kubernetes 1.34 (the version gpuplan requires,
  # GP052).
  k8s_version=()
  if [ ${#k8s_dirs[@]} -gt 0 ] && grep -rqs '^apiVersion: resource\.k8s\.io/v1$' "${k8s_dirs[@]}"; then
    k8s_version=(-k 1.34.0)
  fi
  if [ ${#k8s_dirs[@]} -gt 0 ]; then
    echo "--- $name: k8s/check.sh ${k8s_version[*]} ${k8s_dirs[*]##*/}"
    check "$name k8s" bash "$CONF/k8s/check.sh" "${k8s_version[@]}" "${k8s_dirs[@]}"
  else
    echo "--- $name: no Kubernetes-managed nodes"
  fi
  if [ ${#crd_dirs[@]} -gt 0 ]; then
    echo "--- $name: crd/check.sh ${crd_dirs[*]##*/}"
    check "$name crd" bash "$CONF/crd/check.sh" "${crd_dirs[@]}"
  else
    echo "--- $name: no Kubernetes-managed nodes"
  fi
  slurm="$out/slurm"
  if [ ! -d "$slurm" ]; then
    echo "--- $name: no Slurm-owned nodes"
    continue
  fi
  if grep -q '^TopologyPlugin=topology/block' "$slurm/slurm.conf" || [ -f "$slurm/topology.yaml" ]; then
    echo "--- $name: names Slurm >= 24.05; checking its 22.05 rendering"
    "$BIN" --quiet render "$e" --target slurm --slurm-version 22.05 --out-dir "$TMP/$name-2205"
    slurm="$TMP/$name-2205/slurm"
  fi
  # Every node up (real slurmd), and every rendered batch script submitted to the real
  # slurmctld (`sbatch --test-only`): accepted, and placed where the plan says
  # (partition, node count, GPU model and MIG profile, one leaf for leaf-bound gangs).
  "$BIN" --quiet plan "$e" --format json > "$TMP/$name.plan.json" 2>/dev/null
  "$BIN" --quiet show "$e" --format json > "$TMP/$name.show.json" 2>/dev/null
  echo "--- $name: slurm/check.sh --nodes, and every batch script (scripts/slurm_jobs.py)"
  if python3 scripts/slurm_jobs.py "$CONF/slurm/check.sh" "$slurm" \
      "$TMP/$name.plan.json" "$TMP/$name.show.json" > "$TMP/$name.slurm.log" 2>&1; then
    grep -E '^(ok|slurm ok)' "$TMP/$name.slurm.log" || true
  else
    cat "$TMP/$name.slurm.log"; fails+=("$name slurm")
  fi
done
if [ ${#fails[@]} -gt 0 ]; then
  echo "conformance FAILED: ${fails[*]}"; exit 1
fi
echo "conformance ok: ${#examples[@]} examples"
