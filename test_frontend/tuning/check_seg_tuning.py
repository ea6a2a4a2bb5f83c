"""check_seg_tuning.py - a segmentation model without labels tuned with the
mIoU QoS: scripts/bench/seg_fashion.py trains its small FCN on Fashion-MNIST
(a short run), torch2hpvm-export --no-labels exports it, torch2hpvm-tune
--qos miou tunes it at a small budget. Checked: tuner_confs.txt holds
configurations, each runs, and its mIoU against the exact program's
per-pixel classes (NumPy, on the test set) is what the file records and
what `test --all-configs` reports for it (with no labels, that table's QoS
is the mIoU against the exact program), within the losses asked for.

    check_seg_tuning.py BUILD WORK SRC
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenet_tuning import fail, run  # noqa: E402

build, work, src = sys.argv[1:4]
# A fresh start, as check_tuning.py's: a tuning state left by an earlier
# run is not this run's to resume.
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work, exist_ok=True)
run(["/usr/bin/python3", os.path.join(src, "scripts", "bench",
                                      "seg_fashion.py"), work,
     "--images", "3000", "--epochs", "1"])
out = os.path.join(work, "out")
run([os.path.join(build, "frontend", "torch2hpvm-export"),
     os.path.join(work, "seg_fashion.onnx"), "--tune",
     os.path.join(work, "tune_input.bin"), "--test",
     os.path.join(work, "test_input.bin"), "--no-labels", "--batch-size",
     "100", "--force", "-o", out])
run([os.path.join(build, "frontend", "torch2hpvm-tune"), out, "--qos", "miou",
     "--qos-loss", "1,2", "--budget", "120", "--time-limit", "45s"])
binary = os.path.join(out, "build", "seg_fashion")


def classes(extra, name):
    path = os.path.join(work, name + ".npy")
    p = run([binary, "test", "--output", path, *extra], cwd=out)
    if "No accuracy: the test set has no labels" not in p.stdout:
        fail(f"{name}: the program did not say it has no labels:\n"
             f"{p.stdout}")
    return np.load(path).argmax(1)


def miou(a, b):
    ious = []
    for k in range(11):
        either = np.logical_or(a == k, b == k).sum()
        if either:
            ious.append(np.logical_and(a == k, b == k).sum() / either)
    return 100.0 * float(np.mean(ious))


exact = classes([], "exact")
table = os.path.join(work, "all_configs.json")
run([binary, "test", "-c", os.path.join(out, "tuner_confs.txt"),
     "--all-configs", "--json", table], cwd=out)
table = json.load(open(table))
if table["qos_metric"] != "miou" or table["exact"]["qos"] != 100.0:
    fail(f"--all-configs without labels: {table['qos_metric']}, exact "
         f"{table['exact']}")
reported = {row["name"]: row["qos"] for row in table["configs"]}
blocks = open(os.path.join(out, "tuner_confs.txt")).read().split("+++++")[1:]
if not blocks:
    fail("tuner_confs.txt holds no configuration")
for block in blocks:
    name, speedup, _, qos, loss = block.split("\n")[1].split()
    got = miou(classes(["-c", os.path.join(out, "tuner_confs.txt"),
                        "--config", name], name), exact)
    if abs(got - float(qos)) > 1e-6 or abs(got - reported[name]) > 1e-6:
        fail(f"{name}: mIoU against the exact program {got:.4f}, the file "
             f"records {qos}, --all-configs reports {reported[name]}")
    # The largest loss asked for (2) is met on the tune set; the test set
    # may differ by up to a point.
    if float(loss) > 3:
        fail(f"{name}: test loss {loss} points, beyond the 2 asked for")
    print(f"check_seg_tuning: {name}: {float(speedup):.2f}x, mIoU "
          f"{got:.2f}% of the exact program's classes")
