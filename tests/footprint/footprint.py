#!/usr/bin/python3
"""Footprint of the demo MLP (digits) and the DS-CNN (kws): every output form for
x86-64 and Cortex-M4, by part, and the regression check against committed thresholds.

    footprint.py --ingot BUILD/bin/ingot --work DIR --thresholds thresholds.json [--update]

DIR is tests/e2e/firmware.sh's work folder: DIR/models/{digits,kws}.onnx, the Cortex-M4
C artifacts in DIR/cortex-m4/, and one firmware per model in DIR/fw-{digits,kws}/
(firmware.elf and run.txt, the QEMU output with the invoke stack depth).

Each artifact is sized by `ingot inspect --size --json`. The check fails (exit 1) when a
measured value exceeds its threshold by more than the tolerance (3%); --update rewrites
the thresholds from the measurement instead (after an intended change).
"""
import argparse
import json
import os
import re
import subprocess
import sys

MODELS = ["digits", "kws"]
PARTS = ["entry", "plan", "kernels", "helpers", "metadata", "weights", "other"]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"footprint: {' '.join(cmd)} failed:\n{r.stderr}")
    return r.stdout


def inspect(ingot, path):
    report = json.loads(run([ingot, "inspect", path, "--size", "--json"]))
    size = report["size"]
    parts = size["parts"]
    total = report["file_size"] if "module" in report else size["total"]
    return {"total": total, "parts": parts, "ingot": size["ingot_without_weights"],
            "text": size.get("text"), "data": size.get("data"), "bss": size.get("bss"),
            "ingot_ram": size.get("ingot_ram", 0)}


def header_value(path, pattern):
    with open(path) as f:
        m = re.search(pattern, f.read())
    if not m:
        sys.exit(f"footprint: '{pattern}' not found in {path}")
    return int(m.group(1))


def section_sizes(elf):
    sizes = {}
    for line in run(["arm-none-eabi-size", "-A", elf]).splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].startswith(".") and f[1].isdigit():
            sizes[f[0]] = int(f[1])
    return sizes


