#!/usr/bin/python3
"""load_overhead.py - the cost of running a generated program from PyTorch
over the program's own run, per batch, at the same batch size and threads:
through torch2hpvm.load()'s module (TorchScript class), that module
scripted (called from Python), the scripted module saved and run from C++
(libtorch, no Python), and the ctypes fallback.

The shipped Fashion-MNIST LeNet (datasets/example/lenet_fashion.onnx) is
exported with torch2hpvm.ModelExporter into --work, then, for each batch
size and thread count, --reps rounds alternate the measurements on the
same test images:
  binary   OUT/build/<program> test --batch-size B --threads T --json F:
           the program's own per-batch time (its timer covers the launch
           and the output request; not its file reading and input copy);
  module   net(x[i:i+B]) in a loop, timed around each call from Python
           (the module's call, torch2hpvm._direct's run_one, the checks,
           the output tensor, the run), after one untimed call;
  script   torch.jit.script(net), the same from Python (nn.Module's
           call, TorchScript's interpreter, the class's forward_one);
  cpp      the scripted module saved, loaded and run by a C++ program
           (python/tests/cpp/load_saved.cpp --time), timed in C++;
  ctypes   the fallback module (torch2hpvm._ctypes_module), from Python.
For scale, a third measure per row: torch's own cost of calling a scripted
module from Python in the state a program run leaves the caches in (the
module run untimed on each batch, then a scripted module that returns its
input, timed on it): the part of the "script" way's overhead that is
TorchScript's call from Python, whatever the module does.
A last table times each way on an empty batch (0 images: every step of
the call but the run; the ctypes module returns before calling the
library, so its figure misses the library's entry): the call's own cost.

Two measures of the overhead of a way, both reported:
  paired   per call: the call's wall time minus the program's own time of
           that same call (last_run_ms(): the span the binary's timer
           covers), over every call of every round: the median, the 10th
           percentile and the 90th, in microseconds and in percent of the
           program's time. Exact to the call, whatever the host's noise.
  binary   the way's time minus the binary's, run by run: each round gives
           a median and a minimum per batch; reported are the median of the
           rounds' medians and the minimum of their minimums. On a noisy
           shared host the rounds differ by more than the overhead (the
           binary's own batch-1 time moves by tens of microseconds between
           runs), so these figures are for scale, not for microseconds.

Usage: PYTHONPATH=build/python scripts/bench/load_overhead.py
           [--work DIR] [--batches 1,64] [--threads 1,2] [--reps 5]
           [--images N] [--load-saved PATH] [--json FILE] [--markdown FILE]
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


def load_calls(net, x, batch, images):
    """Each call's wall time and the program's own time of it, in ms."""
    net(x[:batch])  # untimed: plans and weight reorders for this shape
    times, runs = [], []
    with torch.no_grad():
        for start in range(0, images - batch + 1, batch):
            chunk = x[start:start + batch]
            t0 = time.perf_counter()
            net(chunk)
            times.append((time.perf_counter() - t0) * 1e3)
            runs.append(net.last_run_ms())
    return times, runs


class ReturnsInput(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def floor_calls(net, floor, x, batch, images):
    """Each call's wall time, in ms, of the scripted \p floor (returns its
    input) on every batch, right after \p net's run of it (untimed)."""
    times = []
    with torch.no_grad():
        for start in range(0, images - batch + 1, batch):
            chunk = x[start:start + batch]
            net(chunk)
            t0 = time.perf_counter()
            floor(chunk)
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def cpp_calls(tool, saved, images_file, batch, threads, images):
    """Each call's wall time and the program's own time of it, in ms, from
    C++."""
    proc = subprocess.run([str(tool), "--time", str(batch), str(threads),
                           str(saved), str(images_file), str(images), "1",
                           "28", "28"], check=True, stdout=subprocess.PIPE,
                          text=True)
    walls, runs = proc.stdout.split("\n")[:2]
    return [float(t) for t in walls.split()], [float(t) for t in runs.split()]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def paired(rounds):
    """The per-call overhead over every call of \p rounds ((walls, runs)
    in ms, runs being the program's own time of each call)."""
    over, pct = [], []
    for walls, runs in rounds:
        if any(r < 0 for r in runs):
            raise SystemExit("the program did not report its own time "
                             "(a library built before last_run_ms)")
        for w, r in zip(walls, runs):
            over.append((w - r) * 1e3)
            pct.append(100.0 * (w / r - 1))
    return {"median_us": statistics.median(over),
            "p10_us": percentile(over, 0.1),
            "p90_us": percentile(over, 0.9),
            "median_pct": statistics.median(pct),
            "calls": len(over)}


