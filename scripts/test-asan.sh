#!/usr/bin/env bash
# The sanitizer suite: builds build-asan/ (ASan + UBSan, scripts/build-asan.sh) and runs
# under it every unit test, the error-path, hostile-input, reproducibility and
# malformed-corpus tests, and three end-to-end models (compiled, run with
# --check-arena and compared with torch). Any sanitizer report fails the test that
# shows it (UBSan reports are fatal; ASan's always are).
# Left to the normal build: the ONNX conformance suite, the large models of
# tests/e2e/models.sh, the firmware, fuzz, benchmark, worker, Vulkan, Python and
# install checks (CI time, or an uninstrumented host process).
# Kernels that `ingot compile` generates are not instrumented: they are flat images
# that cannot call a sanitizer runtime; ingot run --check-arena guards their writes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/build-asan.sh
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The Release run's kernel object cache (scripts/test.sh): the kernels the tests
# generate here are the same C, so most are copied rather than compiled again.
export INGOT_CACHE_DIR="${INGOT_CACHE_DIR-$PWD/build/kernel-cache}"
start=$(date +%s)
# Left out as well: the multi-worker check (e2e_workers: 40 compiles and runs of large
# models), the Vulkan device tests (lavapipe runs inside the process), the Python module
# (it loads into an uninstrumented interpreter) and the install consumer (an install
# and two builds); the Release build runs them all.
# The kernel tests parameterized over targets run here for the portable x86_64 target
# and the host (the widest vector unit there is), not for avx2 and avx512 again: their
# time is in the C compiler building uninstrumented kernels, the compiler code they
# reach is the same with other target data, and the Release build runs every target.
ctest --test-dir build-asan --output-on-failure -j2 \
  -E '^(conformance_|e2e_models$|e2e_firmware$|e2e_fuzz_short$|e2e_bench_subset$|e2e_workers$|e2e_vulkan_models$|python_tests$|e2e_install_consumer$)|^Targets/[^ ]*/x86_64_avx(2|512)( |$)' "$@"
bash tests/e2e/models.sh build-asan . lenet lstm_seq bert_encoder
echo "sanitizer suite: $(( $(date +%s) - start )) s"
