#!/usr/bin/python3
"""Export the benchmark models to ONNX with a reference input and output.

    /usr/bin/python3 bench/export_models.py [--out DIR] [--only a,b] [--force]

Models (opset 13, batch 1, static shapes, input "input", output "output", float32):

    mlp               784-512-256-10 MLP with ReLU                     input 1x784
    cnn_small         2x (conv5x5, ReLU, maxpool 2), 2 FC                    1x1x28x28
    kws_dscnn         keyword-spotting DS-CNN-S (conv + 4 depthwise-separable) 1x1x49x10
    tiny_transformer  2-layer encoder, d 128, 4 heads, FFN 512 GELU, seq 64  1x64x128
    mobilenet_v2      torchvision, random weights                          1x3x224x224
    squeezenet1_1     torchvision, random weights                          1x3x224x224
    resnet18          torchvision, random weights                          1x3x224x224
    null              one Relu on 16 floats (per-call overhead probe)      1x16
    gemm1024          one MatMul [1024,1024] x constant [1024,1024]        1024x1024

For each model NAME this writes into DIR (default: bench/models):

    NAME.onnx      the graph (eval mode, constant folding on)
    NAME.in.npy    a seeded random input, float32
    NAME.out.npy   the reference output for it (PyTorch eager; numpy for null/gemm1024)

and manifest.json with, per model: shapes, parameter count, op histogram, MACs and
GFLOPs = 2 x MACs of Conv, ConvTranspose, Gemm and MatMul. MACs are counted on the
ONNX graph after shape inference; for the torch models they are also counted at the
aten level while running the torch model (`torch_macs`), and both must agree.

Weights are random but seeded per model; BatchNorm layers get random affine
parameters and running statistics calibrated on seeded random batches (so
activations stay in a realistic range through deep random nets), then the model is
put in eval mode and the exporter folds BatchNorm into the convolutions.

Deterministic: rerunning writes byte-identical files. A model whose three files
exist and which has a manifest entry is skipped unless --force is given.
Needs Debian's python3-torch 1.13 / python3-torchvision 0.14 / python3-onnx 1.12.
"""
import argparse
import collections
import io
import json
import os
import sys
import time
import warnings
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "models")

warnings.filterwarnings("ignore")


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def make_input(name, shape):
    rng = np.random.default_rng(seed_of(name) + 7)
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------ torch models

