#!/usr/bin/env bash
# The installed package, used from outside the build tree: `cmake --install` into a
# fresh prefix, then from that prefix only
#   - the installed `ingot` (--version; a C artifact that compiles alone),
#   - pkg-config: a C program against the hosted runtime,
#   - examples/cmake-consumer: find_package(ingot), ingot_add_model in the three forms,
#     run and checked against the reference (a perturbed reference must fail); a second
#     build does nothing, a touched model recompiles the models and nothing else,
#   - the same consumer under the arm-none-eabi toolchain file: Cortex-M4 firmware run
#     under QEMU,
#   - the package's refusals (another minor version, a bad FORMAT) and WORKERS pass-through,
#   - examples/python with PYTHONPATH at the installed module.
# Usage: tests/e2e/install_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
PY=/usr/bin/python3
WORK="$BUILD/e2e-install"
PREFIX="$WORK/prefix"
rm -rf "$WORK"
mkdir -p "$WORK"
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

echo "+ cmake --install $BUILD --prefix $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log"
(cd "$PREFIX" && find . -type f | sort | sed 's|^\./|  |')
for f in bin/ingot include/ingot/abi.h include/ingot/runtime.h include/ingot/hosted.h \
    lib/libingot_runtime_core.a lib/libingot_runtime_hosted.a lib/cmake/ingot/ingotConfig.cmake \
    lib/cmake/ingot/ingotConfigVersion.cmake lib/cmake/ingot/ingotAddModel.cmake lib/pkgconfig/ingot.pc; do
  [ -f "$PREFIX/$f" ] || fail "the prefix lacks $f"
done
ls "$PREFIX"/lib/python3/dist-packages/ingot*.so >/dev/null || fail "the prefix lacks the Python module"

# The examples and the data they read, copied so that touching the model touches a copy.
mkdir -p "$WORK/src/examples"
cp -r "$SRC/examples/cmake-consumer" "$SRC/examples/digits" "$SRC/examples/firmware" "$SRC/examples/python" \
  "$WORK/src/examples/"
EX="$WORK/src/examples"
SAMPLE="$EX/digits/samples/sample_3.npy"
EXPECTED="$EX/digits/samples/expected_logits_3.npy"

# ---- the installed tool ------------------------------------------------------------
INGOT="$PREFIX/bin/ingot"
"$INGOT" --version | sed 's/^/  /'
"$INGOT" --version | grep -q "runtime ABI version" || fail "ingot --version names no ABI version"
mkdir -p "$WORK/alone"
"$INGOT" compile "$EX/digits/digits_mlp.onnx" -o "$WORK/alone/digits.c" --output-format=c
# Everything the C needs is in NAME.c and NAME.h: it compiles in a folder of its own.
flags=$(sed -n 's/.*ingot-build: [^ ]* //p' "$WORK/alone/digits.c")
# shellcheck disable=SC2086
(cd "$WORK/alone" && cc $flags -c digits.c -o digits.o) || fail "the installed tool's C artifact does not compile alone"

# ---- pkg-config ----------------------------------------------------------------------
"$INGOT" compile "$EX/digits/digits_mlp.onnx" -o "$WORK/alone/digits.ingot"
cat >"$WORK/alone/pc.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "ingot/hosted.h"
int main(int argc, char** argv) {
  ingot_hosted_module_t m;
  char error[512];
  if (argc != 2 || ingot_hosted_module_load_file(argv[1], &m, error, sizeof error) != INGOT_OK) return 2;
  void* arena = aligned_alloc(64, ingot_module_arena_size(&m.module) + 64);
  float in[64] = {0}, out[10];
  const void* inputs[1] = {in};
  void* outputs[1] = {out};
  ingot_context_t c;
  if (ingot_context_initialize(&m.module, arena, ingot_module_arena_size(&m.module), &c) != INGOT_OK) return 2;
  if (ingot_invoke(&c, inputs, outputs) != INGOT_OK) return 2;
  printf("pkg-config consumer: %u input, %u outputs, invoke %s\n", m.module.signature->input_count,
         m.module.signature->output_count, ingot_status_string(INGOT_OK));
  free(arena);
  ingot_hosted_module_unload(&m);
  return 0;
}
EOF
pc_flags=$(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --cflags --libs ingot)
echo "  pkg-config --cflags --libs ingot: $pc_flags"
# shellcheck disable=SC2086
cc -std=c11 "$WORK/alone/pc.c" -o "$WORK/alone/pc" $pc_flags || fail "pkg-config flags do not build a program"
"$WORK/alone/pc" "$WORK/alone/digits.ingot" | sed 's/^/  /' || fail "the pkg-config program failed"