WAYS = ("module", "script", "cpp", "ctypes")


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
    p.add_argument("--load-saved", type=Path,
                   default=ROOT / "build" / "python" / "tests" / "load_saved",
                   help="the C++ loader (built with HPVM_TORCH_EXT)")
    p.add_argument("--json", type=Path)
    p.add_argument("--markdown", type=Path)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    out, x = prepare(args.work, args.images)
    from torch2hpvm._ctypes_module import CtypesModule
    nets = {"module": torch2hpvm.load(out, exact=True)}
    nets["script"] = torch.jit.script(nets["module"])
    floor = torch.jit.script(ReturnsInput())
    saved = args.work / "lenet_script.pt"
    torch.jit.save(nets["script"], str(saved))
    nets["ctypes"] = CtypesModule(out, out / "build" / "liblenet.so",
                                  exact=True)
    images_file = args.work / "data" / "test_input.bin"
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        nets["module"].threads = threads
        nets["script"].set_threads(threads)
        nets["ctypes"].threads = threads
        if args.torch_threads == "same":
            torch.set_num_threads(threads)
        for batch in [int(b) for b in args.batches.split(",")]:
            rounds = {"binary": []}
            rounds.update({way: [] for way in WAYS})
            calls = {way: [] for way in WAYS}
            floors = []
            for _ in range(args.reps):
                rounds["binary"].append(binary_median(out, batch, threads,
                                                      args.images))
                for way in WAYS:
                    if way == "cpp":
                        r = cpp_calls(args.load_saved, saved, images_file,
                                      batch, threads, args.images)
                    else:
                        r = load_calls(nets[way], x, batch, args.images)
                    calls[way].append(r)
                    rounds[way].append((statistics.median(r[0]), min(r[0])))
                floors += floor_calls(nets["module"], floor, x, batch,
                                      args.images)
            row = {"threads": threads, "batch": batch}
            for way, values in rounds.items():
                row[way] = {"median_ms": statistics.median(v[0]
                                                           for v in values),
                            "min_ms": min(v[1] for v in values),
                            "rounds_ms": values}
            b = row["binary"]
            for way in WAYS:
                w = row[way]
                w["paired"] = paired(calls[way])
                w["overhead_min_us"] = 1e3 * (w["min_ms"] - b["min_ms"])
                w["overhead_min_pct"] = 100.0 * (w["min_ms"] / b["min_ms"]
                                                 - 1)
                w["overhead_median_us"] = 1e3 * (w["median_ms"] -
                                                 b["median_ms"])
                w["overhead_median_pct"] = 100.0 * (w["median_ms"] /
                                                    b["median_ms"] - 1)
            row["torch_scripted_call"] = {
                "median_us": 1e3 * statistics.median(floors),
                "p10_us": 1e3 * percentile(floors, 0.1),
                "p90_us": 1e3 * percentile(floors, 0.9)}
            row["program_median_ms"] = statistics.median(
                t for _, runs in calls["cpp"] for t in runs)
            rows.append(row)
            print(f"threads {threads} batch {batch:3d}: binary "
                  f"{b['median_ms']:.4f} ms (min {b['min_ms']:.4f}); "
                  "paired overhead per call, median: " +
                  "; ".join(f"{way} {row[way]['paired']['median_us']:.1f} us "
                            f"({row[way]['paired']['median_pct']:+.2f}%)"
                            for way in WAYS) +
                  f"; torch's scripted call after a run "
                  f"{row['torch_scripted_call']['median_us']:.1f} us",
                  flush=True)
    empty = {}
    for way in WAYS:
        if way == "cpp":
            proc = subprocess.run(
                [str(args.load_saved), "--time", "0", "1", str(saved),
                 str(images_file), str(args.images), "1", "28", "28"],
                check=True, stdout=subprocess.PIPE, text=True)
            times = sorted(float(t) * 1e3
                           for t in proc.stdout.split("\n")[0].split())
        else:
            times = []
            none = x[:0]
            nets[way](none)
            for _ in range(2000):
                t0 = time.perf_counter()
                nets[way](none)
                times.append((time.perf_counter() - t0) * 1e6)
            times.sort()
        empty[way] = {"min_us": times[0],
                      "median_us": statistics.median(times)}
        print(f"empty batch, {way}: min {times[0]:.2f} us, median "
              f"{empty[way]['median_us']:.2f} us", flush=True)
    result = {"model": "lenet_fashion", "images": args.images,
              "reps": args.reps, "torch_threads": args.torch_threads,
              "cpu": cpu_model(), "rows": rows, "empty_batch": empty}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.markdown:
        lines = ["Paired: per call, its wall time minus the program's own "
                 "time of that call; the median over every call (10th - "
                 "90th percentile), and the median in percent of the "
                 "program's time.", ""]
        lines += table(rows, "program's own time, median ms",
                       lambda r: f"{r['program_median_ms']:.4f}",
                       "paired overhead",
                       lambda w: f"{w['paired']['median_us']:.1f} µs "
                                 f"({w['paired']['p10_us']:.1f} - "
                                 f"{w['paired']['p90_us']:.1f}), "
                                 f"{w['paired']['median_pct']:+.2f}%")
        lines += ["", "torch's own call of a scripted module from Python, "
                  "after each program run (a module that returns its input; "
                  "median, 10th - 90th percentile):", "",
                  "| threads | batch | scripted call |", "|---|---|---|"]
        lines += [f"| {r['threads']} | {r['batch']} | "
                  f"{r['torch_scripted_call']['median_us']:.1f} µs "
                  f"({r['torch_scripted_call']['p10_us']:.1f} - "
                  f"{r['torch_scripted_call']['p90_us']:.1f}) |"
                  for r in rows]
        lines += ["", "Against the binary (separate runs; see the script's "
                  "notes):", ""]
        lines += table(rows, "binary median (min), ms",
                       lambda r: f"{r['binary']['median_ms']:.4f} "
                                 f"({r['binary']['min_ms']:.4f})",
                       "overhead of the min (of the median)",
                       lambda w: f"{w['overhead_min_us']:+.1f} µs, "
                                 f"{w['overhead_min_pct']:+.1f}% "
                                 f"({w['overhead_median_us']:+.1f} µs, "
                                 f"{w['overhead_median_pct']:+.1f}%)")
        lines += ["", "| empty batch | " + " | ".join(WAYS) + " |",
                  "|---|" + "---|" * len(WAYS),
                  "| min (median), µs | " + " | ".join(
                      f"{empty[w]['min_us']:.2f} ({empty[w]['median_us']:.2f})"
                      for w in WAYS) + " |"]
        args.markdown.write_text("\n".join(lines) + "\n")


def table(rows, program_heading, program_cell, way_heading, way_cell):
    """A markdown table: a row per (threads, batch), the program's time
    (program_cell(row)) and each way's figure (way_cell(row[way]))."""
    lines = [f"| threads | batch | {program_heading} | " +
             " | ".join(f"{way}: {way_heading}" for way in WAYS) + " |",
             "|---|---|---|" + "---|" * len(WAYS)]
    for r in rows:
        lines.append(f"| {r['threads']} | {r['batch']} | {program_cell(r)} | "
                     + " | ".join(way_cell(r[way]) for way in WAYS) + " |")
    return lines


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
