#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (ASan + UBSan + coverage) into
# build-fuzz/ (or $1): a CMake project of its own (tests/fuzz/CMakeLists.txt), so the
# main build is untouched. Incremental, -j2, ccache when installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/build-fuzz}"
cc="${INGOT_FUZZ_CC:-clang-14}"
cxx="${INGOT_FUZZ_CXX:-clang++-14}"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$out/CMakeCache.txt" ]; then
  cmake -S "$root/tests/fuzz" -B "$out" "${generator[@]}" -DCMAKE_BUILD_TYPE= \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
fi
cmake --build "$out" -j"${INGOT_FUZZ_JOBS:-2}"