def measure(ingot, work):
    out_dir = os.path.join(work, "footprint")
    os.makedirs(out_dir, exist_ok=True)
    rows, measured, notes = [], {}, {}
    for m in MODELS:
        onnx = os.path.join(work, "models", m + ".onnx")
        P = m.upper()
        # x86-64 (the baseline ISA, so the numbers do not depend on the build machine).
        forms = [("module", "module", [], f"{m}.ingot"),
                 ("module, external weights, stripped", "module", ["--weights=external", "--strip"],
                  f"{m}_ext.ingot"),
                 ("c (compiled object)", "c", [], f"{m}.c"),
                 ("static-lib", "static-lib", [], f"{m}.a"),
                 ("exe (static, glibc)", "exe", [], f"{m}_exe")]
        for label, fmt, extra, name in forms:
            path = os.path.join(out_dir, "x86_64", name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            run([ingot, "compile", onnx, "-o", path, f"--output-format={fmt}", "--target=x86_64", "-Os"] + extra)
            rows.append((m, "x86-64", label, inspect(ingot, path)))
            if name == f"{m}_ext.ingot":
                measured[f"{m}.x86_64.module_external_stripped_bytes"] = rows[-1][3]["total"]
        # Cortex-M4.
        for label, fmt, name in [("module", "module", f"{m}.ingot"), ("c (compiled object)", "c", f"{m}.c"),
                                 ("static-lib", "static-lib", f"{m}.a")]:
            path = os.path.join(out_dir, "cortex-m4", name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            run([ingot, "compile", onnx, "-o", path, f"--output-format={fmt}", "--target=cortex-m4", "-Os"])
            rows.append((m, "cortex-m4", label, inspect(ingot, path)))
        elf = os.path.join(work, f"fw-{m}", "firmware.elf")
        fw = inspect(ingot, elf)
        rows.append((m, "cortex-m4", "firmware (QEMU mps2-an386)", fw))
        sections = section_sizes(elf)
        with open(os.path.join(work, f"fw-{m}", "run.txt")) as f:
            stack = re.search(r"invoke stack (\d+) bytes", f.read())
        header = os.path.join(work, "cortex-m4", m + ".h")
        arena = header_value(header, rf"#define {P}_ARENA_SIZE (\d+)u")
        lower = header_value(header, r"max-live lower bound (\d+)")
        measured[f"{m}.arena_bytes"] = arena
        measured[f"{m}.cortex-m4.ingot_flash_bytes"] = fw["ingot"]
        measured[f"{m}.cortex-m4.firmware_text_bytes"] = fw["text"]
        measured[f"{m}.cortex-m4.firmware_data_bytes"] = sections.get(".data", 0) + sections.get(".bss", 0)
        measured[f"{m}.cortex-m4.invoke_stack_bytes"] = int(stack.group(1)) if stack else 0
        notes[m] = dict(arena=arena, lower=lower, stack=measured[f"{m}.cortex-m4.invoke_stack_bytes"],
                        ingot_ram=fw["ingot_ram"], flash=fw["ingot"])
    # The module form on bare metal: the runtime core plus the .ingot bytes in flash.
    elf = os.path.join(work, "module-cortex-m4", "firmware.elf")
    fw = inspect(ingot, elf)
    rows.append(("both", "cortex-m4", "firmware, module form (runtime core + .ingot in flash)", fw))
    notes["runtime core (Cortex-M4, module form)"] = dict(runtime=fw["parts"]["entry"])
    return rows, measured, notes


def print_table(rows, notes):
    head = ["model", "target", "form", "total"] + PARTS + ["ingot w/o weights"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|")
    for m, target, form, r in rows:
        cells = [m, target, form, str(r["total"])] + [str(r["parts"][p]) for p in PARTS] + [str(r["ingot"])]
        print("| " + " | ".join(cells) + " |")
    print()
    for m, n in notes.items():
        if "runtime" in n:
            print(f"{m}: loader, validation and plan walker {n['runtime']} bytes of flash")
            continue
        print(f"{m}: Cortex-M4 flash ingot adds {n['flash']} bytes (weights excluded); RAM = arena {n['arena']} "
              f"+ {n['ingot_ram']} static + {n['stack']} invoke stack; arena lower bound (max live) {n['lower']} "
              f"({100.0 * (n['arena'] - n['lower']) / max(n['lower'], 1):.1f}% above)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--thresholds", required=True)
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    rows, measured, notes = measure(args.ingot, args.work)
    print_table(rows, notes)
    with open(os.path.join(args.work, "footprint", "measured.json"), "w") as f:
        json.dump(measured, f, indent=2, sort_keys=True)
    with open(args.thresholds) as f:
        committed = json.load(f)
    if args.update:
        committed["thresholds"] = measured
        with open(args.thresholds + ".tmp", "w") as f:
            json.dump(committed, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(args.thresholds + ".tmp", args.thresholds)
        print(f"footprint: thresholds rewritten in {args.thresholds}")
        return 0
    tolerance = committed["tolerance"]
    thresholds = committed["thresholds"]
    failures = 0
    print()
    for key in sorted(set(thresholds) | set(measured)):
        if key not in measured:
            print(f"FAIL {key}: not measured")
            failures += 1
            continue
        if key not in thresholds:
            print(f"FAIL {key}: {measured[key]} has no committed threshold")
            failures += 1
            continue
        value, limit = measured[key], thresholds[key]
        allowed = limit * (1.0 + tolerance)
        status = "ok" if value <= allowed else "FAIL"
        if value > allowed:
            failures += 1
        change = f"{100.0 * (value - limit) / limit:+.1f}%" if limit else "n/a"
        print(f"{status:4} {key}: {value} (threshold {limit}, {change})")
    if failures:
        print(f"footprint: {failures} value(s) grew more than {100 * tolerance:.0f}% over tests/footprint/"
              "thresholds.json; if intended, rerun with --update and commit the file", file=sys.stderr)
        return 1
    print("footprint: every value is within its threshold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
