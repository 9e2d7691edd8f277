#!/usr/bin/env python3
"""Where a multi-worker plan loses against N times one worker, step by step.

    bench/worker_steps.py MODEL.onnx [--workers 2] [--rounds 3] [--iterations 100]
                          [--top 20] [--ingot PATH] [--json OUT]

Compiles MODEL for one worker and for N, and times every plan step (`ingot bench
--per-step --json`) in alternating rounds: the one-worker plan; the N-worker plan on one
thread (`--threads 1`: its parts one after another, as the one-worker plan runs); the
N-worker plan on N threads. Per step it takes the median over rounds, and splits the gap
between the one-worker time T1 and the ideal T1 / N into:

  partition   what splitting costs on one thread: the N-worker plan's parts summed,
              against the one-worker plan's whole steps (halo rows recomputed, an input
              transform each panel part repeats, a second scratch area in the caches);
  concurrency what running the parts at once costs: the parts on N threads against the
              same parts on one thread (data the other core wrote, read or written over
              from there; one CPU slower than the other);
  imbalance   the busiest worker's step time against the mean worker's;
  sync        the rest: the measured N-thread median against the busiest worker's step
              time (waits, hand-offs, what observing each step adds).

Beside those rounds it measures what the host allows: the one-worker plan pinned to
each of N CPUs (one per core first), alone and as N copies at once (one per CPU,
sharing nothing).
A plan of equal parts can at best go as fast as the slowest CPU under that load lets it
(N x the one-worker time over that CPU's); parts sized to each CPU's speed, the sum of
the speeds. Where the measured ratio is near that ceiling, the rest is the host's.

Then lists the steps whose parts grow most when they run at once, and the same by
kernel family. Steps are matched by label (the ONNX nodes a step covers), so the two
plans may use different strategies for a node. Per-step times carry the observer's own
cost; use bench/run.sh for end-to-end ratios and this to see where they go.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_bench import EngineError, cpus_one_per_core, ingot_copies_at_once  # noqa: E402  (the host's ceiling)


def fail(msg):
    sys.exit(f"worker_steps: {msg}")


def run_json(cmd):
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        lines = (run.stderr or run.stdout).strip().splitlines()
        fail(f"'{' '.join(cmd[:2])}' failed: {lines[-1] if lines else 'exit status %d' % run.returncode}")
    return json.loads(run.stdout)


def node_label(label):
    """A step's label without its part suffix (' [wg 3..6 of 6]')."""
    return re.sub(r"\s*\[wg [^\]]*\]$", "", label)


