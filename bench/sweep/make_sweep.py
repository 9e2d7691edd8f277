#!/usr/bin/python3
"""Generate the layer sweep: single-op and small-block ONNX models with references.

    /usr/bin/python3 bench/sweep/make_sweep.py [--out DIR] [--set all|quick|ci]
                                               [--only a,b] [--force] [--list]

Every case is a small torch module exported with torch.onnx.export (opset 13, batch 1,
static shapes, eval mode, one input "input", one output "output", seeded random
weights; BatchNorm after a convolution is folded by the exporter). For each case NAME
this writes into DIR (default: bench/sweep/cases):

    NAME.onnx      the graph
    NAME.in.npy    a seeded random input, float32
    NAME.out.npy   PyTorch's output for it (the reference)

and manifest.json with, per case: category, parameters, shapes, op histogram, GFLOP
(2 x MACs of Conv/ConvTranspose/Gemm/MatMul/LSTM/GRU plus a rough count of the other
ops: one per output element, a window's size for pooling) and MB (the compulsory
memory traffic: input + output + weights, float32), and whether it belongs to the
quick subset (`quick`, about 40 cases) and the CI subset (`ci`, about 20 small ones).
Files are byte-identical from run to run; a case whose files exist and which has a
manifest entry is skipped unless --force is given.
"""
import argparse
import collections
import io
import json
import math
import os
import sys
import time
import warnings
import zlib

import numpy as np
import onnx

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "cases")
MAX_GFLOP = 0.5

warnings.filterwarnings("ignore")


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


# ------------------------------------------------------------------ the grid

def conv_name(cin, cout, hw, k, s=1, d=1, g=1, act=""):
    h, w = hw if isinstance(hw, tuple) else (hw, hw)
    k_ = f"{k[0]}x{k[1]}" if isinstance(k, tuple) else str(k)
    gs = "dw" if g == cin == cout and g > 1 else f"g{g}"
    return f"conv_k{k_}_s{s}_d{d}_{gs}_{cin}x{cout}_{h}x{w}" + (f"_{act}" if act else "")


