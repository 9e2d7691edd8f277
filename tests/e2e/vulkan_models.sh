#!/usr/bin/env bash
# Vulkan end to end: the seven benchmark models compiled with --target=vulkan and run on
# the Vulkan device (Mesa's lavapipe in CI) under the Khronos validation layer, each
# compared with PyTorch's output; any validation error fails. Also: one submit per
# invoke, fewer barriers than dispatches where the plan has independent steps, the
# shared-memory-only target (vulkan-basic), a perturbed reference (exit 1), an op
# without a Vulkan lowering (a compile error naming it) and a device index out of range.
# Without a Vulkan device the test is skipped (exit 77) and says why.
# Usage: tests/e2e/vulkan_models.sh BUILD_DIR SOURCE_DIR [model ...]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
shift 2
INGOT="$BUILD/bin/ingot"
PY=/usr/bin/python3
WORK="$BUILD/e2e-vulkan"
MODELS_DIR="$BUILD/vulkan-models"
mkdir -p "$WORK" "$MODELS_DIR"
started=$(date +%s)

if ! "$INGOT" devices > "$WORK/devices.txt" 2>&1; then
  echo "SKIP: no Vulkan device: $(tail -1 "$WORK/devices.txt")"
  exit 77
fi
cat "$WORK/devices.txt"
layer=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
if [ ! -f "$layer" ]; then
  echo "FAIL: the Vulkan validation layer is not installed ($layer; Debian: vulkan-validationlayers)" >&2
  exit 1
fi
export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation

models=("$@")
[ ${#models[@]} -gt 0 ] || models=(mlp cnn_small kws_dscnn tiny_transformer mobilenet_v2 squeezenet1_1 resnet18)
"$PY" "$SRC/bench/export_models.py" --out "$MODELS_DIR" --only "$(IFS=,; echo "${models[*]}")" > "$WORK/export.log" 2>&1 ||
  { cat "$WORK/export.log" >&2; exit 1; }

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Runs MODULE on MODEL's input against its reference; fails on a mismatch or on any
# validation message of severity error.
check_run() {
  local m=$1 mod=$2 atol
  atol=$("$PY" -c "import sys, numpy as np; print('%.3g' % max(1e-6, 1e-4 * float(np.abs(np.load(sys.argv[1])).max())))" \
      "$MODELS_DIR/$m.out.npy")
  if ! "$INGOT" run "$mod" --input=@"$MODELS_DIR/$m.in.npy" --expected-output=@"$MODELS_DIR/$m.out.npy" \
      --atol="$atol" --rtol=1e-3 --no-print > "$WORK/$m.run.txt" 2> "$WORK/$m.err.txt"; then
    cat "$WORK/$m.run.txt" "$WORK/$m.err.txt" >&2
    fail "$m ($mod) does not match the torch reference on Vulkan"
    return
  fi
  if grep -q "validation error" "$WORK/$m.err.txt"; then
    cat "$WORK/$m.err.txt" >&2
    fail "$m: the validation layer reported errors"
  fi
}

printf '%-18s %-6s %8s %9s %10s %10s %14s %14s\n' model match submits barriers dispatches pipelines "device ms" "host us/inv"
for m in "${models[@]}"; do
  mod="$WORK/$m.ingot"
  rm -f "$mod"
  if ! "$INGOT" compile "$MODELS_DIR/$m.onnx" -o "$mod" --target=vulkan > "$WORK/$m.compile.txt" 2>&1; then
    cat "$WORK/$m.compile.txt" >&2
    fail "$m does not compile for Vulkan"
    continue
  fi
  before=$failures
  check_run "$m" "$mod"
  match=yes
  [ "$failures" -eq "$before" ] || match=no
  "$INGOT" inspect "$mod" --plan --json > "$WORK/$m.inspect.json"
  "$INGOT" bench "$mod" --input=@"$MODELS_DIR/$m.in.npy" --iterations=2 --warmup=0 --json > "$WORK/$m.bench.json" 2> "$WORK/$m.bench.err" ||
    { cat "$WORK/$m.bench.err" >&2; fail "$m: bench failed"; continue; }
  "$PY" - "$m" "$match" "$WORK/$m.inspect.json" "$WORK/$m.bench.json" <<'PYEOF' || fail "$m: plan counts"
import json, sys
name, match, inspect, bench = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
d, b = inspect["device"], bench["device"]
print("%-18s %-6s %8d %9d %10d %10d %14.1f %14.1f" % (name, match, d["submits_per_invoke"], d["barriers"], d["dispatches"],
      d["pipelines"], b.get("device_us_median", -1) / 1000, b.get("host_overhead_us_median", -1)))
ok = d["submits_per_invoke"] == 1 and b["submits_per_invoke"] == 1 and b["barriers"] == d["barriers"]
ok = ok and d["barriers"] < d["dispatches"] + d["copies"] and d["pipelines"] <= d["dispatches"]
sys.exit(0 if ok else 1)
PYEOF
done

# Independent steps share a barrier interval: SqueezeNet's expand branches.
if [ -f "$WORK/squeezenet1_1.inspect.json" ]; then
  "$PY" -c "import json,sys; d=json.load(open(sys.argv[1]))['device']; sys.exit(0 if d['barriers'] < d['dispatches'] - 1 else 1)" \
      "$WORK/squeezenet1_1.inspect.json" || fail "squeezenet1_1: a barrier between every pair of dispatches"
fi

# Reductions through shared memory only (devices without subgroup arithmetic).
for m in kws_dscnn tiny_transformer; do
  case " ${models[*]} " in *" $m "*) ;; *) continue ;; esac
  "$INGOT" compile "$MODELS_DIR/$m.onnx" -o "$WORK/$m.basic.ingot" --target=vulkan-basic || { fail "$m: vulkan-basic"; continue; }
  "$INGOT" inspect "$WORK/$m.basic.ingot" --plan > "$WORK/$m.basic.inspect.txt"
  grep -q "needs: Vulkan 1.1 core only" "$WORK/$m.basic.inspect.txt" || fail "$m: vulkan-basic needs subgroups"
  check_run "$m" "$WORK/$m.basic.ingot"
