"""Writes ONNX models whose names and file references try to take over the compiler:
code injected through node names, and external_data that reaches outside the model's
folder. Used by tests/e2e/hostile_inputs.sh.

/usr/bin/python3 tests/e2e/make_hostile_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
INJECTED = 'relu */\n#define INGOT_KERNEL_EXPORT static\n#include "/etc/hostname"\n#define expf(x) 42.0f\n/* '


def opset13(graph):
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def injected_names(out):
    """A node and tensor names that carry C: the compiled model must still compute y = relu(x @ w) * 2."""
    w = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 7
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name=INJECTED),
         helper.make_node("Relu", ["h"], ["r"], name="*/ #error injected ??/ */"),
         helper.make_node("Mul", ["r", "two"], ["y"], name="\x00\xff\xfe" + INJECTED)],
        "names", [helper.make_tensor_value_info("x", F32, [2, 4])],
        [helper.make_tensor_value_info("y", F32, [2, 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(2, np.float32), "two")])
    onnx.save(opset13(g), f"{out}/injected_names.onnx")
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.save(f"{out}/injected_names.in.npy", x)
    np.save(f"{out}/injected_names.out.npy", np.maximum(x @ w, 0) * 2)


def external(out, name, location, offset=None, length=None):
    """A MatMul whose weights are external data at |location|."""
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = w.external_data.add()
            entry.key, entry.value = key, value
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], name,
                          [helper.make_tensor_value_info("x", F32, [1, 4])],
                          [helper.make_tensor_value_info("y", F32, [1, 3])], [w])
    onnx.save(opset13(g), f"{out}/{name}.onnx")


def main(out):
    os.makedirs(f"{out}/models", exist_ok=True)
    injected_names(out)
    models = f"{out}/models"
    np.ones((4, 3), np.float32).tofile(f"{models}/w.bin")
    np.ones((4, 3), np.float32).tofile(f"{out}/outside.bin")
    if not os.path.lexists(f"{models}/link.bin"):
        os.symlink("../outside.bin", f"{models}/link.bin")
    os.makedirs(f"{models}/sub", exist_ok=True)
    external(models, "ext_ok", "w.bin")
    external(models, "ext_ok_dotted", "sub/../w.bin")
    external(models, "ext_absolute", os.path.abspath(f"{out}/outside.bin"))
    external(models, "ext_parent", "../outside.bin")
    external(models, "ext_symlink", "link.bin")
    external(models, "ext_dev_zero", "/dev/zero")
    external(models, "ext_proc", "../../../../../../../../proc/self/environ")
    external(models, "ext_folder", "sub")
    external(models, "ext_bad_offset", "w.bin", offset="abc")
    external(models, "ext_negative_offset", "w.bin", offset="-8")
    external(models, "ext_offset_past_end", "w.bin", offset="40")
    external(models, "ext_huge_offset", "w.bin", offset="99999999999999999999")
    external(models, "ext_bad_length", "w.bin", length="12x")


if __name__ == "__main__":
    main(sys.argv[1])
