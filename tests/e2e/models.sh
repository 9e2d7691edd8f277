#!/usr/bin/env bash
# End to end: export the test models with torch, compile each with ingot, run it and
# compare with torch's output; a perturbed reference must fail with exit status 1.
# The run that compares with torch also checks every step's writes (--check-arena).
# Models exported with dynamic axes (NAME.shape beside them) must fail to compile
# without --input-shape, naming the dynamic dimension, and compile with it.
# Usage: tests/e2e/models.sh BUILD_DIR SOURCE_DIR [model ...]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
shift 2
INGOT="$BUILD/bin/ingot"
# Compiled kernel objects are shared between the drivers and kept between runs (the
# opset-17 twins and the 2-4 worker plans repeat most kernels); the key is the
# compiler, its flags and the kernel text (codegen::NativeOptions::cache_dir), and
# e2e_reproducible checks compiles without it.
export INGOT_CACHE_DIR="${INGOT_CACHE_DIR:-$BUILD/kernel-cache}"
PY=/usr/bin/python3
MODELS_DIR="$BUILD/models"
WORK="$BUILD/e2e-models"
mkdir -p "$WORK"

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  # Every model at opset 13 and 17; BERT and the LSTM also with dynamic axes.
  for base in lenet resnet_small mobilenet_v2 resnet18 mobilenet_v3_small squeezenet1_1 densenet121 \
      bert_encoder lstm_seq bert_encoder_dyn lstm_seq_dyn; do
    models+=("$base" "${base}_op17")
  done
fi

"$PY" "$SRC/tests/models/export_models.py" --out "$MODELS_DIR" --only "$(IFS=,; echo "${models[*]}")" 2> "$WORK/export.log" ||
  { cat "$WORK/export.log" >&2; exit 1; }

# The demo model and one of its samples ride along.
cp "$SRC/examples/digits/digits_mlp.onnx" "$MODELS_DIR/digits_mlp.onnx"
cp "$SRC/examples/digits/samples/sample_0.npy" "$MODELS_DIR/digits_mlp.in.npy"
cp "$SRC/examples/digits/samples/expected_logits_0.npy" "$MODELS_DIR/digits_mlp.out.npy"
models=(digits_mlp "${models[@]}")

failures=0
for m in "${models[@]}"; do
  onnx="$MODELS_DIR/$m.onnx"
  mod="$WORK/$m.ingot"
  shape_args=()
  if [ -f "$MODELS_DIR/$m.shape" ]; then
    # Without --input-shape the compile must stop and name the dynamic dimension.
    set +e
    msg=$("$INGOT" compile "$onnx" -o "$mod" 2>&1)
    rc=$?
    set -e
    if [ $rc -ne 2 ] || ! grep -q "dimension [0-9]* ('[a-z_]*') is dynamic" <<<"$msg"; then
      echo "FAIL: $m without --input-shape exited $rc, expected 2 naming the dynamic dimension:" >&2
      echo "$msg" >&2
      failures=$((failures + 1))
    fi
    shape_args=(--input-shape="$(cat "$MODELS_DIR/$m.shape")")
  fi
  rm -f "$mod"
  start=$(date +%s%N)
  if ! "$INGOT" compile "$onnx" -o "$mod" "${shape_args[@]}"; then
    echo "FAIL: $m does not compile" >&2
    failures=$((failures + 1))
    continue
  fi
  end=$(date +%s%N)
  printf '%s: compiled in %d ms, module %d bytes\n' "$m" $(( (end - start) / 1000000 )) "$(stat -c %s "$mod")"

  # Tolerance scaled to the output's magnitude: random-weight models range from
  # outputs around 0.01 (mobilenet_v3_small) to around 5 (the BERT encoder).
  atol=$("$PY" -c "import sys, numpy as np; print('%.3g' % max(1e-6, 1e-4 * float(np.abs(np.load(sys.argv[1])).max())))" \
      "$MODELS_DIR/$m.out.npy")
  start=$(date +%s%N)
  if ! "$INGOT" run "$mod" --input=@"$MODELS_DIR/$m.in.npy" --expected-output=@"$MODELS_DIR/$m.out.npy" \
      --output=@"$WORK/$m.got.npy" --atol="$atol" --rtol=1e-3 --no-print --check-arena; then
    echo "FAIL: $m does not match the torch reference or writes outside a step's bindings" >&2
    failures=$((failures + 1))
    continue
  fi
  end=$(date +%s%N)
  printf '  run with --check-arena: %d ms\n' $(( (end - start) / 1000000 ))
  "$PY" - "$WORK/$m.got.npy" "$MODELS_DIR/$m.out.npy" <<'PYEOF'
import sys
import numpy as np
got, ref = (np.load(p).astype(np.float64) for p in sys.argv[1:3])
print("  max |error| %.3g (max |reference| %.3g)" % (np.abs(got - ref).max(), np.abs(ref).max()))
PYEOF

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
      --atol="$atol" --rtol=1e-3 --no-print 2>&1)
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

# ingot_invoke must not touch the heap (the checker replaces the allocator, so a
# sanitizer build, which replaces it too, has none).
no_alloc_models=("${models[@]}")
if [ ! -x "$BUILD/bin/ingot_no_alloc_check" ]; then
  echo "no-allocation check skipped: $BUILD has no ingot_no_alloc_check (sanitizer build)"
  no_alloc_models=()
fi
for m in "${no_alloc_models[@]}"; do
  [ -f "$WORK/$m.ingot" ] || continue
  "$BUILD/bin/ingot_no_alloc_check" "$WORK/$m.ingot" || failures=$((failures + 1))
done

if [ $failures -ne 0 ]; then
  echo "$failures model check(s) failed" >&2
  exit 1
fi
echo "all ${#models[@]} models match"