done

# The same module bytes from every compile; --strip and --weights=external work as on the CPU.
m=${models[0]}
"$INGOT" compile "$MODELS_DIR/$m.onnx" -o "$WORK/$m.again.ingot" --target=vulkan > /dev/null
cmp -s "$WORK/$m.ingot" "$WORK/$m.again.ingot" || fail "$m: two Vulkan compiles differ"
"$INGOT" compile "$MODELS_DIR/$m.onnx" -o "$WORK/$m.ext.ingot" --target=vulkan --strip --weights=external > /dev/null ||
  fail "$m: --strip --weights=external"
[ -f "$WORK/$m.ext.ingot.weights" ] || fail "$m: no external weights file"
check_run "$m" "$WORK/$m.ext.ingot"
set +e
msg=$("$INGOT" compile "$MODELS_DIR/$m.onnx" -o "$WORK/$m.c" --target=vulkan --output-format=c 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "compiles to a module only" <<<"$msg" || fail "$m: --output-format=c for vulkan: exit $rc, '$msg'"

# A perturbed reference must fail with exit status 1.
m=${models[0]}
"$PY" -c "import sys, numpy as np; r=np.load(sys.argv[1]); r.flat[0] += 1.0 + abs(r.flat[0]); np.save(sys.argv[2], r)" \
    "$MODELS_DIR/$m.out.npy" "$WORK/$m.bad.npy"
set +e
"$INGOT" run "$WORK/$m.ingot" --input=@"$MODELS_DIR/$m.in.npy" --expected-output=@"$WORK/$m.bad.npy" --no-print > /dev/null 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || fail "$m: a perturbed reference exited $rc, expected 1"

# An op without a Vulkan lowering: a one-line compile error naming the op and node.
"$PY" - "$WORK/lrn.onnx" <<'PYEOF'
import sys, onnx
from onnx import helper, TensorProto
node = helper.make_node("LRN", ["x"], ["y"], name="the_lrn", size=3)
g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3, 3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
rm -f "$WORK/lrn.ingot"
set +e
msg=$("$INGOT" compile "$WORK/lrn.onnx" -o "$WORK/lrn.ingot" --target=vulkan 2>&1)
rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "LRN node 'the_lrn'.*op LRN has no Vulkan lowering" <<<"$msg" || [ -e "$WORK/lrn.ingot" ]; then
  fail "an op without a Vulkan lowering: exit $rc, '$msg'"
fi

# A device without what the shaders need is refused at load with one line naming it
# (the HAL's test hook hides subgroup arithmetic); the shared-memory build still runs.
set +e
msg=$(INGOT_VULKAN_HIDE=subgroup-arithmetic "$INGOT" run "$WORK/$m.ingot" --input=@"$MODELS_DIR/$m.in.npy" --no-print 2>&1)
rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "lacks subgroup arithmetic in compute shaders, which this module's shaders need" <<<"$msg"; then
  fail "a device without subgroup arithmetic: exit $rc, '$msg'"
fi
if [ -f "$WORK/kws_dscnn.basic.ingot" ]; then
  INGOT_VULKAN_HIDE=subgroup-arithmetic check_run kws_dscnn "$WORK/kws_dscnn.basic.ingot"
fi

# A device index that does not exist: one line, exit 2.
set +e
msg=$("$INGOT" run "$WORK/$m.ingot" --input=@"$MODELS_DIR/$m.in.npy" --device=99 --no-print 2>&1)
rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "device=99: there" <<<"$msg"; then fail "--device=99: exit $rc, '$msg'"; fi

echo "vulkan e2e: $(( $(date +%s) - started )) s"
if [ $failures -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "all Vulkan checks passed"
