#!/usr/bin/env bash
# Build (if needed) and run every test: unit tests, runtime tests, end-to-end models
# against torch, error paths, the malformed corpus; then the sanitizer suite
# (scripts/test-asan.sh; INGOT_SKIP_ASAN=1 skips it). Exit status is non-zero when
# anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/build.sh
# One kernel object cache for every test that compiles kernels, here and in the
# sanitizer suite after it: the same generated C built by the same C compiler is
# reused instead of compiled again (the sanitizer build's kernel tests generate the
# same bytes as the Release build's). INGOT_CACHE_DIR= (empty) runs without one.
export INGOT_CACHE_DIR="${INGOT_CACHE_DIR-$PWD/build/kernel-cache}"
ctest --test-dir build --output-on-failure -j2 "$@"
if [ "${INGOT_SKIP_ASAN:-0}" != 1 ] && [ $# -eq 0 ]; then
  scripts/test-asan.sh
fi
