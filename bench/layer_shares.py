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
The two sides run in turn, `rounds` times, after a first profiled round per model that is not kept; each
share is the median of its rounds, and each round's largest difference is printed too (the Python side's
shares move by several points from run to run on a shared 2-core machine). Then what the profiler itself
adds to Python's forward and backward (the same step timed by the clock alone and profiled, in turn), and
the seed CNN's parts timed alone.

    python3 bench/layer_shares.py build/tools/fitscope/fitscope [steps=300] [rounds=5]
"""
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# The C library's heap as fitscope keeps it (keep_freed_memory: blocks up to 32 MiB from the heap, its top
# never trimmed), set before Python starts: with glibc's defaults each step's large activations are
# unmapped when freed and faulted in again, zeroed, by the next step (the seed CNN's step in Python:
# 8.9 ms with the defaults, 4.3 ms so), which inflates whichever layers allocate them, differently
# from run to run.
if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
    os.environ.update(MALLOC_MMAP_THRESHOLD_=str(32 << 20), MALLOC_TRIM_THRESHOLD_="-1")
    os.execv(sys.executable, [sys.executable] + sys.argv)
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


def python_batch():
    """One intra-op thread, the seed set, and the batch every Python side trains on."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    return torch.rand(BATCH, 1, 28, 28), torch.randint(0, 10, (BATCH,))


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


def alone_shares(steps):
    """The seed CNN's parts each timed alone, forward and backward, with nothing observing them: the
    shares neither tool's observation touches (a part's input made once; the gradient it is handed, and
    a copy of its input that needs one, timed apart and taken off)."""
    x, y = python_batch()
    model = SeedCnn()
    with torch.no_grad():
        conv_out = model.conv(x)
        relu_out = F.relu(conv_out)
        pooled = F.max_pool2d(relu_out, 2).flatten(1)

    def alone(inputs, part):
        def run():
            i = inputs.clone().requires_grad_() if inputs is not x else x
            out = part(i)
            out.backward(torch.ones_like(out) if out.dim() else None)
        return run

    def given(inputs, part):  # the copy and the gradient alone
        shape = part(inputs).shape
        def run():
            inputs.clone()
            torch.ones(shape)
        return run

    def median_us(run):
        for _ in range(WARMUP):
            run()
        times = []
        for _ in range(steps):
            start = time.perf_counter_ns()
            run()
            times.append(time.perf_counter_ns() - start)
        return statistics.median(times) / 1e3

    parts = {"conv": (x, model.conv), "(model) relu": (conv_out, F.relu), "(model) max_pool2d": (relu_out, lambda t: F.max_pool2d(t, 2)),
             "dense + loss": (pooled, lambda t: F.cross_entropy(model.dense(t), y))}
    with torch.no_grad():
        overhead = {n: median_us(given(i, p)) if i is not x else 0.0 for n, (i, p) in parts.items()}
    times = {n: max(0.0, median_us(alone(i, p)) - overhead[n]) for n, (i, p) in parts.items()}
    total = sum(times.values())
    return {n: t / total for n, t in times.items()}


def python_shares(module, steps):
    x, y = python_batch()
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
    spent = collections.Counter()  # microseconds by owner
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

    def outermost(e):  # the operation right under the phase or a layer's range that holds e
        op, p = e, e.cpu_parent
        while p is not None and not p.name.startswith(("phase:", "layer:")):
            op, p = p, p.cpu_parent
        return op

    # The profiler links a few events to the wrong parent (max_pool2d_with_indices, nested in max_pool2d,
    # filed beside it in 3 steps of 50, where its end, rounded to the microsecond, falls 1 us after its
    # parent's): an operation that lies within the one counted before it, give or take that microsecond,
    # is nested in it, whatever its link says.
    enclosing = None  # the last operation counted, as (start, end, owner)
    # forward: the operations right under the forward phase or a layer's range
    for e in sorted(events, key=lambda e: (e.time_range.start, -e.time_range.end)):
        if e.name.startswith("phase:"):
            phases += e.time_range.elapsed_us()
            continue
        layer, phase = top_range(e)
        if phase != "phase:forward" or e.name.startswith("layer:"):
            continue
        parent = e.cpu_parent
        owner = layer or "(model) " + short(outermost(e).name)  # a nested operation's node: its outermost's row
        within = enclosing is not None and enclosing[0] <= e.time_range.start and e.time_range.end <= enclosing[1] + 1
        if within:
            owner = enclosing[2]
        if e.sequence_nr >= 0:
            seq_layer.setdefault(e.sequence_nr, owner)
        if not within and parent is not None and (parent.name == "phase:forward" or parent.name.startswith("layer:")):
            spent[owner] += e.time_range.elapsed_us()
            enclosing = (e.time_range.start, e.time_range.end, owner)
    for e in events:  # backward: each node's engine span, by its node's sequence number
        if not e.name.startswith("autograd::engine::evaluate_function: "):
            continue
        node = next((c for c in e.cpu_children if not c.name.startswith("autograd::engine")), None)
        seq = node.sequence_nr if node is not None else -1
        owner = seq_layer.get(seq, "(model) " + short(e.name[len("autograd::engine::evaluate_function: "):]))
        spent[owner] += e.time_range.elapsed_us()
    shares = {k: v / phases for k, v in spent.items()}
    shares["(unattributed)"] = 1 - sum(shares.values())
    return shares


