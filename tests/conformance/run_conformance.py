#!/usr/bin/python3
"""Runs the ONNX backend node tests through `ingot compile` and `ingot run`.

Usage:
  /usr/bin/python3 tests/conformance/run_conformance.py --ingot build/bin/ingot \
      [--cases build/conformance/cases] [--out build/conformance] [--jobs 2] [CASE_REGEX...]

Each case (a model.onnx with test_data_set_*/input_*.pb and output_*.pb, written by
generate.py) is classified:

  pass         it compiles, and every data set runs and matches the expected outputs
  fail         wrong numbers, a crash or signal, a hang (timeout), or a compile error
               that is not a clean "unsupported" error
  unsupported  compile exits 2 with a clean message naming an unsupported op, dtype,
               attribute, or a dynamic / data-dependent shape
  ineligible   not an inference-op case on float32/int64/int32/bool tensors (training
               ops, loss functions, Dropout or BatchNormalization in training mode,
               sequences, optionals, strings, random generators, other dtypes); not
               compiled
  known        a fail listed in expected_failures.txt (reported apart; does not fail
               the run)

Prints a table by op and the totals, writes them as JSON (OUT/results.json) and exits 1
when any eligible case fails or when fewer cases pass than pass_floor.txt says (not
checked when CASE_REGEX narrows the run).

Many node tests feed shape parameters (Reshape's shape, ReduceSum's axes, Slice's
starts, Pad's pads, ...) as graph inputs. A static-shape compiler needs them at compile
time, so by default those cases are "unsupported". --specialize retries them with the
parameters made constants holding each data set's values and counts such passes apart
("specialized"); it never freezes data inputs. The totals then give both counts: as
compiled (what a plain `ingot compile` of the case does) and with --specialize. Tolerances follow the ONNX
backend's node tests (rtol 1e-3, atol 1e-7) unless tolerances.txt overrides a case;
integer and bool outputs must match exactly.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Ops that only make sense while training a model, or whose results are random.
TRAINING_OPS = {"Adagrad", "Adam", "Momentum", "Gradient"}
TRAINING_DOMAINS = {"ai.onnx.preview.training"}
# Loss functions exist to train a model; their test cases are grouped with training.
LOSS_OPS = {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}
RANDOM_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
              "RandomUniformLike"}
SEQUENCE_OPS = {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                "ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement"}
STRING_OPS = {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit"}
# onnx.TensorProto.DataType values that ingot's conformance covers.
ELIGIBLE_DTYPES = {1: "float32", 7: "int64", 6: "int32", 9: "bool"}
DTYPE_NAMES = {0: "undefined", 1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16",
               6: "int32", 7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "double",
               12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16"}

# A compile error (exit 2) whose message says what ingot does not support is a clean
# "unsupported"; any other compile error is a fail.
UNSUPPORTED_PATTERNS = re.compile(
    r"unsupported op|is not supported|are not supported|not supported at run time|"
    r"must be known at compile time|is dynamic|only f32 is supported|"
    r"only [^;]* (is|are) supported|cannot run at run time|"
    r"has no Vulkan lowering|takes f32 tensors only|has no Vulkan form")

# --target: extra compile arguments (a device target), set once by main().
COMPILE_ARGS = []

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7
# --specialize: a compile error naming one of these node inputs, fed by a graph input,
# is retried with that input made a constant holding the data set's value.
COMPILE_TIME_INPUT = re.compile(
    r"error: \w+ node '([^']*)' \(opset \d+\): input (\d+) \((\w+)\) must be known at compile time")
SHAPE_PARAMETERS = {"axes", "shape", "starts", "ends", "steps", "pads", "repeats", "K", "depth", "scales",
                    "sizes", "roi", "split", "start", "limit", "delta"}

COMPILE_TIMEOUT_S = 120
RUN_TIMEOUT_S = 60


# ---- case metadata ---------------------------------------------------------------

def tensor_types(model):
    """Yields (what, elem_type or a non-tensor kind) for every typed thing in the model."""
    import onnx

    def value_types(values, role):
        for v in values:
            kind = v.type.WhichOneof("value")
            if kind == "tensor_type":
                yield f"{role} '{v.name}'", v.type.tensor_type.elem_type
            elif kind is not None:
                yield f"{role} '{v.name}'", kind

    def graph_types(g):
        yield from value_types(g.input, "input")
        yield from value_types(g.output, "output")
        yield from value_types(g.value_info, "value")
        for t in g.initializer:
            yield f"initializer '{t.name}'", t.data_type
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    yield f"{n.op_type} attribute '{a.name}'", a.t.data_type
                elif a.type == onnx.AttributeProto.GRAPH:
                    yield from graph_types(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sub in a.graphs:
                        yield from graph_types(sub)
            if n.op_type in ("Cast", "EyeLike", "RandomUniform", "RandomNormal",
                             "RandomUniformLike", "RandomNormalLike", "Multinomial"):
                for a in n.attribute:
                    if a.name in ("to", "dtype"):
                        yield f"{n.op_type} attribute '{a.name}'", a.i

    yield from graph_types(model.graph)


def all_nodes(graph):
    import onnx

    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    yield from all_nodes(sub)


def case_info(case_dir, name, single_op_of):
    """The case's op and, when it is ineligible, why."""
    import onnx

    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    nodes = list(all_nodes(model.graph))
    top_ops = [n.op_type for n in model.graph.node]
    op = single_op_of.get(name[: -len("_expanded")]) if name.endswith("_expanded") else None
    if op is None:
        real = [o for o in top_ops if o != "Constant"] or top_ops
        op = real[0] if len(set(real)) == 1 else "+".join(sorted(set(real)))
    why = None
    for n in nodes:
        if n.domain in TRAINING_DOMAINS or n.op_type in TRAINING_OPS:
            why = f"training op {n.op_type}"
        elif n.op_type in LOSS_OPS or op in LOSS_OPS:
            why = f"loss function {op}"
        elif n.op_type in RANDOM_OPS:
            why = f"random generator {n.op_type}"
        elif n.op_type in SEQUENCE_OPS:
            why = f"sequence/optional op {n.op_type}"
        elif n.op_type in STRING_OPS:
            why = f"string op {n.op_type}"
        elif n.op_type == "Dropout" and len(n.input) > 2 and n.input[2]:
            why = "Dropout in training mode (random mask)"
        elif any(a.name == "training_mode" and a.i for a in n.attribute):
            why = f"{n.op_type} in training mode"
        if why:
            break
    if not why:
        for what, t in tensor_types(model):
            if isinstance(t, str):
                why = f"{what} has {t.replace('_type', '')} type"
            elif t not in ELIGIBLE_DTYPES:
                why = f"{what} is {DTYPE_NAMES.get(t, f'dtype #{t}')}"
            if why:
                break
    data_sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    return {"op": op, "ineligible": why, "data_sets": data_sets,
            "inputs": len(model.graph.input), "outputs": len(model.graph.output)}