def torch_models():
    """name -> (constructor, input shape); imported lazily (torch is slow to load)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 512)
            self.fc2 = nn.Linear(512, 256)
            self.fc3 = nn.Linear(256, 10)

        def forward(self, x):
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    class CNNSmall(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
            self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
            self.fc1 = nn.Linear(32 * 7 * 7, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = torch.flatten(x, 1)
            return self.fc2(F.relu(self.fc1(x)))

    class DSCNN(nn.Module):
        """DS-CNN-S ("Hello Edge"): conv 64ch 10x4 stride 2 + BN + ReLU, then
        4 x [depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN + ReLU], avgpool, FC 12."""

        def __init__(self, ch=64, n_blocks=4, n_classes=12):
            super().__init__()
            self.conv0 = nn.Conv2d(1, ch, (10, 4), stride=2, padding=(5, 1), bias=False)
            self.bn0 = nn.BatchNorm2d(ch)
            layers = []
            for _ in range(n_blocks):
                layers += [nn.Conv2d(ch, ch, 3, padding=1, groups=ch, bias=False),
                           nn.BatchNorm2d(ch), nn.ReLU(),
                           nn.Conv2d(ch, ch, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU()]
            self.blocks = nn.Sequential(*layers)
            self.fc = nn.Linear(ch, n_classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.bn0(self.conv0(x))))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class TinyTransformer(nn.Module):
        """Post-norm encoder on already-embedded tokens plus a learned position
        embedding. Exported with autograd on: under no_grad torch 1.13 takes a fused
        fast path that has no ONNX export."""

        def __init__(self, d=128, heads=4, ffn=512, layers=2, seq=64):
            super().__init__()
            self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation="gelu",
                                               batch_first=True)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

        def forward(self, x):
            return self.enc(x + self.pos)

    def tv(name):
        return lambda: getattr(torchvision.models, name)(weights=None)

    return collections.OrderedDict([
        ("mlp", (MLP, (1, 784))),
        ("cnn_small", (CNNSmall, (1, 1, 28, 28))),
        ("kws_dscnn", (DSCNN, (1, 1, 49, 10))),
        ("tiny_transformer", (TinyTransformer, (1, 64, 128))),
        ("mobilenet_v2", (tv("mobilenet_v2"), (1, 3, 224, 224))),
        ("squeezenet1_1", (tv("squeezenet1_1"), (1, 3, 224, 224))),
        ("resnet18", (tv("resnet18"), (1, 3, 224, 224))),
    ])


TORCH_MODELS = ["mlp", "cnn_small", "kws_dscnn", "tiny_transformer", "mobilenet_v2",
                "squeezenet1_1", "resnet18"]
ONNX_MODELS = ["null", "gemm1024"]
ALL = TORCH_MODELS + ONNX_MODELS


# ------------------------------------------------------------------ MAC counts

def onnx_macs(model):
    """MACs of Conv/ConvTranspose/Gemm/MatMul from static shapes; also the op
    histogram and the nodes whose shapes could not be resolved."""
    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
            shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    shapes[n.output[0]] = list(a.t.dims)

    def prod(xs):
        if any(x is None for x in xs):
            raise TypeError("unknown dim")
        r = 1
        for x in xs:
            r *= int(x)
        return r

    macs, unknown = 0, []
    for n in g.node:
        try:
            if n.op_type == "Conv":
                macs += prod(shapes[n.output[0]]) * prod(shapes[n.input[1]][1:])
            elif n.op_type == "ConvTranspose":
                macs += prod(shapes[n.input[0]]) * prod(shapes[n.input[1]][1:])
            elif n.op_type == "Gemm":
                a = shapes[n.input[0]]
                trans_a = any(at.name == "transA" and at.i for at in n.attribute)
                macs += prod(shapes[n.output[0]]) * (a[0] if trans_a else a[1])
            elif n.op_type == "MatMul":
                macs += prod(shapes[n.output[0]]) * shapes[n.input[0]][-1]
        except (KeyError, TypeError, IndexError):
            unknown.append(n.name or n.op_type)
    ops = collections.Counter(n.op_type for n in g.node)
    return macs, dict(sorted(ops.items())), unknown


def torch_macs(model, x):
    """MACs of convolution and matrix products at the aten level."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.macs = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            p = func.overloadpacket
            if p is aten.convolution:
                w = args[1]
                self.macs += out.numel() * (w.numel() // w.shape[0])
            elif p in (aten.mm, aten.bmm):
                self.macs += out.numel() * args[0].shape[-1]
            elif p in (aten.addmm, aten.baddbmm):
                self.macs += out.numel() * args[1].shape[-1]
            return out

    c = Counter()
    with c:
        model(x)
    return int(c.macs)


# ------------------------------------------------------------------ export

def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array, dtype=np.float32))
    return buf.getvalue()


def atomic_write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def calibrate_batchnorm(model, shape, seed):
    import torch
    import torch.nn as nn
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for bn in bns:
            bn.weight.copy_(1.0 + 0.1 * torch.randn(bn.weight.shape, generator=g))
            bn.bias.copy_(0.1 * torch.randn(bn.bias.shape, generator=g))
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration batches
        model.train()
        for _ in range(2):
            model(torch.randn((4,) + tuple(shape[1:]), generator=g))


def export_torch(name, spec=None):
    """Export one torch model; spec = (constructor, input shape), by default the
    benchmark model of that name."""
    import torch
    ctor, shape = spec or torch_models()[name]
    seed = seed_of(name)
    torch.manual_seed(seed)
    model = ctor()
    calibrate_batchnorm(model, shape, seed)
    model.eval()
    x_np = make_input(name, shape)
    x = torch.from_numpy(x_np)
    y = model(x).detach()  # autograd stays on (see TinyTransformer)
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=OPSET, do_constant_folding=True,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.EVAL)
    onnx_bytes = buf.getvalue()
    params = sum(p.numel() for p in model.parameters())
    aten_macs = torch_macs(model, x)
    return onnx_bytes, x_np, y.numpy(), dict(params=int(params), torch_macs=aten_macs)


