"""Writes the malformed-input corpus: ONNX models, .ingot modules, external weights
files and .npy / TensorProto tensors, each broken in one way. Deterministic: the same
bytes on every run. tests/malformed/MANIFEST says what ingot must answer to each.

Two phases, because module cases are cut from modules ingot compiles:
  /usr/bin/python3 make_corpus.py inputs DIR    ONNX models and tensors; DIR/base/base.onnx
  (ingot compiles DIR/base/base.onnx to base.ingot and, --weights=external, ext.ingot)
  /usr/bin/python3 make_corpus.py modules DIR   modules and weights cut from those
"""
import os
import shutil
import struct
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
BIG = 2**63 - 1


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [i if isinstance(i, onnx.TensorProto) else numpy_helper.from_array(np.asarray(i[1]), i[0])
                           for i in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] if opset is not None else [])


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def save(m, path):
    write(path, m.SerializeToString())


# ---- ONNX models ------------------------------------------------------------------

def one(out, name, node, inputs, inits=(), opset=13, out_type=F32):
    """A one-node model named |name| whose node is 'hostile'."""
    node.name = "hostile"
    save(model([node], [vi(n, t, s) for n, t, s in inputs], [vi(node.output[0], out_type, None)], inits, opset),
         f"{out}/onnx/{name}.onnx")


