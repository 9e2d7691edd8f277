#!/usr/bin/python3
"""Export a keyword-spotting DS-CNN ("Hello Edge", DS-CNN-S shape) with a test input
and its reference output, for the firmware.

    /usr/bin/python3 export_kws.py --out DIR

Writes DIR/kws.onnx (opset 13, input "input" 1x1x49x10 MFCC frames, output "output"
1x12 logits), DIR/kws.in.npy and DIR/kws.out.npy (PyTorch eager, float32).
The network: conv 10x4 stride 2, 64 channels, BatchNorm, ReLU; four depthwise-separable
blocks (depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN + ReLU); global average pool;
fully connected to 12 classes. Weights and BatchNorm statistics are random but seeded,
so reruns write the same files. Needs Debian's python3-torch and python3-onnx.
"""
import argparse
import io
import os
import warnings

import numpy as np

warnings.filterwarnings("ignore")
SEED = 20240611


def build():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class DSCNN(nn.Module):
        def __init__(self, ch=64, blocks=4, classes=12):
            super().__init__()
            self.conv0 = nn.Conv2d(1, ch, (10, 4), stride=2, padding=(5, 1), bias=False)
            self.bn0 = nn.BatchNorm2d(ch)
            layers = []
            for _ in range(blocks):
                layers += [nn.Conv2d(ch, ch, 3, padding=1, groups=ch, bias=False), nn.BatchNorm2d(ch), nn.ReLU(),
                           nn.Conv2d(ch, ch, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU()]
            self.blocks = nn.Sequential(*layers)
            self.fc = nn.Linear(ch, classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.bn0(self.conv0(x))))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    torch.manual_seed(SEED)
    model = DSCNN()
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        # BatchNorm with statistics measured on seeded random batches, so activations
        # keep a realistic range through the blocks.
        for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
            bn.weight.copy_(1.0 + 0.1 * torch.randn(bn.weight.shape, generator=g))
            bn.bias.copy_(0.1 * torch.randn(bn.bias.shape, generator=g))
            bn.reset_running_stats()
            bn.momentum = None
        model.train()
        for _ in range(2):
            model(torch.randn((8, 1, 49, 10), generator=g))
    model.eval()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch

    os.makedirs(args.out, exist_ok=True)
    model = build()
    x = np.random.default_rng(SEED).standard_normal((1, 1, 49, 10)).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy().astype(np.float32)
    buf = io.BytesIO()
    torch.onnx.export(model, torch.from_numpy(x), buf, opset_version=13, do_constant_folding=True,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.EVAL)

    def write(name, data):
        path = os.path.join(args.out, name)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)

    def npy(array):
        b = io.BytesIO()
        np.save(b, array)
        return b.getvalue()

    write("kws.onnx", buf.getvalue())
    write("kws.in.npy", npy(x))
    write("kws.out.npy", npy(y))


if __name__ == "__main__":
    main()
