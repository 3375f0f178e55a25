#!/usr/bin/env bash
# Runs the test suite, after installing build dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo test --locked "$@"