def onnx_cases(out):
    d = f"{out}/onnx"
    os.makedirs(d, exist_ok=True)
    z = lambda *shape: np.zeros(shape, np.float32)
    x4 = [("x", F32, [1, 4, 8, 8])]
    x23 = [("x", F32, [2, 3, 4])]
    i64 = lambda *v: np.array(v, dtype=np.int64)
    mk = helper.make_node
    # Attributes and index shapes that would reach kernels.
    one(out, "conv_negative_pads", mk("Conv", ["x", "w"], ["y"], pads=[-1, 0, 0, 0]), x4, [("w", z(4, 4, 3, 3))])
    one(out, "depthwise_negative_pads", mk("Conv", ["x", "w"], ["y"], group=4, pads=[0, -2, 0, 0]), x4,
        [("w", z(4, 1, 3, 3))])
    one(out, "pointwise_negative_pads", mk("Conv", ["x", "w"], ["y"], pads=[0, 0, -1, -1]), x4, [("w", z(8, 4, 1, 1))])
    one(out, "conv1d_negative_pads", mk("Conv", ["x", "w"], ["y"], pads=[-3, 0]), [("x", F32, [1, 4, 10])],
        [("w", z(2, 4, 3))])
    one(out, "conv_zero_stride", mk("Conv", ["x", "w"], ["y"], strides=[0, 1]), x4, [("w", z(4, 4, 3, 3))])
    one(out, "conv_huge_dilation", mk("Conv", ["x", "w"], ["y"], dilations=[BIG, 1]), x4, [("w", z(4, 4, 3, 3))])
    one(out, "conv_channel_mismatch", mk("Conv", ["x", "w"], ["y"]), x4, [("w", z(4, 3, 3, 3))])
    one(out, "conv_weight_rank", mk("Conv", ["x", "w"], ["y"]), x4, [("w", z(4, 4))])
    one(out, "conv_group_zero", mk("Conv", ["x", "w"], ["y"], group=0), x4, [("w", z(4, 4, 3, 3))])
    one(out, "convtranspose_negative_pads", mk("ConvTranspose", ["x", "w"], ["y"], pads=[0, 0, -1, 0]), x4,
        [("w", z(4, 2, 3, 3))])
    one(out, "convtranspose_negative_output_padding",
        mk("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[-1, 0]), x4, [("w", z(4, 2, 3, 3))])
    one(out, "maxpool_negative_pads", mk("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[-1, 0, 0, 0]), x4)
    one(out, "maxpool_bogus_auto_pad", mk("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="BOGUS"), x4)
    one(out, "averagepool_zero_stride", mk("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 0]), x4)
    one(out, "lppool_zero_kernel", mk("LpPool", ["x"], ["y"], kernel_shape=[0, 2]), x4)
    one(out, "gather_elements_big_indices", mk("GatherElements", ["d", "i"], ["y"], axis=1),
        [("d", F32, [2, 3]), ("i", I64, [4, 1])])
    one(out, "scatter_elements_big_indices", mk("ScatterElements", ["d", "i", "u"], ["y"], axis=0),
        [("d", F32, [2, 2]), ("i", I64, [2, 5]), ("u", F32, [2, 5])])
    one(out, "gather_elements_constant_out_of_range", mk("GatherElements", ["d", "i"], ["y"], axis=0),
        [("d", F32, [2, 3])], [("i", np.array([[0, 7, 1]], np.int64))])
    one(out, "scatter_elements_constant_out_of_range", mk("ScatterElements", ["d", "i", "u"], ["y"], axis=1),
        [("d", F32, [2, 3]), ("u", F32, [1, 1])], [("i", np.array([[-9]], np.int64))])
    one(out, "transpose_duplicate_perm", mk("Transpose", ["x"], ["y"], perm=[0, 2, 2]), x23)
    one(out, "transpose_out_of_range_perm", mk("Transpose", ["x"], ["y"], perm=[0, 1, 5]), x23)
    one(out, "transpose_short_perm", mk("Transpose", ["x"], ["y"], perm=[1, 0]), x23)
    one(out, "gather_empty_axis", mk("Gather", ["d", "i"], ["y"], axis=0), [("d", F32, [0, 3]), ("i", I64, [2])])
    one(out, "gather_elements_empty_axis", mk("GatherElements", ["d", "i"], ["y"], axis=1),
        [("d", F32, [2, 0]), ("i", I64, [2, 1])])
    one(out, "gather_nd_empty_axis", mk("GatherND", ["d", "i"], ["y"]), [("d", F32, [0, 3]), ("i", I64, [2, 1])])
    one(out, "gather_constant_out_of_range", mk("Gather", ["d", "i"], ["y"], axis=1), [("d", F32, [2, 3])],
        [("i", i64(0, 3))])
    one(out, "gather_axis_out_of_range", mk("Gather", ["d", "i"], ["y"], axis=5), [("d", F32, [2, 3]), ("i", I64, [2])])
    one(out, "concat_axis_out_of_range", mk("Concat", ["a", "b"], ["y"], axis=3), [("a", F32, [2, 3]), ("b", F32, [2, 3])])
    one(out, "concat_shape_mismatch", mk("Concat", ["a", "b"], ["y"], axis=0), [("a", F32, [2, 3]), ("b", F32, [2, 4])])
    one(out, "softmax_axis_out_of_range", mk("Softmax", ["x"], ["y"], axis=-4), x23)
    one(out, "flatten_axis_out_of_range", mk("Flatten", ["x"], ["y"], axis=7), x23)
    one(out, "split_sizes_mismatch", mk("Split", ["x", "s"], ["y", "y2"], axis=0), x23, [("s", i64(1, 5))])
    one(out, "slice_zero_step", mk("Slice", ["x", "s", "e", "a", "t"], ["y"]), x23,
        [("s", i64(0)), ("e", i64(2)), ("a", i64(0)), ("t", i64(0))])
    one(out, "squeeze_non_unit_axis", mk("Squeeze", ["x", "a"], ["y"]), x23, [("a", i64(1))])
    one(out, "unsqueeze_duplicate_axes", mk("Unsqueeze", ["x", "a"], ["y"]), x23, [("a", i64(0, 0))])
    one(out, "matmul_inner_mismatch", mk("MatMul", ["a", "b"], ["y"]), [("a", F32, [2, 3]), ("b", F32, [4, 5])])
    one(out, "add_broadcast_mismatch", mk("Add", ["a", "b"], ["y"]), [("a", F32, [2, 3]), ("b", F32, [4])])
    one(out, "gemm_inner_mismatch", mk("Gemm", ["a", "b"], ["y"]), [("a", F32, [2, 3]), ("b", F32, [4, 5])])
    one(out, "pad_int64_max", mk("Pad", ["x", "p"], ["y"]), [("x", F32, [2, 2])], [("p", i64(0, BIG, 0, 0))])
    one(out, "tile_overflow", mk("Tile", ["x", "r"], ["y"]), [("x", F32, [2, 2])], [("r", i64(BIG, 1))])
    one(out, "reshape_two_inferred", mk("Reshape", ["x", "s"], ["y"]), [("x", F32, [2, 6])], [("s", i64(-1, -1))])
    one(out, "reshape_wrong_count", mk("Reshape", ["x", "s"], ["y"]), [("x", F32, [2, 6])], [("s", i64(5, 5))])
    one(out, "reshape_rank_9", mk("Reshape", ["x", "s"], ["y"]), [("x", F32, [2, 6])],
        [("s", i64(1, 1, 1, 1, 1, 1, 1, 2, 6))])
    one(out, "expand_past_limit", mk("Expand", ["x", "s"], ["y"]), [("x", F32, [1, 2])], [("s", i64(2**31, 2))])
    one(out, "constant_of_shape_past_limit", mk("ConstantOfShape", ["s"], ["y"]), [], [("s", i64(100000, 100000))])
    one(out, "range_past_limit", mk("Range", ["a", "b", "c"], ["y"]), [],
        [("a", np.array(0, np.int64)), ("b", np.array(2**40, np.int64)), ("c", np.array(1, np.int64))], out_type=I64)
    one(out, "resize_bogus_mode", mk("Resize", ["x", "", "s"], ["y"], mode="bogus"), x4,
        [("s", np.array([1, 1, 2, 2], np.float32))])
    one(out, "cast_bogus_to", mk("Cast", ["x"], ["y"], to=999), x23)
    # What only ingot's passes may write: an attribute they record (here the Winograd
    # weight layout, which the weights would not have) and an op they make.
    one(out, "conv_compiler_attribute", mk("Conv", ["x", "w"], ["y"], winograd=4), x4,
        [("w", np.ones((1, 4, 3, 3), np.float32))])
    one(out, "internal_op", mk("InvertedResidual", ["x"], ["y"], stride=1), x4)
    one(out, "transpose_perm_as_floats",
        helper.make_node("Transpose", ["x"], ["y"]), x23)
    # (the perm attribute of the last one is replaced by a float list below)
    m = onnx.load(f"{d}/transpose_perm_as_floats.onnx")
    m.graph.node[0].attribute.append(helper.make_attribute("perm", [0.5, 1.5, 2.5]))
    save(m, f"{d}/transpose_perm_as_floats.onnx")

    # A 119-byte model whose constant Tile would be 1.6 GB: compiled in well under a
    # second (the Tile runs at run time instead of being folded).
    save(model([mk("Tile", ["c", "r"], ["t"], name="tile"), mk("Add", ["x", "t"], ["y"], name="add")],
               [vi("x", F32, [1])], [vi("y", F32, None)], [("c", np.ones((1, 1), np.float32)), ("r", i64(20000, 20000))]),
         f"{d}/tile_constant_blowup.onnx")

    # Graph structure.
    relu = lambda i="x", o="y", **kw: mk("Relu", [i], [o], **kw)
    x14 = [vi("x", F32, [1, 4])]
    y14 = [vi("y", F32, [1, 4])]
    save(model([relu()], x14, y14, opset=99), f"{d}/opset_99.onnx")
    save(model([relu()], x14, y14, opset=-1), f"{d}/opset_negative.onnx")
    save(model([relu()], x14, y14, opset=0), f"{d}/opset_zero.onnx")
    save(model([relu()], x14 + [vi("x", F32, [1, 4])], y14), f"{d}/duplicate_input.onnx")
    save(model([mk("Add", ["x", "w"], ["y"])], x14, y14, [("w", np.ones((1, 4), np.float32)),
                                                         ("w", np.zeros((1, 4), np.float32))]),
         f"{d}/duplicate_initializer.onnx")
    save(model([relu(name="a"), mk("Neg", ["x"], ["y"], name="b")], x14, y14), f"{d}/two_producers.onnx")
    save(model([relu(o="x", name="a")], x14, [vi("x", F32, [1, 4])]), f"{d}/node_writes_input.onnx")
    save(model([relu(o="w", name="a"), mk("Add", ["x", "w"], ["y"])], x14, y14, [("w", np.ones((1, 4), np.float32))]),
         f"{d}/node_writes_initializer.onnx")
    save(model([mk("Relu", ["x"], [], name="a")], x14, y14), f"{d}/node_without_outputs.onnx")
    save(model([relu(i="q", name="a")], x14, y14), f"{d}/undefined_value.onnx")
    save(model([relu(o="t", name="a")], x14, y14), f"{d}/output_never_defined.onnx")
    save(model([mk("Det", ["x"], ["y"], name="determinant_node")], [vi("x", F32, [2, 2])], [vi("y", F32, [])]),
         f"{d}/unsupported_op.onnx")
    save(model([mk("Relu", ["x"], ["y"], name="a", domain="com.example")], x14, y14), f"{d}/unknown_domain.onnx")
    save(model([relu()], [vi("x", F32, ["batch", 4])], y14), f"{d}/dynamic_dimension.onnx")
    save(model([relu()], [vi("x", F32, None)], y14), f"{d}/input_without_shape.onnx")
    save(model([relu()], [vi("x", TensorProto.STRING, [1, 4])], y14), f"{d}/string_input.onnx")
    save(model([relu()], [vi("x", TensorProto.COMPLEX64, [1, 4])], y14), f"{d}/complex_input.onnx")
    save(model([relu()], [vi("x", F32, [1, 1, 1, 1, 1, 1, 1, 1, 1])], [vi("y", F32, None)]), f"{d}/input_rank_9.onnx")
    save(model([relu()], [vi("x", F32, [2**40, 2**40])], [vi("y", F32, None)]), f"{d}/input_past_limit.onnx")
    save(model([relu()], x14, []), f"{d}/no_outputs.onnx")
    nog = onnx.ModelProto()
    nog.ir_version = 8
    nog.opset_import.add().version = 13
    save(nog, f"{d}/no_graph.onnx")
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    w.raw_data = b"\0" * 7
    save(model([mk("MatMul", ["x", "w"], ["y"])], x14, [vi("y", F32, [1, 3])], [w]), f"{d}/initializer_short_raw.onnx")
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    w.ClearField("raw_data")
    w.float_data.extend([1.0] * 5)
    save(model([mk("MatMul", ["x", "w"], ["y"])], x14, [vi("y", F32, [1, 3])], [w]), f"{d}/initializer_short_floats.onnx")
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    w.dims[0] = -4
    save(model([mk("MatMul", ["x", "w"], ["y"])], x14, [vi("y", F32, [1, 3])], [w]), f"{d}/initializer_negative_dim.onnx")

    # Old opsets through libonnx's version converter: a Gemm at opset 6 whose
    # converter crashed the compiler (tests/fuzz/regressions/onnx_import_fuzz).
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "../fuzz/regressions/onnx_import_fuzz/gemm-6-7-adapter-converter-segv"),
                f"{d}/gemm_opset6_converter_crash.onnx")

    # Not models: garbage, empty, truncations and flipped bytes of a valid one.
    write(f"{d}/garbage.onnx", b"\x08\x07this is not a protobuf model\xff\xff\xff")
    write(f"{d}/empty.onnx", b"")
    os.makedirs(f"{d}/folder.onnx", exist_ok=True)
    good = model([mk("MatMul", ["x", "w"], ["h"], name="mm"), mk("Relu", ["h"], ["y"], name="relu")], x14,
                 [vi("y", F32, [1, 3])], [("w", np.arange(12, dtype=np.float32).reshape(4, 3))]).SerializeToString()
    for cut in (1, 10, len(good) // 2, len(good) - 1):
        write(f"{d}/truncated_at_{cut}.onnx", good[:cut])
    flipped = bytearray(good)
    flipped[2] ^= 0xFF
    write(f"{d}/flipped_header_byte.onnx", bytes(flipped))

    # external_data that reaches outside the model's folder or past its file.
    ext = f"{d}/ext"
    os.makedirs(ext, exist_ok=True)
    np.ones((4, 3), np.float32).tofile(f"{ext}/w.bin")
    np.ones((4, 3), np.float32).tofile(f"{d}/outside.bin")
    if not os.path.lexists(f"{ext}/link.bin"):
        os.symlink("../outside.bin", f"{ext}/link.bin")
    os.makedirs(f"{ext}/sub.bin", exist_ok=True)
    for name, loc, off, length in (("ext_absolute", "/etc/hostname", None, None), ("ext_parent", "../outside.bin", None, None),
                                   ("ext_symlink", "link.bin", None, None), ("ext_dev_zero", "/dev/zero", None, None),
                                   ("ext_missing", "nothere.bin", None, None), ("ext_folder", "sub.bin", None, None),
                                   ("ext_bad_offset", "w.bin", "abc", None), ("ext_negative_offset", "w.bin", "-8", None),
                                   ("ext_offset_past_end", "w.bin", "40", None), ("ext_bad_length", "w.bin", None, "12x"),
                                   ("ext_short_length", "w.bin", None, "8")):
        t = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", loc), ("offset", off), ("length", length)):
            if value is not None:
                e = t.external_data.add()
                e.key, e.value = key, value
        save(model([mk("MatMul", ["x", "w"], ["y"], name="mm")], x14, [vi("y", F32, [1, 3])], [t]), f"{ext}/{name}.onnx")

    # The model the module, weights and tensor cases start from: y = relu(x @ w), x 1x4.
    save(model([mk("MatMul", ["x", "w"], ["h"], name="mm"), mk("Relu", ["h"], ["y"], name="relu")], x14,
               [vi("y", F32, [1, 3])], [("w", (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 7)]),
         f"{out}/base/base.onnx")


# ---- tensors ------------------------------------------------------------------------

def npy(header, data=b"", version=(1, 0), magic=b"\x93NUMPY"):
    h = header.encode("latin1")
    if version[0] == 1:
        pad = 16 - (10 + len(h) + 1) % 16
        h = h + b" " * (pad % 16) + b"\n"
        return magic + bytes(version) + struct.pack("<H", len(h)) + h + data
    pad = 16 - (12 + len(h) + 1) % 16
    h = h + b" " * (pad % 16) + b"\n"
    return magic + bytes(version) + struct.pack("<I", len(h)) + h + data


def tensor_cases(out):
    d = f"{out}/tensors"
    os.makedirs(d, exist_ok=True)
    ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }"
    data = np.arange(4, dtype=np.float32).tobytes()
    write(f"{d}/npy_bad_magic.npy", npy(ok, data, magic=b"\x93NUMPX"))
    write(f"{d}/npy_empty.npy", b"")
    write(f"{d}/npy_truncated_header.npy", npy(ok, data)[:20])
    write(f"{d}/npy_version_9.npy", npy(ok, data, version=(9, 0)))
    write(f"{d}/npy_f64.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 4), }", data * 2))
    write(f"{d}/npy_big_endian.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1, 4), }", data))
    write(f"{d}/npy_object.npy", npy("{'descr': '|O', 'fortran_order': False, 'shape': (1, 4), }", data * 2))
    write(f"{d}/npy_fortran.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 4), }", data))
    write(f"{d}/npy_wrong_shape.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data))
    write(f"{d}/npy_wrong_dtype.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 4), }", data * 2))
    write(f"{d}/npy_truncated_data.npy", npy(ok, data[:10]))
    write(f"{d}/npy_extra_data.npy", npy(ok, data + b"\0" * 8))
    write(f"{d}/npy_header_not_dict.npy", npy("[1, 2, 3]", data))
    write(f"{d}/npy_missing_shape.npy", npy("{'descr': '<f4', 'fortran_order': False, }", data))
    write(f"{d}/npy_negative_dim.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", data))
    write(f"{d}/npy_huge_shape.npy",
          npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", data))
    write(f"{d}/npy_rank_9.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,4), }", data))
    write(f"{d}/npy_header_len_past_end.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr'")
    write(f"{d}/npy_nonascii_header.npy", npy("{'descr': '<f\xe94', 'fortran_order': False, 'shape': (1, 4), }", data))
    write(f"{d}/npy_v2_huge_header.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{")
    t = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "x")
    write(f"{d}/pb_garbage.pb", b"\xff\xff\xff\xff not a tensor")
    write(f"{d}/pb_truncated.pb", t.SerializeToString()[:-5])
    write(f"{d}/pb_int64.pb", numpy_helper.from_array(np.arange(4, dtype=np.int64).reshape(1, 4), "x").SerializeToString())
    write(f"{d}/pb_wrong_shape.pb", numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2), "x").SerializeToString())
    p = onnx.TensorProto()
    p.CopyFrom(t)
    p.raw_data = p.raw_data[:6]
    write(f"{d}/pb_short_raw.pb", p.SerializeToString())
    p = onnx.TensorProto()
    p.CopyFrom(t)
    p.ClearField("raw_data")
    p.float_data.extend([1.0, 2.0])
    write(f"{d}/pb_short_floats.pb", p.SerializeToString())
    p = onnx.TensorProto()
    p.CopyFrom(t)
    p.data_location = TensorProto.EXTERNAL
    e = p.external_data.add()
    e.key, e.value = "location", "/etc/passwd"
    write(f"{d}/pb_external.pb", p.SerializeToString())
    p = onnx.TensorProto()
    p.CopyFrom(t)
    p.data_type = TensorProto.STRING
    write(f"{d}/pb_string.pb", p.SerializeToString())
    p = onnx.TensorProto()
    p.CopyFrom(t)
    p.dims[0] = -1
    write(f"{d}/pb_negative_dim.pb", p.SerializeToString())
    p = onnx.TensorProto()
    p.CopyFrom(t)
    del p.dims[:]
    p.dims.extend([2**40, 2**40])
    write(f"{d}/pb_huge_dims.pb", p.SerializeToString())


