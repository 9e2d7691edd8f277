#!/usr/bin/python3
"""Correctness check on a subset of the benchmarks, no ONNX Runtime needed.

    /usr/bin/python3 bench/check_subset.py [--ingot build/bin/ingot] [--work DIR] [--jobs 2]

Generates the sweep's CI cases (make_sweep.py --set ci, about 20 small layers), a few
small zoo models and one small seeded random network per family into DIR (default:
build/bench-check), compiles each with `ingot compile` and runs it with `ingot run --expected-output` against PyTorch's output, with
atol = 1e-4 + 1e-3 * max(1, max|reference|) and rtol = 1e-3. Prints one line per model;
exit status 0 when all match, 1 otherwise. Registered as a test by tests/e2e/bench_subset.sh.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PY = sys.executable or "/usr/bin/python3"
ZOO_MODELS = ["kws_tcresnet", "kws_lstm", "gru_bi_encoder", "bert_mini"]
# Seeded random networks (random/export_random.py), one small draw per family.
RANDOM_MODELS = ["rcnn_4", "rrnn_2", "rconv1d_3", "rattn_2", "runet_4"]
COMPILE_TIMEOUT_S = 120


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ingot", default=os.path.join(ROOT, "build", "bin", "ingot"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-check"))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    sweep_dir, zoo_dir = os.path.join(args.work, "sweep"), os.path.join(args.work, "zoo")
    random_dir = os.path.join(args.work, "random")
    t0 = time.time()
    for cmd in ([PY, os.path.join(BENCH, "sweep", "make_sweep.py"), "--set", "ci", "--out", sweep_dir],
                [PY, os.path.join(BENCH, "zoo", "export_zoo.py"), "--only", ",".join(ZOO_MODELS), "--out", zoo_dir],
                [PY, os.path.join(BENCH, "random", "export_random.py"), "--only", ",".join(RANDOM_MODELS),
                 "--out", random_dir]):
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            print("FAIL: " + " ".join(cmd))
            return 1
    models = []
    for folder, names in ((sweep_dir, None), (zoo_dir, ZOO_MODELS), (random_dir, RANDOM_MODELS)):
        with open(os.path.join(folder, "manifest.json")) as f:
            man = json.load(f)
        for name in names or sorted(n for n, v in man.items() if v.get("ci")):
            models.append((folder, name, man[name]["out_absmax"]))
    print(f"generated {len(models)} models ({time.time() - t0:.0f} s)", flush=True)

    def check(item):
        folder, name, absmax = item
        base = os.path.join(folder, name)
        module = os.path.join(args.work, "modules", name + ".ingot")
        os.makedirs(os.path.dirname(module), exist_ok=True)
        try:
            p = subprocess.run([args.ingot, "compile", base + ".onnx", "-o", module], capture_output=True,
                               text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return name, False, f"compile timed out after {COMPILE_TIMEOUT_S} s"
        if p.returncode != 0:
            return name, False, "compile failed: " + (p.stderr.strip().splitlines() or [""])[0][:200]
        atol = 1e-4 + 1e-3 * max(1.0, absmax)
        p = subprocess.run([args.ingot, "run", module, "--input=@" + base + ".in.npy", "--no-print",
                            "--expected-output=@" + base + ".out.npy", f"--atol={atol:g}", "--rtol=1e-3"],
                           capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        msg = (p.stdout + p.stderr).strip().splitlines()
        return name, p.returncode == 0, (msg[-1] if msg else "")[:200]

    failures = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        for name, ok, msg in ex.map(check, models):
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'}: {name}: {msg}", flush=True)
    print(f"{len(models) - failures}/{len(models)} match ({time.time() - t0:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
