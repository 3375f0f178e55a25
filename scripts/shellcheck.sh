#!/usr/bin/env bash
# Renders every example with `--target all` and runs shellcheck on every generated
# script (mig/*.sh, k8s/label-nodes.sh, slurm/sacctmgr.sh, slurm/examples/*.sbatch);
# fails on any warning.
# Installs Debian's shellcheck when it is missing.
# usage: scripts/shellcheck.sh [EXAMPLE_DIR...]   (default: examples/*/)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v shellcheck >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing shellcheck" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq shellcheck >/dev/null
fi
# GPUPLAN_BIN: a gpuplan already built (.ci/run passes the one its tests ran); else
# the debug build.
if [ -n "${GPUPLAN_BIN:-}" ]; then
  BIN=$GPUPLAN_BIN
else
  cargo build --quiet --locked
  BIN=${CARGO_TARGET_DIR:-target}/debug/gpuplan
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuplan-shellcheck.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(examples/*/)
total=0
for e in "${examples[@]}"; do
  name=$(basename "$e")
  "$BIN" --quiet render "$e" --target all --out-dir "$TMP/$name"
  mapfile -t scripts < <(find "$TMP/$name" \( -name '*.sh' -o -name '*.sbatch' \) -type f | sort)
  [ ${#scripts[@]} -gt 0 ] || { echo "$name: no scripts rendered"; exit 1; }
  # -S style: every finding, down to style notes, fails the check
  shellcheck --shell=sh --severity=style "${scripts[@]}"
  echo "$name: ${#scripts[@]} scripts pass shellcheck"
  total=$((total + ${#scripts[@]}))
done
echo "shellcheck ok: $total scripts"
