#!/usr/bin/env bash
# Installs gpuplan from the action's own source (the tag or commit the workflow pinned),
# unless a gpuplan binary is already on PATH (a cached install, or a runner image).
set -euo pipefail
if command -v gpuplan >/dev/null 2>&1; then
  echo "gpuplan already installed: $(gpuplan --version)"
  exit 0
fi
src=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}
bash "$src/scripts/deps.sh"
cargo install --locked --path "$src"
gpuplan --version
