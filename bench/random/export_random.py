#!/usr/bin/python3
"""Export seeded random networks: models no one tuned for, drawn from five families.

    /usr/bin/python3 bench/random/export_random.py [--out DIR] [--only a,b] [--force]

A name is FAMILY_SEED, and the seed alone fixes the architecture, so any seed names a
new model: `--only rcnn_1017,rrnn_5` exports those two. RANDOM lists the default set that
`bench/run.sh --random` measures; pass other seeds (`--models`) for a held-out check.

Families (see the builders below for the exact draws):
  rcnn     image CNNs: a strided stem, 3-5 stages of plain, residual, grouped-bottleneck
           or inverted-residual blocks (kernels 3/5/7, dilation, SE, odd channel counts,
           ReLU/ReLU6/SiLU/HardSwish/LeakyReLU), pools, a classifier;
  rrnn     recurrent stacks: LSTM or GRU, 1-2 layers, either direction, over 16-128 steps;
  rconv1d  1-D convolution stacks over time: kernels 3-9, dilation, depthwise/grouped,
           residual blocks, strides;
  rattn    transformer encoders: 1-4 layers, 2-8 heads, GELU or ReLU FFNs, pre- or
           post-norm;
  runet    U-Nets: 2-4 levels, max-pool or strided-conv downsampling, transposed-conv,
           nearest or bilinear upsampling, skip connections concatenated either side.

Same conventions and files as export_models.py (opset 13, batch 1, static shapes,
seeded random weights, BatchNorm calibrated and folded; NAME.onnx, NAME.in.npy,
NAME.out.npy with PyTorch's output, manifest.json), into DIR (default:
bench/random/models).
"""
import math
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import export_models  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "models")
FAMILIES = ("rcnn", "rrnn", "rconv1d", "rattn", "runet")
# The default set: four seeds per family.
RANDOM = [f"{f}_{s}" for f in FAMILIES for s in (1, 2, 3, 4)]
NAME_RE = re.compile(r"^(%s)_(\d{1,9})$" % "|".join(FAMILIES))


def is_random_name(name):
    return NAME_RE.match(name) is not None


def build(name):
    """(constructor, input shape) of the random network NAME. The constructor draws the
    architecture again and makes every layer, so the weights come from the seed that
    export_models sets before calling it, whatever was built before."""
    shape = _draw(name)[1]
    return (lambda: _draw(name)[0]()), shape


