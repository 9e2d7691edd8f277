#!/usr/bin/env bash
# Configure and build ingot with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-asan/ (RelWithDebInfo-like: -O1 -g, Ninja). Safe to rerun.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DINGOT_SANITIZE=ON \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g"
cmake --build build-asan -j2
