#!/usr/bin/python3
"""The layer sweep, measured side by side with ONNX Runtime.

Called by `bench/run.sh --sweep [--quick]` after set-up (npm packages, ingot build,
case generation, peak and bandwidth probes); see bench/README.md. Compiles every case
with `ingot compile` (in parallel, with a timeout), then for each case: checks ingot's
and ORT's outputs against the PyTorch reference, then alternates `ingot bench` and ORT
(one long-lived `ort_bench.js --serve` process) for --rounds rounds and takes medians.
Writes bench/SWEEP.md (worst ratio first) and bench/sweep.json; with --quick,
bench/SWEEP_QUICK.md and bench/sweep_quick.json.
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import run_bench as rb  # noqa: E402  (shared engine calls, statistics, machine info)

CASES = os.path.join(HERE, "cases")
WORK = os.path.join(HERE, "work")
NULL_MODEL = os.path.join(rb.MODELS_DIR, "null")


def log(msg):
    rb.log(msg)


class OrtServer:
    """One `ort_bench.js --serve` process: a request per measurement, session kept open."""

    def __init__(self):
        self.proc = subprocess.Popen(["node", rb.ORT_JS, "--serve", "--threads", "1"], cwd=rb.ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def bench(self, model, inp, iterations, warmup, output=None):
        req = {"model": model, "input": inp, "iterations": iterations, "warmup": warmup}
        if output:
            req["output"] = rb.fresh(output)
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise rb.EngineError("ORT server exited")
        r = json.loads(line)
        if "error" in r:
            raise rb.EngineError("ORT failed: " + r["error"][:200])
        return {k: r[k] for k in ("min", "median", "p90", "p99", "max", "mean", "stddev")}, r

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def compile_all(names, args):
    """name -> (module path or None, seconds, error or None), compiled `--jobs` at a time."""
    def one(name):
        try:
            mod, dt = rb.ingot_compile(os.path.join(CASES, name + ".onnx"),
                                       os.path.join(WORK, "ingot", name + ".ingot"), timeout=args.compile_timeout)
            return name, (mod, dt, None)
        except rb.EngineError as e:
            return name, (None, None, str(e))
    out = {}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        for i, (name, res) in enumerate(ex.map(one, names)):
            out[name] = res
            if res[2]:
                log(f"[{name}] ingot {res[2]}")
            if (i + 1) % 50 == 0:
                log(f"compiled {i + 1}/{len(names)} ({time.time() - t0:.0f} s)")
    log(f"compiled {len(names)} cases in {time.time() - t0:.0f} s")
    return out


def rounds_of(ort, module, onnx_path, inp, est, args, errors):
    """Alternating rounds; returns per-engine lists of round statistics."""
    engines = [e for e in ("ingot", "ort") if e in est]
    plan = {e: rb.sizes(est[e], args) for e in engines}
    rounds = {e: [] for e in engines}
    for r in range(args.rounds):
        for e in (engines if r % 2 == 0 else engines[::-1]):
            n, w = plan[e]
            try:
                stats = rb.ingot_bench(module, inp, n, w) if e == "ingot" else ort.bench(onnx_path, inp, n, w)[0]
            except rb.EngineError as err:
                errors.append(f"{e} round {r + 1}: {err}")
                continue
            stats["iterations"] = n
            rounds[e].append(stats)
            plan[e] = rb.sizes(stats["mean"], args)
    return rounds


def measure_case(name, info, compiled, ort, args):
    res = {"case": name, "category": info["category"], "gflops": info["gflops"], "mbytes": info["mbytes"],
           "errors": []}
    onnx_path, inp, ref_path = (os.path.join(CASES, name + e) for e in (".onnx", ".in.npy", ".out.npy"))
    ref = np.load(ref_path)
    module, compile_s, err = compiled
    res["compile_s"] = compile_s and round(compile_s, 2)
    if err:
        res["status"] = "compile timeout" if "timed out" in err else "compile failed"
        res["errors"].append("ingot " + err)
    est, y_ingot, y_ort = {}, None, None
    if module:
        try:
            y_ingot = rb.ingot_output(module, inp, os.path.join(WORK, "out", name + ".ingot.npy"))
            est["ingot"] = rb.ingot_bench(module, inp, 3, 1)["median"]
        except rb.EngineError as e:
            res["status"] = "run failed"
            res["errors"].append("ingot " + str(e))
    try:
        ort_out = os.path.join(WORK, "out", name + ".ort.npy")
        est["ort"] = ort.bench(onnx_path, inp, 3, 1, output=ort_out)[0]["median"]
        y_ort = np.load(ort_out)
    except rb.EngineError as e:
        res.setdefault("status", "ORT failed")
        res["errors"].append(str(e))
    res["ref_absmax"] = float(np.abs(ref).max()) if ref.size else 0.0
    tol = 1e-4 + 1e-3 * max(1.0, res["ref_absmax"])
    res["tolerance"] = tol
    res["ingot_vs_ref"] = rb.max_abs_diff(y_ingot, ref)
    res["ort_vs_ref"] = rb.max_abs_diff(y_ort, ref)
    res["ingot_vs_ort"] = rb.max_abs_diff(y_ingot, y_ort)
    if res["ingot_vs_ref"] is not None and res["ingot_vs_ref"] > tol:
        res["status"] = "mismatch"
        res["errors"].append(f"output differs from the reference: max abs diff {res['ingot_vs_ref']:.3g} "
                             f"(tolerance {tol:.3g}; ORT vs reference {rb.num(res['ort_vs_ref'], '.3g')})")
    res.setdefault("status", "ok")
    rounds = rounds_of(ort, module, onnx_path, inp, est, args, res["errors"])
    res["ingot"] = rb.aggregate(rounds.get("ingot"))
    res["ort"] = rb.aggregate(rounds.get("ort"))
    return res


def bandwidth_for(nbytes, bw):
    """GB/s of the smallest measured working set that holds nbytes (the largest otherwise)."""
    for size, gbps in zip(bw["sizes"], bw["gbps"]):
        if nbytes <= size:
            return gbps
    return bw["gbps"][-1]


def derive(results, floor, peak, bw):
    for r in results:
        i, o = r.get("ingot"), r.get("ort")
        if i and o:
            r["ratio"] = i["median"] / o["median"]
            if floor and o["median"] > floor:
                r["ratio_floor"] = i["median"] / (o["median"] - floor)
        # Roofline: the time the case needs at the single-core FMA peak and at the copy
        # bandwidth of its working-set size; the larger one bounds it.
        t_flop = r["gflops"] / peak * 1e6 if peak else 0.0
        t_mem = r["mbytes"] * 1e-3 / bandwidth_for(r["mbytes"] * 1e6, bw) * 1e6 if bw else 0.0
        r["bound"] = "compute" if t_flop >= t_mem else "memory"
        r["bound_us"] = max(t_flop, t_mem)
        for e in ("ingot", "ort"):
            if r.get(e) and r["bound_us"]:
                r[e + "_pct_roof"] = 100.0 * r["bound_us"] / r[e]["median"]
        if i and r["gflops"]:
            r["ingot_gflops_per_s"] = r["gflops"] / (i["median"] * 1e-6)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(results):
    measured = [r for r in results if "ratio" in r]
    good = [r for r in measured if r["status"] == "ok"]
    ratios = [r["ratio"] for r in good]
    floors = [r["ratio_floor"] for r in good if "ratio_floor" in r]
    s = {"cases": len(results), "ok": len(good), "failed": len(results) - len(good),
         "geomean_ratio": geomean(ratios), "geomean_ratio_floor": geomean(floors),
         "fraction_le_1": sum(x <= 1.0 for x in ratios) / len(ratios) if ratios else None,
         "fraction_le_1_floor": sum(x <= 1.0 for x in floors) / len(floors) if floors else None,
         "count_gt_1_5": sum(x > 1.5 for x in ratios), "count_gt_1_5_floor": sum(x > 1.5 for x in floors),
         "categories": {}}
    for cat in sorted({r["category"] for r in results}):
        rs = [r["ratio"] for r in good if r["category"] == cat]
        s["categories"][cat] = {"cases": sum(r["category"] == cat for r in results), "ok": len(rs),
                                "geomean_ratio": geomean(rs), "worst": max(rs) if rs else None,
                                "le_1": sum(x <= 1.0 for x in rs)}
    return s


COLUMNS = ["case", "GFLOP", "MB", "ingot µs", "ORT µs", "ratio", "ratio −floor", "ingot GFLOP/s",
           "bound", "ingot % roof", "ORT % roof", "diff vs ref", "status"]


def row(r):
    i, o = r.get("ingot") or {}, r.get("ort") or {}
    diff = r.get("ingot_vs_ref")
    return [r["case"], f"{r['gflops']:.4f}", f"{r['mbytes']:.2f}", rb.us(i.get("median")), rb.us(o.get("median")),
            rb.num(r.get("ratio"), ".2f"), rb.num(r.get("ratio_floor"), ".2f"),
            rb.num(r.get("ingot_gflops_per_s"), ".1f"), r["bound"][:3],
            rb.num(r.get("ingot_pct_roof"), ".0f"), rb.num(r.get("ort_pct_roof"), ".0f"),
            "—" if diff is None else f"{diff:.1e}", r["status"]]


def order(results):
    """Failures first, then the worst ratio first."""
    return sorted(results, key=lambda r: (r["status"] == "ok", -r.get("ratio", math.inf), r["case"]))


def md_table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 2) + ["---"]) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def summary_lines(s, floor, ingot_null):
    pct = lambda x: "—" if x is None else f"{100 * x:.0f}%"
    lines = [
        f"{s['cases']} cases, {s['ok']} compiled, ran and matched the reference; {s['failed']} failed "
        f"(listed first). Over the {s['ok']}: ingot at least as fast as ORT (ratio ≤ 1.0) in "
        f"**{pct(s['fraction_le_1'])}**, more than 1.5× slower in **{s['count_gt_1_5']}**, geometric mean "
        f"ratio **{rb.num(s['geomean_ratio'], '.2f')}**. With ORT's per-call floor subtracted: "
        f"{pct(s['fraction_le_1_floor'])} ≤ 1.0, {s['count_gt_1_5_floor']} > 1.5, geometric mean "
        f"{rb.num(s['geomean_ratio_floor'], '.2f')}.",
        f"Per-call overhead (`null` model), median: ingot {rb.us(ingot_null)} µs, ORT {rb.us(floor)} µs "
        f"(the floor).", "", "| category | cases | ok | ratio ≤ 1 | geomean ratio | worst ratio |",
        "|---|---:|---:|---:|---:|---:|"]
    for cat, c in s["categories"].items():
        lines.append(f"| {cat} | {c['cases']} | {c['ok']} | {c['le_1']} | {rb.num(c['geomean_ratio'], '.2f')} | "
                     f"{rb.num(c['worst'], '.2f')} |")
    return lines


def measure_null(ort, args):
    """Medians of the `null` model for both engines (per-call floors)."""
    module, _ = rb.ingot_compile(NULL_MODEL + ".onnx", os.path.join(WORK, "ingot", "null.ingot"))
    inp = NULL_MODEL + ".in.npy"
    rounds = rounds_of(ort, module, NULL_MODEL + ".onnx", inp, {"ingot": 1.0, "ort": 5.0},
                       argparse.Namespace(rounds=max(3, args.rounds), iterations=0, budget=args.budget), [])
    return (statistics.median(x["median"] for x in rounds["ingot"]),
            statistics.median(x["median"] for x in rounds["ort"]))


def main():
    ap = argparse.ArgumentParser(prog="bench/run.sh --sweep",
                                 usage="bench/run.sh --sweep [--quick] [--only a,b] [--category c] [--rounds N] "
                                       "[--budget S] [--jobs N] [--compile-timeout S] [--peak GFLOPS]")
    ap.add_argument("--quick", action="store_true", help="the fixed quick subset (about 40 cases)")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--category", default="", help="comma-separated categories (conv, gemm, rnn, ...)")
    ap.add_argument("--rounds", type=int, default=0, help="default 5, 3 with --quick")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds per engine and round (default 0.25, 0.15 with --quick)")
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles (nothing is timed then)")
    ap.add_argument("--compile-timeout", type=int, default=120)
    ap.add_argument("--peak", type=float, default=0.0)
    ap.add_argument("--peak-json", default="")
    ap.add_argument("--bw-json", default="")
    ap.add_argument("--command", default="bench/run.sh --sweep")
    ap.add_argument("--check-args", action="store_true", help="print the make_sweep.py selection and exit")
    args = ap.parse_args()
    args.rounds = args.rounds or (3 if args.quick else 5)
    args.budget = args.budget or (0.15 if args.quick else 0.25)
    if args.check_args:
        print(f"--only={args.only}" if args.only else f"--set={'quick' if args.quick else 'all'}")
        return 0

    with open(os.path.join(CASES, "manifest.json")) as f:
        manifest = json.load(f)
    names = ([n.strip() for n in args.only.split(",") if n.strip()] if args.only else
             sorted(n for n, v in manifest.items() if v["quick"] or not args.quick))
    if args.category:
        cats = set(args.category.split(","))
        names = [n for n in names if manifest[n]["category"] in cats]
    missing = [n for n in names if n not in manifest]
    if missing:
        ap.error("unknown case(s): " + ", ".join(missing))
    peak_info = json.loads(args.peak_json) if args.peak_json else {}
    peak = args.peak or peak_info.get("peak_gflops", 0.0)
    bw = json.loads(args.bw_json) if args.bw_json else None

    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    t0 = time.time()
    compiled = compile_all(names, args)
    ort = OrtServer()
    try:
        ingot_null, floor = measure_null(ort, args)
        log(f"null: ingot {rb.us(ingot_null)} µs, ORT {rb.us(floor)} µs")
        results = []
        for k, name in enumerate(names):
            t = time.time()
            r = measure_case(name, manifest[name], compiled[name], ort, args)
            results.append(r)
            i, o = r.get("ingot"), r.get("ort")
            log(f"[{k + 1}/{len(names)}] {name}: ingot {rb.us(i and i['median'])} µs, ORT "
                f"{rb.us(o and o['median'])} µs, {r['status']} ({time.time() - t:.1f} s)")
    finally:
        ort.close()
    derive(results, floor, peak, bw)
    s = summarize(results)
    elapsed = time.time() - t0
    load_after = os.getloadavg()
    rows = [row(r) for r in order(results)]
    lines = summary_lines(s, floor, ingot_null)
    probs = [f"{r['case']}: {e}" for r in order(results) for e in r["errors"]]

    print()
    for line in lines:
        print(line.replace("**", ""))
    worst = [r for r in order(results) if "ratio" in r][:15]
    print("\nWorst ratios: " + ", ".join(f"{r['case']} {r['ratio']:.2f}" for r in worst))
    if probs:
        print("\nProblems:\n" + "\n".join("  - " + p for p in probs))

    machine = {"cpu": rb.cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
               "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after]}
    rev = rb.git_describe()
    subset = "quick subset" if args.quick else "selection" if (args.only or args.category) else "full sweep"
    doc = {"date": started.isoformat(timespec="seconds"), "command": args.command, "subset": subset,
           "machine": machine, "ingot_commit": rev, "peak": dict(peak_info, used_gflops=peak), "bandwidth": bw,
           "settings": {"rounds": args.rounds, "budget_s_per_engine_round": args.budget,
                        "iterations": args.iterations or None, "threads": 1,
                        "compile_timeout_s": args.compile_timeout},
           "null": {"ingot_median_us": ingot_null, "ort_median_us": floor},
           "summary": s, "elapsed_s": round(elapsed, 1), "problems": probs, "cases": results}
    stem = "SWEEP_QUICK" if args.quick else "SWEEP"   # a selection writes SWEEP too
    with open(os.path.join(BENCH, stem.lower() + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    bw_text = ", ".join(f"{sz // 1024} KiB {g:.0f}" for sz, g in zip(bw["sizes"], bw["gbps"])) if bw else "—"
    md = ["# ingot vs ONNX Runtime: layer sweep", "",
          f"- Date: {started.strftime('%Y-%m-%d %H:%M UTC')}; {subset}, {len(names)} cases",
          f"- Machine: {machine['cpu']}, {machine['cores']} cores, Linux {machine['kernel']}; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after",
          f"- Command: `{args.command}` ({elapsed / 60:.1f} min)",
          f"- ingot: commit {rev or 'unknown'}, default target (host), one thread; ONNX Runtime: "
          f"onnxruntime-node, CPU EP, graph optimization 'all', one thread",
          f"- Roofs: {peak:.1f} GFLOP/s fp32 FMA on one core (bench/peak.c); copy bandwidth by working set, "
          f"GB/s (bench/bandwidth.c): {bw_text}",
          f"- Rounds: {args.rounds}, engines alternating, ~{args.budget:g} s per engine and round", "",
          ] + lines + ["", md_table(rows), "",
                       "Columns: medians over rounds of each round's median, µs; ratio = ingot / ORT; ratio −floor = "
                       "ingot / (ORT − ORT `null` median); GFLOP = 2×MACs of Conv/Gemm/MatMul/RNN plus a rough count "
                       "of the other ops; MB = input + output + weights; bound = whether the peak (com) or the "
                       "copy bandwidth at that working-set size (mem) bounds the case; % roof = that bound's time ÷ "
                       "the engine's median; diff vs ref = ingot's max abs difference from PyTorch's output; "
                       "status: ok, mismatch (beyond 1e-4 + 1e-3·max(1, max|ref|)), compile failed / timeout, "
                       "run failed. See bench/README.md."]
    if probs:
        md += ["", "Problems:", ""] + ["- " + p for p in probs]
    with open(os.path.join(BENCH, stem + ".md"), "w") as f:
        f.write("\n".join(md) + "\n")
    log(f"wrote bench/{stem}.md and bench/{stem.lower()}.json ({elapsed:.0f} s)")
    return 1 if probs else 0


if __name__ == "__main__":
    sys.exit(main())
