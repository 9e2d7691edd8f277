"""Fixtures for the tests of the Python module: small torch models exported to ONNX
once per session, with their torch references, and the `ingot` command line the
module is compared against."""
import os
import pathlib

import numpy as np
import onnx
import onnx.helper
import pytest
import torch

import ingot


def _ingot_exe():
    exe = os.environ.get("INGOT_EXE")
    if not exe:
        # build/python/ingot*.so -> build/bin/ingot; P/lib/python3/dist-packages -> P/bin
        here = pathlib.Path(ingot.__file__).resolve().parent
        for candidate in (here.parent / "bin" / "ingot", here.parents[2] / "bin" / "ingot"):
            if candidate.exists():
                exe = str(candidate)
                break
    assert exe and os.path.exists(exe), "set INGOT_EXE to the ingot executable"
    return exe


@pytest.fixture(scope="session")
def ingot_exe():
    return _ingot_exe()


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))

    def forward(self, x):
        return self.net(x)


class Multi(torch.nn.Module):
    """Two inputs (f32, i64) and three outputs (f32, f32, bool)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 6)

    def forward(self, x, idx):
        return torch.relu(self.fc(x)), torch.index_select(x, 0, idx), x > 0


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv(x)), 2)
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class Model:
    """An exported model: its ONNX file, example inputs and torch's outputs for them."""

    def __init__(self, path, inputs, outputs):
        self.path = path
        self.inputs = inputs
        self.outputs = outputs


def _export(module, args, path, names, output_names, dynamic_axes=None):
    torch.manual_seed(0)
    module.eval()
    torch.onnx.export(module, args, str(path), input_names=names, output_names=output_names,
                      opset_version=13, dynamic_axes=dynamic_axes)
    with torch.no_grad():
        out = module(*args)
    if isinstance(out, torch.Tensor):
        out = (out,)
    return Model(path, [a.numpy() for a in args], [o.numpy() for o in out])


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    out = {}
    out["mlp"] = _export(Mlp(), (torch.from_numpy(rng.standard_normal((2, 16), dtype=np.float32)),),
                         folder / "mlp.onnx", ["x"], ["y"])
    out["multi"] = _export(Multi(), (torch.from_numpy(rng.standard_normal((3, 4), dtype=np.float32)),
                                     torch.tensor([2, 0, 1, 2, 0], dtype=torch.int64)),
                           folder / "multi.onnx", ["x", "idx"], ["y", "rows", "positive"])
    out["cnn"] = _export(SmallCnn(), (torch.from_numpy(rng.standard_normal((1, 3, 16, 16), dtype=np.float32)),),
                         folder / "cnn.onnx", ["image"], ["logits"])
    out["dynamic"] = _export(Mlp(), (torch.from_numpy(rng.standard_normal((2, 16), dtype=np.float32)),),
                             folder / "dynamic.onnx", ["x"], ["y"], dynamic_axes={"x": {0: "batch"}})

    # An op ingot does not know, for compile errors.
    node = onnx.helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery", domain="")
    graph = onnx.helper.make_graph(
        [node], "unknown",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "unknown_op.onnx"))
    out["unknown_op"] = Model(folder / "unknown_op.onnx", [], [])

    (folder / "garbage.onnx").write_bytes(b"this is not a protobuf \xff\xfe")
    out["garbage"] = Model(folder / "garbage.onnx", [], [])
    return out


@pytest.fixture(scope="session")
def mlp_bytes(models):
    return ingot.compile(models["mlp"].path)


@pytest.fixture(scope="session")
def mlp_module(mlp_bytes):
    return ingot.load(mlp_bytes)
