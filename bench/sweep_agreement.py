"""Do repeated sweeps agree? The seed MLP swept at 16..256 several times in a row, two ways taking turns:
`single` measures each batch size once, 50 steps after the warm-up (the sweep before it measured in
windows), and `windowed` is the default sweep (5 rounds of windows of >= 0.25 s, the batch sizes taking
turns). Printed side by side: each sweep's knee and whether it was resolved, and per batch size the
highest over the lowest samples/s across the sweeps (1.00 = the sweeps agree exactly).
Goal: the windowed sweeps agree on the knee.

    python3 bench/sweep_agreement.py build/tools/fitscope/fitscope [sweeps=3]
"""
import json
import os
import subprocess
import sys
import tempfile

SIZES = [16, 32, 64, 128, 256]
WAYS = {
    "single": ["--windows", "1", "--window-seconds", "0.001", "--steps", "50"],
    "windowed": [],
}


def sweep(cli, flags, run_dir):
    subprocess.run([cli, "sweep", "--model", "mlp", "--batch-sizes", ",".join(map(str, SIZES)), "--run-dir",
                    run_dir] + flags, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "sweep.json")) as f:
        return json.load(f)


def main():
    cli = sys.argv[1]
    sweeps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    results = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(sweeps):
            for way, flags in WAYS.items():
                results[way].append(sweep(cli, flags, os.path.join(tmp, f"{way}-{i}")))
    print(f"{sweeps} sweeps of the seed MLP each way, taking turns")
    print(f"{'':>10} {'knees':>30} " + " ".join(f"{b:>7}" for b in SIZES))
    for way, runs in results.items():
        knees = ", ".join(str(r["knee_batch_size"]) + ("" if r.get("knee", {}).get("resolved", True) else "?")
                          for r in runs)
        spread = []
        for i in range(len(SIZES)):
            speeds = [r["rows"][i]["samples_per_s"] for r in runs]
            spread.append(max(speeds) / min(speeds))
        agree = "agree" if len({r["knee_batch_size"] for r in runs}) == 1 else "differ"
        print(f"{way:>10} {knees + ' (' + agree + ')':>30} " + " ".join(f"{s:>6.2f}x" for s in spread))
    print("knee? = not resolved by the windows; per batch size: highest / lowest samples/s over the sweeps")


if __name__ == "__main__":
    main()
