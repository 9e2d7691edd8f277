#!/usr/bin/env bash
# End to end: export the test models with torch, compile each with ingot, run it and
# compare with torch's output; a perturbed reference must fail with exit status 1.
# Usage: tests/e2e/models.sh BUILD_DIR SOURCE_DIR [model ...]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
shift 2
INGOT="$BUILD/bin/ingot"
PY=/usr/bin/python3
MODELS_DIR="$BUILD/models"
WORK="$BUILD/e2e-models"
mkdir -p "$WORK"

models=("$@")
[ ${#models[@]} -gt 0 ] || models=(lenet resnet_small mobilenet_v2 resnet18)

"$PY" "$SRC/tests/models/export_models.py" --out "$MODELS_DIR" --only "$(IFS=,; echo "${models[*]}")"

# The demo model and one of its samples ride along.
cp "$SRC/examples/digits/digits_mlp.onnx" "$MODELS_DIR/digits_mlp.onnx"
cp "$SRC/examples/digits/samples/sample_0.npy" "$MODELS_DIR/digits_mlp.in.npy"
cp "$SRC/examples/digits/samples/expected_logits_0.npy" "$MODELS_DIR/digits_mlp.out.npy"
models=(digits_mlp "${models[@]}")

failures=0
for m in "${models[@]}"; do
  onnx="$MODELS_DIR/$m.onnx"
  mod="$WORK/$m.ingot"
  start=$(date +%s%N)
  "$INGOT" compile "$onnx" -o "$mod"
  end=$(date +%s%N)
  printf '%s: compiled in %d ms, module %d bytes\n' "$m" $(( (end - start) / 1000000 )) "$(stat -c %s "$mod")"

  if ! "$INGOT" run "$mod" --input=@"$MODELS_DIR/$m.in.npy" --expected-output=@"$MODELS_DIR/$m.out.npy" \
      --atol=1e-4 --rtol=1e-3 --no-print; then
    echo "FAIL: $m does not match the torch reference" >&2
    failures=$((failures + 1))
    continue
  fi

  # Perturb one element of the reference: ingot run must report a mismatch (exit 1).
  "$PY" - "$MODELS_DIR/$m.out.npy" "$WORK/$m.perturbed.npy" <<'PYEOF'
import sys
import numpy as np
ref = np.load(sys.argv[1])
ref.flat[ref.size // 2] += 0.5
np.save(sys.argv[2], ref)
PYEOF
  set +e
  msg=$("$INGOT" run "$mod" --input=@"$MODELS_DIR/$m.in.npy" --expected-output=@"$WORK/$m.perturbed.npy" \
      --atol=1e-4 --rtol=1e-3 --no-print 2>&1)
  rc=$?
  set -e
  if [ $rc -ne 1 ]; then
    echo "FAIL: $m with a perturbed reference exited $rc, expected 1" >&2
    echo "$msg" >&2
    failures=$((failures + 1))
  else
    echo "$msg" | grep -m1 -i "mismatch\|worst" || true
  fi
done

# ingot_invoke must not touch the heap.
for m in "${models[@]}"; do
  "$BUILD/bin/ingot_no_alloc_check" "$WORK/$m.ingot" || failures=$((failures + 1))
done

if [ $failures -ne 0 ]; then
  echo "$failures model check(s) failed" >&2
  exit 1
fi
echo "all ${#models[@]} models match"