def export_null(name):
    X = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 16])
    Y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 16])
    graph = helper.make_graph([helper.make_node("Relu", ["input"], ["output"], name="relu")],
                              "null", [X], [Y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="ingot-bench")
    m.ir_version = 7
    x = make_input(name, (1, 16))
    return m.SerializeToString(), x, np.maximum(x, 0), dict(params=0)


def export_gemm1024(name, n=1024):
    rng = np.random.default_rng(seed_of(name))
    b = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    X = helper.make_tensor_value_info("input", TensorProto.FLOAT, [n, n])
    Y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [n, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["input", "B"], ["output"], name="matmul")],
                              "gemm1024", [X], [Y], initializer=[numpy_helper.from_array(b, "B")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="ingot-bench")
    m.ir_version = 7
    x = make_input(name, (n, n))
    y = (x.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return m.SerializeToString(), x, y, dict(params=n * n)


def export_one(name, outdir, spec=None):
    t0 = time.time()
    if name == "null":
        onnx_bytes, x, y, extra = export_null(name)
    elif name == "gemm1024":
        onnx_bytes, x, y, extra = export_gemm1024(name)
    else:
        onnx_bytes, x, y, extra = export_torch(name, spec)
    model = onnx.load_from_string(onnx_bytes)
    onnx.checker.check_model(model)
    macs, ops, unknown = onnx_macs(model)
    if "torch_macs" in extra and (unknown or extra["torch_macs"] != macs):
        # The aten-level count is exact; ONNX shape inference can miss a few nodes.
        print(f"[export] {name}: ONNX-graph MACs {macs:,d} (unresolved: {unknown}) vs aten "
              f"{extra['torch_macs']:,d}; using the aten count", flush=True)
        macs = extra["torch_macs"]
    base = os.path.join(outdir, name)
    atomic_write(base + ".in.npy", npy_bytes(x))
    atomic_write(base + ".out.npy", npy_bytes(y))
    atomic_write(base + ".onnx", onnx_bytes)
    info = dict(name=name, input_shape=list(x.shape), output_shape=list(y.shape),
                params=extra["params"], macs=int(macs), gflops=2.0 * macs / 1e9, ops=ops,
                opset=OPSET, seed=seed_of(name), onnx_bytes=len(onnx_bytes),
                out_absmax=float(np.abs(y).max()))
    if "torch_macs" in extra:
        info["torch_macs"] = extra["torch_macs"]
    print(f"[export] {name:17s} params={info['params']:>10,d} GFLOPs={info['gflops']:8.4f} "
          f"onnx={len(onnx_bytes) / 1e6:6.2f} MB ({time.time() - t0:.1f} s)", flush=True)
    return info


def main(specs=None, names=None, default_out=DEFAULT_OUT, what="the benchmark models"):
    """Export the benchmark models, or the torch models `names` that specs() (a function
    returning name -> (constructor, input shape)) builds, into the folder's manifest."""
    known = names or ALL
    ap = argparse.ArgumentParser(description=f"Export {what} to ONNX.")
    ap.add_argument("--out", default=default_out, help=f"output folder (default: {os.path.relpath(default_out)})")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(known))
    ap.add_argument("--force", action="store_true", help="re-export models already present")
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()] or known
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error("unknown model(s): %s (known: %s)" % (",".join(unknown), ",".join(known)))

    os.makedirs(args.out, exist_ok=True)
    man_path = os.path.join(args.out, "manifest.json")
    manifest = {}
    if os.path.exists(man_path):
        with open(man_path) as f:
            manifest = json.load(f)
    todo = []
    for name in names:
        base = os.path.join(args.out, name)
        have = all(os.path.isfile(base + e) for e in (".onnx", ".in.npy", ".out.npy"))
        if args.force or not have or name not in manifest:
            todo.append(name)
    if todo and (specs or any(n in TORCH_MODELS for n in todo)):
        import torch
        torch.set_num_threads(1)
    table = specs() if specs and todo else {}
    failures = {}
    for name in todo:
        try:
            manifest[name] = export_one(name, args.out, table.get(name))
        except Exception as e:  # keep going; report at the end
            failures[name] = f"{type(e).__name__}: {e}"
            print(f"[export] {name}: FAILED {failures[name][:400]}", flush=True)
    if todo:
        manifest["_meta"] = dict(
            opset=OPSET,
            flops="GFLOPs = 2 x MACs of Conv/ConvTranspose/Gemm/MatMul (elementwise, pooling, "
                  "softmax and normalization not counted)")
        atomic_write(man_path, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    cached = [n for n in names if n not in todo]
    if cached:
        print(f"[export] cached in {args.out}: {','.join(cached)}")
    if failures:
        print(f"[export] failures: {failures}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
