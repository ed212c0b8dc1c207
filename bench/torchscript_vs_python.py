"""The seed MLP at batch 32, scripted in Python and trained by `fitscope train --model mlp.pt`, against
the same model trained by a plain Python PyTorch loop (same kernels: the machine's libtorch). Both sides
measure samples/s over their post-warm-up steps, with the same intra-op threads, in alternating rounds;
the ratio is printed side by side. Goal: fitscope >= 1.4x.

    python3 bench/torchscript_vs_python.py build/tools/fitscope/fitscope [rounds=3]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "python_model"))
from make_model import Mlp  # noqa: E402

BATCH, EXAMPLES, WARMUP = 32, 20000, 5


def fitscope_run(cli, model, run_dir):
    subprocess.run([cli, "train", "--model", model, "--batch-size", str(BATCH), "--epochs", "1",
                    "--synthetic-size", str(EXAMPLES), "--validation-split", "0", "--quiet",
                    "--warmup-steps", str(WARMUP), "--run-dir", run_dir],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    return summary["samples_per_s"], summary["threads"]


def python_run(threads):
    """A plain loop: shuffle, gather, forward, loss, backward, Adam step, running accuracy."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.rand(EXAMPLES, 1, 28, 28)
    y = torch.randint(0, 10, (EXAMPLES,))
    model = Mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    correct = torch.zeros((), dtype=torch.long)
    order = torch.randperm(EXAMPLES)
    measured, samples = 0.0, 0
    for step, begin in enumerate(range(0, EXAMPLES, BATCH)):
        start = time.perf_counter()
        rows = order[begin:begin + BATCH]
        inputs, targets = x[rows], y[rows]
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (outputs.detach().argmax(1) == targets).sum()
        if step >= WARMUP:
            measured += time.perf_counter() - start
            samples += len(rows)
    return samples / measured


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else "build/tools/fitscope/fitscope"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "mlp.pt")
        torch.jit.script(Mlp()).save(model)
        ours, theirs = [], []
        for r in range(rounds):
            speed, threads = fitscope_run(cli, model, os.path.join(tmp, f"run{r}"))
            ours.append(speed)
            theirs.append(python_run(threads))
    ratios = [a / b for a, b in zip(ours, theirs)]
    print(f"Seed MLP, batch {BATCH}, {threads} intra-op thread(s), {rounds} alternating rounds (median):")
    print(f"  fitscope train --model mlp.pt (TorchScript) {statistics.median(ours):10.0f} samples/s")
    print(f"  plain Python PyTorch loop                  {statistics.median(theirs):10.0f} samples/s")
    print(f"  ratio fitscope / Python: x{statistics.median(ratios):.2f} (goal >= 1.4)")


if __name__ == "__main__":
    main()