def kernel_family(kernel):
    """A kernel name without its shape, ISA and fused-epilogue suffixes."""
    name = re.sub(r"_\d+(x\d+)+(_.*)?$", "", kernel)
    return re.sub(r"_(avx512|avx2|portable)$", "", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--input", help="input .npy (default: MODEL with .in.npy, else random)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--iterations", type=int, default=100, help="timed calls per bench (default 100)")
    ap.add_argument("--top", type=int, default=20, help="steps to list (default 20)")
    ap.add_argument("--ingot", default=os.path.join(HERE, "..", "build", "bin", "ingot"))
    ap.add_argument("--json", help="write the per-step figures here")
    args = ap.parse_args()
    if not os.path.isfile(args.model):
        fail(f"no model file '{args.model}'")
    if args.workers < 2:
        fail(f"--workers must be at least 2, got {args.workers}")
    if args.rounds < 1 or args.iterations < 1:
        fail("--rounds and --iterations must be at least 1")
    inp = args.input or (args.model[:-5] + ".in.npy" if args.model.endswith(".onnx") else "")
    input_flag = [f"--input=@{inp}"] if inp and os.path.isfile(inp) else []
    if args.input and not input_flag:
        fail(f"no input file '{args.input}'")

    handoff = os.path.join(HERE, "work", "handoff")  # built by bench/run.sh from bench/handoff.c

    def cpu_distance():
        if not os.access(handoff, os.X_OK):
            return None
        run = subprocess.run([handoff], capture_output=True, text=True)
        found = re.search(r"(\d+) ns round trip", run.stdout)
        return int(found.group(1)) if run.returncode == 0 and found else None

    distance_before = cpu_distance()
    with tempfile.TemporaryDirectory() as tmp:
        one, many = os.path.join(tmp, "one.ingot"), os.path.join(tmp, "many.ingot")
        for path, workers in ((one, 1), (many, args.workers)):
            run = subprocess.run([args.ingot, "compile", args.model, f"--workers={workers}", "-o", path],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                fail(f"ingot compile failed: {run.stderr.strip()}")
        plan = run_json([args.ingot, "inspect", many, "--plan", "--json"])["plan"]
        if plan["worker_count"] < 2:
            fail(f"the compiler kept {os.path.basename(args.model)} on one worker (splitting would not pay)")
        worker_of = {}
        for w, lst in enumerate(plan["workers"]):
            for s in range(lst["step_first"], lst["step_first"] + lst["step_count"]):
                worker_of[s] = w

        def bench(module, threads):
            cmd = [args.ingot, "bench", module, "--per-step", "--json", "--iterations", str(args.iterations)] + input_flag
            if threads:
                cmd += ["--threads", str(threads)]
            return run_json(cmd)

        # The host: the one-worker plan pinned to each of N CPUs, alone and as
        # N copies at once (one per CPU). Nothing is shared between the copies, so what
        # they lose at once is the host's (a CPU slower under load, caches and memory
        # shared with neighbours), not the partition's.
        cpus = cpus_one_per_core()[:args.workers]
        host = {"alone": collections.defaultdict(list), "together": collections.defaultdict(list)}

        def copies(on):
            try:
                return ingot_copies_at_once(one, input_flag[0][len("--input=@"):] if input_flag else None,
                                            args.iterations, 10, on, ingot=args.ingot)
            except EngineError as e:
                fail(f"'ingot bench' pinned to one CPU: {e}")

        def host_round():
            if len(cpus) < args.workers:
                return
            for cpu in cpus:
                host["alone"][cpu] += [c["median"] for c in copies([cpu])]
            for cpu, c in zip(cpus, copies(cpus)):
                host["together"][cpu].append(c["median"])

        kinds = (("whole", one, 0), ("parts1", many, 1), ("partsN", many, 0))
        samples = {k: collections.defaultdict(list) for k, _, _ in kinds}
        medians = collections.defaultdict(list)
        info = {}
        for _ in range(args.rounds):
            for kind, module, threads in kinds:
                out = bench(module, threads)
                medians[kind].append(out["median"])
                for s in out["per_step"]["steps"]:
                    if not s.get("kernel"):
                        continue  # SIGNAL and WAIT entries
                    samples[kind][s["step"]].append(s["us"])
                    info[(kind, s["step"])] = s
            host_round()
        # The end-to-end ratio paired in one process (the two plans in turns of 5 calls):
        # separate runs can land in different minutes of a noisy host.
        run = subprocess.run([args.ingot, "bench", many, "--against", one, "--iterations", str(args.iterations),
                              "--calls-per-turn", "5"] + input_flag, capture_output=True, text=True)
        paired = re.search(r"B/A: median of \d+ turns ([0-9.]+)", run.stdout + run.stderr)
        paired_ratio = float(paired.group(1)) if run.returncode == 0 and paired else None

    med = {k: {s: statistics.median(v) for s, v in d.items()} for k, d in samples.items()}
    # Whole steps of the one-worker plan and parts of the N-worker plan, by node label.
    whole_by_label = collections.defaultdict(float)
    for s, us in med["whole"].items():
        whole_by_label[node_label(info[("whole", s)]["label"])] += us
    rows = []
    for s, t1 in med["parts1"].items():
        st = info[("parts1", s)]
        rows.append({"step": s, "worker": worker_of.get(s, 0), "label": st["label"], "node": node_label(st["label"]),
                     "kernel": st["kernel"], "one_thread_us": t1, "n_threads_us": med["partsN"].get(s, 0.0)})

    n = args.workers
    t_whole = sum(med["whole"].values())
    t_parts1 = sum(r["one_thread_us"] for r in rows)
    t_partsN = sum(r["n_threads_us"] for r in rows)
    per_worker = [sum(r["n_threads_us"] for r in rows if r["worker"] == w) for w in range(n)]
    busiest = max(per_worker)
    wall_1 = statistics.median(medians["whole"])
    wall_n = statistics.median(medians["partsN"])
    distances = [d for d in (distance_before, cpu_distance()) if d is not None]
    where = (f"; the first two CPUs' cache-line round trip {' and '.join(f'{d} ns' for d in distances)} before and after"
             if len(distances) == 2 else "")
    print(f"{os.path.basename(args.model)}: {n} workers, {args.rounds} round{'s' if args.rounds != 1 else ''} of {args.iterations} calls{where}")
    paired_text = f"{paired_ratio:.2f}x paired in one process" if paired_ratio else "no paired figure"
    print(f"  {n} workers against one: {paired_text} (ideal {n}x); medians of the separate runs: one worker "
          f"{wall_1:.1f} us, {n} workers on {n} threads {wall_n:.1f} us")
    print(f"  step times summed: one-worker plan {t_whole:.1f} us; {n}-worker plan's parts on one thread "
          f"{t_parts1:.1f} us (partition {100 * (t_parts1 / t_whole - 1):+.1f}%), on {n} threads {t_partsN:.1f} us "
          f"(concurrency {100 * (t_partsN / t_parts1 - 1):+.1f}%)")
    print(f"  per worker on {n} threads: {', '.join(f'{t:.0f}' for t in per_worker)} us "
          f"(imbalance {100 * (busiest / (t_partsN / n) - 1):+.1f}%); "
          f"the {n}-thread median less the busiest worker's observed steps (sync, hand-offs; negative where "
          f"observing the steps cost more): {wall_n - busiest:+.1f} us")

    # What the host allows: a plan whose parts are equal can at best run as fast as its
    # slowest CPU under load lets it; one whose parts followed each CPU's speed, the sum.
    host_ceiling = None
    if host["together"]:
        alone = {c: statistics.median(v) for c, v in host["alone"].items()}
        together = {c: statistics.median(v) for c, v in host["together"].items()}
        reference = statistics.median(sum(host["alone"].values(), []))
        speeds = {c: reference / together[c] for c in cpus}
        host_ceiling = {"cpus": cpus, "alone_us": alone, "together_us": together,
                        "equal_parts": n * min(speeds.values()), "parts_by_speed": sum(speeds.values())}
        print(f"  the host: the one-worker plan pinned to CPU {', '.join(map(str, cpus))}: alone "
              f"{', '.join(f'{alone[c]:.0f}' for c in cpus)} us, {n} copies at once "
              f"{', '.join(f'{together[c]:.0f}' for c in cpus)} us; so {n} workers can reach at most "
              f"{host_ceiling['equal_parts']:.2f}x with equal parts, {host_ceiling['parts_by_speed']:.2f}x with "
              f"parts sized to each CPU's speed under load"
              + (f"; the paired ratio is {paired_ratio / host_ceiling['equal_parts']:.0%} of the first"
                 if paired_ratio else ""))
    else:
        print(f"  the host: fewer than {n} CPUs to pin to; no ceiling measured")

    # Partition overhead by node: a node's parts on one thread against its whole step.
    parts_by_label = collections.defaultdict(float)
    for r in rows:
        parts_by_label[r["node"]] += r["one_thread_us"]
    split_cost = sorted(((parts_by_label[k] - whole_by_label[k], k) for k in parts_by_label if k in whole_by_label),
                        reverse=True)
    print(f"\nlargest partition costs (the {n}-worker plan's parts on one thread against the whole step), us:")
    for extra, k in split_cost[: max(1, args.top // 4)]:
        print(f"  {extra:+8.1f}  {whole_by_label[k]:8.1f} -> {parts_by_label[k]:8.1f}  {k[:100]}")

    print(f"\nsteps whose parts grow most on {n} threads (us on one thread -> on {n}):")
    print(" worker  step  1 thread  N threads  ratio  kernel / label")
    for r in sorted(rows, key=lambda r: r["one_thread_us"] - r["n_threads_us"])[: args.top]:
        ratio = r["n_threads_us"] / r["one_thread_us"] if r["one_thread_us"] else 0.0
        print(f"  {r['worker']:5d} {r['step']:5d} {r['one_thread_us']:9.1f} {r['n_threads_us']:10.1f} {ratio:6.2f}  "
              f"{r['kernel'][:60]}  ({r['label'][-40:]})")

    families = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        f = families[kernel_family(r["kernel"])]
        f[0] += r["one_thread_us"]
        f[1] += r["n_threads_us"]
        f[2] += 1
    print(f"\nby kernel family (parts summed; us on one thread -> on {n}):")
    for name, (a, b, count) in sorted(families.items(), key=lambda kv: kv[1][0] - kv[1][1])[: args.top]:
        print(f"  {a:9.1f} -> {b:9.1f}  {b / a if a else 0:5.2f}x  {count:3d} parts  {name}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "workers": n, "rounds": args.rounds, "one_worker_median_us": wall_1,
                       "n_workers_median_us": wall_n, "paired_speedup": paired_ratio, "whole_steps_us": t_whole, "parts_one_thread_us": t_parts1,
                       "parts_n_threads_us": t_partsN, "per_worker_us": per_worker, "host": host_ceiling, "steps": rows}, f, indent=1)


if __name__ == "__main__":
    main()
