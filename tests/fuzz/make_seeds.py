"""Writes the seed corpora of the fuzz targets from real artifacts: small ONNX models
(and examples/digits/digits_mlp.onnx), the modules `ingot compile` makes of them
(embedded, external weights, stripped), .npy and TensorProto files from numpy/onnx,
and inline tensor texts. Used by tests/fuzz/run.sh.

/usr/bin/python3 tests/fuzz/make_seeds.py OUT_DIR SOURCE_DIR [INGOT]

OUT_DIR/<target>/ gets one file per seed. Without INGOT (or when it fails) the
module seeds are left out; the targets still start from tests/fuzz/seeds/.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "seed", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def small_models():
    rng = np.random.default_rng(7)
    w = lambda *shape: numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) / 4, f"w{len(shape)}_{shape[0]}")
    out = {}
    out["mlp"] = model(
        [helper.make_node("Gemm", ["x", "w2_4", "b"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Softmax", ["r"], ["y"], axis=1)],
        [helper.make_tensor_value_info("x", F32, [1, 8])], [helper.make_tensor_value_info("y", F32, [1, 4])],
        [w(4, 8), numpy_helper.from_array(np.zeros(4, np.float32), "b")])
    out["conv"] = model(
        [helper.make_node("Conv", ["x", "w4_4"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [1, 3, 8, 8])], [helper.make_tensor_value_info("y", F32, [1, 4, 1, 1])],
        [w(4, 3, 3, 3)])
    out["shapes"] = model(
        [helper.make_node("Reshape", ["x", "s"], ["r"]),
         helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
         helper.make_node("Concat", ["t", "t"], ["c"], axis=0),
         helper.make_node("Slice", ["c", "st", "en"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [2, 3, 2])], [helper.make_tensor_value_info("y", F32, [4, 2])],
        [numpy_helper.from_array(np.array([3, 4], np.int64), "s"),
         numpy_helper.from_array(np.array([2, 0], np.int64), "st"),
         numpy_helper.from_array(np.array([6, 2], np.int64), "en")])
    out["elementwise"] = model(
        [helper.make_node("Add", ["x", "x"], ["a"]),
         helper.make_node("Mul", ["a", "k"], ["m"]),
         helper.make_node("Sigmoid", ["m"], ["s"]),
         helper.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=1)],
        [helper.make_tensor_value_info("x", F32, [2, 5])], [helper.make_tensor_value_info("y", F32, [2, 1])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "k")])
    return out


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main(out, src, ingot=None):
    for target in ("module_fuzz", "tensor_fuzz", "onnx_import_fuzz", "weights_fuzz"):
        os.makedirs(f"{out}/{target}", exist_ok=True)
    models_dir = f"{out}/models"
    os.makedirs(models_dir, exist_ok=True)
    paths = []
    for name, m in small_models().items():
        path = f"{models_dir}/{name}.onnx"
        onnx.save(m, path)
        paths.append(path)
    paths.append(f"{src}/examples/digits/digits_mlp.onnx")
    for path in paths:
        with open(path, "rb") as f:
            write(f"{out}/onnx_import_fuzz/{os.path.basename(path)}", f.read())

    # Tensors: .npy (first byte 0), TensorProto (1), inline text (2).
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2, 3], np.int64),
              np.array(7, np.int32), np.array([True, False]), np.arange(4, dtype=np.uint8),
              np.array([-1, 2], np.int8), np.zeros((1, 0, 3), np.float32)]
    for i, a in enumerate(arrays):
        npy = f"{models_dir}/t{i}.npy"
        np.save(npy, a)
        with open(npy, "rb") as f:
            write(f"{out}/tensor_fuzz/npy{i}", b"\x00" + f.read())
        write(f"{out}/tensor_fuzz/pb{i}", b"\x01" + numpy_helper.from_array(a, f"t{i}").SerializeToString())
    samples = f"{src}/examples/digits/samples"
    for name in sorted(os.listdir(samples))[:2]:
        with open(f"{samples}/{name}", "rb") as f:
            write(f"{out}/tensor_fuzz/sample_{name}", b"\x00" + f.read())
    for i, text in enumerate(["1x4xf32=1,2,3,4", "f32=nan", "2x2xi64=-1, 2,3,4", "3xbool=true,0,1",
                              "2xu8=255,0", "1x2x1xi8=-128,127", "4xi32=7", "0x3xf32="]):
        write(f"{out}/tensor_fuzz/inline{i}", b"\x02" + text.encode())

    # Modules compiled by ingot: embedded, external weights, stripped.
    if ingot and os.access(ingot, os.X_OK):
        for path in paths:
            stem = os.path.splitext(os.path.basename(path))[0]
            for variant, flags in (("", []), ("-ext", ["--weights=external"]), ("-strip", ["--strip"])):
                mod = f"{models_dir}/{stem}{variant}.ingot"
                r = subprocess.run([ingot, "compile", path, "-o", mod, "-O0", *flags],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    print(f"make_seeds: compiling {path} failed: {r.stderr.strip()}", file=sys.stderr)
                    continue
                with open(mod, "rb") as f:
                    write(f"{out}/module_fuzz/{stem}{variant}.ingot", f.read())
                if os.path.exists(mod + ".weights"):
                    with open(mod + ".weights", "rb") as f:
                        data = f.read()
                    write(f"{out}/weights_fuzz/{stem}.weights", data[:4096])
    write(f"{out}/weights_fuzz/empty-ish", b"\x00")
    for target in ("module_fuzz", "tensor_fuzz", "onnx_import_fuzz", "weights_fuzz"):
        print(f"make_seeds: {target}: {len(os.listdir(f'{out}/{target}'))} seeds")


if __name__ == "__main__":
    main(*sys.argv[1:4])
