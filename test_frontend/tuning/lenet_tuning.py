"""lenet_tuning.py - what the tuning tests share: running a command (a
failure ends the test with its output) and the shipped LeNet exported with
Fashion-MNIST tune and test sets, as a user would."""
import os
import subprocess
import sys

FMNIST = "/usr/share/datasets/fashion-mnist"
NAME = "lenet_fashion"


def fail(msg):
    test = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    print(f"{test}: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, expect=0, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, **kw)
    if p.returncode != expect:
        fail(f"{' '.join(cmd)} exited {p.returncode} (expected {expect})\n"
             f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def export_lenet(build, src, work, tune, test, batch):
    """Exports the shipped LeNet to WORK/lenet with the first TUNE + TEST
    images of Fashion-MNIST's test set; returns the output directory."""
    data = os.path.join(work, "data")
    run([os.path.join(build, "datasets", "torch2hpvm-dataset"), "convert",
         f"{FMNIST}/t10k-images-idx3-ubyte.gz",
         f"{FMNIST}/t10k-labels-idx1-ubyte.gz", "--split",
         f"tune={tune},test={test}", "--limit", str(tune + test), "--scale",
         "1/255", "--normalize", "0.5,0.5", "-o", data])
    out = os.path.join(work, "lenet")
    run([os.path.join(build, "frontend", "torch2hpvm-export"),
         os.path.join(src, "datasets/example/lenet_fashion.onnx"),
         "--tune", f"{data}/tune_input.bin", "--test",
         f"{data}/test_input.bin", "--batch-size", str(batch), "-o", out])
    return out
