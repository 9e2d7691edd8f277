#!/usr/bin/env bash
# Side-by-side benchmark of ingot and ONNX Runtime, one thread each.
#
#   bench/run.sh [--models a,b] [--rounds N] [--iterations N] [--budget S] [--peak GFLOPS]
#
#   --models      comma-separated subset of mlp, cnn_small, kws_dscnn, tiny_transformer,
#                 mobilenet_v2, squeezenet1_1, resnet18, gemm1024 (default: all); the
#                 `null` model is always measured (it gives the per-call floors)
#   --rounds      alternating rounds per model and engine (default 7)
#   --iterations  timed iterations per engine and round (default: sized per model so that
#                 each engine's round takes about --budget seconds, at least 5 iterations)
#   --budget      seconds per engine and round when --iterations is not given (default 1.5)
#   --peak        use this single-core peak in GFLOP/s instead of measuring it
#
# Set-up it does when needed: installs onnxruntime-node into bench/node_modules, builds
# ingot (scripts/build.sh) when build/bin/ingot is missing, exports the models into
# bench/models (cached), builds and runs the peak probe. Then compiles every model with
# `build/bin/ingot compile`, measures, prints the table and writes bench/RESULTS.md and
# bench/results.json. Exit status: 0 done, 1 done but a model failed or outputs differ,
# 2 set-up or usage error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=/usr/bin/python3
COMMAND="bench/run.sh${*:+ $*}"
ARGS=()
PEAK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --models|--rounds|--iterations|--budget)
      [ $# -ge 2 ] || { echo "bench/run.sh: $1 needs a value" >&2; exit 2; }
      ARGS+=("$1" "$2"); shift 2 ;;
    --models=*|--rounds=*|--iterations=*|--budget=*) ARGS+=("$1"); shift ;;
    --peak) [ $# -ge 2 ] || { echo "bench/run.sh: --peak needs a value" >&2; exit 2; }
      PEAK=$2; shift 2 ;;
    --peak=*) PEAK=${1#--peak=}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

step() { echo "== $*" >&2; }

MODELS=$("$PY" bench/run_bench.py "${ARGS[@]}" --check-args)

for tool in node npm cc "$PY"; do
  command -v "$tool" >/dev/null || { echo "bench/run.sh: '$tool' not found" >&2; exit 2; }
done

if [ ! -f bench/node_modules/onnxruntime-node/package.json ]; then
  step "installing onnxruntime-node into bench/node_modules"
  (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2)
fi

if [ ! -x build/bin/ingot ]; then
  step "building ingot (scripts/build.sh)"
  scripts/build.sh >&2
fi

step "exporting models into bench/models (cached)"
"$PY" bench/export_models.py --out bench/models --only "$MODELS" >&2

mkdir -p bench/work
if [ ! -x bench/work/peak ] || [ bench/peak.c -nt bench/work/peak ]; then
  step "building the peak probe"
  cc -O2 -o bench/work/peak bench/peak.c
fi
PEAK_JSON="{}"
if [ -z "$PEAK" ]; then
  step "measuring the single-core fp32 FMA peak"
  bench/work/peak > bench/work/peak.txt
  grep -v '^JSON ' bench/work/peak.txt >&2
  PEAK_JSON=$(sed -n 's/^JSON //p' bench/work/peak.txt)
fi

step "measuring"
exec "$PY" bench/run_bench.py "${ARGS[@]}" ${PEAK:+--peak "$PEAK"} \
  --peak-json "$PEAK_JSON" --command "$COMMAND"
