#!/usr/bin/env bash
# Bad input of every kind gets one clear line and exit status 2; nothing crashes or
# leaves half-written output. Hostile attributes and index shapes are refused at
# compile time. Also: dynamic shapes fixed by --input-shape, external weights, an
# old opset, BatchNorm folding and decomposition.
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
# A kernel cache folder that cannot be made, from the flag or the environment.
: > "$W/plain_file"
expect 2 "--cache-dir: '$W/plain_file/cache' is not a folder" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2x4 --cache-dir "$W/plain_file/cache"
expect 2 "INGOT_CACHE_DIR: '$W/plain_file' is not a folder" -- env INGOT_CACHE_DIR="$W/plain_file" "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2x4
# Its size limit: not a size, from the flag or the environment.
expect 2 "--cache-max-size: '1.5G' is not a size" -- "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2x4 --cache-max-size=1.5G
expect 2 "INGOT_CACHE_MAX_SIZE: '-1' is not a size" -- env INGOT_CACHE_MAX_SIZE=-1 "$INGOT" compile "$W/dynamic_batch.onnx" -o "$W/x.ingot" --input-shape=x:2x4
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

# NaN propagates through Relu (alone and fused into a Conv) and MaxPool.
expect 0 "" -- "$INGOT" compile "$W/nan_propagation.onnx" -o "$W/nan.ingot"
expect 0 "match" -- "$INGOT" run "$W/nan.ingot" --input=@"$W/nan_propagation.in.npy" --expected-output=@"$W/nan_propagation.p.npy" \
  --expected-output=@"$W/nan_propagation.cr.npy" --expected-output=@"$W/nan_propagation.q.npy" --atol=0 --rtol=0
# --arena-guard leaves a gap after every arena buffer; the module computes the same.
expect 0 "" -- "$INGOT" compile "$W/batchnorm.onnx" -o "$W/bn_guard.ingot" --arena-guard
expect 0 "match" -- "$INGOT" run "$W/bn_guard.ingot" --input=@"$W/batchnorm.in.npy" --expected-output=@"$W/batchnorm.out.npy" --check-arena
"$INGOT" run "$W/nan.ingot" --input=@"$W/nan_propagation.in.npy" | grep -q nan ||
  { echo "FAIL: no NaN in the outputs of nan_propagation" >&2; failures=$((failures + 1)); }

# Hostile attributes and index shapes: each refused by its op's shape rule, naming
# the node, the attribute or input and the rule; nothing is written.
hostile() { expect 2 "$2" -- "$INGOT" compile "$W/$1.onnx" -o "$W/hostile.ingot"; }
hostile conv_negative_pads "Conv node 'hostile' (opset 13): attribute 'pads' entry 0 is -1; pads must not be negative"
hostile depthwise_negative_pads "attribute 'pads' entry 1 is -2; pads must not be negative"
hostile pointwise_negative_pads "attribute 'pads' entry 2 is -1; pads must not be negative"
hostile conv1d_negative_pads "attribute 'pads' entry 0 is -3; pads must not be negative"
hostile conv_zero_stride "Conv node 'hostile' (opset 13): attribute 'strides' entry 0 is 0; it must be positive"
hostile conv_huge_dilation "dilated kernel size: 9223372036854775807 \* 2 overflows int64"
hostile convtranspose_negative_pads "ConvTranspose node 'hostile' (opset 13): attribute 'pads' entry 2 is -1"
hostile convtranspose_negative_output_padding "attribute 'output_padding' entry 0 is -1; it must not be negative"
hostile maxpool_negative_pads "MaxPool node 'hostile' (opset 13): attribute 'pads' entry 0 is -1"
hostile averagepool_zero_stride "AveragePool node 'hostile' (opset 13): attribute 'strides' entry 1 is 0"
hostile lppool_zero_kernel "LpPool node 'hostile' (opset 13): attribute 'kernel_shape' entry 0 is 0"
hostile gather_elements_big_indices "input 1 (indices) shape 4x1 exceeds input 0 (data) shape 2x3 in dimension 0"
hostile scatter_elements_big_indices "input 1 (indices) shape 2x5 exceeds input 0 (data) shape 2x2 in dimension 1"
hostile gather_elements_constant_out_of_range "input 1 (indices) value 7 at position 1 is out of range"
hostile scatter_elements_constant_out_of_range "input 1 (indices) value -9 at position 0 is out of range"
hostile transpose_duplicate_perm "Transpose node 'hostile' (opset 13): attribute 'perm' lists axis 2 twice"
hostile transpose_out_of_range_perm "attribute 'perm' entry 2 is 5, out of range for rank 3"
hostile transpose_short_perm "attribute 'perm' has 2 entries for rank 3"
hostile gather_empty_axis "Gather node 'hostile' (opset 13): input 0 (data) 0x3 is empty along axis 0"
hostile gather_elements_empty_axis "input 0 (data) 2x0 is empty along axis 1"
hostile gather_nd_empty_axis "GatherND node 'hostile' (opset 13): input 0 (data) 0x3 is empty in dimension 0"
hostile gather_constant_out_of_range "input 1 (indices) value 3 is out of range for axis 1 of size 3"
hostile pad_int64_max "Pad node 'hostile' (opset 13): pads entry 1 is 9223372036854775807, beyond the tensor size limit"
hostile tile_overflow "Tile node 'hostile' (opset 13): tiled size: 2 \* 9223372036854775807 overflows int64"
hostile reshape_two_inferred "Reshape node 'hostile' (opset 13): input 1 (shape) -1x-1 has more than one -1"
hostile expand_past_limit "above the limit of 4294967296 bytes per tensor"
[ ! -e "$W/hostile.ingot" ] || { echo "FAIL: a refused model left $W/hostile.ingot" >&2; failures=$((failures + 1)); }

if [ $failures -ne 0 ]; then
  echo "$failures error-path check(s) failed" >&2
  exit 1
fi
echo "all error-path checks passed"
