#!/usr/bin/env python3
"""Where a model loses time against ONNX Runtime, step by step, in the model.

    bench/compare_steps.py MODEL.onnx [--input X.npy] [--iterations N] [--top N]
                           [--ingot PATH] [--json OUT]

Compiles MODEL with ingot, times every plan step (`ingot bench --per-step --json`), has
ONNX Runtime profile its own nodes in the same model (bench/ort_profile.js: its fusions
and layout changes applied, one thread) and matches the two by the ONNX nodes a step
covers: an ingot step's label names the nodes it fused, and it is compared with the
ORT nodes that cover them. Prints the steps sorted by how much slower ingot is, with both times.

Per-layer models (bench/run.sh --sweep) show a kernel on its own, hot in cache and, for
ORT, without the channel-blocked layout it picks for whole CNNs; this shows the layers
as they run inside the model, caches and layouts included. The times are each engine's
own profile (ORT's profiler and `--per-step` both add a little per step): use them to
rank layers, and bench/run.sh for end-to-end ratios. An ORT node that matches no ingot
step (its own layout reorders, or ops it did not fuse where ingot did) is listed apart.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--input", help="input .npy (default: MODEL with .in.npy)")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--top", type=int, default=25, help="steps to print (default 25)")
    ap.add_argument("--ingot", default=os.path.join(HERE, "..", "build", "bin", "ingot"))
    ap.add_argument("--json", help="write every matched step here")
    args = ap.parse_args()
    import onnx  # Debian's python3-onnx

    if not os.path.isfile(args.model):
        sys.exit(f"compare_steps: no model file '{args.model}'")
    inp = args.input or args.model[:-5] + ".in.npy"
    if not os.path.isfile(inp):
        sys.exit(f"compare_steps: no input file '{inp}' (give --input)")
    graph = onnx.load(args.model, load_external_data=False).graph
    output_of = {n.name: n.output[0] for n in graph.node if n.name and n.output}

    with tempfile.TemporaryDirectory() as tmp:
        module = os.path.join(tmp, "model.ingot")
        run = subprocess.run([args.ingot, "compile", args.model, "-o", module], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"compare_steps: ingot compile failed: {run.stderr.strip()}")
        run = subprocess.run([args.ingot, "bench", module, f"--input=@{inp}", "--per-step", "--iterations",
                              str(args.iterations), "--json"], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"compare_steps: ingot bench failed: {run.stderr.strip()}")
        steps = json.loads(run.stdout)["per_step"]["steps"]
    run = subprocess.run(["node", os.path.join(HERE, "ort_profile.js"), "--model", args.model, "--input", inp,
                          "--iterations", str(args.iterations)], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"compare_steps: ORT profile failed: {run.stderr.strip().splitlines()[-1]}")
    ort = json.loads(run.stdout)
    ort_by_output = {name[:-len("_nchwc")] if name.endswith("_nchwc") else name: name for name in ort}

    # Every ORT node that covers one of the ONNX nodes an ingot step fused: ORT names a
    # fused node after its last output ("_nchwc" when it changed the layout), or keeps
    # the first node's name as a prefix ("/x/MatMul/MatMulAddFusion"); an op ORT left
    # unfused is a node of its own. The step is compared with their sum.
    used, rows = set(), []
    for s in steps:
        label = s.get("label", "")
        matches = []
        for node in label.split(" + "):
            for key in (output_of.get(node, node), node):
                name = ort_by_output.get(key)
                if name and name not in used:
                    matches.append(name)
                    used.add(name)
            for name in ort:
                if name.startswith(node + "/") and name not in used:
                    matches.append(name)
                    used.add(name)
        rows.append({"step": s["step"], "kernel": s.get("kernel", ""), "label": label, "ingot_us": s["us"],
                     "ort_nodes": matches, "ort_us": sum(ort[m]["us"] for m in matches) if matches else None})

    ingot_total = sum(r["ingot_us"] for r in rows)
    ort_total = sum(v["us"] for v in ort.values())
    unmatched = {k: v for k, v in ort.items() if k not in used}
    print(f"{os.path.basename(args.model)}: ingot steps {ingot_total:.0f} us, ORT nodes {ort_total:.0f} us "
          f"({len(rows)} steps, {len(ort)} ORT nodes, {len(unmatched)} of them unmatched: "
          f"{sum(v['us'] for v in unmatched.values()):.0f} us)")
    print(f"{'ingot us':>9} {'ORT us':>9} {'diff':>8}  {'step':>4}  kernel / label")
    rows.sort(key=lambda r: -(r["ingot_us"] - (r["ort_us"] or 0.0)))
    for r in rows[:args.top]:
        ort_us = f"{r['ort_us']:9.1f}" if r["ort_us"] is not None else f"{'-':>9}"
        print(f"{r['ingot_us']:9.1f} {ort_us} {r['ingot_us'] - (r['ort_us'] or 0.0):+8.1f}  {r['step']:4d}  "
              f"{r['kernel']}  ({r['label'][:70]})")
    if unmatched:
        print("ORT nodes with no ingot step:")
        for name, v in sorted(unmatched.items(), key=lambda kv: -kv[1]["us"])[:10]:
            print(f"  {v['us']:9.1f} us  {v['op']}  {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "steps": rows, "ort_unmatched": unmatched}, f, indent=1)


if __name__ == "__main__":
    main()
