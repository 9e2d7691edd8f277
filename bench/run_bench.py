#!/usr/bin/python3
"""Side-by-side latency of ingot and ONNX Runtime on the benchmark models.

Called by bench/run.sh after set-up (npm packages, ingot build, model export, peak
probe build); see bench/README.md for the method and how to read the output.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
INGOT = os.path.join(ROOT, "build", "bin", "ingot")
MODELS_DIR = os.path.join(BENCH, "models")
WORK = os.path.join(BENCH, "work")
ORT_JS = os.path.join(BENCH, "ort_bench.js")

RATIO_MODELS = ["mlp", "cnn_small", "kws_dscnn", "tiny_transformer", "mobilenet_v2",
                "squeezenet1_1", "resnet18"]
EXTRA_MODELS = ["gemm1024"]
ALL_MODELS = RATIO_MODELS + EXTRA_MODELS
NULL = "null"
ZOO_DIR = os.path.join(BENCH, "zoo", "models")
RANDOM_DIR = os.path.join(BENCH, "random", "models")


def suite(name):
    """What a suite measures and where it writes: the seven models (+ gemm1024), or the
    zoo (bench/zoo/export_zoo.py). The `null` model always comes from bench/models."""
    if name == "random":
        sys.path.insert(0, os.path.join(BENCH, "random"))
        from export_random import RANDOM, is_random_name
        return dict(dir=RANDOM_DIR, ratio=list(RANDOM), extra=[], md="RANDOM.md", json="random.json",
                    title="ingot vs ONNX Runtime: seeded random networks", any_name=is_random_name)
    if name == "zoo":
        sys.path.insert(0, os.path.join(BENCH, "zoo"))
        from export_zoo import ZOO
        return dict(dir=ZOO_DIR, ratio=list(ZOO), extra=[], md="ZOO.md", json="zoo.json",
                    title="ingot vs ONNX Runtime: model zoo")
    return dict(dir=MODELS_DIR, ratio=RATIO_MODELS, extra=EXTRA_MODELS, md="RESULTS.md",
                json="results.json", title="ingot vs ONNX Runtime: results")

MIN_ITERATIONS = 5        # per engine and round, when sized by the time budget
MAX_ITERATIONS = 20000
MAX_WARMUP = 100
PROC_TIMEOUT_S = 900
HANDOFF = os.path.join(WORK, "handoff")   # bench/handoff.c, built by bench/run.sh
NEAR_NS = 200   # round trips under this: the two CPUs are near (bench/README.md, "CPU distance")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rel(path):
    return os.path.relpath(path, ROOT)


def run_proc(cmd, timeout=PROC_TIMEOUT_S):
    """Run a command; return (rc, stdout, stderr)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, cwd=ROOT)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


class EngineError(Exception):
    pass


# ------------------------------------------------------------------ engines

def fresh(path):
    """Make the folder of `path` and remove a stale file there."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    return path


def ingot_compile(model, out, timeout=PROC_TIMEOUT_S, workers=1):
    """Compile model (.onnx) into out (.ingot) for `workers` workers; return (out, seconds)."""
    fresh(out)
    t0 = time.time()
    rc, _, err = run_proc([INGOT, "compile", model, "-o", out, f"--workers={workers}"], timeout=timeout)
    dt = time.time() - t0
    if rc == 124:
        raise EngineError(f"compile timed out after {timeout} s")
    if rc != 0:
        raise EngineError("compile failed: " + first_line(err))
    return out, dt


def plan_workers(module):
    """The worker count of a compiled module's plan (`ingot inspect --plan --json`)."""
    rc, out, err = run_proc([INGOT, "inspect", module, "--plan", "--json"])
    if rc != 0:
        raise EngineError("inspect failed: " + first_line(err))
    return int(json.loads(out)["plan"]["worker_count"])


def ingot_output(module, inp, out):
    rc, _, err = run_proc([INGOT, "run", module, "--input=@" + inp, "--output=@" + fresh(out), "--no-print"])
    if rc != 0:
        raise EngineError("run failed: " + first_line(err))
    return np.load(out)


def ingot_bench(module, inp, iterations, warmup):
    rc, out, err = run_proc([INGOT, "bench", module, "--input=@" + inp,
                             f"--iterations={iterations}", f"--warmup={warmup}", "--json"])
    if rc != 0:
        raise EngineError("bench failed: " + first_line(err))
    r = json.loads(out)
    return {k: r[k] for k in ("min", "median", "p90", "p99", "max", "mean", "stddev")}


def cpus_one_per_core(allowed=None, sysfs="/sys/devices/system/cpu"):
    """The CPUs this process may use, one of each core first (the first CPU of its sysfs
    thread_siblings_list), then the cores' second hardware threads: the order in which
    `--workers=host` counts cores and the hosted runtime pins workers. Pinned to the
    first two CPUs by number, two copies share one core where Linux numbers a core's
    threads side by side (0-1, 2-3) and the ceiling reads half the machine's."""
    if allowed is None:
        if not hasattr(os, "sched_getaffinity"):
            return []
        allowed = sorted(os.sched_getaffinity(0))

    def core(cpu):
        try:
            with open(f"{sysfs}/cpu{cpu}/topology/thread_siblings_list") as f:
                return int(f.read().replace("-", ",").split(",")[0])
        except (OSError, ValueError):
            return cpu   # unknown topology: a core of its own
    seen, first, rest = set(), [], []
    for cpu in allowed:
        (rest if core(cpu) in seen else first).append(cpu)
        seen.add(core(cpu))
    return first + rest