def _draw(name):
    """(constructor, input shape); the layers of some families are made here."""
    import torch
    import torch.nn as nn

    m = NAME_RE.match(name)
    if not m:
        raise ValueError(f"not a random network name: {name!r} (FAMILY_SEED, FAMILY one of {', '.join(FAMILIES)})")
    family, seed = m.group(1), int(m.group(2))
    # Architecture draws come from their own generator: weights use export_models' seed.
    rng = random.Random(f"{family}:{seed}")

    def act(kind):
        return {"relu": nn.ReLU(), "relu6": nn.ReLU6(), "silu": nn.SiLU(), "hardswish": nn.Hardswish(),
                "leaky": nn.LeakyReLU(0.1), "gelu": nn.GELU()}[kind]

    def channels(base):
        # Mostly multiples of 8, sometimes odd or off-by-a-few counts.
        c = max(4, int(base * rng.uniform(0.75, 1.3)))
        r = rng.random()
        return c | 1 if r < 0.2 else (c // 8 * 8 or 8) if r < 0.8 else c

    def conv_bn(cin, cout, k, s=1, d=1, g=1, a=None, dims=2):
        conv = (nn.Conv2d if dims == 2 else nn.Conv1d)(cin, cout, k, s, d * (k - 1) // 2, d, g, bias=False)
        bn = (nn.BatchNorm2d if dims == 2 else nn.BatchNorm1d)(cout)
        return nn.Sequential(conv, bn, act(a)) if a else nn.Sequential(conv, bn)

    class SE(nn.Module):
        def __init__(self, c, r, gate):
            super().__init__()
            self.fc = nn.Sequential(nn.Conv2d(c, max(4, c // r), 1), nn.ReLU(), nn.Conv2d(max(4, c // r), c, 1), gate)

        def forward(self, x):
            return x * self.fc(x.mean((2, 3), keepdim=True))

    class Residual(nn.Module):
        def __init__(self, body, short, post):
            super().__init__()
            self.body, self.short, self.post = body, short, post

        def forward(self, x):
            y = self.body(x) + (self.short(x) if self.short is not None else x)
            return self.post(y) if self.post is not None else y

    class Classifier(nn.Module):
        """The body, a global average over |dims|, a linear layer."""

        def __init__(self, layers, c, classes, dims):
            super().__init__()
            self.body, self.fc, self.dims = nn.Sequential(*layers), nn.Linear(c, classes), dims

        def forward(self, x):
            return self.fc(self.body(x).mean(self.dims))

    def cnn_block(cin, cout, s, a, dims=2):
        kind = rng.choice(("plain", "basic", "bottleneck", "inverted") if dims == 2 else ("plain", "basic", "inverted"))
        k = rng.choice((3, 3, 5, 7)) if dims == 2 else rng.choice((3, 5, 7, 9))
        d = 2 if s == 1 and rng.random() < 0.15 else 1
        short = None if (s == 1 and cin == cout) else conv_bn(cin, cout, 1, s, dims=dims)
        if kind == "plain":
            return conv_bn(cin, cout, k, s, d, a=a, dims=dims)
        if kind == "basic":
            body = nn.Sequential(conv_bn(cin, cout, k, s, d, a=a, dims=dims), conv_bn(cout, cout, 3, dims=dims))
            return Residual(body, short, act(a))
        if kind == "bottleneck":
            mid = channels(cout // 2)
            width = rng.choice((1, 2, 4, 8, 16, 32))
            g = max(1, min(mid // 4, width))
            mid = max(g, mid // g * g)
            body = nn.Sequential(conv_bn(cin, mid, 1, a=a), conv_bn(mid, mid, min(k, 5), s, d, g, a=a),
                                 conv_bn(mid, cout, 1))
            return Residual(body, short, act(a))
        e = channels(cin * rng.choice((1, 3, 4, 6)))
        layers = [conv_bn(cin, e, 1, a=a, dims=dims)] if e != cin else []
        layers.append(conv_bn(e, e, k, s, d, e, a=a, dims=dims))
        if dims == 2 and rng.random() < 0.4:
            layers.append(SE(e, rng.choice((4, 8, 16)), rng.choice((nn.Sigmoid(), nn.Hardsigmoid()))))
        layers.append(conv_bn(e, cout, 1, dims=dims))
        body = nn.Sequential(*layers)
        return Residual(body, None, None) if short is None else body

    if family == "rcnn":
        side = rng.choice((64, 96, 112, 128, 160, 224))
        a = rng.choice(("relu", "relu6", "silu", "hardswish", "leaky"))
        c = channels(rng.choice((16, 24, 32, 48)))
        layers = [conv_bn(3, c, rng.choice((3, 5, 7)), 2, a=a)]
        if rng.random() < 0.5:
            layers.append(rng.choice((nn.MaxPool2d(3, 2, 1, ceil_mode=rng.random() < 0.3), nn.AvgPool2d(2, 2))))
        for stage in range(rng.randint(3, 5)):
            cout = min(channels(c * rng.choice((1.5, 2, 2))), 640)
            for i in range(rng.randint(1, 3)):
                layers.append(cnn_block(c, cout, 2 if i == 0 and stage > 0 else 1, a))
                c = cout
        classes = rng.choice((10, 100, 1000))
        return (lambda: Classifier(layers, c, classes, (2, 3))), (1, 3, side, side)

    if family == "rconv1d":
        length = rng.choice((64, 98, 128, 256, 400))
        features = rng.choice((13, 40, 64, 80))
        a = rng.choice(("relu", "relu6", "silu", "leaky"))
        c = channels(rng.choice((16, 32, 64)))
        layers = [conv_bn(features, c, rng.choice((3, 5)), 1, a=a, dims=1)]
        for stage in range(rng.randint(2, 4)):
            cout = channels(c * rng.choice((1, 1.5, 2)))
            for i in range(rng.randint(1, 2)):
                layers.append(cnn_block(c, cout, 2 if i == 0 and rng.random() < 0.6 else 1, a, dims=1))
                c = cout
        classes = rng.choice((2, 12, 35))
        return (lambda: Classifier(layers, c, classes, 2)), (1, features, length)

    if family == "runet":
        side = rng.choice((64, 96, 128, 160))
        a = rng.choice(("relu", "relu6", "silu", "leaky"))
        image = rng.choice((1, 3))
        down_mode = rng.choice(("maxpool", "maxpool", "stride"))
        up_mode = rng.choice(("convT", "nearest", "bilinear"))
        skip_first = rng.random() < 0.5
        widths = [channels(rng.choice((8, 16, 24, 32)))]
        for _ in range(rng.randint(2, 4)):
            widths.append(min(channels(widths[-1] * 2), 384))
        classes = rng.choice((1, 2, 4, 21))

        def twice(cin, cout):
            return nn.Sequential(conv_bn(cin, cout, 3, a=a), conv_bn(cout, cout, 3, a=a))

        class UNet(nn.Module):
            def __init__(self):
                super().__init__()
                levels = widths[:-1]
                self.enc = nn.ModuleList(twice(c, w) for c, w in zip([image] + levels[:-1], levels))
                self.down = nn.ModuleList(nn.MaxPool2d(2) if down_mode == "maxpool" else conv_bn(w, w, 3, 2, a=a)
                                          for w in levels)
                self.mid = twice(levels[-1], widths[-1])
                ups, decs = [], []
                for c, w in zip(widths[:0:-1], levels[::-1]):
                    if up_mode == "convT":
                        ups.append(nn.ConvTranspose2d(c, w, 2, 2))
                    else:
                        ups.append(nn.Sequential(nn.Upsample(scale_factor=2, mode=up_mode), conv_bn(c, w, 1, a=a)))
                    decs.append(twice(2 * w, w))
                self.ups, self.decs = nn.ModuleList(ups), nn.ModuleList(decs)
                self.head = nn.Conv2d(levels[0], classes, 1)

            def forward(self, x):
                skips = []
                for enc, down in zip(self.enc, self.down):
                    x = enc(x)
                    skips.append(x)
                    x = down(x)
                x = self.mid(x)
                for up, dec in zip(self.ups, self.decs):
                    skip, x = skips.pop(), up(x)
                    x = dec(torch.cat([skip, x] if skip_first else [x, skip], 1))
                return self.head(x)

        return UNet, (1, image, side, side)

    if family == "rrnn":
        steps = rng.choice((16, 32, 50, 64, 98, 128))
        features = rng.choice((20, 40, 64, 80, 128, 256))
        cell = rng.choice(("LSTM", "GRU"))
        hidden = rng.choice((32, 64, 96, 128, 200, 256, 384))
        layers_n = rng.choice((1, 2))
        bidir = rng.random() < 0.4
        out = rng.choice((12, 64, 256))
        every_step = rng.random() < 0.5

        class Rnn(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(nn, cell)(features, hidden, num_layers=layers_n, batch_first=True,
                                             bidirectional=bidir)
                self.fc = nn.Linear(hidden * (2 if bidir else 1), out)

            def forward(self, x):
                y = self.rnn(x)[0]
                return self.fc(y if every_step else y[:, -1])

        return Rnn, (1, steps, features)

    # rattn
    heads = rng.choice((2, 3, 4, 6, 8))
    d = heads * rng.choice((16, 32, 48, 64))
    seq = rng.choice((32, 49, 64, 100, 128, 196))
    ffn = d * rng.choice((2, 3, 4))
    layers_n = rng.randint(1, 4)
    pre_norm = rng.random() < 0.5
    gelu = rng.random() < 0.7

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, ffn), nn.GELU() if gelu else nn.ReLU(), nn.Linear(ffn, d))

        def attend(self, x):
            dh = d // heads
            q, k, v = (t.reshape(1, seq, heads, dh).transpose(1, 2) for t in self.qkv(x).split(d, -1))
            att = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh), -1)
            return self.o(torch.matmul(att, v).transpose(1, 2).reshape(1, seq, d))

        def forward(self, x):
            if pre_norm:
                x = x + self.attend(self.ln1(x))
                return x + self.ff(self.ln2(x))
            x = self.ln1(x + self.attend(x))
            return self.ln2(x + self.ff(x))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(*[Layer() for _ in range(layers_n)])

        def forward(self, x):
            return self.layers(x)

    return Encoder, (1, seq, d)


def specs(names=None):
    """name -> (constructor, input shape) for NAMES (default: RANDOM)."""
    return {name: build(name) for name in (names or RANDOM)}


if __name__ == "__main__":
    # Any FAMILY_SEED passed with --only is built on demand.
    only = []
    for i, arg in enumerate(sys.argv):
        if arg == "--only" and i + 1 < len(sys.argv):
            only = sys.argv[i + 1].split(",")
        elif arg.startswith("--only="):
            only = arg[len("--only="):].split(",")
    bad = [n for n in only if n and not is_random_name(n)]
    if bad:
        print(f"export_random.py: not a random network name: {', '.join(bad)} "
              f"(FAMILY_SEED, FAMILY one of {', '.join(FAMILIES)})", file=sys.stderr)
        sys.exit(2)
    names = list(dict.fromkeys(RANDOM + [n for n in only if n]))
    sys.exit(export_models.main(lambda: specs(names), names, DEFAULT_OUT, "seeded random networks"))
