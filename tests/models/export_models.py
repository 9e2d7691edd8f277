#!/usr/bin/python3
"""Export the test models to ONNX together with a reference input and output.

    /usr/bin/python3 tests/models/export_models.py --out DIR [--only a,b] [--force]

Every base model NAME comes in variants:
    NAME           opset 13
    NAME_op17      opset 17
    NAME_dyn       opset 13 with dynamic axes (BERT: batch and sequence; LSTM:
    NAME_dyn_op17  sequence and batch), opset 17 likewise

For each variant this writes into DIR:
    NAME.onnx      batch 1, input "input", output "output"
    NAME.in.npy    a seeded random input (float32; int64 token ids for BERT)
    NAME.out.npy   PyTorch's output for that input, float32
    NAME.shape     dynamic variants only: the --input-shape value that fixes them

Weights are random (seeded per base model, so all variants of a model share
weights, input and output); BatchNorm layers get random affine parameters and
running statistics calibrated on random data in train mode, then the model is put
in eval mode. Everything is deterministic: rerunning produces byte-identical files.
A variant whose files already exist is skipped unless --force is given, so test
set-up can cache the folder.
"""
import argparse
import io
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

OPSETS = {"": 13, "_op17": 17}


# --------------------------------------------------------------------------- models

class LeNet5(nn.Module):
    """LeNet-5 style CNN for 1x1x28x28 (first conv padded, as for MNIST)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(),   # 6x28x28
            nn.MaxPool2d(2),                                        # 6x14x14
            nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(),             # 16x10x10
            nn.MaxPool2d(2),                                        # 16x5x5
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10),
        )
        # He init keeps activations O(1) through the ReLUs (the default init
        # shrinks them by about 10x over five layers); last layer gain 1.
        layers = [m for m in self.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
        for i, m in enumerate(layers):
            last = i == len(layers) - 1
            nn.init.kaiming_normal_(m.weight, nonlinearity="linear" if last else "relu")
            nn.init.uniform_(m.bias, -0.1, 0.1)

    def forward(self, x):
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN + shortcut, then ReLU."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class ResNetSmall(nn.Module):
    """Small residual CNN for 1x3x32x32: stem (16 ch), two identity blocks,
    one stride-2 block with a 1x1 conv+BN shortcut (32 ch), global average
    pool, linear to 10."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = nn.Sequential(BasicBlock(16, 16), BasicBlock(16, 16))
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class BertLayer(nn.Module):
    """Post-LN transformer encoder layer as in BERT: softmax self-attention with
    4 heads, residual + LayerNorm, GELU (erf form) feed-forward, residual + LayerNorm."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads, self.dh = heads, hidden // heads
        self.q, self.k, self.v = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ff1, self.act, self.ff2 = nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        b, s, h = x.shape

        def heads(t):
            return t.reshape(b, s, self.heads, self.dh).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(self.act(self.ff1(x))))


class BertEncoder(nn.Module):
    """BERT-style encoder over int64 token ids [batch, seq]: word + position
    embeddings, LayerNorm, two encoder layers (hidden 128, 4 heads, FFN 512)."""

    def __init__(self, vocab=1000, hidden=128, heads=4, ffn=512, layers=2, max_positions=512):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.register_buffer("position_ids", torch.arange(max_positions).unsqueeze(0))
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])
        for m in self.modules():
            if isinstance(m, nn.LayerNorm):   # non-trivial affine parameters
                nn.init.uniform_(m.weight, 0.8, 1.2)
                nn.init.uniform_(m.bias, -0.1, 0.1)

    def forward(self, ids):
        x = self.word(ids) + self.position(self.position_ids[:, :ids.shape[1]])
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x)
        return x


class LstmSeq(nn.Module):
    """Two-layer LSTM over [seq, batch, 64] (hidden 64) and a Linear to 10 per step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 64, num_layers=2)
        self.fc = nn.Linear(64, 10)
        # Wider than the default init (+-1/8) so the gates leave their linear range.
        for p in self.lstm.parameters():
            nn.init.uniform_(p, -0.3, 0.3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y)


