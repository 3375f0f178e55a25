#!/usr/bin/env bash
# Installs what building gpuplan needs beyond a Rust toolchain: cmake and libclang, for
# HiGHS (the ILP solver, built from source by the highs-sys crate). Idempotent.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
if ! ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1; then
  need+=(libclang-dev)
fi
command -v c++ >/dev/null 2>&1 || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  if command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need[*]} (needed to build HiGHS)" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "please install: ${need[*]} (needed to build HiGHS)" >&2
    exit 1
  fi
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs)" >&2
  exit 1
fi
