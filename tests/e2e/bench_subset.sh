#!/usr/bin/env bash
# Correctness on a subset of the benchmarks without ONNX Runtime: about 20 layers of the
# sweep and four small zoo models, compiled by ingot and checked against PyTorch's
# outputs (bench/check_subset.py).
# Usage: tests/e2e/bench_subset.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
exec /usr/bin/python3 "$SRC/bench/check_subset.py" --ingot "$BUILD/bin/ingot" --work "$BUILD/bench-check"
