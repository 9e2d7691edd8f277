#!/usr/bin/python3
"""Train a small MLP on sklearn's 8x8 digits and export it to ONNX.

Outputs (next to this script unless --out is given):
  digits_mlp.onnx                 input "input" [1,64] f32 -> output "logits" [1,10] f32
  samples/sample_K.npy            10 held-out test images, float32 [1,64], pixels / 16
  samples/expected_logits_K.npy   torch's logits for sample K, float32 [1,10]
  samples/labels.txt              "sample_K.npy LABEL", one line per sample

Deterministic: fixed seeds, one thread, full-batch training.
Run with /usr/bin/python3 (needs torch, onnx, sklearn, numpy).
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 0
EPOCHS = 300
NUM_SAMPLES = 10


class DigitsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 64), nn.ReLU(),
            nn.Linear(64, 32), nn.ReLU(),
            nn.Linear(32, 10),
        )

    def forward(self, x):
        return self.net(x)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=here, help="output folder (default: this folder)")
    args = ap.parse_args()

    t0 = time.time()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.2, random_state=SEED, stratify=y)

    xt = torch.from_numpy(x_train)
    yt = torch.from_numpy(y_train)
    model = DigitsMLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(EPOCHS):
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()

    model.eval()
    with torch.no_grad():
        train_acc = (model(xt).argmax(1) == yt).float().mean().item()
        pred = model(torch.from_numpy(x_test)).argmax(1).numpy()
    test_acc = float((pred == y_test).mean())
    print(f"train accuracy: {train_acc:.4f}")
    print(f"test accuracy: {test_acc:.4f} ({int((pred == y_test).sum())}/{len(y_test)})")

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "digits_mlp.onnx")
    torch.onnx.export(
        model, torch.zeros(1, 64, dtype=torch.float32), onnx_path,
        opset_version=13, do_constant_folding=True,
        input_names=["input"], output_names=["logits"])
    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path)} bytes)")

    # One held-out sample per class: the first test image of each digit 0..9.
    sample_dir = os.path.join(args.out, "samples")
    os.makedirs(sample_dir, exist_ok=True)
    picks = [int(np.nonzero(y_test == d)[0][0]) for d in range(NUM_SAMPLES)]
    lines = []
    with torch.no_grad():
        for k, i in enumerate(picks):
            sample = x_test[i:i + 1].astype(np.float32)          # [1,64]
            logits = model(torch.from_numpy(sample)).numpy().astype(np.float32)  # [1,10]
            np.save(os.path.join(sample_dir, f"sample_{k}.npy"), sample)
            np.save(os.path.join(sample_dir, f"expected_logits_{k}.npy"), logits)
            lines.append(f"sample_{k}.npy {int(y_test[i])}\n")
    with open(os.path.join(sample_dir, "labels.txt"), "w") as f:
        f.writelines(lines)
    print(f"wrote {len(picks)} samples to {sample_dir}")
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