class GruBiSeq(nn.Module):
    """Bidirectional two-layer GRU over [seq, batch, 40] (hidden 128) and a Linear to
    16 per step: large enough that a plan for several workers splits its time steps."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(40, 128, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(256, 16)
        for p in self.gru.parameters():
            nn.init.uniform_(p, -0.2, 0.2)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y)


def make_mobilenet_v2():
    import torchvision
    return torchvision.models.mobilenet_v2(weights=None)


def make_mobilenet_v3_small():
    import torchvision
    return torchvision.models.mobilenet_v3_small(weights=None)


def make_resnet18():
    import torchvision
    return torchvision.models.resnet18(weights=None)


def make_squeezenet1_1():
    import torchvision
    return torchvision.models.squeezenet1_1(weights=None)


def make_densenet121():
    import torchvision
    return torchvision.models.densenet121(weights=None)


# base name -> (constructor, input shape, seed[, input dtype])
BASE_MODELS = {
    "lenet": (LeNet5, (1, 1, 28, 28), 101),
    "resnet_small": (ResNetSmall, (1, 3, 32, 32), 102),
    "mobilenet_v2": (make_mobilenet_v2, (1, 3, 224, 224), 103),
    "resnet18": (make_resnet18, (1, 3, 224, 224), 104),
    "mobilenet_v3_small": (make_mobilenet_v3_small, (1, 3, 224, 224), 105),
    "squeezenet1_1": (make_squeezenet1_1, (1, 3, 224, 224), 106),
    "densenet121": (make_densenet121, (1, 3, 224, 224), 107),
    "bert_encoder": (BertEncoder, (1, 128), 108, "ids"),
    "lstm_seq": (LstmSeq, (32, 1, 64), 109),
    "gru_bi_seq": (GruBiSeq, (24, 2, 40), 110),
}

# Base models that also get a variant with dynamic axes (input axis -> name).
DYNAMIC_AXES = {
    "bert_encoder": {0: "batch", 1: "sequence"},
    "lstm_seq": {0: "sequence", 1: "batch"},
}


def variants():
    """name -> (base name, opset, dynamic)"""
    out = {}
    for base in BASE_MODELS:
        for suffix, opset in OPSETS.items():
            out[base + suffix] = (base, opset, False)
        if base in DYNAMIC_AXES:
            for suffix, opset in OPSETS.items():
                out[base + "_dyn" + suffix] = (base, opset, True)
    return out


MODELS = variants()

CALIB_BATCH = 4
CALIB_STEPS = 3


# --------------------------------------------------------------------------- export

def calibrate_batchnorm(model, shape, gen):
    """Give BatchNorm layers realistic parameters and running statistics."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    with torch.no_grad():
        for bn in bns:
            n = bn.num_features
            bn.weight.copy_(0.75 + 0.5 * torch.rand(n, generator=gen))
            bn.bias.copy_(0.2 * torch.rand(n, generator=gen) - 0.1)
            bn.reset_running_stats()
        saved = [bn.momentum for bn in bns]
        for bn in bns:
            bn.momentum = None          # cumulative average over the calibration passes
        model.train()
        for _ in range(CALIB_STEPS):
            model(torch.randn((CALIB_BATCH,) + tuple(shape[1:]), generator=gen))
        for bn, mom in zip(bns, saved):
            bn.momentum = mom
    model.eval()


def atomic_write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def npy_bytes(array):
    buf = io.BytesIO()
    dtype = np.int64 if np.issubdtype(array.dtype, np.integer) else np.float32
    np.save(buf, np.ascontiguousarray(array, dtype=dtype))
    return buf.getvalue()


def files_of(name):
    files = [name + ext for ext in (".onnx", ".in.npy", ".out.npy")]
    if MODELS[name][2]:
        files.append(name + ".shape")
    return files


def export_one(name, out_dir):
    base_name, opset, dynamic = MODELS[name]
    ctor, shape, seed = BASE_MODELS[base_name][:3]
    token_ids = BASE_MODELS[base_name][3:] == ("ids",)
    torch.manual_seed(seed)
    model = ctor()
    gen = torch.Generator().manual_seed(seed + 1)
    if not token_ids:
        calibrate_batchnorm(model, shape, gen)
    model.eval()

    input_gen = torch.Generator().manual_seed(seed + 2)
    if token_ids:
        x = torch.randint(0, model.word.num_embeddings, shape, generator=input_gen)
    else:
        x = torch.randn(shape, generator=input_gen)
    with torch.no_grad():
        y = model(x)

    kwargs = {}
    if dynamic:
        axes = DYNAMIC_AXES[base_name]
        kwargs["dynamic_axes"] = {"input": axes, "output": axes}
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=opset, do_constant_folding=True,
                      input_names=["input"], output_names=["output"], **kwargs)
    base = os.path.join(out_dir, name)
    atomic_write(base + ".in.npy", npy_bytes(x.numpy()))
    atomic_write(base + ".out.npy", npy_bytes(y.numpy()))
    if dynamic:
        dims = "x".join(str(d) for d in shape)
        atomic_write(base + ".shape", ("input:%s\n" % dims).encode())
    atomic_write(base + ".onnx", buf.getvalue())
    return list(x.shape), list(y.shape), float(y.std()), len(buf.getvalue())


def main():
    ap = argparse.ArgumentParser(
        description="Export ONNX test models with reference inputs and outputs.")
    ap.add_argument("--out", required=True, help="output folder (created if missing)")
    ap.add_argument("--only", default="",
                    help="comma-separated subset of: " + ",".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export even if cached")
    args = ap.parse_args()

    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error("unknown model(s): %s (known: %s)" % (",".join(unknown), ",".join(MODELS)))

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)

    for name in names:
        files = [os.path.join(args.out, f) for f in files_of(name)]
        if not args.force and all(os.path.isfile(f) for f in files):
            print(f"{name}: cached in {args.out}")
            continue
        t0 = time.time()
        in_shape, out_shape, out_std, size = export_one(name, args.out)
        print(f"{name}: opset {MODELS[name][1]}, input {in_shape} -> output {out_shape}, output std {out_std:.3f}, "
              f"{size} bytes, {time.time() - t0:.1f}s")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
