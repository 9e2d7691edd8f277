#!/usr/bin/env bash
# Builds the fuzz targets, writes their seed corpora, replays tests/fuzz/regressions/,
# then runs every target for SECONDS (default 20) at the same time and prints, per
# target, the executions and what it found. Exits non-zero when anything was found
# (a crash, a sanitizer report, a failed check, an out-of-memory or a timeout) or a
# regression input fails again.
#
# Usage: tests/fuzz/run.sh [--save] [SECONDS] [TARGET...]
#   --save     copy what was found to tests/fuzz/regressions/<target>/
#   TARGET     module_fuzz, weights_fuzz, tensor_fuzz, onnx_import_fuzz (default: all)
# Environment: INGOT_FUZZ_BUILD (default build-fuzz), INGOT (the ingot binary for the
# module seeds; default build/bin/ingot when it exists), INGOT_FUZZ_RUNS (a fixed
# number of inputs per target from a fixed seed instead of SECONDS).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
save=0
seconds=20
targets=()
for arg in "$@"; do
  case "$arg" in
    --save) save=1 ;;
    ''|*[!0-9]*) targets+=("$arg") ;;
    *) seconds="$arg" ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(module_fuzz weights_fuzz tensor_fuzz onnx_import_fuzz)
out="${INGOT_FUZZ_BUILD:-$root/build-fuzz}"
ingot="${INGOT:-$root/build/bin/ingot}"

"$root/tests/fuzz/build.sh" "$out" || { echo "fuzz: build failed" >&2; exit 2; }

rm -rf "$out/corpus" "$out/findings"
/usr/bin/python3 "$root/tests/fuzz/make_seeds.py" "$out/corpus" "$root" "$ingot" || exit 2

# Sanitizer settings: every report is fatal; big single allocations are findings.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
limits=(-rss_limit_mb=2560 -malloc_limit_mb=2048 -timeout=30)

status=0
# Regression inputs first: each binary runs the files it is given and exits.
for t in "${targets[@]}"; do
  dir="$root/tests/fuzz/regressions/$t"
  [ -d "$dir" ] || continue
  files=("$dir"/*)
  [ -e "${files[0]}" ] || continue
  if "$out/$t" "${limits[@]}" "${files[@]}" >"$out/$t.regressions.log" 2>&1; then
    echo "fuzz: $t: ${#files[@]} regression inputs pass"
  else
    echo "fuzz: $t: a regression input fails again, see $out/$t.regressions.log" >&2
    tail -30 "$out/$t.regressions.log" >&2
    status=1
  fi
done

# A time budget by default; INGOT_FUZZ_RUNS=N runs N inputs per target from a fixed
# seed instead, so a run gives the same result every time (what CI uses: a
# time-bounded run could find something new on one run and not the next).
if [ -n "${INGOT_FUZZ_RUNS:-}" ]; then
  budget=(-runs="$INGOT_FUZZ_RUNS" -seed=1)
else
  budget=(-max_total_time="$seconds")
fi
pids=()
for t in "${targets[@]}"; do
  mkdir -p "$out/findings/$t"
  corpora=("$out/corpus/$t")
  [ -d "$root/tests/fuzz/seeds/$t" ] && corpora+=("$root/tests/fuzz/seeds/$t")
  "$out/$t" "${limits[@]}" "${budget[@]}" -print_final_stats=1 \
    -artifact_prefix="$out/findings/$t/" "${corpora[@]}" >"$out/$t.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

printf '%-18s %12s %8s  %s\n' target executions findings "(seconds: $seconds)"
for t in "${targets[@]}"; do
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$t.log" | grep -o '[0-9]*$' | tail -1)
  found=$(find "$out/findings/$t" -type f | wc -l)
  kinds=$(find "$out/findings/$t" -type f -printf '%f\n' | sed 's/-.*//' | sort | uniq -c | awk '{printf "%s %s ", $1, $2}')
  printf '%-18s %12s %8s  %s\n' "$t" "${execs:-?}" "$found" "$kinds"
  if [ "$found" -gt 0 ]; then
    status=1
    echo "  log: $out/$t.log" >&2
    grep -m1 -E 'ERROR: |runtime error|FUZZ_CHECK' "$out/$t.log" | sed 's/^/  /' >&2
    if [ "$save" -eq 1 ]; then
      mkdir -p "$root/tests/fuzz/regressions/$t"
      cp "$out/findings/$t"/* "$root/tests/fuzz/regressions/$t/"
      echo "  saved to tests/fuzz/regressions/$t/" >&2
    fi
  elif [ -z "$execs" ]; then
    echo "  $t did not finish, see $out/$t.log" >&2
    status=1
  fi
done
exit $status
