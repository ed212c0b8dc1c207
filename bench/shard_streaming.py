#!/usr/bin/env python3
"""Streaming sharded record files against the image-folder loader on the same images, and the peak
memory of training on 2 GB of shards.

1. Loading only (bench_image_loading: decode, resize to 64x64, flip, batches of 64, 2 workers): the
   same 4000 JPEGs (fitscope make-images, one seed) as a folder, as 8 TFRecord shards and as 8 tar
   shards. The three take turns, A B C A B C, and the ratio of samples/s to the folder's is taken per
   round (the median printed). Goal: shards >= 1.0x the folder (no file open per image).
2. Peak RSS: `fitscope train --model cnn` for 200 steps with a shuffle buffer of 10000 records, on
   the 14 MB of TFRecord shards and on 2 GB of them (the same shards' files concatenated, which a
   TFRecord file allows: 16 shards of 128 MiB). Goal: <= 600 MB, and independent of the data's size.

  python3 bench/shard_streaming.py build [rounds] [gigabytes]
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
GIGABYTES = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
FITSCOPE = os.path.join(BUILD, "tools/fitscope/fitscope")
LOADER = os.path.join(BUILD, "bench/bench_image_loading")


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def loading(source, batches=120):
    return json.loads(run([LOADER, source, "64", "2", str(batches)]))


def peak_rss_mb(args):
    """The peak RSS of `args` run alone (a fresh Python process waits for it and reads its rusage)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(run([sys.executable, "-c", probe] + args)) / 1024


def main():
    with tempfile.TemporaryDirectory(prefix="fitscope-shards-") as tmp:
        folder, tfrecord, tar = (os.path.join(tmp, n) for n in ("folder", "tfrecord", "tar"))
        for out, layout in ((folder, "folder"), (tfrecord, "tfrecord"), (tar, "tar")):
            run([FITSCOPE, "make-images", out, "--count", "4000", "--layout", layout, "--shards", "8", "--seed", "1"]
                if layout != "folder" else [FITSCOPE, "make-images", out, "--count", "4000", "--seed", "1"])
        sources = {"folder": folder, "tfrecord": "tfrecord:" + tfrecord + "/*.tfrecord", "tar": "tar:" + tar + "/*.tar"}
        print("Loading only: 4000 64x64 JPEGs, batches of 64, 2 workers, %d rounds (samples/s; ratio to the folder's)" % ROUNDS)
        ratios = {"tfrecord": [], "tar": []}
        for r in range(ROUNDS):
            rates = {name: loading(source)["samples_per_s"] for name, source in sources.items()}
            for name in ratios:
                ratios[name].append(rates[name] / rates["folder"])
            print("  round %d: folder %.0f, tfrecord %.0f (%.2fx), tar %.0f (%.2fx)" % (
                r + 1, rates["folder"], rates["tfrecord"], ratios["tfrecord"][-1], rates["tar"], ratios["tar"][-1]))
        for name, values in ratios.items():
            print("  %s / folder: median %.2fx (min %.2f, max %.2f)" % (name, statistics.median(values), min(values), max(values)))

        big = os.path.join(tmp, "big")
        os.makedirs(big)
        parts = [os.path.join(tfrecord, f) for f in sorted(os.listdir(tfrecord))]
        chunk = b"".join(open(p, "rb").read() for p in parts)
        copies = max(1, (128 << 20) // len(chunk))  # a shard of about 128 MiB
        shards = max(1, -(-int(GIGABYTES * (1 << 30)) // (copies * len(chunk))))
        for s in range(shards):
            with open(os.path.join(big, "big-%03d.tfrecord" % s), "wb") as f:
                for _ in range(copies):
                    f.write(chunk)
        total = sum(os.path.getsize(os.path.join(big, f)) for f in os.listdir(big))
        train = [FITSCOPE, "train", "--model", "cnn", "--max-steps", "200", "--shuffle-buffer", "10000", "--epochs", "1",
                 "--quiet"]
        print("Peak RSS of fitscope train --model cnn, 200 steps, shuffle buffer 10000:")
        for name, source, size in (("small", "tfrecord:" + tfrecord + "/*.tfrecord", sum(os.path.getsize(p) for p in parts)),
                                   ("large", "tfrecord:" + big + "/*.tfrecord", total)):
            start = time.monotonic()
            mb = peak_rss_mb(train + ["--data", source, "--run-dir", os.path.join(tmp, "run-" + name)])
            print("  %.3f GB of shards: peak RSS %.0f MB (the run took %.0f s)" % (size / (1 << 30), mb, time.monotonic() - start))
        opened = loading("tfrecord:" + big + "/*.tfrecord", batches=30)
        print("  opening the %.2f GB (counting and checking its records, no pixels decoded): %.1f s" % (total / (1 << 30), opened["open_s"]))


main()
