"""Small steps (issue 35): the seed MLP at batch 32, trained five ways as a new user would, each with
its own defaults, in alternating rounds of one run; every side reports samples/s over its steps after
its warm-up, and the ratios are printed per round and as medians:

  fitscope      `fitscope train --model mlp --batch-size 32` (defaults: accounting, accuracy,
                progress and callbacks on; its warm-up includes the thread search)
  hand-written  the simplest libtorch loop: narrow slices of one tensor, Adam, no metrics
                (bench_fit_vs_handwritten simplest)
  Python        the same simplest loop in Python (PyTorch from Debian: the same libtorch kernels)
  TorchScript   `fitscope train --model mlp.pt` (the MLP scripted from Python)
  in order      `fitscope train --model mlp --batch-size 32 --no-shuffle`: reads the rows in order as the
                two simplest loops do, so its ratio to Python shows what the shuffled gather costs

Goals: fitscope / hand-written >= 1.0, fitscope / Python >= 2.0, TorchScript / Python >= 1.6.

    /usr/bin/python3 bench/small_steps.py [build dir=build] [rounds=5]
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

BATCH, STEPS, WARMUP = 32, 1875, 5


def fitscope_run(cli, model, run_dir, *extra):
    subprocess.run([cli, "train", "--model", model, "--batch-size", str(BATCH), "--epochs", "1",
                    "--synthetic-size", str(BATCH * STEPS), "--validation-split", "0", "--run-dir", run_dir, *extra],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    threads = summary["threads"]
    return summary["samples_per_s"], f"{threads['intra_op']}x{threads['blas']}"


def handwritten_run(bench):
    out = subprocess.run([bench, "simplest", str(STEPS)], check=True, capture_output=True, text=True).stdout.split()
    return float(out[1]), f"{out[3]}x{out[5]}"


def python_run():
    """The simplest loop: narrow slices, Adam, no metrics; PyTorch's default threads."""
    torch.manual_seed(0)
    x = torch.rand(BATCH * STEPS, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH * STEPS,))
    model = Mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    measured, samples = 0.0, 0
    for step in range(STEPS):
        start = time.perf_counter()
        begin = step * BATCH
        loss = loss_fn(model(x[begin:begin + BATCH]), y[begin:begin + BATCH])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step >= WARMUP:
            measured += time.perf_counter() - start
            samples += BATCH
    return samples / measured, f"{torch.get_num_threads()}x?"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    cli = os.path.join(build, "tools", "fitscope", "fitscope")
    bench = os.path.join(build, "bench", "bench_fit_vs_handwritten")
    sides = ["fitscope", "hand-written", "Python", "TorchScript", "in order"]
    speeds = {side: [] for side in sides}
    threads = {}
    with tempfile.TemporaryDirectory() as tmp:
        scripted = os.path.join(tmp, "mlp.pt")
        torch.jit.script(Mlp()).save(scripted)
        runs = {
            "fitscope": lambda r: fitscope_run(cli, "mlp", os.path.join(tmp, f"mlp{r}")),
            "hand-written": lambda r: handwritten_run(bench),
            "Python": lambda r: python_run(),
            "TorchScript": lambda r: fitscope_run(cli, scripted, os.path.join(tmp, f"script{r}")),
            "in order": lambda r: fitscope_run(cli, "mlp", os.path.join(tmp, f"inorder{r}"), "--no-shuffle"),
        }
        for r in range(rounds):
            order = sides if r % 2 == 0 else list(reversed(sides))  # each side early and late in turn
            for side in order:
                speed, threads[side] = runs[side](r)
                speeds[side].append(speed)
            print(f"round {r + 1}: " + "  ".join(f"{s} {speeds[s][-1]:8.0f}" for s in sides), flush=True)

    def ratio(a, b):
        return statistics.median([x / y for x, y in zip(speeds[a], speeds[b])])

    print(f"\nSeed MLP, batch {BATCH}, {STEPS} steps a round, {rounds} alternating rounds (medians; "
          "threads as intra-op x BLAS, each side's own default):")
    for side in sides:
        median = statistics.median(speeds[side])
        print(f"  {side:13s} {median:9.0f} samples/s  {1e6 * BATCH / median:6.1f} us/step  threads {threads[side]}")
    print(f"  fitscope / hand-written  x{ratio('fitscope', 'hand-written'):.2f}  (goal >= 1.0)")
    print(f"  fitscope / Python        x{ratio('fitscope', 'Python'):.2f}  (goal >= 2.0)")
    print(f"  TorchScript / Python     x{ratio('TorchScript', 'Python'):.2f}  (goal >= 1.6)")
    print(f"  in order / Python        x{ratio('in order', 'Python'):.2f}  (no goal: fitscope without its shuffled gather)")


if __name__ == "__main__":
    main()