# ---- examples/cmake-consumer ----------------------------------------------------------
C="$WORK/consumer"
echo "+ cmake -S examples/cmake-consumer -B $C -DCMAKE_PREFIX_PATH=$PREFIX && cmake --build $C"
cmake -S "$EX/cmake-consumer" -B "$C" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/consumer-configure.log"
grep "ingot 0" "$WORK/consumer-configure.log" | sed 's/^/  /'
cmake --build "$C" >"$WORK/consumer-build.log" || { cat "$WORK/consumer-build.log" >&2; exit 1; }
[ "$(grep -c "ingot: compiling" "$WORK/consumer-build.log")" -eq 3 ] || fail "the first build did not compile 3 models"
echo "+ consumer sample_3.npy expected_logits_3.npy"
"$C/consumer" "$SAMPLE" "$EXPECTED" | sed 's/^/  /' || fail "the consumer's outputs do not match"
ctest --test-dir "$C" >"$WORK/consumer-ctest.log" || fail "the consumer's own test failed"
"$PY" -c "import numpy as np, sys; e = np.load(sys.argv[1]); e[0, 4] += 1; np.save(sys.argv[2], e)" \
  "$EXPECTED" "$WORK/perturbed.npy"
rc=0
"$C/consumer" "$SAMPLE" "$WORK/perturbed.npy" >"$WORK/perturbed.log" || rc=$?
[ $rc -eq 1 ] || fail "a perturbed reference gave exit status $rc, not 1"
# Rebuilds: nothing to do, then only the models when the model file changes.
cmake --build "$C" | grep -q "no work to do" || fail "a second build was not empty"
touch "$EX/digits/digits_mlp.onnx"
cmake --build "$C" >"$WORK/consumer-rebuild.log"
[ "$(grep -c "ingot: compiling" "$WORK/consumer-rebuild.log")" -eq 3 ] || fail "a touched model did not recompile the 3 models"
"$C/consumer" "$SAMPLE" "$EXPECTED" >/dev/null || fail "the rebuilt consumer does not match"
touch "$EX/cmake-consumer/main.c"
cmake --build "$C" >"$WORK/consumer-rebuild2.log"
grep -q "ingot: compiling" "$WORK/consumer-rebuild2.log" && fail "a changed main.c recompiled the models"
grep -q "main.c" "$WORK/consumer-rebuild2.log" || fail "a changed main.c was not recompiled"

# ---- the same consumer, cross-compiled for a Cortex-M4 ------------------------------
if command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null; then
  M4="$WORK/consumer-m4"
  echo "+ cmake -S examples/cmake-consumer -B $M4 -DCMAKE_TOOLCHAIN_FILE=arm-none-eabi.cmake -Dingot_DIR=..."
  cmake -S "$EX/cmake-consumer" -B "$M4" -G Ninja -Dingot_DIR="$PREFIX/lib/cmake/ingot" \
    -DCMAKE_TOOLCHAIN_FILE="$EX/cmake-consumer/arm-none-eabi.cmake" >"$WORK/m4-configure.log"
  cmake --build "$M4" >"$WORK/m4-build.log" || { cat "$WORK/m4-build.log" >&2; exit 1; }
  grep -q "arm-none-eabi-gcc" "$M4/CMakeFiles/rules.ninja" || fail "the cross build does not use arm-none-eabi-gcc"
  arm-none-eabi-readelf -h "$M4/firmware.elf" | grep -q "Machine:.*ARM" || fail "firmware.elf is not an ARM image"
  arm-none-eabi-nm "$M4/libdigits_m4.a" | grep -q " T digits_m4_invoke" || fail "libdigits_m4.a lacks digits_m4_invoke"
  echo "+ qemu-system-arm -M mps2-an386 -kernel firmware.elf"
  rc=0
  timeout 20 qemu-system-arm -M mps2-an386 -nographic -monitor none -semihosting-config enable=on,target=native \
    -kernel "$M4/firmware.elf" >"$WORK/m4-run.log" 2>&1 || rc=$?
  tr -d '\r' <"$WORK/m4-run.log" | sed 's/^/  /'
  [ $rc -eq 0 ] || fail "the Cortex-M4 firmware exited with $rc"
  grep -q "bit-identical" "$WORK/m4-run.log" || fail "the firmware's two models disagree"
