#!/usr/bin/env bash
# Configure and build ingot in build/ (Release, Ninja). Safe to rerun.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
