#!/usr/bin/env python3
"""fitscope's image loader against torchvision's ImageFolder + DataLoader, loading only (no model).

Generated JPEG folders (fitscope make-images), batch 64, the same work on both sides: decode to RGB,
resize to the target size (bilinear, antialiased), random horizontal flip, float tensors. Each side
first runs with 0, 1, 2 and 4 workers; their best settings then alternate, A B A B, and the ratio of
samples/s is taken per pair (its median printed). A third case decodes 224x224 JPEGs to 64x64, with
and without TurboJPEG's DCT-domain scaling, for what that gains.

  python3 bench/image_loading.py build/tools/fitscope/fitscope build/bench/bench_image_loading [rounds]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision
from torchvision import transforms

FITSCOPE, LOADER = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
WORKERS = [0, 1, 2, 4]


def fitscope_rate(folder, size, workers, batches, dct=True):
    args = [LOADER, folder, str(size), str(workers), str(batches)] + ([] if dct else ["no-dct"])
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["samples_per_s"]


def torchvision_rate(folder, size, workers, batches):
    t = transforms.Compose([transforms.Resize((size, size)), transforms.RandomHorizontalFlip(), transforms.ToTensor()])
    data = torchvision.datasets.ImageFolder(folder, transform=t)
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, num_workers=workers)
    seen, samples, start = 0, 0, None
    while True:
        for x, _ in loader:
            seen += 1
            if seen == 3:
                start = time.perf_counter()
            elif seen > 3:
                samples += x.shape[0]
            if seen == batches + 3:
                return samples / (time.perf_counter() - start)


def compare(name, folder, size, batches):
    mine = {w: fitscope_rate(folder, size, w, batches) for w in WORKERS}
    theirs = {w: torchvision_rate(folder, size, w, batches) for w in WORKERS}
    best_mine, best_theirs = max(mine, key=mine.get), max(theirs, key=theirs.get)
    print(f"{name}: samples/s by workers 0/1/2/4")
    print("  fitscope     " + "  ".join(f"{mine[w]:8.0f}" for w in WORKERS) + f"   best: {best_mine} workers")
    print("  torchvision  " + "  ".join(f"{theirs[w]:8.0f}" for w in WORKERS) + f"   best: num_workers={best_theirs}")
    ratios = []
    for r in range(ROUNDS):
        if r % 2 == 0:
            a = fitscope_rate(folder, size, best_mine, batches)
            b = torchvision_rate(folder, size, best_theirs, batches)
        else:
            b = torchvision_rate(folder, size, best_theirs, batches)
            a = fitscope_rate(folder, size, best_mine, batches)
        ratios.append(a / b)
    print(f"  fitscope / torchvision samples/s, best against best: {statistics.median(ratios):.2f} "
          f"(median of {ROUNDS} alternating pairs: {', '.join(f'{x:.2f}' for x in ratios)})\n")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        small, large = os.path.join(tmp, "64"), os.path.join(tmp, "224")
        subprocess.run([FITSCOPE, "make-images", small, "--count", "4096", "--size", "64"], check=True, capture_output=True)
        subprocess.run([FITSCOPE, "make-images", large, "--count", "1024", "--size", "224"], check=True, capture_output=True)
        print(f"{os.cpu_count()} cores; torch {torch.__version__}, torchvision {torchvision.__version__}\n")
        compare("64x64 JPEGs at 64x64", small, 64, 60)
        compare("224x224 JPEGs at 224x224", large, 224, 16)
        compare("224x224 JPEGs at 64x64", large, 64, 40)
        pairs = []
        for r in range(ROUNDS):
            pairs.append(fitscope_rate(large, 64, 2, 40, dct=True) / fitscope_rate(large, 64, 2, 40, dct=False))
        print(f"224x224 JPEGs at 64x64, 2 workers: DCT-domain scaling (decode at 112x112) against a full decode, "
              f"samples/s: {statistics.median(pairs):.2f}x")


if __name__ == "__main__":
    main()
