#!/usr/bin/python3
"""Write a model's test data as a C header for the firmware.

    npy2c.py NAME --inputs X.npy [...] --expected Y.npy [...] -o NAME_data.h

Defines, for main.c: test_NAME_inputs (const void* per input), test_NAME_outputs
(a zeroed float buffer per output), test_NAME_expected and test_NAME_expected_count.
Float32 only; values are written as exact hexadecimal float literals.
"""
import argparse
import os
import sys

import numpy as np


def floats(name, array):
    values = np.ascontiguousarray(array, dtype=np.float32).ravel()
    if not np.all(np.isfinite(values)):
        sys.exit(f"npy2c: {name} holds non-finite values")
    body = ",\n    ".join(
        ", ".join(float(v).hex() + "f" for v in values[i:i + 6]) for i in range(0, len(values), 6))
    return f"static const float {name}[{max(len(values), 1)}] __attribute__((aligned(8))) = {{\n    {body}}};\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name")
    ap.add_argument("--inputs", nargs="+", required=True)
    ap.add_argument("--expected", nargs="+", required=True)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    p = args.name
    out = [f"/* Test data for the model '{p}', written by npy2c.py. */\n"]
    inputs = [np.load(f) for f in args.inputs]
    expected = [np.load(f) for f in args.expected]
    for arrays, what in ((inputs, "input"), (expected, "expected")):
        for i, a in enumerate(arrays):
            if a.dtype != np.float32:
                sys.exit(f"npy2c: {what} {i} is {a.dtype}, only float32 is supported")
    for i, a in enumerate(inputs):
        out.append(floats(f"test_{p}_input{i}", a))
    out.append(f"static const void* const test_{p}_inputs[{len(inputs)}] = {{"
               + ", ".join(f"test_{p}_input{i}" for i in range(len(inputs))) + "};\n")
    for i, a in enumerate(expected):
        out.append(floats(f"test_{p}_expected{i}", a))
        out.append(f"static float test_{p}_output{i}[{max(a.size, 1)}] __attribute__((aligned(8)));\n")
    out.append(f"static const float* const test_{p}_expected[{len(expected)}] = {{"
               + ", ".join(f"test_{p}_expected{i}" for i in range(len(expected))) + "};\n")
    out.append(f"static void* const test_{p}_outputs[{len(expected)}] = {{"
               + ", ".join(f"test_{p}_output{i}" for i in range(len(expected))) + "};\n")
    out.append(f"static const uint32_t test_{p}_expected_count[{len(expected)}] = {{"
               + ", ".join(str(a.size) for a in expected) + "};\n")
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        f.write("".join(out))
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