# ---- modules and weights ----------------------------------------------------------

HEADER = 72
ENTRY = 24


def sections(data):
    count = struct.unpack_from("<I", data, 28)[0]
    return [(i, *struct.unpack_from("<IIQQ", data, HEADER + i * ENTRY)) for i in range(count)]


def section(data, kind):
    for i, k, crc, off, size in sections(data):
        if k == kind:
            return i, off, size
    raise KeyError(kind)


def fix_crcs(data):
    for i, k, crc, off, size in sections(data):
        struct.pack_into("<I", data, HEADER + i * ENTRY + 4, zlib.crc32(bytes(data[off:off + size])) & 0xFFFFFFFF)
    return data


def patched(base, fn, crc=True):
    data = bytearray(base)
    fn(data)
    return bytes(fix_crcs(data) if crc else data)


def plan_field(data, field):
    """Offset in |data| of a plan header field."""
    _, off, _ = section(data, 2)
    names = ["arena_bytes", "arena_alignment", "worker_count", "kernel_count", "step_count", "binding_count",
             "kernel_offsets_offset", "steps_offset", "bindings_offset"]
    offsets = [0, 8, 12, 16, 20, 24, 28, 32, 36]
    return off + offsets[names.index(field)]


def u32(data, at):
    return struct.unpack_from("<I", data, at)[0]


