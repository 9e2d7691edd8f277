#!/usr/bin/env python3
"""The AVX2 register tiles keep their accumulators in registers.

The AVX2 GEMM and taps tiles (and the transposed taps tile) hold 12 ymm accumulators, 3 B vectors and a broadcast: all 16
ymm registers. Inlined into a kernel that also inlines other vector code, GCC once kept
that code's values live across the tile's K loop and spilled accumulators to the stack (a
store and a reload per k, on the FMA chain: ~30% of peak instead of ~46% on im2col
layers), so the full tiles run as functions of their own (f32_gemm_tile.h). This test
compiles layers that use each tile for the x86_64-avx2 target as C artifacts, translates
them to assembly with the flags on their `ingot-build:` line, and fails when a loop of
multiply-adds in a full-tile function reads or writes a vector register on the stack, or
when a layer's full-tile function is missing.

Usage: check_register_spills.py INGOT WORK_DIR
"""
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_model(path, cin, cout, hw, k, stride, group, act):
    rng = np.random.RandomState(0)
    pad = k // 2
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4, group=group)]
    out = "c"
    if act:
        nodes.append(helper.make_node(act, ["c"], ["y"]))
        out = "y"
    oh = (hw + 2 * pad - k) // stride + 1
    graph = helper.make_graph(
        nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, cout, oh, oh])],
        [numpy_helper.from_array(rng.randn(cout, cin // group, k, k).astype(np.float32), "w"),
         numpy_helper.from_array(rng.randn(cout).astype(np.float32), "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


# name: (cin, cout, hw, kernel, stride, groups, activation, the full tile it must use)
LAYERS = {
    "im2col_3x3_s2": (64, 32, 112, 3, 2, 1, "Relu", "f32_gemm_tile_4x24_avx2_full"),
    "transposed_taps_3x3_s2": (128, 128, 56, 3, 2, 1, "Relu", "f32_conv_taps_t_tile_4x24_avx2_4x24"),
    "im2col_7x7_s2": (3, 128, 224, 7, 2, 1, "Relu", "f32_gemm_tile_4x24_avx2_full"),  # too many outputs for phase planes
    "stem_7x7_s2": (3, 64, 224, 7, 2, 1, "Relu", "f32_conv_taps_tile_4x24_avx2_full"),  # phase planes
    "pointwise": (256, 128, 28, 1, 1, 1, "Sigmoid", "f32_gemm_tile_4x24_avx2_full"),
    "winograd_3x3": (64, 64, 56, 3, 1, 1, "Relu", "f32_gemm_tile_4x24_avx2_full"),
    "grouped_3x3_s1": (64, 64, 28, 3, 1, 2, "Relu", "f32_conv_taps_tile_4x24_avx2_full"),
    "grouped_transposed_taps": (64, 64, 28, 3, 1, 4, "Relu", "f32_conv_taps_t_tile_4x24_avx2_4x16"),
}


def loops_with_stack_vectors(asm, function_prefix):
    """(found, bad): whether a function named |function_prefix| (or a clone of it) is
    defined, and the loops of such functions that hold a multiply-add and touch the
    stack with a vector register."""
    lines = asm.split("\n")
    found, bad = False, []
    current, labels = None, {}
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Za-z_][\w.]*):", line)
        if m:
            current = m.group(1)
            labels = {}
            if current == function_prefix or current.startswith(function_prefix + "."):
                found = True
            continue
        if not current or not (current == function_prefix or current.startswith(function_prefix + ".")):
            continue
        m = re.match(r"^(\.L\w+):", line)
        if m:
            labels[m.group(1)] = i
            continue
        m = re.match(r"\s+j\w+\s+(\.L\w+)", line)
        if m and m.group(1) in labels:  # a backward branch: a loop
            body = lines[labels[m.group(1)]:i]
            if any("vfmadd" in b for b in body):
                spills = [b.strip() for b in body if "(%rsp)" in b and re.search(r"%[xyz]mm", b)]
                if spills:
                    bad.append(f"{current}: {spills[0]} (+{len(spills) - 1} more)")
    return found, bad


def main():
    ingot, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = 0
    passed = 0
    for name, (cin, cout, hw, k, stride, group, act, tile) in LAYERS.items():
        onnx_path = os.path.join(work, name + ".onnx")
        c_path = os.path.join(work, name + ".c")
        conv_model(onnx_path, cin, cout, hw, k, stride, group, act)
        subprocess.run([ingot, "compile", onnx_path, "-o", c_path, "--output-format=c", "--target=x86_64-avx2"],
                       check=True)
        source = open(c_path).read()
        build = re.search(r"ingot-build: (.*)", source).group(1).split()
        asm_path = os.path.join(work, name + ".s")
        subprocess.run(build + ["-S", c_path, "-o", asm_path], check=True)
        found, bad = loops_with_stack_vectors(open(asm_path).read(), tile)
        if not found:
            print(f"FAIL: {name}: no {tile} in the generated code ({shlex.join(build)})")
            failures += 1
        for b in bad:
            print(f"FAIL: {name}: a multiply-add loop keeps vectors on the stack: {b}")
            failures += 1
        if found and not bad:
            print(f"ok: {name}: {tile} keeps its accumulators in registers")
            passed += 1
    print(f"{passed} passed, {len(LAYERS) - passed} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
