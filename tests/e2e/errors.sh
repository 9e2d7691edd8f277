#!/usr/bin/env bash
# Bad input of every kind gets one clear line and exit status 2; nothing crashes or
# leaves half-written output. Also: dynamic shapes fixed by --input-shape, external
# weights, an old opset, BatchNorm folding and decomposition.
# Usage: tests/e2e/errors.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
INGOT="$BUILD/bin/ingot"
PY=/usr/bin/python3
W="$BUILD/e2e-errors"
rm -rf "$W" && mkdir -p "$W"
"$PY" "$SRC/tests/e2e/make_error_models.py" "$W" || exit 1

failures=0
# expect STATUS PATTERN -- command...: runs the command, checks status and that stderr
# (or stdout) contains PATTERN.
expect() {
  local want=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -ne "$want" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: '$*' exited $rc (want $want), output:" >&2
    echo "$out" | head -5 >&2
    echo "  (expected to match: $pattern)" >&2
    failures=$((failures + 1))
  else
    echo "ok: $(head -1 <<<"$out" | cut -c1-150)"
  fi
}

expect 2 "does not exist\|cannot open" -- "$INGOT" compile "$W/missing.onnx" -o "$W/x.ingot"
expect 2 "not a valid ONNX model" -- "$INGOT" compile "$W/garbage.onnx" -o "$W/x.ingot"
expect 2 "unsupported op 'Det' (node 'determinant_node', opset 13)" -- "$INGOT" compile "$W/unsupported_op.onnx" -o "$W/x.ingot"
expect 2 "input 'x' dimension 0 ('batch') is dynamic" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot"
[ ! -e "$W/x.ingot" ] || { echo "FAIL: a failed compile left $W/x.ingot" >&2; failures=$((failures + 1)); }

expect 0 "" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/dyn.ingot" --input-shape=x:2x4
expect 0 "match" -- "$INGOT" run "$W/dyn.ingot" --input=@"$W/dynamic_batch.in.npy" --expected-output=@"$W/dynamic_batch.out.npy"
expect 2 "expected 2x4xf32, got 1x4xf32" -- "$INGOT" run "$W/dyn.ingot" --input=1x4xf32=1,2,3,4
expect 2 "" -- "$INGOT" run "$W/dyn.ingot" --input=2x4xi64=1,2,3,4,5,6,7,8
expect 2 "" -- "$INGOT" run "$W/dyn.ingot"
expect 2 "cannot open" -- "$INGOT" run "$W/dyn.ingot" --input=@"$W/nothere.npy"
expect 2 "" -- "$INGOT" run "$W/dyn.ingot" --input=@"$W/dynamic_batch.onnx"
expect 2 "--input-shape" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2xq
expect 2 "not an input" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2x4 --input-shape=nope:2x4

# A failing run must not leave a half-written output file.
expect 2 "" -- "$INGOT" run "$W/dyn.ingot" --input=1x4xf32=1,2,3,4 --output=@"$W/out.npy"
[ ! -e "$W/out.npy" ] || { echo "FAIL: a failed run left $W/out.npy" >&2; failures=$((failures + 1)); }

# Broken modules: truncated, corrupted, not a module, missing.
head -c 100 "$W/dyn.ingot" > "$W/truncated.ingot"
expect 2 "" -- "$INGOT" run "$W/truncated.ingot" --input=@"$W/dynamic_batch.in.npy"
"$PY" - "$W/dyn.ingot" "$W/corrupt.ingot" <<'PYEOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x5A
open(sys.argv[2], "wb").write(data)
PYEOF
expect 2 "" -- "$INGOT" run "$W/corrupt.ingot" --input=@"$W/dynamic_batch.in.npy"
expect 2 "" -- "$INGOT" inspect "$W/corrupt.ingot"
expect 2 "" -- "$INGOT" run "$W/garbage.onnx" --input=@"$W/dynamic_batch.in.npy"
expect 2 "does not exist\|cannot open" -- "$INGOT" inspect "$W/none.ingot"
expect 2 "" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2x4 --target=sparc
expect 2 "" -- "$INGOT" frobnicate

# External weights in the ONNX file, embedded and external weights in the module.
expect 0 "" -- "$INGOT" compile "$W/external_data.onnx" -o "$W/ext.ingot"
expect 0 "match" -- "$INGOT" run "$W/ext.ingot" --input=@"$W/external_data.in.npy" --expected-output=@"$W/external_data.out.npy"
expect 0 "" -- "$INGOT" compile "$W/external_data.onnx" -o "$W/extw.ingot" --weights=external
expect 0 "match" -- "$INGOT" run "$W/extw.ingot" --input=@"$W/external_data.in.npy" --expected-output=@"$W/external_data.out.npy"
mv "$W/extw.ingot.weights" "$W/moved.weights"
expect 2 "" -- "$INGOT" run "$W/extw.ingot" --input=@"$W/external_data.in.npy"

# Old opset converted; BatchNorm folded into Conv and decomposed after Relu.
expect 0 "" -- "$INGOT" compile "$W/old_opset.onnx" -o "$W/old.ingot"
expect 0 "match" -- "$INGOT" run "$W/old.ingot" --input=1x4xf32=1,2,-3,4 --expected-output=1x4xf32=1.5,1.5,0,3
expect 0 "fold_batchnorm" -- "$INGOT" compile "$W/batchnorm.onnx" -o "$W/bn.ingot" --time-passes
expect 0 "match" -- "$INGOT" run "$W/bn.ingot" --input=@"$W/batchnorm.in.npy" --expected-output=@"$W/batchnorm.out.npy"
expect 0 "epilogue \[Relu, Mul" -- "$INGOT" compile "$W/batchnorm.onnx" -o "$W/bn.ingot" --dump-after=fuse_epilogues

if [ $failures -ne 0 ]; then
  echo "$failures error-path check(s) failed" >&2
  exit 1
fi
echo "all error-path checks passed"
