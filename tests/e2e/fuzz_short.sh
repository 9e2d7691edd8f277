#!/usr/bin/env bash
# A short fuzzing pass: builds the libFuzzer targets with clang-14 into BUILD_DIR/fuzz,
# replays the regression inputs and runs each target on a fixed number of inputs from
# a fixed seed (INGOT_FUZZ_RUNS, default 40000: about 20 s for the ONNX importer here),
# all at once, so the result is the same on every run. Skipped when clang-14 or its
# sanitizer runtime (libclang-rt-14-dev) is not installed.
# Usage: tests/e2e/fuzz_short.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cc"
if ! command -v clang++-14 >/dev/null 2>&1 ||
   ! clang++-14 -fsanitize=fuzzer,address,undefined "$probe/p.cc" -o "$probe/p" >/dev/null 2>&1; then
  echo "skipped: clang-14 not installed (or libclang-rt-14-dev missing; scripts/install-deps.sh installs both)"
  exit 0
fi
INGOT_FUZZ_RUNS="${INGOT_FUZZ_RUNS:-40000}" INGOT_FUZZ_BUILD="$BUILD/fuzz" INGOT="$BUILD/bin/ingot" \
  exec "$SRC/tests/fuzz/run.sh"
