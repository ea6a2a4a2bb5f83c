#!/usr/bin/python3
"""tune_models.py - tunes the shipped Fashion-MNIST models on this machine
and tabulates what tuning buys: for each model, batch size and thread count,
the best validated test-set speedup over the exact program at <= 1, 2 and 3
points of top-1 loss (measured end to end by the tuner: each configuration
timed between two exact runs), the tuning time, and the prediction quality.
With --empirical it also tunes each case empirically at the same budget and
compares the time taken and the validated fronts.

Usage (from the repository root, after a build):
  /usr/bin/python3 scripts/bench/tune_models.py [--models lenet,resnet18]
      [--batches 64,500] [--threads 1,2] [--budget 2000] [--empirical]
      [--work build/bench_tuning] [--json results.json]

Results go to WORK/<model>_b<batch>_t<threads>/ (tuner_confs.txt,
tuning.json, tuning_front.png) and, with --json, one JSON summary. Each
case reuses its measurement cache (tuning.state) unless --fresh.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
FMNIST = "/usr/share/datasets/fashion-mnist"
MODELS = {
    "lenet": "datasets/example/lenet_fashion.onnx",
    "resnet18": "datasets/example/resnet18_fashion.onnx",
    "mobilenet": "datasets/example/mobilenet_fashion.onnx",
    "vgg16": "datasets/example/vgg16_fashion.onnx",
}


def run(cmd, log=None):
    start = time.time()
    with open(log, "w") if log else open(os.devnull, "w") as out:
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        sys.exit(f"tune_models: {' '.join(cmd)} exited {p.returncode}"
                 + (f" (see {log})" if log else ""))
    return time.time() - start


def fashion_mnist(build, work):
    """work/data: Fashion-MNIST's t10k split into tune (0-4999) and test
    (5000-9999), as the quickstart makes it (converted once)."""
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    if not os.path.exists(os.path.join(data, "test_labels.bin")):
        run([os.path.join(build, "datasets", "torch2hpvm-dataset"), "convert",
             f"{FMNIST}/t10k-images-idx3-ubyte.gz",
             f"{FMNIST}/t10k-labels-idx1-ubyte.gz", "--split",
             "tune=5000,test=5000", "--scale", "1/255", "--normalize",
             "0.5,0.5", "-o", data])
    return data


def best_within(record, limit, key):
    best = 1.0
    for w in record["written"]:
        c = record["validated"][w["candidate"]]
        m = c.get("test") if key == "test" else c["tune"]
        if m and m["loss"] <= limit:
            best = max(best, c["tune"]["speedup"])
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="lenet,resnet18,mobilenet,vgg16")
    ap.add_argument("--batches", default="64")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--empirical", action="store_true")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build",
                                                   "bench_tuning"))
    ap.add_argument("--json")
    ap.add_argument("extra", nargs="*", help="more tune-search options")
    args = ap.parse_args()

    exporter = os.path.join(args.build, "frontend", "torch2hpvm-export")
    tuner = os.path.join(args.build, "frontend", "torch2hpvm-tune")
    data = fashion_mnist(args.build, args.work)
    rows = []
    print(f"{'case':<24} {'mode':<10} {'<=1':>6} {'<=2':>6} {'<=3':>6} "
          f"{'time s':>7} {'loss rho':>8} {'speed rho':>9}")
    for model in args.models.split(","):
        onnx = os.path.join(ROOT, MODELS[model])
        for batch in args.batches.split(","):
            out = os.path.join(args.work, f"{model}_b{batch}")
            if not os.path.exists(os.path.join(out, "manifest.json")):
                run([exporter, onnx, "--tune", f"{data}/tune_input.bin",
                     "--test", f"{data}/test_input.bin", "--batch-size",
                     batch, "--force", "-o", out], out + ".export.log")
            for threads in args.threads.split(","):
                modes = ["predictive"] + (["empirical"] if args.empirical
                                          else [])
                for mode in modes:
                    tag = f"t{threads}" + ("_emp" if mode == "empirical"
                                           else "")
                    cmd = [tuner, out, "--qos-loss", "1,2,3", "--budget",
                           str(args.budget), "--threads", threads,
                           "-o", f"{out}/{tag}_confs.txt",
                           "--json", f"{out}/{tag}.json",
                           "--plot", f"{out}/{tag}_front",
                           "--state", f"{out}/{tag}.state", "-q"]
                    if mode == "empirical":
                        cmd.append("--empirical")
                    if args.fresh:
                        cmd.append("--fresh")
                    seconds = run(cmd + args.extra, f"{out}/{tag}.log")
                    r = json.load(open(f"{out}/{tag}.json"))
                    cal = r["calibration"]
                    row = {
                        "model": model, "batch": int(batch),
                        "threads": int(threads), "mode": mode,
                        "seconds": round(r["seconds"]["total"], 1),
                        "wall_seconds": round(seconds, 1),
                        "exact_test_accuracy": r["exact"]["test_qos"],
                        "best_test": {str(l): best_within(r, l, "test")
                                      for l in (1, 2, 3)},
                        "best_tune": {str(l): best_within(r, l, "tune")
                                      for l in (1, 2, 3)},
                        "loss_spearman": cal["loss_spearman"],
                        "speedup_spearman": cal["speedup_spearman"],
                        "pruned": r["profile"]["pruned"],
                        "pairs": len(r["profile"]["pairs"]),
                        "evaluated": r["search"]["evaluated"],
                    }
                    rows.append(row)
                    b = row["best_test"]
                    print(f"{model + ' b' + batch + ' t' + threads:<24} "
                          f"{mode:<10} {b['1']:>5.2f}x {b['2']:>5.2f}x "
                          f"{b['3']:>5.2f}x {row['seconds']:>7.0f} "
                          f"{row['loss_spearman']:>8.2f} "
                          f"{row['speedup_spearman']:>9.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
