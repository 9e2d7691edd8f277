#!/usr/bin/python3
"""Export the model zoo: more architectures beyond bench/export_models.py's seven.

    /usr/bin/python3 bench/zoo/export_zoo.py [--out DIR] [--only a,b] [--force]

Same conventions and files as export_models.py (opset 13, batch 1, static shapes, seeded
random weights, BatchNorm calibrated on seeded random batches and folded by the
exporter, input "input", output "output"; NAME.onnx, NAME.in.npy, NAME.out.npy with
PyTorch's output, manifest.json with GFLOP counts), into DIR (default: bench/zoo/models).

Torchvision families with random weights (no downloads) and small hand-built audio,
sequence and transformer models; see ZOO for the list with input shapes.
"""
import collections
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import export_models  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "models")

IMG = (1, 3, 224, 224)
# name -> input shape; the constructors are in specs().
ZOO = collections.OrderedDict([
    ("resnet34", IMG),
    ("resnet50", IMG),
    ("resnext50_32x4d", (1, 3, 160, 160)),
    ("mobilenet_v3_small", IMG),
    ("mobilenet_v3_large", IMG),
    ("shufflenet_v2_x1_0", IMG),
    ("mnasnet1_0", IMG),
    ("efficientnet_b0", IMG),
    ("regnet_x_400mf", IMG),
    ("regnet_y_400mf", IMG),
    ("densenet121", IMG),
    ("googlenet", IMG),
    ("squeezenet1_0", IMG),
    ("alexnet", IMG),
    ("vgg11_bn_112", (1, 3, 112, 112)),
    ("convnext_tiny", (1, 3, 160, 160)),
    ("lraspp_mobilenet_v3", IMG),
    ("vit_tiny", IMG),
    ("bert_mini", (1, 128, 256)),
    ("kws_tcresnet", (1, 40, 98)),
    ("kws_gru", (1, 98, 40)),
    ("kws_lstm", (1, 98, 40)),
    ("lstm_lm", (1, 35, 256)),
    ("gru_bi_encoder", (1, 64, 80)),
    ("unet_small", (1, 3, 128, 128)),
])


