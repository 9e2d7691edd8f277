"""Writes small ONNX models that exercise ingot's error paths and import features.

/usr/bin/python3 tests/e2e/make_error_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    onnx.save(model, path)


def main(out):
    os.makedirs(out, exist_ok=True)
    f32 = TensorProto.FLOAT

    # An op ingot does not implement.
    g = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"], name="determinant_node")],
        "unsupported",
        [helper.make_tensor_value_info("x", f32, [2, 2])],
        [helper.make_tensor_value_info("y", f32, [])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/unsupported_op.onnx")

    # A dynamic batch dimension.
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"), helper.make_node("Relu", ["y"], ["z"], name="relu")],
        "dynamic",
        [helper.make_tensor_value_info("x", f32, ["batch", 4])],
        [helper.make_tensor_value_info("z", f32, ["batch", 3])],
        [w])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/dynamic_batch.onnx")
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.save(f"{out}/dynamic_batch.in.npy", x)
    np.save(f"{out}/dynamic_batch.out.npy", np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10), 0))

    # Weights in an external data file.
    wv = np.random.RandomState(0).randn(16, 8).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "external",
        [helper.make_tensor_value_info("x", f32, [1, 16])],
        [helper.make_tensor_value_info("y", f32, [1, 8])],
        [numpy_helper.from_array(wv, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save_model(m, f"{out}/external_data.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external_data.bin", size_threshold=0)
    xe = np.random.RandomState(1).randn(1, 16).astype(np.float32)
    np.save(f"{out}/external_data.in.npy", xe)
    np.save(f"{out}/external_data.out.npy", xe @ wv)

    # An old opset (7) that the importer brings forward.
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add"), helper.make_node("Relu", ["y"], ["z"], name="relu")],
        "old",
        [helper.make_tensor_value_info("x", f32, [1, 4])],
        [helper.make_tensor_value_info("z", f32, [1, 4])],
        [numpy_helper.from_array(np.array([0.5, -0.5, 1, -1], dtype=np.float32), "b")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 7)]), f"{out}/old_opset.onnx")

    # A graph where BatchNormalization stays unfused (after a Relu) and one after a Conv.
    rs = np.random.RandomState(2)
    conv_w = numpy_helper.from_array(rs.randn(4, 3, 3, 3).astype(np.float32) * 0.3, "cw")
    params = [numpy_helper.from_array(a.astype(np.float32), n) for a, n in [
        (rs.rand(4) + 0.5, "s1"), (rs.randn(4) * 0.1, "b1"), (rs.randn(4) * 0.1, "m1"), (rs.rand(4) + 0.5, "v1"),
        (rs.rand(4) + 0.5, "s2"), (rs.randn(4) * 0.1, "b2"), (rs.randn(4) * 0.1, "m2"), (rs.rand(4) + 0.5, "v2")]]
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "cw"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s1", "b1", "m1", "v1"], ["bn1"], name="bn1"),
         helper.make_node("Relu", ["bn1"], ["r"], name="relu"),
         helper.make_node("BatchNormalization", ["r", "s2", "b2", "m2", "v2"], ["y"], name="bn2")],
        "batchnorm",
        [helper.make_tensor_value_info("x", f32, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", f32, [1, 4, 8, 8])],
        [conv_w] + params)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/batchnorm.onnx")
    import torch
    import torch.nn.functional as F
    p = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in params}
    xb = rs.randn(1, 3, 8, 8).astype(np.float32)
    with torch.no_grad():
        c = F.conv2d(torch.from_numpy(xb), torch.from_numpy(numpy_helper.to_array(conv_w).copy()), padding=1)
        c = F.batch_norm(c, p["m1"], p["v1"], p["s1"], p["b1"], eps=1e-5)
        y = F.batch_norm(torch.relu(c), p["m2"], p["v2"], p["s2"], p["b2"], eps=1e-5)
    np.save(f"{out}/batchnorm.in.npy", xb)
    np.save(f"{out}/batchnorm.out.npy", y.numpy())

    # NaN goes through Relu (alone and fused into a Conv) and MaxPool as NaN.
    xn = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 1, 4, 4)
    xn[0, 0, 0, 0] = np.nan
    xn[0, 0, 3, 2] = np.nan
    wn = np.linspace(0.5, 2, 8, dtype=np.float32).reshape(8, 1, 1, 1)
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
         helper.make_node("Relu", ["c"], ["cr"], name="conv_relu"),
         helper.make_node("MaxPool", ["x"], ["q"], name="pool_raw", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "nan",
        [helper.make_tensor_value_info("x", f32, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("p", f32, [1, 1, 2, 2]), helper.make_tensor_value_info("cr", f32, [1, 8, 4, 4]),
         helper.make_tensor_value_info("q", f32, [1, 1, 4, 4])],
        [numpy_helper.from_array(wn, "w")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/nan_propagation.onnx")
    relu = np.where(xn < 0, np.float32(0), xn)
    np.save(f"{out}/nan_propagation.in.npy", xn)
    np.save(f"{out}/nan_propagation.p.npy", relu.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5)))
    c = wn.reshape(1, 8, 1, 1) * xn
    np.save(f"{out}/nan_propagation.cr.npy", np.where(c < 0, np.float32(0), c).astype(np.float32))
    padded = np.pad(xn[0, 0], 1, constant_values=-np.inf)
    q = np.array([[padded[i:i + 3, j:j + 3].max() for j in range(4)] for i in range(4)], dtype=np.float32)
    np.save(f"{out}/nan_propagation.q.npy", q.reshape(1, 1, 4, 4))

    hostile_models(out)

    # Not a model at all.
    with open(f"{out}/garbage.onnx", "wb") as fh:
        fh.write(b"\x08\x07this is not a protobuf model\xff\xff\xff")


def hostile_models(out):
    """One model per hostile attribute or index shape; each must be refused at compile
    time (exit 2). The expected message fragments are in errors.sh."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    big = 2**63 - 1

    def one(name, node, inputs, inits=(), out_type=f32):
        node.name = "hostile"
        g = helper.make_graph([node], name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(node.output[0], out_type, None)],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
        save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")

    def w(*shape):
        return np.zeros(shape, dtype=np.float32)

    x4 = [("x", f32, [1, 4, 8, 8])]
    # Negative Conv pads: standard, depthwise, pointwise, 1-D.
    one("conv_negative_pads", helper.make_node("Conv", ["x", "w"], ["y"], pads=[-1, 0, 0, 0]), x4, [("w", w(4, 4, 3, 3))])
    one("depthwise_negative_pads", helper.make_node("Conv", ["x", "w"], ["y"], group=4, pads=[0, -2, 0, 0]), x4,
        [("w", w(4, 1, 3, 3))])
    one("pointwise_negative_pads", helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 0, -1, -1]), x4,
        [("w", w(8, 4, 1, 1))])
    one("conv1d_negative_pads", helper.make_node("Conv", ["x", "w"], ["y"], pads=[-3, 0]), [("x", f32, [1, 4, 10])],
        [("w", w(2, 4, 3))])
    one("conv_zero_stride", helper.make_node("Conv", ["x", "w"], ["y"], strides=[0, 1]), x4, [("w", w(4, 4, 3, 3))])
    one("conv_huge_dilation", helper.make_node("Conv", ["x", "w"], ["y"], dilations=[big, 1]), x4,
        [("w", w(4, 4, 3, 3))])
    one("convtranspose_negative_pads", helper.make_node("ConvTranspose", ["x", "w"], ["y"], pads=[0, 0, -1, 0]), x4,
        [("w", w(4, 2, 3, 3))])
    one("convtranspose_negative_output_padding",
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[-1, 0]), x4,
        [("w", w(4, 2, 3, 3))])
    # Pools.
    one("maxpool_negative_pads", helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[-1, 0, 0, 0]), x4)
    one("averagepool_zero_stride", helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 0]),
        x4)
    one("lppool_zero_kernel", helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[0, 2]), x4)
    # Element-wise index ops with indices larger than the data off the axis.
    one("gather_elements_big_indices", helper.make_node("GatherElements", ["d", "i"], ["y"], axis=1),
        [("d", f32, [2, 3]), ("i", i64, [4, 1])])
    one("scatter_elements_big_indices", helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0),
        [("d", f32, [2, 2]), ("i", i64, [2, 5]), ("u", f32, [2, 5])])
    one("gather_elements_constant_out_of_range", helper.make_node("GatherElements", ["d", "i"], ["y"], axis=0),
        [("d", f32, [2, 3])], [("i", np.array([[0, 7, 1]], dtype=np.int64))])
    one("scatter_elements_constant_out_of_range",
        helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1),
        [("d", f32, [2, 3]), ("u", f32, [1, 1])], [("i", np.array([[-9]], dtype=np.int64))])
    # Transpose perm.
    x23 = [("x", f32, [2, 3, 4])]
    one("transpose_duplicate_perm", helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 2]), x23)
    one("transpose_out_of_range_perm", helper.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 5]), x23)
    one("transpose_short_perm", helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0]), x23)
    # Gathers over an empty axis; constant indices out of range.
    one("gather_empty_axis", helper.make_node("Gather", ["d", "i"], ["y"], axis=0),
        [("d", f32, [0, 3]), ("i", i64, [2])])
    one("gather_elements_empty_axis", helper.make_node("GatherElements", ["d", "i"], ["y"], axis=1),
        [("d", f32, [2, 0]), ("i", i64, [2, 1])])
    one("gather_nd_empty_axis", helper.make_node("GatherND", ["d", "i"], ["y"]),
        [("d", f32, [0, 3]), ("i", i64, [2, 1])])
    one("gather_constant_out_of_range", helper.make_node("Gather", ["d", "i"], ["y"], axis=1),
        [("d", f32, [2, 3])], [("i", np.array([0, 3], dtype=np.int64))])
    # Sizes: Pad by INT64_MAX, Tile overflow, two -1 in a Reshape, a tensor past the limit.
    one("pad_int64_max", helper.make_node("Pad", ["x", "p"], ["y"]), [("x", f32, [2, 2])],
        [("p", np.array([0, big, 0, 0], dtype=np.int64))])
    one("tile_overflow", helper.make_node("Tile", ["x", "r"], ["y"]), [("x", f32, [2, 2])],
        [("r", np.array([big, 1], dtype=np.int64))])
    one("reshape_two_inferred", helper.make_node("Reshape", ["x", "s"], ["y"]), [("x", f32, [2, 6])],
        [("s", np.array([-1, -1], dtype=np.int64))])
    one("expand_past_limit", helper.make_node("Expand", ["x", "s"], ["y"]), [("x", f32, [1, 2])],
        [("s", np.array([2**31, 2], dtype=np.int64))])


if __name__ == "__main__":
    main(sys.argv[1])
