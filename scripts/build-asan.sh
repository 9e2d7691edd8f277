#!/usr/bin/env bash
# Configure and build ingot with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-asan/ (-O1 with line tables only, -g1: all a sanitizer report needs to name
# file and line, at a fraction of -g's compile time; Ninja). Safe to rerun.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DINGOT_SANITIZE=ON \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
cmake --build build-asan -j2