def specs():
    """name -> (constructor, input shape)."""
    import torch
    import torch.nn as nn
    import torchvision
    from torchvision.models import segmentation, vision_transformer

    tv = lambda name, **kw: (lambda: getattr(torchvision.models, name)(weights=None, **kw))

    class Head(nn.Module):
        """The one output of a model that returns a dict (segmentation)."""

        def __init__(self, model, key):
            super().__init__()
            self.model, self.key = model, key

        def forward(self, x):
            return self.model(x)[self.key]

    class VGG11Small(nn.Module):
        """VGG-11 with BatchNorm at 112x112: torchvision's features (512 x 3 x 3 out)
        and a 4608-1024-1000 classifier (the full 25088x4096 one would be 400 MB)."""

        def __init__(self):
            super().__init__()
            self.features = torchvision.models.vgg11_bn(weights=None).features
            self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(512 * 3 * 3, 1024), nn.ReLU(),
                                            nn.Linear(1024, 1000))

        def forward(self, x):
            return self.classifier(self.features(x))

    class BertLayer(nn.Module):
        """Post-LN BERT encoder layer: attention with separate Q/K/V projections, GELU FFN."""

        def __init__(self, d, heads, ffn, seq):
            super().__init__()
            self.d, self.h, self.s = d, heads, seq
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            self.ff = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

        def forward(self, x):
            s, h, dh = self.s, self.h, self.d // self.h
            heads = lambda t: t.reshape(1, s, h, dh).transpose(1, 2)
            att = torch.softmax(torch.matmul(heads(self.q(x)), heads(self.k(x)).transpose(2, 3))
                                / math.sqrt(dh), -1)
            ctx = torch.matmul(att, heads(self.v(x))).transpose(1, 2).reshape(1, s, self.d)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.ff(x))

    class BertMini(nn.Module):
        """BERT-mini-like encoder on embedded tokens: 4 layers, d 256, 4 heads, FFN 1024."""

        def __init__(self, seq=128, d=256, layers=4):
            super().__init__()
            self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
            self.ln = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.Sequential(*[BertLayer(d, 4, 4 * d, seq) for _ in range(layers)])

        def forward(self, x):
            return self.layers(self.ln(x + self.pos))

    class TCResNet(nn.Module):
        """TC-ResNet8-like keyword spotter: 1-D convolutions over time with MFCC channels
        (40 x 98 frames), three residual blocks of stride 2, average pool, FC 12."""

        def __init__(self, ch=(16, 24, 32, 48), n_classes=12):
            super().__init__()
            self.stem = nn.Conv1d(40, ch[0], 3, padding=1, bias=False)
            blocks = []
            for cin, cout in zip(ch[:-1], ch[1:]):
                blocks.append(nn.ModuleDict(dict(
                    body=nn.Sequential(nn.Conv1d(cin, cout, 9, 2, 4, bias=False), nn.BatchNorm1d(cout), nn.ReLU(),
                                       nn.Conv1d(cout, cout, 9, 1, 4, bias=False), nn.BatchNorm1d(cout)),
                    short=nn.Sequential(nn.Conv1d(cin, cout, 1, 2, bias=False), nn.BatchNorm1d(cout)))))
            self.blocks = nn.ModuleList(blocks)
            self.fc = nn.Linear(ch[-1], n_classes)

        def forward(self, x):
            x = self.stem(x)
            for b in self.blocks:
                x = torch.relu(b["body"](x) + b["short"](x))
            return self.fc(x.mean(2))

    class RnnClassifier(nn.Module):
        """Keyword spotter: 2-layer LSTM/GRU (hidden 128) over 98 MFCC frames, FC 12 on
        the last step."""

        def __init__(self, cell):
            super().__init__()
            self.rnn = getattr(nn, cell)(40, 128, num_layers=2, batch_first=True)
            self.fc = nn.Linear(128, 12)

        def forward(self, x):
            return self.fc(self.rnn(x)[0][:, -1])

    class LstmLM(nn.Module):
        """Word-level LSTM language model on embedded tokens: 2 x LSTM 256, decoder to a
        2000-word vocabulary at every step."""

        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(256, 256, num_layers=2, batch_first=True)
            self.dec = nn.Linear(256, 2000)

        def forward(self, x):
            return self.dec(self.lstm(x)[0])

    class GruEncoder(nn.Module):
        """Speech-style encoder: bidirectional 2-layer GRU (hidden 128) over 64 frames of
        80 filterbanks, projection to 256."""

        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(80, 128, num_layers=2, batch_first=True, bidirectional=True)
            self.proj = nn.Linear(256, 256)

        def forward(self, x):
            return self.proj(self.gru(x)[0])

    class UNetSmall(nn.Module):
        """Three-level U-Net (16-32-64, bottleneck 128) with ConvTranspose upsampling and
        skip concatenations; 2-class logits per pixel."""

        def __init__(self, ch=(16, 32, 64), n_out=2):
            super().__init__()
            cb = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(),
                                            nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU())
            self.down = nn.ModuleList([cb(i, o) for i, o in zip((3,) + ch[:-1], ch)])
            self.mid = cb(ch[-1], 2 * ch[-1])
            self.up = nn.ModuleList([nn.ConvTranspose2d(2 * c, c, 2, 2) for c in reversed(ch)])
            self.dec = nn.ModuleList([cb(2 * c, c) for c in reversed(ch)])
            self.out = nn.Conv2d(ch[0], n_out, 1)

        def forward(self, x):
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
            x = self.mid(x)
            for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
                x = dec(torch.cat([up(x), skip], 1))
            return self.out(x)

    ctors = {
        "resnet34": tv("resnet34"), "resnet50": tv("resnet50"), "resnext50_32x4d": tv("resnext50_32x4d"),
        "mobilenet_v3_small": tv("mobilenet_v3_small"), "mobilenet_v3_large": tv("mobilenet_v3_large"),
        "shufflenet_v2_x1_0": tv("shufflenet_v2_x1_0"), "mnasnet1_0": tv("mnasnet1_0"),
        "efficientnet_b0": tv("efficientnet_b0"), "regnet_x_400mf": tv("regnet_x_400mf"),
        "regnet_y_400mf": tv("regnet_y_400mf"), "densenet121": tv("densenet121"),
        "googlenet": tv("googlenet", aux_logits=False, init_weights=True), "squeezenet1_0": tv("squeezenet1_0"),
        "alexnet": tv("alexnet"), "vgg11_bn_112": VGG11Small, "convnext_tiny": tv("convnext_tiny"),
        "lraspp_mobilenet_v3": lambda: Head(segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=21), "out"),
        "vit_tiny": lambda: vision_transformer.VisionTransformer(
            image_size=224, patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768),
        "bert_mini": BertMini, "kws_tcresnet": TCResNet, "kws_gru": lambda: RnnClassifier("GRU"),
        "kws_lstm": lambda: RnnClassifier("LSTM"), "lstm_lm": LstmLM, "gru_bi_encoder": GruEncoder,
        "unet_small": UNetSmall,
    }
    return collections.OrderedDict((name, (ctors[name], shape)) for name, shape in ZOO.items())


if __name__ == "__main__":
    sys.exit(export_models.main(specs, list(ZOO), DEFAULT_OUT, "the model zoo"))