def cases():
    """name -> (category, constructor keyword arguments); ordered and deterministic."""
    out = collections.OrderedDict()

    def add(cat, name, **kw):
        assert name not in out, name
        out[name] = (cat, kw)

    def conv(cat, cin, cout, hw, k, s=1, d=1, g=1, act="", bn=False):
        add(cat, conv_name(cin, cout, hw, k, s, d, g, act), kind="conv", cin=cin, cout=cout,
            hw=hw, k=k, s=s, d=d, g=g, act=act, bn=bn)

    # Dense convolutions: kernel x stride x dilation over stem-to-head shapes.
    for cin, cout, hw in [(3, 16, 112), (32, 32, 56), (64, 64, 28), (128, 128, 14), (256, 256, 7)]:
        for k in (1, 3, 5, 7):
            for s in (1, 2):
                for d in ((1, 2) if k in (3, 5) else (1,)):
                    conv("conv", cin, cout, hw, k, s, d)
    # Odd channel counts, odd and non-square planes.
    for cin, cout, hw, k, s in [(3, 17, 56, 3, 1), (17, 33, 28, 3, 1), (33, 65, 14, 3, 2),
                                (7, 13, 28, 5, 1), (65, 31, 14, 1, 1), (129, 127, 7, 3, 1),
                                (96, 40, 28, 1, 1), (24, 144, 56, 1, 1), (3, 24, 75, 3, 2),
                                (31, 31, 27, 3, 1), (1, 64, (49, 10), (10, 4), 2),
                                (40, 200, 15, 1, 1), (160, 960, 7, 1, 1)]:
        conv("conv", cin, cout, hw, k, s)
    # Grouped: 2, 4, 8, 16, C/16, C/4 and depthwise, stride 1 and 2.
    for c, hw in [(64, 56), (128, 28), (256, 14)]:
        for g in sorted({2, 4, 8, 16, c // 16, c // 4, c}):
            for s in (1, 2):
                conv("conv_group", c, c, hw, 3, s, 1, g)
    # Depthwise over MobileNet/EfficientNet shapes.
    for c, hw in [(32, 112), (144, 56), (240, 28), (672, 14), (960, 7)]:
        for k in (3, 5, 7):
            for s in (1, 2):
                conv("conv_dw", c, c, hw, k, s, 1, c)
    for c, hw in [(64, 56), (256, 14)]:
        conv("conv_dw", c, c, hw, 3, 1, 2, c)
    conv("conv_dw", 19, 19, 33, 3, 1, 1, 19)
    # Epilogues after convolution + folded BatchNorm.
    for cin, cout, hw, k, g in [(32, 32, 56, 3, 1), (64, 64, 28, 1, 1), (96, 96, 28, 3, 96),
                                (16, 96, 56, 1, 1)]:
        for act in ("relu", "relu6", "hardswish", "silu", "sigmoid"):
            conv("conv_act", cin, cout, hw, k, 1, 1, g, act, bn=True)

    # Transposed convolutions (decoder / upsampling shapes).
    for cin, cout, hw, k, s, p, op, g in [
            (64, 32, 14, 2, 2, 0, 0, 1), (32, 16, 28, 4, 2, 1, 0, 1), (16, 8, 56, 3, 2, 1, 1, 1),
            (128, 64, 7, 2, 2, 0, 0, 1), (256, 128, 7, 4, 2, 1, 0, 1), (64, 64, 14, 3, 1, 1, 0, 1),
            (32, 32, 28, 4, 2, 1, 0, 32), (64, 64, 14, 4, 2, 1, 0, 4), (3, 16, 32, 5, 2, 2, 1, 1),
            (48, 24, 20, 3, 2, 0, 0, 1), (1, 8, 64, 4, 4, 0, 0, 1), (512, 256, 4, 4, 2, 1, 0, 1)]:
        add("convT", f"convT_k{k}_s{s}_p{p}_op{op}_g{g}_{cin}x{cout}_{hw}", kind="convT", cin=cin,
            cout=cout, hw=hw, k=k, s=s, p=p, op=op, g=g)

    # Gemm (Linear: Gemm with transB) with skinny and square shapes.
    for m in (1, 4, 16, 64, 256):
        for k, n in [(128, 128), (512, 512), (768, 3072), (1024, 1000), (2048, 512), (25, 1000),
                     (3072, 768)]:
            if 2 * m * k * n <= MAX_GFLOP * 1e9:
                add("gemm", f"gemm_m{m}_k{k}_n{n}", kind="linear", m=m, k=k, n=n)
    # Batched MatMul: by a constant [B,K,N], and activation by activation.
    for b, m, k, n in [(4, 64, 64, 64), (8, 16, 128, 128), (12, 128, 64, 128), (16, 1, 256, 256),
                       (3, 49, 32, 49), (32, 64, 32, 64)]:
        add("matmul", f"matmul_const_b{b}_m{m}_k{k}_n{n}", kind="bmm_const", b=b, m=m, k=k, n=n)
    for b, m, k in [(4, 64, 64), (8, 128, 64), (12, 197, 64), (1, 256, 256), (16, 32, 16)]:
        add("matmul", f"matmul_xxt_b{b}_m{m}_k{k}", kind="bmm_xxt", b=b, m=m, k=k)

    # Pooling.
    for c, hw in [(64, 112), (128, 56), (256, 28), (512, 14), (96, 55)]:
        for op, k, s, p, ceil in [("max", 2, 2, 0, 0), ("max", 3, 2, 1, 0), ("max", 3, 2, 0, 1),
                                  ("max", 3, 1, 1, 0), ("avg", 2, 2, 0, 0), ("avg", 3, 2, 0, 1),
                                  ("avg", 3, 1, 1, 0)]:
            add("pool", f"{op}pool_k{k}_s{s}_p{p}{'_ceil' if ceil else ''}_{c}_{hw}", kind="pool",
                op=op, c=c, hw=hw, k=k, s=s, p=p, ceil=ceil)
    for c, hw in [(2048, 7), (1280, 7), (512, 14), (64, 56)]:
        add("pool", f"gap_{c}_{hw}", kind="gap", c=c, hw=hw)

    # Recurrent: LSTM and GRU over sequence and hidden sizes, both directions.
    for cell in ("lstm", "gru"):
        for seq, inp, hid in [(1, 64, 64), (8, 40, 64), (25, 40, 128), (32, 128, 128),
                              (100, 64, 64), (50, 256, 256), (16, 512, 512), (200, 32, 32)]:
            for bi in (False, True):
                add("rnn", f"{cell}_s{seq}_i{inp}_h{hid}_{'bi' if bi else 'uni'}", kind="rnn",
                    cell=cell, seq=seq, inp=inp, hid=hid, bi=bi)

    # Attention: full multi-head blocks (QKV projection, scores, softmax, output
    # projection) and bare MatMul-Softmax-MatMul.
    for s, d, h in [(16, 64, 1), (64, 128, 4), (128, 128, 4), (64, 256, 8), (197, 192, 3),
                    (256, 256, 4), (49, 96, 3), (128, 512, 8)]:
        add("attention", f"mha_s{s}_d{d}_h{h}", kind="mha", s=s, d=d, h=h)
    for h, s, dh in [(1, 64, 64), (4, 128, 32), (8, 64, 64), (12, 197, 64), (4, 256, 16)]:
        add("attention", f"sdpa_h{h}_s{s}_dh{dh}", kind="sdpa", h=h, s=s, dh=dh)

    # Squeeze-and-excitation blocks.
    for c, hw, r, gate in [(16, 112, 4, "sigmoid"), (32, 56, 4, "sigmoid"), (64, 56, 16, "sigmoid"),
                           (96, 28, 4, "hardsigmoid"), (240, 14, 4, "hardsigmoid"),
                           (576, 7, 4, "hardsigmoid"), (960, 7, 4, "sigmoid"),
                           (672, 14, 4, "sigmoid"), (256, 28, 16, "sigmoid"), (2048, 7, 16, "sigmoid")]:
        add("se", f"se_{c}_{hw}_r{r}_{gate}", kind="se", c=c, hw=hw, r=r, gate=gate)

    # Normalizations on their own.
    for s, d in [(1, 1024), (64, 128), (128, 256), (197, 768), (512, 512), (49, 96)]:
        add("norm", f"layernorm_{s}x{d}", kind="layernorm", s=s, d=d)
    for c, hw in [(3, 224), (32, 56), (64, 28), (128, 14), (256, 64)]:
        add("norm", f"instancenorm_{c}_{hw}", kind="instancenorm", c=c, hw=hw)
    for c, hw in [(16, 112), (64, 56), (256, 14), (1024, 7)]:
        add("norm", f"batchnorm_{c}_{hw}", kind="batchnorm", c=c, hw=hw)
    for c, hw, g in [(64, 56, 32), (256, 14, 8)]:
        add("norm", f"groupnorm_{c}_{hw}_g{g}", kind="groupnorm", c=c, hw=hw, g=g)

    # Elementwise chains.
    for op in ("add_relu", "affine", "silu", "gelu", "hardswish", "tanh_affine", "softmax_c",
               "residual_mul_add"):
        for c, hw in [(16, 56), (64, 56), (256, 14)] + ([(32, 112)] if op in ("add_relu", "silu") else []):
            add("eltwise", f"elt_{op}_{c}_{hw}", kind="eltwise", op=op, c=c, hw=hw)

    # Small blocks from common networks.
    for cin, cout, hw, s, t in [(24, 24, 56, 1, 6), (32, 64, 28, 2, 6), (96, 96, 14, 1, 6),
                                (160, 160, 7, 1, 6)]:
        add("block", f"invres_{cin}x{cout}_{hw}_s{s}_t{t}", kind="invres", cin=cin, cout=cout,
            hw=hw, s=s, t=t)
    for cin, cout, hw, s in [(64, 64, 56, 1), (64, 128, 56, 2), (256, 256, 14, 1)]:
        add("block", f"basic_{cin}x{cout}_{hw}_s{s}", kind="basic", cin=cin, cout=cout, hw=hw, s=s)
    for cin, mid, hw in [(256, 64, 28), (1024, 256, 7)]:
        add("block", f"bottleneck_{cin}_{mid}_{hw}", kind="bottleneck", cin=cin, mid=mid, hw=hw)
    for cin, sq, ex, hw in [(96, 16, 64, 55), (256, 32, 128, 27), (512, 64, 256, 13)]:
        add("block", f"fire_{cin}_{sq}_{ex}_{hw}", kind="fire", cin=cin, sq=sq, ex=ex, hw=hw)
    for c, hw, g in [(116, 28, 2), (232, 14, 2)]:
        add("block", f"shuffle_{c}_{hw}_g{g}", kind="shuffle", c=c, hw=hw, g=g)
    return out


# A fixed cross-section of the grid, about 40 cases: `--quick`.
QUICK = [
    "conv_k1_s1_d1_g1_64x64_28x28", "conv_k3_s1_d1_g1_32x32_56x56", "conv_k3_s2_d1_g1_3x16_112x112",
    "conv_k3_s1_d2_g1_128x128_14x14", "conv_k5_s1_d1_g1_64x64_28x28", "conv_k7_s2_d1_g1_3x16_112x112",
    "conv_k3_s1_d1_g1_256x256_7x7", "conv_k3_s1_d1_g1_17x33_28x28", "conv_k10x4_s2_d1_g1_1x64_49x10",
    "conv_k1_s1_d1_g1_160x960_7x7", "conv_k3_s1_d1_g2_64x64_56x56", "conv_k3_s1_d1_g8_128x128_28x28",
    "conv_k3_s2_d1_g32_128x128_28x28", "conv_k3_s1_d1_g64_256x256_14x14",
    "conv_k3_s1_d1_dw_32x32_112x112", "conv_k5_s2_d1_dw_240x240_28x28", "conv_k7_s1_d1_dw_960x960_7x7",
    "conv_k3_s1_d1_g1_32x32_56x56_hardswish", "conv_k1_s1_d1_g1_16x96_56x56_silu",
    "convT_k2_s2_p0_op0_g1_64x32_14", "convT_k4_s2_p1_op0_g1_256x128_7",
    "gemm_m1_k1024_n1000", "gemm_m16_k512_n512", "gemm_m64_k768_n3072", "matmul_const_b8_m16_k128_n128",
    "matmul_xxt_b12_m197_k64",
    "maxpool_k3_s2_p0_ceil_96_55", "maxpool_k2_s2_p0_128_56", "avgpool_k3_s2_p0_ceil_256_28", "gap_1280_7",
    "lstm_s25_i40_h128_uni", "lstm_s16_i512_h512_bi", "gru_s100_i64_h64_bi", "gru_s32_i128_h128_uni",
    "mha_s64_d128_h4", "sdpa_h12_s197_dh64",
    "se_96_28_r4_hardsigmoid", "se_960_7_r4_sigmoid",
    "layernorm_197x768", "instancenorm_64_28", "batchnorm_64_56",
    "elt_gelu_64_56", "elt_silu_32_112",
    "invres_32x64_28_s2_t6", "basic_64x64_56_s1",
]

# Small, quick-to-compile cases for the CI correctness check (tests/e2e/bench_subset.sh).
CI = [
    "conv_k3_s1_d1_g1_17x33_28x28", "conv_k3_s2_d2_g1_32x32_56x56", "conv_k5_s2_d1_g1_128x128_14x14",
    "conv_k10x4_s2_d1_g1_1x64_49x10", "conv_k3_s1_d1_g8_128x128_28x28", "conv_k5_s2_d1_dw_240x240_28x28",
    "conv_k3_s1_d1_dw_19x19_33x33", "conv_k1_s1_d1_g1_64x64_28x28_hardswish",
    "convT_k3_s2_p1_op1_g1_16x8_56", "convT_k4_s2_p1_op0_g32_32x32_28",
    "gemm_m4_k25_n1000", "matmul_xxt_b16_m32_k16", "maxpool_k3_s2_p0_ceil_96_55",
    "avgpool_k3_s2_p0_ceil_256_28", "lstm_s8_i40_h64_bi", "gru_s8_i40_h64_bi", "mha_s49_d96_h3",
    "se_96_28_r4_hardsigmoid", "layernorm_49x96", "instancenorm_32_56", "groupnorm_256_14_g8",
    "elt_gelu_16_56", "shuffle_116_28_g2",
]


# ------------------------------------------------------------------ modules

def build(kw):
    """(torch module, input shape) for one case."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def act(name):
        return {"": nn.Identity, "relu": nn.ReLU, "relu6": nn.ReLU6, "hardswish": nn.Hardswish,
                "silu": nn.SiLU, "sigmoid": nn.Sigmoid, "hardsigmoid": nn.Hardsigmoid}[name]()

    def hw2(hw):
        return hw if isinstance(hw, tuple) else (hw, hw)

    def conv_bn(cin, cout, k, s=1, g=1, a="relu"):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False),
                             nn.BatchNorm2d(cout), act(a))

    class Lambda(nn.Module):
        def __init__(self, fn, **mods):
            super().__init__()
            self.fn = fn
            for k, m in mods.items():
                setattr(self, k, m)

        def forward(self, x):
            return self.fn(self, x)

    class MHA(nn.Module):
        """QKV projection, scaled dot-product attention per head, output projection."""

        def __init__(self, s, d, h):
            super().__init__()
            self.s, self.d, self.h = s, d, h
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, x):
            s, d, h = self.s, self.d, self.h
            q, k, v = self.qkv(x).split([d, d, d], -1)
            heads = lambda t: t.reshape(1, s, h, d // h).transpose(1, 2)
            att = torch.softmax(torch.matmul(heads(q), heads(k).transpose(2, 3)) / math.sqrt(d // h), -1)
            y = torch.matmul(att, heads(v)).transpose(1, 2).reshape(1, s, d)
            return self.out(y)

    k = kw["kind"]
    if k == "conv":
        ks = kw["k"] if isinstance(kw["k"], tuple) else (kw["k"], kw["k"])
        pad = tuple(kw["d"] * (x - 1) // 2 for x in ks)
        layers = [nn.Conv2d(kw["cin"], kw["cout"], ks, kw["s"], pad, kw["d"], kw["g"], bias=not kw["bn"])]
        if kw["bn"]:
            layers.append(nn.BatchNorm2d(kw["cout"]))
        layers.append(act(kw["act"]))
        return nn.Sequential(*layers), (1, kw["cin"]) + hw2(kw["hw"])
    if k == "convT":
        m = nn.ConvTranspose2d(kw["cin"], kw["cout"], kw["k"], kw["s"], kw["p"], kw["op"], kw["g"])
        return m, (1, kw["cin"], kw["hw"], kw["hw"])
    if k == "linear":
        return nn.Linear(kw["k"], kw["n"]), (kw["m"], kw["k"])
    if k == "bmm_const":
        w = nn.Parameter(torch.randn(kw["b"], kw["k"], kw["n"]) / math.sqrt(kw["k"]))
        m = Lambda(lambda self, x: torch.matmul(x, self.w))
        m.w = w
        return m, (kw["b"], kw["m"], kw["k"])
    if k == "bmm_xxt":
        scale = 1.0 / math.sqrt(kw["k"])
        return Lambda(lambda self, x: torch.matmul(x, x.transpose(1, 2)) * scale), (kw["b"], kw["m"], kw["k"])
    if k == "pool":
        cls = nn.MaxPool2d if kw["op"] == "max" else nn.AvgPool2d
        m = cls(kw["k"], kw["s"], kw["p"], ceil_mode=bool(kw["ceil"]))
        return m, (1, kw["c"], kw["hw"], kw["hw"])
    if k == "gap":
        return nn.AdaptiveAvgPool2d(1), (1, kw["c"], kw["hw"], kw["hw"])
    if k == "rnn":
        cls = nn.LSTM if kw["cell"] == "lstm" else nn.GRU
        rnn = cls(kw["inp"], kw["hid"], bidirectional=kw["bi"])
        return Lambda(lambda self, x: self.rnn(x)[0], rnn=rnn), (kw["seq"], 1, kw["inp"])
    if k == "mha":
        return MHA(kw["s"], kw["d"], kw["h"]), (1, kw["s"], kw["d"])
    if k == "sdpa":
        scale = 1.0 / math.sqrt(kw["dh"])
        fn = lambda self, x: torch.matmul(torch.softmax(torch.matmul(x, x.transpose(2, 3)) * scale, -1), x)
        return Lambda(fn), (1, kw["h"], kw["s"], kw["dh"])
    if k == "se":
        c, mid = kw["c"], max(8, kw["c"] // kw["r"])
        body = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, mid, 1), nn.ReLU(),
                             nn.Conv2d(mid, c, 1), act(kw["gate"]))
        return Lambda(lambda self, x: x * self.body(x), body=body), (1, c, kw["hw"], kw["hw"])
    if k == "layernorm":
        return nn.LayerNorm(kw["d"]), (1, kw["s"], kw["d"])
    if k == "instancenorm":
        return nn.InstanceNorm2d(kw["c"], affine=True), (1, kw["c"], kw["hw"], kw["hw"])
    if k == "batchnorm":
        return nn.BatchNorm2d(kw["c"]), (1, kw["c"], kw["hw"], kw["hw"])
    if k == "groupnorm":
        return nn.GroupNorm(kw["g"], kw["c"]), (1, kw["c"], kw["hw"], kw["hw"])
    if k == "eltwise":
        c = kw["c"]
        a = nn.Parameter(torch.rand(1, c, 1, 1) + 0.5)
        b = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        fns = {
            "add_relu": lambda self, x: torch.relu(x + self.b),
            "affine": lambda self, x: x * self.a + self.b,
            "silu": lambda self, x: x * torch.sigmoid(x),
            "gelu": lambda self, x: F.gelu(x),
            "hardswish": lambda self, x: F.hardswish(x),
            "tanh_affine": lambda self, x: torch.tanh(x) * 0.5 + 0.5,
            "softmax_c": lambda self, x: torch.softmax(x, 1),
            "residual_mul_add": lambda self, x: torch.relu(x + x * self.a + self.b),
        }
        m = Lambda(fns[kw["op"]])
        m.a, m.b = a, b
        return m, (1, c, kw["hw"], kw["hw"])
    if k == "invres":
        cin, cout, s, mid = kw["cin"], kw["cout"], kw["s"], kw["cin"] * kw["t"]
        body = nn.Sequential(conv_bn(cin, mid, 1, a="relu6"), conv_bn(mid, mid, 3, s, mid, "relu6"),
                             conv_bn(mid, cout, 1, a=""))
        res = s == 1 and cin == cout
        return Lambda(lambda self, x: x + self.body(x) if res else self.body(x), body=body), \
            (1, cin, kw["hw"], kw["hw"])
    if k == "basic":
        cin, cout, s = kw["cin"], kw["cout"], kw["s"]
        body = nn.Sequential(conv_bn(cin, cout, 3, s), conv_bn(cout, cout, 3, a=""))
        short = nn.Identity() if s == 1 and cin == cout else conv_bn(cin, cout, 1, s, a="")
        return Lambda(lambda self, x: torch.relu(self.body(x) + self.short(x)), body=body, short=short), \
            (1, cin, kw["hw"], kw["hw"])
    if k == "bottleneck":
        cin, mid = kw["cin"], kw["mid"]
        body = nn.Sequential(conv_bn(cin, mid, 1), conv_bn(mid, mid, 3), conv_bn(mid, cin, 1, a=""))
        return Lambda(lambda self, x: torch.relu(self.body(x) + x), body=body), (1, cin, kw["hw"], kw["hw"])
    if k == "fire":
        sq = nn.Sequential(nn.Conv2d(kw["cin"], kw["sq"], 1), nn.ReLU())
        e1 = nn.Sequential(nn.Conv2d(kw["sq"], kw["ex"], 1), nn.ReLU())
        e3 = nn.Sequential(nn.Conv2d(kw["sq"], kw["ex"], 3, padding=1), nn.ReLU())

        def fire(self, x):
            y = self.sq(x)
            return torch.cat([self.e1(y), self.e3(y)], 1)
        return Lambda(fire, sq=sq, e1=e1, e3=e3), (1, kw["cin"], kw["hw"], kw["hw"])
    if k == "shuffle":
        c, hw, g = kw["c"], kw["hw"], kw["g"]
        half = c // 2
        branch = nn.Sequential(conv_bn(half, half, 1), conv_bn(half, half, 3, 1, half, ""),
                               conv_bn(half, half, 1))

        def shuffle(self, x):
            a, b = x.split([half, half], 1)
            y = torch.cat([a, self.branch(b)], 1)
            return y.reshape(1, g, c // g, hw, hw).transpose(1, 2).reshape(1, c, hw, hw)
        return Lambda(shuffle, branch=branch), (1, c, hw, hw)
    raise ValueError(k)


# ------------------------------------------------------------------ costs

def cost(model):
    """(flops, bytes): 2 x MACs of the matrix ops (LSTM/GRU included), a rough count for
    the rest; bytes = input + output + weights, float32."""
    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        shapes[vi.name] = [d.dim_value for d in t.shape.dim]
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    for n in g.node:
        if n.op_type == "Constant":
            shapes[n.output[0]] = list(n.attribute[0].t.dims)
    size = lambda name: int(np.prod(shapes.get(name, [0])))
    flops = 0
    for n in g.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        out = size(n.output[0]) if n.output else 0
        if n.op_type == "Conv":
            flops += 2 * out * size(n.input[1]) // shapes[n.input[1]][0]
        elif n.op_type == "ConvTranspose":
            flops += 2 * size(n.input[0]) * size(n.input[1]) // shapes[n.input[1]][0]
        elif n.op_type in ("Gemm", "MatMul"):
            a = shapes[n.input[0]]
            kdim = a[0] if attrs.get("transA") else a[-1]
            flops += 2 * out * kdim
        elif n.op_type in ("LSTM", "GRU"):
            seq = shapes[n.input[0]][0]
            flops += 2 * seq * (size(n.input[1]) + size(n.input[2]))  # W and R, all gates
            flops += 4 * out   # gate nonlinearities and state updates, roughly
        elif n.op_type in ("MaxPool", "AveragePool"):
            flops += out * int(np.prod(attrs["kernel_shape"]))
        elif n.op_type in ("GlobalAveragePool", "ReduceMean", "InstanceNormalization"):
            flops += size(n.input[0]) * (4 if n.op_type == "InstanceNormalization" else 1)
        elif n.op_type in ("Softmax",):
            flops += 4 * out
        elif n.op_type not in ("Reshape", "Transpose", "Constant", "Squeeze", "Unsqueeze", "Concat",
                               "Split", "Shape", "Gather", "Identity", "Flatten", "Slice"):
            flops += out
    io_bytes = 4 * (sum(size(i.name) for i in g.input) + sum(size(o.name) for o in g.output))
    w_bytes = sum(4 * int(np.prod(i.dims)) for i in g.initializer)
    w_bytes += sum(4 * int(np.prod(n.attribute[0].t.dims)) for n in g.node if n.op_type == "Constant")
    return int(flops), int(io_bytes + w_bytes)


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


def randomize_batchnorm(model, gen):
    """Random affine parameters and running statistics (eval mode uses them)."""
    import torch
    import torch.nn as nn
    with torch.no_grad():
        for bn in model.modules():
            if isinstance(bn, nn.modules.batchnorm._BatchNorm):
                c = bn.num_features
                bn.weight.copy_(1.0 + 0.2 * torch.randn(c, generator=gen))
                bn.bias.copy_(0.1 * torch.randn(c, generator=gen))
                bn.running_mean.copy_(0.1 * torch.randn(c, generator=gen))
                bn.running_var.copy_(0.5 + torch.rand(c, generator=gen))
            elif isinstance(bn, (nn.GroupNorm, nn.LayerNorm, nn.InstanceNorm2d)) and bn.weight is not None:
                bn.weight.copy_(1.0 + 0.2 * torch.randn(bn.weight.shape, generator=gen))
                bn.bias.copy_(0.1 * torch.randn(bn.bias.shape, generator=gen))


def export_case(name, kw):
    import torch
    seed = seed_of(name)
    torch.manual_seed(seed)
    model, shape = build(kw)
    randomize_batchnorm(model, torch.Generator().manual_seed(seed + 1))
    model.eval()
    x = np.random.default_rng(seed + 7).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    buf = io.BytesIO()
    torch.onnx.export(model, torch.from_numpy(x), buf, opset_version=OPSET, do_constant_folding=True,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.EVAL)
    return buf.getvalue(), x, y


def main():
    ap = argparse.ArgumentParser(description="Generate the layer sweep.")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default: bench/sweep/cases)")
    ap.add_argument("--set", choices=("all", "quick", "ci"), default="all")
    ap.add_argument("--only", default="", help="comma-separated case names (overrides --set)")
    ap.add_argument("--force", action="store_true", help="re-export cases already present")
    ap.add_argument("--list", action="store_true", help="print the selected case names and exit")
    args = ap.parse_args()

    grid = cases()
    for subset in (QUICK, CI):
        missing = [n for n in subset if n not in grid]
        assert not missing, f"subset names not in the grid: {missing}"
    names = ([n.strip() for n in args.only.split(",") if n.strip()] if args.only else
             {"all": list(grid), "quick": QUICK, "ci": CI}[args.set])
    unknown = [n for n in names if n not in grid]
    if unknown:
        ap.error("unknown case(s): " + ", ".join(unknown))
    if args.list:
        print("\n".join(names))
        return 0

    os.makedirs(args.out, exist_ok=True)
    man_path = os.path.join(args.out, "manifest.json")
    manifest = {}
    if os.path.exists(man_path):
        with open(man_path) as f:
            manifest = json.load(f)
    todo = [n for n in names if args.force or n not in manifest or not all(
        os.path.isfile(os.path.join(args.out, n + e)) for e in (".onnx", ".in.npy", ".out.npy"))]
    if todo:
        import torch
        torch.set_num_threads(1)
    t0 = time.time()
    failures = {}
    for i, name in enumerate(todo):
        cat, kw = grid[name]
        try:
            onnx_bytes, x, y = export_case(name, kw)
            model = onnx.load_from_string(onnx_bytes)
            onnx.checker.check_model(model)
            flops, nbytes = cost(model)
        except Exception as e:  # keep going; report at the end
            failures[name] = f"{type(e).__name__}: {e}"
            print(f"[sweep] {name}: FAILED {failures[name][:300]}", flush=True)
            continue
        base = os.path.join(args.out, name)
        atomic_write(base + ".in.npy", npy_bytes(x))
        atomic_write(base + ".out.npy", npy_bytes(y))
        atomic_write(base + ".onnx", onnx_bytes)
        ops = collections.Counter(n.op_type for n in model.graph.node)
        manifest[name] = dict(
            category=cat, params={k: v for k, v in kw.items() if k != "kind"}, kind=kw["kind"],
            input_shape=list(x.shape), output_shape=list(y.shape), ops=dict(sorted(ops.items())),
            gflops=flops / 1e9, mbytes=nbytes / 1e6, seed=seed_of(name),
            out_absmax=float(np.abs(y).max()), quick=name in QUICK, ci=name in CI)
        if (i + 1) % 25 == 0 or i + 1 == len(todo):
            print(f"[sweep] exported {i + 1}/{len(todo)} ({time.time() - t0:.0f} s)", flush=True)
    if todo:
        atomic_write(man_path, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    if failures:
        print(f"[sweep] {len(failures)} export failure(s): {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