def module_cases(out):
    d = f"{out}/modules"
    os.makedirs(d, exist_ok=True)
    base = open(f"{out}/base/base.ingot", "rb").read()
    cases = {}
    for cut in (0, 16, 71, 100, len(base) // 2, len(base) - 1):
        cases[f"truncated_at_{cut}"] = base[:cut]
    cases["extended"] = base + b"\0" * 64
    cases["bad_magic"] = b"INGOTMOX" + base[8:]
    cases["format_version_99"] = patched(base, lambda b: struct.pack_into("<I", b, 8, 99), crc=False)
    cases["abi_version_99"] = patched(base, lambda b: struct.pack_into("<I", b, 12, 99), crc=False)
    cases["unknown_arch"] = patched(base, lambda b: struct.pack_into("<I", b, 16, 77), crc=False)
    cases["unknown_feature"] = patched(base, lambda b: struct.pack_into("<I", b, 20, 1 << 30), crc=False)
    cases["file_size_wrong"] = patched(base, lambda b: struct.pack_into("<Q", b, 64, len(base) + 8), crc=False)
    cases["zero_sections"] = patched(base, lambda b: struct.pack_into("<I", b, 28, 0), crc=False)
    cases["seventeen_sections"] = patched(base, lambda b: struct.pack_into("<I", b, 28, 17), crc=False)

    def flip_in(kind, at=0):
        def fn(b):
            _, off, size = section(b, kind)
            b[off + min(at, size - 1)] ^= 0x5A
        return fn
    cases["plan_crc_mismatch"] = patched(base, flip_in(2, 3), crc=False)
    cases["signature_crc_mismatch"] = patched(base, flip_in(1, 20), crc=False)
    cases["constants_crc_mismatch"] = patched(base, flip_in(3, 5), crc=False)
    cases["code_crc_mismatch"] = patched(base, flip_in(4, 9), crc=False)

    def section_entry(kind, field, value):
        def fn(b):
            i, _, _ = section(b, kind)
            struct.pack_into("<Q", b, HEADER + i * ENTRY + (8 if field == "offset" else 16), value)
        return fn
    cases["section_offset_past_end"] = patched(base, section_entry(2, "offset", 1 << 40), crc=False)
    cases["section_size_past_end"] = patched(base, section_entry(4, "size", 1 << 40), crc=False)
    cases["section_offset_unaligned"] = patched(base, section_entry(2, "offset", 72 + 24 * 6 + 1), crc=False)

    def duplicate_section(b):
        i, _, _ = section(b, 3)
        j, _, _ = section(b, 4)
        struct.pack_into("<I", b, HEADER + j * ENTRY, 3)
    cases["duplicate_section"] = patched(base, duplicate_section, crc=False)

    def plan_set(field, value, fmt="<I"):
        return lambda b: struct.pack_into(fmt, b, plan_field(b, field), value)
    cases["plan_kernel_count_huge"] = patched(base, plan_set("kernel_count", 0x7FFFFFFF))
    cases["plan_step_count_huge"] = patched(base, plan_set("step_count", 0x7FFFFFFF))
    cases["plan_arena_huge"] = patched(base, plan_set("arena_bytes", 1 << 62, "<Q"))
    cases["plan_workers_zero"] = patched(base, plan_set("worker_count", 0))
    cases["plan_alignment_3"] = patched(base, plan_set("arena_alignment", 3))

    def plan_binding(index, offset_in_binding, value, fmt):
        def fn(b):
            _, off, _ = section(b, 2)
            at = off + u32(b, plan_field(b, "bindings_offset")) + 24 * index + offset_in_binding
            struct.pack_into(fmt, b, at, value)
        return fn
    cases["binding_past_arena"] = patched(base, plan_binding(0, 8, 1 << 40, "<Q"))
    cases["binding_size_overflow"] = patched(base, plan_binding(0, 16, 2**64 - 8, "<Q"))
    cases["binding_unknown_base"] = patched(base, plan_binding(0, 0, 9, "<H"))
    cases["binding_input_index_past_end"] = patched(base, plan_binding(0, 2, 5, "<H"))

    def step_set(index, offset_in_step, value, fmt):
        def fn(b):
            _, off, _ = section(b, 2)
            at = off + u32(b, plan_field(b, "steps_offset")) + 24 * index + offset_in_step
            struct.pack_into(fmt, b, at, value)
        return fn
    cases["step_unknown_kind"] = patched(base, step_set(0, 0, 9, "<H"))
    cases["step_kernel_past_end"] = patched(base, step_set(0, 4, 1000, "<I"))
    cases["step_bindings_past_end"] = patched(base, step_set(0, 8, 100000, "<I"))
    cases["step_too_many_bindings"] = patched(base, step_set(0, 2, 0xFFFF, "<H"))
    cases["kernel_offset_past_code"] = patched(
        base, lambda b: struct.pack_into("<I", b, section(b, 2)[1] + u32(b, plan_field(b, "kernel_offsets_offset")),
                                         0x7FFFFFF0))

    def sig_set(offset_in_section, value, fmt):
        def fn(b):
            _, off, _ = section(b, 1)
            struct.pack_into(fmt, b, off + offset_in_section, value)
        return fn
    # Input 0's descriptor starts at byte 16 of SIGNATURE: name_offset, dtype, rank, reserved, dims[8], byte_size.
    cases["signature_dtype_99"] = patched(base, sig_set(16 + 4, 99, "<I"))
    cases["signature_rank_9"] = patched(base, sig_set(16 + 8, 9, "<I"))
    cases["signature_negative_dim"] = patched(base, sig_set(16 + 16, 2**64 - 1, "<Q"))
    cases["signature_byte_size_wrong"] = patched(base, sig_set(16 + 80, 12, "<Q"))
    cases["signature_name_past_strings"] = patched(base, sig_set(16, 0x00FFFFFF, "<I"))
    cases["signature_inputs_huge"] = patched(base, sig_set(0, 0x7FFFFFFF, "<I"))

    def names_without_nul(b):
        _, off, size = section(b, 5)
        for k in range(off, off + size):
            if b[k] == 0:
                b[k] = ord("A")
    cases["names_without_terminators"] = patched(base, names_without_nul)
    for name, data in cases.items():
        write(f"{d}/{name}.ingot", data)

    # External weights: each case a folder holding the module and its weights file.
    ext = open(f"{out}/base/ext.ingot", "rb").read()
    weights = open(f"{out}/base/ext.ingot.weights", "rb").read()
    wcases = {
        "truncated": weights[:len(weights) // 2],
        "extended": weights + b"\0" * 16,
        "flipped": bytes(weights[:3]) + bytes([weights[3] ^ 1]) + bytes(weights[4:]),
        "empty": b"",
        "missing": None,
        "folder": "folder",
    }
    for name, data in wcases.items():
        folder = f"{out}/weights/{name}"
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        write(f"{folder}/ext.ingot", ext)
        if data == "folder":
            os.makedirs(f"{folder}/ext.ingot.weights")
        elif data is not None:
            write(f"{folder}/ext.ingot.weights", data)
    # A module whose weights path climbs out of its folder (CRCs fixed so the check
    # behind them is what refuses it).
    def climb(b):
        _, off, size = section(b, 3)
        path_len = struct.unpack_from("<I", b, off + 12)[0]
        new = b"../" + bytes(b[off + 16:off + 16 + path_len - 3])
        b[off + 16:off + 16 + path_len] = new
    folder = f"{out}/weights/path_climbs"
    os.makedirs(folder, exist_ok=True)
    write(f"{folder}/ext.ingot", patched(ext, climb))
    write(f"{folder}/ext.ingot.weights", weights)


if __name__ == "__main__":
    phase, out = sys.argv[1], sys.argv[2]
    if phase == "inputs":
        onnx_cases(out)
        tensor_cases(out)
    elif phase == "modules":
        module_cases(out)
    else:
        sys.exit(f"unknown phase {phase}")
