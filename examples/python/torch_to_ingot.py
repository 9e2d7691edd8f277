"""Export a small torch model to ONNX, compile it with ingot, run it, compare with torch.
Run with Debian's /usr/bin/python3 and PYTHONPATH at the module (docs/python.md)."""
import sys
import tempfile

import numpy as np
import torch

import ingot

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 16 * 16, 10)).eval()
x = torch.randn(1, 3, 16, 16)
with tempfile.TemporaryDirectory() as folder:
    torch.onnx.export(model, x, f"{folder}/model.onnx", input_names=["image"], output_names=["logits"])
    module = ingot.load(ingot.compile(f"{folder}/model.onnx"))
(got,) = module(x.numpy())
want = model(x).detach().numpy()
error = float(np.max(np.abs(got - want)))
print(f"ingot {ingot.__version__}: {module.inputs[0].name} {module.inputs[0].shape} -> {got.shape}, "
      f"max |ingot - torch| = {error:.2e}, {module.bench(iterations=200)['median']:.1f} us median")
sys.exit(0 if np.allclose(got, want, atol=1e-4, rtol=1e-4) else 1)
