#!/usr/bin/env bash
# Bare metal, end to end: compile the demo MLP and a DS-CNN keyword spotter to C for
# Cortex-M3, M4, M7 and M55, build examples/firmware with arm-none-eabi-gcc, run it
# under QEMU (mps2-an385/an386/an500, mps3-an547) and check every output against its
# reference; a perturbed reference must fail. Then measure the footprint of every
# output form (x86-64 and Cortex-M4) and check it against tests/footprint/thresholds.json.
# Usage: tests/e2e/firmware.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
INGOT="$BUILD/bin/ingot"
PY=/usr/bin/python3
FW="$SRC/examples/firmware"
WORK="$BUILD/e2e-firmware"

for tool in arm-none-eabi-gcc qemu-system-arm make timeout; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "firmware: '$tool' is not installed; run scripts/install-deps.sh" >&2
    exit 1
  fi
done

rm -rf "$WORK"
mkdir -p "$WORK/models"
"$PY" "$FW/export_kws.py" --out "$WORK/models"
cp "$SRC/examples/digits/digits_mlp.onnx" "$WORK/models/digits.onnx"
cp "$SRC/examples/digits/samples/sample_0.npy" "$WORK/models/digits.in.npy"
cp "$SRC/examples/digits/samples/expected_logits_0.npy" "$WORK/models/digits.out.npy"
MODELS="digits kws"

# Compiles both models to C for target $1 into $2 at optimization $3, with their test
# data.
generate() {
  local target=$1 gen=$2 opt=$3
  mkdir -p "$gen"
  for m in $MODELS; do
    "$INGOT" compile "$WORK/models/$m.onnx" -o "$gen/$m.c" --output-format=c --target="$target" "$opt"
    "$PY" "$FW/npy2c.py" "$m" --inputs "$WORK/models/$m.in.npy" --expected "$WORK/models/$m.out.npy" \
      -o "$gen/${m}_data.h"
  done
}

# Builds the firmware from $2 with models $3 for target $1 into $4 (MODE $5: c, the
# default, or module) and runs it under QEMU; prints its output, stores it in $4/run.txt and returns the firmware's exit
# status (QEMU passes it on through semihosting; 124 on a timeout).
run_firmware() {
  local target=$1 gen=$2 models=$3 out=$4 mode=${5:-c} board rc=0
  make -s -C "$FW" GEN="$gen" OUT="$out" MODELS="$models" TARGET="$target" MODE="$mode" >/dev/null
  board=$(make -s -C "$FW" TARGET="$target" board)
  timeout 60 qemu-system-arm -M "$board" -nographic -monitor none -semihosting-config enable=on,target=native \
    -kernel "$out/firmware.elf" >"$out/run.txt" 2>&1 || rc=$?
  sed 's/^/  /' "$out/run.txt"
  return $rc
}

