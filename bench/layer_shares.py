"""Layer shares: fitscope's layer probe against torch.profiler, for the same models on the same libtorch
(the machine's), each layer's share of the forward and backward time side by side.

Models: the seed CNN (conv 1->32 3x3, relu, max-pool 2, dense 5408->10) and an MLP of three Linear
layers (784->512->256->10, relu between), batch 32, one intra-op thread. fitscope trains the seed CNN
(`--model cnn`) and the MLP scripted to a file (`--model mlp3.pt`, TorchScript: its layers by their
attribute paths), probing every step after the warm-up (`--layer-probe-every 1`). Python trains the same
modules eagerly under torch.profiler: a forward pre-hook and hook put a record_function range around each
module with parameters, an operation's layer is the range it runs in (else `(model) <op>`), and a backward
node is the layer of the forward operation with its sequence number, its time the engine's
`evaluate_function` span (HTA's and Kineto's correlation). A share is the layer's forward and backward
time over the forward and backward time of the step (what no layer claims included in the total).

    python3 bench/layer_shares.py build/tools/fitscope/fitscope [steps=300]
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as fitscope's --blas-threads 1: torch.set_num_threads leaves OpenBLAS's pool
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BATCH, WARMUP = 32, 20


class SeedCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, 3)
        self.dense = nn.Linear(32 * 13 * 13, 10)

    def forward(self, x):
        return self.dense(F.max_pool2d(F.relu(self.conv(x)), 2).flatten(1))


class Mlp3(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))


def fitscope_shares(cli, model, steps, run_dir):
    subprocess.run([cli, "train", "--model", model, "--batch-size", str(BATCH), "--epochs", "1",
                    "--synthetic-size", str(BATCH * steps), "--validation-split", "0", "--quiet", "--threads", "1",
                    "--blas-threads", "1", "--warmup-steps", str(WARMUP), "--layer-probe-every", "1",
                    "--run-dir", run_dir], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "summary.json")) as f:
        layers = json.load(f)["layers"]
    total = layers["forward_ms"] + layers["backward_ms"]
    shares = {r["name"]: (r["forward_ms"] + r["backward_ms"]) / total for r in layers["rows"]}
    shares["(unattributed)"] = (layers["unattributed_forward_ms"] + layers["unattributed_backward_ms"]) / total
    return shares


def short(name):
    for prefix in ("aten::", "torch::autograd::"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def python_shares(module, steps):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01)
    ranges = {}
    for name, m in module.named_modules():
        if name and any(True for _ in m.parameters(recurse=False)):
            def pre(mod, inputs, name=name):
                ranges[name] = torch.autograd.profiler.record_function("layer:" + name)
                ranges[name].__enter__()

            def post(mod, inputs, output, name=name):
                ranges.pop(name).__exit__(None, None, None)
            m.register_forward_pre_hook(pre)
            m.register_forward_hook(post)
    x = torch.rand(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH,))

    def step():
        with torch.autograd.profiler.record_function("phase:forward"):
            out = module(x)
            with torch.autograd.profiler.record_function("layer:loss"):
                loss = F.cross_entropy(out, y)
        with torch.autograd.profiler.record_function("phase:backward"):
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(WARMUP):
        step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    events = prof.events()
    time = collections.Counter()
    phases = 0.0
    seq_layer = {}

    def top_range(e):  # the innermost layer range and phase above an event
        layer, p = None, e.cpu_parent
        while p is not None:
            if layer is None and p.name.startswith("layer:"):
                layer = p.name[len("layer:"):]
            if p.name.startswith("phase:"):
                return layer, p.name
            p = p.cpu_parent
        return layer, None

    for e in events:  # forward: the operations right under the forward phase or a layer's range
        if e.name.startswith("phase:"):
            phases += e.time_range.elapsed_us()
            continue
        layer, phase = top_range(e)
        if phase != "phase:forward" or e.name.startswith("layer:"):
            continue
        parent = e.cpu_parent
        owner = layer or "(model) " + short(e.name)
        if e.sequence_nr >= 0:
            seq_layer.setdefault(e.sequence_nr, owner)
        if parent is not None and (parent.name == "phase:forward" or parent.name.startswith("layer:")):
            time[owner] += e.time_range.elapsed_us()
    for e in events:  # backward: each node's engine span, by its node's sequence number
        if not e.name.startswith("autograd::engine::evaluate_function: "):
            continue
        node = next((c for c in e.cpu_children if not c.name.startswith("autograd::engine")), None)
        seq = node.sequence_nr if node is not None else -1
        owner = seq_layer.get(seq, "(model) " + short(e.name[len("autograd::engine::evaluate_function: "):]))
        time[owner] += e.time_range.elapsed_us()
    shares = {k: v / phases for k, v in time.items()}
    shares["(unattributed)"] = 1 - sum(shares.values())
    return shares


def of_layers(shares):
    """The shares of what the layers took, the rest (Python's own time around the operations, which a C++
    loop does not have; the engine's between nodes) left out."""
    total = sum(v for k, v in shares.items() if k != "(unattributed)")
    return {k: v / total for k, v in shares.items() if k != "(unattributed)"}


def compare(title, ours, theirs):
    print(title)
    print("  %-28s %28s   %28s" % ("", "of forward and backward", "of the layers' time"))
    print("  %-28s %10s %10s %6s   %10s %10s %6s" % ("layer", "fitscope", "profiler", "points", "fitscope", "profiler", "points"))
    worst = 0.0
    ours_l, theirs_l = of_layers(ours), of_layers(theirs)
    for name in sorted(set(ours) | set(theirs), key=lambda n: -max(ours.get(n, 0), theirs.get(n, 0))):
        a, b = ours.get(name, 0.0), theirs.get(name, 0.0)
        if max(a, b) < 0.005:
            continue
        la, lb = ours_l.get(name), theirs_l.get(name)
        if la is not None or lb is not None:
            la, lb = la or 0.0, lb or 0.0
            worst = max(worst, abs(la - lb) * 100)
            print("  %-28s %9.1f%% %9.1f%% %6.1f   %9.1f%% %9.1f%% %6.1f" % (name, a * 100, b * 100, (a - b) * 100, la * 100, lb * 100,
                                                                         (la - lb) * 100))
        else:
            print("  %-28s %9.1f%% %9.1f%% %6.1f" % (name, a * 100, b * 100, (a - b) * 100))
    print("  the largest difference of a layer's share of the layers' time: %.1f points" % worst)


def main():
    cli = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        mlp3 = os.path.join(tmp, "mlp3.pt")
        torch.jit.script(Mlp3()).save(mlp3)
        compare("seed CNN, batch %d, %d steps" % (BATCH, steps), fitscope_shares(cli, "cnn", steps, os.path.join(tmp, "cnn")),
                python_shares(SeedCnn(), steps))
        compare("MLP of three Linear layers, batch %d, %d steps" % (BATCH, steps),
                fitscope_shares(cli, mlp3, steps, os.path.join(tmp, "mlp3")), python_shares(Mlp3(), steps))


if __name__ == "__main__":
    main()
