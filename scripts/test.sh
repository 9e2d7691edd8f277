#!/usr/bin/env bash
# Build (if needed) and run every test: unit tests, runtime tests, end-to-end models
# against torch, error paths. Exit status is non-zero when anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 "$@"
