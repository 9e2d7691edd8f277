#!/usr/bin/env bash
# Side-by-side benchmark of ingot and ONNX Runtime, one thread each.
#
#   bench/run.sh [--models a,b] [--rounds N] [--iterations N] [--budget S] [--peak GFLOPS] [--threads 1,2]
#   bench/run.sh --zoo [--models a,b] [--rounds N] [--iterations N] [--budget S] [--peak GFLOPS]
#   bench/run.sh --random [--models rcnn_7,rrnn_12] [--rounds N] [--iterations N] [--budget S]
#   bench/run.sh --sweep [--quick] [--only a,b] [--category c] [--rounds N] [--budget S]
#                [--jobs N] [--compile-timeout S] [--peak GFLOPS]
#
#   (default)     the seven benchmark models and gemm1024 -> bench/RESULTS.md, results.json
#   --zoo         the model zoo (bench/zoo) -> bench/ZOO.md, zoo.json (default --rounds 5
#                 --budget 1.0)
#   --random      seeded random networks (bench/random) -> bench/RANDOM.md, random.json
#                 (as --zoo); --models takes any FAMILY_SEED name, so new seeds give
#                 held-out models (families: rcnn, rrnn, rconv1d, rattn)
#   --sweep       the layer sweep (bench/sweep) -> bench/SWEEP.md, sweep.json; --quick: the
#                 fixed ~40-case subset -> bench/SWEEP_QUICK.md, sweep_quick.json
#   --models      comma-separated subset of the suite's models (default: all); the
#                 `null` model is always measured (it gives the per-call floors)
#   --rounds      alternating rounds per model and engine (default 7; sweep 5, quick 3)
#   --iterations  timed iterations per engine and round (default: sized per model so that
#                 each engine's round takes about --budget seconds, at least 5 iterations)
#   --budget      seconds per engine and round when --iterations is not given (default 1.5;
#                 sweep 0.25, quick 0.15)
#   --peak        use this single-core peak in GFLOP/s instead of measuring it
#   --threads     thread counts (default 1,2): ingot compiled with --workers=N next to ORT with
#                 N intra-op threads; the table gains N-thread columns and speed-ups, and
#                 beside ingot's speed-up the host's ceiling: N copies of the one-worker
#                 plan pinned one per CPU, at once, each round
#   --no-host-ceiling  skip that ceiling (a round then takes one engine-budget less)
#   sweep only: --only / --category select cases, --jobs parallel compiles (default 2),
#   --compile-timeout seconds per compile (default 120)
#
# Set-up it does when needed: installs onnxruntime-node into bench/node_modules, builds
# ingot (scripts/build.sh) when build/bin/ingot is missing, exports the models into
# bench/models, bench/zoo/models or bench/sweep/cases (cached), builds and runs the peak
# probe (and for the sweep the bandwidth probe; otherwise the CPU-distance probe, which
# runs around every round on several threads). Then compiles every model with
# `build/bin/ingot compile`, measures, prints the table and writes the results. Exit
# status: 0 done, 1 done but a model failed or outputs differ, 2 set-up or usage error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=/usr/bin/python3
COMMAND="bench/run.sh${*:+ $*}"
MODE=models
ARGS=()
PEAK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --zoo) MODE=zoo; shift ;;
    --random) MODE=random; shift ;;
    --sweep) MODE=sweep; shift ;;
    --quick|--no-host-ceiling) ARGS+=("$1"); shift ;;
    --models|--rounds|--iterations|--budget|--only|--category|--jobs|--compile-timeout|--threads)
      [ $# -ge 2 ] || { echo "bench/run.sh: $1 needs a value" >&2; exit 2; }
      ARGS+=("$1" "$2"); shift 2 ;;
    --models=*|--rounds=*|--iterations=*|--budget=*|--only=*|--category=*|--jobs=*|--compile-timeout=*|--threads=*)
      ARGS+=("$1"); shift ;;
    --peak) [ $# -ge 2 ] || { echo "bench/run.sh: --peak needs a value" >&2; exit 2; }
      PEAK=$2; shift 2 ;;
    --peak=*) PEAK=${1#--peak=}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

step() { echo "== $*" >&2; }

case $MODE in
  models) RUNNER=(bench/run_bench.py) ;;
  zoo) RUNNER=(bench/run_bench.py --suite zoo)
    [[ " ${ARGS[*]} " == *" --rounds"* ]] || ARGS+=(--rounds 5)
    [[ " ${ARGS[*]} " == *" --budget"* ]] || ARGS+=(--budget 1.0) ;;
  random) RUNNER=(bench/run_bench.py --suite random)
    [[ " ${ARGS[*]} " == *" --rounds"* ]] || ARGS+=(--rounds 5)
    [[ " ${ARGS[*]} " == *" --budget"* ]] || ARGS+=(--budget 1.0) ;;
  sweep) RUNNER=(bench/sweep/run_sweep.py) ;;