def ingot_copies_at_once(module, inp, iterations, warmup, cpus, ingot=INGOT):
    """The median and p99 (µs, as a dict) of one copy of |module| per CPU in |cpus|,
    each pinned there, all at once (one CPU: that copy alone). The copies share no data:
    what they lose against one alone, in time or in tail, is the host's. |inp|: an
    input .npy, or None for random inputs."""
    cmd = [ingot, "bench", module, f"--iterations={iterations}", f"--warmup={warmup}", "--json"]
    if inp:
        cmd.append("--input=@" + inp)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu})) for cpu in cpus]
    stats = []
    try:
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=PROC_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise EngineError("pinned copy timed out")
            if proc.returncode != 0:
                raise EngineError("pinned copy failed: " + first_line(err))
            r = json.loads(out)
            stats.append({"median": r["median"], "p99": r["p99"]})
    finally:
        for proc in procs:   # a copy left running would disturb every later round
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return stats


def ort_bench(model, inp, iterations, warmup, output=None, threads=1):
    cmd = ["node", ORT_JS, "--model", model, "--input", inp, "--threads", str(threads),
           "--iterations", str(iterations), "--warmup", str(warmup)]
    if output:
        cmd += ["--output", output]
    rc, out, err = run_proc(cmd)
    if rc != 0:
        raise EngineError("ORT failed: " + first_line(err))
    r = json.loads(out.strip().splitlines()[-1])
    return {k: r[k] for k in ("min", "median", "p90", "p99", "max", "mean", "stddev")}, r


def handoff_ns():
    """One sample of the round trip of a cache line between the first two CPUs this
    process may run on (bench/handoff.c), in ns; None where the probe is not built or
    does not answer. Two workers' speed follows it on machines whose vCPUs move."""
    if not os.access(HANDOFF, os.X_OK):
        return None
    rc, out, _ = run_proc([HANDOFF, "1", "0"], timeout=5)
    try:
        return float(out.split(":")[1].split()[0]) if rc == 0 else None
    except (IndexError, ValueError):
        return None


def distance(samples):
    """'near' or 'far' when both probes around a round agree, else 'mixed' (None: unknown)."""
    if not samples or any(x is None for x in samples):
        return None
    near = [x < NEAR_NS for x in samples]
    return "near" if all(near) else "far" if not any(near) else "mixed"


# ------------------------------------------------------------------ measuring

