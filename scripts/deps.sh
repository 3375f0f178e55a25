#!/usr/bin/env bash
# Installs what building and testing gpuplan needs beyond a Rust toolchain: cmake and
# libclang, for HiGHS (the ILP solver, built from source by the highs-sys crate), and
# PostgreSQL's server for the pg backend's tests. Idempotent.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
# bindgen needs libclang itself (libclang.so / libclang-NN.so), not libclang-cpp.
have_libclang=no
for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
    /usr/lib/*-linux-gnu/libclang-[0-9]*.so*; do
  [ -e "$f" ] && have_libclang=yes
done
[ "$have_libclang" = yes ] || need+=(libclang-dev)
command -v c++ >/dev/null 2>&1 || need+=(g++)
# PostgreSQL's server for the `pg` state backend's tests (tests/it/backend_pg.rs starts its
# own cluster from initdb/pg_ctl, unprivileged, on a Unix socket): Debian's `postgresql`.
have_pg=no
for f in /usr/lib/postgresql/*/bin/initdb; do [ -x "$f" ] && have_pg=yes; done
command -v pg_ctl >/dev/null 2>&1 && have_pg=yes
[ "$have_pg" = yes ] || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  if command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need[*]} (HiGHS' build; PostgreSQL for the pg backend's tests)" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "please install: ${need[*]} (HiGHS' build; PostgreSQL for the pg backend's tests)" >&2
    exit 1
  fi
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs)" >&2
  exit 1
fi
