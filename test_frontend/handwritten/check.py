#!/usr/bin/python3
"""check.py - runs a hand-written HPVM-C program built against hpvm_rt and
compares it with PyTorch.

Makes the model's data with make_data.py when missing, runs the program in
WORKDIR (batches of 64 over 200 images: three full batches and a partial
one) with -o, and checks:
  exact runs   : every output within relative error 1e-4 of PyTorch's
                 (|got - ref| <= 1e-4 * max(|ref|, 1e-3); the floor keeps
                 tiny probabilities from demanding more than float32
                 summation-order noise), the same top-1 class for every
                 image, and final_accuracy = 100.000000;
  --approximate: outputs differ from PyTorch's (the knobs took effect) but
                 by at most 0.05 absolute (the random-weight nets' classes
                 are too close for top-1 agreement to mean anything under
                 approximation; it is printed only).
Exit status 0 on success, 1 with a message otherwise.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

IMAGES = 200
BATCH = 64
CLASSES = 10


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--params", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--config")
    parser.add_argument("--approximate", action="store_true")
    args = parser.parse_args()

    data = os.path.join(args.params, args.model)
    if not os.path.exists(os.path.join(data, "reference_output.bin")):
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, "make_data.py"),
                        args.model, args.params, "--images", str(IMAGES)],
                       check=True)
    os.makedirs(args.workdir, exist_ok=True)
    out_path = os.path.join(args.workdir, "output.bin")
    if os.path.exists(out_path):
        os.remove(out_path)
    cmd = [args.binary, "-o", out_path, "-b", str(BATCH), "-n", str(IMAGES)]
    if args.config:
        cmd += ["-c", args.config]
    print("running: " + " ".join(cmd), flush=True)
    run = subprocess.run(cmd, cwd=args.workdir, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    print(run.stdout[-4000:])
    if run.returncode != 0:
        fail("%s exited with status %d" % (args.binary, run.returncode))

    got = np.fromfile(out_path, dtype=np.float32)
    ref = np.fromfile(os.path.join(data, "reference_output.bin"),
                      dtype=np.float32)
    if got.size != IMAGES * CLASSES:
        fail("output has %d values, expected %d" % (got.size,
                                                    IMAGES * CLASSES))
    got = got.reshape(IMAGES, CLASSES)
    ref = ref.reshape(IMAGES, CLASSES)
    diff = np.abs(got.astype(np.float64) - ref)
    rel = diff / np.maximum(np.abs(ref), 1e-3)
    agree = np.mean(got.argmax(axis=1) == ref.argmax(axis=1))
    print("max abs error %.3g, max relative error %.3g, top-1 agreement "
          "%.1f%%" % (diff.max(), rel.max(), 100 * agree))

    if args.approximate:
        if diff.max() == 0:
            fail("the approximation knobs did not change any output")
        if diff.max() > 0.05:
            fail("approximate outputs are off by %.3g (> 0.05)" % diff.max())
        return
    worst = np.unravel_index(rel.argmax(), rel.shape)
    if rel.max() > 1e-4:
        fail("image %d class %d: got %.9g, PyTorch %.9g (relative error "
             "%.3g > 1e-4)" % (worst[0], worst[1], got[worst], ref[worst],
                               rel.max()))
    if agree != 1.0:
        fail("top-1 agreement %.2f%% != 100%%" % (100 * agree))
    with open(os.path.join(args.workdir, "final_accuracy")) as f:
        accuracy = f.read()
    if accuracy != "100.000000":
        fail("final_accuracy is '%s', expected '100.000000'" % accuracy)


if __name__ == "__main__":
    main()
