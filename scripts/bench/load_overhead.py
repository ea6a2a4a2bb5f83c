#!/usr/bin/python3
"""load_overhead.py - the cost of running a generated program from PyTorch
(torch2hpvm.load()(x)) over the program's own run, per batch, at the same
batch size and threads.

The shipped Fashion-MNIST LeNet (datasets/example/lenet_fashion.onnx) is
exported with torch2hpvm.ModelExporter into --work, then, for each batch
size and thread count, --reps rounds alternate two measurements on the
same test images:
  binary   OUT/build/<program> test --batch-size B --threads T --json F:
           the program's own per-batch time (its timer covers the launch
           and the output request; not its file reading and input copy);
  load()   module(x[i:i+B]) in a loop, timed around each call from Python
           (argument checks, ctypes, the output tensor, the run, the
           copy of the scores), after one untimed call.
Each round gives a median and a minimum per batch; the figures reported
are the median of the rounds' medians and the minimum of their minimums
(the least disturbed batch: on a shared machine the steadier figure), and
the overheads are load() / binary - 1 of each.

Usage: PYTHONPATH=build/python scripts/bench/load_overhead.py
           [--work DIR] [--batches 1,64] [--threads 1,2] [--reps 5]
           [--images N] [--json FILE] [--markdown FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import torch2hpvm
from torch2hpvm import BinDataset, ModelExporter

ROOT = Path(__file__).resolve().parents[2]
FASHION = Path("/usr/share/datasets/fashion-mnist")


def prepare(work, images):
    data = work / "data"
    test_input = data / "test_input.bin"
    if not test_input.is_file() or \
            test_input.stat().st_size != images * 28 * 28 * 4:
        subprocess.run(
            [torch2hpvm.find_tool("torch2hpvm-dataset"), "convert",
             str(FASHION / "t10k-images-idx3-ubyte.gz"),
             str(FASHION / "t10k-labels-idx1-ubyte.gz"),
             "--split", f"tune={images},test={images}",
             "--limit", str(2 * images), "--scale", "1/255",
             "--normalize", "0.5,0.5", "-o", str(data)],
            check=True, stdout=subprocess.DEVNULL)
    shape = (images, 1, 28, 28)
    tune = BinDataset(data / "tune_input.bin", data / "tune_labels.bin", shape)
    test = BinDataset(data / "test_input.bin", data / "test_labels.bin", shape)
    out = work / "lenet"
    ModelExporter(ROOT / "datasets" / "example" / "lenet_fashion.onnx", tune,
                  test, out, force=True).generate().compile(
                      out / "build" / "lenet")
    x = torch.from_numpy(np.fromfile(data / "test_input.bin", np.float32)
                         .reshape(shape))
    return out, x


def binary_median(out, batch, threads, images):
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "run.json"
        subprocess.run([str(out / "build" / "lenet"), "test", "-q",
                        "--batch-size", str(batch), "--threads",
                        str(threads), "--limit", str(images), "--json",
                        str(report)], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        times = json.loads(report.read_text())["batch_times_ms"]
    # Only full batches (a last partial one is cheaper).
    full = times[:images // batch]
    return statistics.median(full), min(full)


def load_median(net, x, batch, images):
    net(x[:batch])  # untimed: plans and weight reorders for this shape
    times = []
    with torch.no_grad():
        for start in range(0, images - batch + 1, batch):
            chunk = x[start:start + batch]
            t0 = time.perf_counter()
            net(chunk)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path,
                   default=ROOT / "build" / "bench_load_overhead")
    p.add_argument("--batches", default="1,64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--images", type=int, default=2048)
    p.add_argument("--torch-threads", choices=["default", "same"],
                   default="default",
                   help="torch's own thread setting: left as it is, or "
                        "set to each row's threads (no OpenMP team switch "
                        "per call)")
    p.add_argument("--json", type=Path)
    p.add_argument("--markdown", type=Path)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    out, x = prepare(args.work, args.images)
    net = torch2hpvm.load(out, exact=True)
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        net.threads = threads
        if args.torch_threads == "same":
            torch.set_num_threads(threads)
        for batch in [int(b) for b in args.batches.split(",")]:
            binary, module = [], []
            for _ in range(args.reps):
                binary.append(binary_median(out, batch, threads,
                                            args.images))
                module.append(load_median(net, x, batch, args.images))
            b = statistics.median(r[0] for r in binary)
            m = statistics.median(r[0] for r in module)
            bmin = min(r[1] for r in binary)
            mmin = min(r[1] for r in module)
            rows.append({"threads": threads, "batch": batch,
                         "binary_ms": b, "load_ms": m,
                         "overhead_pct": 100.0 * (m / b - 1.0),
                         "binary_min_ms": bmin, "load_min_ms": mmin,
                         "overhead_min_pct": 100.0 * (mmin / bmin - 1.0),
                         "binary_rounds_ms": binary,
                         "load_rounds_ms": module})
            print(f"threads {threads} batch {batch:3d}: median: binary "
                  f"{b:.4f} ms, load() {m:.4f} ms "
                  f"({rows[-1]['overhead_pct']:+.1f}%); min: binary "
                  f"{bmin:.4f} ms, load() {mmin:.4f} ms "
                  f"({rows[-1]['overhead_min_pct']:+.1f}%)", flush=True)
    result = {"model": "lenet_fashion", "images": args.images,
              "reps": args.reps, "torch_threads": args.torch_threads,
              "cpu": cpu_model(), "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.markdown:
        lines = ["| threads | batch | binary median | load()(x) median | "
                 "overhead | binary min | load()(x) min | overhead |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['threads']} | {r['batch']} | "
                         f"{r['binary_ms']:.4f} | {r['load_ms']:.4f} | "
                         f"{r['overhead_pct']:+.1f}% | "
                         f"{r['binary_min_ms']:.4f} | {r['load_min_ms']:.4f} "
                         f"| {r['overhead_min_pct']:+.1f}% |")
        args.markdown.write_text("\n".join(lines) + "\n")


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().split("\n"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
