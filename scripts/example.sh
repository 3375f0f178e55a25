#!/usr/bin/env bash
# Plans a bundled example (a 32-node DGX H100 SuperPOD scalable unit), after installing
# build dependencies. Extra arguments go to `gpuplan plan`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo run --release --quiet -- plan examples/superpod-h100 "$@"
