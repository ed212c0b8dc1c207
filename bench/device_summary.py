"""bench/device_check.sh's summary: reads the stages' logs and run directories under OUT and writes
OUT/gpu-summary.json, the file committed as bench/results/gpu-DATE.json. `headline` holds the issue's
figures, each None where its stage did not run or did not print it; the rest keeps what they came from.

    python3 bench/device_summary.py OUT DEVICE
"""
import datetime
import json
import os
import re
import sys


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def run_summary(out, name):
    """The parts of a run's summary.json the figures use; None when the run wrote none."""
    text = read(os.path.join(out, "runs", name, "summary.json"))
    if not text:
        return None
    s = json.loads(text)
    keep = ("samples_per_s", "step_ms", "gpu_utilization", "gpu_memory_peak_mb", "gpu_why_not", "device_timing",
            "verdict", "phases", "measured_steps", "warmup_steps", "settings", "cuda_graph", "layers", "memory", "machine_peak")
    return {k: s.get(k) for k in keep if k in s}


def lines(text, pattern):
    return [line.strip() for line in text.splitlines() if re.search(pattern, line)]


def main():
    out, device = sys.argv[1], sys.argv[2]
    logs = os.path.join(out, "logs")
    log = {name[:-4]: read(os.path.join(logs, name)) for name in sorted(os.listdir(logs)) if name.endswith(".log")}
    stages = [line.split("\t") for line in read(os.path.join(out, "stages.tsv")).splitlines() if line]
    stages = [s for s in stages if s[1] != "not asked"]
    summary = {
        "date": datetime.date.today().isoformat(),
        "device": device,
        "machine": log.get("facts", "").strip().splitlines(),
        "stages": [{"name": s[0], "exit": s[1], "seconds": int(s[2])} for s in stages],
    }
    tests = read(os.path.join(out, "gpu-tests.json"))
    if tests:
        t = json.loads(tests)
        summary["gpu_tests"] = [{"name": c["classname"] + "." + c["name"], "result": c.get("result"),
                                 "status": c.get("status"), "failures": [f.get("failure", "")[:600] for f in c.get("failures", [])],
                                 "skipped": "skipped" in json.dumps(c).lower() and not c.get("failures")}
                                for suite in t.get("testsuites", []) for c in suite.get("testsuite", [])]
    figures = next((json.loads(line[5:]) for line in log.get("figures", "").splitlines() if line.startswith("JSON ")), None)
    summary["figures"] = figures
    runs = {name: run_summary(out, name)
            for name in ("demo", "launch-mlp-32", "launch-cnn-1024", "launch-cnn-4096", "layers-cnn", "layers-mlp")}
    summary["runs"] = runs
    summary["handwritten"] = lines(log.get("handwritten", ""), r"batch|ratio|fit")
    summary["lightning"] = lines(log.get("lightning", ""), r"samples/s|skipped")
    summary["cuda_graph"] = lines(log.get("cuda-graph", ""), r"ms/step|skipped")
    summary["sweep"] = log.get("sweep", "").strip().splitlines()[-40:]
    summary["build_errors"] = lines(log.get("build", ""), r"error|FAILED")[:40]
    summary["configure_facts"] = lines(log.get("configure", ""), r"fitscope:|Error|error|Torch|CUDA")[:40]

    def verdict(run):
        r = runs.get(run) or {}
        v, d = r.get("verdict") or {}, r.get("device_timing") or {}
        g = r.get("cuda_graph") or {}
        return {"verdict": v.get("level", "") + " " + v.get("bound", "") if v else None,
                "idle_fraction": d.get("idle_fraction"), "busy_ms": d.get("busy_ms"),
                "step_ms_p50": (r.get("step_ms") or {}).get("p50"),
                "cuda_graph": {k: g.get(k) for k in ("kept", "reason", "eager_ms", "graph_ms", "eager_windows_ms", "graph_windows_ms")} if g else None}

    def below_phases(run):
        """The layers' clock, shares and unattributed rest, the probe's cost, the memory and the peak of a run."""
        r = runs.get(run) or {}
        layers, memory, peak = r.get("layers") or {}, r.get("memory") or {}, r.get("machine_peak") or {}
        phases = (layers.get("forward_ms") or 0) + (layers.get("backward_ms") or 0)
        rest = (layers.get("unattributed_forward_ms") or 0) + (layers.get("unattributed_backward_ms") or 0)
        return {"clock": layers.get("clock"), "probed_steps": layers.get("probed_steps"), "why_not": layers.get("why_not"),
                "probe_cost": layers.get("probe_cost"), "forward_backward_ms": phases,
                "unattributed": rest / phases if phases else None,
                # the autograd engine's share: its run less its nodes (on a GPU the device's time between the nodes' work)
                "engine": next((row.get("share") for row in layers.get("rows", []) if row.get("name") == "(autograd engine)"), None),
                # each: name, share, forward GB/s (its bytes over its forward time; the memory row's figure)
                "top": [(row.get("name"), round(row.get("share", 0), 4),
                         round(row.get("forward_mb", 0) / row["forward_ms"], 2) if row.get("forward_ms") else None)
                        for row in sorted(layers.get("rows", []), key=lambda row: -row.get("share", 0))[:5]],
                "memory": {k: memory.get(k) for k in ("device", "steps", "why_not", "step_peak_bytes", "allocated_per_step_bytes",
                                                      "held_at_end_bytes", "resident_peak_bytes", "growth")},
                "peak": {k: peak.get(k) for k in ("device", "gemm_gflops", "memory_gbps", "cached")} if peak else None,
                "verdict": "%s %s: %s" % ((r.get("verdict") or {}).get("level"), (r.get("verdict") or {}).get("bound"),
                                          (r.get("verdict") or {}).get("advice"))}

    def ratio(pattern, text):
        m = re.search(pattern, text)
        return float(m.group(1)) if m else None

    lightning = log.get("lightning", "")
    demo = runs.get("demo") or {}
    summary["headline"] = {
        "gpu_tests_failed": None if not tests else sum(1 for c in summary["gpu_tests"] if c["failures"]),
        "timers": [{k: t[k] for k in ("model", "batch", "throughput_on_over_off", "off_over_off", "device_phases_over_step")}
                   for t in (figures or {}).get("timers", [])],
        "bf16_over_fp32": (figures or {}).get("bf16", {}).get("bf16_over_fp32_samples_per_s"),
        "launch_bench": [{k: t.get(k) for k in ("model", "batch", "device_busy_ms", "device_idle_fraction", "level", "verdict")}
                         for t in (figures or {}).get("launch", [])],
        "launch_cli": {"mlp_32": verdict("launch-mlp-32"), "cnn_1024": verdict("launch-cnn-1024"),
                       "cnn_4096": verdict("launch-cnn-4096")},
        "cuda_graph_x_mlp32": ratio(r"graph ([0-9.]+)x faster", log.get("cuda-graph", "")),
        "fit_graph_x_fit_eager_mlp32": ratio(r"captured ([0-9.]+)x fitscope eager", log.get("cuda-graph", "")),
        "fit_graph_x_handwritten_eager_mlp32": ratio(r"([0-9.]+)x the hand-written eager loop", log.get("cuda-graph", "")),
        "fit_cnn256_eager_over_auto": ratio(r"auto [0-9.]+ ms/step \(([0-9.]+)x", log.get("cuda-graph", "")),
        "lightning_x_batch16": ratio(r"batch\s+16:.*x([0-9.]+)", lightning),
        "lightning_x_batch256": ratio(r"batch\s+256:.*x([0-9.]+)", lightning),
        "demo_gpu_utilization": demo.get("gpu_utilization"),
        "demo_gpu_memory_peak_mb": demo.get("gpu_memory_peak_mb"),
        "demo_samples_per_s": demo.get("samples_per_s"),
        "layers_cnn_256": below_phases("layers-cnn"),
        "layers_mlp_32": below_phases("layers-mlp"),
        "layer_probe_bench": lines(log.get("layer-probe", ""), r"probe on / off|unattributed"),
    }
    with open(os.path.join(out, "gpu-summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
