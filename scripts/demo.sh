#!/usr/bin/env bash
# Compile the digits MLP with ingot and classify the 10 held-out samples.
# Needs a built tree: scripts/build.sh (build/bin/ingot).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

INGOT=build/bin/ingot
MODEL=examples/digits/digits_mlp.onnx
SAMPLES=examples/digits/samples
OUT=build/demo
ARTIFACT=$OUT/digits_mlp.ingot
PY=/usr/bin/python3

if [ ! -x "$INGOT" ]; then
  echo "demo: $INGOT not found; run scripts/build.sh first" >&2
  exit 2
fi

mkdir -p "$OUT"
echo "+ $INGOT compile $MODEL -o $ARTIFACT"
"$INGOT" compile "$MODEL" -o "$ARTIFACT"
echo "artifact: $ARTIFACT ($(stat -c %s "$ARTIFACT") bytes)"

names=()
while read -r file label; do
  [ -n "${file:-}" ] || continue
  name=${file%.npy}              # sample_K
  k=${name#sample_}
  rm -f "$OUT/out_$k.npy"
  if ! "$INGOT" run "$ARTIFACT" --input=@"$SAMPLES/$file" --output=@"$OUT/out_$k.npy"; then
    echo "demo: ingot run failed on $file" >&2
    exit 1
  fi
  names+=("$k:$label")
done < "$SAMPLES/labels.txt"

"$PY" - "$OUT" "${names[@]}" <<'PYEOF'
import sys
import numpy as np

out_dir, entries = sys.argv[1], sys.argv[2:]
correct = 0
for entry in entries:
    k, label = entry.split(":")
    pred = int(np.argmax(np.load(f"{out_dir}/out_{k}.npy")))
    correct += pred == int(label)
    print(f"sample_{k}: predicted {pred}, label {label}")
print(f"accuracy: {correct}/{len(entries)}")
PYEOF