else
  fail "arm-none-eabi-gcc or qemu-system-arm is missing; run scripts/install-deps.sh"
fi

# ---- what the package refuses, and WORKERS -------------------------------------------
P="$WORK/package-checks"
mkdir -p "$P/src"
cat >"$P/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(ingot_package_checks C)
find_package(ingot ${WANT_VERSION} REQUIRED)
ingot_add_model(m MODEL ${MODEL} FORMAT ${FORMAT} ${EXTRA})
EOF
configure() {  # configure NAME ARGS... -> status, output in $P/NAME.log
  cmake -S "$P/src" -B "$P/$1" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DMODEL="$EX/digits/digits_mlp.onnx" \
    "${@:2}" >"$P/$1.log" 2>&1
}
configure minor -DWANT_VERSION=0.2 -DFORMAT=c && fail "find_package(ingot 0.2) accepted version 0.1"
grep -q "0.1.0" "$P/minor.log" || fail "the version refusal does not name the installed version"
configure format -DWANT_VERSION=0.1 -DFORMAT=wasm && fail "FORMAT wasm was accepted"
grep -q "FORMAT must be c, static-lib or module, got 'wasm'" "$P/format.log" || fail "FORMAT wasm: no clear message"
configure workers -DWANT_VERSION=0.1 -DFORMAT=c "-DEXTRA=WORKERS;2" || fail "WORKERS 2 did not configure"
grep -q -- "--workers=2" "$P/workers/build.ninja" || fail "WORKERS 2 did not pass --workers=2"
configure workers_host -DWANT_VERSION=0.1 -DFORMAT=c "-DEXTRA=WORKERS;host" || fail "WORKERS host did not configure"
grep -q -- "--workers=host" "$P/workers_host/build.ninja" || fail "WORKERS host did not pass --workers=host"
configure workers_bad -DWANT_VERSION=0.1 -DFORMAT=c "-DEXTRA=WORKERS;many" && fail "WORKERS many was accepted"
grep -q "WORKERS must be a positive integer or host, got 'many'" "$P/workers_bad.log" || fail "WORKERS many: no clear message"
configure external -DWANT_VERSION=0.1 -DFORMAT=c "-DEXTRA=WEIGHTS;external" || fail "WEIGHTS external did not configure"
cmake --build "$P/external" >/dev/null || fail "WEIGHTS external did not build"
[ -s "$P/external/ingot_models/m/m.weights" ] || fail "WEIGHTS external wrote no m.weights"
grep -q "M_WEIGHTS_SIZE" "$P/external/ingot_models/m/m.h" || fail "WEIGHTS external: the header records no weights size"
configure plain -DWANT_VERSION=0.1 -DFORMAT=module || fail "a plain module did not configure"
grep -q -- "--workers" "$P/plain/build.ninja" && fail "--workers was passed without WORKERS"
cmake --build "$P/plain" >/dev/null || fail "the plain module did not build"
[ -f "$P/plain/ingot_models/m/m.ingot" ] || fail "FORMAT module wrote no m.ingot"
grep -q "M_MODULE_FILE \"$P/plain/ingot_models/m/m.ingot\"" "$P/plain/ingot_models/m/include/m.h" ||
  fail "FORMAT module's header does not name the module"

# ---- examples/python from the installed module -----------------------------------------
echo "+ PYTHONPATH=$PREFIX/lib/python3/dist-packages $PY examples/python/torch_to_ingot.py"
where=$(cd "$WORK" && PYTHONPATH="$PREFIX/lib/python3/dist-packages" "$PY" -c "import ingot; print(ingot.__file__)")
case "$where" in
  "$PREFIX"/lib/python3/dist-packages/ingot*.so) ;;
  *) fail "python imported ingot from $where, not the prefix" ;;
esac
(cd "$WORK" && PYTHONPATH="$PREFIX/lib/python3/dist-packages" "$PY" "$EX/python/torch_to_ingot.py") 2>"$WORK/python.log" |
  sed 's/^/  /' || { cat "$WORK/python.log" >&2; fail "examples/python failed"; }

if [ $failures -ne 0 ]; then
  echo "install_consumer: $failures failure(s)" >&2
  exit 1
fi
echo "install_consumer: all checks passed"