failures=0
for target in cortex-m4 cortex-m3 cortex-m7 cortex-m55; do
  gen="$WORK/$target"
  # Size mode everywhere but on the M55, where -O2 lets GCC vectorize for Helium.
  opt=-Os
  [ "$target" = cortex-m55 ] && opt=-O2
  generate "$target" "$gen" "$opt"
  # The generated C calls nothing outside itself but the compiler's support library
  # (libgcc: 64-bit division, soft float on the M3): no memcpy, no libm.
  for m in $MODELS; do
    make -s -C "$FW" GEN="$gen" MODELS="$m" TARGET="$target" "$gen/$m.model.o" >/dev/null
    undefined=$(arm-none-eabi-nm -u "$gen/$m.model.o" | awk '{print $2}' | grep -v '^__aeabi_' || true)
    if [ -n "$undefined" ]; then
      echo "FAIL: $target $m.c needs symbols from outside: $undefined" >&2
      failures=$((failures + 1))
    fi
  done
  board=$(make -s -C "$FW" TARGET="$target" board)
  make -s -C "$FW" GEN="$gen" MODELS="$MODELS" TARGET="$target" >/dev/null
  if [ "$target" = cortex-m55 ]; then
    # Helium (MVE) works on q registers; GCC uses it when it vectorizes the kernels.
    mve=$(arm-none-eabi-objdump -d "$gen/kws.model.o" | grep -cE '\bq[0-7]\b' || true)
    echo "cortex-m55: $mve Helium (MVE) instructions in the DS-CNN's kernels"
    if [ "$mve" -eq 0 ]; then
      echo "FAIL: the Cortex-M55 build uses no Helium instructions" >&2
      failures=$((failures + 1))
    fi
  fi
  start=$(date +%s%N)
  if run_firmware "$target" "$gen" "$MODELS" "$gen"; then
    end=$(date +%s%N)
    printf '%s on %s: both models match (QEMU %d ms)\n' "$target" "$board" $(( (end - start) / 1000000 ))
    for m in $MODELS; do
      grep -q "^PASS $m:" "$gen/run.txt" || { echo "FAIL: $target: no PASS line for $m" >&2; failures=$((failures + 1)); }
    done
  else
    echo "FAIL: firmware for $target on $board does not match its references" >&2
    failures=$((failures + 1))
  fi
done

# A perturbed reference must be caught: exit status 1 and a FAIL line.
neg="$WORK/negative"
mkdir -p "$neg"
cp "$WORK/cortex-m4/digits.c" "$WORK/cortex-m4/digits.h" "$neg/"
"$PY" - "$WORK/models/digits.out.npy" "$neg/digits.out.npy" <<'PYEOF'
import sys
import numpy as np
ref = np.load(sys.argv[1])
ref.flat[ref.size // 2] += 0.5
np.save(sys.argv[2], ref)
PYEOF
"$PY" "$FW/npy2c.py" digits --inputs "$WORK/models/digits.in.npy" --expected "$neg/digits.out.npy" -o "$neg/digits_data.h"
rc=0
run_firmware cortex-m4 "$neg" digits "$neg" >/dev/null || rc=$?
if [ $rc -ne 1 ] || ! grep -q "^FAIL digits:" "$neg/run.txt"; then
  echo "FAIL: a perturbed reference exited $rc, expected 1 with a FAIL line" >&2
  cat "$neg/run.txt" >&2
  failures=$((failures + 1))
fi

# The module form on bare metal: the .ingot files in flash, validated and run in place
# by the runtime core.
mod="$WORK/module-cortex-m4"
mkdir -p "$mod"
for m in $MODELS; do
  "$INGOT" compile "$WORK/models/$m.onnx" -o "$mod/$m.ingot" --target=cortex-m4 -Os --strip
  "$PY" "$FW/module2c.py" "$m" "$mod/$m.ingot" -o "$mod/${m}_module.h"
  cp "$WORK/cortex-m4/${m}_data.h" "$mod/"
done
if run_firmware cortex-m4 "$mod" "$MODELS" "$mod" module; then
  echo "cortex-m4 (module form, runtime core): both models match"
  for m in $MODELS; do
    grep -q "^PASS $m (module):" "$mod/run.txt" || { echo "FAIL: module form: no PASS line for $m" >&2; failures=$((failures + 1)); }
  done
else
  echo "FAIL: the module-form firmware does not match its references" >&2
  failures=$((failures + 1))
fi

# One firmware per model on the Cortex-M4, for the footprint.
for m in $MODELS; do
  out="$WORK/fw-$m"
  mkdir -p "$out"
  run_firmware cortex-m4 "$WORK/cortex-m4" "$m" "$out" >/dev/null || {
    echo "FAIL: the $m-only firmware does not match" >&2
    failures=$((failures + 1))
  }
done

if [ $failures -ne 0 ]; then
  echo "$failures firmware check(s) failed" >&2
  exit 1
fi

"$PY" "$SRC/tests/footprint/footprint.py" --ingot "$INGOT" --work "$WORK" \
  --thresholds "$SRC/tests/footprint/thresholds.json"