def profiler_cost(module, steps, rounds):
    """What torch.profiler itself adds to Python's forward and backward: the same step timed by the clock
    alone and under the profiler, in turn, `rounds` times; each the median of its rounds' per-step medians
    (microseconds: forward bare, profiled; backward bare, profiled)."""
    x, y = python_batch()
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01)

    def run():  # the step's forward and backward, in nanoseconds, for `steps` steps
        times = []
        for _ in range(steps):
            start = time.perf_counter_ns()
            loss = F.cross_entropy(module(x), y)
            middle = time.perf_counter_ns()
            loss.backward()
            times.append((middle - start, time.perf_counter_ns() - middle))
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return [statistics.median(t[i] for t in times) / 1e3 for i in (0, 1)]

    run()
    bare, profiled = [], []
    for _ in range(rounds):
        bare.append(run())
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            profiled.append(run())
    return [statistics.median(r[i] for r in side) for i in (0, 1) for side in (bare, profiled)]


NOT_LAYERS = ("(unattributed)", "(autograd engine)")


def of_layers(shares):
    """The shares of what the layers took, the rest (Python's own time around the operations, which a C++
    loop does not have; the engine's between nodes, fitscope's `(autograd engine)` row) left out."""
    total = sum(v for k, v in shares.items() if k not in NOT_LAYERS)
    return {k: v / total for k, v in shares.items() if k not in NOT_LAYERS}


LARGEST = "the largest difference of a layer's share: of forward and backward %.1f points, of the layers' time %.1f points"


def largest_differences(ours, theirs):
    """A round's largest difference of a layer's share: of forward and backward, of the layers' time."""
    ours_l, theirs_l = of_layers(ours), of_layers(theirs)
    names = set(ours_l) | set(theirs_l)
    return (max(abs(ours.get(n, 0.0) - theirs.get(n, 0.0)) * 100 for n in names),
            max(abs(ours_l.get(n, 0.0) - theirs_l.get(n, 0.0)) * 100 for n in names))


def median_shares(rounds):
    names = set().union(*rounds)
    return {n: statistics.median(r.get(n, 0.0) for r in rounds) for n in names}


def compare(title, ours_rounds, theirs_rounds):
    print(title)
    for i, (a, b) in enumerate(zip(ours_rounds, theirs_rounds)):
        print("  round %d: %s" % (i + 1, LARGEST % largest_differences(a, b)))
    ours, theirs = median_shares(ours_rounds), median_shares(theirs_rounds)
    print("  the median of %d rounds:" % len(ours_rounds))
    print("  %-28s %28s   %28s" % ("", "of forward and backward", "of the layers' time"))
    print("  %-28s %10s %10s %6s   %10s %10s %6s" % ("layer", "fitscope", "profiler", "points", "fitscope", "profiler", "points"))
    ours_l, theirs_l = of_layers(ours), of_layers(theirs)
    for name in sorted(set(ours) | set(theirs), key=lambda n: -max(ours.get(n, 0), theirs.get(n, 0))):
        a, b = ours.get(name, 0.0), theirs.get(name, 0.0)
        if max(a, b) < 0.005:
            continue
        la, lb = ours_l.get(name), theirs_l.get(name)
        if la is not None or lb is not None:
            la, lb = la or 0.0, lb or 0.0
            print("  %-28s %9.1f%% %9.1f%% %6.1f   %9.1f%% %9.1f%% %6.1f" % (name, a * 100, b * 100, (a - b) * 100, la * 100, lb * 100,
                                                                         (la - lb) * 100))
        else:
            print("  %-28s %9.1f%% %9.1f%% %6.1f" % (name, a * 100, b * 100, (a - b) * 100))
    print("  " + LARGEST % largest_differences(ours, theirs))


def main():
    cli = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        mlp3 = os.path.join(tmp, "mlp3.pt")
        torch.jit.script(Mlp3()).save(mlp3)
        models = [("seed CNN", "cnn", SeedCnn), ("MLP of three Linear layers", mlp3, Mlp3)]
        ours, theirs = collections.defaultdict(list), collections.defaultdict(list)
        # A first profiled round, not kept: the profiler's events grow the heap while it records, and
        # the operations of a process's first profiled steps fault in fresh pages (the seed CNN's relu
        # backward took 1.7 ms instead of 0.35 in 90 of its first 300 steps, its share 12 % instead of 6 %).
        for _, _, module in models:
            python_shares(module(), steps)
        for _ in range(rounds):
            for title, model, module in models:
                ours[title].append(fitscope_shares(cli, model, steps, os.path.join(tempfile.mkdtemp(dir=tmp), "run")))
                theirs[title].append(python_shares(module(), steps))
        for title, _, module in models:
            compare("%s, batch %d, %d steps" % (title, BATCH, steps), ours[title], theirs[title])
            costs = profiler_cost(module(), steps, rounds)
            print("  what torch.profiler adds to Python's step (timed by the clock, bare and profiled in turn, "
                  "median of %d rounds): forward %.0f -> %.0f us (%+.1f %%), backward %.0f -> %.0f us (%+.1f %%)"
                  % (rounds, costs[0], costs[1], (costs[1] / costs[0] - 1) * 100, costs[2], costs[3],
                     (costs[3] / costs[2] - 1) * 100))
        cnn_layers = of_layers(median_shares(ours["seed CNN"]))
        cnn_layers["dense + loss"] = cnn_layers.get("dense", 0.0) + cnn_layers.get("loss", 0.0)
        print("the seed CNN's parts each timed alone, nothing observing them, against fitscope's share of the layers' time:")
        for name, share in sorted(alone_shares(steps).items(), key=lambda kv: -kv[1]):
            print("  %-28s alone %5.1f%%   fitscope %5.1f%%" % (name, share * 100, cnn_layers.get(name, 0.0) * 100))


if __name__ == "__main__":
    main()