esac
# Validates the arguments; prints what to export.
SELECTION=$("$PY" "${RUNNER[@]}" "${ARGS[@]}" --check-args)

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

case $MODE in
  models) step "exporting models into bench/models (cached)"
    "$PY" bench/export_models.py --out bench/models --only "$SELECTION" >&2 ;;
  zoo) step "exporting models into bench/zoo/models (cached)"
    "$PY" bench/export_models.py --out bench/models --only null >&2
    "$PY" bench/zoo/export_zoo.py --out bench/zoo/models --only "${SELECTION#null,}" >&2 ;;
  random) step "exporting seeded random networks into bench/random/models (cached)"
    "$PY" bench/export_models.py --out bench/models --only null >&2
    "$PY" bench/random/export_random.py --out bench/random/models --only "${SELECTION#null,}" >&2 ;;
  sweep) step "generating the sweep into bench/sweep/cases (cached)"
    "$PY" bench/export_models.py --out bench/models --only null >&2
    "$PY" bench/sweep/make_sweep.py --out bench/sweep/cases "$SELECTION" >&2 ;;
esac

mkdir -p bench/work
if [ ! -x bench/work/peak ] || [ bench/peak.c -nt bench/work/peak ]; then
  step "building the peak probe"
  cc -O2 -o bench/work/peak bench/peak.c
fi
if [ $MODE != sweep ] && { [ ! -x bench/work/handoff ] || [ bench/handoff.c -nt bench/work/handoff ]; }; then
  step "building the CPU-distance probe"
  cc -O2 -pthread -o bench/work/handoff bench/handoff.c
fi
PEAK_JSON="{}"
if [ -z "$PEAK" ]; then
  step "measuring the single-core fp32 FMA peak"
  bench/work/peak > bench/work/peak.txt
  grep -v '^JSON ' bench/work/peak.txt >&2
  PEAK_JSON=$(sed -n 's/^JSON //p' bench/work/peak.txt)
fi

BW_ARGS=()
if [ $MODE = sweep ]; then
  if [ ! -x bench/work/bandwidth ] || [ bench/bandwidth.c -nt bench/work/bandwidth ]; then
    step "building the bandwidth probe"
    cc -O2 -o bench/work/bandwidth bench/bandwidth.c
  fi
  step "measuring the single-core copy bandwidth"
  bench/work/bandwidth > bench/work/bandwidth.txt
  grep -v '^JSON ' bench/work/bandwidth.txt >&2
  BW_ARGS=(--bw-json "$(sed -n 's/^JSON //p' bench/work/bandwidth.txt)")
fi

step "measuring"
exec "$PY" "${RUNNER[@]}" "${ARGS[@]}" ${PEAK:+--peak "$PEAK"} \
  --peak-json "$PEAK_JSON" "${BW_ARGS[@]}" --command "$COMMAND"
