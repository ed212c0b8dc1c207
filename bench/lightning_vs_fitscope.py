"""The seed CNN on a GPU: `fitscope train --device cuda` against PyTorch Lightning training the same
model (same layers, Adam 1e-3, cross-entropy, accuracy) on data of the same shape held in memory.
Both sides run without progress bar, logger files or checkpoints, and measure samples/s over their
steps after the warm-up; rounds alternate, and the ratio is printed side by side per batch size.
Goal: fitscope >= 2x Lightning at batch 16 (batch 256 printed for comparison).

    python3 bench/lightning_vs_fitscope.py build/tools/fitscope/fitscope [rounds=3]

Needs a CUDA device and Lightning (`lightning` or `pytorch_lightning`) in this Python.
"""
import json
import statistics
import subprocess
import sys
import tempfile
import time

import torch

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

EXAMPLES, WARMUP = 25600, 20


class SeedCnn(pl.LightningModule):
    """fitscope's models::Cnn: conv 3x3 (32) -> relu -> max-pool 2 -> dense (10)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 32, 3)
        self.dense = torch.nn.Linear(32 * 13 * 13, 10)

    def forward(self, x):
        h = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.dense(h.flatten(1))

    def training_step(self, batch, _):
        x, y = batch
        out = self(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        self.log("accuracy", (out.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class Throughput(pl.Callback):
    """Samples/s from the end of the warm-up to the end of the last step, the GPU drained at both ends."""

    def __init__(self, batch):
        self.batch, self.start, self.steps = batch, None, 0

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if batch_idx == WARMUP:
            torch.cuda.synchronize()
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if batch_idx >= WARMUP:
            self.steps += 1

    def samples_per_s(self):
        torch.cuda.synchronize()
        return self.steps * self.batch / (time.perf_counter() - self.start)


def lightning_run(batch):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.rand(EXAMPLES, 1, 28, 28), torch.randint(0, 10, (EXAMPLES,)))
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, pin_memory=True, drop_last=True)
    meter = Throughput(batch)
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, callbacks=[meter])
    trainer.fit(SeedCnn(), loader)
    return meter.samples_per_s()


def fitscope_run(cli, batch):
    with tempfile.TemporaryDirectory() as run_dir:
        subprocess.run([cli, "train", "--model", "cnn", "--device", "cuda", "--batch-size", str(batch), "--epochs", "1",
                        "--synthetic-size", str(EXAMPLES), "--validation-split", "0", "--warmup-steps", str(WARMUP),
                        "--no-progress", "--no-csv-logger", "--no-tensorboard", "--no-best-checkpoint",
                        "--run-dir", run_dir + "/run"], check=True, stdout=subprocess.DEVNULL)
        with open(run_dir + "/run/summary.json") as f:
            return json.load(f)["samples_per_s"]


def main():
    cli = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if not torch.cuda.is_available():
        print("no CUDA device here: skipped")
        return
    for batch in (16, 256):
        ours, theirs = [], []
        for r in range(rounds):
            runs = [(ours, lambda: fitscope_run(cli, batch)), (theirs, lambda: lightning_run(batch))]
            for into, run in runs if r % 2 == 0 else reversed(runs):
                into.append(run())
        a, b = statistics.median(ours), statistics.median(theirs)
        goal = "  (goal >= 2)" if batch == 16 else ""
        print(f"seed CNN batch {batch:4d}: fitscope {a:10.0f} samples/s   Lightning {b:10.0f} samples/s   x{a / b:.2f}{goal}")


if __name__ == "__main__":
    main()