def sizes(estimate_us, args):
    """Iterations and warm-up for one engine and round."""
    if args.iterations:
        n = args.iterations
    else:
        n = int(args.budget * 1e6 / max(estimate_us, 0.01))
        n = max(MIN_ITERATIONS, min(MAX_ITERATIONS, n))
    return n, max(1, min(MAX_WARMUP, n // 10))


def aggregate(rounds):
    """Per-engine figures over the rounds: the median of each statistic."""
    if not rounds:
        return None
    agg = {k: statistics.median(r[k] for r in rounds) for k in ("median", "p90", "p99", "mean")}
    agg["min"] = min(r["min"] for r in rounds)
    agg["max"] = max(r["max"] for r in rounds)
    agg["round_medians"] = [r["median"] for r in rounds]
    agg["best_round_median"] = min(agg["round_medians"])
    meds = agg["round_medians"]
    if len(meds) >= 2 and agg["median"] > 0:
        q1, _, q3 = statistics.quantiles(meds, n=4, method="inclusive")
        agg["round_iqr"] = (q3 - q1) / agg["median"]   # middle half of the round medians
    else:
        agg["round_iqr"] = 0.0
    # Rounds on several threads, split by the CPU distance measured around them.
    for mode in ("near", "far"):
        meds = [r["median"] for r in rounds if r.get("cpus") == mode]
        agg["rounds_" + mode] = len(meds)
        agg["median_" + mode] = statistics.median(meds) if meds else None
    return agg


def max_abs_diff(a, b):
    if a is None or b is None:
        return None
    if a.shape != b.shape:
        return float("inf")
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(np.nan_to_num(d, nan=np.inf).max()) if d.size else 0.0


def engine_key(engine, n):
    """'ingot' / 'ort' for one thread (the columns every report has), 'ingot2' / 'ort2' ..."""
    return engine if n == 1 else f"{engine}{n}"


def measure_model(name, args, manifest, models_dir=MODELS_DIR):
    info = manifest.get(name, {})
    res = {"model": name, "gflops": info.get("gflops", 0.0), "errors": [], "threads": args.thread_counts}
    onnx_path, inp = (os.path.join(models_dir, name + e) for e in (".onnx", ".in.npy"))
    ref = np.load(os.path.join(models_dir, name + ".out.npy"))
    modules = {}
    # Thread counts whose plan the partition kept on one worker: the same steps as the
    # one-worker plan, so they are not timed again and their columns repeat the
    # one-worker figures. Timed apart, the same plan's two columns differed by up to
    # 10% either way, by which vCPU each process landed on (kws_dscnn: 0.85, then 1.10).
    one_worker = []
    for n in args.thread_counts:
        try:
            module, compile_s = ingot_compile(onnx_path, os.path.join(WORK, "ingot", f"{name}.w{n}.ingot"), workers=n)
            if n == 1:
                res["compile_s"] = round(compile_s, 2)
                res["module_bytes"] = os.path.getsize(module)
            elif 1 in modules and plan_workers(module) == 1:
                one_worker.append(n)
                continue
            modules[n] = module
        except EngineError as e:
            res["errors"].append(f"ingot ({n} workers) {e}")
            log(f"[{name}] ingot ({n} workers) {e}")
    res["one_worker_plans"] = one_worker

    # Correctness, plus a short calibration run of each engine that sizes the rounds.
    y_ingot = y_ort = None
    est = {}
    for n, module in list(modules.items()):
        key = engine_key("ingot", n)
        try:
            y = ingot_output(module, inp, os.path.join(WORK, "out", f"{name}.w{n}.ingot.npy"))
            if n == 1:
                y_ingot = y
            elif y_ingot is not None and not np.array_equal(y, y_ingot):
                res["errors"].append(f"ingot with {n} workers gives other bits than with 1")
            est[key] = ingot_bench(module, inp, 3, 1)["median"]
        except EngineError as e:
            res["errors"].append(f"ingot ({n} workers) {e}")
            log(f"[{name}] ingot ({n} workers) {e}")
            del modules[n]
    for n in args.thread_counts:
        key = engine_key("ort", n)
        ort_out = fresh(os.path.join(WORK, "out", f"{name}.t{n}.ort.npy"))
        try:
            stats, full = ort_bench(onnx_path, inp, 3, 1, output=ort_out, threads=n)
            est[key] = stats["median"]
            if n == 1:
                res["ort_version"] = full.get("ort_version")
                res["ort_load_ms"] = full.get("load_ms")
                y_ort = np.load(ort_out)
        except EngineError as e:
            res["errors"].append(f"{e} ({n} threads)")
            log(f"[{name}] {e} ({n} threads)")
    res["max_abs_diff"] = max_abs_diff(y_ingot, y_ort)
    res["ingot_vs_ref"] = max_abs_diff(y_ingot, ref)
    res["ort_vs_ref"] = max_abs_diff(y_ort, ref)
    res["ref_absmax"] = float(np.abs(ref).max()) if ref.size else 0.0
    if res["max_abs_diff"] is not None:
        res["output_ok"] = res["max_abs_diff"] <= 1e-4 + 1e-3 * max(1.0, res["ref_absmax"])

    engines = [engine_key(e, n) for n in args.thread_counts for e in ("ingot", "ort") if engine_key(e, n) in est]
    plan = {e: sizes(est[e], args) for e in engines}
    rounds = {e: [] for e in engines}
    cpus = cpus_one_per_core()
    host_counts = [n for n in args.thread_counts[1:] if n in modules and 1 in modules and "ingot" in plan
                   and len(cpus) >= n] if args.host_ceiling else []
    host_rounds = {n: [] for n in host_counts}
    host_tails = {n: [] for n in host_counts}   # per round, the worst copy's p99/median
    for r in range(args.rounds):
        order = engines if r % 2 == 0 else engines[::-1]   # alternate which engine goes first
        for e in order:
            n, w = plan[e]
            threads = int(e[len("ingot"):] or 1) if e.startswith("ingot") else int(e[len("ort"):] or 1)
            # The CPU distance before and after every round (it can change within
            # seconds), recorded for rounds on several threads so that near and far ones
            # can be told apart. One-thread rounds are probed too, so that every round
            # follows the same work: with the probe before multi-thread rounds only, a
            # plan that keeps one worker ran 39 us in all 7 of its two-worker rounds and
            # 32-39 in its one-worker rounds (kws_dscnn), a process's CPU following what
            # ran just before it.
            probe = [handoff_ns()]
            try:
                if e.startswith("ingot"):
                    stats = ingot_bench(modules[threads], inp, n, w)
                else:
                    stats = ort_bench(onnx_path, inp, n, w, threads=threads)[0]
            except EngineError as err:
                res["errors"].append(f"{e} round {r + 1}: {err}")
                log(f"[{name}] {e} round {r + 1}: {err}")
                continue
            stats["iterations"], stats["warmup"] = n, w
            probe.append(handoff_ns())
            if threads > 1:
                stats["handoff_ns"] = probe
                stats["cpus"] = distance(probe)
            rounds[e].append(stats)
            # Re-size from this round's mean, which includes the time lost to preemption
            # on a busy machine, so that a round keeps to about the budget.
            plan[e] = sizes(stats["mean"], args)
        # The host's ceiling for n workers this round: n copies of the one-worker plan,
        # one pinned per CPU, at once (bench/README.md, "Reading the table").
        for threads in host_counts:
            n, w = plan["ingot"]
            try:
                copies = ingot_copies_at_once(modules[1], inp, n, w, cpus[:threads])
                host_rounds[threads].append(max(c["median"] for c in copies))
                tail = max((c["p99"] / c["median"] for c in copies if c["median"] > 0), default=None)
                if tail is not None:
                    host_tails[threads].append(tail)
            except EngineError as err:
                res["errors"].append(f"host ceiling ({threads} copies) round {r + 1}: {err}")
                log(f"[{name}] host ceiling ({threads} copies) round {r + 1}: {err}")
    res["iterations"] = {e: statistics.median_low([x["iterations"] for x in rounds[e]])
                         for e in engines if rounds[e]}
    res["rounds"] = rounds
    for e in engines:
        res[e] = aggregate(rounds.get(e))
    for n, slowest in host_rounds.items():
        if slowest and res.get("ingot"):
            res[f"host_ceiling_t{n}"] = n * res["ingot"]["median"] / statistics.median(slowest)
            res[f"host_slowest_copy_t{n}"] = slowest
    for n, tails in host_tails.items():
        if tails:
            res[f"host_p99_over_median_t{n}"] = statistics.median(tails)
    for n in one_worker:
        if res.get("ingot"):
            res[engine_key("ingot", n)] = dict(res["ingot"], one_worker_plan=True)
    res.setdefault("ingot", None)
    res.setdefault("ort", None)
    return res


def derive(results, peak, ratio_models=RATIO_MODELS):
    """Ratios, GFLOP/s and the summary figures."""
    by = {r["model"]: r for r in results}
    ort_null = by.get(NULL, {}).get("ort")
    ingot_null = by.get(NULL, {}).get("ingot")
    floor = ort_null["median"] if ort_null else None
    for r in results:
        i, o = r.get("ingot"), r.get("ort")
        if i and o:
            r["ratio"] = i["median"] / o["median"]
            if floor is not None and o["median"] - floor > 0 and r["model"] != NULL:
                r["ratio_floor"] = i["median"] / (o["median"] - floor)
        if i:
            r["ingot_p99_over_median"] = i["p99"] / i["median"] if i["median"] > 0 else None
            if r["gflops"]:
                r["ingot_gflops_per_s"] = r["gflops"] / (i["median"] * 1e-6)
                r["ingot_pct_peak"] = 100.0 * r["ingot_gflops_per_s"] / peak if peak else None
        if i and r["gflops"]:
            r["ingot_gflops_per_s_best_round"] = r["gflops"] / (i["best_round_median"] * 1e-6)
        if o and r["gflops"]:
            r["ort_gflops_per_s_best_round"] = r["gflops"] / (o["best_round_median"] * 1e-6)
            r["ort_gflops_per_s"] = r["gflops"] / (o["median"] * 1e-6)
            r["ort_pct_peak"] = 100.0 * r["ort_gflops_per_s"] / peak if peak else None
    # Several threads: each engine against itself on one thread, and ingot against ORT.
    for r in results:
        for n in r.get("threads", [1])[1:]:
            i_n, o_n = r.get(f"ingot{n}"), r.get(f"ort{n}")
            i, o = r.get("ingot"), r.get("ort")
            if i_n and o_n:
                r[f"ratio_t{n}"] = i_n["median"] / o_n["median"]
            if i and i_n:
                r[f"ingot_speedup_t{n}"] = i["median"] / i_n["median"]
                r[f"ingot_p99_over_median_t{n}"] = i_n["p99"] / i_n["median"] if i_n["median"] > 0 else None
            if o and o_n:
                r[f"ort_speedup_t{n}"] = o["median"] / o_n["median"]
            if o_n:
                r[f"ort_p99_over_median_t{n}"] = o_n["p99"] / o_n["median"] if o_n["median"] > 0 else None
            for mode in ("near", "far"):   # the same, from the rounds of one CPU distance
                m_i, m_o = (i_n or {}).get("median_" + mode), (o_n or {}).get("median_" + mode)
                if i and m_i:
                    r[f"ingot_speedup_t{n}_{mode}"] = i["median"] / m_i
                if o and m_o:
                    r[f"ort_speedup_t{n}_{mode}"] = o["median"] / m_o
                if m_i and m_o:
                    r[f"ratio_t{n}_{mode}"] = m_i / m_o
    ratios = [by[m]["ratio_floor"] for m in ratio_models if m in by and "ratio_floor" in by[m]]
    raw = [by[m]["ratio"] for m in ratio_models if m in by and "ratio_floor" in by[m]]
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
    multi = {}
    counts = sorted({n for r in results for n in r.get("threads", [1])[1:]})
    for n in counts:
        rs = [by[m][f"ratio_t{n}"] for m in ratio_models if m in by and f"ratio_t{n}" in by[m]]
        sp = [by[m][f"ingot_speedup_t{n}"] for m in ratio_models if m in by and f"ingot_speedup_t{n}" in by[m]]
        multi[str(n)] = {"geomean_ratio": gm(rs), "worst_ratio": max(rs) if rs else None,
                         "geomean_ingot_speedup": gm(sp), "models": len(rs)}
        # The same models' speed-ups and the host's ceilings, where both were measured.
        with_ceiling = [m for m in ratio_models if m in by and f"ingot_speedup_t{n}" in by[m]
                        and f"host_ceiling_t{n}" in by[m]]
        if with_ceiling:
            multi[str(n)]["geomean_host_ceiling"] = gm([by[m][f"host_ceiling_t{n}"] for m in with_ceiling])
            multi[str(n)]["geomean_ingot_speedup_with_ceiling"] = gm([by[m][f"ingot_speedup_t{n}"] for m in with_ceiling])
            multi[str(n)]["models_with_ceiling"] = len(with_ceiling)
        # Tails on every model measured above 1 ms with n workers (the issue's p99
        # target; gemm1024 too), beside ORT's and the host's own (pinned copies that
        # share nothing) on the same models.
        slow = [m for m in by if m != NULL and (by[m].get(f"ingot{n}") or {}).get("median", 0) > 1000
                and by[m].get(f"ingot_p99_over_median_t{n}")]
        if slow:
            tails = lambda key: [by[m][key] for m in slow if by[m].get(key)]
            multi[str(n)]["tails_above_1ms"] = {
                "models": len(slow),
                **{who: {"median": statistics.median(xs), "worst": max(xs)}
                   for who, xs in (("ingot", tails(f"ingot_p99_over_median_t{n}")),
                                   ("ort", tails(f"ort_p99_over_median_t{n}")),
                                   ("host", tails(f"host_p99_over_median_t{n}"))) if xs}}
        for mode in ("near", "far"):
            for key in (f"ingot_speedup_t{n}_{mode}", f"ort_speedup_t{n}_{mode}", f"ratio_t{n}_{mode}"):
                xs = [by[m][key] for m in ratio_models if m in by and key in by[m]]
                multi[str(n)]["geomean_" + key.replace(f"_t{n}", "")] = gm(xs)
                multi[str(n)]["models_" + key.replace(f"_t{n}", "")] = len(xs)
    return {
        "threads": multi,
        "geomean_ratio_floor": gm(ratios),
        "geomean_ratio": gm(raw),
        "geomean_models": [m for m in ratio_models if m in by and "ratio_floor" in by[m]],
        "geomean_missing": [m for m in ratio_models if m in by and "ratio_floor" not in by[m]],
        "ingot_null_median_us": ingot_null["median"] if ingot_null else None,
        "ort_null_median_us": floor,
    }


# ------------------------------------------------------------------ reporting

def us(x):
    if x is None:
        return "—"
    if x < 100:
        return f"{x:.2f}"
    if x < 10000:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def num(x, fmt):
    return "—" if x is None else format(x, fmt)


def diff_cell(r):
    d = r.get("max_abs_diff")
    if d is None:
        return "—"
    return f"{d:.1e}" + ("" if r.get("output_ok") else " (!)")


COLUMNS = ["model", "GFLOP", "ingot med", "ingot p99", "ORT med", "ORT p99", "ratio",
           "ratio −floor", "max abs diff", "ingot GFLOP/s", "% peak", "ingot p99/med", "iters i/o"]


def columns(counts):
    """The one-thread columns, then per extra thread count: both engines' medians, their
    ratio, each engine's speed-up over its one-thread run, each engine's p99/median (the
    same machine noise reaches both: ORT's tail says how much of ingot's is the machine's),
    and the host's own: the worse p99/median of the N pinned copies of the one-worker plan
    that share nothing (a plan on N threads waits for the slowest of them at every call)."""
    cols = list(COLUMNS)
    for n in counts[1:]:
        cols += [f"ingot {n}w med", f"ORT {n}t med", f"ratio {n}", f"ingot {n}w/1w ×", f"host {n}× ceiling",
                 f"ORT {n}t/1t ×", f"ingot {n}w p99/med", f"ORT {n}t p99/med", f"host {n}× p99/med"]
    return cols


def row(r, counts=(1,)):
    i, o = r.get("ingot") or {}, r.get("ort") or {}
    it = r.get("iterations", {})
    cells = [r["model"], num(r["gflops"], ".4f") if r["gflops"] else "—",
             us(i.get("median")), us(i.get("p99")), us(o.get("median")), us(o.get("p99")),
             num(r.get("ratio"), ".2f"), num(r.get("ratio_floor"), ".2f"), diff_cell(r),
             num(r.get("ingot_gflops_per_s"), ".1f"), num(r.get("ingot_pct_peak"), ".1f"),
             num(r.get("ingot_p99_over_median"), ".2f"),
             f"{it.get('ingot', '—')}/{it.get('ort', '—')}"]
    for n in counts[1:]:
        i_n, o_n = r.get(f"ingot{n}") or {}, r.get(f"ort{n}") or {}
        same = " (1 worker)" if i_n.get("one_worker_plan") else ""   # the one-worker plan's figures
        cells += [us(i_n.get("median")) + same, us(o_n.get("median")), num(r.get(f"ratio_t{n}"), ".2f"),
                  num(r.get(f"ingot_speedup_t{n}"), ".2f"), num(r.get(f"host_ceiling_t{n}"), ".2f"),
                  num(r.get(f"ort_speedup_t{n}"), ".2f"),
                  num(r.get(f"ingot_p99_over_median_t{n}"), ".2f"), num(r.get(f"ort_p99_over_median_t{n}"), ".2f"),
                  num(r.get(f"host_p99_over_median_t{n}"), ".2f")]
    return cells


def text_table(rows, cols=COLUMNS):
    widths = [max(len(str(x)) for x in col) for col in zip(cols, *rows)]
    fmt = lambda cells: "  ".join(str(c).ljust(w) if k == 0 else str(c).rjust(w)
                                  for k, (c, w) in enumerate(zip(cells, widths)))
    lines = [fmt(cols), fmt(["-" * w for w in widths])]
    return "\n".join(lines + [fmt(r) for r in rows])


def md_table(rows, cols=COLUMNS):
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def summary_lines(summary, peak, rounds, by):
    gm, gm_raw = summary["geomean_ratio_floor"], summary["geomean_ratio"]
    used = summary["geomean_models"]
    lines = []
    if gm is not None:
        scope = f"{len(used)} of {len(used) + len(summary['geomean_missing'])} models"
        if summary["geomean_missing"]:
            scope += " (missing: " + ", ".join(summary["geomean_missing"]) + ")"
        lines.append(f"Geometric mean of ingot/ORT median ratios, ORT floor subtracted: "
                     f"**{gm:.2f}** over {scope}; as measured: {gm_raw:.2f}.")
    else:
        lines.append("Geometric mean: no model has both engines' figures.")
    for n, t in summary.get("threads", {}).items():
        if t["geomean_ratio"] is not None:
            lines.append(f"{n} threads: ingot with {n} workers / ORT with {n} intra-op threads, geometric mean "
                         f"**{t['geomean_ratio']:.2f}** (worst {t['worst_ratio']:.2f}) over {t['models']} models; "
                         f"ingot {n} workers over 1 worker: geometric mean speed-up "
                         f"{num(t['geomean_ingot_speedup'], '.2f')}×.")
        if t.get("models_with_ceiling"):
            lines.append(f"The host's ceiling for {n} workers ({n} copies of the one-worker plan pinned one per CPU, "
                         f"at once, each round): geometric mean {t['geomean_host_ceiling']:.2f}× over the "
                         f"{t['models_with_ceiling']} model{'s' if t['models_with_ceiling'] != 1 else ''} "
                         f"measured, where ingot's {n}w/1w was "
                         f"{t['geomean_ingot_speedup_with_ceiling']:.2f}×.")
        tl = t.get("tails_above_1ms")
        if tl and "ingot" in tl:
            part = lambda who, label: (f"; {label} {tl[who]['median']:.2f} (worst {tl[who]['worst']:.2f})"
                                       if who in tl else "")
            lines.append(f"p99/median on {n} threads over the {tl['models']} model{'s' if tl['models'] != 1 else ''} "
                         f"above 1 ms, median over models: ingot {tl['ingot']['median']:.2f} "
                         f"(worst {tl['ingot']['worst']:.2f}){part('ort', 'ORT')}"
                         f"{part('host', f'the host ({n} pinned copies of the one-worker plan, the worse copy)')}.")
    lines.append(f"Per-call overhead (`null` model, one Relu on 16 floats), median: ingot "
                 f"{us(summary['ingot_null_median_us'])} µs; ORT {us(summary['ort_null_median_us'])} µs "
                 f"(the floor subtracted above).")
    g = by.get("gemm1024")
    if g and g.get("ingot"):
        lines.append(f"gemm1024 (1024×1024×1024 f32 MatMul, one thread): ingot "
                     f"{num(g.get('ingot_gflops_per_s'), '.1f')} GFLOP/s = "
                     f"{num(g.get('ingot_pct_peak'), '.1f')}% of peak; ORT "
                     f"{num(g.get('ort_gflops_per_s'), '.1f')} GFLOP/s = "
                     f"{num(g.get('ort_pct_peak'), '.1f')}%; in the least disturbed round ingot "
                     f"{num(g.get('ingot_gflops_per_s_best_round'), '.1f')}, ORT "
                     f"{num(g.get('ort_gflops_per_s_best_round'), '.1f')} GFLOP/s "
                     f"(not in the geometric mean).")
    lines.append(f"Peak: {peak:.1f} GFLOP/s fp32 FMA on one core (bench/peak.c). Times are µs; each "
                 f"figure is the median over {rounds} alternating round{'s' if rounds != 1 else ''} of that "
                 f"round's statistic.")
    return lines


def distance_rows(rows_of, counts):
    """Per extra thread count, the columns split by CPU distance (near/far rounds, from
    bench/handoff.c around each round); None where no round was probed."""
    if not any((r.get(f"ingot{n}") or {}).get("rounds_near", 0) + (r.get(f"ingot{n}") or {}).get("rounds_far", 0)
               for r in rows_of for n in counts[1:]):
        return None, None
    cols = ["model"]
    for n in counts[1:]:
        cols += [f"rounds near/far {n}w·{n}t", f"ingot {n}w/1w × near", "far", f"ORT {n}t/1t × near", "far",
                 f"ratio {n} near", "far"]
    rows = []
    for r in rows_of:
        cells = [r["model"]]
        for n in counts[1:]:
            i_n, o_n = r.get(f"ingot{n}") or {}, r.get(f"ort{n}") or {}
            cells += [f"{i_n.get('rounds_near', 0)}/{i_n.get('rounds_far', 0)} · "
                      f"{o_n.get('rounds_near', 0)}/{o_n.get('rounds_far', 0)}"]
            for key in ("ingot_speedup", "ort_speedup", "ratio"):
                cells += [num(r.get(f"{key}_t{n}_near"), ".2f"), num(r.get(f"{key}_t{n}_far"), ".2f")]
        rows.append(cells)
    return cols, rows


def distance_lines(summary):
    lines = []
    for n, t in summary.get("threads", {}).items():
        parts = []
        for mode in ("near", "far"):
            a, b, c = (t.get(f"geomean_{k}_{mode}") for k in ("ingot_speedup", "ort_speedup", "ratio"))
            if a or b:
                parts.append(f"{mode}: ingot {n}w/1w {num(a, '.2f')}× over {t.get(f'models_ingot_speedup_{mode}', 0)} "
                             f"models, ORT {n}t/1t {num(b, '.2f')}×, ingot/ORT {num(c, '.2f')}")
        if parts:
            lines.append(f"By CPU distance, geometric means over the rounds of one distance ({'; '.join(parts)}).")
    return lines


def problems(results):
    """Failures and output mismatches."""
    out = []
    for r in results:
        for e in r["errors"]:
            out.append(f"{r['model']}: {e}")
        if r.get("output_ok") is False:
            out.append(f"{r['model']}: outputs differ, max abs diff {r['max_abs_diff']:.3g} "
                       f"(ingot vs torch reference {r['ingot_vs_ref']:.3g}, ORT vs reference "
                       f"{r['ort_vs_ref']:.3g})")
    return out


def noise_notes(results):
    """Engines whose middle half of round medians spans more than 10% (and 1 µs)."""
    out = []
    for r in results:
        for e, label in (("ingot", "ingot"), ("ort", "ORT")):
            a = r.get(e)
            if not a or len(a["round_medians"]) < 2:
                continue
            meds = a["round_medians"]
            if a["round_iqr"] > 0.10 and a["round_iqr"] * a["median"] > 1.0:
                out.append(f"{r['model']}: {label} round medians' interquartile range "
                           f"{100 * a['round_iqr']:.0f}% of the median "
                           f"({', '.join(us(x) for x in meds)} µs)")
    return out


def cpu_model():
    """'model name' from /proc/cpuinfo, with family/model numbers and vector extensions."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = (x.strip() for x in line.split(":", 1))
                    fields.setdefault(k, v)
                elif fields:
                    break
    except OSError:
        return platform.processor() or "unknown"
    name = fields.get("model name", platform.processor() or "unknown")
    flags = fields.get("flags", "").split()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']}, {isa})"
    return name


def git_describe():
    rc, out, _ = run_proc(["git", "rev-parse", "--short", "HEAD"], timeout=30)
    if rc != 0:
        return None
    rev = out.strip()
    rc, out, _ = run_proc(["git", "status", "--porcelain", "--untracked-files=no"], timeout=30)
    return rev + (" (with uncommitted changes)" if rc == 0 and out.strip() else "")


def main():
    ap = argparse.ArgumentParser(
        prog="bench/run.sh",
        usage="bench/run.sh [--zoo] [--models a,b] [--rounds N] [--iterations N] [--budget S] [--peak GFLOPS]")
    ap.add_argument("--suite", choices=("models", "zoo", "random"), default="models")
    ap.add_argument("--models", default="")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--budget", type=float, default=1.5)
    ap.add_argument("--peak", type=float, default=0.0)
    ap.add_argument("--peak-json", default="")
    ap.add_argument("--threads", default="1,2",
                    help="thread counts: ingot compiled for N workers and ORT with N intra-op threads "
                         "(the first must be 1)")
    ap.add_argument("--no-host-ceiling", dest="host_ceiling", action="store_false",
                    help="skip the host's ceiling (copies of the one-worker plan pinned one per CPU, at once)")
    ap.add_argument("--command", default="bench/run.sh")
    ap.add_argument("--check-args", action="store_true", help="validate the arguments, print the models to measure and exit")
    args = ap.parse_args()
    if args.rounds < 1 or args.iterations < 0 or args.budget <= 0:
        ap.error("--rounds must be >= 1, --iterations >= 0, --budget > 0")
    try:
        args.thread_counts = [int(x) for x in args.threads.split(",") if x.strip()]
    except ValueError:
        ap.error("--threads: expected counts such as 1,2")
    if not args.thread_counts or args.thread_counts[0] != 1 or any(n < 1 or n > 32 for n in args.thread_counts):
        ap.error("--threads: counts from 1 to 32, the first 1 (e.g. 1,2)")
    st = suite(args.suite)
    known = st["ratio"] + st["extra"]
    names = [n.strip() for n in args.models.split(",") if n.strip()] or known
    # The random suite takes any FAMILY_SEED name (a held-out draw) besides its default set.
    any_name = st.get("any_name", lambda n: False)
    unknown = [n for n in names if n not in known + [NULL] and not any_name(n)]
    if unknown:
        ap.error("unknown model(s): " + ", ".join(unknown) + " (known: " + ", ".join(known) + ")")
    names = [NULL] + [n for n in names if n != NULL]   # the floor is always measured
    if args.check_args:
        print(",".join(names))
        return 0

    with open(os.path.join(MODELS_DIR, "manifest.json")) as f:
        manifest = json.load(f)
    if st["dir"] != MODELS_DIR:
        with open(os.path.join(st["dir"], "manifest.json")) as f:
            manifest.update(json.load(f))
    peak_info = {}
    if args.peak_json:
        peak_info = json.loads(args.peak_json)
    peak = args.peak or peak_info.get("peak_gflops", 0.0)

    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    t0 = time.time()
    results = []
    for name in names:
        t = time.time()
        log(f"[{name}] measuring ...")
        results.append(measure_model(name, args, manifest, MODELS_DIR if name == NULL else st["dir"]))
        r = results[-1]
        i, o = r.get("ingot"), r.get("ort")
        log(f"[{name}] ingot {us(i and i['median'])} µs, ORT {us(o and o['median'])} µs "
            f"({time.time() - t:.0f} s)")
    summary = derive(results, peak, st["ratio"] + [m for m in names if any_name(m) and m not in st["ratio"]])
    by = {r["model"]: r for r in results}
    elapsed = time.time() - t0
    load_after = os.getloadavg()

    table_models = [m for m in names if m in st["ratio"] or any_name(m)] + [m for m in names if m in st["extra"]]
    rows = [row(by[m], args.thread_counts) for m in table_models]
    cols = columns(args.thread_counts)
    lines = summary_lines(summary, peak, args.rounds, by)
    dist_cols, dist_rows = distance_rows([by[m] for m in table_models], args.thread_counts)
    dist_lines = distance_lines(summary)
    probs = problems(results)
    noise = noise_notes(results)

    print()
    print(text_table(rows, cols))
    print()
    for line in lines:
        print(line.replace("**", ""))
    if dist_rows:
        print()
        print(text_table(dist_rows, dist_cols))
        for line in dist_lines:
            print(line)
    if probs:
        print("\nProblems:")
        for p in probs:
            print("  - " + p)
    if noise:
        print("\nNoisy (round medians disagree; the median over rounds absorbs some of it):")
        for p in noise:
            print("  - " + p)

    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
               "load_before": [round(x, 2) for x in load_before],
               "load_after": [round(x, 2) for x in load_after]}
    rev = git_describe()
    ort_version = next((r.get("ort_version") for r in results if r.get("ort_version")), None)
    doc = {
        "date": started.isoformat(timespec="seconds"), "command": args.command,
        "machine": machine, "ingot_commit": rev, "ort_version": ort_version,
        "peak": dict(peak_info, used_gflops=peak),
        "settings": {"rounds": args.rounds, "iterations": args.iterations or None,
                     "budget_s_per_engine_round": None if args.iterations else args.budget,
                     "threads": args.thread_counts, "target": "host"},
        "summary": summary, "elapsed_s": round(elapsed, 1), "problems": probs, "noise": noise,
        "models": results,
    }
    with open(os.path.join(BENCH, st["json"]), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")

    md = ["# " + st["title"], "",
          f"- Date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
          f"- Machine: {machine['cpu']}, {machine['cores']} cores, Linux {machine['kernel']}; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after",
          f"- Command: `{args.command}` ({elapsed / 60:.1f} min)",
          f"- ingot: commit {rev or 'unknown'}, `ingot compile` default target (host), "
          f"`--workers=N` for N in {args.threads}, run on N threads",
          f"- ONNX Runtime: onnxruntime-node {ort_version or 'unknown'}, CPU EP, graph optimization "
          f"'all', N intra-op threads for N in {args.threads}, 1 inter-op thread",
          f"- Peak: {peak:.1f} GFLOP/s fp32 FMA, one core (AVX-512 {peak_info.get('avx512_gflops', 0):.1f}, "
          f"AVX2 {peak_info.get('avx2_gflops', 0):.1f}; core clock ~{peak_info.get('clock_ghz', 0):.2f} GHz)",
          f"- Rounds: {args.rounds}, engines alternating; "
          + (f"{args.iterations} iterations per engine and round" if args.iterations else
             f"iterations per engine and round sized to ~{args.budget:g} s (min {MIN_ITERATIONS})"),
          "", md_table(rows, cols), ""]
    md += lines
    if dist_rows:
        md += ["", "## Several threads by CPU distance", "",
               f"Before and after every round on several threads, bench/handoff.c timed a cache line's round "
               f"trip between the first two CPUs: a round is near when both samples were under {NEAR_NS} ns, "
               f"far when both were over (rounds in between are in neither). Speed-ups divide the one-thread "
               f"median by the median of that distance's rounds. See bench/README.md.", "",
               md_table(dist_rows, dist_cols), ""] + dist_lines
    md += ["", "Columns: medians and p99 in µs (median over rounds of each round's figure); "
           "ratio = ingot median / ORT median; ratio −floor = ingot median / (ORT median − ORT "
           "`null` median); max abs diff between the two engines' outputs on the same input "
           "((!) = beyond 1e-4 + 1e-3·max|ref|); GFLOP/s = 2×MACs of Conv/Gemm/MatMul ÷ ingot "
           "median (an effective rate: Winograd convolutions do fewer multiply-adds, so it can pass the "
           "peak); iters i/o = timed iterations per round for ingot / ORT (median over rounds). "
           "See bench/README.md."]
    if probs:
        md += ["", "Problems:", ""] + ["- " + p for p in probs]
    if noise:
        md += ["", "Noisy (round medians disagree; the median over rounds absorbs some of it):",
               ""] + ["- " + p for p in noise]
    with open(os.path.join(BENCH, st["md"]), "w") as f:
        f.write("\n".join(md) + "\n")
    log(f"wrote {rel(os.path.join(BENCH, st['md']))} and {rel(os.path.join(BENCH, st['json']))} "
        f"({elapsed:.0f} s)")
    return 1 if probs else 0


if __name__ == "__main__":
    sys.exit(main())
