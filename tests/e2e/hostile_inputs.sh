#!/usr/bin/env bash
# Models and files from elsewhere must not take over the compiler or the process that
# inspects an artifact: names never become code, `inspect` runs nothing a file names,
# and a model reads no file outside its own folder.
# Usage: tests/e2e/hostile_inputs.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
INGOT="$BUILD/bin/ingot"
PY=/usr/bin/python3
W="$BUILD/e2e-hostile"
rm -rf "$W" && mkdir -p "$W"
"$PY" "$SRC/tests/e2e/make_hostile_models.py" "$W" || exit 1

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# expect STATUS PATTERN -- command...: checks the exit status and that the output matches.
expect() {
  local want=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -ne "$want" ] || ! grep -q -- "$pattern" <<<"$out"; then
    fail "'$*' exited $rc (want $want), output: $(head -3 <<<"$out")  (expected: $pattern)"
  else
    echo "ok: $(head -1 <<<"$out" | cut -c1-150)"
  fi
}

# 1. Names that carry C compute what the model says, in every output form.
M="$W/injected_names"
expect 0 "" -- "$INGOT" compile "$M.onnx" -o "$W/names.ingot"
expect 0 "match" -- "$INGOT" run "$W/names.ingot" --input=@"$M.in.npy" --expected-output=@"$M.out.npy"
expect 0 "" -- "$INGOT" compile "$M.onnx" -o "$W/names.c" --output-format=c
expect 0 "" -- "$INGOT" compile "$M.onnx" -o "$W/names_exe" --output-format=exe
expect 0 "" -- "$W/names_exe" "$M.in.npy" "$W/names_exe.out.npy"
"$PY" -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(0 if np.allclose(a, b, atol=1e-5) else 1)" \
  "$W/names_exe.out.npy" "$M.out.npy" || fail "the executable built from injected names computes something else"
# The executable reads no more of a file than the model can use: an endless input or
# weights file is refused, not read into memory.
expect 2 "longer than the" -- timeout 20 "$W/names_exe" /dev/zero
head -c 1048576 /dev/zero >"$W/long.npy"
expect 2 "longer than the" -- "$W/names_exe" "$W/long.npy"
expect 0 "" -- "$INGOT" compile "$M.onnx" -o "$W/names_exe_w" --output-format=exe --weights=external
expect 2 "longer than the" -- timeout 20 "$W/names_exe_w" --weights=/dev/zero "$M.in.npy"
expect 0 "" -- "$INGOT" compile "$M.onnx" -o "$W/names_dump.ingot" --dump-after=codegen
for f in "$W/names.c" "$W/names.h"; do
  grep -q '^#include "/etc/hostname"' "$f" && fail "$f: a node name became an #include"
  grep -q '^#define expf' "$f" && fail "$f: a node name became a #define"
done
"$INGOT" compile "$M.onnx" -o "$W/names_dump.ingot" --dump-after=codegen 2>&1 | grep -q '^#include "/etc/hostname"' &&
  fail "generated kernels: a node name became an #include"

# Output names are written into #include "..." and comments: only safe ones are taken.
expect 2 "output name" -- "$INGOT" compile "$M.onnx" -o "$W/bad\"name.c" --output-format=c
expect 2 "output name" -- "$INGOT" compile "$M.onnx" -o "$W/bad*name.c" --output-format=c
[ ! -e "$W/bad\"name.c" ] && [ ! -e "$W/bad\"name.h" ] || fail "a refused output name left files"

# 2. inspect never runs what a C file names: its ingot-build line is not a command.
cp "$W/names.c" "$W/evil.c"
marker="$W/wrapper-ran"
sed -i "s|ingot-build: .*|ingot-build: sh -c 'touch $marker' -wrapper /bin/sh,-c,touch\\\\ $marker -O3|" "$W/evil.c"
"$INGOT" inspect "$W/evil.c" --size >/dev/null 2>&1
[ ! -e "$marker" ] || fail "inspect ran a command from the file's ingot-build line"
expect 0 "C source" -- "$INGOT" inspect "$W/evil.c" --size
sed -i 's|for target [a-z0-9_-]*\.|for target ;rm -rf.|' "$W/evil.c"
expect 2 "does not know" -- "$INGOT" inspect "$W/evil.c" --size

# 3. external_data stays inside the model's folder.
D="$W/models"
expect 0 "" -- "$INGOT" compile "$D/ext_ok.onnx" -o "$W/ext_ok.ingot"
expect 0 "" -- "$INGOT" compile "$D/ext_ok_dotted.onnx" -o "$W/ext_ok_dotted.ingot"
expect 2 "absolute path" -- "$INGOT" compile "$D/ext_absolute.onnx" -o "$W/x.ingot"
expect 2 "outside the model's folder" -- "$INGOT" compile "$D/ext_parent.onnx" -o "$W/x.ingot"
expect 2 "outside the model's folder" -- "$INGOT" compile "$D/ext_symlink.onnx" -o "$W/x.ingot"
expect 2 "absolute path" -- "$INGOT" compile "$D/ext_dev_zero.onnx" -o "$W/x.ingot"
expect 2 "outside the model's folder" -- "$INGOT" compile "$D/ext_proc.onnx" -o "$W/x.ingot"
expect 2 "not a regular file" -- "$INGOT" compile "$D/ext_folder.onnx" -o "$W/x.ingot"
expect 2 "offset: 'abc' is not a non-negative integer" -- "$INGOT" compile "$D/ext_bad_offset.onnx" -o "$W/x.ingot"
expect 2 "offset: '-8' is not a non-negative integer" -- "$INGOT" compile "$D/ext_negative_offset.onnx" -o "$W/x.ingot"
expect 2 "too few for 48 bytes at offset 40" -- "$INGOT" compile "$D/ext_offset_past_end.onnx" -o "$W/x.ingot"
expect 2 "is not a non-negative integer" -- "$INGOT" compile "$D/ext_huge_offset.onnx" -o "$W/x.ingot"
expect 2 "length: '12x'" -- "$INGOT" compile "$D/ext_bad_length.onnx" -o "$W/x.ingot"
[ ! -e "$W/x.ingot" ] || fail "a refused model left $W/x.ingot"

# A module's external weights path (a plain file name beside it) is held by
# ModuleFormatTest.ExternalWeightsPathStaysBesideTheModule.

echo "$failures failures"
[ "$failures" -eq 0 ]
