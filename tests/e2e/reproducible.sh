#!/usr/bin/env bash
# Artifacts are reproducible: the same model compiled twice, from two working
# directories, gives byte-identical files in every output form.
# Usage: tests/e2e/reproducible.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
INGOT="$BUILD/bin/ingot"
unset INGOT_CACHE_DIR   # every compile here runs the C compiler
W="$BUILD/e2e-reproducible"
rm -rf "$W" && mkdir -p "$W/a" "$W/b/deeper"
# A small CNN with a residual, so the arena holds several values that share space.
/usr/bin/python3 - "$W/cnn.onnx" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.RandomState(0)
w = lambda name, *shape: numpy_helper.from_array(rng.randn(*shape).astype(np.float32) * 0.2, name)
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"]),
    helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=2),
    helper.make_node("Add", ["c2", "r1"], ["s"]),
    helper.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Flatten", ["p"], ["f"]),
    helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
]
g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                      [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 8, 4, 3, 3), w("b2", 8), w("w3", 10, 288), w("b3", 10)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
MODEL="$W/cnn.onnx"

failures=0
forms=("module:m.ingot" "c:m.c" "static-lib:m.a" "exe:m")
for model in "$MODEL" "$SRC/examples/digits/digits_mlp.onnx"; do
  for entry in "${forms[@]}"; do
    form=${entry%%:*} out=${entry#*:}
    for weights in embed external; do
      rm -rf "$W/a"/* "$W/b/deeper"/*
      (cd "$W/a" && "$INGOT" compile "$model" -o "$out" --output-format="$form" --weights="$weights") || {
        echo "FAIL: compile $form $weights in a" >&2; failures=$((failures + 1)); continue; }
      (cd "$W/b/deeper" && "$INGOT" compile "$model" -o "$out" --output-format="$form" --weights="$weights") || {
        echo "FAIL: compile $form $weights in b" >&2; failures=$((failures + 1)); continue; }
      for f in "$W/a"/*; do
        name=$(basename "$f")
        if ! cmp -s "$f" "$W/b/deeper/$name"; then
          echo "FAIL: $(basename "$model") --output-format=$form --weights=$weights: $name differs between two compiles" >&2
          failures=$((failures + 1))
        else
          echo "ok: $(basename "$model") $form $weights $name"
        fi
      done
    done
  done
done
echo "$failures failures"
[ "$failures" -eq 0 ]
