"""Scripts fitscope's seed CNN (or MLP) in Python and saves it as TorchScript.

    python3 make_model.py cnn.pt [cnn|mlp]
    fitscope train --model cnn.pt --epochs 3      # trains it in C++, writes model.pt and model.weights.pt

The trained module comes back to Python with torch.jit.load(RUN_DIR + "/model.pt"), its weights with
torch.load(RUN_DIR + "/model.weights.pt") (a name -> tensor dict).
"""
import sys

import torch


class Cnn(torch.nn.Module):
    """Conv2D 32 3x3 + ReLU, MaxPool 2, Flatten, Dense 10: the seed CNN."""

    def __init__(self, channels: int = 1, size: int = 28, classes: int = 10):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, 32, 3)
        self.dense = torch.nn.Linear(32 * ((size - 2) // 2) ** 2, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.dense(h.flatten(1))


class Mlp(torch.nn.Module):
    """Dense 10 on the flattened 784 inputs: the seed MLP."""

    def __init__(self, inputs: int = 784, classes: int = 10):
        super().__init__()
        self.dense = torch.nn.Linear(inputs, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense(x.flatten(1))


if __name__ == "__main__":
    torch.manual_seed(0)
    kind = sys.argv[2] if len(sys.argv) > 2 else "cnn"
    model = Cnn() if kind == "cnn" else Mlp()
    torch.jit.script(model).save(sys.argv[1])
