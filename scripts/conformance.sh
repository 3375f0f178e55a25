#!/usr/bin/env bash
# Renders every example with `--target all` and checks the output with the real upstream
# tools in ../shared/conformance (run its setup.sh first):
#   k8s/check.sh    Kubernetes core objects (k8s/, plus the core Jobs in kueue/ and volcano/)
#   crd/check.sh    Volcano and Kueue custom resources (upstream CRD schemas + CEL rules)
#   slurm/check.sh  a real slurmctld + one slurmd per node (--nodes), and a 2-node job that
#                   must land under one leaf switch (--probe-leaf) in a training partition
#                   (with authorities: the Slurm-owned nodes only, the only ones rendered)
# Slurm here is 22.05: an example that names Slurm >= 24.05 (topology/block) is checked
# in its 22.05 rendering (--slurm-version 22.05); the block syntax itself is not.
# usage: scripts/conformance.sh [EXAMPLE_DIR...]   (default: examples/*/)
set -euo pipefail
cd "$(dirname "$0")/.."
CONF=${GPUPLAN_CONFORMANCE_DIR:-../shared/conformance}
[ -d "$CONF" ] || { echo "missing $CONF (the shared conformance checks)"; exit 1; }
cargo build --quiet --locked
BIN=${CARGO_TARGET_DIR:-target}/debug/gpuplan
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
  # With scheduling authorities a target renders only its scheduler's nodes, and a
  # target whose scheduler owns none is not rendered at all: check what exists.
  k8s_dirs=(); crd_dirs=()
  for d in k8s kueue volcano; do [ -d "$out/$d" ] && k8s_dirs+=("$out/$d"); done
  for d in volcano kueue; do [ -d "$out/$d" ] && crd_dirs+=("$out/$d"); done
  if [ ${#k8s_dirs[@]} -gt 0 ]; then
    echo "--- $name: k8s/check.sh ${k8s_dirs[*]##*/}"
    check "$name k8s" bash "$CONF/k8s/check.sh" "${k8s_dirs[@]}"
  else
    echo "--- $name: no Kubernetes-managed nodes"
  fi
  if [ ${#crd_dirs[@]} -gt 0 ]; then
    echo "--- $name: crd/check.sh ${crd_dirs[*]##*/}"
    check "$name crd" bash "$CONF/crd/check.sh" "${crd_dirs[@]}"
  else
    echo "--- $name: no Volcano or Kueue nodes"
  fi
  slurm="$out/slurm"
  if [ ! -d "$slurm" ]; then
    echo "--- $name: no Slurm-owned nodes"
    continue
  fi
  if grep -q '^TopologyPlugin=topology/block' "$slurm/slurm.conf"; then
    echo "--- $name: names Slurm >= 24.05; checking its 22.05 rendering"
    "$BIN" --quiet render "$e" --target slurm --slurm-version 22.05 --out-dir "$TMP/$name-2205"
    slurm="$TMP/$name-2205/slurm"
  fi
  # a training partition with two nodes under one leaf switch, for the leaf probe
  probe=$(python3 scripts/leaf_probe.py "$slurm")
  args=(--nodes)
  [ -z "$probe" ] || args+=(--probe-leaf "-N2 -p $probe")
  echo "--- $name: slurm/check.sh ${args[*]}"
  if bash "$CONF/slurm/check.sh" "${args[@]}" "$slurm" > "$TMP/$name.slurm.log" 2>&1; then
    grep -E 'leaf probe|OK' "$TMP/$name.slurm.log" || true
  else
    cat "$TMP/$name.slurm.log"; fails+=("$name slurm")
  fi
done
if [ ${#fails[@]} -gt 0 ]; then
  echo "conformance FAILED: ${fails[*]}"; exit 1
fi
echo "conformance ok: ${#examples[@]} examples"