# ---- running ------------------------------------------------------------------------

def read_list(path):
    """NAME  REASON... lines ('#' comments); returns {name: reason}."""
    entries = {}
    if not os.path.exists(path):
        return entries
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            entries[parts[0]] = parts[1] if len(parts) > 1 else ""
    return entries


def read_floors(path):
    """'pass N' and 'pass_with_specialize N' lines; returns {key: N}."""
    floors = {}
    for key, rest in read_list(path).items():
        try:
            floors[key] = int(rest.split()[0])
        except (IndexError, ValueError):
            sys.exit(f"error: {path}: '{key}' needs a number")
    return floors


def read_tolerances(path):
    """NAME RTOL ATOL  REASON lines; returns {name: (rtol, atol)}."""
    out = {}
    for name, rest in read_list(path).items():
        fields = rest.split()
        if len(fields) < 2:
            sys.exit(f"error: {path}: '{name}' needs RTOL ATOL and a reason")
        out[name] = (float(fields[0]), float(fields[1]))
    return out


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def describe_signal(rc):
    if rc < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def compile_model(ingot, model_path, module):
    """Returns ("ok", ""), ("unsupported", message) or ("fail", detail)."""
    try:
        proc = subprocess.run([ingot, "compile", model_path, "-o", module] + COMPILE_ARGS,
                              capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "fail", f"compile timed out after {COMPILE_TIMEOUT_S} s"
    if proc.returncode == 0:
        return "ok", ""
    message = last_line(proc.stderr) or last_line(proc.stdout)
    if proc.returncode == 2 and message.startswith("error:") and UNSUPPORTED_PATTERNS.search(message):
        return "unsupported", message
    return "fail", f"compile {describe_signal(proc.returncode)}: {message}"


def run_data_set(ingot, module, ds, data_set, inputs, outputs, tolerance):
    """Runs one data set; returns None when it matches, else the failure detail."""
    rtol, atol = tolerance
    cmd = [ingot, "run", module, "--no-print", f"--rtol={rtol!r}", f"--atol={atol!r}"]
    cmd += [f"--input=@{os.path.join(ds, f'input_{i}.pb')}" for i in inputs]
    cmd += [f"--expected-output=@{os.path.join(ds, f'output_{i}.pb')}" for i in range(outputs)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{data_set}: run timed out after {RUN_TIMEOUT_S} s (hang?)"
    if proc.returncode == 1:
        bad = [l for l in proc.stdout.splitlines() if l.startswith("[FAILED]")]
        return f"{data_set}: mismatch: " + "; ".join(bad)
    if proc.returncode != 0:
        message = last_line(proc.stderr) or last_line(proc.stdout)
        return f"{data_set}: run {describe_signal(proc.returncode)}: {message}"
    return None


def freeze_input(model, message, ds):
    """--specialize: when |message| says a shape parameter (axes, shape, pads, ...) that
    is a graph input must be known at compile time, makes that input an initializer
    holding the data set's value. Returns the input's index, or None."""
    import onnx

    m = COMPILE_TIME_INPUT.search(message)
    if not m or m.group(3) not in SHAPE_PARAMETERS:
        return None
    node_name, index = m.group(1), int(m.group(2))
    for i, n in enumerate(model.graph.node):
        if (n.name or f"{n.op_type}_{i}") == node_name and index < len(n.input):
            value = n.input[index]
            break
    else:
        return None
    names = [v.name for v in model.graph.input]
    if value not in names:
        return None
    j = names.index(value)
    tensor = onnx.TensorProto()
    with open(os.path.join(ds, f"input_{j}.pb"), "rb") as f:
        tensor.ParseFromString(f.read())
    tensor.name = value
    model.graph.initializer.append(tensor)
    return j


def run_case(ingot, case_dir, name, info, work_dir, tolerance, specialize=False):
    """Compiles and runs one eligible case; returns a result dict."""
    result = {"name": name, "op": info["op"]}
    start = time.monotonic()
    os.makedirs(work_dir, exist_ok=True)
    module = os.path.join(work_dir, name + ".ingot")
    status, message = compile_model(ingot, os.path.join(case_dir, "model.onnx"), module)
    if status == "ok":
        for data_set in info["data_sets"]:
            detail = run_data_set(ingot, module, os.path.join(case_dir, data_set), data_set,
                                  range(info["inputs"]), info["outputs"], tolerance)
            if detail:
                result.update(status="fail", stage="run", detail=detail)
                return finish(result, start, module)
        result.update(status="pass")
        return finish(result, start, module)
    if not (specialize and status == "unsupported" and COMPILE_TIME_INPUT.search(message)):
        result.update(status=status, stage="compile", detail=message)
        return finish(result, start, module)

    # Specialized: shape parameters become constants holding each data set's values.
    import onnx

    original = onnx.load(os.path.join(case_dir, "model.onnx"))
    model_path = os.path.join(work_dir, name + ".onnx")
    frozen_names = set()
    first_message = message
    for data_set in info["data_sets"]:
        ds = os.path.join(case_dir, data_set)
        model = onnx.ModelProto()
        model.CopyFrom(original)  # gathers the frozen inputs as initializers
        frozen = []
        status, message = "unsupported", first_message
        for _ in range(8):
            j = freeze_input(model, message, ds)
            if j is None or j in frozen:
                break
            frozen.append(j)
            trimmed = onnx.ModelProto()
            trimmed.CopyFrom(model)
            del trimmed.graph.input[:]
            trimmed.graph.input.extend(v for k, v in enumerate(model.graph.input) if k not in frozen)
            onnx.save(trimmed, model_path)
            status, message = compile_model(ingot, model_path, module)
            if status != "unsupported":
                break
        if status != "ok":
            result.update(status=status, stage="compile", detail=message)
            return finish(result, start, module, model_path)
        frozen_names.update(original.graph.input[j].name for j in frozen)
        inputs = [k for k in range(info["inputs"]) if k not in frozen]
        detail = run_data_set(ingot, module, ds, data_set, inputs, info["outputs"], tolerance)
        if detail:
            result.update(status="fail", stage="run", detail=detail, specialized=sorted(frozen_names))
            return finish(result, start, module, model_path)
    result.update(status="pass", specialized=sorted(frozen_names))
    return finish(result, start, module, model_path)


def finish(result, start, *scratch):
    result["seconds"] = round(time.monotonic() - start, 3)
    for path in scratch:
        try:
            os.remove(path)
        except OSError:
            pass
    return result


# ---- report -------------------------------------------------------------------------

def print_table(by_op, totals, out, specialized=False):
    width = max([len("op")] + [len(op) for op in by_op])
    header = f"{'op':<{width}}  {'eligible':>8}  {'pass':>5}  {'unsupported':>11}  {'fail':>5}  {'known':>5}"
    if specialized:
        header += "  specialized"
    print(header, file=out)
    print("-" * len(header), file=out)
    for op in sorted(by_op):
        c = by_op[op]
        if c["eligible"] == 0:
            continue
        print(f"{op:<{width}}  {c['eligible']:>8}  {c['pass']:>5}  {c['unsupported']:>11}  {c['fail']:>5}  {c['known']:>5}"
              + (f"  {c['specialized']:>11}" if specialized else ""), file=out)
    print("-" * len(header), file=out)
    t = totals
    print(f"{'total':<{width}}  {t['eligible']:>8}  {t['pass']:>5}  {t['unsupported']:>11}  {t['fail']:>5}  {t['known']:>5}"
          + (f"  {t['specialized']:>11}" if specialized else ""), file=out)
    print(f"ineligible cases: {t['ineligible']} (not compiled)", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingot", required=True, help="the ingot executable")
    parser.add_argument("--cases", default=os.path.join("build", "conformance", "cases"),
                        help="folder written by generate.py (default: %(default)s)")
    parser.add_argument("--out", default=os.path.join("build", "conformance"),
                        help="folder for results.json and scratch modules (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel cases (default: %(default)s)")
    parser.add_argument("--floor", default=os.path.join(HERE, "pass_floor.txt"))
    parser.add_argument("--expected-failures", default=os.path.join(HERE, "expected_failures.txt"))
    parser.add_argument("--tolerances", default=os.path.join(HERE, "tolerances.txt"))
    parser.add_argument("--quiet", action="store_true", help="print only failures and totals")
    parser.add_argument("--specialize", action="store_true",
                        help="retry a case whose shape parameters (axes, shape, pads, ...) arrive as graph "
                             "inputs with them made constants holding the data set's values; such "
                             "passes are counted apart as 'specialized'")
    parser.add_argument("--target", default=None,
                        help="compile for this target (e.g. vulkan: every case runs on the Vulkan device; "
                             "ops without a device lowering count as unsupported)")
    parser.add_argument("patterns", nargs="*", help="only cases whose name matches one of these regexes")
    args = parser.parse_args()
    if args.target:
        COMPILE_ARGS.append(f"--target={args.target}")

    started = time.monotonic()
    ingot = os.path.abspath(args.ingot)
    if not os.access(ingot, os.X_OK):
        sys.exit(f"error: '{args.ingot}' is not an executable")
    if args.target and args.target.startswith("vulkan"):
        probe = subprocess.run([ingot, "devices"], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"SKIP: no Vulkan device: {last_line(probe.stderr) or last_line(probe.stdout)}")
            sys.exit(77)
    node_dir = os.path.join(args.cases, "node")
    if not os.path.isdir(node_dir):
        sys.exit(f"error: no cases in '{node_dir}'; run tests/conformance/generate.py --out {args.cases}")
    try:
        import onnx
    except ImportError:
        sys.exit("error: the onnx Python package is missing; run with /usr/bin/python3")

    names = sorted(d for d in os.listdir(node_dir) if os.path.isfile(os.path.join(node_dir, d, "model.onnx")))
    if args.patterns:
        names = [n for n in names if any(re.search(p, n) for p in args.patterns)]
    expected_failures = read_list(args.expected_failures)
    tolerances = read_tolerances(args.tolerances)
    known_names = set(os.listdir(node_dir))
    for listed in list(expected_failures) + list(tolerances):
        if listed not in known_names:
            print(f"warning: '{listed}' is listed but is not a generated case", file=sys.stderr)

    # The op of an "_expanded" case is that of the single-node case it expands.
    single_op_of = {}
    for n in sorted(os.listdir(node_dir)):
        if n.endswith("_expanded"):
            continue
        path = os.path.join(node_dir, n, "model.onnx")
        if os.path.isfile(path):
            m = onnx.load(path)
            if len(m.graph.node) == 1:
                single_op_of[n] = m.graph.node[0].op_type

    infos = {n: case_info(os.path.join(node_dir, n), n, single_op_of) for n in names}
    work_dir = os.path.join(args.out, "modules")
    results = []
    todo = [n for n in names if not infos[n]["ineligible"]]
    for n in names:
        if infos[n]["ineligible"]:
            results.append({"name": n, "op": infos[n]["op"], "status": "ineligible", "detail": infos[n]["ineligible"]})
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, ingot, os.path.join(node_dir, n), n, infos[n], work_dir,
                               tolerances.get(n, (DEFAULT_RTOL, DEFAULT_ATOL)), args.specialize): n
                   for n in todo}
        for future in concurrent.futures.as_completed(futures):
            r = future.result()
            if r["status"] == "fail" and r["name"] in expected_failures:
                r["status"] = "known"
                r["known_reason"] = expected_failures[r["name"]]
            results.append(r)
            if not args.quiet or r["status"] == "fail":
                print(f"{r['status']:<11} {r['name']}" + (f": {r['detail']}" if r.get("detail") else ""), flush=True)
    shutil.rmtree(work_dir, ignore_errors=True)
    results.sort(key=lambda r: r["name"])

    by_op = {}
    def counters():
        return {"eligible": 0, "pass": 0, "specialized": 0, "unsupported": 0, "fail": 0, "known": 0, "ineligible": 0}

    totals = counters()
    totals["cases"] = len(results)
    for r in results:
        c = by_op.setdefault(r["op"], counters())
        c[r["status"]] += 1
        totals[r["status"]] += 1
        if r["status"] == "pass" and r.get("specialized"):
            c["specialized"] += 1
            totals["specialized"] += 1
        if r["status"] != "ineligible":
            c["eligible"] += 1
            totals["eligible"] += 1
    elapsed = time.monotonic() - started

    print()
    print_table(by_op, totals, sys.stdout, args.specialize)
    unsupported_ops = {}
    for r in results:
        if r["status"] == "unsupported":
            unsupported_ops[r["op"]] = unsupported_ops.get(r["op"], 0) + 1
    if unsupported_ops:
        print("unsupported by op: " + ", ".join(f"{op} {n}" for op, n in sorted(unsupported_ops.items(), key=lambda kv: (-kv[1], kv[0]))))
    known = [r for r in results if r["status"] == "known"]
    for r in known:
        print(f"known failure {r['name']}: {r['known_reason']} ({r['detail']})")
    for r in results:
        if r["status"] == "pass" and r["name"] in expected_failures:
            print(f"note: {r['name']} passes; remove it from {args.expected_failures}")
    for r in results:
        if r["status"] == "fail":
            print(f"FAIL {r['name']}: {r['detail']}")
    eligible = totals["eligible"]
    as_compiled = totals["pass"] - totals["specialized"]
    totals["pass_as_compiled"] = as_compiled

    def pct(n):
        return round(100.0 * n / eligible, 1) if eligible else 0.0

    print(f"pass {as_compiled} of {eligible} eligible ({pct(as_compiled)}%) as compiled, "
          f"unsupported {totals['unsupported'] + totals['specialized']}, fail {totals['fail']}, "
          f"known {totals['known']}, ineligible {totals['ineligible']}; {elapsed:.0f} s with {args.jobs} jobs")
    if args.specialize:
        print(f"pass {totals['pass']} of {eligible} eligible ({pct(totals['pass'])}%) with --specialize "
              f"({totals['specialized']} of them with shape parameters made constants), "
              f"unsupported {totals['unsupported']}")

    floors = read_floors(args.floor)
    os.makedirs(args.out, exist_ok=True)
    report = {"totals": totals, "pass_rate_as_compiled": pct(as_compiled),
              "pass_rate": pct(totals["pass"]), "seconds": round(elapsed, 1),
              "jobs": args.jobs, "pass_floors": floors, "filtered": bool(args.patterns),
              "specialize": args.specialize,
              "tolerance_default": {"rtol": DEFAULT_RTOL, "atol": DEFAULT_ATOL},
              "by_op": dict(sorted(by_op.items())), "unsupported_by_op": unsupported_ops, "cases": results}
    out_path = os.path.join(args.out, "results.json")
    with open(out_path + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    os.replace(out_path + ".tmp", out_path)
    print(f"results: {out_path}")

    status = 0
    if totals["fail"]:
        print(f"FAILED: {totals['fail']} eligible case(s) fail", file=sys.stderr)
        status = 1
    checks = [("pass", as_compiled, "cases pass as compiled")]
    if args.specialize:
        checks.append(("pass_with_specialize", totals["pass"], "cases pass with --specialize"))
    for key, count, what in checks:
        if not args.patterns and key in floors and count < floors[key]:
            print(f"FAILED: {count} {what}, below the floor of {floors[key]} in {args.floor}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
