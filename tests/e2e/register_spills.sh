#!/usr/bin/env bash
# The AVX2 register tiles keep their accumulators in registers in generated code
# (tests/e2e/check_register_spills.py): compiled for x86_64-avx2 as C and read back as
# assembly, so it runs on any x86-64 host.
# Usage: tests/e2e/register_spills.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
rm -rf "$BUILD/e2e-register-spills"
exec /usr/bin/python3 "$SRC/tests/e2e/check_register_spills.py" "$BUILD/bin/ingot" "$BUILD/e2e-register-spills"
