"""Runs the malformed-input corpus (tests/malformed/MANIFEST) through `ingot`.

/usr/bin/python3 tests/malformed/run_corpus.py --ingot build/bin/ingot --out build/malformed [--show]

Writes the corpus (make_corpus.py), compiles the base model the module cases are cut
from, then runs every manifest case and fails on any crash, sanitizer report, hang
(--timeout seconds), wrong exit status, missing message fragment, an error that is
not exactly one line, or a failed command that leaves a file in its output folder.
Every corpus file must be named by some case. --show prints what each case gave.
"""
import argparse
import os
import re
import shlex
import shutil
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


def parse_manifest(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" | ")]
            if len(parts) != 4:
                sys.exit(f"MANIFEST:{number}: expected 'case | status | command | message', got: {line}")
            case, status, command, message = parts
            cases.append((number, case, int(status), command, message))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    ingot = os.path.abspath(args.ingot)
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    def setup(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"setup failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")

    setup([PY, f"{HERE}/make_corpus.py", "inputs", out])
    # A named baseline target, not the host: the module cases are cut at sizes the
    # MANIFEST names, and a host's ISA changes the code and the weights' packing.
    base_target = "--target=x86_64" if platform.machine() in ("x86_64", "AMD64") else "--target=generic"
    setup([ingot, "compile", f"{out}/base/base.onnx", "-o", f"{out}/base/base.ingot", base_target])
    setup([ingot, "compile", f"{out}/base/base.onnx", "-o", f"{out}/base/ext.ingot", "--weights=external", base_target])
    setup([PY, f"{HERE}/make_corpus.py", "modules", out])

    cases = parse_manifest(f"{HERE}/MANIFEST")
    names = set()
    failures = []
    counts = {}
    start = time.time()
    for number, case, status, command, message in cases:
        if case in names:
            failures.append(f"MANIFEST:{number}: case {case} listed twice")
        names.add(case)
        if args.only and args.only not in case:
            continue
        path = os.path.join(out, case.split("#")[0])
        # inline/NAME cases have no file: the command line is the input.
        if not case.startswith("inline/") and not os.path.lexists(path):
            failures.append(f"{case}: the corpus has no such file")
            continue
        kind = case.split("/")[0]
        counts[kind] = counts.get(kind, 0) + 1
        work = os.path.join(out, "out", case.replace("/", "_"))
        os.makedirs(work, exist_ok=True)
        # {mkdir:NAME} in a command: a folder {o}/NAME made before it runs (an output
        # path that cannot be written); the word itself is not passed.
        words = shlex.split(command)
        for word in words:
            if word.startswith("{mkdir:"):
                os.makedirs(os.path.join(work, word[len("{mkdir:"):-1]), exist_ok=True)
        words = [w for w in words if not w.startswith("{mkdir:")]
        before = set(os.listdir(work))
        argv = [a.format(c=path, o=work, d=out) for a in words]
        try:
            r = subprocess.run([ingot] + argv, capture_output=True, text=True, errors="replace",
                               timeout=args.timeout, cwd=work)
            rc, text = r.returncode, r.stdout + r.stderr
            err_lines = [l for l in r.stderr.splitlines() if l.strip()]
        except subprocess.TimeoutExpired:
            failures.append(f"{case}: no answer within {args.timeout:.0f} s (hang)")
            continue
        if args.show:
            print(f"{case} | {rc} | {command} | {err_lines[0] if err_lines else ''}")
        problems = []
        if rc < 0 or rc >= 128:
            problems.append(f"crashed (status {rc})")
        if "Sanitizer" in text or "runtime error:" in text:
            problems.append("sanitizer report")
        if rc != status:
            problems.append(f"exit status {rc}, expected {status}")
        if message and message not in text:
            problems.append(f"no '{message}' in the output")
        if status != 0 and len(err_lines) != 1:
            problems.append(f"{len(err_lines)} lines of error output, expected 1")
        left = sorted(set(os.listdir(work)) - before)
        if rc != 0 and left:
            problems.append(f"left {', '.join(left)} behind")
        if problems:
            failures.append(f"{case}: {'; '.join(problems)}\n    command: ingot {' '.join(argv)}\n    output: "
                            + "\n            ".join(text.strip().splitlines()[:4]))

    # Every file of the corpus is a case.
    if not args.only:
        for kind in ("onnx", "modules", "tensors", "weights"):
            root = os.path.join(out, kind)
            for entry in sorted(os.listdir(root)):
                rel = f"{kind}/{entry}"
                if kind == "onnx" and entry == "ext":
                    for sub in sorted(os.listdir(os.path.join(root, entry))):
                        if sub.endswith(".onnx") and f"{rel}/{sub}" not in names:  # noqa
                            failures.append(f"{rel}/{sub}: in the corpus but not in MANIFEST")
                    continue
                if kind == "weights":
                    rel = f"{rel}/ext.ingot"
                if entry == "outside.bin":
                    continue
                if rel not in {n.split("#")[0] for n in names}:
                    failures.append(f"{rel}: in the corpus but not in MANIFEST")

    total = sum(counts.values())
    print(f"{total} cases in {time.time() - start:.1f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
