#!/usr/bin/python3
"""knob_networks.py - whole-network speedup and accuracy of one knob on every
layer it applies to, for the shipped Fashion-MNIST models: each model is
exported (batch 64 by default), calibrated for int8 on its tune set, and run
by its own program over the test set with `test --all-configs`, which times
the exact program and every configuration in one run. Prints a table and
writes JSON.

    scripts/bench/knob_networks.py [--models vgg16,resnet18,mobilenet]
        [--knobs 301,311,312,12,323,321] [--threads 1,2] [--batch 64]
        [--repeat 3] [--json FILE]
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_models import MODELS, fashion_mnist, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="vgg16,resnet18,mobilenet")
    ap.add_argument("--knobs", default="301,311,312,12,323,321")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", default="64")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build",
                                                   "bench_knobs"))
    ap.add_argument("--json")
    args = ap.parse_args()

    exporter = os.path.join(args.build, "frontend", "torch2hpvm-export")
    data = fashion_mnist(args.build, args.work)
    knobs = args.knobs.split(",")
    rows = []
    print(f"{'model':<10} {'thr':>3} {'exact img/s':>11}  " +
          "  ".join(f"{k:>13}" for k in knobs))
    for model in args.models.split(","):
        out = os.path.join(args.work, f"{model}_b{args.batch}")
        run([exporter, os.path.join(ROOT, MODELS[model]), "--tune",
             f"{data}/tune_input.bin", "--test", f"{data}/test_input.bin",
             "--batch-size", args.batch, "--force", "-o", out],
            out + ".export.log")
        binary = json.load(open(os.path.join(out, "manifest.json")))["binary"]
        binary = os.path.join(out, binary)
        confs = os.path.join(out, "knobs.txt")
        run([sys.executable, os.path.join(ROOT, "scripts", "bench",
                                          "knob_config.py"),
             os.path.join(out, "ops.json"), *knobs, "-o", confs])
        # The configuration's companion calibration (<stem>.calib.txt).
        run([binary, "calibrate", "-q", "-o",
             os.path.join(out, "knobs.calib.txt")])
        for threads in args.threads.split(","):
            res = os.path.join(out, f"t{threads}.json")
            run([binary, "test", "-c", confs, "--all-configs", "--threads",
                 threads, "--repeat", str(args.repeat), "--json", res,
                 "--quiet"])
            r = json.load(open(res))
            exact = r["exact"]
            images = r["images"] * r.get("repeat", 1)
            row = {"model": model, "threads": int(threads),
                   "batch": int(args.batch), "images": r["images"],
                   "repeat": r.get("repeat", 1),
                   "exact_accuracy": exact["accuracy"],
                   "exact_images_per_s": images / exact["time_ms"]["total"]
                   * 1000, "knobs": {}}
            for knob, c in zip(knobs, r["configs"]):
                row["knobs"][knob] = {"speedup": c["measured_speedup"],
                                      "accuracy": c["accuracy"]}
            rows.append(row)
            print(f"{model:<10} {threads:>3} "
                  f"{row['exact_images_per_s']:>11.0f}  " +
                  "  ".join(f"{row['knobs'][k]['speedup']:5.2f}x "
                            f"{row['knobs'][k]['accuracy']:5.2f}"
                            for k in knobs), flush=True)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rows": rows, "knobs": knobs}, f, indent=1)
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
